// arange: y[i] = start + i * step for a 1-d y, computed on the device (torch.arange's values).
//
// Each task builds an int32 iota tile on chip once (one scalar store, then doubling adds), then per
// tile adds the tile's first index, converts, scales by step, adds start and converts to y's
// dtype, and stores the tile with an async strided copy. Integral y is computed exactly in int32;
// floating y in fp32 (torch computes start + i * step in double and rounds once: values agree
// exactly while i * step and the sum are representable in fp32, e.g. all integral values < 2^24).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/iter_space.h"
#include "elementwise/op_checks.h"
#include "elementwise/tile_io.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

struct ArangeLaunch {
  ew::IterSpace space;  // operand 0 = y (1-d)
  ew::TilePlan plan;
  double start = 0, step = 1;
};

using sim::VecBinaryOp;

void arange_body(const ArangeLaunch& L) {
  const DType out = L.space.operands[0].dtype;
  const bool integral = out == DType::kInt32 || out == DType::kInt8;
  const auto n = static_cast<std::size_t>(L.plan.max_elems());
  const dev::Addr iota = dev::alloc(sim::Space::kNram, n * 4);
  const dev::Addr work = dev::alloc(sim::Space::kNram, n * 4);
  const dev::Addr tile_buf = dev::alloc(sim::Space::kNram, n * sim::dtype_size(out));
  const std::int32_t zero = 0;
  dev::store_bytes(iota, &zero, 4);
  for (std::size_t len = 1; len < n; len *= 2)  // iota[len, 2 len) = iota[0, len) + len
    dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, iota.offset(len * 4), iota, static_cast<double>(len),
                           std::min(len, n - len));
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t first = L.plan.tiles * task / tasks, last = L.plan.tiles * (task + 1) / tasks;
  for (std::int64_t t = first; t < last; ++t) {
    const ew::Tile tile = ew::tile_at(L.space, L.plan, t);
    const auto m = static_cast<std::size_t>(tile.elems());
    // The store of the previous tile reads tile_buf: wait before overwriting it.
    dev::sync_io();
    // The space is 1-d padded with leading size-1 dims: the innermost dim is y's.
    const std::int64_t first_index = tile.origin[static_cast<std::size_t>(L.space.ndim - 1)];
    dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, work, iota, static_cast<double>(first_index), m);
    if (integral) {
      dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kInt32, work, work, L.step, m);
      dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, work, work, L.start, m);
      if (out == DType::kInt32) {
        dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, tile_buf, work, 0.0, m);
      } else {
        dev::vec_cast(out, tile_buf, DType::kInt32, work, m);
      }
    } else {
      dev::vec_cast(DType::kFloat32, work, DType::kInt32, work, m);
      dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, work, work, L.step, m);
      dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, work, work, L.start, m);
      if (out == DType::kFloat32) {
        dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, tile_buf, work, 0.0, m);
      } else {
        dev::vec_cast(out, tile_buf, DType::kFloat32, work, m);
      }
    }
    tile::store(tile::box_view(L.space, L.space.operands[0], tile), tile_buf, true);
  }
  dev::sync_io();
}

}  // namespace

Status arange(Handle* h, double start, double step, const TensorDesc& y, void* y_ptr) {
  const char* name = "arange";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {}, {"y", &y, y_ptr}));
  MLU_CHECK(y.ndim() == 1, Status::kBadParam, std::string(name) + ": y must be 1-d, got " + y.str());
  const DType t = y.dtype();
  MLU_CHECK(t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kInt32 || t == DType::kInt8,
            Status::kNotSupported,
            std::string(name) + ": y must be fp32, fp16, int32 or int8 (compute int64 in int32 and cast), got " + y.str());
  MLU_CHECK(std::isfinite(start) && std::isfinite(step), Status::kBadParam,
            std::string(name) + ": start and step must be finite");
  const double last = start + step * static_cast<double>(std::max<std::int64_t>(y.numel() - 1, 0));
  if (t == DType::kInt32 || t == DType::kInt8) {
    const double lo = t == DType::kInt8 ? -128.0 : -2147483648.0, hi = t == DType::kInt8 ? 127.0 : 2147483647.0;
    MLU_CHECK(start == std::trunc(start) && step == std::trunc(step), Status::kBadParam,
              std::string(name) + ": integral y needs an integral start and step");
    MLU_CHECK(std::min(start, last) >= lo && std::max(start, last) <= hi && std::fabs(step) <= hi, Status::kBadParam,
              std::string(name) + ": values from " + std::to_string(start) + " to " + std::to_string(last) +
                  " overflow " + std::string(sim::dtype_name(t)));
  }
  MLU_CHECK(y.numel() < (std::int64_t{1} << 31), Status::kNumericalOverflow,
            std::string(name) + ": more than 2^31 elements");
  if (y.numel() == 0) return Status::kSuccess;
  auto L = std::make_shared<ArangeLaunch>();
  L->start = start;
  L->step = step;
  L->space = ew::make_iter_space(y.dims(), {&y}, {y_ptr});
  // Per element on chip: iota and work (4 B each) and the output tile.
  const auto nram_elems = static_cast<std::int64_t>((h->nram_bytes() - 256) / (8 + y.element_size()));
  const std::int64_t per_task = (y.numel() + h->total_cores() - 1) / h->total_cores();
  L->plan = ew::plan_tiles(L->space, std::max<std::int64_t>(1, std::min(nram_elems, std::max<std::int64_t>(1024, per_task))));
  MLU_RETURN_IF_ERROR(launch(*h, name, [L] { arange_body(*L); },
                             block_dim(*h, static_cast<std::uint64_t>(L->plan.tiles)), CNRT_FUNC_TYPE_BLOCK));
  record(*h, name, 0, static_cast<std::uint64_t>(y.numel()) * y.element_size(), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
