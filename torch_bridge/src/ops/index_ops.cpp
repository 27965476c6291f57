// ATen indexing kernels over libmlu's index.h (index_select, gather, scatter_add, cat, embedding
// forward and backward, nonzero), and what is built on them: advanced indexing (integer and
// boolean-mask indices), masked_select and nonzero_static (nonzero cut or padded to a fixed size).
//
// torch 1.13 dispatch: index_select, gather, scatter_add(_), cat (structured: functional + .out),
// embedding_dense_backward have CPU/CUDA kernels only and need ours; embedding is
// CompositeExplicitAutograd (index_select + view) and is registered here too, over libmlu's
// embedding_forward (one kernel; autograd keeps its formula, whose backward is
// embedding_dense_backward); embedding_dense_backward.out, stack, concat and the Dimname
// overloads are composites over these.
//
// Indices are range-checked by the kernels: an index out of range faults the kernel and the
// error surfaces at the next synchronisation (as CUDA's device-side assert), naming the op, the
// index and the bound.
#include <algorithm>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/add.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/where.h>
#include <ATen/ops/index.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/broadcast_tensors.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <sstream>
#include <vector>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/index.h"
#include "ops/op_support.h"
#include "ops/scatter_checks.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::ScalarType;
using at::Tensor;

std::string shape_str(IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

// dst = src (same dims) on the device; libmlu copy_strided converts dtypes.
void device_copy(OpScope& op, const Tensor& src, const Tensor& dst) {
  if (dst.numel() == 0) return;
  op.check(mlu::copy_strided(op.handle(), desc(src, op.name()), src.data_ptr(), desc(dst, op.name()), dst.data_ptr()),
           "copy_strided");
}

// ---- index_select -----------------------------------------------------------------------------------

Tensor& index_select_impl(OpScope& op, const Tensor& self, std::int64_t dim, const Tensor& index, Tensor& out,
                          bool allocate) {
  const char* name = op.name();
  check_on_device(index, op.device(), name, "index");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  if (!allocate)
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_select(): self and result must have the same scalar type");
  dim = wrap_dim(dim, self.dim(), name);
  std::vector<std::int64_t> shape(self.sizes().begin(), self.sizes().end());
  Tensor idx = index;
  if (self.dim() == 0) {
    TORCH_CHECK_INDEX(index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
                      index.numel(), " value(s)");
  } else {
    shape[static_cast<std::size_t>(dim)] = index.numel();
  }
  if (allocate) out = empty_on(op.device(), shape, self.scalar_type());
  else prepare_out(out, op.device(), shape, name);
  if (!allocate) {
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    at::assert_no_overlap(out, index);
  }
  const Tensor x = as_1d(self), y = as_1d(out), i = as_1d(idx);
  op.check(mlu::index_select(op.handle(), moved_desc(x, name), x.data_ptr(), static_cast<int>(dim), desc(i, name),
                             i.data_ptr(), moved_desc(y, name), y.data_ptr()),
           "index_select");
  return out;
}

Tensor index_select(const Tensor& self, std::int64_t dim, const Tensor& index) {
  OpScope op("aten::index_select", self);
  Tensor out;
  return index_select_impl(op, self, dim, index, out, true);
}

Tensor& index_select_out(const Tensor& self, std::int64_t dim, const Tensor& index, Tensor& out) {
  OpScope op("aten::index_select.out", self);
  return index_select_impl(op, self, dim, index, out, false);
}

// ---- gather -----------------------------------------------------------------------------------------

Tensor& gather_impl(OpScope& op, const Tensor& self, std::int64_t dim, const Tensor& index, Tensor& out, bool allocate) {
  const char* name = op.name();
  check_on_device(index, op.device(), name, "index");
  // An empty index of any dtype is allowed (torch checks the dtype only when there are indices).
  TORCH_CHECK(index.numel() == 0 || index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "gather(): Expected dtype int32/int64 for index");
  if (!allocate) check_out_dtype(out, self.scalar_type(), name);
  dim = wrap_dim(dim, self.dim(), name);
  if (index.numel() > 0) {
    TORCH_CHECK(nonempty_dim(index) == nonempty_dim(self),
                "Index tensor must have the same number of dimensions as input tensor");
    for (std::int64_t d = 0; d < nonempty_dim(self); ++d)
      TORCH_CHECK(d == dim || nonempty_size(index, d) <= nonempty_size(self, d), "Size does not match at dimension ",
                  d, " expected index ", shape_str(index.sizes()), " to be smaller than self ", shape_str(self.sizes()),
                  " apart from dimension ", dim);
  }
  if (allocate) out = empty_on(op.device(), index.sizes(), self.scalar_type());
  else prepare_out(out, op.device(), index.sizes(), name);
  if (!allocate) {
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    at::assert_no_partial_overlap(out, index);
  }
  if (out.numel() == 0) return out;
  const Tensor x = as_1d(self), y = as_1d(out), i = as_1d(index);
  op.check(mlu::gather(op.handle(), moved_desc(x, name), x.data_ptr(), static_cast<int>(dim), desc(i, name),
                       i.data_ptr(), moved_desc(y, name), y.data_ptr()),
           "gather");
  return out;
}

Tensor gather(const Tensor& self, std::int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  OpScope op("aten::gather", self);
  Tensor out;
  return gather_impl(op, self, dim, index, out, true);
}

Tensor& gather_out(const Tensor& self, std::int64_t dim, const Tensor& index, bool /*sparse_grad*/, Tensor& out) {
  OpScope op("aten::gather.out", self);
  return gather_impl(op, self, dim, index, out, false);
}

// ---- scatter_add ------------------------------------------------------------------------------------

void check_scatter_dtype(const Tensor& self, const char* name) {
  const ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kInt ||
                                  t == at::kChar || t == at::kLong,
                              name, ": dtype ", t, " is not supported on device mlu (scatter_add "
                              "takes float32, float16, bfloat16, int32, int8, int64)");
}

// out = self with src added at index along dim; out may be self (in place).
void scatter_add_into(OpScope& op, const Tensor& self, std::int64_t dim, const Tensor& index, const Tensor& src,
                      const Tensor& out) {
  const char* name = op.name();
  if (index.numel() == 0) {
    if (!out.is_same(self)) device_copy(op, self, out);
    return;
  }
  const Tensor s = as_1d(self), i = as_1d(index), u = as_1d(src), o = out.is_same(self) ? s : as_1d(out);
  op.check(mlu::scatter_add(op.handle(), desc(s, name), s.data_ptr(), static_cast<int>(dim), desc(i, name), i.data_ptr(),
                            desc(u, name), u.data_ptr(), desc(o, name), o.data_ptr()),
           "scatter_add");
}

Tensor scatter_add(const Tensor& self, std::int64_t dim, const Tensor& index, const Tensor& src) {
  OpScope op("aten::scatter_add", self);
  check_on_device(index, op.device(), op.name(), "index");
  check_on_device(src, op.device(), op.name(), "src");
  dim = wrap_dim(dim, self.dim(), op.name());
  check_scatter_args("scatter", self, dim, index, &src);
  check_scatter_dtype(self, op.name());
  Tensor out = empty_like_dense(self, self.sizes(), self.scalar_type());
  scatter_add_into(op, self, dim, index, src, out);
  return out;
}

Tensor& scatter_add_(Tensor& self, std::int64_t dim, const Tensor& index, const Tensor& src) {
  OpScope op("aten::scatter_add_", self);
  check_on_device(index, op.device(), op.name(), "index");
  check_on_device(src, op.device(), op.name(), "src");
  dim = wrap_dim(dim, self.dim(), op.name());
  check_scatter_args("scatter", self, dim, index, &src);
  check_scatter_dtype(self, op.name());
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, src);
  scatter_add_into(op, self, dim, index, src, self);
  return self;
}

Tensor& scatter_add_out(const Tensor& self, std::int64_t dim, const Tensor& index, const Tensor& src, Tensor& out) {
  OpScope op("aten::scatter_add.out", self);
  check_on_device(index, op.device(), op.name(), "index");
  check_on_device(src, op.device(), op.name(), "src");
  dim = wrap_dim(dim, self.dim(), op.name());
  check_scatter_args("scatter", self, dim, index, &src);
  check_out_dtype(out, self.scalar_type(), op.name());
  check_scatter_dtype(self, op.name());
  prepare_out(out, op.device(), self.sizes(), op.name());
  if (!out.is_same(self)) {
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, index);
    at::assert_no_overlap(out, src);
  }
  scatter_add_into(op, self, dim, index, src, out);
  return out;
}

// ---- cat --------------------------------------------------------------------------------------------

bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }  // torch's legacy empty inputs

c10::MemoryFormat cat_memory_format(const std::vector<Tensor>& inputs) {
  c10::optional<c10::MemoryFormat> format;
  for (const Tensor& t : inputs) {
    const c10::MemoryFormat f = t.suggest_memory_format();
    if (f == c10::MemoryFormat::Contiguous) return f;
    if (format.has_value() && *format != f) return c10::MemoryFormat::Contiguous;
    format = f;
  }
  return format.value_or(c10::MemoryFormat::Contiguous);
}

Tensor& cat_impl(OpScope& op, const std::vector<Tensor>& inputs, std::int64_t dim, Tensor& out, bool allocate) {
  const char* name = op.name();
  ScalarType dtype = inputs[0].scalar_type();
  {
    at::native::ResultTypeState state = {};
    for (const Tensor& t : inputs) state = at::native::update_result_type_state(t, state);
    dtype = at::native::result_type(state);
  }
  const Tensor* ref = nullptr;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    check_on_device(t, op.device(), name, "tensors");
    TORCH_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    if (ref == nullptr && !skipped_in_cat(t)) ref = &t;
  }
  std::vector<std::int64_t> shape{0};
  std::vector<const Tensor*> used;
  if (ref != nullptr) {
    dim = wrap_dim(dim, ref->dim(), name);
    shape.assign(ref->sizes().begin(), ref->sizes().end());
    shape[static_cast<std::size_t>(dim)] = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (skipped_in_cat(t)) continue;
      TORCH_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(), " and ",
                  t.dim());
      for (std::int64_t d = 0; d < t.dim(); ++d)
        TORCH_CHECK(d == dim || t.size(d) == ref->size(d), "Sizes of tensors must match except in dimension ", dim,
                    ". Expected size ", ref->size(d), " but got size ", t.size(d), " for tensor number ", i,
                    " in the list.");
      shape[static_cast<std::size_t>(dim)] += t.size(dim);
      used.push_back(&t);
    }
  } else {
    wrap_dim(dim, 1, name);
  }
  if (allocate) {
    out = at::empty(shape, at::TensorOptions().device(op.device()).dtype(dtype).memory_format(cat_memory_format(inputs)));
  } else {
    TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "torch.cat(): input types can't be cast to the desired output type ",
                out.scalar_type());
    check_on_device(out, op.device(), name, "out");
    at::assert_no_internal_overlap(out);
    for (const Tensor& t : inputs) at::assert_no_overlap(out, t);
    prepare_out(out, op.device(), shape, name);
  }
  if (used.empty() || out.numel() == 0) return out;
  std::vector<mlu::TensorDesc> descs;
  descs.reserve(used.size());
  std::vector<const mlu::TensorDesc*> dptrs;
  std::vector<const void*> ptrs;
  // uint8 (with bool, whose 0/1 read the same) concatenates as int8 bytes; mixed with wider dtypes
  // it would need uint8 -> int conversions libmlu lacks.
  const bool bytes = out.scalar_type() == at::kByte &&
                     std::all_of(used.begin(), used.end(), [](const Tensor* t) {
                       return t->scalar_type() == at::kByte || t->scalar_type() == at::kBool;
                     });
  for (const Tensor* t : used) {
    descs.push_back(bytes ? moved_desc(*t, name) : desc(*t, name));
    ptrs.push_back(t->data_ptr());
  }
  for (const mlu::TensorDesc& d : descs) dptrs.push_back(&d);
  op.check(mlu::cat(op.handle(), dptrs, ptrs, static_cast<int>(dim), bytes ? moved_desc(out, name) : desc(out, name),
                    out.data_ptr()),
           "cat");
  return out;
}

std::vector<Tensor> materialize(const at::ITensorListRef& tensors) {
  std::vector<Tensor> v;
  for (const Tensor& t : tensors) v.push_back(t);
  TORCH_CHECK(!v.empty(), "torch.cat(): expected a non-empty list of Tensors");
  return v;
}

Tensor cat(const at::ITensorListRef& tensors, std::int64_t dim) {
  const std::vector<Tensor> inputs = materialize(tensors);
  OpScope op("aten::cat", inputs[0]);
  Tensor out;
  return cat_impl(op, inputs, dim, out, true);
}

Tensor& cat_out(const at::ITensorListRef& tensors, std::int64_t dim, Tensor& out) {
  const std::vector<Tensor> inputs = materialize(tensors);
  OpScope op("aten::cat.out", out);
  return cat_impl(op, inputs, dim, out, false);
}

// ---- embedding ----------------------------------------------------------------------------------------

void check_indices(const Tensor& indices, const char* fn) {
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
              indices.scalar_type(), " instead (while checking arguments for ", fn, ")");
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::int64_t /*padding_idx*/,
                 bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  OpScope op("aten::embedding", weight);
  check_on_device(indices, op.device(), op.name(), "indices");
  TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  check_indices(indices, "embedding");
  std::vector<std::int64_t> shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(weight.size(1));
  Tensor out = empty_on(op.device(), shape, weight.scalar_type());
  op.check(mlu::embedding_forward(op.handle(), desc(weight, op.name()), weight.data_ptr(), desc(indices, op.name()),
                                  indices.data_ptr(), desc(out, op.name()), out.data_ptr()),
           "embedding_forward");
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, std::int64_t num_weights,
                                std::int64_t padding_idx, bool scale_grad_by_freq) {
  OpScope op("aten::embedding_dense_backward", grad_output);
  const char* name = op.name();
  check_on_device(indices, op.device(), name, "indices");
  check_indices(indices, "embedding_backward");
  TORCH_CHECK(num_weights >= 0, name, ": num_weights must be non-negative, got ", num_weights);
  const ScalarType t = grad_output.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16, name, ": dtype ", t,
                              " is not supported on device mlu (embedding backward takes float32, float16, bfloat16)");
  TORCH_CHECK(grad_output.dim() >= 1, name, ": grad_output must have at least one dim");
  const std::int64_t d = grad_output.size(-1);
  std::vector<std::int64_t> want(indices.sizes().begin(), indices.sizes().end());
  want.push_back(d);
  Tensor grad = grad_output;
  if (grad.sizes() != IntArrayRef(want)) {
    TORCH_CHECK(grad.numel() == indices.numel() * d, name, ": grad_output ", shape_str(grad.sizes()),
                " does not match indices ", shape_str(indices.sizes()), " + [", d, "]");
    grad = grad.view(want);
  }
  Tensor grad_weight = empty_on(op.device(), {num_weights, d}, t);
  c10::optional<std::int64_t> pad;
  if (padding_idx >= 0) pad = padding_idx;
  std::optional<std::int64_t> mpad;
  if (pad.has_value()) mpad = *pad;
  op.check(mlu::embedding_backward(op.handle(), desc(grad, name), grad.data_ptr(), desc(indices, name),
                                   indices.data_ptr(), mpad, desc(grad_weight, name), grad_weight.data_ptr()),
           "embedding_backward");
  if (scale_grad_by_freq && indices.numel() > 0 && grad_weight.numel() > 0) {
    // Each row divided by how often its index occurs (torch scales every contribution by
    // 1 / count; rows never indexed stay zero): counts = scatter_add of ones, clamped to >= 1.
    Tensor flat = indices;
    if (!indices.is_contiguous()) {
      flat = empty_on(op.device(), indices.sizes(), indices.scalar_type());
      device_copy(op, indices, flat);
    }
    flat = flat.view({indices.numel()});
    Tensor counts = empty_on(op.device(), {num_weights}, at::kFloat);
    Tensor ones = empty_on(op.device(), {indices.numel()}, at::kFloat);
    op.check(mlu::fill(op.handle(), 0.0, desc(counts, name), counts.data_ptr()), "fill");
    op.check(mlu::fill(op.handle(), 1.0, desc(ones, name), ones.data_ptr()), "fill");
    const mlu::TensorDesc cd = desc(counts, name);
    op.check(mlu::scatter_add(op.handle(), cd, counts.data_ptr(), 0, desc(flat, name), flat.data_ptr(),
                              desc(ones, name), ones.data_ptr(), cd, counts.data_ptr()),
             "scatter_add");
    op.check(mlu::clamp(op.handle(), cd, counts.data_ptr(), 1.0, std::nullopt, cd, counts.data_ptr()), "clamp");
    const Tensor col = counts.view({num_weights, 1});
    const mlu::TensorDesc gd = desc(grad_weight, name);
    op.check(mlu::binary(op.handle(), mlu::BinaryOp::kDiv, gd, grad_weight.data_ptr(), desc(col, name), col.data_ptr(),
                         gd, grad_weight.data_ptr()),
             "binary (div)");
  }
  return grad_weight;
}

// ---- nonzero ------------------------------------------------------------------------------------------

// torch.nonzero: libmlu's count launch, one host read of the per-part counts (the result's size
// depends on the data; CUDA's nonzero synchronises here too), then the fill launch.
Tensor& nonzero_out(const Tensor& self, Tensor& out) {
  OpScope op("aten::nonzero", self);
  const char* name = op.name();
  check_on_device(out, op.device(), name, "out");
  check_out_dtype(out, at::kLong, name);
  const std::int64_t ndim = self.dim();
  if (self.numel() == 0) {
    prepare_out(out, op.device(), {0, ndim}, name);
    return out;
  }
  // uint8 has no device dtype; whether a byte is non-zero does not depend on its signedness.
  const Tensor x = self.scalar_type() == at::kByte ? self.contiguous().view(at::kChar) : self.contiguous();
  const mlu::TensorDesc xd = desc(x, name);
  const std::int64_t parts = mlu::nonzero_parts(op.handle(), xd);
  const Tensor counts = empty_on(op.device(), {parts}, at::kLong);
  op.check(mlu::nonzero_count(op.handle(), xd, x.data_ptr(), counts.data_ptr()), "nonzero_count");
  const Tensor host_counts = counts.cpu();
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(parts));
  std::int64_t total = 0;
  for (std::int64_t p = 0; p < parts; ++p) {
    offsets[static_cast<std::size_t>(p)] = total;
    total += host_counts.data_ptr<std::int64_t>()[p];
  }
  prepare_out(out, op.device(), {total, ndim}, name);
  if (total == 0 || ndim == 0) return out;  // nothing to write: no hits, or a 0-d input's [count, 0]
  Tensor y = out.is_contiguous() ? out : empty_on(op.device(), {total, ndim}, at::kLong);
  op.check(mlu::nonzero_fill(op.handle(), xd, x.data_ptr(), offsets, desc(y, name), y.data_ptr()), "nonzero_fill");
  if (!y.is_same(out)) device_copy(op, y, out);
  return out;
}

Tensor nonzero(const Tensor& self) {
  Tensor out = empty_on(self.device(), {0, self.dim()}, at::kLong);
  return nonzero_out(self, out);
}

// nonzero_static: nonzero's first `size` rows, padded with rows of fill_value when there are
// fewer (a shape known before the data, for compilers and exports).
Tensor& nonzero_static_out(const Tensor& self, int64_t size, int64_t fill_value, Tensor& out) {
  OpScope op("aten::nonzero_static", self);
  const char* name = op.name();
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer, but got size: ", size);
  check_out_dtype(out, at::kLong, name);
  const Tensor found = at::nonzero(self);
  const int64_t k = found.size(0);
  if (k >= size) return write_out(found.narrow(0, 0, size), out, name);
  const Tensor pad = at::full({size - k, self.dim()}, fill_value, found.options());
  return write_out(at::cat({found, pad}, 0), out, name);
}

Tensor nonzero_static(const Tensor& self, int64_t size, int64_t fill_value) {
  Tensor out = empty_on(self.device(), {0, self.dim()}, at::kLong);
  return nonzero_static_out(self, size, fill_value, out);
}

// masked_select(self, mask) = self[mask] after broadcasting both: nonzero of the mask, then the
// advanced-indexing gather.
Tensor& masked_select_out(const Tensor& self, const Tensor& mask, Tensor& out) {
  OpScope op("aten::masked_select", self);
  TORCH_CHECK(mask.scalar_type() == at::kBool, op.name(), ": expected mask of dtype bool, got ", mask.scalar_type());
  const std::vector<Tensor> b = at::broadcast_tensors({self, mask});
  const Tensor picked = at::index(b[0], c10::List<std::optional<Tensor>>({b[1]}));
  return write_out(picked, out, op.name());
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  Tensor out = empty_on(self.device(), {0}, self.scalar_type());
  return masked_select_out(self, mask, out);
}

}  // namespace

// ---- advanced indexing: x[i0, i1, ...] ----------------------------------------------------------------

// index.Tensor with integer index tensors on the leading k dims (None only after them): the
// indices broadcast together, negative ones wrap, flat = sum_j i_j * (size_{j+1} * ... *
// size_{k-1}) is computed by elementwise integer kernels, and one index_select of self viewed as
// [size_0 * ... * size_{k-1}, rest...] gathers the rows. A boolean mask is replaced by its
// nonzero() columns first. An index tensor after a None or slice raises NotImplementedError. Out-of-range indices fault
// the gather kernel (reported at the next synchronisation, like CUDA's device-side assert).
Tensor& index_tensor_out(const Tensor& self, const c10::List<std::optional<Tensor>>& indices, Tensor& out) {
  OpScope op("aten::index.Tensor_out", self);
  const char* name = op.name();
  check_on_device(out, op.device(), name, "out");
  TORCH_CHECK_INDEX(static_cast<std::int64_t>(indices.size()) <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  std::vector<Tensor> idx;
  bool seen_none = false;
  for (const std::optional<Tensor>& i : indices) {
    if (!i.has_value() || !i->defined()) {
      seen_none = true;
      continue;
    }
    TORCH_CHECK_NOT_IMPLEMENTED(!seen_none, name, ": an index tensor after a None/slice is not supported on device mlu "
                                "(index the leading dims, or permute first)");
    const Tensor on_device = i->device() == op.device() ? *i : i->to(op.device());  // CPU indices are allowed, as for CUDA
    if (i->scalar_type() == at::kBool || i->scalar_type() == at::kByte) {
      TORCH_CHECK_NOT_IMPLEMENTED(i->dim() > 0, name, ": a 0-d boolean index (x[True]) is not supported on device mlu");
      // A mask over the next mask.dim() dims stands for the columns of its nonzero() (torch's
      // expandTensors); its dims must match self's there.
      const auto at_dim = static_cast<std::int64_t>(idx.size());
      TORCH_CHECK_INDEX(at_dim + i->dim() <= self.dim(), "too many indices for tensor of dimension ", self.dim());
      for (std::int64_t d = 0; d < i->dim(); ++d)
        TORCH_CHECK_INDEX(i->size(d) == self.size(at_dim + d), "The shape of the mask ", i->sizes(), " at index ", d,
                          " does not match the shape of the indexed tensor ", self.sizes(), " at index ", at_dim + d);
      const Tensor where = at::nonzero(on_device);
      for (std::int64_t d = 0; d < i->dim(); ++d) idx.push_back(where.select(1, d));
      continue;
    }
    TORCH_CHECK_INDEX(i->scalar_type() == at::kLong || i->scalar_type() == at::kInt, "tensors used as indices must be "
                      "long, int, byte or bool tensors");
    idx.push_back(on_device);
  }
  const auto k = static_cast<std::int64_t>(idx.size());
  TORCH_CHECK(k > 0, name, ": no index tensors");
  const std::vector<Tensor> b = at::broadcast_tensors(idx);
  Tensor flat;
  std::int64_t rows = 1;
  for (std::int64_t j = k - 1; j >= 0; --j) {
    const std::int64_t size = self.size(j);
    const Tensor wrapped = at::where(at::lt(b[j], 0), at::add(b[j], size), b[j]);
    flat = flat.defined() ? at::add(flat, at::mul(wrapped, rows)) : (rows == 1 ? wrapped : at::mul(wrapped, rows));
    rows *= size;
  }
  std::vector<std::int64_t> rest(self.sizes().begin() + k, self.sizes().end());
  std::vector<std::int64_t> view_shape{rows};
  view_shape.insert(view_shape.end(), rest.begin(), rest.end());
  const Tensor gathered = at::index_select(self.reshape(view_shape), 0, flat.reshape({-1}));
  std::vector<std::int64_t> shape(b[0].sizes().begin(), b[0].sizes().end());
  shape.insert(shape.end(), rest.begin(), rest.end());
  at::native::resize_output(out, shape);
  out.copy_(gathered.view(shape));
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index.Tensor_out", TORCH_FN(index_tensor_out));
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("gather", TORCH_FN(gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter_add", TORCH_FN(scatter_add));
  m.impl("scatter_add_", TORCH_FN(scatter_add_));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("embedding", TORCH_FN(embedding));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
}

}  // namespace mlusim::bridge::ops
