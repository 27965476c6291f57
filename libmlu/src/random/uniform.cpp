// random_uniform: a BLOCK kernel over elementwise tiles of y. Nothing is loaded: each tile's
// uniforms come from Philox4x32-10 computed by scalar code on the core (the VFU has no xor,
// shifts or 32x32->64 multiplies), one scalar store of four fp32 values per Philox block, so the
// scalar unit is charged one on-chip access per four elements (as dropout's mask; an
// approximation of the block's ALU work). Then on the VFU, in fp32: y = u * (hi - lo) + lo, and
// the tile is narrowed to y's dtype and stored.
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

constexpr double kTwoPowMinus24 = 1.0 / 16777216.0;  // u = (word >> 8) * 2^-24: 24 bits, exact in fp32

// NRAM: three fp32 tiles (pipeline).
std::size_t footprint(std::int64_t elements) { return kPipelineBuffers * align128(static_cast<std::size_t>(elements) * 4); }

// Largest tile that fits NRAM, at most about 1/8 of one core's share (for overlap).
std::int64_t tile_elements(const Handle& h, std::int64_t total) {
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

struct UniformArgs {
  TensorView y;
  ElementwiseTiling tiling;
  std::array<std::uint32_t, 2> key{};
  std::uint64_t first_block = 0;
  double lo = 0, span = 1;  // y = u * span + lo
};

// fp32 uniforms of elements [flat, flat + len) into NRAM at `dst`.
void philox_uniforms(const UniformArgs& a, std::int64_t flat, std::int64_t len, Addr dst) {
  for_each_philox_block(a.key, a.first_block, flat, len, [&](std::int64_t i, std::int64_t end, const PhiloxWords& w) {
    float values[4];
    for (std::int64_t j = i; j < end; ++j) values[j - i] = static_cast<float>((w[j % 4] >> 8) * kTwoPowMinus24);
    dev::store_bytes(dst.offset((i - flat) * 4), values, static_cast<std::size_t>(end - i) * 4);
  });
}

void uniform_kernel(const UniformArgs& a) {
  const ElementwiseTiling& t = a.tiling;
  const auto maxn = static_cast<std::size_t>(t.max_elements());
  Addr ys[kPipelineBuffers];
  for (auto& y : ys) y = dev::alloc(Space::kNram, maxn * 4);
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  auto box = [&](std::size_t s) { return t.box(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first, [](std::size_t, int) {},
      [&](std::size_t s, int k) {
        const Box b = box(s);
        const auto n = static_cast<std::size_t>(b.count(t.ndim));
        const std::int64_t cols = b.extent[t.ndim - 1];
        for (std::int64_t r = 0; r < b.extent[t.ndim - 2]; ++r)
          philox_uniforms(a, t.flat_index(b, r), cols, ys[k].offset(r * cols * 4));
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, ys[k], ys[k], a.span, n);
        dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, ys[k], ys[k], a.lo, n);
      },
      [&](std::size_t s, int k) {
        const Box b = box(s);
        store_f32_async(a.y, b, ys[k], static_cast<std::size_t>(b.count(t.ndim)));
      });
}

}  // namespace

Status random_uniform(Handle* h, double lo, double hi, const TensorDesc& y, void* y_ptr) {
  using namespace nn;
  const char* op = "random_uniform";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, Status::kBadParam,
            std::string(op) + ": expected finite lo <= hi, got [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kFloat32, DType::kFloat16}, op, "y"));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast (stride 0) dim");
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  const std::int64_t n = y.numel();
  const std::uint64_t first_number = h->reserve_random((static_cast<std::uint64_t>(n) + 3) / 4 * 4);
  if (n == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  UniformArgs args;
  args.y = make_view(y, y_ptr);
  args.tiling = plan_elementwise({&args.y}, tile_elements(*h, n));
  args.key = {static_cast<std::uint32_t>(h->seed()), static_cast<std::uint32_t>(h->seed() >> 32)};
  args.first_block = first_number / 4;
  args.lo = lo;
  args.span = hi - lo;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { uniform_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.tiles())),
      cnrtFuncTypeBlock));
  record(*h, op, 0, static_cast<std::uint64_t>(n) * y.element_size(), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
