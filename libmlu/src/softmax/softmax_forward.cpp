// softmax_forward: one BLOCK kernel; each task walks its share of tiles [ob rows, n, ic columns].
//
// Single pass (the slice fits NRAM): load once, then on the VFU, in fp32:
//   m = max(x); t = x - m (a K=1 matmul add, one pass); softmax: t = exp(t), y = t * (1 / sum(t));
//   log_softmax: y = t - log(sum(exp(t))). Store once: the kernel reads x once and writes y once.
// Multi-pass (a slice larger than NRAM): three sweeps over chunks of the slice — max, then
// sum(exp(x - max)), then write — with running statistics per slice.
// Tiles flow through a triple-buffered pipeline (load of the next, store of the previous in flight
// while one computes).
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "softmax/pipeline.h"
#include "softmax/softmax_common.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;
using tile::kF32;

// NRAM: three tile buffers (pipeline), a scratch tile, max/sum/partial statistics, a ones vector.
std::size_t forward_footprint(const tile::Shape& s) {
  return 4 * align128(s.count() * 4) + 3 * align128(s.stats() * 4) + align128(std::max(s.nr, s.ob) * 4);
}

struct ForwardArgs {
  SoftmaxMode mode = SoftmaxMode::kSoftmax;
  TensorView x, y;
  ReductionTiling tiling;
};

void forward_kernel(const ForwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr tiles[kPipelineBuffers];
  for (Addr& b : tiles) b = dev::alloc(Space::kNram, ms.count() * 4);
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const Addr max = dev::alloc(Space::kNram, ms.stats() * 4);
  const Addr sum = dev::alloc(Space::kNram, ms.stats() * 4);
  const Addr part = dev::alloc(Space::kNram, ms.stats() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);

  const bool softmax = a.mode == SoftmaxMode::kSoftmax;
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  const std::size_t g0 = range.first, g1 = range.second;
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  const std::size_t per_group = (t.multipass() ? 3 : 1) * chunks;
  struct Step {
    TileBox tb;
    std::size_t pass, chunk;
  };
  // Single pass: this task's (ramped) tiles; multi-pass: each group's chunks, three sweeps.
  const std::vector<TileBox> single =
      t.multipass() ? std::vector<TileBox>{} : t.pass_tiles(dev::task_id(), dev::task_dim());
  const std::size_t steps = t.multipass() ? (g1 - g0) * per_group : single.size();
  auto step = [&](std::size_t s) {
    if (!t.multipass()) return Step{single[s], 0, 0};
    const std::size_t k = s % per_group;
    return Step{t.box(static_cast<std::int64_t>(g0 + s / per_group), static_cast<std::int64_t>(k % chunks)), k / chunks,
                k % chunks};
  };

  // y = softmax / log_softmax of a whole tile: stats of the full slices.
  auto single_pass = [&](const tile::Shape& s, Addr x) {
    tile::reduce_max(s, max, x, scratch);
    dev::vec_unary(VecUnaryOp::kNeg, kF32, max, max, s.stats());
    tile::broadcast(s, x, max, ones, true);  // x - max
    if (softmax) {
      dev::vec_unary(VecUnaryOp::kExp, kF32, x, x, s.count());
      tile::reduce_sum(s, sum, x, ones, scratch);
      dev::vec_unary(VecUnaryOp::kRecip, kF32, sum, sum, s.stats());
      tile::broadcast(s, scratch, sum, ones, false);
      dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, scratch, s.count());
    } else {
      dev::vec_unary(VecUnaryOp::kExp, kF32, scratch, x, s.count());
      tile::reduce_sum(s, sum, scratch, ones, scratch);
      dev::vec_unary(VecUnaryOp::kLog, kF32, sum, sum, s.stats());
      dev::vec_unary(VecUnaryOp::kNeg, kF32, sum, sum, s.stats());
      tile::broadcast(s, x, sum, ones, true);  // x - max - log(sum)
    }
  };

  // Multi-pass: pass 0 folds chunk maxima into `max` (negated after the last chunk), pass 1 folds
  // sums of exp(x - max) into `sum` (then 1/sum or -log(sum)), pass 2 writes.
  auto fold = [&](VecBinaryOp op, Addr acc, std::size_t chunk, std::size_t n) {
    if (chunk == 0)
      dev::vec_unary(VecUnaryOp::kCopy, kF32, acc, part, n);
    else
      dev::vec_binary(op, kF32, acc, acc, part, n);
  };
  auto multi_pass = [&](const Step& st, Addr x) {
    const tile::Shape& s = st.tb.shape;
    const bool last_chunk = st.chunk + 1 == chunks;
    if (st.pass == 0) {
      tile::reduce_max(s, part, x, scratch);
      fold(VecBinaryOp::kMax, max, st.chunk, s.stats());
      if (last_chunk) dev::vec_unary(VecUnaryOp::kNeg, kF32, max, max, s.stats());
      return;
    }
    tile::broadcast(s, x, max, ones, true);  // x - max
    if (st.pass == 1) {
      dev::vec_unary(VecUnaryOp::kExp, kF32, x, x, s.count());
      tile::reduce_sum(s, part, x, ones, scratch);
      fold(VecBinaryOp::kAdd, sum, st.chunk, s.stats());
      if (last_chunk && softmax) dev::vec_unary(VecUnaryOp::kRecip, kF32, sum, sum, s.stats());
      if (last_chunk && !softmax) {
        dev::vec_unary(VecUnaryOp::kLog, kF32, sum, sum, s.stats());
        dev::vec_unary(VecUnaryOp::kNeg, kF32, sum, sum, s.stats());
      }
      return;
    }
    if (softmax) {
      dev::vec_unary(VecUnaryOp::kExp, kF32, x, x, s.count());
      tile::broadcast(s, scratch, sum, ones, false);
      dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, scratch, s.count());
    } else {
      tile::broadcast(s, x, sum, ones, true);
    }
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int b) {
        const Step st = step(s);
        load_f32_async(a.x, st.tb.box, tiles[b], st.tb.shape.count());
      },
      [&](std::size_t s, int b) {
        const Step st = step(s);
        widen_f32(a.x.dtype, tiles[b], st.tb.shape.count());
        if (t.multipass())
          multi_pass(st, tiles[b]);
        else
          single_pass(st.tb.shape, tiles[b]);
      },
      [&](std::size_t s, int b) {
        const Step st = step(s);
        if (!t.multipass() || st.pass == 2) store_f32_async(a.y, st.tb.box, tiles[b], st.tb.shape.count());
      });
}

}  // namespace

Status softmax_forward(Handle* h, SoftmaxMode mode, int dim, const TensorDesc& x, const void* x_ptr,
                       const TensorDesc& y, void* y_ptr) {
  using namespace nn;
  const char* op = softmax_op_name(mode, false);
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(mode == SoftmaxMode::kSoftmax || mode == SoftmaxMode::kLogSoftmax, Status::kBadParam,
            std::string(op) + ": unknown mode " + std::to_string(static_cast<int>(mode)));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast (stride 0) dim");
  int d = 0;
  MLU_RETURN_IF_ERROR(normalize_softmax_dim(op, dim, x, &d));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  ForwardArgs args;
  args.mode = mode;
  args.x = make_view(x, x_ptr);
  args.y = make_view(y, y_ptr);
  const auto [r_begin, i_begin] = group_softmax_views({&args.x, &args.y}, d);
  const auto tiling = plan_reduction(args.x, r_begin, i_begin, h->nram_bytes(), h->total_cores(),
                                     target_tile_elements(x.numel(), h->total_cores()), forward_footprint);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  args.tiling = *tiling;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { forward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock));
  const auto n = static_cast<std::uint64_t>(x.numel());
  record(*h, op, 0, n * (x.element_size() + y.element_size()), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
