// Complex-number ATen ops on the device, computed on real views. A complex tensor is stored as
// interleaved (real, imaginary) pairs of its component dtype (backend/tensor_ops.cpp, which also
// has the views view_as_real / view_as_complex, copies and fills); the VFU has no complex
// arithmetic, so each op here is real kernels over those pairs:
//
//   conj_physical   out = a - ib: the pairs copied, the imaginary parts negated (real tensors: a copy)
//   complex         out = real + i imag (broadcast): two strided copies into the pairs
//   polar           out = abs cos(angle) + i abs sin(angle): one elementwise program per part
//
// CUDA twins: UnaryComplexKernels.cu (conj), ComplexKernel.cu (complex, polar). Dtypes: the
// component dtypes float32, float16 and float64 (storage; polar computes float64 through
// narrow_float64's float32).
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

Tensor& mlu_conj_physical_out(const Tensor& self, Tensor& out) {
  constexpr const char* kName = "aten::conj_physical.out";
  OpScope op(kName, self);
  check_out_dtype(out, self.scalar_type(), kName);
  prepare_out(out, op.device(), self.sizes(), kName);
  if (out.numel() == 0) return out;
  if (!self.is_complex()) {
    if (!out.is_same(self)) copy_into(op, self, out);
    return out;
  }
  TORCH_CHECK(!self.is_conj() && !out.is_conj(), kName, ": conjugate views reach this kernel resolved");
  const Tensor out_pairs = at::view_as_real(out);
  if (!out.is_same(self)) copy_into(op, at::view_as_real(self), out_pairs);
  out_pairs.select(-1, 1).neg_();
  return out;
}

// The component dtype both parts must share, and the complex dtype of the result (torch's checks:
// "Expected object of scalar type Float but got scalar type Double for second argument").
at::ScalarType complex_result_dtype(const Tensor& a, const Tensor& b, const char* name, const char* a_name,
                                    const char* b_name) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), name, ": Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  const at::ScalarType t = a.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kDouble || t == at::kHalf, name, ": Expected both inputs (", a_name, ", ",
              b_name, ") to be Half, Float or Double tensors but got ", t);
  return c10::toComplexType(t);
}

// The pairs of `out` ([..., 2] real view), resized to the broadcast shape of a and b.
Tensor prepare_complex_out(const Tensor& a, const Tensor& b, Tensor& out, at::ScalarType want, const char* name,
                           const c10::Device& device) {
  check_on_device(b, device, name, "second input");
  check_out_dtype(out, want, name);
  prepare_out(out, device, at::infer_size(a.sizes(), b.sizes()), name);
  return at::view_as_real(out);
}

Tensor& mlu_complex_out(const Tensor& real, const Tensor& imag, Tensor& out) {
  constexpr const char* kName = "aten::complex.out";
  OpScope op(kName, real);
  const at::ScalarType want = complex_result_dtype(real, imag, kName, "real", "imag");
  const Tensor pairs = prepare_complex_out(real, imag, out, want, kName, op.device());
  if (out.numel() == 0) return out;
  copy_into(op, real.expand(out.sizes()), pairs.select(-1, 0));
  copy_into(op, imag.expand(out.sizes()), pairs.select(-1, 1));
  return out;
}

Tensor& mlu_polar_out(const Tensor& abs, const Tensor& angle, Tensor& out) {
  constexpr const char* kName = "aten::polar.out";
  OpScope op(kName, abs);
  const at::ScalarType want = complex_result_dtype(abs, angle, kName, "abs", "angle");
  const Tensor pairs = prepare_complex_out(abs, angle, out, want, kName, op.device());
  if (out.numel() == 0) return out;
  const bool wide = abs.scalar_type() == at::kDouble;
  const Tensor r = wide ? narrow_float64(abs, kName) : abs;
  const Tensor theta = wide ? narrow_float64(angle, kName) : angle;
  copy_into(op, run_elementwise_program({r, theta}, "mul($0, cos($1))").expand(out.sizes()), pairs.select(-1, 0));
  copy_into(op, run_elementwise_program({r, theta}, "mul($0, sin($1))").expand(out.sizes()), pairs.select(-1, 1));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical.out", TORCH_FN(mlu_conj_physical_out));
  m.impl("complex.out", TORCH_FN(mlu_complex_out));
  m.impl("polar.out", TORCH_FN(mlu_polar_out));
}

}  // namespace mlusim::bridge::ops
