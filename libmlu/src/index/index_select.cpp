// index_select: y[.., i, ..] = x[.., index[i], ..] along dim. Tasks own contiguous runs of
// index positions; each checked chunk of indices is read by the scalar unit and every selected
// slab (all of x's other dims) moves GDRAM->GDRAM with one strided DMA description (segments as
// long as the dims after `dim` are contiguous in both tensors).
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "index/index_check.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;

struct IndexSelectLaunch {
  std::uint64_t x = 0, y = 0, index = 0;
  DType dtype = DType::kFloat32, index_dtype = DType::kInt64;
  std::int64_t count = 0, index_stride = 0, chunk = 0;
  int dim = 0;
  std::int64_t x_dim_size = 0, x_dim_stride = 0, y_dim_stride = 0;  // strides in bytes
  std::vector<tile::CopyDim> slab;                                   // x's other dims: y / x byte strides
};

void index_select_body(const IndexSelectLaunch& L) {
  const idx::IndexChecker checker(static_cast<std::size_t>(L.chunk), L.index_dtype);
  const std::size_t es = sim::dtype_size(L.dtype), ies = sim::dtype_size(L.index_dtype);
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t first = L.count * task / tasks, last = L.count * (task + 1) / tasks;
  for (std::int64_t i0 = first; i0 < last; i0 += L.chunk) {
    const auto n = static_cast<std::size_t>(std::min(L.chunk, last - i0));
    const Addr values = checker.load(L.index + static_cast<std::uint64_t>(i0 * L.index_stride) * ies, L.index_stride, n,
                                     idx::IndexBound{"index_select", L.dim, L.x_dim_size});
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t row = idx::index_at(values, j);
      const Addr dst{sim::Space::kGdram, L.y + static_cast<std::uint64_t>((i0 + static_cast<std::int64_t>(j)) * L.y_dim_stride)};
      const Addr src{sim::Space::kGdram, L.x + static_cast<std::uint64_t>(row * L.x_dim_stride)};
      tile::copy_box(dst, src, dev::Dir::kGdram2Gdram, es, L.slab, true);
    }
    dev::sync_io();
  }
}

}  // namespace

Status index_select(Handle* h, const TensorDesc& x, const void* x_ptr, int dim, const TensorDesc& index,
                    const void* index_ptr, const TensorDesc& y, void* y_ptr) {
  const char* op = "index_select";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&index, op, "index"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(index, {DType::kInt32, DType::kInt64}, op, "index"));
  MLU_CHECK(x.ndim() >= 1, Status::kBadParam, std::string(op) + ": x must have at least one dim");
  MLU_CHECK(dim >= -x.ndim() && dim < x.ndim(), Status::kBadParam,
            std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " + x.str());
  if (dim < 0) dim += x.ndim();
  MLU_CHECK(index.ndim() <= 1, Status::kBadParam, std::string(op) + ": index " + index.str() + " must be 0-d or 1-d");
  std::vector<std::int64_t> want = x.dims();
  want[static_cast<std::size_t>(dim)] = index.numel();
  MLU_CHECK(y.dims() == want && y.dtype() == x.dtype(), Status::kBadParam,
            std::string(op) + ": y " + y.str() + " must be x's dtype with dim " + std::to_string(dim) + " = " +
                std::to_string(index.numel()));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(index_ptr, index, op, "index"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "y", y));
  if (y.numel() == 0) return Status::kSuccess;

  auto L = std::make_shared<IndexSelectLaunch>();
  const auto es = static_cast<std::int64_t>(x.element_size());
  L->x = reinterpret_cast<std::uintptr_t>(x_ptr);
  L->y = reinterpret_cast<std::uintptr_t>(y_ptr);
  L->index = reinterpret_cast<std::uintptr_t>(index_ptr);
  L->dtype = x.dtype();
  L->index_dtype = index.dtype();
  L->count = index.numel();
  L->index_stride = index.ndim() == 1 ? index.stride(0) : 0;
  L->dim = dim;
  L->x_dim_size = x.dim(dim);
  L->x_dim_stride = x.stride(dim) * es;
  L->y_dim_stride = y.stride(dim) * es;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != dim) L->slab.push_back(tile::CopyDim{x.dim(d), y.stride(d) * es, x.stride(d) * es});
  // Indices per checked chunk: bounded by NRAM and by the number of outstanding slab copies.
  const auto nram_indices = static_cast<std::int64_t>((h->nram_bytes() / 2) / idx::IndexChecker::bytes_per_index(index.dtype()));
  L->chunk = std::max<std::int64_t>(1, std::min<std::int64_t>(nram_indices, 256));
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { index_select_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->count)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, op, 0, static_cast<std::uint64_t>(index.numel()) * index.element_size() + 2 * static_cast<std::uint64_t>(y.numel()) * y.element_size(), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
