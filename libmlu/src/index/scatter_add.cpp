// scatter / scatter_add: out = self, then out[.., index[i], ..] = src[i] (or op= src[i]) along dim.
//
// Updates can only collide within one "line" (the positions sharing every coordinate but dim),
// so lines are the unit of work: task t owns a contiguous run of lines and applies each line's
// updates in index order, exactly torch's CPU order (so the last update of a position wins when
// assigning), with no two tasks writing the same element. Per line, chunks of indices are loaded
// and checked and the matching src values loaded into NRAM; an assignment is one single-element
// DMA out, a reduction a read-modify-write of one out element (DMA in, VFU add/mul/max/min, DMA
// out), in the tensor's dtype (fp16 and bf16 round per update, as torch; int64 in int32 after the range
// check; max/min propagate NaN, as torch's scatter_reduce amax/amin).
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/copy.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "index/index_check.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;

struct ScatterAddLaunch {
  std::uint64_t index = 0, src = 0, out = 0;
  ScatterReduce reduce = ScatterReduce::kAdd;
  const char* op = "scatter_add";
  DType dtype = DType::kFloat32, index_dtype = DType::kInt64;
  int dim = 0;
  std::int64_t lines = 0, count = 0, chunk = 0;  // lines, updates per line, updates per NRAM chunk
  std::vector<std::int64_t> line_sizes;          // index's dims other than dim
  std::vector<std::array<std::int64_t, 3>> line_strides;  // index, src, out (elements)
  std::int64_t index_dim_stride = 0, src_dim_stride = 0, out_dim_stride = 0, out_dim_size = 0;
};

sim::VecBinaryOp vfu_op(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::kMul:
      return sim::VecBinaryOp::kMul;
    case ScatterReduce::kMax:
      return sim::VecBinaryOp::kMax;
    case ScatterReduce::kMin:
      return sim::VecBinaryOp::kMin;
    default:
      return sim::VecBinaryOp::kAdd;
  }
}

void scatter_add_body(const ScatterAddLaunch& L) {
  const auto es = static_cast<std::int64_t>(sim::dtype_size(L.dtype));
  const std::size_t ies = sim::dtype_size(L.index_dtype);
  const bool narrow = L.dtype == DType::kInt64;  // the VFU adds int64 as int32
  const DType math = narrow ? DType::kInt32 : L.dtype;
  const idx::IndexChecker checker(static_cast<std::size_t>(L.chunk), L.index_dtype);
  const Addr src = dev::alloc(sim::Space::kNram, static_cast<std::size_t>(L.chunk * es));
  const Addr src_math = narrow ? dev::alloc(sim::Space::kNram, static_cast<std::size_t>(L.chunk * 4)) : src;
  const Addr cell = dev::alloc(sim::Space::kNram, static_cast<std::size_t>(es));
  const Addr cell_math = narrow ? dev::alloc(sim::Space::kNram, 4) : cell;
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t line = L.lines * task / tasks; line < L.lines * (task + 1) / tasks; ++line) {
    std::array<std::int64_t, 3> off{};  // index, src, out
    for (std::int64_t rest = line, d = static_cast<std::int64_t>(L.line_sizes.size()) - 1; d >= 0; --d) {
      const std::int64_t i = rest % L.line_sizes[static_cast<std::size_t>(d)];
      rest /= L.line_sizes[static_cast<std::size_t>(d)];
      for (int k = 0; k < 3; ++k) off[k] += i * L.line_strides[static_cast<std::size_t>(d)][k];
    }
    for (std::int64_t n0 = 0; n0 < L.count; n0 += L.chunk) {
      const std::int64_t n = std::min(L.chunk, L.count - n0);
      const Addr values = checker.load(L.index + static_cast<std::uint64_t>(off[0] + n0 * L.index_dim_stride) * ies,
                                       L.index_dim_stride, static_cast<std::size_t>(n),
                                       idx::IndexBound{L.op, L.dim, L.out_dim_size});
      tile::copy_box(src, Addr{sim::Space::kGdram, L.src + static_cast<std::uint64_t>((off[1] + n0 * L.src_dim_stride) * es)},
                     dev::Dir::kGdram2Nram, static_cast<std::size_t>(es), {{n, es, L.src_dim_stride * es}}, false);
      if (narrow && L.reduce != ScatterReduce::kNone)
        dev::vec_cast(DType::kInt32, src_math, DType::kInt64, src, static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t i = idx::index_at(values, static_cast<std::size_t>(k));
        const Addr target{sim::Space::kGdram, L.out + static_cast<std::uint64_t>((off[2] + i * L.out_dim_stride) * es)};
        if (L.reduce == ScatterReduce::kNone) {  // in order: the last update of a position wins
          dev::memcpy(target, src.offset(k * es), static_cast<std::size_t>(es), dev::Dir::kNram2Gdram);
          continue;
        }
        dev::memcpy(cell, target, static_cast<std::size_t>(es), dev::Dir::kGdram2Nram);
        if (narrow) dev::vec_cast(DType::kInt32, cell_math, DType::kInt64, cell, 1);
        dev::vec_binary(vfu_op(L.reduce), math, cell_math, cell_math,
                        src_math.offset(k * static_cast<std::int64_t>(sim::dtype_size(math))), 1);
        if (narrow) dev::vec_cast(DType::kInt64, cell, DType::kInt32, cell_math, 1);
        dev::memcpy(target, cell, static_cast<std::size_t>(es), dev::Dir::kNram2Gdram);
      }
    }
  }
}

}  // namespace

Status scatter_add(Handle* h, const TensorDesc& self, const void* self_ptr, int dim, const TensorDesc& index,
                   const void* index_ptr, const TensorDesc& src, const void* src_ptr, const TensorDesc& out,
                   void* out_ptr) {
  return scatter(h, self, self_ptr, dim, index, index_ptr, src, src_ptr, ScatterReduce::kAdd, out, out_ptr);
}

Status scatter(Handle* h, const TensorDesc& self, const void* self_ptr, int dim, const TensorDesc& index,
               const void* index_ptr, const TensorDesc& src, const void* src_ptr, ScatterReduce reduce,
               const TensorDesc& out, void* out_ptr) {
  const char* op = reduce == ScatterReduce::kAdd ? "scatter_add" : "scatter";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(static_cast<std::uint8_t>(reduce) <= static_cast<std::uint8_t>(ScatterReduce::kMin), Status::kBadParam,
            std::string(op) + ": unknown reduction " + std::to_string(static_cast<int>(reduce)));
  MLU_RETURN_IF_ERROR(check_desc(&self, op, "self"));
  MLU_RETURN_IF_ERROR(check_desc(&index, op, "index"));
  MLU_RETURN_IF_ERROR(check_desc(&src, op, "src"));
  MLU_RETURN_IF_ERROR(check_desc(&out, op, "out"));
  MLU_RETURN_IF_ERROR(check_dtype_in(index, {DType::kInt32, DType::kInt64}, op, "index"));
  if (reduce == ScatterReduce::kNone)
    MLU_RETURN_IF_ERROR(check_dtype_in(
        self, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt8, DType::kInt64, DType::kBool},
        op, "self"));
  else
    MLU_RETURN_IF_ERROR(check_dtype_in(
        self, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt8, DType::kInt64}, op, "self"));
  MLU_CHECK(src.dtype() == self.dtype() && out.dtype() == self.dtype(), Status::kBadParam,
            std::string(op) + ": self, src and out must share one dtype");
  MLU_CHECK(self.ndim() >= 1 && index.ndim() == self.ndim() && src.ndim() == self.ndim(), Status::kBadParam,
            std::string(op) + ": self " + self.str() + ", index " + index.str() + " and src " + src.str() +
                " must have the same number of dims");
  MLU_CHECK(dim >= -self.ndim() && dim < self.ndim(), Status::kBadParam,
            std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " + self.str());
  if (dim < 0) dim += self.ndim();
  for (int d = 0; d < self.ndim(); ++d) {
    MLU_CHECK(index.dim(d) <= src.dim(d), Status::kBadParam,
              std::string(op) + ": index " + index.str() + " is larger than src " + src.str() + " in dim " + std::to_string(d));
    MLU_CHECK(d == dim || index.dim(d) <= self.dim(d), Status::kBadParam,
              std::string(op) + ": index " + index.str() + " is larger than self " + self.str() + " in dim " +
                  std::to_string(d));
  }
  MLU_CHECK(out.dims() == self.dims(), Status::kBadParam,
            std::string(op) + ": out " + out.str() + " must have self's dims " + self.str());
  MLU_RETURN_IF_ERROR(check_ptr(self_ptr, self, op, "self"));
  MLU_RETURN_IF_ERROR(check_ptr(index_ptr, index, op, "index"));
  MLU_RETURN_IF_ERROR(check_ptr(src_ptr, src, op, "src"));
  MLU_RETURN_IF_ERROR(check_ptr(out_ptr, out, op, "out"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "out", out));

  std::uint32_t kernels = 0;
  const bool in_place = out_ptr == self_ptr && out.strides() == self.strides();
  if (!in_place && out.numel() > 0) {
    MLU_RETURN_IF_ERROR(ew::launch_copy(*h, self, self_ptr, out, out_ptr));
    ++kernels;
  }
  if (index.numel() > 0) {
    auto L = std::make_shared<ScatterAddLaunch>();
    L->index = reinterpret_cast<std::uintptr_t>(index_ptr);
    L->src = reinterpret_cast<std::uintptr_t>(src_ptr);
    L->out = reinterpret_cast<std::uintptr_t>(out_ptr);
    L->dtype = self.dtype();
    L->index_dtype = index.dtype();
    L->reduce = reduce;
    L->op = op;
    L->dim = dim;
    L->count = index.dim(dim);
    L->lines = index.numel() / L->count;
    for (int d = 0; d < self.ndim(); ++d) {
      if (d == dim) continue;
      L->line_sizes.push_back(index.dim(d));
      L->line_strides.push_back({index.stride(d), src.stride(d), out.stride(d)});
    }
    L->index_dim_stride = index.stride(dim);
    L->src_dim_stride = src.stride(dim);
    L->out_dim_stride = out.stride(dim);
    L->out_dim_size = out.dim(dim);
    const std::size_t per_update = idx::IndexChecker::bytes_per_index(index.dtype()) + self.element_size() + 4;
    L->chunk = std::max<std::int64_t>(1, std::min<std::int64_t>(L->count, static_cast<std::int64_t>((h->nram_bytes() / 2) / per_update)));
    MLU_RETURN_IF_ERROR(launch(*h, op, [L] { scatter_add_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->lines)),
                               CNRT_FUNC_TYPE_BLOCK));
    ++kernels;
  }
  if (kernels > 0) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(index.numel()) * (index.element_size() + src.element_size()) +
                                static_cast<std::uint64_t>(out.numel()) * out.element_size() * (in_place ? 1 : 2);
    record(*h, op, 0, bytes, kernels);
  }
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
