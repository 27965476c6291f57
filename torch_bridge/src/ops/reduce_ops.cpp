// ATen reduction kernels over libmlu's reduce.h: sum, mean, prod, amax/amin, max/min (full and
// with indices), argmax/argmin, var/std (+ _mean), linalg_vector_norm and norm.
//
// Which overloads reach a backend in torch 1.13 (torch._C._dispatch_dump): sum / sum.out / mean /
// prod.out / norm.Scalar / norm.ScalarOpt_dtype(_out) / var_mean.correction_out /
// std_mean.correction_out are CompositeExplicitAutograd (they call the overloads below, and
// sum / mean / prod.out are also registered here so their kernels carry their own name);
// var / var.dim / std / std.dim / var_mean / std_mean (the `unbiased` forms) are
// CompositeImplicitAutograd and end in the .correction overloads; max.out / min.out are
// maximum / minimum (elementwise, not here).
//
// dtype rules (torch's): sum / prod of integral or bool tensors give int64; `dtype=` casts the
// input first (libmlu cast) unless libmlu's own widening gives the same result (integral -> int64
// accumulation, fp16 -> fp32 accumulation); an out= tensor's dtype is the result dtype for sum /
// prod / mean (as torch's infer_dtype_from_optional) and must match for the others.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ne.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/reduce.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::OptionalIntArrayRef;
using at::ScalarType;
using at::Tensor;

// ---- dims and shapes -------------------------------------------------------------------------------

// x's reduced dims, wrapped (torch's rules: a 0-dim tensor takes dim 0 / -1; no duplicates).
// Empty = every dim (torch's dim=None, and dim=[] in 1.13).
std::vector<int> wrap_dims(const Tensor& x, OptionalIntArrayRef dims, const char* name) {
  std::vector<int> out;
  if (!dims.has_value()) return out;
  const std::int64_t bound = std::max<std::int64_t>(x.dim(), 1);
  std::vector<bool> seen(static_cast<std::size_t>(bound), false);
  for (const std::int64_t d : *dims) {
    TORCH_CHECK_INDEX(d >= -bound && d < bound, name, ": dimension out of range (expected to be in range of [",
                      -bound, ", ", bound - 1, "], but got ", d, ")");
    const std::int64_t w = d < 0 ? d + bound : d;
    TORCH_CHECK(!seen[static_cast<std::size_t>(w)], name, ": dim ", w, " appears multiple times in the list of dims");
    seen[static_cast<std::size_t>(w)] = true;
    out.push_back(static_cast<int>(w));
  }
  return out;
}

std::vector<int> one_dim(const Tensor& x, std::int64_t dim, const char* name) {
  const std::int64_t d[1] = {dim};
  return wrap_dims(x, IntArrayRef(d, 1), name);
}

bool reduces(const std::vector<int>& dims, std::int64_t i) {
  return dims.empty() || std::find(dims.begin(), dims.end(), static_cast<int>(i)) != dims.end();
}

std::vector<std::int64_t> reduced_shape(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < x.dim(); ++i) {
    if (!reduces(dims, i)) out.push_back(x.size(i));
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// torch's zero_numel_check_dims: reductions without an identity on an empty tensor.
void check_nonempty_reduction(const Tensor& x, const std::vector<int>& dims, const char* fn) {
  if (x.numel() != 0) return;
  TORCH_CHECK_INDEX(!dims.empty(), fn, ": Expected reduction dim to be specified for input.numel() == 0.");
  if (x.dim() == 0) return;
  for (const int d : dims)
    TORCH_CHECK_INDEX(x.size(d) != 0, fn, ": Expected reduction dim ", d, " to have non-zero size.");
}

bool reducible(ScalarType t) {
  switch (t) {
    case at::kFloat: case at::kHalf: case at::kBFloat16: case at::kChar: case at::kInt: case at::kLong: case at::kBool:
      return true;
    default:
      return false;
  }
}

void check_reducible(ScalarType t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(reducible(t), name, ": dtype ", t, " is not supported on device mlu"
                              "(reductions take float32, float16, bfloat16, int8, int32, int64, bool)");
}

// ---- libmlu calls ------------------------------------------------------------------------------------

// x converted to `t` on the device (libmlu cast), dense like x.
Tensor cast_to(OpScope& op, const Tensor& x, ScalarType t) {
  Tensor y = empty_like_dense(x, x.sizes(), t);
  if (x.numel() == 0) return y;
  op.check(mlu::cast(op.handle(), desc(x, op.name()), x.data_ptr(), desc(y, op.name()), y.data_ptr()), "cast");
  return y;
}

// The workspace every reduce.h entry point takes.
struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

Workspace reduce_workspace(OpScope& op, const mlu::TensorDesc& xd, const std::vector<int>& dims) {
  Workspace w;
  op.check(mlu::get_reduce_workspace_size(op.handle(), xd, dims, &w.bytes), "get_reduce_workspace_size");
  w.ptr = op.workspace(w.bytes);
  return w;
}

void launch_reduce(OpScope& op, mlu::ReduceOp rop, const Tensor& x, const std::vector<int>& dims, bool keepdim,
                   const Tensor& y) {
  const mlu::TensorDesc xd = desc(x, op.name());
  const mlu::TensorDesc yd = desc(y, op.name());
  const Workspace w = reduce_workspace(op, xd, dims);
  op.check(mlu::reduce(op.handle(), rop, xd, x.data_ptr(), dims, keepdim, yd, y.data_ptr(), w.ptr, w.bytes), "reduce");
}

// ---- sum / prod / mean -------------------------------------------------------------------------------

// Whether reducing x straight into a `target` result equals torch's x.to(target) then reduce.
bool needs_cast(ScalarType x, ScalarType target, bool integral_widens) {
  if (x == target) return false;
  if (integral_widens && target == at::kLong && at::isIntegralType(x, /*includeBool=*/true)) return false;
  if ((x == at::kHalf || x == at::kBFloat16) && target == at::kFloat) return false;  // libmlu accumulates them in fp32
  return true;
}

// The result of sum / prod / mean into `out` (undefined: allocate). `dims` empty = all.
Tensor& accumulate(OpScope& op, mlu::ReduceOp rop, const Tensor& self, const std::vector<int>& dims, bool keepdim,
                   c10::optional<ScalarType> dtype, Tensor& out, bool allocate) {
  const char* name = op.name();
  const bool is_mean = rop == mlu::ReduceOp::kMean;
  if (is_mean) {
    const ScalarType in = dtype.value_or(self.scalar_type());
    TORCH_CHECK(at::isFloatingType(in) || at::isComplexType(in), name,
                ": mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                "Got: ", in);
  }
  ScalarType target;
  if (dtype.has_value()) {
    target = *dtype;
    if (!allocate) check_out_dtype(out, target, name);
  } else if (!allocate) {
    target = out.scalar_type();
  } else {
    target = !is_mean && at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
  }
  if (is_narrow_int(self.scalar_type()))  // uint8 / int16: the int32 copy sums to the same int64
    return accumulate(op, rop, self.to(at::kInt), dims, keepdim, target, out, allocate);
  if (self.scalar_type() == at::kDouble || target == at::kDouble) {
    // float64 (renorm's backward sums in float64): reduced in float32 on the input narrowed with
    // narrow_float64's range check, the result written back as float64 (op_support.h's rule).
    const Tensor x = self.scalar_type() == at::kDouble ? narrow_float64(self, name) : self;
    Tensor r;
    accumulate(op, rop, x, dims, keepdim, target == at::kDouble ? at::kFloat : target, r, true);
    return allocate ? (out = r.to(target)) : write_out(r, out, name);
  }
  check_reducible(self.scalar_type(), name);
  const bool cast = needs_cast(self.scalar_type(), target, !is_mean);
  if (cast) check_reducible(target, name);
  const std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  if (allocate) out = empty_on(op.device(), shape, target);
  else prepare_out(out, op.device(), shape, name);
  const Tensor x = cast ? cast_to(op, self, target) : self;
  launch_reduce(op, rop, x, dims, keepdim, out);
  return out;
}

Tensor sum_dim(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, c10::optional<ScalarType> dtype) {
  OpScope op("aten::sum.dim_IntList", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kSum, self, wrap_dims(self, dim, op.name()), keepdim, dtype, out, true);
}

Tensor& sum_dim_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, c10::optional<ScalarType> dtype,
                    Tensor& out) {
  OpScope op("aten::sum.IntList_out", self);
  return accumulate(op, mlu::ReduceOp::kSum, self, wrap_dims(self, dim, op.name()), keepdim, dtype, out, false);
}

Tensor sum_all(const Tensor& self, c10::optional<ScalarType> dtype) {
  OpScope op("aten::sum", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kSum, self, {}, false, dtype, out, true);
}

Tensor& sum_all_out(const Tensor& self, c10::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::sum.out", self);
  return accumulate(op, mlu::ReduceOp::kSum, self, {}, false, dtype, out, false);
}

Tensor mean_dim(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, c10::optional<ScalarType> dtype) {
  OpScope op("aten::mean.dim", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kMean, self, wrap_dims(self, dim, op.name()), keepdim, dtype, out, true);
}

Tensor& mean_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, c10::optional<ScalarType> dtype,
                 Tensor& out) {
  OpScope op("aten::mean.out", self);
  return accumulate(op, mlu::ReduceOp::kMean, self, wrap_dims(self, dim, op.name()), keepdim, dtype, out, false);
}

Tensor mean_all(const Tensor& self, c10::optional<ScalarType> dtype) {
  OpScope op("aten::mean", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kMean, self, {}, false, dtype, out, true);
}

Tensor prod_all(const Tensor& self, c10::optional<ScalarType> dtype) {
  OpScope op("aten::prod", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kProd, self, {}, false, dtype, out, true);
}

Tensor& prod_all_out(const Tensor& self, c10::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::prod.out", self);
  return accumulate(op, mlu::ReduceOp::kProd, self, {}, false, dtype, out, false);
}

Tensor prod_dim(const Tensor& self, std::int64_t dim, bool keepdim, c10::optional<ScalarType> dtype) {
  OpScope op("aten::prod.dim_int", self);
  Tensor out;
  return accumulate(op, mlu::ReduceOp::kProd, self, one_dim(self, dim, op.name()), keepdim, dtype, out, true);
}

Tensor& prod_dim_out(const Tensor& self, std::int64_t dim, bool keepdim, c10::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::prod.int_out", self);
  return accumulate(op, mlu::ReduceOp::kProd, self, one_dim(self, dim, op.name()), keepdim, dtype, out, false);
}

// ---- amax / amin / max() / min() ---------------------------------------------------------------------

Tensor& extreme_values(OpScope& op, mlu::ReduceOp rop, const Tensor& self, const std::vector<int>& dims, bool keepdim,
                       const char* fn, Tensor& out, bool allocate) {
  if (!allocate)
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), op.name(),
                ": Expected the dtype for input and out to match, but got ", self.scalar_type(),
                " for input's dtype and ", out.scalar_type(), " for out's dtype.");
  if (is_narrow_int(self.scalar_type())) {  // uint8 / int16: extremes of the int32 copy, narrowed back
    Tensor wide;
    extreme_values(op, rop, self.to(at::kInt), dims, keepdim, fn, wide, true);
    return allocate ? (out = wide.to(self.scalar_type())) : write_out(wide, out, op.name());
  }
  check_reducible(self.scalar_type(), op.name());
  check_nonempty_reduction(self, dims, fn);
  const std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  if (allocate) out = empty_on(op.device(), shape, self.scalar_type());
  else prepare_out(out, op.device(), shape, op.name());
  launch_reduce(op, rop, self, dims, keepdim, out);
  return out;
}

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  OpScope op("aten::amax", self);
  Tensor out;
  return extreme_values(op, mlu::ReduceOp::kAmax, self, wrap_dims(self, dim, op.name()), keepdim, "amax()", out, true);
}

Tensor& amax_out(const Tensor& self, IntArrayRef dim, bool keepdim, Tensor& out) {
  OpScope op("aten::amax.out", self);
  return extreme_values(op, mlu::ReduceOp::kAmax, self, wrap_dims(self, dim, op.name()), keepdim, "amax()", out, false);
}

Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  OpScope op("aten::amin", self);
  Tensor out;
  return extreme_values(op, mlu::ReduceOp::kAmin, self, wrap_dims(self, dim, op.name()), keepdim, "amin()", out, true);
}

Tensor& amin_out(const Tensor& self, IntArrayRef dim, bool keepdim, Tensor& out) {
  OpScope op("aten::amin.out", self);
  return extreme_values(op, mlu::ReduceOp::kAmin, self, wrap_dims(self, dim, op.name()), keepdim, "amin()", out, false);
}

// all / any: amin / amax of (self != 0) into a bool result (libmlu's reductions take bool). An
// empty input gives torch's identities (all: true, any: false). torch gives uint8 for uint8 inputs;
// only bool results are computed here.
Tensor& logical_reduce(const char* name, bool is_all, const Tensor& self, const std::vector<int>& dims, bool keepdim,
                       Tensor& out) {
  OpScope op(name, self);
  TORCH_CHECK_NOT_IMPLEMENTED(out.scalar_type() == at::kBool, name, ": only bool results are supported on device mlu, "
                              "got out of dtype ", out.scalar_type());
  prepare_out(out, op.device(), reduced_shape(self, dims, keepdim), name);
  if (self.numel() == 0) {
    out.fill_(is_all);
    return out;
  }
  check_reducible(self.scalar_type(), name);
  const Tensor nonzero = self.scalar_type() == at::kBool ? self : at::ne(self, 0);
  launch_reduce(op, is_all ? mlu::ReduceOp::kAmin : mlu::ReduceOp::kAmax, nonzero, dims, keepdim, out);
  return out;
}
Tensor& all_all_out(const Tensor& self, Tensor& out) { return logical_reduce("aten::all.all_out", true, self, {}, false, out); }
Tensor& any_all_out(const Tensor& self, Tensor& out) { return logical_reduce("aten::any.all_out", false, self, {}, false, out); }
Tensor& all_dims_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, Tensor& out) {
  return logical_reduce("aten::all.dims_out", true, self, wrap_dims(self, dim, "aten::all.dims_out"), keepdim, out);
}
Tensor& any_dims_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, Tensor& out) {
  return logical_reduce("aten::any.dims_out", false, self, wrap_dims(self, dim, "aten::any.dims_out"), keepdim, out);
}
Tensor& all_dim_out(const Tensor& self, std::int64_t dim, bool keepdim, Tensor& out) {
  return logical_reduce("aten::all.out", true, self, one_dim(self, dim, "aten::all.out"), keepdim, out);
}
Tensor& any_dim_out(const Tensor& self, std::int64_t dim, bool keepdim, Tensor& out) {
  return logical_reduce("aten::any.out", false, self, one_dim(self, dim, "aten::any.out"), keepdim, out);
}

Tensor max_all(const Tensor& self) {
  OpScope op("aten::max", self);
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  Tensor out;
  return extreme_values(op, mlu::ReduceOp::kAmax, self, {}, false, "max()", out, true);
}

Tensor min_all(const Tensor& self) {
  OpScope op("aten::min", self);
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  Tensor out;
  return extreme_values(op, mlu::ReduceOp::kAmin, self, {}, false, "min()", out, true);
}

// ---- max.dim / min.dim / argmax / argmin ----------------------------------------------------------------

void with_indices(OpScope& op, mlu::Extreme which, const Tensor& self, std::int64_t dim, bool keepdim, const char* fn,
                  Tensor& values, Tensor& indices, bool allocate) {
  if (is_narrow_int(self.scalar_type())) {  // uint8 / int16: on the int32 copy, values narrowed back
    if (!allocate) check_out_dtype(values, self.scalar_type(), op.name());
    Tensor wide, wide_indices;
    with_indices(op, which, self.to(at::kInt), dim, keepdim, fn, wide, wide_indices, true);
    if (allocate) {
      values = wide.to(self.scalar_type());
      indices = wide_indices;
    } else {
      write_out(wide, values, op.name());
      write_out(wide_indices, indices, op.name());
    }
    return;
  }
  check_reducible(self.scalar_type(), op.name());
  const std::vector<int> dims = one_dim(self, dim, op.name());
  if (!allocate) {
    check_out_dtype(values, self.scalar_type(), op.name());
    check_out_dtype(indices, at::kLong, op.name());
  }
  if (self.dim() > 0)
    TORCH_CHECK_INDEX(self.size(dims[0]) != 0, fn, ": Expected reduction dim ", dims[0], " to have non-zero size.");
  const std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  if (allocate) {
    values = empty_on(op.device(), shape, self.scalar_type());
    indices = empty_on(op.device(), shape, at::kLong);
  } else {
    prepare_out(values, op.device(), shape, op.name());
    prepare_out(indices, op.device(), shape, op.name());
  }
  const mlu::TensorDesc xd = desc(self, op.name());
  const Workspace w = reduce_workspace(op, xd, dims);
  op.check(mlu::reduce_with_indices(op.handle(), which, xd, self.data_ptr(), dims[0], keepdim, desc(values, op.name()),
                                    values.data_ptr(), desc(indices, op.name()), indices.data_ptr(), w.ptr, w.bytes),
           "reduce_with_indices");
}

std::tuple<Tensor, Tensor> max_dim(const Tensor& self, std::int64_t dim, bool keepdim) {
  OpScope op("aten::max.dim", self);
  Tensor v, i;
  with_indices(op, mlu::Extreme::kMax, self, dim, keepdim, "max()", v, i, true);
  return {v, i};
}

std::tuple<Tensor&, Tensor&> max_dim_out(const Tensor& self, std::int64_t dim, bool keepdim, Tensor& max,
                                         Tensor& max_values) {
  OpScope op("aten::max.dim_max", self);
  with_indices(op, mlu::Extreme::kMax, self, dim, keepdim, "max()", max, max_values, false);
  return {max, max_values};
}

std::tuple<Tensor, Tensor> min_dim(const Tensor& self, std::int64_t dim, bool keepdim) {
  OpScope op("aten::min.dim", self);
  Tensor v, i;
  with_indices(op, mlu::Extreme::kMin, self, dim, keepdim, "min()", v, i, true);
  return {v, i};
}

std::tuple<Tensor&, Tensor&> min_dim_out(const Tensor& self, std::int64_t dim, bool keepdim, Tensor& min,
                                         Tensor& min_indices) {
  OpScope op("aten::min.dim_min", self);
  with_indices(op, mlu::Extreme::kMin, self, dim, keepdim, "min()", min, min_indices, false);
  return {min, min_indices};
}

Tensor& arg_extreme(OpScope& op, mlu::Extreme which, const Tensor& self, c10::optional<std::int64_t> dim, bool keepdim,
                    const char* fn, Tensor& out, bool allocate) {
  if (is_narrow_int(self.scalar_type()))  // uint8 / int16: the int32 copy orders the same
    return arg_extreme(op, which, self.to(at::kInt), dim, keepdim, fn, out, allocate);
  check_reducible(self.scalar_type(), op.name());
  if (!allocate) check_out_dtype(out, at::kLong, op.name());
  std::vector<int> dims;
  if (dim.has_value()) dims = one_dim(self, *dim, op.name());
  check_nonempty_reduction(self, dims, fn);
  // No dim: the flattened index; keepdim keeps every dim as 1.
  std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  if (!dim.has_value() && !keepdim) shape.clear();
  if (allocate) out = empty_on(op.device(), shape, at::kLong);
  else prepare_out(out, op.device(), shape, op.name());
  const mlu::TensorDesc xd = desc(self, op.name());
  const Workspace w = reduce_workspace(op, xd, dims);
  std::optional<int> mdim;
  if (dim.has_value()) mdim = dims[0];
  op.check(mlu::arg_reduce(op.handle(), which, xd, self.data_ptr(), mdim, keepdim, desc(out, op.name()), out.data_ptr(),
                           w.ptr, w.bytes),
           "arg_reduce");
  return out;
}

Tensor argmax(const Tensor& self, c10::optional<std::int64_t> dim, bool keepdim) {
  OpScope op("aten::argmax", self);
  Tensor out;
  return arg_extreme(op, mlu::Extreme::kMax, self, dim, keepdim, "argmax()", out, true);
}

Tensor& argmax_out(const Tensor& self, c10::optional<std::int64_t> dim, bool keepdim, Tensor& out) {
  OpScope op("aten::argmax.out", self);
  return arg_extreme(op, mlu::Extreme::kMax, self, dim, keepdim, "argmax()", out, false);
}

Tensor argmin(const Tensor& self, c10::optional<std::int64_t> dim, bool keepdim) {
  OpScope op("aten::argmin", self);
  Tensor out;
  return arg_extreme(op, mlu::Extreme::kMin, self, dim, keepdim, "argmin()", out, true);
}

Tensor& argmin_out(const Tensor& self, c10::optional<std::int64_t> dim, bool keepdim, Tensor& out) {
  OpScope op("aten::argmin.out", self);
  return arg_extreme(op, mlu::Extreme::kMin, self, dim, keepdim, "argmin()", out, false);
}

// ---- var / std --------------------------------------------------------------------------------------------

// y (and mean, when defined) = var / std of self; y and mean already sized.
void launch_var(OpScope& op, const Tensor& self, const std::vector<int>& dims, const c10::optional<at::Scalar>& correction,
                bool keepdim, bool take_sqrt, const Tensor& y, const Tensor* mean) {
  const mlu::TensorDesc xd = desc(self, op.name());
  const Workspace w = reduce_workspace(op, xd, dims);
  mlu::TensorDesc md;
  if (mean != nullptr) md = desc(*mean, op.name());
  op.check(mlu::var(op.handle(), xd, self.data_ptr(), dims, (correction.has_value() ? correction->toDouble() : 1.0), keepdim,
                    take_sqrt, desc(y, op.name()), y.data_ptr(), mean ? &md : nullptr,
                    mean ? mean->data_ptr() : nullptr, w.ptr, w.bytes),
           "var");
}

void check_var_input(const Tensor& self, const char* name) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()), name,
              ": std and var only support floating point and complex dtypes");
  check_reducible(self.scalar_type(), name);
}

Tensor var_like(const char* name, bool take_sqrt, const Tensor& self, OptionalIntArrayRef dim,
                const c10::optional<at::Scalar>& correction, bool keepdim) {
  OpScope op(name, self);
  check_var_input(self, name);
  const std::vector<int> dims = wrap_dims(self, dim, name);
  Tensor y = empty_on(op.device(), reduced_shape(self, dims, keepdim), self.scalar_type());
  launch_var(op, self, dims, correction, keepdim, take_sqrt, y, nullptr);
  return y;
}

Tensor& var_like_out(const char* name, bool take_sqrt, const Tensor& self, OptionalIntArrayRef dim,
                     const c10::optional<at::Scalar>& correction, bool keepdim, Tensor& out) {
  OpScope op(name, self);
  check_var_input(self, name);
  const std::vector<int> dims = wrap_dims(self, dim, name);
  prepare_out(out, op.device(), reduced_shape(self, dims, keepdim), name);
  launch_var(op, self, dims, correction, keepdim, take_sqrt, out, nullptr);
  return out;
}

std::tuple<Tensor, Tensor> var_mean_like(const char* name, bool take_sqrt, const Tensor& self, OptionalIntArrayRef dim,
                                         const c10::optional<at::Scalar>& correction, bool keepdim) {
  OpScope op(name, self);
  check_var_input(self, name);
  const std::vector<int> dims = wrap_dims(self, dim, name);
  const std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  Tensor y = empty_on(op.device(), shape, self.scalar_type());
  Tensor m = empty_on(op.device(), shape, self.scalar_type());
  launch_var(op, self, dims, correction, keepdim, take_sqrt, y, &m);
  return {y, m};
}

Tensor var_correction(const Tensor& self, OptionalIntArrayRef dim, const c10::optional<at::Scalar>& correction, bool keepdim) {
  return var_like("aten::var.correction", false, self, dim, correction, keepdim);
}
Tensor& var_correction_out(const Tensor& self, OptionalIntArrayRef dim, const c10::optional<at::Scalar>& correction,
                           bool keepdim, Tensor& out) {
  return var_like_out("aten::var.correction_out", false, self, dim, correction, keepdim, out);
}
Tensor std_correction(const Tensor& self, OptionalIntArrayRef dim, const c10::optional<at::Scalar>& correction, bool keepdim) {
  return var_like("aten::std.correction", true, self, dim, correction, keepdim);
}
Tensor& std_correction_out(const Tensor& self, OptionalIntArrayRef dim, const c10::optional<at::Scalar>& correction,
                           bool keepdim, Tensor& out) {
  return var_like_out("aten::std.correction_out", true, self, dim, correction, keepdim, out);
}
std::tuple<Tensor, Tensor> var_mean_correction(const Tensor& self, OptionalIntArrayRef dim,
                                               const c10::optional<at::Scalar>& correction, bool keepdim) {
  return var_mean_like("aten::var_mean.correction", false, self, dim, correction, keepdim);
}
std::tuple<Tensor, Tensor> std_mean_correction(const Tensor& self, OptionalIntArrayRef dim,
                                               const c10::optional<at::Scalar>& correction, bool keepdim) {
  return var_mean_like("aten::std_mean.correction", true, self, dim, correction, keepdim);
}

// ---- norms ----------------------------------------------------------------------------------------------------

std::string ord_str(double p) {
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  std::ostringstream o;
  o << p;
  return o.str();
}

// y = vector norm of self (already cast to the compute dtype when needed).
Tensor& vector_norm(OpScope& op, const Tensor& self, double p, const std::vector<int>& dims, bool keepdim,
                    ScalarType result, const char* fn, Tensor& out, bool allocate) {
  check_reducible(self.scalar_type(), op.name());
  TORCH_CHECK(!std::isnan(p), op.name(), ": the norm order is NaN");
  if (self.numel() == 0 && (p < 0 || std::isinf(p))) {
    TORCH_CHECK(!dims.empty() && self.dim() > 0, fn, " cannot compute the ", ord_str(p),
                " norm on an empty tensor because the operation does not have an identity");
    for (const int d : dims)
      TORCH_CHECK(self.size(d) != 0, fn, " cannot compute the ", ord_str(p), " norm on the dimension ", d,
                  " because this dimension is empty and the operation does not have an identity");
  }
  const std::vector<std::int64_t> shape = reduced_shape(self, dims, keepdim);
  if (allocate) out = empty_on(op.device(), shape, result);
  else prepare_out(out, op.device(), shape, op.name());
  const bool cast = needs_cast(self.scalar_type(), result, false);
  if (cast) check_reducible(result, op.name());
  const Tensor x = cast ? cast_to(op, self, result) : self;
  const mlu::TensorDesc xd = desc(x, op.name());
  const Workspace w = reduce_workspace(op, xd, dims);
  op.check(mlu::norm(op.handle(), xd, x.data_ptr(), p, dims, keepdim, desc(out, op.name()), out.data_ptr(), w.ptr,
                     w.bytes),
           "norm");
  return out;
}

ScalarType linalg_norm_dtype(const Tensor& self, c10::optional<ScalarType> dtype) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", self.scalar_type());
  if (dtype.has_value())
    TORCH_CHECK(at::isFloatingType(*dtype) || at::isComplexType(*dtype),
                "linalg.vector_norm: dtype should be floating point or complex, but got ", *dtype);
  return dtype.value_or(self.scalar_type());
}

Tensor linalg_vector_norm(const Tensor& self, const at::Scalar& ord, OptionalIntArrayRef dim, bool keepdim,
                          c10::optional<ScalarType> dtype) {
  // float64 (a float64 input, or dtype=torch.float64 as renorm's backward asks): computed in
  // float32 on the input narrowed with narrow_float64's range check, the norm written back as
  // float64 (the device's float64 rule, op_support.h).
  if (linalg_norm_dtype(self, dtype) == at::kDouble) {
    const Tensor narrowed = self.scalar_type() == at::kDouble ? narrow_float64(self, "aten::linalg_vector_norm") : self;
    return linalg_vector_norm(narrowed, ord, dim, keepdim, at::kFloat).to(at::kDouble);
  }
  OpScope op("aten::linalg_vector_norm", self);
  const ScalarType result = linalg_norm_dtype(self, dtype);
  Tensor out;
  return vector_norm(op, self, ord.toDouble(), wrap_dims(self, dim, op.name()), keepdim, result, "linalg.vector_norm",
                     out, true);
}

Tensor& linalg_vector_norm_out(const Tensor& self, const at::Scalar& ord, OptionalIntArrayRef dim, bool keepdim,
                               c10::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::linalg_vector_norm.out", self);
  const ScalarType result = linalg_norm_dtype(self, dtype);
  check_out_dtype(out, result, op.name());
  return vector_norm(op, self, ord.toDouble(), wrap_dims(self, dim, op.name()), keepdim, result, "linalg.vector_norm",
                     out, false);
}

ScalarType norm_dtype(const Tensor& self, c10::optional<ScalarType> dtype) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "norm(): input dtype should be either floating point or complex. Got ", self.scalar_type(), " instead.");
  if (dtype.has_value())
    TORCH_CHECK(at::isFloatingType(*dtype) || at::isComplexType(*dtype),
                "norm(): dtype should be either floating point or complex. Got ", *dtype, " instead.");
  return dtype.value_or(self.scalar_type());
}

double norm_p(const c10::optional<at::Scalar>& p) { return p.has_value() ? p->toDouble() : 2.0; }

Tensor norm_dim(const Tensor& self, const c10::optional<at::Scalar>& p, IntArrayRef dim, bool keepdim) {
  OpScope op("aten::norm.ScalarOpt_dim", self);
  const ScalarType result = norm_dtype(self, c10::nullopt);
  Tensor out;
  return vector_norm(op, self, norm_p(p), wrap_dims(self, dim, op.name()), keepdim, result, "norm()", out, true);
}

Tensor norm_dim_dtype(const Tensor& self, const c10::optional<at::Scalar>& p, IntArrayRef dim, bool keepdim,
                      ScalarType dtype) {
  OpScope op("aten::norm.ScalarOpt_dim_dtype", self);
  const ScalarType result = norm_dtype(self, dtype);
  Tensor out;
  return vector_norm(op, self, norm_p(p), wrap_dims(self, dim, op.name()), keepdim, result, "norm()", out, true);
}

Tensor& norm_out(const Tensor& self, const c10::optional<at::Scalar>& p, IntArrayRef dim, bool keepdim, Tensor& out) {
  OpScope op("aten::norm.out", self);
  const ScalarType result = norm_dtype(self, c10::nullopt);
  check_out_dtype(out, result, op.name());
  return vector_norm(op, self, norm_p(p), wrap_dims(self, dim, op.name()), keepdim, result, "norm()", out, false);
}

Tensor& norm_dtype_out(const Tensor& self, const c10::optional<at::Scalar>& p, IntArrayRef dim, bool keepdim,
                       ScalarType dtype, Tensor& out) {
  OpScope op("aten::norm.dtype_out", self);
  const ScalarType result = norm_dtype(self, dtype);
  check_out_dtype(out, result, op.name());
  return vector_norm(op, self, norm_p(p), wrap_dims(self, dim, op.name()), keepdim, result, "norm()", out, false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum", TORCH_FN(sum_all));
  m.impl("sum.out", TORCH_FN(sum_all_out));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_dim_out));
  m.impl("mean", TORCH_FN(mean_all));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.out", TORCH_FN(prod_all_out));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_dim_out));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("any.all_out", TORCH_FN(any_all_out));
  m.impl("all.dims_out", TORCH_FN(all_dims_out));
  m.impl("any.dims_out", TORCH_FN(any_dims_out));
  m.impl("all.out", TORCH_FN(all_dim_out));
  m.impl("any.out", TORCH_FN(any_dim_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("min", TORCH_FN(min_all));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));
  m.impl("var.correction", TORCH_FN(var_correction));
  m.impl("var.correction_out", TORCH_FN(var_correction_out));
  m.impl("std.correction", TORCH_FN(std_correction));
  m.impl("std.correction_out", TORCH_FN(std_correction_out));
  m.impl("var_mean.correction", TORCH_FN(var_mean_correction));
  m.impl("std_mean.correction", TORCH_FN(std_mean_correction));
  m.impl("linalg_vector_norm", TORCH_FN(linalg_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(linalg_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(norm_dim_dtype));
  m.impl("norm.out", TORCH_FN(norm_out));
  m.impl("norm.dtype_out", TORCH_FN(norm_dtype_out));
}

}  // namespace mlusim::bridge::ops
