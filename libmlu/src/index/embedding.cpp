// Embedding forward (row gather) and backward (dense grad_weight with scatter-add semantics).
//
// Both walk the index positions as an iteration space (operand 0 = the start of each position's
// row in out / grad_out, operand 1 = the index), a tile of indices at a time: loaded with
// strided DMA, narrowed and range-checked on the VFU, then read one by one by the scalar unit.
//  - forward: each position's weight row goes GDRAM->GDRAM straight into out (async, one
//    sync per tile); tasks own contiguous runs of tiles.
//  - backward: grad_weight is zeroed (fill kernel), then task t owns vocab rows
//    [V*t/T, V*(t+1)/T) and scans every index tile: a VFU mask marks the positions whose index
//    it owns; it takes them in order (first set position = min over select(mask, iota, INT_MAX))
//    and adds grad_out's row to its weight row in NRAM (load, add, store back). No two tasks
//    touch one row, and each row receives its updates in index order: deterministic, equal to
//    torch's sequential index_add_.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/fill.h"
#include "elementwise/iter_space.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "index/index_check.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;

struct EmbeddingLaunch {
  ew::IterSpace space;  // index positions: operand 0 = row starts in out/grad_out, 1 = indices
  ew::TilePlan plan;
  std::uint64_t weight = 0;
  DType dtype = DType::kFloat32;
  std::int64_t vocab = 0, dim = 0;
  std::int64_t weight_row_stride = 0, weight_col_stride = 0, rows_col_stride = 0;  // elements
  std::optional<std::int64_t> padding;
  std::int64_t row_chunk = 0;  // backward: elements of a row handled at once
};

// Loads and checks the indices of tile t; returns the int32 indices.
Addr load_index_tile(const EmbeddingLaunch& L, const ew::Tile& tile, Addr raw, Addr staging,
                     const idx::IndexChecker& checker, const char* op) {
  const tile::BoxView v = tile::box_view(L.space, L.space.operands[1], tile);
  tile::issue_load(v, raw, staging);
  dev::sync_io();
  tile::finish_load(v, raw, staging);
  return checker.check(raw, static_cast<std::size_t>(tile.elems()), idx::IndexBound{op, 0, L.vocab});
}

struct IndexTileBuffers {
  Addr raw, staging;
  explicit IndexTileBuffers(const EmbeddingLaunch& L) {
    const std::size_t n = static_cast<std::size_t>(L.plan.max_elems()) * sim::dtype_size(L.space.operands[1].dtype);
    raw = dev::alloc(sim::Space::kNram, n);
    staging = tile::may_need_staging(ew::box_strides(L.space, L.space.operands[1])) ? dev::alloc(sim::Space::kNram, n)
                                                                                     : tile::kNoBuffer;
  }
};

void forward_body(const EmbeddingLaunch& L) {
  const IndexTileBuffers bufs(L);
  const idx::IndexChecker checker(static_cast<std::size_t>(L.plan.max_elems()), L.space.operands[1].dtype);
  const auto es = static_cast<std::int64_t>(sim::dtype_size(L.dtype));
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t t = L.plan.tiles * task / tasks; t < L.plan.tiles * (task + 1) / tasks; ++t) {
    const ew::Tile tile = ew::tile_at(L.space, L.plan, t);
    const Addr values = load_index_tile(L, tile, bufs.raw, bufs.staging, checker, "embedding");
    const tile::BoxView rows = tile::box_view(L.space, L.space.operands[0], tile);
    for (std::int64_t j = 0; j < tile.elems(); ++j) {
      const std::int64_t row = idx::index_at(values, static_cast<std::size_t>(j));
      const Addr dst{sim::Space::kGdram, rows.gdram + static_cast<std::uint64_t>(tile::element_offset(rows, j) * es)};
      const Addr src{sim::Space::kGdram, L.weight + static_cast<std::uint64_t>(row * L.weight_row_stride * es)};
      tile::copy_box(dst, src, dev::Dir::kGdram2Gdram, static_cast<std::size_t>(es),
                     {{L.dim, L.rows_col_stride * es, L.weight_col_stride * es}}, true);
    }
    dev::sync_io();
  }
}

void backward_body(const EmbeddingLaunch& L) {
  using sim::VecBinaryOp;
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t v0 = L.vocab * task / tasks, v1 = L.vocab * (task + 1) / tasks;
  const auto n_max = static_cast<std::size_t>(L.plan.max_elems());
  const auto es = static_cast<std::int64_t>(sim::dtype_size(L.dtype));
  const IndexTileBuffers bufs(L);
  const idx::IndexChecker checker(n_max, L.space.operands[1].dtype);
  auto nram = [](std::size_t bytes) { return dev::alloc(sim::Space::kNram, bytes); };
  const Addr mine = nram(n_max * 4), other = nram(n_max * 4), cond = nram(n_max), cand = nram(n_max * 4);
  const Addr iota = nram(n_max * 4), big = nram(n_max * 4), scalar = nram(4);
  const Addr weight_row = nram(static_cast<std::size_t>(L.row_chunk * es));
  const Addr grad_row = nram(static_cast<std::size_t>(L.row_chunk * es));
  // iota[i] = i: one store, then doubling adds.
  const std::int32_t zero = 0;
  dev::store_bytes(iota, &zero, 4);
  for (std::size_t done = 1; done < n_max; done *= 2)
    dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, iota.offset(static_cast<std::int64_t>(done * 4)), iota,
                           static_cast<double>(done), std::min(done, n_max - done));
  dev::vec_fill(DType::kInt32, big, std::numeric_limits<std::int32_t>::max(), n_max);
  const bool skip_padding = L.padding && *L.padding >= v0 && *L.padding < v1;

  for (std::int64_t t = 0; t < L.plan.tiles; ++t) {
    const ew::Tile tile = ew::tile_at(L.space, L.plan, t);
    const auto n = static_cast<std::size_t>(tile.elems());
    const Addr values = load_index_tile(L, tile, bufs.raw, bufs.staging, checker, "embedding_backward");
    if (v0 == v1) continue;
    // mine[i] = 1 where this task owns index i's row (and it is not the padding row).
    dev::vec_binary_scalar(VecBinaryOp::kGe, DType::kInt32, mine, values, static_cast<double>(v0), n);
    dev::vec_binary_scalar(VecBinaryOp::kLt, DType::kInt32, other, values, static_cast<double>(v1), n);
    dev::vec_binary(VecBinaryOp::kMul, DType::kInt32, mine, mine, other, n);
    if (skip_padding) {
      dev::vec_binary_scalar(VecBinaryOp::kNe, DType::kInt32, other, values, static_cast<double>(*L.padding), n);
      dev::vec_binary(VecBinaryOp::kMul, DType::kInt32, mine, mine, other, n);
    }
    dev::vec_reduce(sim::VecReduceOp::kSum, DType::kInt32, scalar, mine, 1, n);
    const std::int32_t count = dev::load(dev::Nram<std::int32_t>(scalar.value));
    const tile::BoxView rows = tile::box_view(L.space, L.space.operands[0], tile);
    for (std::int32_t k = 0; k < count; ++k) {
      dev::vec_cast(DType::kBool, cond, DType::kInt32, mine, n);
      dev::vec_select(DType::kInt32, cand, cond, iota, big, n);
      dev::vec_reduce(sim::VecReduceOp::kMin, DType::kInt32, scalar, cand, 1, n);
      const std::int32_t pos = dev::load(dev::Nram<std::int32_t>(scalar.value));
      dev::store(dev::Nram<std::int32_t>(mine.value) + pos, std::int32_t{0});
      const std::int64_t row = idx::index_at(values, static_cast<std::size_t>(pos));
      const std::uint64_t grad = rows.gdram + static_cast<std::uint64_t>(tile::element_offset(rows, pos) * es);
      const std::uint64_t weight = L.weight + static_cast<std::uint64_t>(row * L.weight_row_stride * es);
      for (std::int64_t c0 = 0; c0 < L.dim; c0 += L.row_chunk) {
        const std::int64_t c = std::min(L.row_chunk, L.dim - c0);
        const Addr w{sim::Space::kGdram, weight + static_cast<std::uint64_t>(c0 * L.weight_col_stride * es)};
        const Addr g{sim::Space::kGdram, grad + static_cast<std::uint64_t>(c0 * L.rows_col_stride * es)};
        tile::copy_box(weight_row, w, dev::Dir::kGdram2Nram, static_cast<std::size_t>(es),
                       {{c, es, L.weight_col_stride * es}}, true);
        tile::copy_box(grad_row, g, dev::Dir::kGdram2Nram, static_cast<std::size_t>(es), {{c, es, L.rows_col_stride * es}},
                       true);
        dev::sync_io();
        dev::vec_binary(VecBinaryOp::kAdd, L.dtype, weight_row, weight_row, grad_row, static_cast<std::size_t>(c));
        tile::copy_box(w, weight_row, dev::Dir::kNram2Gdram, static_cast<std::size_t>(es),
                       {{c, L.weight_col_stride * es, es}}, false);
      }
    }
  }
}

// Shared validation; fills the launch description (minus the tiling).
Status prepare(Handle* h, const char* op, const TensorDesc& weight, const void* weight_ptr, const TensorDesc& indices,
               const void* indices_ptr, const TensorDesc& rows, const void* rows_ptr, const char* rows_name,
               EmbeddingLaunch* L) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&weight, op, "weight"));
  MLU_RETURN_IF_ERROR(check_desc(&indices, op, "indices"));
  MLU_RETURN_IF_ERROR(check_desc(&rows, op, rows_name));
  MLU_RETURN_IF_ERROR(check_dtype_in(indices, {DType::kInt32, DType::kInt64}, op, "indices"));
  MLU_CHECK(weight.ndim() == 2, Status::kBadParam, std::string(op) + ": weight " + weight.str() + " must be 2-d [V, D]");
  std::vector<std::int64_t> want = indices.dims();
  want.push_back(weight.dim(1));
  MLU_CHECK(rows.dims() == want, Status::kBadParam,
            std::string(op) + ": " + rows_name + " " + rows.str() + " must have indices' dims + [" +
                std::to_string(weight.dim(1)) + "]");
  MLU_CHECK(rows.dtype() == weight.dtype(), Status::kBadParam,
            std::string(op) + ": " + rows_name + " " + rows.str() + " and weight " + weight.str() + " differ in dtype");
  MLU_RETURN_IF_ERROR(check_ptr(weight_ptr, weight, op, "weight"));
  MLU_RETURN_IF_ERROR(check_ptr(indices_ptr, indices, op, "indices"));
  MLU_RETURN_IF_ERROR(check_ptr(rows_ptr, rows, op, rows_name));
  // Row starts: rows' strides over the index dims.
  TensorDesc row_starts;
  std::vector<std::int64_t> strides(rows.strides().begin(), rows.strides().end() - 1);
  MLU_RETURN_IF_ERROR(row_starts.set(rows.dtype(), indices.dims(), strides));
  L->space = ew::make_iter_space(indices.dims(), {&row_starts, &indices}, {rows_ptr, indices_ptr});
  L->weight = reinterpret_cast<std::uintptr_t>(weight_ptr);
  L->dtype = weight.dtype();
  L->vocab = weight.dim(0);
  L->dim = weight.dim(1);
  L->weight_row_stride = weight.stride(0);
  L->weight_col_stride = weight.stride(1);
  L->rows_col_stride = rows.stride(rows.ndim() - 1);
  return Status::kSuccess;
}

std::uint64_t bytes_of(const TensorDesc& d) { return static_cast<std::uint64_t>(d.numel()) * d.element_size(); }

}  // namespace

Status embedding_forward(Handle* h, const TensorDesc& weight, const void* weight_ptr, const TensorDesc& indices,
                         const void* indices_ptr, const TensorDesc& out, void* out_ptr) {
  const char* op = "embedding";
  auto L = std::make_shared<EmbeddingLaunch>();
  MLU_RETURN_IF_ERROR(prepare(h, op, weight, weight_ptr, indices, indices_ptr, out, out_ptr, "out", L.get()));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "out", out));
  if (out.numel() == 0) return Status::kSuccess;
  // Index tiles: NRAM holds the raw tile, its staging and the checker's scratch.
  const std::size_t per_index = 2 * indices.element_size() + idx::IndexChecker::bytes_per_index(indices.dtype());
  const auto nram_elems = static_cast<std::int64_t>((h->nram_bytes() - 1024) / per_index);
  const std::int64_t per_task = (indices.numel() + h->total_cores() - 1) / h->total_cores();
  L->plan = ew::plan_tiles(L->space, std::min(nram_elems, per_task));
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { forward_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->plan.tiles)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, op, 0, bytes_of(indices) + 2 * bytes_of(out), 1);
  return Status::kSuccess;
}

Status embedding_backward(Handle* h, const TensorDesc& grad_out, const void* grad_out_ptr, const TensorDesc& indices,
                          const void* indices_ptr, std::optional<std::int64_t> padding_idx,
                          const TensorDesc& grad_weight, void* grad_weight_ptr) {
  const char* op = "embedding_backward";
  auto L = std::make_shared<EmbeddingLaunch>();
  MLU_RETURN_IF_ERROR(prepare(h, op, grad_weight, grad_weight_ptr, indices, indices_ptr, grad_out, grad_out_ptr,
                              "grad_out", L.get()));
  MLU_RETURN_IF_ERROR(
      check_dtype_in(grad_weight, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "grad_weight"));
  for (int d = 0; d < 2; ++d)
    MLU_CHECK(grad_weight.dim(d) <= 1 || grad_weight.stride(d) != 0, Status::kBadParam,
              std::string(op) + ": grad_weight " + grad_weight.str() + " has a stride-0 dim");
  L->padding = padding_idx;
  MLU_RETURN_IF_ERROR(ew::launch_fill(*h, 0.0, grad_weight, grad_weight_ptr));
  std::uint32_t kernels = grad_weight.numel() > 0;
  if (grad_out.numel() > 0) {
    // NRAM: two row chunks (a quarter of NRAM) + per index: raw tile, staging, checker, masks.
    const auto es = static_cast<std::int64_t>(grad_weight.element_size());
    L->row_chunk = std::max<std::int64_t>(1, std::min(L->dim, static_cast<std::int64_t>(h->nram_bytes() / 8) / es));
    const std::size_t per_index =
        2 * indices.element_size() + idx::IndexChecker::bytes_per_index(indices.dtype()) + 4 + 4 + 1 + 4 + 4 + 4;
    const auto nram_elems =
        static_cast<std::int64_t>((h->nram_bytes() - 2 * L->row_chunk * es - 2048) / per_index) / 64 * 64;
    L->plan = ew::plan_tiles(L->space, std::max<std::int64_t>(64, nram_elems));
    MLU_RETURN_IF_ERROR(launch(*h, op, [L] { backward_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->vocab)),
                               CNRT_FUNC_TYPE_BLOCK));
    ++kernels;
  }
  if (kernels > 0) record(*h, op, 0, bytes_of(indices) + bytes_of(grad_out) + bytes_of(grad_weight), kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
