// ATen elementwise kernels over libmlu's elementwise.h (arithmetic, activations, comparisons, where, clamp, fill, casts, strided copies).
//
// Semantics follow TensorIterator's: the output has the broadcast shape of the inputs, the op
// computes in the inputs' common dtype (at::native::result_type, wrapped numbers included) and the
// result is cast to the output (out= / in-place outputs must be castable: "result type X can't be
// cast to the desired output type Y"). libmlu computes in the dtype torch would when the output
// has the common dtype; an out= tensor of another dtype gets the result through a dense temporary
// of the common dtype and a casting copy_strided.
//
// A CPU 0-dim tensor operand (`dev + torch.tensor(2.)`, the wrapped numbers of Python scalars) is
// host data: its value is read on the host, as CUDA's TensorIterator reads CPU scalars, and the
// op runs as libmlu's tensor-scalar variant (or on a device 0-dim tensor filled with the value
// where libmlu has no scalar variant). Every computation runs on the device.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/le.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/fused.h"
#include "mlusim/torch/device.h"
#include "ops/copy_kernels.h"
#include "ops/op_support.h"
#include "ops/rounded_division.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;
using mlu::BinaryOp;
using mlu::CompareOp;
using Shape = std::vector<std::int64_t>;

enum class Mode { kNew, kInPlace, kOut };

bool is_dev(const Tensor& t) { return t.defined() && t.device().type() == kDeviceType; }
bool is_cpu_scalar(const Tensor& t) { return t.defined() && t.device().is_cpu() && t.dim() == 0; }

ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

// Dtypes libmlu's elementwise ops compute on or write (fp64 only through copies and fills).
bool vfu_dtype_ok(ScalarType t) { return has_mlu_dtype(t) && t != at::kDouble; }

// torch's result type over tensors (wrapped numbers and 0-dim tensors as TensorIterator treats
// them) and scalars.
struct ResultType {
  at::native::ResultTypeState state;
  ResultType& t(const Tensor& x) {
    if (x.defined()) state = at::native::update_result_type_state(x, state);
    return *this;
  }
  ResultType& t(const c10::optional<Tensor>& x) { return x ? t(*x) : *this; }
  ResultType& s(const Scalar& x) {
    state = at::native::update_result_type_state(x, state);
    return *this;
  }
  ResultType& s(const c10::optional<Scalar>& x) { return x ? s(*x) : *this; }
  ScalarType get() const { return at::native::result_type(state); }
};

// `s` converted to dtype t as torch converts a Scalar for a kernel (checked: an overflowing value
// raises torch's error), as a double.
double scalar_as(const Scalar& s, ScalarType t) {
  double r = 0.0;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBool, at::kBFloat16, t, "mlu_scalar_as",
                             [&] { r = static_cast<double>(s.to<scalar_t>()); });
  return r;
}

// A host value rounded to dtype t the way TensorIterator casts a CPU scalar to the common dtype.
double round_to(double v, ScalarType t) {
  switch (t) {
    case at::kHalf: return static_cast<float>(c10::Half(static_cast<float>(v)));
    case at::kBFloat16: return static_cast<float>(c10::BFloat16(static_cast<float>(v)));
    case at::kFloat: return static_cast<float>(v);
    case at::kBool: return v != 0.0 ? 1.0 : 0.0;
    default: return v;
  }
}

// An operand: a device tensor, or a value on the host (a Scalar argument or a CPU 0-dim tensor).
struct Operand {
  Tensor t;
  double v = 0.0;
  bool host() const { return !t.defined(); }
  IntArrayRef sizes() const { return host() ? IntArrayRef() : t.sizes(); }
};

Operand host_value(double v) { return Operand{Tensor(), v}; }

Operand operand(const char* name, const Tensor& t, const c10::Device& device, const char* arg) {
  TORCH_CHECK(t.defined(), name, ": ", arg, " is undefined");
  if (is_cpu_scalar(t)) return host_value(t.item().toDouble());  // CPU data: read on the host
  check_on_device(t, device, name, arg);
  // A view whose elements share memory (unfold / as_strided frames, stft's windows) is read
  // through a dense copy: libmlu descriptors describe non-overlapping layouts only.
  if (!t.is_non_overlapping_and_dense() && overlaps_itself(t)) return Operand{t.contiguous(), 0.0};
  return Operand{t, 0.0};
}

c10::Device pick_device(const char* name, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t && is_dev(*t)) return t->device();
  TORCH_CHECK(false, name, ": expected at least one tensor on device mlu");
}

// The broadcast shape of `shapes`, or an error naming the op (torch's wording).
Shape broadcast(const char* name, std::initializer_list<IntArrayRef> shapes) {
  std::size_t ndim = 0;
  for (IntArrayRef s : shapes) ndim = std::max(ndim, s.size());
  Shape out(ndim, 1);
  for (std::size_t i = 0; i < ndim; ++i) {
    std::int64_t size = 1;
    IntArrayRef first;
    for (IntArrayRef s : shapes) {
      if (i >= s.size()) continue;
      const std::int64_t d = s[s.size() - 1 - i];
      if (d == 1) continue;
      if (size == 1) {
        size = d;
        first = s;
        continue;
      }
      TORCH_CHECK(d == size, name, ": the size of tensor a (", size, ") must match the size of tensor b (", d,
                  ") at non-singleton dimension ", static_cast<std::int64_t>(ndim - 1 - i), " (shapes ", first, " and ",
                  s, ")");
    }
    out[ndim - 1 - i] = size;
  }
  return out;
}

void check_cast(const char* name, ScalarType common, ScalarType out) {
  TORCH_CHECK(at::canCast(common, out), name, ": result type ", common, " can't be cast to the desired output type ",
              out);
}

void check_overlap(const char* name, const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  TORCH_CHECK(at::has_internal_overlap(out) != at::MemOverlap::Yes, name,
              ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
              "location. Please clone() the tensor before performing the operation.");
  for (const Tensor* t : inputs)
    if (t && is_dev(*t))
      TORCH_CHECK(at::get_overlap_status(out, *t) != at::MemOverlapStatus::Partial, name,
                  ": unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                  "single memory location. Please clone() the tensor before performing the operation.");
}

// The first device operand of the output's sizes that is dense (its layout is kept), else
// undefined: as TensorIterator, a broadcast (expanded) operand does not decide the layout, so
// grad.expand(...) * x_channels_last is channels-last.
Tensor like_of(IntArrayRef shape, std::initializer_list<const Operand*> ops) {
  for (const Operand* o : ops)
    if (o && !o->host() && o->t.sizes() == shape && o->t.is_non_overlapping_and_dense()) return o->t;
  return Tensor();
}

// The output of an op: a new tensor (functional), self (in-place: its shape must be the broadcast
// shape) or out= (resized). `any_dtype`: comparisons and logical ops write 1/0 into any dtype.
Tensor resolve_output(const char* name, Mode mode, const Tensor& given, const c10::Device& device, IntArrayRef shape,
                      ScalarType common, ScalarType new_dtype, const Tensor& like, bool any_dtype = false) {
  if (mode == Mode::kNew)
    return like.defined() ? empty_like_dense(like, shape, new_dtype) : empty_on(device, shape, new_dtype);
  if (mode == Mode::kInPlace) {
    check_on_device(given, device, name, "self");
    TORCH_CHECK(given.sizes() == shape, name, ": output with shape ", given.sizes(),
                " doesn't match the broadcast shape ", shape);
  } else {
    prepare_out(given, device, shape, name);
  }
  if (!any_dtype) check_cast(name, common, given.scalar_type());
  return given;
}

// ---- libmlu calls (inside the op's scope: never a nested OpScope, which would drop records) --------

// A libmlu descriptor for one side of a copy: same-dtype copies of dtypes libmlu lacks move raw
// bits as the libmlu dtype of their element size; uint8 <-> bool converts through int8 (0/1 and
// "!= 0" read the same). bf16 is a libmlu dtype: its same-dtype copies work on every preset, its
// conversions only where the preset computes bf16 (libmlu says which op and preset otherwise).
mlu::TensorDesc copy_desc(const Tensor& t, ScalarType other, const char* name) {
  const ScalarType s = t.scalar_type();
  if (!has_mlu_dtype(s)) {
    if (s == other || (s == at::kByte && other == at::kBool)) {
      switch (t.element_size()) {
        case 1: return desc_as(t, mlu::DType::kInt8, name);
        case 2: return desc_as(t, mlu::DType::kFloat16, name);
        case 4: return desc_as(t, mlu::DType::kInt32, name);
        case 8: return desc_as(t, mlu::DType::kInt64, name);
        default: break;
      }
    }
    TORCH_CHECK_NOT_IMPLEMENTED(false, name, ": copying ", other, " to ", s, " (or back) is not supported on device mlu"
                                ": libmlu copy_strided converts float32, float16, bfloat16 (where the preset "
                                "computes it), float64, int8, int32, int64 and bool (other dtypes copy only to "
                                "their own dtype)");
  }
  return desc(t, name);
}

void copy_in(OpScope& op, const Tensor& src, const Tensor& dst) {
  if (dst.numel() == 0) return;
  if (copy_needs_composition(src, dst)) return copy_composed(src, dst, op.name());
  const ScalarType s = src.scalar_type(), d = dst.scalar_type();
  const mlu::TensorDesc sd = copy_desc(src, d, op.name());
  const mlu::TensorDesc dd = copy_desc(dst, s, op.name());
  op.check(mlu::copy_strided(op.handle(), sd, src.data_ptr(), dd, dst.data_ptr()), "copy_strided");
}

// `t` with every stride-0 dim cut to one element (fill writes each element once, as torch's fill_
// of an expanded tensor does).
Tensor writable_view(const Tensor& t) {
  bool expanded = false;
  std::vector<std::int64_t> sizes(t.sizes().begin(), t.sizes().end());
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (t.stride(static_cast<std::int64_t>(d)) == 0 && sizes[d] > 1) {
      sizes[d] = 1;
      expanded = true;
    }
  return expanded ? t.as_strided(sizes, t.strides(), t.storage_offset()) : t;
}

// A 0-dim device tensor of dtype `dtype` holding `value`'s bytes, uploaded from the host.
Tensor upload_element(const Scalar& value, ScalarType dtype, const c10::Device& device, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(dtype), name, ": complex tensors are not supported on device mlu");
  alignas(16) unsigned char buf[16] = {0};
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBool, at::kBFloat16, dtype, "mlu_upload_element", [&] {
    const scalar_t v = value.to<scalar_t>();
    std::memcpy(buf, &v, sizeof v);
  });
  const Tensor host = at::from_blob(buf, {}, at::TensorOptions().dtype(dtype));
  Tensor d = empty_on(device, {}, dtype);
  d.copy_(host);  // a blocking host -> device transfer: the stack buffer may go afterwards
  return d;
}

// Whether double v holds c exactly (only int64 beyond 2^53 does not; INT64_MAX reads back from
// 2^63 as libmlu saturates).
template <class T> bool exact_as_double(T /*c*/, double /*v*/) { return true; }
bool exact_as_double(std::int64_t c, double v) {
  return c == std::numeric_limits<std::int64_t>::max() || (v < 9.2233720368547758e18 && static_cast<std::int64_t>(v) == c);
}

void fill_in(OpScope& op, const Tensor& self, const Scalar& value) {
  if (self.numel() == 0) return;
  const Tensor t = writable_view(self);
  const ScalarType st = t.scalar_type();
  if (has_mlu_dtype(st)) {
    // Converted on the host as fill_ converts (checked), then exactly representable as a double
    // except int64 beyond 2^53.
    double v = 0.0;
    bool exact = true;
    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBool, at::kBFloat16, st, "mlu_fill", [&] {
      const scalar_t c = value.to<scalar_t>();
      v = static_cast<double>(c);
      exact = exact_as_double(c, v);
    });
    if (exact) {
      op.check(mlu::fill(op.handle(), v, desc(t, op.name()), t.data_ptr()), "fill");
      return;
    }
  }
  // The element's bytes from the host, broadcast by a raw same-dtype copy.
  const Tensor element = upload_element(value, st, op.device(), op.name());
  copy_in(op, element.expand(t.sizes()), t);
}

// A device 0-dim tensor of `dtype` holding a host value.
Tensor device_scalar(OpScope& op, double v, ScalarType dtype) {
  Tensor t = empty_on(op.device(), {}, dtype);
  fill_in(op, t, Scalar(v));
  return t;
}

// The operand as a device tensor (host values become 0-dim tensors of `dtype`).
Tensor materialize(OpScope& op, const Operand& o, ScalarType dtype) {
  return o.host() ? device_scalar(op, o.v, dtype) : o.t;
}

// Runs kernel(y) with y = out when out has the compute dtype, else into a dense temporary of that
// dtype, then casts it into out.
template <class Kernel>
void run_into(OpScope& op, const Tensor& out, ScalarType compute, Kernel&& kernel) {
  if (out.numel() == 0) return;
  if (out.scalar_type() == compute) return kernel(out);
  const Tensor tmp = empty_on(op.device(), out.sizes(), compute);
  kernel(tmp);
  copy_in(op, tmp, out);
}

// For kernels that write 1/0 in any libmlu dtype: directly unless out's dtype is one libmlu does
// not compute in, then through a `fallback` temporary.
template <class Kernel>
void run_any(OpScope& op, const Tensor& out, ScalarType fallback, Kernel&& kernel) {
  if (out.numel() == 0) return;
  if (vfu_dtype_ok(out.scalar_type())) return kernel(out);
  const Tensor tmp = empty_on(op.device(), out.sizes(), fallback);
  kernel(tmp);
  copy_in(op, tmp, out);
}

void binary_scalar_call(OpScope& op, BinaryOp bop, const Tensor& a, double s, const Tensor& y, bool scalar_first) {
  const char* n = op.name();
  op.check(mlu::binary_scalar(op.handle(), bop, desc(a, n), a.data_ptr(), s, desc(y, n), y.data_ptr(), scalar_first),
           "binary_scalar");
}

// y = a op b (add/sub: a op alpha * b), y of the compute dtype.
void binary_kernel(OpScope& op, BinaryOp bop, const Operand& a, const Operand& b, double alpha, const Tensor& y) {
  const char* n = op.name();
  const bool scaled = bop == BinaryOp::kAdd || bop == BinaryOp::kSub;
  if (!scaled) alpha = 1.0;
  TORCH_CHECK(!(a.host() && b.host()), n, ": expected at least one input on device mlu");
  if (!a.host() && !b.host()) {
    op.check(mlu::binary(op.handle(), bop, desc(a.t, n), a.t.data_ptr(), desc(b.t, n), b.t.data_ptr(), desc(y, n),
                         y.data_ptr(), alpha),
             "binary");
    return;
  }
  if (b.host()) return binary_scalar_call(op, bop, a.t, scaled ? b.v * alpha : b.v, y, false);
  // scalar op tensor
  if (scaled && alpha != 1.0) {  // s +- alpha * b: scale b first
    const Tensor tmp = empty_on(op.device(), b.t.sizes(), y.scalar_type());
    binary_scalar_call(op, BinaryOp::kMul, b.t, bop == BinaryOp::kSub ? -alpha : alpha, tmp, false);
    return binary_scalar_call(op, BinaryOp::kAdd, tmp, a.v, y, false);
  }
  binary_scalar_call(op, bop, b.t, a.v, y, true);
}

// ---- uint8 / int16 -----------------------------------------------------------------------------------
//
// Not libmlu dtypes: an op whose tensor operands are uint8 or int16 runs on int32 copies of them and
// its int32 result is narrowed back to torch's dtype (modular, as torch wraps). Exact for the ops
// routed here: add/sub/mul are modular, max/min and comparisons order the widened values as the
// narrow ones, true division and floating unary ops compute from the exact values, neg/abs wrap.
// A host scalar takes the narrow dtype first (widened(), op_support.h).

bool has_narrow_int(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t && t->defined() && !is_cpu_scalar(*t) && is_narrow_int(t->scalar_type())) return true;
  return false;
}

// The widened op's result as torch's result dtype `want` (an int32 result narrowed), delivered
// per mode. `any_dtype`: the op writes into an out= of any dtype (comparisons).
Tensor narrowed_result(const char* name, const Tensor& wide, ScalarType want, Mode mode, const Tensor& given,
                       bool any_dtype = false) {
  const Tensor r = wide.scalar_type() == want ? wide : wide.to(want);
  if (mode == Mode::kNew) return r;
  if (mode == Mode::kInPlace) {
    TORCH_CHECK(given.sizes() == r.sizes(), name, ": output with shape ", given.sizes(),
                " doesn't match the broadcast shape ", r.sizes());
  }
  if (!any_dtype) check_cast(name, want, given.scalar_type());
  Tensor dst = given;
  return write_out(r, dst, name);
}

// ---- arithmetic -------------------------------------------------------------------------------------

// A float64 device operand in a computation of another dtype (a 0-dim float64 tensor beside a
// float32 one keeps the float32 result: torch's promotion) is cast to that dtype first, as
// TensorIterator casts it on the fly; the VFU reads no fp64.
Operand cast_float64(const Operand& o, ScalarType compute) {
  if (o.host() || o.t.scalar_type() != at::kDouble || compute == at::kDouble) return o;
  return Operand{o.t.to(compute), 0.0};
}

Tensor arith(const char* name, BinaryOp bop, const Operand& a, const Operand& b, double alpha, ScalarType common,
             const c10::Device& device, Mode mode, const Tensor& given);

// Complex arithmetic the real kernels compute exactly on the (re, im) pairs (view_as_real): complex
// +- complex, and complex * or / a real value (a host scalar, or a real tensor broadcast over the
// pair). Complex * complex and the rest raise NotImplementedError naming the op (the FFT backward
// scales its complex gradients by real factors; nothing here needs a complex product).
Tensor complex_arith(const char* name, BinaryOp bop, const Operand& a, const Operand& b, double alpha, ScalarType common,
                     const c10::Device& device, Mode mode, const Tensor& given) {
  const auto complex_tensor = [](const Operand& o) { return !o.host() && o.t.is_complex(); };
  const auto real_value = [](const Operand& o) { return o.host() || !o.t.is_complex(); };
  const bool pairs = (bop == BinaryOp::kAdd || bop == BinaryOp::kSub) && complex_tensor(a) && complex_tensor(b) &&
                     a.t.scalar_type() == common && b.t.scalar_type() == common;
  const bool scaled = (bop == BinaryOp::kMul && ((complex_tensor(a) && real_value(b)) || (real_value(a) && complex_tensor(b)))) ||
                      (bop == BinaryOp::kDiv && complex_tensor(a) && real_value(b));
  TORCH_CHECK_NOT_IMPLEMENTED(pairs || scaled, name, ": ", common, " is supported on device mlu for complex +- complex "
                              "and complex * or / a real value only (the VFU has no complex arithmetic)");
  const ScalarType real = c10::toRealValueType(common);
  // Each side as real pairs [..., 2], or a real value broadcast over the pair dim.
  const auto side = [&](const Operand& o) {
    if (o.host()) return o;
    if (o.t.is_complex()) return Operand{at::view_as_real(o.t.scalar_type() == common ? o.t : o.t.to(common)), 0.0};
    return Operand{o.t.to(real).unsqueeze(-1), 0.0};
  };
  const Tensor r = at::view_as_complex(arith(name, bop, side(a), side(b), alpha, real, device, Mode::kNew, Tensor()));
  return narrowed_result(name, r, common, mode, given);
}

Tensor arith(const char* name, BinaryOp bop, const Operand& a, const Operand& b, double alpha, ScalarType common,
             const c10::Device& device, Mode mode, const Tensor& given) {
  if (c10::isComplexType(common)) return complex_arith(name, bop, a, b, alpha, common, device, mode, given);
  const Shape shape = broadcast(name, {a.sizes(), b.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&a, &b}));
  check_overlap(name, out, {&a.t, &b.t});
  if (common == at::kDouble) {
    // No fp64 arithmetic on the VFU: as unary_op, computed in fp32 on operands narrowed with a
    // range check (narrow_float64; other dtypes converted) and written back as float64.
    auto narrowed = [&](const Operand& o) {
      if (o.host()) return o;
      return Operand{o.t.scalar_type() == at::kDouble ? narrow_float64(o.t, name) : o.t.to(at::kFloat), 0.0};
    };
    out.copy_(arith(name, bop, narrowed(a), narrowed(b), alpha, at::kFloat, device, Mode::kNew, Tensor()));
    return out;
  }
  const Operand ca = cast_float64(a, common), cb = cast_float64(b, common);
  run_into(op, out, common, [&](const Tensor& y) { binary_kernel(op, bop, ca, cb, alpha, y); });
  return out;
}

void alpha_check(const char* name, ScalarType dtype, const Scalar& alpha) {
  TORCH_CHECK(!alpha.isBoolean() || dtype == at::kBool, name, ": Boolean alpha only supported for Boolean results.");
  TORCH_CHECK(c10::isFloatingType(dtype) || alpha.isIntegral(/*includeBool=*/true), name,
              ": For integral input tensors, argument alpha must not be a floating point number.");
}

void sub_check(const char* name, ScalarType a, ScalarType b) {
  TORCH_CHECK(a != at::kBool || b != at::kBool, name,
              ": Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
  TORCH_CHECK(a != at::kBool && b != at::kBool, name,
              ": Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
              "mask, use the `~` or `logical_not()` operator instead.");
}

ScalarType scalar_kind(const Scalar& s) {
  if (s.isBoolean()) return at::kBool;
  if (s.isIntegral(false)) return at::kLong;
  return at::kDouble;
}

// self op other (tensor or CPU scalar), add/sub with alpha; rsub passes its operands swapped.
Tensor binary_tt(const char* name, BinaryOp bop, const Tensor& a, const Tensor& b, const Scalar& alpha, Mode mode,
                 const Tensor& given) {
  if (has_narrow_int({&a, &b})) {
    ScalarType want = ResultType().t(a).t(b).get();
    if (bop == BinaryOp::kDiv && c10::isIntegralType(want, /*includeBool=*/true)) want = default_float();
    const Tensor wide = binary_tt(name, bop, widened(a, want), widened(b, want), alpha, Mode::kNew, Tensor());
    return narrowed_result(name, wide, want, mode, given);
  }
  const c10::Device device = pick_device(name, {&a, &b, &given});
  const Operand oa = operand(name, a, device, "self"), ob = operand(name, b, device, "other");
  ScalarType common = ResultType().t(a).t(b).get();
  if (bop == BinaryOp::kSub) sub_check(name, a.scalar_type(), b.scalar_type());
  if (bop == BinaryOp::kAdd || bop == BinaryOp::kSub) alpha_check(name, common, alpha);
  if (bop == BinaryOp::kDiv && c10::isIntegralType(common, /*includeBool=*/true)) common = default_float();
  return arith(name, bop, oa, ob, alpha.toDouble(), common, device, mode, given);
}

// self op scalar (scalar_first: scalar op self).
Tensor binary_ts(const char* name, BinaryOp bop, const Tensor& self, const Scalar& other, const Scalar& alpha,
                 bool scalar_first, Mode mode, const Tensor& given) {
  if (has_narrow_int({&self})) {
    const Tensor s = at::native::wrapped_scalar_tensor(other);
    return scalar_first ? binary_tt(name, bop, s, self, alpha, mode, given) : binary_tt(name, bop, self, s, alpha, mode, given);
  }
  const c10::Device device = pick_device(name, {&self, &given});
  const Operand oa = operand(name, self, device, "self");
  ScalarType common = ResultType().t(self).s(other).get();
  if (bop == BinaryOp::kSub) sub_check(name, self.scalar_type(), scalar_kind(other));
  if (bop == BinaryOp::kAdd || bop == BinaryOp::kSub) alpha_check(name, common, alpha);
  if (bop == BinaryOp::kDiv && c10::isIntegralType(common, /*includeBool=*/true)) common = default_float();
  const Operand ob = host_value(other.toDouble());
  return scalar_first ? arith(name, bop, ob, oa, alpha.toDouble(), common, device, mode, given)
                      : arith(name, bop, oa, ob, alpha.toDouble(), common, device, mode, given);
}

// True for "trunc" / "floor" (rounded_division.h), false for None (true division).
bool rounds(const char* name, c10::optional<c10::string_view> mode) {
  if (!mode) return false;
  TORCH_CHECK(*mode == "trunc" || *mode == "floor", name,
              ": div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
  return true;
}

// ---- pow ---------------------------------------------------------------------------------------------

Tensor pow_ts(const char* name, const Tensor& self, const Scalar& exponent, Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&self, &given});
  const Operand base = operand(name, self, device, "self");
  const ScalarType common = ResultType().t(self).s(exponent).get();
  TORCH_CHECK(!base.host(), name, ": expected self on device mlu");
  TORCH_CHECK(!(c10::isIntegralType(self.scalar_type(), true) && exponent.isIntegral(true) && exponent.toLong() < 0),
              name, ": Integers to negative integer powers are not allowed.");
  const double e = exponent.toDouble();
  if (e == 0.0 || e == 1.0) {  // torch: fill with 1 / copy of the base
    OpScope op(name, device);
    const Tensor out = resolve_output(name, mode, given, device, self.sizes(), common, common, base.t);
    check_overlap(name, out, {&base.t});
    if (e == 0.0) {
      fill_in(op, out, Scalar(1));
    } else if (!out.is_same(self)) {
      run_into(op, out, common, [&](const Tensor& y) { copy_in(op, self, y); });
    }
    return out;
  }
  return arith(name, BinaryOp::kPow, base, host_value(e), 1.0, common, device, mode, given);
}

Tensor pow_st(const char* name, const Scalar& self, const Tensor& exponent, Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&exponent, &given});
  const Operand exp = operand(name, exponent, device, "exponent");
  TORCH_CHECK(!exp.host(), name, ": expected exponent on device mlu");
  const ScalarType common = ResultType().s(self).t(exponent).get();
  if (self.toDouble() == 1.0) {
    OpScope op(name, device);
    const Tensor out = resolve_output(name, mode, given, device, exponent.sizes(), common, common, exp.t);
    fill_in(op, out, Scalar(1));
    return out;
  }
  return arith(name, BinaryOp::kPow, host_value(self.toDouble()), exp, 1.0, common, device, mode, given);
}

// ---- unary -------------------------------------------------------------------------------------------

enum class UnaryKind { kNumeric, kFloating, kFloatingOnly };

Tensor unary_op(const char* name, mlu::UnaryOp u, UnaryKind kind, const Tensor& self, Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&self, &given});
  check_on_device(self, device, name, "self");
  const ScalarType st = self.scalar_type();
  if (st == at::kBool && kind == UnaryKind::kNumeric) {
    TORCH_CHECK(u != mlu::UnaryOp::kNeg, name, ": Negation, the `-` operator, on a bool tensor is not supported. If you "
                "are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    TORCH_CHECK(u != mlu::UnaryOp::kRelu, name, ": Boolean inputs not supported for relu");
    TORCH_CHECK(false, name, ": not implemented for 'Bool'");
  }
  TORCH_CHECK(kind != UnaryKind::kFloatingOnly || c10::isFloatingType(st), name, ": not implemented for '", st, "'");
  const ScalarType common = kind == UnaryKind::kFloating && !c10::isFloatingType(st) ? default_float() : st;
  if (is_narrow_int(st))
    return narrowed_result(name, unary_op(name, u, kind, self.to(at::kInt), Mode::kNew, Tensor()), common, mode, given);
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, self.sizes(), common, common, self);
  check_overlap(name, out, {&self});
  if (common == at::kDouble) {
    // The VFU has no fp64 arithmetic: computed in fp32 (input narrowed and result widened by device
    // copies), as vendor stacks do on hardware without fp64 units: ~1e-7 relative error, and values
    // outside fp32's range become inf / 0. (torch.amp.GradScaler takes 1 / scale in float64.)
    out.copy_(unary_op(name, u, kind, self.to(at::kFloat), Mode::kNew, Tensor()));
    return out;
  }
  run_into(op, out, common, [&](const Tensor& y) {
    op.check(mlu::unary(op.handle(), u, desc(self, name), self.data_ptr(), desc(y, name), y.data_ptr()), "unary");
  });
  return out;
}

mlu::UnaryOp gelu_op(const char* name, c10::string_view approximate) {
  if (approximate == "none") return mlu::UnaryOp::kGelu;
  if (approximate == "tanh") return mlu::UnaryOp::kGeluTanh;
  TORCH_CHECK(false, name, ": approximate argument must be either none or tanh.");
}

// ---- comparisons and logic ---------------------------------------------------------------------------

CompareOp flipped(CompareOp c) {
  switch (c) {
    case CompareOp::kLt: return CompareOp::kGt;
    case CompareOp::kLe: return CompareOp::kGe;
    case CompareOp::kGt: return CompareOp::kLt;
    case CompareOp::kGe: return CompareOp::kLe;
    default: return c;
  }
}

Tensor compare_op(const char* name, CompareOp cop, Operand a, Operand b, ScalarType common, const c10::Device& device,
               Mode mode, const Tensor& given) {
  const Shape shape = broadcast(name, {a.sizes(), b.sizes()});
  TORCH_CHECK(!(a.host() && b.host()), name, ": expected at least one input on device mlu");
  // A host value takes the common dtype first (TensorIterator casts CPU scalars).
  if (a.host()) a.v = round_to(a.v, common);
  if (b.host()) b.v = round_to(b.v, common);
  if (common == at::kDouble) {
    // No fp64 compare on the VFU: float64 operands narrowed to fp32 (narrow_float64's range
    // check; values that differ only beyond fp32's precision compare equal), others converted.
    for (Operand* o : {&a, &b})
      if (!o->host()) o->t = o->t.scalar_type() == at::kDouble ? narrow_float64(o->t, name) : o->t.to(at::kFloat);
  } else {
    a = cast_float64(a, common);
    b = cast_float64(b, common);
  }
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, at::kBool, like_of(shape, {&a, &b}), true);
  check_overlap(name, out, {&a.t, &b.t});
  run_any(op, out, at::kBool, [&](const Tensor& y) {
    if (!a.host() && !b.host()) {
      op.check(mlu::compare(op.handle(), cop, desc(a.t, name), a.t.data_ptr(), desc(b.t, name), b.t.data_ptr(),
                            desc(y, name), y.data_ptr()),
               "compare");
    } else {
      const Operand& t = a.host() ? b : a;
      const double s = a.host() ? a.v : b.v;
      op.check(mlu::compare_scalar(op.handle(), a.host() ? flipped(cop) : cop, desc(t.t, name), t.t.data_ptr(), s,
                                   desc(y, name), y.data_ptr()),
               "compare_scalar");
    }
  });
  return out;
}

Tensor compare_tt(const char* name, CompareOp cop, const Tensor& a, const Tensor& b, Mode mode, const Tensor& given) {
  if (has_narrow_int({&a, &b})) {
    const ScalarType common = ResultType().t(a).t(b).get();
    const Tensor wide = compare_tt(name, cop, widened(a, common), widened(b, common), Mode::kNew, Tensor());
    return narrowed_result(name, wide, at::kBool, mode, given, /*any_dtype=*/true);
  }
  const c10::Device device = pick_device(name, {&a, &b, &given});
  return compare_op(name, cop, operand(name, a, device, "self"), operand(name, b, device, "other"),
                 ResultType().t(a).t(b).get(), device, mode, given);
}

Tensor compare_ts(const char* name, CompareOp cop, const Tensor& a, const Scalar& b, Mode mode, const Tensor& given) {
  if (has_narrow_int({&a})) return compare_tt(name, cop, a, at::native::wrapped_scalar_tensor(b), mode, given);
  const c10::Device device = pick_device(name, {&a, &given});
  return compare_op(name, cop, operand(name, a, device, "self"), host_value(b.toDouble()), ResultType().t(a).s(b).get(),
                 device, mode, given);
}

Tensor logical_op(const char* name, std::optional<mlu::LogicalOp> lop, const Tensor& a, const Tensor* b, Mode mode,
               const Tensor& given) {
  const c10::Device device = pick_device(name, {&a, b, &given});
  const Operand oa = operand(name, a, device, "self");
  const Operand ob = b ? operand(name, *b, device, "other") : Operand{};
  const Shape shape = b ? broadcast(name, {oa.sizes(), ob.sizes()}) : Shape(oa.sizes().begin(), oa.sizes().end());
  TORCH_CHECK(!oa.host() || (b && !ob.host()), name, ": expected at least one input on device mlu");
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, at::kBool, at::kBool, like_of(shape, {&oa, &ob}),
                                    true);
  check_overlap(name, out, {&oa.t, &ob.t});
  const Tensor ta = materialize(op, oa, at::kBool);
  run_any(op, out, at::kBool, [&](const Tensor& y) {
    if (!b) {
      op.check(mlu::logical_not(op.handle(), desc(ta, name), ta.data_ptr(), desc(y, name), y.data_ptr()), "logical_not");
      return;
    }
    const Tensor tb = materialize(op, ob, at::kBool);
    op.check(mlu::logical(op.handle(), *lop, desc(ta, name), ta.data_ptr(), desc(tb, name), tb.data_ptr(), desc(y, name),
                          y.data_ptr()),
             "logical");
  });
  return out;
}

// ---- where, masked_fill ---------------------------------------------------------------------------------

mlu::TensorDesc condition_desc(const char* name, const Tensor& cond, const char* what) {
  if (cond.scalar_type() == at::kByte) {
    TORCH_WARN_ONCE(name, " received a uint8 ", what, " tensor. This behavior is deprecated and will be removed in a "
                    "future version of PyTorch. Use a boolean ", what, " instead.");
    return desc_as(cond, mlu::DType::kInt8, name);  // read as != 0
  }
  return desc(cond, name);
}

// The bytes of an 8-byte-element tensor (float64) as int32 [..., 2] (little endian: low, high
// word): the same storage, sizes + [2], strides * 2 + [1].
Tensor int32_words(const Tensor& t) {
  std::vector<std::int64_t> sizes(t.sizes().begin(), t.sizes().end()), strides;
  sizes.push_back(2);
  for (const std::int64_t st : t.strides()) strides.push_back(2 * st);
  strides.push_back(1);
  Tensor words = at::empty({0}, t.options().dtype(at::kInt));
  words.set_(t.storage(), t.storage_offset() * 2, sizes, strides);
  return words;
}

Tensor where_op(const char* name, const Tensor& cond, const Tensor& self, const Tensor& other, Mode mode,
             const Tensor& given) {
  const c10::Device device = pick_device(name, {&cond, &self, &other, &given});
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte, name,
              ": where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  const Operand oc = operand(name, cond, device, "condition");
  const Operand oa = operand(name, self, device, "self"), ob = operand(name, other, device, "other");
  const ScalarType common = ResultType().t(self).t(other).get();
  const Shape shape = broadcast(name, {oc.sizes(), oa.sizes(), ob.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&oa, &ob, &oc}));
  check_overlap(name, out, {&oc.t, &oa.t, &ob.t});
  const Tensor tc = materialize(op, oc, at::kBool);
  const Tensor ta = materialize(op, oa, common), tb = materialize(op, ob, common);
  run_into(op, out, common, [&](const Tensor& y) {
    Tensor c = tc, a = ta, b = tb, w = y;
    if (common == at::kDouble) {
      // Selection moves bits: float64 values (which the VFU does not compute) are selected
      // exactly as their two int32 words, the condition broadcast over the word pair.
      const auto as_double = [](const Tensor& t) { return t.scalar_type() == at::kDouble ? t : t.to(at::kDouble); };
      c = tc.unsqueeze(-1);
      a = int32_words(as_double(ta));
      b = int32_words(as_double(tb));
      w = int32_words(y);
    }
    // uint8 values (all three: a selection converts nothing) are selected as their int8 bytes.
    const bool bytes = common == at::kByte && ta.scalar_type() == at::kByte && tb.scalar_type() == at::kByte;
    const auto value_desc = [&](const Tensor& t) { return bytes ? moved_desc(t, name) : desc(t, name); };
    op.check(mlu::where(op.handle(), condition_desc(name, c, "condition"), c.data_ptr(), value_desc(a), a.data_ptr(),
                        value_desc(b), b.data_ptr(), value_desc(w), w.data_ptr()),
             "where");
  });
  return out;
}

// self with `value` where mask (value: a host Scalar, or a 0-dim tensor).
Tensor masked_fill_op(const char* name, const Tensor& self, const Tensor& mask, const Scalar* value_scalar,
                   const Tensor* value_tensor, Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&self, &mask, &given});
  check_on_device(self, device, name, "self");
  check_on_device(mask, device, name, "mask");
  TORCH_CHECK(mask.scalar_type() == at::kBool || mask.scalar_type() == at::kByte, name,
              ": masked_fill_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  if (value_tensor)
    TORCH_CHECK(value_tensor->dim() == 0, name, ": masked_fill_ only supports a 0-dimensional value tensor, but got "
                "tensor with ", value_tensor->dim(), " dimension(s).");
  if (is_narrow_int(self.scalar_type())) {  // filled on the int32 copy (the value checked as the narrow dtype)
    if (value_scalar) scalar_as(*value_scalar, self.scalar_type());
    const Tensor wide = masked_fill_op(name, self.to(at::kInt), mask, value_scalar, value_tensor, Mode::kNew, Tensor());
    return narrowed_result(name, wide, self.scalar_type(), mode, given);
  }
  const ScalarType dtype = self.scalar_type();
  const Shape shape = mode == Mode::kInPlace ? Shape(self.sizes().begin(), self.sizes().end())
                                             : broadcast(name, {self.sizes(), mask.sizes()});
  if (mode == Mode::kInPlace) {
    const Shape b = broadcast(name, {self.sizes(), mask.sizes()});
    TORCH_CHECK(IntArrayRef(b) == self.sizes(), name, ": output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", IntArrayRef(b));
  }
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, dtype, dtype, self.sizes() == IntArrayRef(shape) ? self : Tensor());
  check_overlap(name, out, {&self, &mask});
  // The value as a 0-dim device tensor of self's dtype (converted as torch's value.item() -> dtype).
  Tensor value;
  if (value_scalar) {
    value = empty_on(device, {}, dtype);
    fill_in(op, value, *value_scalar);
  } else if (value_tensor->device().is_cpu()) {
    value = empty_on(device, {}, dtype);
    fill_in(op, value, value_tensor->item());
  } else {
    check_on_device(*value_tensor, device, name, "value");
    value = *value_tensor;
    if (value.scalar_type() != dtype) {
      value = empty_on(device, {}, dtype);
      copy_in(op, *value_tensor, value);
    }
  }
  if (dtype == at::kDouble) {
    // float64 is only moved here: where() over each element's two int32 words, bit-exact (the
    // VFU has no fp64, but selecting needs no arithmetic).
    const Tensor m = mask.unsqueeze(-1), v = int32_words(value), x = int32_words(self), y = int32_words(out);
    if (out.numel() > 0)
      op.check(mlu::where(op.handle(), condition_desc(name, m, "mask"), m.data_ptr(), desc(v, name), v.data_ptr(),
                          desc(x, name), x.data_ptr(), desc(y, name), y.data_ptr()),
               "where");
    return out;
  }
  run_into(op, out, dtype, [&](const Tensor& y) {
    op.check(mlu::where(op.handle(), condition_desc(name, mask, "mask"), mask.data_ptr(), desc(value, name),
                        value.data_ptr(), desc(self, name), self.data_ptr(), desc(y, name), y.data_ptr()),
             "where");
  });
  return out;
}

// ---- clamp --------------------------------------------------------------------------------------------

Tensor clamp_scalar(const char* name, const Tensor& self, const c10::optional<Scalar>& lo,
                    const c10::optional<Scalar>& hi, Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&self, &given});
  check_on_device(self, device, name, "self");
  TORCH_CHECK(lo || hi, name, ": torch.clamp: At least one of 'min' or 'max' must not be None");
  const ScalarType st = self.scalar_type();
  const ScalarType common = c10::isFloatingType(st) ? st : ResultType().t(self).s(lo).s(hi).get();
  std::optional<double> lv, hv;
  if (lo) lv = scalar_as(*lo, common);
  if (hi) hv = scalar_as(*hi, common);
  if (is_narrow_int(st) && is_narrow_int(common)) {  // bounds checked in the narrow dtype above
    const Tensor wide = clamp_scalar(name, self.to(at::kInt), lo, hi, Mode::kNew, Tensor());
    return narrowed_result(name, wide, common, mode, given);
  }
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, self.sizes(), common, common, self);
  check_overlap(name, out, {&self});
  Tensor x = self;
  if (st == at::kBool) {  // libmlu clamps numbers: bool promotes first (bool bounds keep it bool)
    TORCH_CHECK_NOT_IMPLEMENTED(common != at::kBool, name, ": not implemented for 'Bool' on device mlu");
    x = empty_on(device, self.sizes(), common);
    copy_in(op, self, x);
  }
  run_into(op, out, common, [&](const Tensor& y) {
    op.check(mlu::clamp(op.handle(), desc(x, name), x.data_ptr(), lv, hv, desc(y, name), y.data_ptr()), "clamp");
  });
  return out;
}

// clamp with tensor bounds: maximum(self, min), then minimum(.., max) (NaN-propagating, as torch's
// vectorised clamp; min > max gives max).
Tensor clamp_tensor(const char* name, const Tensor& self, const c10::optional<Tensor>& lo,
                    const c10::optional<Tensor>& hi, Mode mode, const Tensor& given) {
  const bool has_lo = lo && lo->defined(), has_hi = hi && hi->defined();
  const Tensor lo_t = has_lo ? *lo : Tensor(), hi_t = has_hi ? *hi : Tensor();
  const c10::Device device = pick_device(name, {&self, &lo_t, &hi_t, &given});
  TORCH_CHECK(has_lo || has_hi, name, ": torch.clamp: At least one of 'min' or 'max' must not be None");
  const Operand x = operand(name, self, device, "self");
  TORCH_CHECK(!x.host(), name, ": expected self on device mlu");
  Operand ol = has_lo ? operand(name, lo_t, device, "min") : Operand{};
  Operand oh = has_hi ? operand(name, hi_t, device, "max") : Operand{};
  const ScalarType common = ResultType().t(self).t(lo_t).t(hi_t).get();
  TORCH_CHECK_NOT_IMPLEMENTED(common != at::kBool, name, ": not implemented for 'Bool' on device mlu");
  if (has_lo && ol.host()) ol.v = round_to(ol.v, common);
  if (has_hi && oh.host()) oh.v = round_to(oh.v, common);
  const Shape shape = broadcast(name, {x.sizes(), ol.sizes(), oh.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&x, &ol, &oh}));
  check_overlap(name, out, {&self, &ol.t, &oh.t});
  run_into(op, out, common, [&](const Tensor& y) {
    if (has_lo && has_hi) {
      const Tensor tmp = empty_on(device, broadcast(name, {x.sizes(), ol.sizes()}), common);
      binary_kernel(op, BinaryOp::kMaximum, x, ol, 1.0, tmp);
      binary_kernel(op, BinaryOp::kMinimum, Operand{tmp, 0.0}, oh, 1.0, y);
    } else if (has_lo) {
      binary_kernel(op, BinaryOp::kMaximum, x, ol, 1.0, y);
    } else {
      binary_kernel(op, BinaryOp::kMinimum, x, oh, 1.0, y);
    }
  });
  return out;
}

// ---- addcmul / addcdiv ---------------------------------------------------------------------------------

Tensor addc(const char* name, bool divide, const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value,
            Mode mode, const Tensor& given) {
  const c10::Device device = pick_device(name, {&self, &t1, &t2, &given});
  if (divide)
    TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)), name,
                ": Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  const Operand os = operand(name, self, device, "self");
  const Operand o1 = operand(name, t1, device, "tensor1"), o2 = operand(name, t2, device, "tensor2");
  const ScalarType common = ResultType().t(self).t(t1).t(t2).get();
  // fp16: value in fp32 as well (torch's opmath scalar), not rounded to fp16 first.
  const double v = scalar_as(value, common == at::kHalf ? at::kFloat : common);
  const Shape shape = broadcast(name, {os.sizes(), o1.sizes(), o2.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&os, &o1, &o2}));
  check_overlap(name, out, {&os.t, &o1.t, &o2.t});
  const Tensor ts = materialize(op, os, common);
  // fp16: the product/quotient stays in fp32 and the sum rounds once, as torch's opmath kernels.
  const ScalarType inner = common == at::kHalf ? at::kFloat : common;
  const Tensor tmp = empty_on(device, broadcast(name, {o1.sizes(), o2.sizes()}), inner);
  if (tmp.numel() > 0) {
    const Tensor a = materialize(op, o1, inner).to(inner), b = materialize(op, o2, inner).to(inner);
    binary_kernel(op, divide ? BinaryOp::kDiv : BinaryOp::kMul, Operand{a, 0.0}, Operand{b, 0.0}, 1.0, tmp);
  }
  run_into(op, out, common, [&](const Tensor& y) {
    binary_kernel(op, BinaryOp::kAdd, Operand{ts, 0.0}, Operand{tmp, 0.0}, v, y);
  });
  return out;
}

// ---- activation backward ------------------------------------------------------------------------------

Tensor threshold_bwd(const char* name, const Tensor& grad, const Tensor& self, const Scalar& threshold, Mode mode,
                     const Tensor& given) {
  const c10::Device device = pick_device(name, {&grad, &self, &given});
  const Operand og = operand(name, grad, device, "grad_output"), ox = operand(name, self, device, "self");
  const ScalarType common = ResultType().t(grad).t(self).get();
  TORCH_CHECK_NOT_IMPLEMENTED(common != at::kBool, name, ": not implemented for 'Bool'");
  double th = scalar_as(threshold, common);
  // x <= th for an integral x is x <= floor(th) (x itself is compared in its own dtype).
  if (c10::isIntegralType(self.scalar_type(), true)) th = std::floor(th);
  const Shape shape = broadcast(name, {og.sizes(), ox.sizes()});
  OpScope op(name, device);
  // self's layout first: ATen runs threshold_backward as threshold(self, threshold, 0, grad).
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&ox, &og}));
  check_overlap(name, out, {&og.t, &ox.t});
  const Tensor g = materialize(op, og, common), x = materialize(op, ox, self.scalar_type());
  run_into(op, out, common, [&](const Tensor& y) {
    op.check(mlu::threshold_backward(op.handle(), desc(g, name), g.data_ptr(), desc(x, name), x.data_ptr(), th,
                                     desc(y, name), y.data_ptr()),
             "threshold_backward");
  });
  return out;
}

// ---- activations as elementwise programs ---------------------------------------------------------
// hardswish, hardsigmoid, leaky_relu and their backwards: one libmlu elementwise program each (a
// few VFU steps per tile, one kernel). fp16 inputs are widened to fp32 first and the result is
// rounded once on store, as torch's CPU kernels compute half in float ("opmath").

// Builds the program's output node from its input nodes (already in `compute`). `common` is the
// op's result dtype, the dtype torch converts Scalar arguments to (scalar_as).
using ProgramBody = std::function<int(mlu::ElementwiseProgram&, const std::vector<int>& inputs, mlu::DType compute,
                                      ScalarType common)>;

// out = body(a[, b]) for floating tensors (a and b broadcast like a binary op's operands, a CPU
// 0-dim tensor read on the host; the backwards pass (grad, self)). `opmath`: fp16 inputs are
// widened to fp32 and the result rounded once on store, as torch's CPU kernels compute half in
// float; otherwise the program computes in the result dtype (ops that only compare and select).
Tensor program_op(const char* name, const Tensor& a, const Tensor* b, Mode mode, const Tensor& given,
                  const ProgramBody& body, bool opmath = true) {
  const Tensor none;
  const Tensor& bt = b ? *b : none;
  const c10::Device device = pick_device(name, {&a, b, &given});
  const Operand oa = operand(name, a, device, b ? "grad_output" : "self");
  const Operand ob = b ? operand(name, *b, device, "self") : Operand{};
  const ScalarType common = ResultType().t(a).t(bt).get();
  TORCH_CHECK(c10::isFloatingType(common), name, ": not implemented for '", common, "'");
  const Shape shape = b ? broadcast(name, {oa.sizes(), ob.sizes()}) : Shape(oa.sizes().begin(), oa.sizes().end());
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common,
                                    b ? like_of(shape, {&oa, &ob}) : like_of(shape, {&oa}));
  check_overlap(name, out, {&oa.t, &ob.t});
  std::vector<Tensor> xs{materialize(op, oa, common)};
  if (b) xs.push_back(materialize(op, ob, common));
  const bool widen = opmath && common != at::kFloat;
  const mlu::DType compute = widen ? mlu::DType::kFloat32 : mlu_dtype(common, name);
  mlu::ElementwiseProgram p;
  std::vector<int> ids;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const int in = p.input(static_cast<int>(i));
    ids.push_back(widen ? p.cast(in, compute) : in);
  }
  p.set_output(body(p, ids, compute, common));
  run_into(op, out, common, [&](const Tensor& y) {
    std::vector<mlu::TensorDesc> descs;
    for (const Tensor& x : xs) descs.push_back(desc(x, name));
    std::vector<mlu::TensorArg> args;
    for (std::size_t i = 0; i < xs.size(); ++i) args.push_back({&descs[i], xs[i].data_ptr()});
    op.check(mlu::elementwise_program(op.handle(), p, args, desc(y, name), y.data_ptr()), "elementwise_program");
  });
  return out;
}

// min(max(x + 3, 0), 6): the ReLU6 of x + 3 both hard activations share.
int relu6_of_x_plus_3(mlu::ElementwiseProgram& p, int x, mlu::DType t) {
  const int shifted = p.binary(mlu::BinaryOp::kAdd, x, p.constant(3.0, t));
  return p.binary(mlu::BinaryOp::kMinimum, p.binary(mlu::BinaryOp::kMaximum, shifted, p.constant(0.0, t)),
                  p.constant(6.0, t));
}

// hardswish(x) = x * relu6(x + 3) / 6
int hardswish_body(mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
  return p.binary(mlu::BinaryOp::kDiv, p.binary(mlu::BinaryOp::kMul, in[0], relu6_of_x_plus_3(p, in[0], t)),
                  p.constant(6.0, t));
}
// hardsigmoid(x) = relu6(x + 3) / 6
int hardsigmoid_body(mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
  return p.binary(mlu::BinaryOp::kDiv, relu6_of_x_plus_3(p, in[0], t), p.constant(6.0, t));
}
// hardswish'(x) * g: 0 for x <= -3, g * (x / 3 + 1/2) for -3 < x < 3, g from 3 on (torch 2's CPU
// and CUDA rule: the derivative of the piece a boundary point starts).
int hardswish_backward_body(mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
  const int g = in[0], x = in[1];
  const int mid = p.binary(mlu::BinaryOp::kMul, g,
                           p.binary(mlu::BinaryOp::kAdd, p.binary(mlu::BinaryOp::kDiv, x, p.constant(3.0, t)),
                                    p.constant(0.5, t)));
  const int upper = p.where(p.compare(mlu::CompareOp::kLt, x, p.constant(3.0, t)), mid, g);
  return p.where(p.compare(mlu::CompareOp::kLe, x, p.constant(-3.0, t)), p.constant(0.0, t), upper);
}
// hardsigmoid'(x) * g: g / 6 strictly inside (-3, 3), else 0.
int hardsigmoid_backward_body(mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
  const int g = in[0], x = in[1];
  const int inside = p.logical(mlu::LogicalOp::kAnd, p.compare(mlu::CompareOp::kGt, x, p.constant(-3.0, t)),
                               p.compare(mlu::CompareOp::kLt, x, p.constant(3.0, t)));
  return p.where(inside, p.binary(mlu::BinaryOp::kDiv, g, p.constant(6.0, t)), p.constant(0.0, t));
}
// lerp(self, end, w) with a host weight, torch's two-sided formula (exact at w = 0 and w = 1):
// |w| < 0.5: self + w * (end - self), else end - (end - self) * (1 - w).
ProgramBody lerp_body(double w) {
  return [w](mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
    const int self = in[0], end = in[1];
    const int diff = p.binary(mlu::BinaryOp::kSub, end, self);
    if (std::abs(w) < 0.5)
      return p.binary(mlu::BinaryOp::kAdd, self, p.binary(mlu::BinaryOp::kMul, diff, p.constant(w, t)));
    return p.binary(mlu::BinaryOp::kSub, end, p.binary(mlu::BinaryOp::kMul, diff, p.constant(1.0 - w, t)));
  };
}
ProgramBody leaky_relu_body(double slope) {
  return [slope](mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
    const int x = in[0];
    return p.where(p.compare(mlu::CompareOp::kGt, x, p.constant(0.0, t)), x,
                   p.binary(mlu::BinaryOp::kMul, x, p.constant(slope, t)));
  };
}
ProgramBody leaky_relu_backward_body(double slope) {
  return [slope](mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType) {
    const int g = in[0], x = in[1];
    return p.where(p.compare(mlu::CompareOp::kGt, x, p.constant(0.0, t)), g,
                   p.binary(mlu::BinaryOp::kMul, g, p.constant(slope, t)));
  };
}

// hardtanh_backward: grad where min < x < max, else 0 (torch's rule: the bounds themselves pass
// no gradient): two compares, and, select, in the result dtype (the bounds rounded to it, as torch).
ProgramBody hardtanh_backward_body(const Scalar& min_val, const Scalar& max_val) {
  return [min_val, max_val](mlu::ElementwiseProgram& p, const std::vector<int>& in, mlu::DType t, ScalarType common) {
    const int g = in[0], x = in[1];
    const int inside =
        p.logical(mlu::LogicalOp::kAnd, p.compare(mlu::CompareOp::kGt, x, p.constant(scalar_as(min_val, common), t)),
                  p.compare(mlu::CompareOp::kLt, x, p.constant(scalar_as(max_val, common), t)));
    return p.where(inside, g, p.constant(0.0, t));
  };
}

Tensor activation_bwd(const char* name, mlu::ActivationGrad act, const Tensor& grad, const Tensor& value, Mode mode,
                      const Tensor& given) {
  const c10::Device device = pick_device(name, {&grad, &value, &given});
  const Operand og = operand(name, grad, device, "grad_output"), ov = operand(name, value, device, "self");
  const ScalarType common = ResultType().t(grad).t(value).get();
  TORCH_CHECK(c10::isFloatingType(common), name, ": not implemented for '", common, "'");
  const Shape shape = broadcast(name, {og.sizes(), ov.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&og, &ov}));
  check_overlap(name, out, {&og.t, &ov.t});
  const Tensor g = materialize(op, og, common), v = materialize(op, ov, common);
  run_into(op, out, common, [&](const Tensor& y) {
    op.check(mlu::activation_backward(op.handle(), act, desc(g, name), g.data_ptr(), desc(v, name), v.data_ptr(),
                                      desc(y, name), y.data_ptr()),
             "activation_backward");
  });
  return out;
}

mlu::ActivationGrad gelu_grad(const char* name, c10::string_view approximate) {
  return gelu_op(name, approximate) == mlu::UnaryOp::kGelu ? mlu::ActivationGrad::kGelu : mlu::ActivationGrad::kGeluTanh;
}

// ---- arange -------------------------------------------------------------------------------------------------

// torch.arange(start, end, step, out=): the size and checks of at::native::arange_out, the values
// by libmlu's arange kernel (int64 results go through an int32 temporary and a widening copy;
// their values must fit int32, which torch's indices here always do).
Tensor& mlu_arange_out(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  const char* name = "aten::arange.start_out";
  const ScalarType t = out.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kInt || t == at::kChar || t == at::kLong,
                              name, ": dtype ", t, " is not supported on device mlu (float32, "
                              "float16, int8, int32, int64)");
  const bool integral = c10::isIntegralType(t, false);
  const double xstart = integral ? static_cast<double>(start.to<int64_t>()) : start.toDouble();
  const double xend = integral ? static_cast<double>(end.to<int64_t>()) : end.toDouble();
  const double xstep = integral ? static_cast<double>(step.to<int64_t>()) : step.toDouble();
  TORCH_CHECK(xstep > 0 || xstep < 0, name, ": step must be nonzero");
  TORCH_CHECK(std::isfinite(xstart) && std::isfinite(xend), name, ": unsupported range: ", xstart, " -> ", xend);
  TORCH_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart), name,
              ": upper bound and larger bound inconsistent with step sign");
  double size_d = 0;
  if (t == at::kLong) {  // torch computes int64 sizes with integer (truncating) division
    const int64_t a = start.to<int64_t>(), b = end.to<int64_t>(), c = step.to<int64_t>();
    const int64_t sgn = (c > 0) - (c < 0);
    size_d = static_cast<double>((b - a + c - sgn) / c);
  } else {
    size_d = std::ceil((end.toDouble() - start.toDouble()) / step.toDouble());
  }
  TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()), name,
              ": invalid size, possible overflow?");
  const auto size = static_cast<int64_t>(size_d);
  TORCH_CHECK(out.device().type() == kDeviceType, name, ": expected out on device mlu");
  if (out.numel() != size) out.resize_({size});
  if (size == 0) return out;
  OpScope op(name, out.device());
  const Tensor target = t == at::kLong ? empty_on(out.device(), {size}, at::kInt) : out;
  op.check(mlu::arange(op.handle(), xstart, xstep, desc(target, name), target.data_ptr()), "arange");
  if (t == at::kLong) copy_into(op, target, out);
  return out;
}

// ---- fill_.Tensor -----------------------------------------------------------------------------------------

Tensor& mlu_fill_tensor_(Tensor& self, const Tensor& value) {
  const char* name = "aten::fill_.Tensor";
  TORCH_CHECK(value.dim() == 0, name, ": fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  // As at::native::fill_: a value on another device is read (value.item(): host data for a CPU
  // tensor, a synchronising download for a device one); on the same device it is a broadcast copy.
  if (self.device() != value.device()) return self.fill_(value.item());
  if (self.numel() == 0) return self;
  const Tensor v = value.is_alias_of(self) ? value.clone() : value;
  copy_strided_kernel(v.expand(self.sizes()), self, name);
  return self;
}

const Tensor kNone;

}  // namespace

// ---- copy_kernels.h -------------------------------------------------------------------------------------

void copy_strided_kernel(const Tensor& src, const Tensor& dst, const char* op_name) {
  if (dst.numel() == 0) return;
  check_overlap(op_name, dst, {&src});
  OpScope op(op_name, dst);
  check_on_device(src, op.device(), op_name, "src");
  copy_in(op, src, dst);
}

void fill_kernel(const Tensor& self, const Scalar& value, const char* op_name) {
  if (self.numel() == 0) return;
  OpScope op(op_name, self);
  fill_in(op, self, value);
}

namespace {

// ---- registration wrappers ----------------------------------------------------------------------------

#define MLU_BINARY_ALPHA(fn, aten, bop)                                                                             \
  Tensor mlu_##fn##_t(const Tensor& s, const Tensor& o, const Scalar& a) {                                                \
    return binary_tt("aten::" aten ".Tensor", bop, s, o, a, Mode::kNew, kNone);                                     \
  }                                                                                                                  \
  Tensor& mlu_##fn##_t_(Tensor& s, const Tensor& o, const Scalar& a) {                                                    \
    binary_tt("aten::" aten "_.Tensor", bop, s, o, a, Mode::kInPlace, s);                                           \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_out(const Tensor& s, const Tensor& o, const Scalar& a, Tensor& out) {                                \
    binary_tt("aten::" aten ".out", bop, s, o, a, Mode::kOut, out);                                                 \
    return out;                                                                                                      \
  }                                                                                                                  \
  Tensor mlu_##fn##_s(const Tensor& s, const Scalar& o, const Scalar& a) {                                                \
    return binary_ts("aten::" aten ".Scalar", bop, s, o, a, false, Mode::kNew, kNone);                              \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_(Tensor& s, const Scalar& o, const Scalar& a) {                                                    \
    binary_ts("aten::" aten "_.Scalar", bop, s, o, a, false, Mode::kInPlace, s);                                    \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_out(const Tensor& s, const Scalar& o, const Scalar& a, Tensor& out) {                              \
    binary_ts("aten::" aten ".Scalar_out", bop, s, o, a, false, Mode::kOut, out);                                   \
    return out;                                                                                                      \
  }

MLU_BINARY_ALPHA(add, "add", BinaryOp::kAdd)
MLU_BINARY_ALPHA(sub, "sub", BinaryOp::kSub)

#define MLU_BINARY(fn, aten, bop)                                                                                   \
  Tensor mlu_##fn##_t(const Tensor& s, const Tensor& o) {                                                                 \
    return binary_tt("aten::" aten ".Tensor", bop, s, o, Scalar(1), Mode::kNew, kNone);                             \
  }                                                                                                                  \
  Tensor& mlu_##fn##_t_(Tensor& s, const Tensor& o) {                                                                     \
    binary_tt("aten::" aten "_.Tensor", bop, s, o, Scalar(1), Mode::kInPlace, s);                                   \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_out(const Tensor& s, const Tensor& o, Tensor& out) {                                                 \
    binary_tt("aten::" aten ".out", bop, s, o, Scalar(1), Mode::kOut, out);                                         \
    return out;                                                                                                      \
  }                                                                                                                  \
  Tensor mlu_##fn##_s(const Tensor& s, const Scalar& o) {                                                                 \
    return binary_ts("aten::" aten ".Scalar", bop, s, o, Scalar(1), false, Mode::kNew, kNone);                      \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_(Tensor& s, const Scalar& o) {                                                                     \
    binary_ts("aten::" aten "_.Scalar", bop, s, o, Scalar(1), false, Mode::kInPlace, s);                            \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_out(const Tensor& s, const Scalar& o, Tensor& out) {                                               \
    binary_ts("aten::" aten ".Scalar_out", bop, s, o, Scalar(1), false, Mode::kOut, out);                           \
    return out;                                                                                                      \
  }

MLU_BINARY(mul, "mul", BinaryOp::kMul)
MLU_BINARY(div, "div", BinaryOp::kDiv)

// rsub(self, other, alpha) = other - alpha * self
Tensor mlu_rsub_t(const Tensor& s, const Tensor& o, const Scalar& a) {
  return binary_tt("aten::rsub.Tensor", BinaryOp::kSub, o, s, a, Mode::kNew, kNone);
}
Tensor& mlu_rsub_t_out(const Tensor& s, const Tensor& o, const Scalar& a, Tensor& out) {
  binary_tt("aten::rsub.Tensor_out", BinaryOp::kSub, o, s, a, Mode::kOut, out);
  return out;
}
Tensor mlu_rsub_s(const Tensor& s, const Scalar& o, const Scalar& a) {
  return binary_ts("aten::rsub.Scalar", BinaryOp::kSub, s, o, a, true, Mode::kNew, kNone);
}
Tensor& mlu_rsub_s_out(const Tensor& s, const Scalar& o, const Scalar& a, Tensor& out) {
  binary_ts("aten::rsub.Scalar_out", BinaryOp::kSub, s, o, a, true, Mode::kOut, out);
  return out;
}

// div with rounding_mode: None is true division; trunc/floor one program (rounded_division.h).
Tensor mlu_div_t_mode(const Tensor& s, const Tensor& o, c10::optional<c10::string_view> m) {
  const char* name = "aten::div.Tensor_mode";
  if (rounds(name, m)) return rounded_division(name, s, o, *m);
  return binary_tt(name, BinaryOp::kDiv, s, o, Scalar(1), Mode::kNew, kNone);
}
Tensor& mlu_div_t_mode_(Tensor& s, const Tensor& o, c10::optional<c10::string_view> m) {
  const char* name = "aten::div_.Tensor_mode";
  if (rounds(name, m)) return write_out(rounded_division(name, s, o, *m), s, name);
  binary_tt(name, BinaryOp::kDiv, s, o, Scalar(1), Mode::kInPlace, s);
  return s;
}
Tensor& mlu_div_out_mode(const Tensor& s, const Tensor& o, c10::optional<c10::string_view> m, Tensor& out) {
  const char* name = "aten::div.out_mode";
  if (rounds(name, m)) return write_out(rounded_division(name, s, o, *m), out, name);
  binary_tt(name, BinaryOp::kDiv, s, o, Scalar(1), Mode::kOut, out);
  return out;
}
// A Python number divisor: a wrapped scalar tensor, as TensorIterator sees it.
Tensor mlu_div_s_mode(const Tensor& s, const Scalar& o, c10::optional<c10::string_view> m) {
  const char* name = "aten::div.Scalar_mode";
  if (rounds(name, m)) return rounded_division(name, s, at::native::wrapped_scalar_tensor(o), *m);
  return binary_ts(name, BinaryOp::kDiv, s, o, Scalar(1), false, Mode::kNew, kNone);
}
Tensor& mlu_div_s_mode_(Tensor& s, const Scalar& o, c10::optional<c10::string_view> m) {
  const char* name = "aten::div_.Scalar_mode";
  if (rounds(name, m)) return write_out(rounded_division(name, s, at::native::wrapped_scalar_tensor(o), *m), s, name);
  binary_ts(name, BinaryOp::kDiv, s, o, Scalar(1), false, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_div_s_mode_out(const Tensor& s, const Scalar& o, c10::optional<c10::string_view> m, Tensor& out) {
  const char* name = "aten::div.Scalar_mode_out";
  if (rounds(name, m)) return write_out(rounded_division(name, s, at::native::wrapped_scalar_tensor(o), *m), out, name);
  binary_ts(name, BinaryOp::kDiv, s, o, Scalar(1), false, Mode::kOut, out);
  return out;
}

// pow
// float64 (torch.float_power computes pow in float64): both narrowed to float32 with the range
// check (narrow_float64), pow in float32, the result written back as float64.
Tensor mlu_pow_tt(const Tensor& s, const Tensor& e) {
  if (s.scalar_type() == at::kDouble && e.scalar_type() == at::kDouble && s.device() == e.device())
    return mlu_pow_tt(narrow_float64(s, "aten::pow"), narrow_float64(e, "aten::pow")).to(at::kDouble);
  return binary_tt("aten::pow.Tensor_Tensor", BinaryOp::kPow, s, e, Scalar(1), Mode::kNew, kNone);
}
Tensor& mlu_pow_tt_out(const Tensor& s, const Tensor& e, Tensor& out) {
  binary_tt("aten::pow.Tensor_Tensor_out", BinaryOp::kPow, s, e, Scalar(1), Mode::kOut, out);
  return out;
}
Tensor& mlu_pow_tt_(Tensor& s, const Tensor& e) {
  binary_tt("aten::pow_.Tensor", BinaryOp::kPow, s, e, Scalar(1), Mode::kInPlace, s);
  return s;
}
Tensor mlu_pow_ts_fn(const Tensor& s, const Scalar& e) {
  if (s.scalar_type() == at::kDouble && !e.isComplex())
    return pow_ts("aten::pow.Tensor_Scalar", narrow_float64(s, "aten::pow"), e, Mode::kNew, kNone).to(at::kDouble);
  return pow_ts("aten::pow.Tensor_Scalar", s, e, Mode::kNew, kNone);
}
Tensor& mlu_pow_ts_out(const Tensor& s, const Scalar& e, Tensor& out) {
  pow_ts("aten::pow.Tensor_Scalar_out", s, e, Mode::kOut, out);
  return out;
}
Tensor& mlu_pow_ts_(Tensor& s, const Scalar& e) {
  pow_ts("aten::pow_.Scalar", s, e, Mode::kInPlace, s);
  return s;
}
Tensor mlu_pow_st_fn(const Scalar& s, const Tensor& e) { return pow_st("aten::pow.Scalar", s, e, Mode::kNew, kNone); }
Tensor& mlu_pow_st_out(const Scalar& s, const Tensor& e, Tensor& out) {
  pow_st("aten::pow.Scalar_out", s, e, Mode::kOut, out);
  return out;
}

// maximum / minimum
Tensor mlu_maximum_fn(const Tensor& s, const Tensor& o) {
  return binary_tt("aten::maximum", BinaryOp::kMaximum, s, o, Scalar(1), Mode::kNew, kNone);
}
Tensor& mlu_maximum_out(const Tensor& s, const Tensor& o, Tensor& out) {
  binary_tt("aten::maximum.out", BinaryOp::kMaximum, s, o, Scalar(1), Mode::kOut, out);
  return out;
}
Tensor mlu_minimum_fn(const Tensor& s, const Tensor& o) {
  return binary_tt("aten::minimum", BinaryOp::kMinimum, s, o, Scalar(1), Mode::kNew, kNone);
}
Tensor& mlu_minimum_out(const Tensor& s, const Tensor& o, Tensor& out) {
  binary_tt("aten::minimum.out", BinaryOp::kMinimum, s, o, Scalar(1), Mode::kOut, out);
  return out;
}

// unary
#define MLU_UNARY(fn, aten, uop, kind)                                                                              \
  Tensor mlu_##fn##_fn(const Tensor& s) { return unary_op("aten::" aten, uop, kind, s, Mode::kNew, kNone); }                  \
  Tensor& mlu_##fn##_(Tensor& s) {                                                                                         \
    unary_op("aten::" aten "_", uop, kind, s, Mode::kInPlace, s);                                                       \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_out(const Tensor& s, Tensor& out) {                                                                  \
    unary_op("aten::" aten ".out", uop, kind, s, Mode::kOut, out);                                                      \
    return out;                                                                                                      \
  }

MLU_UNARY(neg, "neg", mlu::UnaryOp::kNeg, UnaryKind::kNumeric)
MLU_UNARY(abs, "abs", mlu::UnaryOp::kAbs, UnaryKind::kNumeric)
MLU_UNARY(relu, "relu", mlu::UnaryOp::kRelu, UnaryKind::kNumeric)
MLU_UNARY(exp, "exp", mlu::UnaryOp::kExp, UnaryKind::kFloating)
MLU_UNARY(log, "log", mlu::UnaryOp::kLog, UnaryKind::kFloating)
MLU_UNARY(sqrt, "sqrt", mlu::UnaryOp::kSqrt, UnaryKind::kFloating)
MLU_UNARY(rsqrt, "rsqrt", mlu::UnaryOp::kRsqrt, UnaryKind::kFloating)
MLU_UNARY(sigmoid, "sigmoid", mlu::UnaryOp::kSigmoid, UnaryKind::kFloating)
MLU_UNARY(tanh, "tanh", mlu::UnaryOp::kTanh, UnaryKind::kFloating)
MLU_UNARY(reciprocal, "reciprocal", mlu::UnaryOp::kReciprocal, UnaryKind::kFloating)
MLU_UNARY(silu, "silu", mlu::UnaryOp::kSilu, UnaryKind::kFloatingOnly)
MLU_UNARY(sin, "sin", mlu::UnaryOp::kSin, UnaryKind::kFloating)
MLU_UNARY(cos, "cos", mlu::UnaryOp::kCos, UnaryKind::kFloating)

Tensor mlu_gelu_fn(const Tensor& s, c10::string_view a) {
  return unary_op("aten::gelu", gelu_op("aten::gelu", a), UnaryKind::kFloatingOnly, s, Mode::kNew, kNone);
}
Tensor& mlu_gelu_(Tensor& s, c10::string_view a) {
  unary_op("aten::gelu_", gelu_op("aten::gelu_", a), UnaryKind::kFloatingOnly, s, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_gelu_out(const Tensor& s, c10::string_view a, Tensor& out) {
  unary_op("aten::gelu.out", gelu_op("aten::gelu.out", a), UnaryKind::kFloatingOnly, s, Mode::kOut, out);
  return out;
}

// bitwise_and/or/xor/left_shift/right_shift (and the __lshift__/__rshift__ operators): libmlu's
// bitwise ops in torch's result dtype. uint8 and int16 go through int32 lanes as above, which is
// exact for every bitwise op: and/or/xor and left shifts keep their low bits, right shifts of the
// zero-/sign-extended value equal the narrow ones, and counts at or beyond the narrow width give 0
// (or the sign) either way, as torch's kernels define.
Tensor bitwise_op(const char* name, mlu::BitwiseOp bop, const Tensor& a, const Tensor& b, Mode mode, const Tensor& given) {
  const bool shift = bop == mlu::BitwiseOp::kLeftShift || bop == mlu::BitwiseOp::kRightShift;
  const ScalarType common = ResultType().t(a).t(b).get();
  TORCH_CHECK(c10::isIntegralType(common, /*includeBool=*/!shift), name, ": not implemented for '", common, "'");
  if (is_narrow_int(common)) {
    // (-9 >> t on uint8 shifts 247, as on the CPU: widened() casts the host scalar first.)
    const Tensor wide = bitwise_op(name, bop, widened(a, common), widened(b, common), Mode::kNew, Tensor());
    return narrowed_result(name, wide, common, mode, given);
  }
  const c10::Device device = pick_device(name, {&a, &b, &given});
  const Operand oa = operand(name, a, device, "self"), ob = operand(name, b, device, "other");
  TORCH_CHECK(!(oa.host() && ob.host()), name, ": expected at least one input on device mlu");
  const Shape shape = broadcast(name, {oa.sizes(), ob.sizes()});
  OpScope op(name, device);
  const Tensor out = resolve_output(name, mode, given, device, shape, common, common, like_of(shape, {&oa, &ob}));
  check_overlap(name, out, {&oa.t, &ob.t});
  run_into(op, out, common, [&](const Tensor& y) {
    if (!oa.host() && !ob.host()) {
      op.check(mlu::bitwise(op.handle(), bop, desc(oa.t, name), oa.t.data_ptr(), desc(ob.t, name), ob.t.data_ptr(),
                            desc(y, name), y.data_ptr()),
               "bitwise");
      return;
    }
    // A host value of the common dtype (checked conversion, as TensorIterator casts a CPU scalar).
    const Operand& t = oa.host() ? ob : oa;
    const double v = scalar_as(Scalar(oa.host() ? oa.v : ob.v), common);
    op.check(mlu::bitwise_scalar(op.handle(), bop, desc(t.t, name), t.t.data_ptr(), static_cast<std::int64_t>(v),
                                 desc(y, name), y.data_ptr(), /*scalar_first=*/oa.host()),
             "bitwise_scalar");
  });
  return out;
}

#define MLU_BITWISE_OUT(fn, aten, bop)                                           \
  Tensor& mlu_##fn##_out(const Tensor& s, const Tensor& o, Tensor& out) {        \
    bitwise_op("aten::" aten ".Tensor_out", bop, s, o, Mode::kOut, out);         \
    return out;                                                                  \
  }
MLU_BITWISE_OUT(bitwise_and, "bitwise_and", mlu::BitwiseOp::kAnd)
MLU_BITWISE_OUT(bitwise_or, "bitwise_or", mlu::BitwiseOp::kOr)
MLU_BITWISE_OUT(bitwise_xor, "bitwise_xor", mlu::BitwiseOp::kXor)
MLU_BITWISE_OUT(bitwise_left_shift, "bitwise_left_shift", mlu::BitwiseOp::kLeftShift)
MLU_BITWISE_OUT(bitwise_right_shift, "bitwise_right_shift", mlu::BitwiseOp::kRightShift)
#undef MLU_BITWISE_OUT

// __lshift__ / __rshift__ and their in-place forms (CPU and CUDA register them directly; the
// scalar forms take the scalar as torch's wrapped number does).
#define MLU_SHIFT_OPERATOR(dunder, bop)                                                                       \
  Tensor mlu_##dunder##_tensor(const Tensor& s, const Tensor& o) {                                              \
    return bitwise_op("aten::" #dunder ".Tensor", bop, s, o, Mode::kNew, Tensor());                             \
  }                                                                                                           \
  Tensor mlu_##dunder##_scalar(const Tensor& s, const Scalar& o) {                                              \
    return bitwise_op("aten::" #dunder ".Scalar", bop, s, at::native::wrapped_scalar_tensor(o), Mode::kNew, Tensor()); \
  }
MLU_SHIFT_OPERATOR(__lshift__, mlu::BitwiseOp::kLeftShift)
MLU_SHIFT_OPERATOR(__rshift__, mlu::BitwiseOp::kRightShift)
#undef MLU_SHIFT_OPERATOR
#define MLU_SHIFT_INPLACE(dunder, bop)                                                                  \
  Tensor& mlu_##dunder##_tensor(Tensor& s, const Tensor& o) {                                           \
    bitwise_op("aten::" #dunder ".Tensor", bop, s, o, Mode::kInPlace, s);                               \
    return s;                                                                                           \
  }                                                                                                     \
  Tensor& mlu_##dunder##_scalar(Tensor& s, const Scalar& o) {                                           \
    bitwise_op("aten::" #dunder ".Scalar", bop, s, at::native::wrapped_scalar_tensor(o), Mode::kInPlace, s); \
    return s;                                                                                           \
  }
MLU_SHIFT_INPLACE(__ilshift__, mlu::BitwiseOp::kLeftShift)
MLU_SHIFT_INPLACE(__irshift__, mlu::BitwiseOp::kRightShift)
#undef MLU_SHIFT_INPLACE

// tril / triu: self where col - row <= k (tril) / >= k (triu), else 0, over the last two dims. The
// mask comes from two device iotas (arange) compared with broadcasting, then one select; torch's
// CUDA kernel is a single pass, this one also writes and reads the [rows, cols] mask.
Tensor& triangle_out(const char* name, bool lower, const Tensor& self, std::int64_t k, Tensor& out) {
  OpScope op(name, self);
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  check_on_device(out, op.device(), name, "out");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": expected out of dtype ", self.scalar_type(),
              ", got ", out.scalar_type());
  const auto iota = at::TensorOptions().device(op.device()).dtype(at::kInt);
  const Tensor rows = at::arange(self.size(-2), iota).unsqueeze(1);
  const Tensor cols = at::arange(self.size(-1), iota).unsqueeze(0);
  const Tensor offset = at::sub(cols, rows);
  const Tensor keep = lower ? at::le(offset, k) : at::ge(offset, k);
  const Tensor zero = at::scalar_tensor(0, at::TensorOptions().dtype(self.scalar_type()));  // a CPU scalar operand
  where_op(name, keep, self, zero, out.is_same(self) ? Mode::kInPlace : Mode::kOut, out);
  return out;
}
Tensor& mlu_tril_out(const Tensor& s, std::int64_t k, Tensor& out) { return triangle_out("aten::tril.out", true, s, k, out); }
Tensor& mlu_triu_out(const Tensor& s, std::int64_t k, Tensor& out) { return triangle_out("aten::triu.out", false, s, k, out); }

// lerp.Tensor_out (a tensor weight; lerp_, quantile's interpolation): torch's two-sided formula
// (Lerp.h) as one program over the three broadcast inputs, fp16 in fp32 rounded once.
Tensor& mlu_lerp_tensor_out(const Tensor& self, const Tensor& end, const Tensor& weight, Tensor& out) {
  constexpr const char* kName = "aten::lerp.Tensor_out";
  OpScope op(kName, self);
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), kName, ": expected dtype ", self.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  TORCH_CHECK(self.scalar_type() == weight.scalar_type(), kName, ": expected dtype ", self.scalar_type(),
              " for `weight` but got dtype ", weight.scalar_type());
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), kName, ": not implemented for '", self.scalar_type(), "'");
  check_out_dtype(out, self.scalar_type(), kName);
  const Tensor result = run_elementwise_program(
      {self, end, weight}, "d = sub($1, $0); where(lt(abs($2), 0.5), add($0, mul($2, d)), sub($1, mul(d, sub(1.0, $2))))");
  return write_out(result.scalar_type() == self.scalar_type() ? result : result.to(self.scalar_type()), out, kName);
}

// lerp.Scalar_out (lerp / lerp_ with a scalar weight reach it; torch.optim's Adam/AdamW foreach
// path calls _foreach_lerp_, whose loop ends here).
Tensor& mlu_lerp_scalar_out(const Tensor& self, const Tensor& end, const Scalar& weight, Tensor& out) {
  program_op("aten::lerp.Scalar_out", self, &end, Mode::kOut, out, lerp_body(weight.toDouble()));
  return out;
}

// isneginf / isposinf: x == -inf / +inf for floating tensors; integer and bool tensors hold no
// infinities (all false, a memset), as torch's kernels.
Tensor& infinity_test_out(const char* name, double inf, const Tensor& s, Tensor& out) {
  if (at::isFloatingType(s.scalar_type())) {
    compare_ts(name, CompareOp::kEq, s, inf, Mode::kOut, out);
    return out;
  }
  TORCH_CHECK(out.scalar_type() == at::kBool, name, ": out must be a bool tensor, got ", out.scalar_type());
  OpScope op(name, s);
  prepare_out(out, op.device(), s.sizes(), name);
  out.fill_(false);
  return out;
}
Tensor& mlu_isneginf_out(const Tensor& s, Tensor& out) {
  return infinity_test_out("aten::isneginf.out", -std::numeric_limits<double>::infinity(), s, out);
}
Tensor& mlu_isposinf_out(const Tensor& s, Tensor& out) {
  return infinity_test_out("aten::isposinf.out", std::numeric_limits<double>::infinity(), s, out);
}

// comparisons
#define MLU_COMPARE(fn, aten, cop)                                                                                  \
  Tensor mlu_##fn##_t(const Tensor& s, const Tensor& o) {                                                                 \
    return compare_tt("aten::" aten ".Tensor", cop, s, o, Mode::kNew, kNone);                                       \
  }                                                                                                                  \
  Tensor& mlu_##fn##_t_(Tensor& s, const Tensor& o) {                                                                     \
    compare_tt("aten::" aten "_.Tensor", cop, s, o, Mode::kInPlace, s);                                             \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_t_out(const Tensor& s, const Tensor& o, Tensor& out) {                                               \
    compare_tt("aten::" aten ".Tensor_out", cop, s, o, Mode::kOut, out);                                            \
    return out;                                                                                                      \
  }                                                                                                                  \
  Tensor mlu_##fn##_s(const Tensor& s, const Scalar& o) {                                                                 \
    return compare_ts("aten::" aten ".Scalar", cop, s, o, Mode::kNew, kNone);                                       \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_(Tensor& s, const Scalar& o) {                                                                     \
    compare_ts("aten::" aten "_.Scalar", cop, s, o, Mode::kInPlace, s);                                             \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_s_out(const Tensor& s, const Scalar& o, Tensor& out) {                                               \
    compare_ts("aten::" aten ".Scalar_out", cop, s, o, Mode::kOut, out);                                            \
    return out;                                                                                                      \
  }

MLU_COMPARE(eq, "eq", CompareOp::kEq)
MLU_COMPARE(ne, "ne", CompareOp::kNe)
MLU_COMPARE(lt, "lt", CompareOp::kLt)
MLU_COMPARE(le, "le", CompareOp::kLe)
MLU_COMPARE(gt, "gt", CompareOp::kGt)
MLU_COMPARE(ge, "ge", CompareOp::kGe)

#define MLU_LOGICAL(fn, aten, lop)                                                                                  \
  Tensor mlu_##fn##_fn(const Tensor& s, const Tensor& o) { return logical_op("aten::" aten, lop, s, &o, Mode::kNew, kNone); } \
  Tensor& mlu_##fn##_(Tensor& s, const Tensor& o) {                                                                        \
    logical_op("aten::" aten "_", lop, s, &o, Mode::kInPlace, s);                                                       \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_out(const Tensor& s, const Tensor& o, Tensor& out) {                                                 \
    logical_op("aten::" aten ".out", lop, s, &o, Mode::kOut, out);                                                      \
    return out;                                                                                                      \
  }

MLU_LOGICAL(logical_and, "logical_and", mlu::LogicalOp::kAnd)
MLU_LOGICAL(logical_or, "logical_or", mlu::LogicalOp::kOr)
MLU_LOGICAL(logical_xor, "logical_xor", mlu::LogicalOp::kXor)

Tensor mlu_logical_not_fn(const Tensor& s) { return logical_op("aten::logical_not", std::nullopt, s, nullptr, Mode::kNew, kNone); }
Tensor& mlu_logical_not_(Tensor& s) {
  logical_op("aten::logical_not_", std::nullopt, s, nullptr, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_logical_not_out(const Tensor& s, Tensor& out) {
  logical_op("aten::logical_not.out", std::nullopt, s, nullptr, Mode::kOut, out);
  return out;
}

// where, masked_fill
Tensor mlu_where_fn(const Tensor& c, const Tensor& s, const Tensor& o) {
  return where_op("aten::where.self", c, s, o, Mode::kNew, kNone);
}
Tensor& mlu_where_out(const Tensor& c, const Tensor& s, const Tensor& o, Tensor& out) {
  where_op("aten::where.self_out", c, s, o, Mode::kOut, out);
  return out;
}

Tensor mlu_masked_fill_s(const Tensor& s, const Tensor& m, const Scalar& v) {
  return masked_fill_op("aten::masked_fill.Scalar", s, m, &v, nullptr, Mode::kNew, kNone);
}
Tensor& mlu_masked_fill_s_(Tensor& s, const Tensor& m, const Scalar& v) {
  masked_fill_op("aten::masked_fill_.Scalar", s, m, &v, nullptr, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_masked_fill_s_out(const Tensor& s, const Tensor& m, const Scalar& v, Tensor& out) {
  masked_fill_op("aten::masked_fill.Scalar_out", s, m, &v, nullptr, Mode::kOut, out);
  return out;
}
Tensor mlu_masked_fill_t(const Tensor& s, const Tensor& m, const Tensor& v) {
  return masked_fill_op("aten::masked_fill.Tensor", s, m, nullptr, &v, Mode::kNew, kNone);
}
Tensor& mlu_masked_fill_t_(Tensor& s, const Tensor& m, const Tensor& v) {
  masked_fill_op("aten::masked_fill_.Tensor", s, m, nullptr, &v, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_masked_fill_t_out(const Tensor& s, const Tensor& m, const Tensor& v, Tensor& out) {
  masked_fill_op("aten::masked_fill.Tensor_out", s, m, nullptr, &v, Mode::kOut, out);
  return out;
}

// clamp, clamp_min, clamp_max
using OptScalar = c10::optional<Scalar>;
using OptTensor = c10::optional<Tensor>;

Tensor mlu_clamp_fn(const Tensor& s, const OptScalar& lo, const OptScalar& hi) {
  return clamp_scalar("aten::clamp", s, lo, hi, Mode::kNew, kNone);
}
Tensor& mlu_clamp_(Tensor& s, const OptScalar& lo, const OptScalar& hi) {
  clamp_scalar("aten::clamp_", s, lo, hi, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_out(const Tensor& s, const OptScalar& lo, const OptScalar& hi, Tensor& out) {
  clamp_scalar("aten::clamp.out", s, lo, hi, Mode::kOut, out);
  return out;
}
Tensor mlu_clamp_t(const Tensor& s, const OptTensor& lo, const OptTensor& hi) {
  return clamp_tensor("aten::clamp.Tensor", s, lo, hi, Mode::kNew, kNone);
}
Tensor& mlu_clamp_t_(Tensor& s, const OptTensor& lo, const OptTensor& hi) {
  clamp_tensor("aten::clamp_.Tensor", s, lo, hi, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_t_out(const Tensor& s, const OptTensor& lo, const OptTensor& hi, Tensor& out) {
  clamp_tensor("aten::clamp.Tensor_out", s, lo, hi, Mode::kOut, out);
  return out;
}

Tensor mlu_hardswish(const Tensor& s) { return program_op("aten::hardswish", s, nullptr, Mode::kNew, kNone, hardswish_body); }
Tensor& mlu_hardswish_(Tensor& s) {
  program_op("aten::hardswish_", s, nullptr, Mode::kInPlace, s, hardswish_body);
  return s;
}
Tensor& mlu_hardswish_out(const Tensor& s, Tensor& out) {
  program_op("aten::hardswish.out", s, nullptr, Mode::kOut, out, hardswish_body);
  return out;
}
Tensor mlu_hardswish_backward(const Tensor& g, const Tensor& s) {
  return program_op("aten::hardswish_backward", g, &s, Mode::kNew, kNone, hardswish_backward_body);
}
Tensor mlu_hardsigmoid(const Tensor& s) {
  return program_op("aten::hardsigmoid", s, nullptr, Mode::kNew, kNone, hardsigmoid_body);
}
Tensor& mlu_hardsigmoid_(Tensor& s) {
  program_op("aten::hardsigmoid_", s, nullptr, Mode::kInPlace, s, hardsigmoid_body);
  return s;
}
Tensor& mlu_hardsigmoid_out(const Tensor& s, Tensor& out) {
  program_op("aten::hardsigmoid.out", s, nullptr, Mode::kOut, out, hardsigmoid_body);
  return out;
}
Tensor mlu_hardsigmoid_backward(const Tensor& g, const Tensor& s) {
  return program_op("aten::hardsigmoid_backward", g, &s, Mode::kNew, kNone, hardsigmoid_backward_body);
}
Tensor& mlu_hardsigmoid_backward_out(const Tensor& g, const Tensor& s, Tensor& gi) {
  program_op("aten::hardsigmoid_backward.grad_input", g, &s, Mode::kOut, gi, hardsigmoid_backward_body);
  return gi;
}
Tensor mlu_leaky_relu(const Tensor& s, const Scalar& slope) {
  return program_op("aten::leaky_relu", s, nullptr, Mode::kNew, kNone, leaky_relu_body(slope.toDouble()));
}
Tensor& mlu_leaky_relu_(Tensor& s, const Scalar& slope) {
  program_op("aten::leaky_relu_", s, nullptr, Mode::kInPlace, s, leaky_relu_body(slope.toDouble()));
  return s;
}
Tensor& mlu_leaky_relu_out(const Tensor& s, const Scalar& slope, Tensor& out) {
  program_op("aten::leaky_relu.out", s, nullptr, Mode::kOut, out, leaky_relu_body(slope.toDouble()));
  return out;
}
void check_leaky_backward(const char* name, const Scalar& slope, bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.toDouble() >= 0.0, name,
              ": In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
              "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
              "in-place leakRelu backward calculation with negative slope");
}
Tensor mlu_leaky_relu_backward(const Tensor& g, const Tensor& s, const Scalar& slope, bool self_is_result) {
  check_leaky_backward("aten::leaky_relu_backward", slope, self_is_result);
  return program_op("aten::leaky_relu_backward", g, &s, Mode::kNew, kNone, leaky_relu_backward_body(slope.toDouble()));
}
Tensor& mlu_leaky_relu_backward_out(const Tensor& g, const Tensor& s, const Scalar& slope, bool self_is_result,
                                    Tensor& gi) {
  check_leaky_backward("aten::leaky_relu_backward.grad_input", slope, self_is_result);
  program_op("aten::leaky_relu_backward.grad_input", g, &s, Mode::kOut, gi, leaky_relu_backward_body(slope.toDouble()));
  return gi;
}

// hardtanh (nn.Hardtanh, ReLU6 = hardtanh(0, 6)) is clamp with both bounds.
Tensor mlu_hardtanh(const Tensor& s, const Scalar& lo, const Scalar& hi) {
  return clamp_scalar("aten::hardtanh", s, lo, hi, Mode::kNew, kNone);
}
Tensor& mlu_hardtanh_(Tensor& s, const Scalar& lo, const Scalar& hi) {
  clamp_scalar("aten::hardtanh_", s, lo, hi, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_hardtanh_out(const Tensor& s, const Scalar& lo, const Scalar& hi, Tensor& out) {
  clamp_scalar("aten::hardtanh.out", s, lo, hi, Mode::kOut, out);
  return out;
}
Tensor mlu_hardtanh_backward(const Tensor& g, const Tensor& s, const Scalar& lo, const Scalar& hi) {
  return program_op("aten::hardtanh_backward", g, &s, Mode::kNew, kNone, hardtanh_backward_body(lo, hi),
                    /*opmath=*/false);
}
Tensor& mlu_hardtanh_backward_out(const Tensor& g, const Tensor& s, const Scalar& lo, const Scalar& hi, Tensor& gi) {
  program_op("aten::hardtanh_backward.grad_input", g, &s, Mode::kOut, gi, hardtanh_backward_body(lo, hi),
             /*opmath=*/false);
  return gi;
}

Tensor mlu_clamp_min_fn(const Tensor& s, const Scalar& v) {
  return clamp_scalar("aten::clamp_min", s, v, c10::nullopt, Mode::kNew, kNone);
}
Tensor& mlu_clamp_min_(Tensor& s, const Scalar& v) {
  clamp_scalar("aten::clamp_min_", s, v, c10::nullopt, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_min_out(const Tensor& s, const Scalar& v, Tensor& out) {
  clamp_scalar("aten::clamp_min.out", s, v, c10::nullopt, Mode::kOut, out);
  return out;
}
Tensor mlu_clamp_min_t(const Tensor& s, const Tensor& v) {
  return clamp_tensor("aten::clamp_min.Tensor", s, v, c10::nullopt, Mode::kNew, kNone);
}
Tensor& mlu_clamp_min_t_(Tensor& s, const Tensor& v) {
  clamp_tensor("aten::clamp_min_.Tensor", s, v, c10::nullopt, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_min_t_out(const Tensor& s, const Tensor& v, Tensor& out) {
  clamp_tensor("aten::clamp_min.Tensor_out", s, v, c10::nullopt, Mode::kOut, out);
  return out;
}
Tensor mlu_clamp_max_fn(const Tensor& s, const Scalar& v) {
  return clamp_scalar("aten::clamp_max", s, c10::nullopt, v, Mode::kNew, kNone);
}
Tensor& mlu_clamp_max_(Tensor& s, const Scalar& v) {
  clamp_scalar("aten::clamp_max_", s, c10::nullopt, v, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_max_out(const Tensor& s, const Scalar& v, Tensor& out) {
  clamp_scalar("aten::clamp_max.out", s, c10::nullopt, v, Mode::kOut, out);
  return out;
}
Tensor mlu_clamp_max_t(const Tensor& s, const Tensor& v) {
  return clamp_tensor("aten::clamp_max.Tensor", s, c10::nullopt, v, Mode::kNew, kNone);
}
Tensor& mlu_clamp_max_t_(Tensor& s, const Tensor& v) {
  clamp_tensor("aten::clamp_max_.Tensor", s, c10::nullopt, v, Mode::kInPlace, s);
  return s;
}
Tensor& mlu_clamp_max_t_out(const Tensor& s, const Tensor& v, Tensor& out) {
  clamp_tensor("aten::clamp_max.Tensor_out", s, c10::nullopt, v, Mode::kOut, out);
  return out;
}

// addcmul, addcdiv
#define MLU_ADDC(fn, aten, divide)                                                                                  \
  Tensor mlu_##fn##_fn(const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {                              \
    return addc("aten::" aten, divide, s, a, b, v, Mode::kNew, kNone);                                              \
  }                                                                                                                  \
  Tensor& mlu_##fn##_(Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {                                     \
    addc("aten::" aten "_", divide, s, a, b, v, Mode::kInPlace, s);                                                  \
    return s;                                                                                                        \
  }                                                                                                                  \
  Tensor& mlu_##fn##_out(const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v, Tensor& out) {               \
    addc("aten::" aten ".out", divide, s, a, b, v, Mode::kOut, out);                                                 \
    return out;                                                                                                      \
  }

MLU_ADDC(addcmul, "addcmul", false)
MLU_ADDC(addcdiv, "addcdiv", true)

// backward of activations
Tensor mlu_threshold_backward_fn(const Tensor& g, const Tensor& s, const Scalar& th) {
  return threshold_bwd("aten::threshold_backward", g, s, th, Mode::kNew, kNone);
}
Tensor& mlu_threshold_backward_out(const Tensor& g, const Tensor& s, const Scalar& th, Tensor& gi) {
  threshold_bwd("aten::threshold_backward.grad_input", g, s, th, Mode::kOut, gi);
  return gi;
}

#define MLU_ACT_BWD(fn, aten, act)                                                                                  \
  Tensor mlu_##fn##_fn(const Tensor& g, const Tensor& v) { return activation_bwd("aten::" aten, act, g, v, Mode::kNew, kNone); } \
  Tensor& mlu_##fn##_out(const Tensor& g, const Tensor& v, Tensor& gi) {                                                  \
    activation_bwd("aten::" aten ".grad_input", act, g, v, Mode::kOut, gi);                                          \
    return gi;                                                                                                       \
  }

MLU_ACT_BWD(sigmoid_backward, "sigmoid_backward", mlu::ActivationGrad::kSigmoid)
MLU_ACT_BWD(tanh_backward, "tanh_backward", mlu::ActivationGrad::kTanh)
MLU_ACT_BWD(silu_backward, "silu_backward", mlu::ActivationGrad::kSilu)

Tensor mlu_gelu_backward_fn(const Tensor& g, const Tensor& s, c10::string_view a) {
  return activation_bwd("aten::gelu_backward", gelu_grad("aten::gelu_backward", a), g, s, Mode::kNew, kNone);
}
Tensor& mlu_gelu_backward_out(const Tensor& g, const Tensor& s, c10::string_view a, Tensor& gi) {
  activation_bwd("aten::gelu_backward.grad_input", gelu_grad("aten::gelu_backward.grad_input", a), g, s, Mode::kOut, gi);
  return gi;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // arithmetic
  m.impl("add.Tensor", TORCH_FN(mlu_add_t));
  m.impl("add_.Tensor", TORCH_FN(mlu_add_t_));
  m.impl("add.out", TORCH_FN(mlu_add_out));
  m.impl("add.Scalar", TORCH_FN(mlu_add_s));
  m.impl("add_.Scalar", TORCH_FN(mlu_add_s_));
  m.impl("add.Scalar_out", TORCH_FN(mlu_add_s_out));
  m.impl("sub.Tensor", TORCH_FN(mlu_sub_t));
  m.impl("sub_.Tensor", TORCH_FN(mlu_sub_t_));
  m.impl("sub.out", TORCH_FN(mlu_sub_out));
  m.impl("sub.Scalar", TORCH_FN(mlu_sub_s));
  m.impl("sub_.Scalar", TORCH_FN(mlu_sub_s_));
  m.impl("sub.Scalar_out", TORCH_FN(mlu_sub_s_out));
  m.impl("rsub.Tensor", TORCH_FN(mlu_rsub_t));
  m.impl("rsub.Tensor_out", TORCH_FN(mlu_rsub_t_out));
  m.impl("rsub.Scalar", TORCH_FN(mlu_rsub_s));
  m.impl("rsub.Scalar_out", TORCH_FN(mlu_rsub_s_out));
  m.impl("mul.Tensor", TORCH_FN(mlu_mul_t));
  m.impl("mul_.Tensor", TORCH_FN(mlu_mul_t_));
  m.impl("mul.out", TORCH_FN(mlu_mul_out));
  m.impl("mul.Scalar", TORCH_FN(mlu_mul_s));
  m.impl("mul_.Scalar", TORCH_FN(mlu_mul_s_));
  m.impl("mul.Scalar_out", TORCH_FN(mlu_mul_s_out));
  m.impl("div.Tensor", TORCH_FN(mlu_div_t));
  m.impl("div_.Tensor", TORCH_FN(mlu_div_t_));
  m.impl("div.out", TORCH_FN(mlu_div_out));
  m.impl("div.Scalar", TORCH_FN(mlu_div_s));
  m.impl("div_.Scalar", TORCH_FN(mlu_div_s_));
  m.impl("div.Scalar_out", TORCH_FN(mlu_div_s_out));
  m.impl("div.Tensor_mode", TORCH_FN(mlu_div_t_mode));
  m.impl("div_.Tensor_mode", TORCH_FN(mlu_div_t_mode_));
  m.impl("div.out_mode", TORCH_FN(mlu_div_out_mode));
  m.impl("div.Scalar_mode", TORCH_FN(mlu_div_s_mode));
  m.impl("div_.Scalar_mode", TORCH_FN(mlu_div_s_mode_));
  m.impl("div.Scalar_mode_out", TORCH_FN(mlu_div_s_mode_out));
  m.impl("pow.Tensor_Tensor", TORCH_FN(mlu_pow_tt));
  m.impl("pow.Tensor_Tensor_out", TORCH_FN(mlu_pow_tt_out));
  m.impl("pow_.Tensor", TORCH_FN(mlu_pow_tt_));
  m.impl("pow.Tensor_Scalar", TORCH_FN(mlu_pow_ts_fn));
  m.impl("pow.Tensor_Scalar_out", TORCH_FN(mlu_pow_ts_out));
  m.impl("pow_.Scalar", TORCH_FN(mlu_pow_ts_));
  m.impl("pow.Scalar", TORCH_FN(mlu_pow_st_fn));
  m.impl("pow.Scalar_out", TORCH_FN(mlu_pow_st_out));
  m.impl("maximum", TORCH_FN(mlu_maximum_fn));
  m.impl("maximum.out", TORCH_FN(mlu_maximum_out));
  m.impl("minimum", TORCH_FN(mlu_minimum_fn));
  m.impl("minimum.out", TORCH_FN(mlu_minimum_out));
  // unary
#define MLU_REGISTER_UNARY(fn, aten)          \
  m.impl(aten, TORCH_FN(mlu_##fn##_fn));            \
  m.impl(aten "_", TORCH_FN(mlu_##fn##_));          \
  m.impl(aten ".out", TORCH_FN(mlu_##fn##_out));
  MLU_REGISTER_UNARY(neg, "neg")
  MLU_REGISTER_UNARY(abs, "abs")
  MLU_REGISTER_UNARY(relu, "relu")
  MLU_REGISTER_UNARY(exp, "exp")
  MLU_REGISTER_UNARY(sin, "sin")
  MLU_REGISTER_UNARY(cos, "cos")
  MLU_REGISTER_UNARY(log, "log")
  MLU_REGISTER_UNARY(sqrt, "sqrt")
  MLU_REGISTER_UNARY(rsqrt, "rsqrt")
  MLU_REGISTER_UNARY(sigmoid, "sigmoid")
  MLU_REGISTER_UNARY(tanh, "tanh")
  MLU_REGISTER_UNARY(reciprocal, "reciprocal")
  MLU_REGISTER_UNARY(silu, "silu")
  MLU_REGISTER_UNARY(gelu, "gelu")
#undef MLU_REGISTER_UNARY
  // comparisons and logic
#define MLU_REGISTER_COMPARE(fn, aten)                     \
  m.impl(aten ".Tensor", TORCH_FN(mlu_##fn##_t));                \
  m.impl(aten "_.Tensor", TORCH_FN(mlu_##fn##_t_));              \
  m.impl(aten ".Tensor_out", TORCH_FN(mlu_##fn##_t_out));        \
  m.impl(aten ".Scalar", TORCH_FN(mlu_##fn##_s));                \
  m.impl(aten "_.Scalar", TORCH_FN(mlu_##fn##_s_));              \
  m.impl(aten ".Scalar_out", TORCH_FN(mlu_##fn##_s_out));
  MLU_REGISTER_COMPARE(eq, "eq")
  m.impl("isneginf.out", TORCH_FN(mlu_isneginf_out));
  m.impl("lerp.Scalar_out", TORCH_FN(mlu_lerp_scalar_out));
  m.impl("lerp.Tensor_out", TORCH_FN(mlu_lerp_tensor_out));
  m.impl("bitwise_and.Tensor_out", TORCH_FN(mlu_bitwise_and_out));
  m.impl("bitwise_or.Tensor_out", TORCH_FN(mlu_bitwise_or_out));
  m.impl("bitwise_xor.Tensor_out", TORCH_FN(mlu_bitwise_xor_out));
  m.impl("bitwise_left_shift.Tensor_out", TORCH_FN(mlu_bitwise_left_shift_out));
  m.impl("bitwise_right_shift.Tensor_out", TORCH_FN(mlu_bitwise_right_shift_out));
  m.impl("__lshift__.Tensor", TORCH_FN(mlu___lshift___tensor));
  m.impl("__lshift__.Scalar", TORCH_FN(mlu___lshift___scalar));
  m.impl("__rshift__.Tensor", TORCH_FN(mlu___rshift___tensor));
  m.impl("__rshift__.Scalar", TORCH_FN(mlu___rshift___scalar));
  m.impl("__ilshift__.Tensor", TORCH_FN(mlu___ilshift___tensor));
  m.impl("__ilshift__.Scalar", TORCH_FN(mlu___ilshift___scalar));
  m.impl("__irshift__.Tensor", TORCH_FN(mlu___irshift___tensor));
  m.impl("__irshift__.Scalar", TORCH_FN(mlu___irshift___scalar));
  m.impl("tril.out", TORCH_FN(mlu_tril_out));
  m.impl("triu.out", TORCH_FN(mlu_triu_out));
  m.impl("isposinf.out", TORCH_FN(mlu_isposinf_out));
  MLU_REGISTER_COMPARE(ne, "ne")
  MLU_REGISTER_COMPARE(lt, "lt")
  MLU_REGISTER_COMPARE(le, "le")
  MLU_REGISTER_COMPARE(gt, "gt")
  MLU_REGISTER_COMPARE(ge, "ge")
#undef MLU_REGISTER_COMPARE
#define MLU_REGISTER_LOGICAL(fn, aten)        \
  m.impl(aten, TORCH_FN(mlu_##fn##_fn));            \
  m.impl(aten "_", TORCH_FN(mlu_##fn##_));          \
  m.impl(aten ".out", TORCH_FN(mlu_##fn##_out));
  MLU_REGISTER_LOGICAL(logical_and, "logical_and")
  MLU_REGISTER_LOGICAL(logical_or, "logical_or")
  MLU_REGISTER_LOGICAL(logical_xor, "logical_xor")
  MLU_REGISTER_LOGICAL(logical_not, "logical_not")
#undef MLU_REGISTER_LOGICAL
  // selection
  m.impl("where.self", TORCH_FN(mlu_where_fn));
  m.impl("where.self_out", TORCH_FN(mlu_where_out));
  m.impl("masked_fill.Scalar", TORCH_FN(mlu_masked_fill_s));
  m.impl("masked_fill_.Scalar", TORCH_FN(mlu_masked_fill_s_));
  m.impl("masked_fill.Scalar_out", TORCH_FN(mlu_masked_fill_s_out));
  m.impl("masked_fill.Tensor", TORCH_FN(mlu_masked_fill_t));
  m.impl("masked_fill_.Tensor", TORCH_FN(mlu_masked_fill_t_));
  m.impl("masked_fill.Tensor_out", TORCH_FN(mlu_masked_fill_t_out));
  m.impl("clamp", TORCH_FN(mlu_clamp_fn));
  m.impl("clamp_", TORCH_FN(mlu_clamp_));
  m.impl("clamp.out", TORCH_FN(mlu_clamp_out));
  m.impl("clamp.Tensor", TORCH_FN(mlu_clamp_t));
  m.impl("clamp_.Tensor", TORCH_FN(mlu_clamp_t_));
  m.impl("clamp.Tensor_out", TORCH_FN(mlu_clamp_t_out));
  m.impl("arange.start_out", TORCH_FN(mlu_arange_out));
  m.impl("hardswish", TORCH_FN(mlu_hardswish));
  m.impl("hardswish_", TORCH_FN(mlu_hardswish_));
  m.impl("hardswish.out", TORCH_FN(mlu_hardswish_out));
  m.impl("hardswish_backward", TORCH_FN(mlu_hardswish_backward));
  m.impl("hardsigmoid", TORCH_FN(mlu_hardsigmoid));
  m.impl("hardsigmoid_", TORCH_FN(mlu_hardsigmoid_));
  m.impl("hardsigmoid.out", TORCH_FN(mlu_hardsigmoid_out));
  m.impl("hardsigmoid_backward", TORCH_FN(mlu_hardsigmoid_backward));
  m.impl("hardsigmoid_backward.grad_input", TORCH_FN(mlu_hardsigmoid_backward_out));
  m.impl("leaky_relu", TORCH_FN(mlu_leaky_relu));
  m.impl("leaky_relu_", TORCH_FN(mlu_leaky_relu_));
  m.impl("leaky_relu.out", TORCH_FN(mlu_leaky_relu_out));
  m.impl("leaky_relu_backward", TORCH_FN(mlu_leaky_relu_backward));
  m.impl("leaky_relu_backward.grad_input", TORCH_FN(mlu_leaky_relu_backward_out));
  m.impl("hardtanh", TORCH_FN(mlu_hardtanh));
  m.impl("hardtanh_", TORCH_FN(mlu_hardtanh_));
  m.impl("hardtanh.out", TORCH_FN(mlu_hardtanh_out));
  m.impl("hardtanh_backward", TORCH_FN(mlu_hardtanh_backward));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(mlu_hardtanh_backward_out));
  m.impl("clamp_min", TORCH_FN(mlu_clamp_min_fn));
  m.impl("clamp_min_", TORCH_FN(mlu_clamp_min_));
  m.impl("clamp_min.out", TORCH_FN(mlu_clamp_min_out));
  m.impl("clamp_min.Tensor", TORCH_FN(mlu_clamp_min_t));
  m.impl("clamp_min_.Tensor", TORCH_FN(mlu_clamp_min_t_));
  m.impl("clamp_min.Tensor_out", TORCH_FN(mlu_clamp_min_t_out));
  m.impl("clamp_max", TORCH_FN(mlu_clamp_max_fn));
  m.impl("clamp_max_", TORCH_FN(mlu_clamp_max_));
  m.impl("clamp_max.out", TORCH_FN(mlu_clamp_max_out));
  m.impl("clamp_max.Tensor", TORCH_FN(mlu_clamp_max_t));
  m.impl("clamp_max_.Tensor", TORCH_FN(mlu_clamp_max_t_));
  m.impl("clamp_max.Tensor_out", TORCH_FN(mlu_clamp_max_t_out));
  m.impl("addcmul", TORCH_FN(mlu_addcmul_fn));
  m.impl("addcmul_", TORCH_FN(mlu_addcmul_));
  m.impl("addcmul.out", TORCH_FN(mlu_addcmul_out));
  m.impl("addcdiv", TORCH_FN(mlu_addcdiv_fn));
  m.impl("addcdiv_", TORCH_FN(mlu_addcdiv_));
  m.impl("addcdiv.out", TORCH_FN(mlu_addcdiv_out));
  // activation gradients
  m.impl("threshold_backward", TORCH_FN(mlu_threshold_backward_fn));
  m.impl("threshold_backward.grad_input", TORCH_FN(mlu_threshold_backward_out));
  m.impl("sigmoid_backward", TORCH_FN(mlu_sigmoid_backward_fn));
  m.impl("sigmoid_backward.grad_input", TORCH_FN(mlu_sigmoid_backward_out));
  m.impl("tanh_backward", TORCH_FN(mlu_tanh_backward_fn));
  m.impl("tanh_backward.grad_input", TORCH_FN(mlu_tanh_backward_out));
  m.impl("silu_backward", TORCH_FN(mlu_silu_backward_fn));
  m.impl("silu_backward.grad_input", TORCH_FN(mlu_silu_backward_out));
  m.impl("gelu_backward", TORCH_FN(mlu_gelu_backward_fn));
  m.impl("gelu_backward.grad_input", TORCH_FN(mlu_gelu_backward_out));
  // fill_.Scalar and zero_ are in backend/tensor_ops.cpp (memset for byte patterns, fill_kernel else)
  m.impl("fill_.Tensor", TORCH_FN(mlu_fill_tensor_));
}

}  // namespace mlusim::bridge::ops
