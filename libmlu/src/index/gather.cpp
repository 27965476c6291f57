// gather: y[i] = x[i with coordinate `dim` replaced by index[i]], y's dims = index's.
//
// The kernel walks index's positions in tiles (operands: y, index, and x with stride 0 along
// dim, i.e. the address of each position's x "line"). A tile of indices is loaded and checked;
// then each element is one single-element DMA from x (line + index * stride) into an NRAM tile,
// all in flight together, and the tile is stored to y with one strided DMA.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/iter_space.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "index/index_check.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;

struct GatherLaunch {
  ew::IterSpace space;  // index positions: 0 = y, 1 = index, 2 = x line starts
  ew::TilePlan plan;
  int dim = 0;
  std::int64_t x_dim_size = 0, x_dim_stride = 0;  // elements
};

void gather_body(const GatherLaunch& L) {
  const auto n_max = static_cast<std::size_t>(L.plan.max_elems());
  const DType it = L.space.operands[1].dtype, dt = L.space.operands[0].dtype;
  const std::size_t es = sim::dtype_size(dt);
  const Addr raw = dev::alloc(sim::Space::kNram, n_max * sim::dtype_size(it));
  const Addr staging = tile::may_need_staging(ew::box_strides(L.space, L.space.operands[1]))
                           ? dev::alloc(sim::Space::kNram, n_max * sim::dtype_size(it))
                           : tile::kNoBuffer;
  const Addr out = dev::alloc(sim::Space::kNram, n_max * es);
  const idx::IndexChecker checker(n_max, it);
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t t = L.plan.tiles * task / tasks; t < L.plan.tiles * (task + 1) / tasks; ++t) {
    const ew::Tile tile = ew::tile_at(L.space, L.plan, t);
    const tile::BoxView iv = tile::box_view(L.space, L.space.operands[1], tile);
    tile::issue_load(iv, raw, staging);
    dev::sync_io();
    tile::finish_load(iv, raw, staging);
    const Addr values =
        checker.check(raw, static_cast<std::size_t>(tile.elems()), idx::IndexBound{"gather", L.dim, L.x_dim_size});
    const tile::BoxView xv = tile::box_view(L.space, L.space.operands[2], tile);
    for (std::int64_t j = 0; j < tile.elems(); ++j) {
      const std::int64_t i = idx::index_at(values, static_cast<std::size_t>(j));
      const std::int64_t element = tile::element_offset(xv, j) + i * L.x_dim_stride;
      dev::memcpy_async(out.offset(j * static_cast<std::int64_t>(es)),
                        Addr{sim::Space::kGdram, xv.gdram + static_cast<std::uint64_t>(element) * es}, es,
                        dev::Dir::kGdram2Nram);
    }
    dev::sync_io();
    tile::store(tile::box_view(L.space, L.space.operands[0], tile), out, false);
  }
}

}  // namespace

Status gather(Handle* h, const TensorDesc& x, const void* x_ptr, int dim, const TensorDesc& index, const void* index_ptr,
              const TensorDesc& y, void* y_ptr) {
  const char* op = "gather";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&index, op, "index"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(index, {DType::kInt32, DType::kInt64}, op, "index"));
  MLU_CHECK(x.ndim() >= 1 && index.ndim() == x.ndim(), Status::kBadParam,
            std::string(op) + ": index " + index.str() + " must have as many dims as x " + x.str());
  MLU_CHECK(dim >= -x.ndim() && dim < x.ndim(), Status::kBadParam,
            std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " + x.str());
  if (dim < 0) dim += x.ndim();
  for (int d = 0; d < x.ndim(); ++d)
    MLU_CHECK(d == dim || index.dim(d) <= x.dim(d), Status::kBadParam,
              std::string(op) + ": index " + index.str() + " is larger than x " + x.str() + " in dim " + std::to_string(d));
  MLU_CHECK(y.dims() == index.dims() && y.dtype() == x.dtype(), Status::kBadParam,
            std::string(op) + ": y " + y.str() + " must have index's dims and x's dtype");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(index_ptr, index, op, "index"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "y", y));
  if (y.numel() == 0) return Status::kSuccess;

  auto L = std::make_shared<GatherLaunch>();
  std::vector<std::int64_t> line_strides = x.strides();
  line_strides[static_cast<std::size_t>(dim)] = 0;
  TensorDesc x_lines;
  MLU_RETURN_IF_ERROR(x_lines.set(x.dtype(), index.dims(), line_strides));
  L->space = ew::make_iter_space(y.dims(), {&y, &index, &x_lines}, {y_ptr, index_ptr, x_ptr});
  L->dim = dim;
  L->x_dim_size = x.dim(dim);
  L->x_dim_stride = x.stride(dim);
  const std::size_t per_element =
      2 * index.element_size() + y.element_size() + idx::IndexChecker::bytes_per_index(index.dtype());
  const auto nram_elems = static_cast<std::int64_t>((h->nram_bytes() - 1024) / per_element);
  // At most a few hundred single-element copies in flight per tile.
  const std::int64_t per_task = (y.numel() + h->total_cores() - 1) / h->total_cores();
  L->plan = ew::plan_tiles(L->space, std::min<std::int64_t>({nram_elems, per_task, 1024}));
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { gather_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->plan.tiles)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, op, 0,
         static_cast<std::uint64_t>(index.numel()) * index.element_size() +
             2 * static_cast<std::uint64_t>(y.numel()) * y.element_size(),
         1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
