// copy_strided and cast: any strided view to any strided view, converting dtypes as torch's
// copy_ does.
//
// Two kernels: a same-dtype copy whose both sides have unit innermost stride (after ordering the
// dims by dst's strides) and no broadcast goes GDRAM->GDRAM directly, each task moving its run
// of boxes with 3-level strided DMAs (the data never needs the VFU); everything else (transposes,
// broadcasts, dtype conversion) streams through NRAM with the elementwise kernel.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/conversion.h"
#include "elementwise/copy.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

// Per-task share of a direct copy below which more tasks only add DMA latency.
constexpr std::int64_t kMinDirectElems = 16384;

struct DirectCopy {
  ew::IterSpace space;  // operand 0 = dst, 1 = src
  ew::TilePlan plan;
};

void direct_copy_body(const DirectCopy& L) {
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t first = L.plan.tiles * task / tasks, last = L.plan.tiles * (task + 1) / tasks;
  const auto es = static_cast<std::int64_t>(sim::dtype_size(L.space.operands[0].dtype));
  for (std::int64_t t = first; t < last; ++t) {
    const ew::Tile tile = ew::tile_at(L.space, L.plan, t);
    const tile::BoxView dst = tile::box_view(L.space, L.space.operands[0], tile);
    const tile::BoxView src = tile::box_view(L.space, L.space.operands[1], tile);
    std::vector<tile::CopyDim> dims;
    for (int k = ew::kBoxDims - 1; k >= 0; --k)
      dims.push_back(tile::CopyDim{tile.ext[k], dst.stride[k] * es, src.stride[k] * es});
    tile::copy_box(dev::Addr{sim::Space::kGdram, dst.gdram}, dev::Addr{sim::Space::kGdram, src.gdram},
                   dev::Dir::kGdram2Gdram, static_cast<std::size_t>(es), dims, true);
  }
  dev::sync_io();
}

bool direct_copy_applies(const ew::IterSpace& s) {
  if (s.operands[0].dtype != s.operands[1].dtype) return false;
  const int inner = s.ndim - 1;
  if (s.operands[0].strides[inner] != 1 || s.operands[1].strides[inner] != 1) return false;
  for (int d = 0; d < s.ndim; ++d)
    if (s.dims[d] > 1 && s.operands[1].strides[d] == 0) return false;
  return true;
}

Status launch_direct_copy(Handle& h, ew::IterSpace space) {
  auto L = std::make_shared<DirectCopy>();
  L->space = std::move(space);
  const std::int64_t per_task = (L->space.numel() + h.total_cores() - 1) / h.total_cores();
  L->plan = ew::plan_tiles(L->space, std::max(kMinDirectElems, per_task));
  return launch(h, "copy_strided", [L] { direct_copy_body(*L); }, block_dim(h, static_cast<std::uint64_t>(L->plan.tiles)),
                CNRT_FUNC_TYPE_BLOCK);
}

Status copy_impl(Handle* h, const char* op, const TensorDesc& src, const void* src_ptr, const TensorDesc& dst,
                 void* dst_ptr, bool same_shape) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&src, op, "src"));
  MLU_RETURN_IF_ERROR(check_desc(&dst, op, "dst"));
  MLU_RETURN_IF_ERROR(check_ptr(src_ptr, src, op, "src"));
  MLU_RETURN_IF_ERROR(check_ptr(dst_ptr, dst, op, "dst"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "dst", dst));
  if (same_shape) {
    MLU_RETURN_IF_ERROR(check_same_shape(src, dst, op, "x", "y"));
  } else {
    std::vector<std::int64_t> shape;
    MLU_RETURN_IF_ERROR(ew::broadcast_shape(op, {{"dst", &dst}, {"src", &src}}, &shape));
    MLU_CHECK(shape == dst.dims(), Status::kBadParam,
              std::string(op) + ": src " + src.str() + " does not broadcast to dst " + dst.str());
  }
  // A same-dtype copy moves bytes (bf16 included, on any chip); a conversion needs the VFU.
  if (src.dtype() != dst.dtype()) {
    MLU_RETURN_IF_ERROR(check_computes(src.dtype(), op, "src"));
    MLU_RETURN_IF_ERROR(check_computes(dst.dtype(), op, "dst"));
  }
  if (dst.numel() == 0) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(ew::launch_copy(*h, src, src_ptr, dst, dst_ptr));
  record(*h, op, 0,
         static_cast<std::uint64_t>(src.numel()) * src.element_size() +
             static_cast<std::uint64_t>(dst.numel()) * dst.element_size(),
         1);
  return Status::kSuccess;
}

}  // namespace

namespace ew {

Status launch_copy(Handle& h, const TensorDesc& src, const void* src_ptr, const TensorDesc& dst, void* dst_ptr) {
  if (dst.numel() == 0) return Status::kSuccess;
  IterSpace space = make_iter_space(dst.dims(), {&dst, &src}, {dst_ptr, src_ptr});
  if (direct_copy_applies(space)) return launch_direct_copy(h, std::move(space));
  Program p;
  p.set_result(convert(p, p.input(1, src.dtype()), dst.dtype()));
  return launch_stream(h, "copy_strided", std::move(space), std::move(p));
}

}  // namespace ew

Status copy_strided(Handle* h, const TensorDesc& src, const void* src_ptr, const TensorDesc& dst, void* dst_ptr) {
  return copy_impl(h, "copy_strided", src, src_ptr, dst, dst_ptr, false);
}

Status cast(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr) {
  return copy_impl(h, "cast", x, x_ptr, y, y_ptr, true);
}

}  // namespace mlusim::mlu
