// ATen scans (and sampling by one) composed of the device's cumsum (reduce.h: a blocked scan as GEMMs with a triangular
// ones matrix) and elementwise programs:
//
//   _logcumsumexp (+ out=)   m + log(cumsum(exp(x - m))) along dim, m the row's max (0 where it is
//                            not finite, so a row of -inf stays -inf and NaN propagates); the
//                            exponentials and the scan in fp32 (fp16 rounds once at the end).
//                            A prefix more than ~87 below its row's max underflows to -inf (torch's
//                            running logaddexp keeps it). A +inf input is NaN for the positions
//                            before it: the cumsum's GEMM multiplies it by the ones matrix's zeros.
//
//   multinomial (+ out=)    inverse-CDF sampling: the rows' cumsum (fp32), uniforms from the device
//                            generator (uniform_) scaled by each row's total, searchsorted(right)
//                            for the first category whose cumulative weight exceeds them (zero
//                            weights are never drawn); without replacement only one sample per row
//
// logcumsumexp is torch's composite over _logcumsumexp; its backward is torch's formula.
#include <ATen/core/Tensor.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/searchsorted.h>
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

Tensor mlu_multinomial(const Tensor& self, c10::SymInt num_samples_sym, bool replacement,
                       std::optional<at::Generator> gen) {
  const char* name = "aten::multinomial";
  OpScope op(name, self);
  const int64_t n = num_samples_sym.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(self.dim() == 1 || self.dim() == 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  TORCH_CHECK(n > 0, "cannot sample n_sample <= 0 samples");
  const int64_t categories = self.size(-1);
  TORCH_CHECK(replacement || n <= categories, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK_NOT_IMPLEMENTED(replacement || n == 1, name,
                              ": sampling more than one category per row without replacement is not implemented on "
                              "device mlu (num_samples=1 or replacement=True)");
  const Tensor p = self.dim() == 1 ? self.unsqueeze(0) : self;
  const Tensor cdf = at::cumsum(p, -1, at::kFloat);
  Tensor u = at::empty({p.size(0), n}, p.options().dtype(at::kFloat));
  u.uniform_(0.0, 1.0, gen);
  const Tensor target = run_elementwise_program({u, cdf.narrow(-1, categories - 1, 1)}, "mul($0, $1)");
  Tensor idx = at::searchsorted(cdf.contiguous(), target, /*out_int32=*/false, /*right=*/true);
  idx = run_elementwise_program({idx}, "minimum($0, " + std::to_string(categories - 1) + ")");
  return self.dim() == 1 ? idx.squeeze(0) : idx;
}
Tensor& mlu_multinomial_out(const Tensor& self, c10::SymInt num_samples, bool replacement,
                            std::optional<at::Generator> gen, Tensor& out) {
  return write_out(mlu_multinomial(self, std::move(num_samples), replacement, std::move(gen)), out, "aten::multinomial");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multinomial", TORCH_FN(mlu_multinomial));
  m.impl("multinomial.out", TORCH_FN(mlu_multinomial_out));
  m.impl("_logcumsumexp", TORCH_FN(mlu_logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(mlu_logcumsumexp_out));
}

}  // namespace mlusim::bridge::ops
