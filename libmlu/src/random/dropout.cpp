// dropout_forward / dropout_backward: BLOCK kernels over elementwise tiles.
//
// The mask comes from Philox4x32-10 computed by the kernel itself: for element i (row-major
// index), word i % 4 of block (first + i / 4) under key = seed; it is kept when its top 24 bits,
// as a uniform in [0, 1), fall below 1 - p. The VFU has no bitwise xor, shifts or 32x32->64
// multiplies, so the words are computed by scalar code on the core, and each Philox block's mask
// bytes are written to NRAM with one scalar store (dev::store_bytes): the scalar unit is charged
// one on-chip access per four elements (scalar.onchip_access_cycles). That charge stands in for the
// block's ALU work, which the simulator's cost model has no separate term for: an approximation,
// a little optimistic for a core without a vector RNG. p = 0 and p = 1 need no random bits (the
// mask is constant) and skip the generator. Then on the VFU, in fp32: y = x * mask * scale.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "mlusim/mlu/random.h"
#include "random/philox.h"
#include "softmax/elementwise_tiling.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using tile::kF32;

// NRAM of the forward: three fp32 tiles and three mask tiles (pipeline) and an fp32 mask scratch.
std::size_t forward_footprint(std::int64_t elements) {
  const auto n = static_cast<std::size_t>(elements);
  return 4 * align128(n * 4) + 3 * align128(n);
}
// NRAM of the backward: three (dy, mask) pairs of fp32 tiles.
std::size_t backward_footprint(std::int64_t elements) { return 6 * align128(static_cast<std::size_t>(elements) * 4); }

// Largest tile that fits NRAM, at most about 1/8 of one core's share (for overlap).
std::int64_t tile_elements(const Handle& h, std::int64_t total, std::size_t (*footprint)(std::int64_t)) {
  std::int64_t lo = 1, hi = std::max<std::int64_t>(1, std::min(total, target_tile_elements(total, h.total_cores())));
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (footprint(mid) <= h.nram_bytes())
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

enum class MaskSource : std::uint8_t { kPhilox, kAllKept, kNoneKept };

struct ForwardArgs {
  TensorView x, y, mask;
  ElementwiseTiling tiling;
  MaskSource source = MaskSource::kPhilox;
  std::array<std::uint32_t, 2> key{};
  std::uint64_t first_block = 0;
  std::uint32_t threshold = 0;  // keep when (word >> 8) < threshold
  double scale = 1;
};

// Mask bytes of box row elements [flat, flat + len) into NRAM at `dst`, one scalar store per
// Philox block.
void philox_mask(const ForwardArgs& a, std::int64_t flat, std::int64_t len, Addr dst) {
  for_each_philox_block(a.key, a.first_block, flat, len, [&](std::int64_t i, std::int64_t end, const PhiloxWords& w) {
    std::uint8_t bytes[4];
    for (std::int64_t j = i; j < end; ++j) bytes[j - i] = (w[j % 4] >> 8) < a.threshold ? 1 : 0;
    dev::store_bytes(dst.offset(i - flat), bytes, static_cast<std::size_t>(end - i));
  });
}

void forward_kernel(const ForwardArgs& a) {
  const ElementwiseTiling& t = a.tiling;
  const auto maxn = static_cast<std::size_t>(t.max_elements());
  Addr xs[kPipelineBuffers], ms[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    xs[k] = dev::alloc(Space::kNram, maxn * 4);
    ms[k] = dev::alloc(Space::kNram, maxn);
  }
  const Addr scratch = dev::alloc(Space::kNram, maxn * 4);
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  auto box = [&](std::size_t s) { return t.box(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const Box b = box(s);
        load_f32_async(a.x, b, xs[k], static_cast<std::size_t>(b.count(t.ndim)));
      },
      [&](std::size_t s, int k) {
        const Box b = box(s);
        const auto n = static_cast<std::size_t>(b.count(t.ndim));
        widen_f32(a.x.dtype, xs[k], n);
        if (a.source == MaskSource::kPhilox) {
          const std::int64_t cols = b.extent[t.ndim - 1];
          for (std::int64_t r = 0; r < b.extent[t.ndim - 2]; ++r)
            philox_mask(a, t.flat_index(b, r), cols, ms[k].offset(r * cols));
        } else {
          dev::vec_fill(DType::kBool, ms[k], a.source == MaskSource::kAllKept ? 1.0 : 0.0, n);
        }
        dev::vec_cast(kF32, scratch, DType::kBool, ms[k], n);
        dev::vec_binary(VecBinaryOp::kMul, kF32, xs[k], xs[k], scratch, n);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, xs[k], xs[k], a.scale, n);
      },
      [&](std::size_t s, int k) {
        const Box b = box(s);
        store_f32_async(a.y, b, xs[k], static_cast<std::size_t>(b.count(t.ndim)));
        store_box_async(a.mask, b, ms[k]);
      });
}

struct BackwardArgs {
  TensorView dy, mask, dx;
  ElementwiseTiling tiling;
  double scale = 1;
};

void backward_kernel(const BackwardArgs& a) {
  const ElementwiseTiling& t = a.tiling;
  const auto maxn = static_cast<std::size_t>(t.max_elements());
  Addr gs[kPipelineBuffers], ms[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    gs[k] = dev::alloc(Space::kNram, maxn * 4);
    ms[k] = dev::alloc(Space::kNram, maxn * 4);
  }
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  auto box = [&](std::size_t s) { return t.box(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const Box b = box(s);
        const auto n = static_cast<std::size_t>(b.count(t.ndim));
        load_f32_async(a.dy, b, gs[k], n);
        load_f32_async(a.mask, b, ms[k], n);
      },
      [&](std::size_t s, int k) {
        const auto n = static_cast<std::size_t>(box(s).count(t.ndim));
        widen_f32(a.dy.dtype, gs[k], n);
        widen_f32(a.mask.dtype, ms[k], n);
        dev::vec_binary(VecBinaryOp::kMul, kF32, gs[k], gs[k], ms[k], n);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, gs[k], gs[k], a.scale, n);
      },
      [&](std::size_t s, int k) {
        const Box b = box(s);
        store_f32_async(a.dx, b, gs[k], static_cast<std::size_t>(b.count(t.ndim)));
      });
}

}  // namespace

Status dropout_forward(Handle* h, double p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr,
                       const TensorDesc& mask, void* mask_ptr) {
  using namespace nn;
  const char* op = "dropout_forward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(p >= 0 && p <= 1, Status::kBadParam, std::string(op) + ": p = " + std::to_string(p) + " is not in [0, 1]");
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_desc(&mask, op, "mask"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(mask, {DType::kBool, DType::kInt8}, op, "mask"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, mask, op, "x", "mask"));
  MLU_CHECK(writable(y) && writable(mask), Status::kBadParam,
            std::string(op) + ": y and mask may not have broadcast dims");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  MLU_RETURN_IF_ERROR(check_ptr(mask_ptr, mask, op, "mask"));
  const std::int64_t n = x.numel();
  // The handle's sequence advances whatever p is, like torch's generator offset.
  const std::uint64_t first_number = h->reserve_random((static_cast<std::uint64_t>(n) + 3) / 4 * 4);
  if (n == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  ForwardArgs args;
  args.x = make_view(x, x_ptr);
  args.y = make_view(y, y_ptr);
  args.mask = make_view(mask, mask_ptr);
  args.tiling = plan_elementwise({&args.x, &args.y, &args.mask}, tile_elements(*h, n, forward_footprint));
  args.source = p == 0 ? MaskSource::kAllKept : p == 1 ? MaskSource::kNoneKept : MaskSource::kPhilox;
  args.key = {static_cast<std::uint32_t>(h->seed()), static_cast<std::uint32_t>(h->seed() >> 32)};
  args.first_block = first_number / 4;
  args.threshold = static_cast<std::uint32_t>(std::ceil((1 - p) * 16777216.0));  // (1 - p) * 2^24
  args.scale = p == 1 ? 0 : 1 / (1 - p);
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { forward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.tiles())),
      cnrtFuncTypeBlock));
  record(*h, op, 0, static_cast<std::uint64_t>(n) * (x.element_size() + y.element_size() + mask.element_size()), 1);
  return Status::kSuccess;
}

Status dropout_backward(Handle* h, double scale, const TensorDesc& dy, const void* dy_ptr, const TensorDesc& mask,
                        const void* mask_ptr, const TensorDesc& dx, void* dx_ptr) {
  using namespace nn;
  const char* op = "dropout_backward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(std::isfinite(scale), Status::kBadParam, std::string(op) + ": scale is not finite");
  MLU_RETURN_IF_ERROR(check_desc(&dy, op, "dy"));
  MLU_RETURN_IF_ERROR(check_desc(&mask, op, "mask"));
  MLU_RETURN_IF_ERROR(check_desc(&dx, op, "dx"));
  MLU_RETURN_IF_ERROR(check_dtype_in(dy, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dy"));
  MLU_RETURN_IF_ERROR(check_dtype_in(dx, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dx"));
  MLU_RETURN_IF_ERROR(check_dtype_in(mask, {DType::kBool, DType::kInt8}, op, "mask"));
  MLU_RETURN_IF_ERROR(check_same_shape(dy, mask, op, "dy", "mask"));
  MLU_RETURN_IF_ERROR(check_same_shape(dy, dx, op, "dy", "dx"));
  MLU_CHECK(writable(dx), Status::kBadParam, std::string(op) + ": dx " + dx.str() + " has a broadcast (stride 0) dim");
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, op, "dy"));
  MLU_RETURN_IF_ERROR(check_ptr(mask_ptr, mask, op, "mask"));
  MLU_RETURN_IF_ERROR(check_ptr(dx_ptr, dx, op, "dx"));
  const std::int64_t n = dy.numel();
  if (n == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  BackwardArgs args;
  args.dy = make_view(dy, dy_ptr);
  args.mask = make_view(mask, mask_ptr);
  args.dx = make_view(dx, dx_ptr);
  args.tiling = plan_elementwise({&args.dy, &args.mask, &args.dx}, tile_elements(*h, n, backward_footprint));
  args.scale = scale;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { backward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.tiles())),
      cnrtFuncTypeBlock));
  record(*h, op, 0, static_cast<std::uint64_t>(n) * (dy.element_size() + mask.element_size() + dx.element_size()), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
