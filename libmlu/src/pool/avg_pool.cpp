// avg_pool2d forward and backward: BLOCK kernels over pooling tiles, fp32 on the VFU.
// Forward: sliding sums along W over the zero-padded band (one shifted add per kw), the output
// columns picked out (W phase 0, pool_band.h), sums along H (one shifted add per kh on the
// row-phase-split layout), then a division by the divisor array (the outer product of the row and
// column divisors, exactly torch's count, or divisor_override).
// Backward: dy / divisor added at every window offset into the phase-split gradient of the
// tile's input rows (pool_grad.h). Sums are in a different order than torch's window scan, so
// results agree to rounding.
#include "pool/avg_pool.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "pool/pool_grad.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu::nn {
namespace {

using namespace pool;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;

constexpr DType kF32 = DType::kFloat32;
constexpr std::size_t kZeroBytes = 2048;

std::int64_t band_slack(const PoolTiling& t) { return std::max<std::int64_t>(t.w.s, t.w.k); }
std::int64_t row_slack(const PoolTiling& t) { return (t.h.k - 1) / t.h.s * t.wq + 1; }

std::size_t ones_count(const PoolTiling& t) { return static_cast<std::size_t>(std::max({t.wq, t.hq, t.w.s})); }

std::size_t forward_footprint(const PoolTiling& t) {
  const BandShape bs = band_shape(t, t.pb);
  const auto band = static_cast<std::size_t>(bs.band_elems() + band_slack(t));
  const auto rows = static_cast<std::size_t>(bs.phase_elems() + row_slack(t)),
             out = static_cast<std::size_t>(bs.out_elems());
  std::size_t bytes = 3 * (align128(band * 4) + align128(out * 4));              // per set: band, y
  bytes += 2 * align128(band * 4) + align128(rows * 4) + 2 * align128(out * 4);  // fp32 band, sums, H sums, divisor
  if (t.w.s > 1)  // select scratch, zeros, mask, e0
    bytes += 2 * align128(band * 4) + align128(band) + align128(static_cast<std::size_t>(t.w.s) * 4);
  return bytes + align128(ones_count(t) * 4) + 2 * align128(static_cast<std::size_t>(std::max(t.wq, t.hq)) * 4);
}

std::size_t backward_footprint(const PoolTiling& t) {
  const BandShape bs = band_shape(t, t.pb);
  const auto out = static_cast<std::size_t>(bs.out_elems()), band = static_cast<std::size_t>(bs.band_elems());
  std::size_t bytes = 3 * (align128(out * 4) + align128(band * 4));  // per set: dy, rows
  bytes += 2 * align128(out * 4) +
           static_cast<std::size_t>(t.h.s * t.w.s) * align128(static_cast<std::size_t>(grad_block_elems(t)) * 4);
  if (t.w.s > 1)
    bytes += align128(out * static_cast<std::size_t>(t.w.s) * 4) +
             static_cast<std::size_t>(t.w.s) * align128(out * static_cast<std::size_t>(t.w.s));
  return bytes + align128(ones_count(t) * 4) + kZeroBytes +
         2 * align128(static_cast<std::size_t>(std::max(t.wq, t.hq)) * 4);
}

struct Args {
  PoolViews pv;  // forward: x, y; backward: dy, dx
  PoolTiling t;
  bool include_pad = true;
  std::int64_t divisor_override = 0;
};

// Divisors of output rows [oh0, oh0 + hq) x columns [0, wq) of `planes` planes into `div`
// (outer product of the row and column counts; 1 where no output exists).
struct Divisors {
  Addr rows, cols, ones;
  void build(const Args& a, std::int64_t oh0, std::int64_t planes, Addr div) const {
    const PoolTiling& t = a.t;
    const auto hq = static_cast<std::size_t>(t.hq), wq = static_cast<std::size_t>(t.wq);
    std::vector<float> r(hq, 1.0f), c(wq, 1.0f);
    for (std::size_t i = 0; i < hq; ++i)
      if (oh0 + std::int64_t(i) < t.h.out)
        r[i] = a.divisor_override ? float(a.divisor_override)
                                  : float(t.h.avg_extent(oh0 + std::int64_t(i), a.include_pad));
    for (std::size_t j = 0; j < wq; ++j)
      if (std::int64_t(j) < t.w.out && !a.divisor_override)
        c[j] = float(t.w.avg_extent(std::int64_t(j), a.include_pad));
    store_scalars(rows, r);
    store_scalars(cols, c);
    dev::vec_matmul(kF32, kF32, div, rows, cols, hq, 1, wq, false, false);
    replicate(div, hq * wq * 4, static_cast<std::size_t>(planes));
  }
};

void forward_kernel(const Args& a) {
  const PoolTiling& t = a.t;
  const TensorView &x = a.pv.views[0], &y = a.pv.views[1];
  const BandShape full = band_shape(t, t.pb);
  const auto band = static_cast<std::size_t>(full.band_elems() + band_slack(t));
  const auto rows = static_cast<std::size_t>(full.phase_elems() + row_slack(t)),
             out = static_cast<std::size_t>(full.out_elems());
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr raw[kPipelineBuffers], yo[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) raw[k] = alloc(band * 4), yo[k] = alloc(out * 4);
  const Addr xb32 = alloc(band * 4), sums = alloc(band * 4), hsum = alloc(rows * 4), div = alloc(out * 4);
  const Addr vsum = alloc(out * 4);
  const bool split = t.w.s > 1;
  Addr sel{}, zeros{}, mask0{}, e0{};
  if (split) {
    sel = alloc(band * 4), zeros = alloc(band * 4), mask0 = alloc(band), e0 = alloc(t.w.s * 4);
    dev::vec_fill(kF32, zeros, 0.0, band);
    periodic_mask(mask0, t.w.s, 0, static_cast<std::int64_t>(band));
    fill_e0(e0, t.w.s);
  }
  const Addr ones = alloc(ones_count(t) * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_count(t));
  const std::size_t vec_n = static_cast<std::size_t>(std::max(t.wq, t.hq));
  const Divisors divisors{alloc(vec_n * 4), alloc(vec_n * 4), ones};
  std::int64_t divisors_for = -1;

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  auto tile_of = [&](std::size_t s) { return t.tile(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first, [&](std::size_t s, int k) { load_band_async(t, a.pv, x, tile_of(s), raw[k], 0.0); },
      [&](std::size_t s, int k) {
        const PoolTiling::Tile tile = tile_of(s);
        const BandShape bs = band_shape(t, tile.planes);
        const auto nb = static_cast<std::size_t>(bs.band_elems()), no = static_cast<std::size_t>(bs.out_elems());
        Addr xb = raw[k];
        if (x.dtype != kF32) {
          dev::vec_cast(kF32, xb32, x.dtype, raw[k], nb + static_cast<std::size_t>(band_slack(t)));
          xb = xb32;
        }
        // Sliding sums along W (stride 1), then the output columns (phase 0).
        dev::vec_unary(VecUnaryOp::kCopy, kF32, sums, xb, nb);
        for (std::int64_t kw = 1; kw < t.w.k; ++kw)
          dev::vec_binary(VecBinaryOp::kAdd, kF32, sums, sums, xb.offset(kw * 4), nb);
        Addr hs = sums;
        if (split) {
          extract_phase(hsum, sums, 0, t.w.s, static_cast<std::int64_t>(nb), mask0, zeros, sel, e0);
          hs = hsum;
        }
        // Sums along H: row offset kh is block kh % sh, shifted by kh / sh rows.
        dev::vec_fill(kF32, vsum, 0.0, no);
        for (std::int64_t kh = 0; kh < t.h.k; ++kh) {
          const std::int64_t at = (kh % t.h.s) * bs.pb * bs.hq * bs.wq + kh / t.h.s * bs.wq;
          dev::vec_binary(VecBinaryOp::kAdd, kF32, vsum, vsum, hs.offset(at * 4), no);
        }
        if (divisors_for != tile.oh0 * 65536 + tile.planes) {
          divisors_for = tile.oh0 * 65536 + tile.planes;
          divisors.build(a, tile.oh0, tile.planes, div);
        }
        dev::vec_binary(VecBinaryOp::kDiv, kF32, yo[k], vsum, div, no);
      },
      [&](std::size_t s, int k) { store_out_async(t, a.pv, y, tile_of(s), yo[k]); });
}

void backward_kernel(const Args& a) {
  const PoolTiling& t = a.t;
  const TensorView &dy = a.pv.views[0], &dx = a.pv.views[1];
  const BandShape full = band_shape(t, t.pb);
  const auto out = static_cast<std::size_t>(full.out_elems()), band = static_cast<std::size_t>(full.band_elems());
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr gy[kPipelineBuffers], rows[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) gy[k] = alloc(out * 4), rows[k] = alloc(band * 4);
  const Addr gd = alloc(out * 4), div = alloc(out * 4);
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
  const Addr ones = alloc(ones_count(t) * 4), zeros = alloc(kZeroBytes);
  dev::vec_fill(kF32, ones, 1.0, ones_count(t));
  dev::vec_fill(DType::kInt8, zeros, 0.0, kZeroBytes);
  const std::size_t vec_n = static_cast<std::size_t>(std::max(t.wq, t.hq));
  const Divisors divisors{alloc(vec_n * 4), alloc(vec_n * 4), ones};

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.grad_tiles()));
  auto tile_of = [&](std::size_t s) { return t.grad_tile(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) { load_out_band_async(t, a.pv, dy, tile_of(s).tile, gy[k]); },
      [&](std::size_t s, int k) {
        const PoolTiling::GradTile g = tile_of(s);
        const BandShape bs = band_shape(t, g.tile.planes);
        const auto n = static_cast<std::size_t>(bs.out_elems());
        if (dy.dtype == kF32)
          dev::vec_unary(VecUnaryOp::kCopy, kF32, gd, gy[k], n);
        else
          dev::vec_cast(kF32, gd, dy.dtype, gy[k], n);
        divisors.build(a, g.tile.oh0, g.tile.planes, div);
        dev::vec_binary(VecBinaryOp::kDiv, kF32, gd, gd, div, n);
        dev::vec_fill(kF32, grad, 0.0, blocks * block);
        for (std::int64_t kh = 0; kh < t.h.k; ++kh)
          for (std::int64_t kw = 0; kw < t.w.k; ++kw) add_contribution(t, bs, grad, gd, kh, kw);
      },
      [&](std::size_t s, int k) {
        store_grad_async(t, a.pv, dx, tile_of(s), grad, rows[k], masks, ones, scratch, zeros, kZeroBytes);
      });
}

// Shared checks: the spatial output size of `in` under p must be `out`'s.
Status check_avg(Handle* h, const char* op, const Pool2dParams& p, const TensorDesc& in, const char* in_name,
                 const void* in_ptr, const TensorDesc& out, const char* out_name, const void* out_ptr, std::int64_t* oh,
                 std::int64_t* ow) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, in_name, in, in_ptr));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, out_name, out, out_ptr));
  MLU_RETURN_IF_ERROR(check_same_planes(op, in, in_name, out, out_name));
  MLU_CHECK(p.dilation_h == 1 && p.dilation_w == 1, Status::kBadParam,
            std::string(op) + ": average pooling has no dilation");
  MLU_CHECK(p.divisor_override >= 0, Status::kBadParam, std::string(op) + ": divisor_override must be >= 0");
  const int nd = in.ndim();
  MLU_RETURN_IF_ERROR(pool_output_extent(op, "H", in.dim(nd - 2), p.kernel_h, p.stride_h, p.pad_h, 1, p.ceil_mode, oh));
  MLU_RETURN_IF_ERROR(pool_output_extent(op, "W", in.dim(nd - 1), p.kernel_w, p.stride_w, p.pad_w, 1, p.ceil_mode, ow));
  MLU_CHECK(out.dim(nd - 2) == *oh && out.dim(nd - 1) == *ow, Status::kBadParam,
            std::string(op) + ": " + out_name + " " + out.str() + " must be " + std::to_string(*oh) + "x" +
                std::to_string(*ow) + " spatially");
  return Status::kSuccess;
}

PoolTiling base_tiling(const Pool2dParams& p, const PoolViews& pv, std::int64_t h, std::int64_t w, std::int64_t oh,
                       std::int64_t ow) {
  PoolTiling t;
  t.h = {h, oh, p.kernel_h, p.stride_h, p.pad_h, 1};
  t.w = {w, ow, p.kernel_w, p.stride_w, p.pad_w, 1};
  t.planes = pv.planes;
  t.last_plane_dim = pv.views[0].dims[pv.plane_dims - 1];
  return t;
}

}  // namespace

Status avg_pool_forward(Handle* h, const char* op, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr,
                        const TensorDesc& y, void* y_ptr) {
  std::int64_t oh = 0, ow = 0;
  MLU_RETURN_IF_ERROR(check_avg(h, op, p, x, "x", x_ptr, y, "y", y_ptr, &oh, &ow));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast dim");
  if (y.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  Args args;
  args.include_pad = p.count_include_pad;
  args.divisor_override = p.divisor_override;
  args.pv = make_pool_views({&x, &y}, {x_ptr, y_ptr});
  const int nd = x.ndim();
  args.t = base_tiling(p, args.pv, x.dim(nd - 2), x.dim(nd - 1), oh, ow);
  MLU_CHECK(plan_pool_tiles(&args.t, h->nram_bytes(), h->total_cores(), forward_footprint, kPoolTilesPerCore), Status::kNotSupported,
            std::string(op) + ": NRAM too small for one output row of " + x.str());
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { forward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.t.tiles())),
      cnrtFuncTypeBlock));
  record(*h, op, 0,
         static_cast<std::uint64_t>(x.numel()) * x.element_size() +
             static_cast<std::uint64_t>(y.numel()) * y.element_size(),
         1);
  return Status::kSuccess;
}

Status avg_pool_backward(Handle* h, const char* op, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                         const TensorDesc& dx, void* dx_ptr) {
  std::int64_t oh = 0, ow = 0;
  MLU_RETURN_IF_ERROR(check_avg(h, op, p, dx, "dx", dx_ptr, dy, "dy", dy_ptr, &oh, &ow));
  MLU_CHECK(writable(dx), Status::kBadParam, std::string(op) + ": dx " + dx.str() + " has a broadcast dim");
  if (dx.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  Args args;
  args.include_pad = p.count_include_pad;
  args.divisor_override = p.divisor_override;
  args.pv = make_pool_views({&dy, &dx}, {dy_ptr, dx_ptr});
  const int nd = dx.ndim();
  args.t = base_tiling(p, args.pv, dx.dim(nd - 2), dx.dim(nd - 1), oh, ow);
  MLU_CHECK(plan_pool_grad_tiles(&args.t, h->nram_bytes(), h->total_cores(), backward_footprint), Status::kNotSupported,
            std::string(op) + ": NRAM too small for one band of " + dx.str());
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { backward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.t.grad_tiles())),
      cnrtFuncTypeBlock));
  record(*h, op, 0,
         static_cast<std::uint64_t>(dy.numel()) * dy.element_size() +
             static_cast<std::uint64_t>(dx.numel()) * dx.element_size(),
         1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::nn

namespace mlusim::mlu {

Status avg_pool2d_forward(Handle* h, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                          void* y_ptr) {
  return nn::avg_pool_forward(h, "avg_pool2d_forward", p, x, x_ptr, y, y_ptr);
}

Status avg_pool2d_backward(Handle* h, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& dx, void* dx_ptr) {
  return nn::avg_pool_backward(h, "avg_pool2d_backward", p, dy, dy_ptr, dx, dx_ptr);
}

}  // namespace mlusim::mlu
