// ATen's overwriting and reducing scatters over libmlu's scatter (index.h: each line's updates in
// index order on one task, so an assignment's last update wins, as torch's CPU kernel), and what
// is built on them:
//
//   scatter.src / .value / .reduce / .value_reduce (+ out=, in-place)   scatter, reduce add/multiply
//   scatter_reduce.two (+ out=, in-place)   sum / prod / amax / amin / mean; include_self=False
//                                           first assigns the reduction's identity to the
//                                           positions the index reaches; mean divides by the
//                                           counts (a scatter_add of ones), floor for integers
//   index_copy (+ out=, in-place)           scatter along dim with the index expanded over source
//   index_fill_ (Scalar, Tensor value)      scatter of the value with the index expanded over self
//   put_                                    scatter (accumulate: scatter_add) on the flattened
//                                           tensor, negative indices wrapped by a program
//   masked_scatter_                         the source position of each masked element from a
//                                           device cumsum of the mask, index_select, where
//   _index_put_impl_ (index_put_)           put_ at the flat positions index.Tensor selects from an
//                                           arange (last write wins; accumulate adds in order)
//
// Backwards are torch's formulas (gather / masked_select / index_select on the same indices).
#include <ATen/core/Tensor.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/index.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/where.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mlusim/mlu/index.h"
#include "ops/op_support.h"
#include "ops/scatter_checks.h"

namespace mlusim::bridge::ops {
namespace {

using at::Scalar;
using at::Tensor;
using mlu::ScatterReduce;

// out = self.scatter(dim, index, src) with `reduce` (out may be self: in place).
Tensor& scatter_into(OpScope& op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     ScatterReduce reduce, Tensor& out) {
  const char* name = op.name();
  check_on_device(index, op.device(), name, "index");
  check_on_device(src, op.device(), name, "src");
  dim = wrap_dim(dim, self.dim(), name);
  check_scatter_args(name, self, dim, index, &src);
  if (index.numel() == 0) {  // nothing lands: out = self (torch checks no shapes then)
    if (!out.is_same(self)) copy_into(op, self, out);
    return out;
  }
  const Tensor s = as_1d(self), i = as_1d(index), v = as_1d(src), o = as_1d(out);
  op.check(mlu::scatter(op.handle(), desc(s, name), s.data_ptr(), static_cast<int>(dim), desc(i, name), i.data_ptr(),
                        desc(v, name), v.data_ptr(), reduce, desc(o, name), o.data_ptr()),
           "scatter");
  return out;
}

// A value (0-dim tensor) as a src of the index's shape: stride 0 in every dim (scatter.value,
// index_fill, scatter_reduce's identities).
Tensor value_over(const Tensor& value, const Tensor& index) {
  const Tensor i = as_1d(index);
  return value.view(std::vector<int64_t>(static_cast<std::size_t>(i.dim()), 1)).expand(i.sizes());
}

Tensor scatter_new(const char* name, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   ScatterReduce reduce) {
  OpScope op(name, self);
  Tensor out = empty_on(op.device(), self.sizes(), self.scalar_type());
  return scatter_into(op, self, dim, index, src, reduce, out);
}
Tensor& scatter_inplace(const char* name, Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        ScatterReduce reduce) {
  OpScope op(name, self);
  return scatter_into(op, self, dim, index, src, reduce, self);
}

Tensor value_of(const Tensor& self, const Scalar& value) { return at::scalar_tensor(value, self.options()); }

ScatterReduce reduce_of(c10::string_view reduce, const char* name) {
  if (reduce == "add") return ScatterReduce::kAdd;
  if (reduce == "multiply") return ScatterReduce::kMul;
  TORCH_CHECK_VALUE(false, name, "(): reduce argument must be either add or multiply, got ", std::string(reduce));
  return ScatterReduce::kAdd;
}

// ---- scatter -----------------------------------------------------------------------------------------

Tensor mlu_scatter_src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_new("aten::scatter", self, dim, index, src, ScatterReduce::kNone);
}
Tensor& mlu_scatter_src_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace("aten::scatter_", self, dim, index, src, ScatterReduce::kNone);
}
Tensor& mlu_scatter_src_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Tensor& out) {
  return write_out(mlu_scatter_src(self, dim, index, src), out, "aten::scatter");
}
Tensor mlu_scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_new("aten::scatter", self, dim, index, value_over(value_of(self, value), index), ScatterReduce::kNone);
}
Tensor& mlu_scatter_value_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_inplace("aten::scatter_", self, dim, index, value_over(value_of(self, value), index),
                         ScatterReduce::kNone);
}
Tensor& mlu_scatter_value_out(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, Tensor& out) {
  return write_out(mlu_scatter_value(self, dim, index, value), out, "aten::scatter");
}
Tensor mlu_scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          c10::string_view reduce) {
  return scatter_new("aten::scatter", self, dim, index, src, reduce_of(reduce, "aten::scatter"));
}
Tensor& mlu_scatter_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, c10::string_view reduce) {
  return scatter_inplace("aten::scatter_", self, dim, index, src, reduce_of(reduce, "aten::scatter_"));
}
Tensor& mlu_scatter_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                               c10::string_view reduce, Tensor& out) {
  return write_out(mlu_scatter_reduce(self, dim, index, src, reduce), out, "aten::scatter");
}
Tensor mlu_scatter_value_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                                c10::string_view reduce) {
  return scatter_new("aten::scatter", self, dim, index, value_over(value_of(self, value), index),
                     reduce_of(reduce, "aten::scatter"));
}
Tensor& mlu_scatter_value_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                                  c10::string_view reduce) {
  return scatter_inplace("aten::scatter_", self, dim, index, value_over(value_of(self, value), index),
                         reduce_of(reduce, "aten::scatter_"));
}
Tensor& mlu_scatter_value_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                                     c10::string_view reduce, Tensor& out) {
  return write_out(mlu_scatter_value_reduce(self, dim, index, value, reduce), out, "aten::scatter");
}

// ---- scatter_reduce ----------------------------------------------------------------------------------

Tensor mlu_scatter_reduce_two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                              c10::string_view reduce, bool include_self) {
  const char* name = "aten::scatter_reduce";
  OpScope op(name, self);
  const bool mean = reduce == "mean";
  ScatterReduce r = ScatterReduce::kAdd;
  if (reduce == "sum" || mean) r = ScatterReduce::kAdd;
  else if (reduce == "prod") r = ScatterReduce::kMul;
  else if (reduce == "amax") r = ScatterReduce::kMax;
  else if (reduce == "amin") r = ScatterReduce::kMin;
  else TORCH_CHECK_VALUE(false, name, "(): reduce argument must be either sum, prod, mean, amax or amin, got ",
                         std::string(reduce));
  Tensor base = self;
  if (!include_self) {  // the positions the index reaches start from the reduction's identity
    const bool fp = at::isFloatingType(self.scalar_type());
    const double inf = std::numeric_limits<double>::infinity();
    Scalar identity = 0;
    if (r == ScatterReduce::kMul) identity = 1;
    if (r == ScatterReduce::kMax) identity = fp ? Scalar(-inf) : Scalar(std::numeric_limits<int64_t>::lowest());
    if (r == ScatterReduce::kMin) identity = fp ? Scalar(inf) : Scalar(std::numeric_limits<int64_t>::max());
    if (!fp && (r == ScatterReduce::kMax || r == ScatterReduce::kMin)) {
      const auto lim = self.scalar_type() == at::kInt    ? std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX}
                       : self.scalar_type() == at::kChar ? std::pair<int64_t, int64_t>{-128, 127}
                       : self.scalar_type() == at::kBool ? std::pair<int64_t, int64_t>{0, 1}
                                                         : std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
      identity = r == ScatterReduce::kMax ? lim.first : lim.second;  // int64 runs as int32 on the VFU
    }
    base = empty_on(op.device(), self.sizes(), self.scalar_type());
    scatter_into(op, self, dim, index, value_over(value_of(self, identity), index), ScatterReduce::kNone, base);
  }
  Tensor out = empty_on(op.device(), self.sizes(), self.scalar_type());
  scatter_into(op, base, dim, index, src, r, out);
  if (!mean) return out;
  Tensor counts = at::full_like(self, include_self ? 1 : 0);
  counts = at::scatter_add(counts, dim, index, at::ones(index.sizes(), self.options()));
  const Tensor safe = run_elementwise_program({counts}, "cast_like(maximum($0, 1), $0)");
  return at::isFloatingType(self.scalar_type()) ? at::div(out, safe) : at::div(out, safe, "floor");
}
Tensor& mlu_scatter_reduce_two_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                c10::string_view reduce, bool include_self) {
  return write_out(mlu_scatter_reduce_two(self, dim, index, src, reduce, include_self), self, "aten::scatter_reduce_");
}
Tensor& mlu_scatter_reduce_two_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                   c10::string_view reduce, bool include_self, Tensor& out) {
  return write_out(mlu_scatter_reduce_two(self, dim, index, src, reduce, include_self), out, "aten::scatter_reduce");
}

// ---- index_copy, index_fill_ ---------------------------------------------------------------------------

// index (1-d or 0-d) as an index of `sizes` along dim: a view of size numel at dim, 1 elsewhere,
// expanded (stride 0) to `sizes`.
Tensor expand_index(const Tensor& index, int64_t dim, at::IntArrayRef sizes, const char* name) {
  TORCH_CHECK_INDEX(index.dim() <= 1, name, "(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong, name, "(): Expected a long tensor for index, but got ",
              index.scalar_type());
  if (sizes.empty()) return index.reshape({});
  std::vector<int64_t> view(sizes.size(), 1);
  view[static_cast<std::size_t>(dim)] = index.numel();
  std::vector<int64_t> to(sizes.begin(), sizes.end());
  to[static_cast<std::size_t>(dim)] = index.numel();
  return index.reshape(view).expand(to);
}

Tensor mlu_index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  const char* name = "aten::index_copy";
  OpScope op(name, self);
  dim = wrap_dim(dim, self.dim(), name);
  TORCH_CHECK_INDEX(source.dim() == 0 || index.numel() == source.size(source.dim() == self.dim() ? dim : 0), name,
                    "(): Number of indices (", index.numel(), ") should be equal to source.size(dim)");
  Tensor out = empty_on(op.device(), self.sizes(), self.scalar_type());
  const Tensor& src = source;
  return scatter_into(op, self, dim, expand_index(index, dim, src.sizes(), name), src, ScatterReduce::kNone, out);
}
Tensor& mlu_index_copy_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return write_out(mlu_index_copy(self, dim, index, source), self, "aten::index_copy_");
}
Tensor& mlu_index_copy_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, Tensor& out) {
  return write_out(mlu_index_copy(self, dim, index, source), out, "aten::index_copy");
}

Tensor& index_fill(const char* name, Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  OpScope op(name, self);
  dim = wrap_dim(dim, self.dim(), name);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  // Negative indices count from the end (torch's index_fill wraps them).
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  const Tensor wrapped =
      run_elementwise_program({index.reshape({-1})}, "where(lt($0, 0), add($0, " + std::to_string(n) + "), $0)");
  const Tensor v = value.to(op.device(), self.scalar_type());
  const Tensor idx = expand_index(wrapped, dim, sizes, name);
  return scatter_into(op, self, dim, idx, value_over(v, idx), ScatterReduce::kNone, self);
}
Tensor& mlu_index_fill_scalar_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill("aten::index_fill_", self, dim, index, value_of(self, value));
}
Tensor& mlu_index_fill_tensor_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "aten::index_fill_: only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return index_fill("aten::index_fill_", self, dim, index, value);
}

// ---- put_, masked_scatter_ -------------------------------------------------------------------------------

Tensor& mlu_put_(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  const char* name = "aten::put_";
  OpScope op(name, self);
  TORCH_CHECK(index.numel() == source.numel(), name, "(): Expected source and index to have the same number of elements");
  TORCH_CHECK(index.scalar_type() == at::kLong, name, "(): Expected a long tensor for index, but got ", index.scalar_type());
  if (index.numel() == 0) return self;
  if (self.scalar_type() == at::kByte && !accumulate) {
    // uint8 has no device dtype; a store moves bytes, so its int8 view takes the same bits
    // (torchvision's samplers mark sampled anchors in uint8 masks this way).
    Tensor bytes = self.view(at::kChar);
    mlu_put_(bytes, index, source.to(at::kByte).view(at::kChar), false);
    return self;
  }
  const Tensor idx = run_elementwise_program(
      {index.reshape({-1})}, "where(lt($0, 0), add($0, " + std::to_string(self.numel()) + "), $0)");
  const bool dense = self.is_contiguous();
  Tensor flat = dense ? self.view({-1}) : self.contiguous().view({-1});
  scatter_into(op, flat, 0, idx, source.reshape({-1}), accumulate ? ScatterReduce::kAdd : ScatterReduce::kNone, flat);
  if (!dense) self.copy_(flat.view(self.sizes()));
  return self;
}

// self[indices] = values (accumulate: +=), as torch's advanced indexing: the flat position of every
// indexed element from index.Tensor over an arange of self's numel (the device's index kernel does
// the broadcasting, masks and None dims), then put_ there.
Tensor& mlu_index_put_impl_(Tensor& self, const c10::List<std::optional<Tensor>>& indices, const Tensor& values,
                            bool accumulate, bool /*unsafe*/) {
  const char* name = "aten::index_put_";
  OpScope op(name, self);
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), name,
              ": Index put requires the source and destination dtypes match, got ", self.scalar_type(),
              " for the destination and ", values.scalar_type(), " for the source.");
  if (self.numel() == 0) return self;
  const Tensor flat_pos = at::arange(self.numel(), self.options().dtype(at::kLong)).view(self.sizes());
  const Tensor pos = at::index(flat_pos, indices);
  if (pos.numel() == 0) return self;
  const Tensor v = values.device() == op.device() ? values : values.to(op.device());
  return mlu_put_(self, pos, v.expand(pos.sizes()), accumulate);
}

Tensor& mlu_masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* name = "aten::masked_scatter_";
  OpScope op(name, self);
  TORCH_CHECK(mask.scalar_type() == at::kBool, name, "(): expected mask of dtype bool, got ", mask.scalar_type());
  TORCH_CHECK(source.scalar_type() == self.scalar_type(), name, "(): expected self and source to have the same dtype");
  if (self.numel() == 0) return self;
  const Tensor m = mask.expand(self.sizes()).reshape({-1});
  // Source position of each masked element: the count of masked elements before it.
  const Tensor pos = at::cumsum(m, 0);
  const int64_t last = std::max<int64_t>(source.numel() - 1, 0);
  const Tensor at_src =
      run_elementwise_program({pos}, "minimum(maximum(sub($0, 1), 0), " + std::to_string(last) + ")");
  const Tensor picked = source.numel() == 0 ? self.reshape({-1}) : at::index_select(source.reshape({-1}), 0, at_src);
  const Tensor result = at::where(m, picked, self.reshape({-1}));
  return write_out(result.view(self.sizes()), self, name);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("scatter.src", TORCH_FN(mlu_scatter_src));
  m.impl("scatter_.src", TORCH_FN(mlu_scatter_src_));
  m.impl("scatter.src_out", TORCH_FN(mlu_scatter_src_out));
  m.impl("scatter.value", TORCH_FN(mlu_scatter_value));
  m.impl("scatter_.value", TORCH_FN(mlu_scatter_value_));
  m.impl("scatter.value_out", TORCH_FN(mlu_scatter_value_out));
  m.impl("scatter.reduce", TORCH_FN(mlu_scatter_reduce));
  m.impl("scatter_.reduce", TORCH_FN(mlu_scatter_reduce_));
  m.impl("scatter.reduce_out", TORCH_FN(mlu_scatter_reduce_out));
  m.impl("scatter.value_reduce", TORCH_FN(mlu_scatter_value_reduce));
  m.impl("scatter_.value_reduce", TORCH_FN(mlu_scatter_value_reduce_));
  m.impl("scatter.value_reduce_out", TORCH_FN(mlu_scatter_value_reduce_out));
  m.impl("scatter_reduce.two", TORCH_FN(mlu_scatter_reduce_two));
  m.impl("scatter_reduce_.two", TORCH_FN(mlu_scatter_reduce_two_));
  m.impl("scatter_reduce.two_out", TORCH_FN(mlu_scatter_reduce_two_out));
  m.impl("index_copy", TORCH_FN(mlu_index_copy));
  m.impl("index_copy_", TORCH_FN(mlu_index_copy_));
  m.impl("index_copy.out", TORCH_FN(mlu_index_copy_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(mlu_index_fill_scalar_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(mlu_index_fill_tensor_));
  m.impl("put_", TORCH_FN(mlu_put_));
  m.impl("masked_scatter_", TORCH_FN(mlu_masked_scatter_));
  m.impl("_index_put_impl_", TORCH_FN(mlu_index_put_impl_));
}

}  // namespace mlusim::bridge::ops
