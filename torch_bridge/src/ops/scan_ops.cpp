// ATen scans composed of the device's cumsum (reduce.h: a blocked scan as GEMMs with a triangular
// ones matrix) and elementwise programs:
//
//   _logcumsumexp (+ out=)   m + log(cumsum(exp(x - m))) along dim, m the row's max (0 where it is
//                            not finite, so a row of -inf stays -inf and NaN propagates); the
//                            exponentials and the scan in fp32 (fp16 rounds once at the end).
//                            A prefix more than ~87 below its row's max underflows to -inf (torch's
//                            running logaddexp keeps it). A +inf input is NaN for the positions
//                            before it: the cumsum's GEMM multiplies it by the ones matrix's zeros.
//
// logcumsumexp is torch's composite over _logcumsumexp; its backward is torch's formula.
#include <ATen/core/Tensor.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/cumsum.h>
#include <torch/library.h>

#include <string>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

Tensor mlu_logcumsumexp(const Tensor& self, int64_t dim) {
  const char* name = "aten::_logcumsumexp";
  OpScope op(name, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat || self.scalar_type() == at::kHalf, name,
                              ": dtype ", self.scalar_type(), " is not supported on device mlu (float32, float16)");
  dim = wrap_dim(dim, self.dim(), name);
  if (self.numel() == 0) return empty_on(op.device(), self.sizes(), self.scalar_type());
  const Tensor x = self.dim() == 0 ? self.view({1}) : self;
  const Tensor m = at::amax(x, {dim}, true);
  const std::string shift = "where(lt(abs($1), inf), $1, 0.0)";
  // -inf terms are exact zeros and an all-zero prefix is -inf (the VFU's exp and log saturate
  // near the smallest normal float instead).
  const Tensor e = run_elementwise_program({x, m}, "where(eq($0, -inf), 0.0, cast(exp(sub($0, " + shift + ")), f32))");
  const Tensor c = at::cumsum(e, dim);
  const Tensor r =
      run_elementwise_program({c, m, x}, "cast_like(where(eq($0, 0.0), -inf, add(log($0), " + shift + ")), $2)");
  return self.dim() == 0 ? r.squeeze(0) : r;
}
Tensor& mlu_logcumsumexp_out(const Tensor& self, int64_t dim, Tensor& out) {
  return write_out(mlu_logcumsumexp(self, dim), out, "aten::_logcumsumexp");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_logcumsumexp", TORCH_FN(mlu_logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(mlu_logcumsumexp_out));
}

}  // namespace mlusim::bridge::ops
