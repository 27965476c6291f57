// The two ops torch.amp.GradScaler("mlu") needs (CUDA twin: aten/src/ATen/native/cuda/
// AmpKernels.cu), composed of this bridge's device kernels so that neither reads a value on the
// host: GradScaler's step stays asynchronous, as on CUDA.
//
//   _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale):
//       found_inf = max(found_inf, any(!isfinite(g)) for each g); g *= inv_scale
//   _amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval):
//       found_inf > 0:  scale *= backoff, tracker = 0
//       otherwise:      tracker += 1; at tracker == interval: scale *= growth (if finite), tracker = 0
#include <ATen/ops/add.h>
#include <ATen/ops/any.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

void check_scalar_tensor(const OpScope& op, const Tensor& t, at::ScalarType dtype, const char* what) {
  check_on_device(t, op.device(), op.name(), what);
  TORCH_CHECK(t.numel() == 1 && t.scalar_type() == dtype, op.name(), ": ", what, " must be a one-element ", dtype,
              " tensor, got ", t.scalar_type(), t.sizes());
}

void non_finite_check_and_unscale_(at::TensorList grads, Tensor& found_inf, const Tensor& inv_scale) {
  if (grads.empty()) return;
  OpScope op("aten::_amp_foreach_non_finite_check_and_unscale_", grads[0]);
  check_scalar_tensor(op, found_inf, at::kFloat, "found_inf");
  check_scalar_tensor(op, inv_scale, at::kFloat, "inv_scale");
  for (const Tensor& g : grads) {
    if (!g.defined() || g.numel() == 0) continue;
    check_on_device(g, op.device(), op.name(), "a gradient");
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), op.name(), ": gradients must be floating, got ", g.scalar_type());
    const Tensor bad = at::any(at::logical_not(at::isfinite(g))).to(at::kFloat).reshape(found_inf.sizes());
    found_inf.copy_(at::maximum(found_inf, bad));
    const_cast<Tensor&>(g).mul_(inv_scale.reshape({}).to(g.scalar_type()));
  }
}

Tensor& update_scale_(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                      double backoff_factor, std::int64_t growth_interval) {
  OpScope op("aten::_amp_update_scale_", scale);
  check_scalar_tensor(op, scale, at::kFloat, "scale");
  check_scalar_tensor(op, growth_tracker, at::kInt, "growth_tracker");
  check_scalar_tensor(op, found_inf, at::kFloat, "found_inf");
  const Tensor found = at::gt(found_inf, 0);
  const Tensor counted = at::where(found, at::zeros_like(growth_tracker), at::add(growth_tracker, 1));
  const Tensor grown = at::mul(scale, growth_factor);
  const Tensor reached = at::logical_and(at::logical_not(found), at::eq(counted, growth_interval));
  const Tensor grow = at::logical_and(reached, at::isfinite(grown));
  scale.copy_(at::where(found, at::mul(scale, backoff_factor), at::where(grow, grown, scale)));
  growth_tracker.copy_(at::where(reached, at::zeros_like(counted), counted));
  return scale;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(non_finite_check_and_unscale_));
  m.impl("_amp_update_scale_", TORCH_FN(update_scale_));
}

}  // namespace mlusim::bridge::ops
