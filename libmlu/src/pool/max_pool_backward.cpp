// max_pool2d_backward: one BLOCK kernel over backward pooling tiles (each owns input rows, so
// overlapping windows accumulate inside one tile and no two tiles write the same element);
// channels-last operands take the NHWC kernel instead (max_pool_nhwc.h).
// For each window offset (kh, kw), on the VFU in fp32:
//   take = (index - window_origin == kh*dh*W + kw*dw); contribution = dy * take
// added at that offset into the phase-split gradient (pool_grad.h), which is interleaved and
// stored. window_origin = (oh*sh - ph)*W + ow*sw - pw; indices and arithmetic are exact in fp32
// below 2^24.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "pool/max_pool_nhwc.h"
#include "pool/pool_grad.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using namespace nn::pool;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;

constexpr DType kF32 = DType::kFloat32;
constexpr std::size_t kZeroBytes = 2048;

std::size_t footprint(const PoolTiling& t) {
  const BandShape bs = band_shape(t, t.pb);
  const auto out = static_cast<std::size_t>(bs.out_elems()), band = static_cast<std::size_t>(bs.band_elems());
  const auto block = static_cast<std::size_t>(grad_block_elems(t));
  std::size_t bytes = 3 * (align128(out * 4) + align128(out * 8) + align128(band * 4));  // per set: dy, indices, rows
  bytes += 4 * align128(out * 4);                                                        // dy, origin, delta, take
  bytes += static_cast<std::size_t>(t.h.s * t.w.s) * align128(block * 4);                // grad blocks
  if (t.w.s > 1)
    bytes += align128(out * static_cast<std::size_t>(t.w.s) * 4) +
             static_cast<std::size_t>(t.w.s) * align128(out * static_cast<std::size_t>(t.w.s));
  bytes += align128(static_cast<std::size_t>(std::max({t.wq, t.hq, t.w.s})) * 4) + kZeroBytes +
           2 * align128(static_cast<std::size_t>(t.wq) * 4);
  return bytes;
}

struct Args {
  PoolViews pv;  // dy, indices, dx
  PoolTiling t;
};

void kernel(const Args& a) {
  const PoolTiling& t = a.t;
  const TensorView &dy = a.pv.views[0], &ix = a.pv.views[1], &dx = a.pv.views[2];
  const BandShape full = band_shape(t, t.pb);
  const auto out = static_cast<std::size_t>(full.out_elems()), band = static_cast<std::size_t>(full.band_elems());
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr gy[kPipelineBuffers], gi[kPipelineBuffers], rows[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) gy[k] = alloc(out * 4), gi[k] = alloc(out * 8), rows[k] = alloc(band * 4);
  const Addr g32 = alloc(out * 4), origin = alloc(out * 4), delta = alloc(out * 4), take = alloc(out * 4);
  const std::size_t blocks = static_cast<std::size_t>(t.h.s * t.w.s),
                    block = static_cast<std::size_t>(grad_block_elems(t));
  const Addr grad = alloc(blocks * block * 4);
  Addr scratch{};
  std::vector<Addr> masks;
  if (t.w.s > 1) {
    scratch = alloc(out * static_cast<std::size_t>(t.w.s) * 4);
    for (std::int64_t p = 0; p < t.w.s; ++p) {
      masks.push_back(alloc(out * static_cast<std::size_t>(t.w.s)));
      periodic_mask(masks.back(), t.w.s, p, static_cast<std::int64_t>(out) * t.w.s);
    }
  }
  const std::size_t ones_n = static_cast<std::size_t>(std::max({t.wq, t.hq, t.w.s}));
  const Addr ones = alloc(ones_n * 4), zeros = alloc(kZeroBytes);
  const Addr col_origin = alloc(static_cast<std::size_t>(t.wq) * 4),
             row_origin = alloc(static_cast<std::size_t>(t.wq) * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  dev::vec_fill(DType::kInt8, zeros, 0.0, kZeroBytes);
  std::vector<float> co(static_cast<std::size_t>(t.wq));
  for (std::int64_t j = 0; j < t.wq; ++j) co[j] = float(j * t.w.s - t.w.p);
  store_scalars(col_origin, co);

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.grad_tiles()));
  auto tile_of = [&](std::size_t s) { return t.grad_tile(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const PoolTiling::GradTile g = tile_of(s);
        load_out_band_async(t, a.pv, dy, g.tile, gy[k]);
        load_out_band_async(t, a.pv, ix, g.tile, gi[k]);
      },
      [&](std::size_t s, int k) {
        const PoolTiling::GradTile g = tile_of(s);
        const BandShape bs = band_shape(t, g.tile.planes);
        const auto n = static_cast<std::size_t>(bs.out_elems());
        const auto hq = static_cast<std::size_t>(t.hq), wq = static_cast<std::size_t>(t.wq);
        if (dy.dtype == kF32)
          dev::vec_unary(sim::VecUnaryOp::kCopy, kF32, g32, gy[k], n);
        else
          dev::vec_cast(kF32, g32, dy.dtype, gy[k], n);
        // delta = index - window origin, the origin an outer sum of row and column terms.
        std::vector<float> ro(hq);
        for (std::size_t i = 0; i < hq; ++i) ro[i] = float(((g.tile.oh0 + std::int64_t(i)) * t.h.s - t.h.p) * t.w.in);
        store_scalars(row_origin, ro);
        tile::broadcast_rows(origin, row_origin, ones, hq, wq, false);
        tile::broadcast_cols(origin, ones, col_origin, hq, wq, true);
        replicate(origin, hq * wq * 4, static_cast<std::size_t>(bs.pb));
        dev::vec_cast(kF32, delta, ix.dtype, gi[k], n);
        dev::vec_binary(VecBinaryOp::kSub, kF32, delta, delta, origin, n);
        dev::vec_fill(kF32, grad, 0.0, blocks * block);
        for (std::int64_t kh = 0; kh < t.h.k; ++kh)
          for (std::int64_t kw = 0; kw < t.w.k; ++kw) {
            dev::vec_binary_scalar(VecBinaryOp::kEq, kF32, take, delta, double(kh * t.h.d * t.w.in + kw * t.w.d), n);
            dev::vec_binary(VecBinaryOp::kMul, kF32, take, take, g32, n);
            add_contribution(t, bs, grad, take, kh, kw);
          }
      },
      [&](std::size_t s, int k) {
        store_grad_async(t, a.pv, dx, tile_of(s), grad, rows[k], masks, ones, scratch, zeros, kZeroBytes);
      });
}

}  // namespace

Status max_pool2d_backward(Handle* h, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& indices, const void* indices_ptr, const TensorDesc& dx, void* dx_ptr) {
  using namespace nn;
  const char* op = "max_pool2d_backward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, "dy", dy, dy_ptr));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, "dx", dx, dx_ptr));
  MLU_RETURN_IF_ERROR(check_desc(&indices, op, "indices"));
  MLU_RETURN_IF_ERROR(check_dtype_in(indices, {DType::kInt64, DType::kInt32}, op, "indices"));
  MLU_RETURN_IF_ERROR(check_same_shape(dy, indices, op, "dy", "indices"));
  MLU_RETURN_IF_ERROR(check_ptr(indices_ptr, indices, op, "indices"));
  MLU_RETURN_IF_ERROR(check_same_planes(op, dx, "dx", dy, "dy"));
  MLU_CHECK(writable(dx), Status::kBadParam, std::string(op) + ": dx " + dx.str() + " has a broadcast dim");
  const int nd = dx.ndim();
  std::int64_t oh = 0, ow = 0;
  MLU_RETURN_IF_ERROR(
      pool_output_extent(op, "H", dx.dim(nd - 2), p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode, &oh));
  MLU_RETURN_IF_ERROR(
      pool_output_extent(op, "W", dx.dim(nd - 1), p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode, &ow));
  MLU_CHECK(dy.dim(nd - 2) == oh && dy.dim(nd - 1) == ow, Status::kBadParam,
            std::string(op) + ": dy " + dy.str() + " must be " + std::to_string(oh) + "x" + std::to_string(ow) +
                " spatially");
  MLU_CHECK(dx.dim(nd - 2) * dx.dim(nd - 1) <= (std::int64_t{1} << 24), Status::kNotSupported,
            std::string(op) + ": planes of more than 2^24 elements (indices are compared in fp32)");
  if (dx.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  const std::uint64_t bytes = static_cast<std::uint64_t>(dy.numel()) * (dy.element_size() + indices.element_size()) +
                              static_cast<std::uint64_t>(dx.numel()) * dx.element_size();
  if (max_pool_nhwc_applies(dx, dy, &indices)) {  // channels-last operands: channels as the vector dim
    MLU_RETURN_IF_ERROR(max_pool_nhwc_backward(*h, op, p, dy, dy_ptr, indices, indices_ptr, dx, dx_ptr, oh, ow));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  Args args;
  args.pv = make_pool_views({&dy, &indices, &dx}, {dy_ptr, indices_ptr, dx_ptr});
  PoolTiling& t = args.t;
  t.h = {dx.dim(nd - 2), oh, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h};
  t.w = {dx.dim(nd - 1), ow, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w};
  t.planes = args.pv.planes;
  t.last_plane_dim = args.pv.views[0].dims[args.pv.plane_dims - 1];
  MLU_CHECK(plan_pool_grad_tiles(&t, h->nram_bytes(), h->total_cores(), footprint), Status::kNotSupported,
            std::string(op) + ": NRAM too small for one band of " + dx.str());
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(t.grad_tiles())), cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
