// The five ATen ops of torch.nn.SyncBatchNorm (torch/nn/modules/_functions.py), built from device
// reductions and elementwise kernels: every step runs on the simulated cores, no kernel of their
// own. CUDA twins: aten/src/ATen/native/cuda/Normalization.cu{,h}. With C channels at dim 1 and
// the statistics taken over every other dim (N, and H, W, ... when present), for one rank:
//
//   batch_norm_stats(x, eps)              mean_c = E[x], invstd_c = 1 / sqrt(Var[x] + eps)  (biased)
//   batch_norm_gather_stats_with_counts   the ranks' (mean_r, invstd_r, n_r) merged:
//                                           N = sum n_r,  mean = sum n_r mean_r / N,
//                                           var = sum n_r (1/invstd_r^2 - eps + (mean_r - mean)^2) / N
//                                         (the parallel-variance identity; CUDA merges with Welford
//                                         steps, the same value in exact arithmetic), running
//                                         stats: rm = (1-m) rm + m mean, rv = (1-m) rv + m var N/(N-1)
//   batch_norm_elemt                      y = (x - mean) invstd w + b
//   batch_norm_backward_reduce            sum_dy = sum dy, sum_dy_xmu = sum dy (x - mean),
//                                         grad_w = sum_dy_xmu invstd, grad_b = sum_dy
//   batch_norm_backward_elemt             (sum_dy, sum_dy_xmu all-reduced over ranks, N = sum count)
//                                         dx = (dy - sum_dy/N - (x - mean) invstd^2 sum_dy_xmu/N) invstd w
//
// Statistics are fp32 (mean/invstd take the input's dtype only when it is fp32 or fp64, as CUDA's
// accumulate type); the counts never leave the device, so nothing here synchronises the host.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/var.h>
#include <torch/library.h>

#include <vector>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

// The statistics' dims (all but the channels, dim 1); TORCH_CHECK naming `op` for input < 2-d.
std::vector<int64_t> reduce_dims(const Tensor& input, const char* op) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected an input with channels at dim 1 (at least 2-d), got ",
              input.dim(), " dimension(s)");
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel [C] vector as a tensor that broadcasts against `input` ([1, C, 1, ...]).
Tensor per_channel(const Tensor& v, const Tensor& input) {
  std::vector<int64_t> shape(static_cast<std::size_t>(input.dim()), 1);
  shape[1] = input.size(1);
  return v.reshape(shape);
}

bool present(const OptTensor& t) { return t.has_value() && t->defined(); }

// invstd x weight (weight optional) in dtype `acc`: the per-channel factor of y and of dx.
Tensor scale_of(const Tensor& invstd, const OptTensor& weight, at::ScalarType acc) {
  return present(weight) ? at::mul(invstd, weight->to(acc)) : invstd;
}

// x - mean in dtype `acc`, the mean broadcast over the channels' dim.
Tensor centered(const Tensor& input, const Tensor& mean) {
  return at::sub(input.to(mean.scalar_type()), per_channel(mean, input));
}

at::ScalarType stats_dtype(const Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

std::tuple<Tensor, Tensor> mlu_batch_norm_stats(const Tensor& input, double eps) {
  OpScope op("aten::batch_norm_stats", input);
  const auto dims = reduce_dims(input, op.name());
  const Tensor x = input.to(stats_dtype(input));
  const Tensor mean = at::mean(x, dims);
  const Tensor var = at::var(x, dims, /*unbiased=*/false);
  return {mean, at::rsqrt(at::add(var, eps))};
}

std::tuple<Tensor, Tensor> mlu_batch_norm_gather_stats_with_counts(const Tensor& input, const Tensor& mean,
                                                                   const Tensor& invstd, const OptTensor& running_mean,
                                                                   const OptTensor& running_var, double momentum,
                                                                   double eps, const Tensor& counts) {
  OpScope op("aten::batch_norm_gather_stats_with_counts", input);
  TORCH_CHECK(mean.dim() == 2 && invstd.sizes() == mean.sizes(), op.name(),
              ": mean and invstd must be [ranks, channels] of the same shape, got ", mean.sizes(), " and ",
              invstd.sizes());
  TORCH_CHECK(counts.numel() == mean.size(0), op.name(), ": counts has ", counts.numel(), " entries for ",
              mean.size(0), " ranks");
  const Tensor n = counts.to(mean.scalar_type()).reshape({-1, 1});  // [ranks, 1]
  const Tensor total = at::sum(n);
  const Tensor merged_mean = at::div(at::sum(at::mul(n, mean), {0}), total);
  // Each rank's biased variance back from its invstd, plus its mean's spread around the merged one.
  const Tensor rank_var = at::sub(at::reciprocal(at::mul(invstd, invstd)), eps);
  const Tensor spread = at::sub(mean, merged_mean);
  const Tensor merged_var = at::div(at::sum(at::mul(n, at::add(rank_var, at::mul(spread, spread))), {0}), total);
  if (present(running_mean))
    running_mean->copy_(at::add(at::mul(*running_mean, 1.0 - momentum), at::mul(merged_mean, momentum)));
  if (present(running_var)) {
    const Tensor unbiased = at::div(at::mul(merged_var, total), at::sub(total, 1.0));
    running_var->copy_(at::add(at::mul(*running_var, 1.0 - momentum), at::mul(unbiased, momentum)));
  }
  return {merged_mean, at::rsqrt(at::add(merged_var, eps))};
}

Tensor mlu_batch_norm_elemt(const Tensor& input, const OptTensor& weight, const OptTensor& bias, const Tensor& mean,
                            const Tensor& invstd, double /*eps: already in invstd*/) {
  OpScope op("aten::batch_norm_elemt", input);
  (void)reduce_dims(input, op.name());
  Tensor y = at::mul(centered(input, mean), per_channel(scale_of(invstd, weight, mean.scalar_type()), input));
  if (present(bias)) y = at::add(y, per_channel(*bias, input));
  return y.to(input.scalar_type());
}

std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& input,
                                                                          const Tensor& mean, const Tensor& invstd,
                                                                          const OptTensor& weight, bool input_g,
                                                                          bool weight_g, bool bias_g) {
  OpScope op("aten::batch_norm_backward_reduce", input);
  const auto dims = reduce_dims(input, op.name());
  TORCH_CHECK(grad_out.sizes() == input.sizes(), op.name(), ": grad_out ", grad_out.sizes(),
              " and input ", input.sizes(), " must have the same shape");
  const at::ScalarType acc = mean.scalar_type();
  const Tensor dy = grad_out.to(acc);
  const Tensor xmu = centered(input, mean);
  Tensor sum_dy, sum_dy_xmu, grad_weight, grad_bias;
  if (input_g || bias_g) sum_dy = at::sum(dy, dims);
  if (input_g || weight_g) sum_dy_xmu = at::sum(at::mul(dy, xmu), dims);
  const bool has_weight = present(weight);
  if (weight_g && has_weight) grad_weight = at::mul(sum_dy_xmu, invstd).to(weight->scalar_type());
  if (bias_g && has_weight) grad_bias = sum_dy.to(weight->scalar_type());
  // As CUDA: the sums only when the input's gradient is wanted (the caller all-reduces them).
  if (!input_g) sum_dy = sum_dy_xmu = Tensor();
  return {sum_dy, sum_dy_xmu, grad_weight, grad_bias};
}

Tensor mlu_batch_norm_backward_elemt(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                     const Tensor& invstd, const OptTensor& weight, const Tensor& sum_dy,
                                     const Tensor& sum_dy_xmu, const Tensor& count) {
  OpScope op("aten::batch_norm_backward_elemt", input);
  (void)reduce_dims(input, op.name());
  const at::ScalarType acc = mean.scalar_type();
  const Tensor total = at::sum(count.to(acc));
  const Tensor mean_dy = at::div(sum_dy, total);
  const Tensor mean_dy_xmu = at::div(sum_dy_xmu, total);
  const Tensor scale = scale_of(invstd, weight, acc);
  const Tensor proj = at::mul(centered(input, mean), per_channel(at::mul(at::mul(invstd, invstd), mean_dy_xmu), input));
  const Tensor dx = at::mul(at::sub(at::sub(grad_out.to(acc), per_channel(mean_dy, input)), proj),
                            per_channel(scale, input));
  return dx.to(input.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_stats", TORCH_FN(mlu_batch_norm_stats));
  m.impl("batch_norm_gather_stats_with_counts", TORCH_FN(mlu_batch_norm_gather_stats_with_counts));
  m.impl("batch_norm_elemt", TORCH_FN(mlu_batch_norm_elemt));
  m.impl("batch_norm_backward_reduce", TORCH_FN(mlu_batch_norm_backward_reduce));
  m.impl("batch_norm_backward_elemt", TORCH_FN(mlu_batch_norm_backward_elemt));
}

}  // namespace mlusim::bridge::ops
