// Margin losses built from device kernels (gather / index_select / scatter, programs, sums), as
// torch's CPU kernels define them (LossMultiMargin.cpp, LossMultiLabelMargin.cpp); CUDA twins
// MultiMarginLoss.cu, MultilabelMarginCriterion.cu. C = classes, y = the target class:
//
//   multi_margin_loss   l_n = sum_{i != y} w_y max(0, margin - x_y + x_i)^p / C   (p = 1 or 2)
//     backward          d l / d x_i = w_y g (p = 1: 1, p = 2: 2 z_i) where z_i > 0 (i != y),
//                       d l / d x_y = - the sum of those; g = 1 / C (/ N for the mean)
//   multilabel_margin_loss  targets are the row's class indices up to the first -1 (is_target
//     marks them); l_n = sum_{j target} sum_{i not target} max(0, 1 - x_j + x_i) / C (a repeated
//     target counts twice, as the CPU's loop); backward: +g at i and -g at j for every pair with a
//     positive term (the -g's scatter_added to the target positions).
// Reductions: none (per sample), mean, sum; float32 / float16 (fp32 arithmetic, one rounding).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumprod.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scatter.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/op_support.h"
#include "ops/program_literal.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

std::string lit(double v) { return program_literal(v); }

void check_float(const Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ",
                              t.scalar_type(), " is not supported on device mlu (float32, float16)");
}

// The per-sample losses [N] (fp32) reduced as `reduction`, in self's dtype; shape [] unless none
// (then [N], or [] for an unbatched input).
Tensor reduce_loss(const Tensor& per_sample, int64_t reduction, const Tensor& self, bool batched) {
  Tensor out;
  if (reduction == at::Reduction::None) out = batched ? per_sample : per_sample.reshape({});
  else if (reduction == at::Reduction::Sum) out = at::sum(per_sample);
  else out = run_elementwise_program({at::sum(per_sample)}, "div($0, " + lit(static_cast<double>(per_sample.numel())) + ")");
  return out.to(self.scalar_type());
}

// The factor of every sample's gradient: grad_output (per sample for none) times 1 / C (/ N for mean).
Tensor grad_factor(const Tensor& grad_output, int64_t reduction, int64_t n, int64_t c) {
  const double g = reduction == at::Reduction::Mean ? 1.0 / (static_cast<double>(n) * static_cast<double>(c))
                                                    : 1.0 / static_cast<double>(c);
  const Tensor go = reduction == at::Reduction::None ? grad_output.reshape({n, 1}) : grad_output.reshape({1, 1});
  return run_elementwise_program({go}, "mul(cast($0, f32), " + lit(g) + ")");
}

// ---- multi_margin_loss --------------------------------------------------------------------------------

struct MultiMargin {
  Tensor x, target, xt, onehot, wt;  // x [N, C]; xt, wt fp32 [N, 1]; onehot bool [N, C]
  int64_t n, c;
  bool batched;
};

MultiMargin multi_margin_setup(const char* name, OpScope& op, const Tensor& self, const Tensor& target,
                               const c10::Scalar& p, const std::optional<Tensor>& weight) {
  check_on_device(target, op.device(), name, "target");
  check_float(self, name);
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, name, ": only p == 1 and p == 2 supported");
  TORCH_CHECK(self.dim() == 0 || (self.dim() == 1 && self.numel() > 0) || (self.dim() == 2 && self.size(1) > 0), name,
              ": Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  MultiMargin m;
  m.batched = self.dim() == 2;
  m.x = self.dim() == 2 ? self : self.reshape({1, -1});
  m.n = m.x.size(0);
  m.c = m.x.size(1);
  TORCH_CHECK(target.numel() == m.n && target.dim() <= 1, name, ": inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
  TORCH_CHECK(target.scalar_type() == at::kLong, name, ": expected target of dtype int64, got ", target.scalar_type());
  m.target = target.reshape({m.n, 1});
  // A target outside [0, C) faults the gather kernel, as the CPU raises for it.
  m.xt = at::gather(m.x, 1, m.target).to(at::kFloat);
  const Tensor cls = at::arange(m.c, target.options()).view({1, m.c});
  m.onehot = run_elementwise_program({cls, m.target}, "eq($0, $1)");
  const bool w = weight.has_value() && weight->defined();
  if (w) {
    check_on_device(*weight, op.device(), name, "weight");
    TORCH_CHECK(weight->numel() == m.c && weight->dim() == 1, name, ": inconsistent weight size, expected ", m.c,
                " but got ", weight->sizes());
  }
  m.wt = w ? at::index_select(*weight, 0, m.target.reshape({-1})).to(at::kFloat).view({m.n, 1})
           : at::ones({m.n, 1}, self.options().dtype(at::kFloat));
  return m;
}

std::string margin_z(const c10::Scalar& margin) { return "z = add(sub(" + lit(margin.toDouble()) + ", $1), cast($0, f32)); "; }

Tensor mlu_multi_margin_loss(const Tensor& self, const Tensor& target, const c10::Scalar& p, const c10::Scalar& margin,
                             const std::optional<Tensor>& weight, int64_t reduction) {
  const char* name = "aten::multi_margin_loss";
  OpScope op(name, self);
  const MultiMargin m = multi_margin_setup(name, op, self, target, p, weight);
  const std::string h = p.toLong() == 1 ? "z" : "mul(z, z)";
  const Tensor terms = run_elementwise_program(
      {m.x, m.xt, m.onehot, m.wt}, margin_z(margin) + "mul(where(logical_and(gt(z, 0.0), logical_not($2)), " + h + ", 0.0), $3)");
  const Tensor per_sample =
      run_elementwise_program({at::sum(terms, {1})}, "div($0, " + lit(static_cast<double>(m.c)) + ")");
  return reduce_loss(per_sample, reduction, self, m.batched);
}
Tensor& mlu_multi_margin_loss_out(const Tensor& self, const Tensor& target, const c10::Scalar& p,
                                  const c10::Scalar& margin, const std::optional<Tensor>& weight, int64_t reduction,
                                  Tensor& out) {
  return write_out(mlu_multi_margin_loss(self, target, p, margin, weight, reduction), out, "aten::multi_margin_loss");
}

Tensor mlu_multi_margin_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                      const c10::Scalar& p, const c10::Scalar& margin,
                                      const std::optional<Tensor>& weight, int64_t reduction) {
  const char* name = "aten::multi_margin_loss_backward";
  OpScope op(name, self);
  const MultiMargin m = multi_margin_setup(name, op, self, target, p, weight);
  const Tensor g = grad_factor(grad_output, reduction, m.n, m.c);
  const std::string dh = p.toLong() == 1 ? "1.0" : "mul(z, 2.0)";
  // d l / d x_i for i != y; the target's entry is minus their row sum.
  const Tensor others = run_elementwise_program(
      {m.x, m.xt, m.onehot, m.wt, g},
      margin_z(margin) + "mul(mul(where(logical_and(gt(z, 0.0), logical_not($2)), " + dh + ", 0.0), $3), $4)");
  const Tensor grad = run_elementwise_program({others, m.onehot, at::sum(others, {1}, true)}, "where($1, neg($2), $0)");
  return grad.to(self.scalar_type()).view(self.sizes());
}
Tensor& mlu_multi_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                           const c10::Scalar& p, const c10::Scalar& margin,
                                           const std::optional<Tensor>& weight, int64_t reduction, Tensor& gi) {
  return write_out(mlu_multi_margin_loss_backward(grad_output, self, target, p, margin, weight, reduction), gi,
                   "aten::multi_margin_loss_backward");
}

// ---- multilabel_margin_loss ---------------------------------------------------------------------------

struct MultiLabel {
  Tensor x, valid, index;  // x [N, C]; valid bool [N, C] (target j before the first -1); index [N, C] (C if not)
  int64_t n, c;
  bool batched;
};

MultiLabel multilabel_setup(const char* name, OpScope& op, const Tensor& self, const Tensor& target) {
  check_on_device(target, op.device(), name, "target");
  check_float(self, name);
  TORCH_CHECK(target.scalar_type() == at::kLong, name, ": expected target of dtype int64, got ", target.scalar_type());
  TORCH_CHECK((self.dim() <= 1 && target.dim() <= 1) || (self.dim() == 2 && target.dim() == 2), name,
              ": inconsistent input ", self.sizes(), " and target ", target.sizes());
  TORCH_CHECK(self.sizes() == target.sizes(), name, ": inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
  MultiLabel m;
  m.batched = self.dim() == 2;
  m.x = self.reshape({self.dim() == 2 ? self.size(0) : 1, -1});
  m.n = m.x.size(0);
  m.c = m.x.size(1);
  const Tensor t = target.reshape({m.n, m.c});
  m.valid = at::cumprod(run_elementwise_program({t}, "cast(ne($0, -1), f32)"), 1).to(at::kBool);  // 0/1 products: exact
  m.index = run_elementwise_program({t, m.valid}, "where($1, $0, " + std::to_string(m.c) + ")");
  return m;
}

// is_target [N, C + 1] as fp32 (the extra column takes the entries past the first -1).
Tensor is_target_of(const MultiLabel& m, const Tensor& like) {
  return at::zeros({m.n, m.c + 1}, like.options().dtype(at::kFloat)).scatter(1, m.index, 1.0);
}

// The pairs with a positive term: [N, C (j), C (i)] fp32 0/1.
Tensor positive_pairs(const MultiLabel& m, const Tensor& is_target) {
  const Tensor xt = at::gather(at::cat({m.x.to(at::kFloat), at::zeros({m.n, 1}, m.x.options().dtype(at::kFloat))}, 1), 1,
                               m.index);  // x at each target (0 past the first -1)
  return run_elementwise_program(
      {xt.unsqueeze(2), m.x.unsqueeze(1), m.valid.unsqueeze(2), is_target.narrow(1, 0, m.c).unsqueeze(1)},
      "z = add(sub(1.0, $0), cast($1, f32)); where(logical_and(logical_and($2, eq($3, 0.0)), gt(z, 0.0)), z, 0.0)");
}

std::tuple<Tensor, Tensor> mlu_multilabel_margin_loss_forward(const Tensor& self, const Tensor& target,
                                                              int64_t reduction) {
  const char* name = "aten::multilabel_margin_loss_forward";
  OpScope op(name, self);
  const MultiLabel m = multilabel_setup(name, op, self, target);
  const Tensor is_target = is_target_of(m, self);
  const Tensor terms = positive_pairs(m, is_target);
  const Tensor per_sample =
      run_elementwise_program({at::sum(terms, {1, 2})}, "div($0, " + lit(static_cast<double>(m.c)) + ")");
  return {reduce_loss(per_sample, reduction, self, m.batched),
          is_target.narrow(1, 0, m.c).to(self.scalar_type()).reshape(target.sizes())};
}
std::tuple<Tensor&, Tensor&> mlu_multilabel_margin_loss_forward_out(const Tensor& self, const Tensor& target,
                                                                    int64_t reduction, Tensor& output, Tensor& is_target) {
  auto [o, t] = mlu_multilabel_margin_loss_forward(self, target, reduction);
  write_out(o, output, "aten::multilabel_margin_loss_forward");
  write_out(t, is_target, "aten::multilabel_margin_loss_forward");
  return {output, is_target};
}

Tensor mlu_multilabel_margin_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                           int64_t reduction, const Tensor& /*is_target*/) {
  const char* name = "aten::multilabel_margin_loss_backward";
  OpScope op(name, self);
  const MultiLabel m = multilabel_setup(name, op, self, target);
  const Tensor pos = run_elementwise_program({positive_pairs(m, is_target_of(m, self))}, "cast(gt($0, 0.0), f32)");
  const Tensor g = grad_factor(grad_output, reduction, m.n, m.c);
  // +g at every non-target i per positive pair, -g at the pair's target j.
  const Tensor plus = at::sum(pos, {1});                            // [N, C] over j
  const Tensor minus = at::zeros({m.n, m.c + 1}, plus.options())
                           .scatter_add(1, m.index, at::sum(pos, {2}))  // [N, C] over i, to target j
                           .narrow(1, 0, m.c);
  const Tensor grad = run_elementwise_program({plus, minus, g}, "mul(sub($0, $1), $2)");
  return grad.to(self.scalar_type()).view(self.sizes());
}
Tensor& mlu_multilabel_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                                int64_t reduction, const Tensor& is_target, Tensor& gi) {
  return write_out(mlu_multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target), gi,
                   "aten::multilabel_margin_loss_backward");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", TORCH_FN(mlu_multi_margin_loss));
  m.impl("multi_margin_loss.out", TORCH_FN(mlu_multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(mlu_multi_margin_loss_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(mlu_multi_margin_loss_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(mlu_multilabel_margin_loss_forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(mlu_multilabel_margin_loss_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(mlu_multilabel_margin_loss_backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(mlu_multilabel_margin_loss_backward_out));
}

}  // namespace mlusim::bridge::ops
