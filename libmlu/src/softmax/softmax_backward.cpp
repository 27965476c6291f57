// softmax_backward: one BLOCK kernel over the same tiles as the forward, reading y and dy once
// and writing dx once when a slice fits NRAM (else two sweeps: the slice sum, then the write):
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
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

// NRAM: three (y, dy) tile pairs (pipeline), a scratch tile, sum/partial statistics, ones.
std::size_t backward_footprint(const tile::Shape& s) {
  return 7 * align128(s.count() * 4) + 2 * align128(s.stats() * 4) + align128(std::max(s.nr, s.ob) * 4);
}

struct BackwardArgs {
  SoftmaxMode mode = SoftmaxMode::kSoftmax;
  TensorView y, dy, dx;
  ReductionTiling tiling;
};

void backward_kernel(const BackwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr ys[kPipelineBuffers], gs[kPipelineBuffers];
  for (int b = 0; b < kPipelineBuffers; ++b) {
    ys[b] = dev::alloc(Space::kNram, ms.count() * 4);
    gs[b] = dev::alloc(Space::kNram, ms.count() * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const Addr sum = dev::alloc(Space::kNram, ms.stats() * 4);
  const Addr part = dev::alloc(Space::kNram, ms.stats() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);

  const bool softmax = a.mode == SoftmaxMode::kSoftmax;
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  const std::size_t per_group = (t.multipass() ? 2 : 1) * chunks;
  struct Step {
    TileBox tb;
    std::size_t pass, chunk;
  };
  // Single pass: this task's (ramped) tiles; multi-pass: each group's chunks, two sweeps.
  const std::vector<TileBox> single =
      t.multipass() ? std::vector<TileBox>{} : t.pass_tiles(dev::task_id(), dev::task_dim());
  const std::size_t steps = t.multipass() ? (range.second - range.first) * per_group : single.size();
  auto step = [&](std::size_t s) {
    if (!t.multipass()) return Step{single[s], 0, 0};
    const std::size_t k = s % per_group;
    return Step{t.box(static_cast<std::int64_t>(range.first + s / per_group), static_cast<std::int64_t>(k % chunks)),
                k / chunks, k % chunks};
  };

  // The slice sum: softmax sum(dy * y), log_softmax sum(dy); into `dst`.
  auto slice_sum = [&](const tile::Shape& s, Addr dst, Addr y, Addr g) {
    if (softmax) {
      dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, g, y, s.count());
      tile::reduce_sum(s, dst, scratch, ones, scratch);
    } else {
      tile::reduce_sum(s, dst, g, ones, scratch);
    }
  };
  // dx into g, given the finished slice sum.
  auto write = [&](const tile::Shape& s, Addr y, Addr g) {
    if (softmax) {
      dev::vec_unary(VecUnaryOp::kNeg, kF32, part, sum, s.stats());
      tile::broadcast(s, g, part, ones, true);  // dy - sum
      dev::vec_binary(VecBinaryOp::kMul, kF32, g, g, y, s.count());
    } else {
      dev::vec_unary(VecUnaryOp::kExp, kF32, y, y, s.count());
      tile::broadcast(s, scratch, sum, ones, false);
      dev::vec_binary(VecBinaryOp::kMul, kF32, y, y, scratch, s.count());
      dev::vec_binary(VecBinaryOp::kSub, kF32, g, g, y, s.count());
    }
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int b) {
        const Step st = step(s);
        const std::size_t n = st.tb.shape.count();
        load_f32_async(a.y, st.tb.box, ys[b], n);
        load_f32_async(a.dy, st.tb.box, gs[b], n);
      },
      [&](std::size_t s, int b) {
        const Step st = step(s);
        const tile::Shape& sh = st.tb.shape;
        widen_f32(a.y.dtype, ys[b], sh.count());
        widen_f32(a.dy.dtype, gs[b], sh.count());
        if (!t.multipass()) {
          slice_sum(sh, sum, ys[b], gs[b]);
          write(sh, ys[b], gs[b]);
        } else if (st.pass == 0) {
          slice_sum(sh, st.chunk == 0 ? sum : part, ys[b], gs[b]);
          if (st.chunk > 0) dev::vec_binary(VecBinaryOp::kAdd, kF32, sum, sum, part, sh.stats());
        } else {
          write(sh, ys[b], gs[b]);
        }
      },
      [&](std::size_t s, int b) {
        const Step st = step(s);
        if (!t.multipass() || st.pass == 1) store_f32_async(a.dx, st.tb.box, gs[b], st.tb.shape.count());
      });
}

}  // namespace

Status softmax_backward(Handle* h, SoftmaxMode mode, int dim, const TensorDesc& y, const void* y_ptr,
                        const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dx, void* dx_ptr) {
  using namespace nn;
  const char* op = softmax_op_name(mode, true);
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(mode == SoftmaxMode::kSoftmax || mode == SoftmaxMode::kLogSoftmax, Status::kBadParam,
            std::string(op) + ": unknown mode " + std::to_string(static_cast<int>(mode)));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_desc(&dy, op, "dy"));
  MLU_RETURN_IF_ERROR(check_desc(&dx, op, "dx"));
  for (const auto& [d, name] : {std::pair{&y, "y"}, std::pair{&dy, "dy"}, std::pair{&dx, "dx"}})
    MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  MLU_RETURN_IF_ERROR(check_same_shape(y, dy, op, "y", "dy"));
  MLU_RETURN_IF_ERROR(check_same_shape(y, dx, op, "y", "dx"));
  MLU_CHECK(writable(dx), Status::kBadParam, std::string(op) + ": dx " + dx.str() + " has a broadcast (stride 0) dim");
  int d = 0;
  MLU_RETURN_IF_ERROR(normalize_softmax_dim(op, dim, y, &d));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, op, "dy"));
  MLU_RETURN_IF_ERROR(check_ptr(dx_ptr, dx, op, "dx"));
  if (y.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  BackwardArgs args;
  args.mode = mode;
  args.y = make_view(y, y_ptr);
  args.dy = make_view(dy, dy_ptr);
  args.dx = make_view(dx, dx_ptr);
  const auto [r_begin, i_begin] = group_softmax_views({&args.y, &args.dy, &args.dx}, d);
  const auto tiling = plan_reduction(args.y, r_begin, i_begin, h->nram_bytes(), h->total_cores(),
                                     target_tile_elements(y.numel(), h->total_cores()), backward_footprint);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + y.str());
  args.tiling = *tiling;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { backward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock));
  const auto n = static_cast<std::uint64_t>(y.numel());
  record(*h, op, 0, n * (y.element_size() + dy.element_size() + dx.element_size()), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
