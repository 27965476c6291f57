// ATen scans over libmlu's scan (scan.h: the doubling scan of rows in NRAM on the VFU, long rows
// chunk by chunk with a carry), and what is built on them:
//
//   cumsum.out               floating: in fp32 (fp16 inputs accumulate in fp32, each output
//                            rounded once, as torch's CPU kernel); NaN and inf reach only later
//                            positions. Integral and bool inputs give int64 (or `dtype`) and sum in
//                            int32 on the VFU, exact while every partial sum stays below 2^31: the
//                            bound L * max|x| is checked first (one host synchronisation; none for
//                            bool, whose bound is L), and a larger one raises NotImplementedError.
//   cumprod.out              floating only (fp32 running product); integer products (int64 in
//                            torch) raise NotImplementedError: the VFU's int32 would wrap
//   _cummax_helper,          values and int64 indices: the last of equal values, a NaN taken and
//   _cummin_helper           kept until the next NaN (torch's order); float32/float16 and the
//                            integer dtypes (int64 narrowed to int32 with a range check)
//
//   _logcumsumexp (+ out=)   m + log(cumsum(exp(x - m))) along dim, m the row's max (0 where it is
//                            not finite, so a row of -inf stays -inf and NaN propagates); the
//                            exponentials and the scan in fp32 (fp16 rounds once at the end).
//                            A prefix more than ~104 below its row's max underflows to -inf (the
//                            fp32 exponential's subnormal limit; torch's running logaddexp keeps it).
//
//   multinomial (+ out=)    inverse-CDF sampling: the rows' cumsum (fp32), uniforms from the device
//                            generator (uniform_) scaled by each row's total, searchsorted(right)
//                            for the first category whose cumulative weight exceeds them (zero
//                            weights are never drawn); without replacement and more than one
//                            sample, torch's exponential race: topk of p / q, q ~ Exp(1)
//
// The scanned dim is moved last and made contiguous (a device copy unless it already is), the
// results are moved back. cummax/cummin/logcumsumexp/cumsum functional forms are torch's
// composites or structured wrappers over these; backwards are torch's formulas.
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/min.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/topk.h>
#include <torch/library.h>

#include <string>

#include "mlusim/mlu/scan.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::ScalarType;
using at::Tensor;

// y = the `kind` scan of x along d (x's dtype; indices int64 when asked), fresh tensors.
Tensor scan_along(OpScope& op, mlu::ScanOp kind, const Tensor& x, int64_t d, Tensor* indices = nullptr) {
  const char* name = op.name();
  const Tensor moved = (x.dim() == 0 ? x.view({1}) : x.movedim(d, -1)).contiguous();
  Tensor y = empty_on(op.device(), moved.sizes(), moved.scalar_type());
  Tensor idx;
  mlu::TensorDesc idx_desc;
  if (indices != nullptr) {
    idx = empty_on(op.device(), moved.sizes(), at::kLong);
    idx_desc = desc(idx, name);
  }
  op.check(mlu::scan(op.handle(), kind, desc(moved, name), moved.data_ptr(), desc(y, name), y.data_ptr(),
                     indices != nullptr ? &idx_desc : nullptr, indices != nullptr ? idx.data_ptr() : nullptr),
           mlu::scan_op_name(kind));
  auto back = [&](const Tensor& t) { return x.dim() == 0 ? t.view({}) : t.movedim(-1, d); };
  if (indices != nullptr) *indices = back(idx);
  return back(y);
}

// The dtype a cumsum/cumprod result has (torch: `dtype`, else int64 for integral and bool inputs).
ScalarType cum_result_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  return dtype.value_or(at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                                      : self.scalar_type());
}

// The shared prologue of cumsum.out / cumprod.out: out on the device with the result dtype,
// resized to self's shape; returns the wrapped dim.
int64_t cum_prologue(OpScope& op, const Tensor& self, int64_t dim, ScalarType result, const Tensor& out) {
  check_on_device(out, op.device(), op.name(), "out");
  TORCH_CHECK(out.scalar_type() == result, op.name(), ": expected out of dtype ", result, ", got ",
              out.scalar_type());
  at::native::resize_output(out, self.sizes());
  return wrap_dim(dim, self.dim(), op.name());
}

Tensor& cumsum_out(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::cumsum.out", self);
  const char* name = op.name();
  const ScalarType in = self.scalar_type(), result = cum_result_dtype(self, dtype);
  TORCH_CHECK_NOT_IMPLEMENTED(in == at::kFloat || in == at::kHalf || in == at::kBFloat16 || at::isIntegralType(in, true),
                              name, ": dtype ", in,
                              " is not supported on device mlu (float32, float16, bfloat16, integers, bool)");
  const int64_t d = cum_prologue(op, self, dim, result, out);
  if (self.numel() == 0) return out;
  if (self.dim() == 0) return out.copy_(self);  // one element: itself
  Tensor x;
  if (at::isFloatingType(result)) {
    // 16-bit results scan in their dtype (fp32 running sums on chip, one rounding per output);
    // float64 results are computed in fp32.
    x = self.to(result == at::kHalf || result == at::kBFloat16 ? result : at::kFloat);
  } else {
    x = self.to(at::kLong);
    const int64_t l = self.size(d);
    const double bound = static_cast<double>(l) * (in == at::kBool ? 1.0 : at::amax(at::abs(x)).item<double>());
    TORCH_CHECK_NOT_IMPLEMENTED(bound < 2147483648.0, name, ": integer partial sums may reach ", bound,
                                " (L * max|x|), beyond 2^31, which the device's int32 scan cannot hold");
  }
  out.copy_(scan_along(op, mlu::ScanOp::kSum, x, d));  // converts to the result dtype
  return out;
}

Tensor& cumprod_out(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, Tensor& out) {
  OpScope op("aten::cumprod.out", self);
  const char* name = op.name();
  const ScalarType result = cum_result_dtype(self, dtype);
  TORCH_CHECK_NOT_IMPLEMENTED(result == at::kFloat || result == at::kHalf || result == at::kDouble, name,
                              ": result dtype ", result,
                              " is not supported on device mlu (float32 and float16: integer products would wrap "
                              "in the VFU's int32)");
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBFloat16, name, ": dtype BFloat16 is not supported on device mlu");
  const int64_t d = cum_prologue(op, self, dim, result, out);
  if (self.numel() == 0) return out;
  if (self.dim() == 0) return out.copy_(self);
  out.copy_(scan_along(op, mlu::ScanOp::kProd, self.to(result == at::kHalf ? at::kHalf : at::kFloat), d));
  return out;
}

template <mlu::ScanOp kKind>
void cum_extreme_helper(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  OpScope op(kKind == mlu::ScanOp::kMax ? "aten::_cummax_helper" : "aten::_cummin_helper", self);
  const int64_t d = wrap_dim(dim, self.dim(), op.name());
  Tensor idx;
  const Tensor v = scan_along(op, kKind, self, d, &idx);
  values.copy_(v);
  indices.copy_(idx);
}

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
  // exp(-inf) is 0 and log(0) is -inf on the VFU, so -inf terms and all -inf prefixes need no case.
  const Tensor e = run_elementwise_program({x, m}, "cast(exp(sub($0, " + shift + ")), f32)");
  const Tensor c = at::cumsum(e, dim);
  const Tensor r = run_elementwise_program({c, m, x}, "cast_like(add(log($0), " + shift + "), $2)");
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
  const Tensor p = self.dim() == 1 ? self.unsqueeze(0) : self;
  if (!replacement && n > 1) {
    // Without replacement: the exponential race (torch's own algorithm, Gumbel top-k): the n
    // largest p / q with q ~ Exp(1) drawn on the device; a zero weight is never among them while
    // every row has n positive weights (checked, as torch).
    const int64_t fewest = at::min(at::sum(at::gt(p, 0), -1)).item<int64_t>();
    TORCH_CHECK(fewest >= n, name, ": invalid multinomial distribution (with replacement=False, not enough "
                "non-negative category to sample)");
    Tensor q = at::empty(p.sizes(), p.options().dtype(at::kFloat));
    q.exponential_(1.0, gen);
    const Tensor keys = run_elementwise_program({p, q}, "div(cast($0, f32), $1)");
    const Tensor idx = std::get<1>(at::topk(keys, n, -1));
    return self.dim() == 1 ? idx.squeeze(0) : idx;
  }
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
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("_cummax_helper", TORCH_FN(cum_extreme_helper<mlu::ScanOp::kMax>));
  m.impl("_cummin_helper", TORCH_FN(cum_extreme_helper<mlu::ScanOp::kMin>));
  m.impl("multinomial", TORCH_FN(mlu_multinomial));
  m.impl("multinomial.out", TORCH_FN(mlu_multinomial_out));
  m.impl("_logcumsumexp", TORCH_FN(mlu_logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(mlu_logcumsumexp_out));
}

}  // namespace mlusim::bridge::ops
