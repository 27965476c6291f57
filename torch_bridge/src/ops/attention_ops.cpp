// scaled_dot_product_attention on the device: libmlu's fused attention kernels (attention.h) as
// PyTorch 2's "overrideable" SDPA backend, the way out-of-tree backends plug in (OpenReg's
// OpenRegExtra.cpp registers the same stub):
//
//   _fused_sdp_choice_stub (PrivateUse1)   SDPA's backend choice: overrideable when the fused kernel
//                                          applies (below), math otherwise
//   _scaled_dot_product_fused_attention_overrideable            attention_forward (O, logsumexp)
//   _scaled_dot_product_fused_attention_overrideable_backward   attention_backward (dQ, dK, dV)
//
// torch.nn.functional.scaled_dot_product_attention (CompositeImplicitAutograd) asks the stub, turns
// a bool mask into an additive one (device ops) and calls the overrideable op; its derivative
// (derivatives.yaml) is the overrideable backward, so eager autograd, AOTAutograd's traced graphs
// (the ops have meta kernels in torch/_meta_registrations.py) and Inductor (make_fallback: an
// extern kernel call) all reach these kernels. [CUDA twin: the flash / efficient attention
// backends of sdp_utils.cpp.]
//
// The fused kernel applies to 4-d q, k, v of one dtype (fp32, fp16; bf16 where the config computes
// it), no dropout, the same heads in q, k and v (no GQA broadcast), a mask (if any) that does not
// require grad, and a head_dim whose tiles fit the core (libmlu attention_check). Otherwise the
// choice is math: PyTorch's composite of matmul, softmax, dropout and matmul, each a device
// kernel (never the CPU). torch.nn.attention.sdpa_kernel(SDPBackend.MATH) forces math; with math
// disabled too, an inapplicable call is SDPA's "no viable backend" error.
#include <cmath>
#include <numeric>
#include <vector>

#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include "mlusim/mlu/attention.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

bool fused_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }

double sdpa_scale(const Tensor& q, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
}

// The descriptor libmlu gets for a mask: its own dtype (bool, or an additive float mask).
std::optional<mlu::TensorDesc> mask_desc(const std::optional<Tensor>& mask, const char* op) {
  if (!mask.has_value() || !mask->defined()) return std::nullopt;
  return desc(*mask, op);
}

int64_t mlu_fused_sdp_choice(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
                             double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  const auto& ctx = at::globalContext();
  const auto math = static_cast<int64_t>(ctx.userEnabledMathSDP() ? at::SDPBackend::math : at::SDPBackend::error);
  if (!ctx.userEnabledOverrideableSDP()) return math;
  // Symbolic shapes (torch.compile's dynamic=True): no tiling can be checked, the composite runs.
  for (const Tensor* t : {&q, &k, &v})
    if (t->unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return math;
  if (mask.has_value() && mask->defined() && mask->unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return math;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || dropout_p > 0.0) return math;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return math;
  if (!fused_dtype(q.scalar_type()) || k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    return math;
  if (k.size(1) != q.size(1) || v.size(1) != q.size(1)) return math;  // GQA: the composite repeats K and V
  if (mask.has_value() && mask->defined()) {
    if (mask->requires_grad() || (mask->scalar_type() != at::kBool && mask->scalar_type() != q.scalar_type()))
      return math;
  }
  for (const Tensor* t : {&q, &k, &v})
    for (int64_t d = 0; d < t->dim(); ++d)
      if (t->stride(d) < 0) return math;
  (void)enable_gqa;
  OpScope op("aten::_fused_sdp_choice", q);
  mlu::AttentionParams p;
  p.scale = sdpa_scale(q, scale);
  p.causal = is_causal;
  const auto md = mask_desc(mask, op.name());
  const mlu::Status s = mlu::attention_check(op.handle(), p, desc(q, op.name()), desc(k, op.name()),
                                             desc(v, op.name()), md ? &*md : nullptr);
  return s == mlu::Status::kSuccess ? static_cast<int64_t>(at::SDPBackend::overrideable) : math;
}

// The output's layout as the meta kernel (alloc_with_matching_layout) gives it: q's dim order.
Tensor output_like(const Tensor& q, at::IntArrayRef sizes) {
  if (q.sizes() == sizes) return at::empty_like(q);
  std::vector<int64_t> order(4);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return q.stride(a) > q.stride(b); });
  std::vector<int64_t> strides(4);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) strides[*it] = stride, stride *= sizes[*it];
  return at::empty_strided(sizes, strides, q.options());
}

std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor> mlu_sdpa_forward(
    const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_bias, double dropout_p,
    bool is_causal, bool return_debug_mask, std::optional<double> scale) {
  OpScope op("aten::_scaled_dot_product_fused_attention_overrideable", q);
  TORCH_CHECK_NOT_IMPLEMENTED(dropout_p == 0.0, op.name(),
                              ": dropout_p > 0 is not part of the fused device kernel (SDPA chooses the composite "
                              "math path, device matmul/softmax/dropout, for it)");
  TORCH_CHECK_NOT_IMPLEMENTED(!return_debug_mask, op.name(), ": return_debug_mask is not supported on mlu");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op.name(), ": q, k, v must be 4-d [B, H, L|S, D], got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  for (const Tensor* t : {&k, &v}) check_on_device(*t, op.device(), op.name(), "key/value");
  if (attn_bias.has_value() && attn_bias->defined()) check_on_device(*attn_bias, op.device(), op.name(), "attn_bias");
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2), Dv = v.size(3);
  Tensor out = output_like(q, {B, H, L, Dv});
  Tensor lse = at::empty({B, H, L}, q.options().dtype(at::kFloat));
  mlu::AttentionParams p;
  p.scale = sdpa_scale(q, scale);
  p.causal = is_causal;
  const auto md = mask_desc(attn_bias, op.name());
  const mlu::TensorDesc lsed = desc(lse, op.name());
  op.check(mlu::attention_forward(op.handle(), p, desc(q, op.name()), q.data_ptr(), desc(k, op.name()), k.data_ptr(),
                                  desc(v, op.name()), v.data_ptr(), md ? &*md : nullptr,
                                  md ? attn_bias->data_ptr() : nullptr, desc(out, op.name()), out.data_ptr(), &lsed,
                                  lse.data_ptr()),
           "attention_forward");
  // No dropout: the philox seed and offset are empty placeholders, as the meta kernel's.
  const Tensor seed = at::empty({}, q.options().dtype(at::kLong));
  const Tensor offset = at::empty({}, q.options().dtype(at::kLong));
  return {out, lse, Tensor(), Tensor(), c10::SymInt(L), c10::SymInt(S), seed, offset, Tensor()};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_sdpa_backward(
    const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask, const Tensor& out, const Tensor& logsumexp, const Tensor& /*cum_seq_q*/,
    const Tensor& /*cum_seq_k*/, int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p,
    bool is_causal, const Tensor& /*philox_seed*/, const Tensor& /*philox_offset*/, std::optional<double> scale) {
  OpScope op("aten::_scaled_dot_product_fused_attention_overrideable_backward", q);
  TORCH_CHECK_NOT_IMPLEMENTED(dropout_p == 0.0, op.name(), ": dropout_p > 0 is not part of the fused device kernel");
  TORCH_CHECK_NOT_IMPLEMENTED(!(grad_input_mask[3] && attn_bias.defined()), op.name(),
                              ": the gradient of attn_bias is not computed by the fused kernel (SDPA chooses the "
                              "composite math path when the mask requires grad)");
  for (const Tensor* t : {&grad_out, &k, &v, &out, &logsumexp})
    check_on_device(*t, op.device(), op.name(), "argument");
  Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
  mlu::AttentionParams p;
  p.scale = sdpa_scale(q, scale);
  p.causal = is_causal;
  const std::optional<Tensor> bias = attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  const auto md = mask_desc(bias, op.name());
  const mlu::TensorDesc qd = desc(q, op.name());
  std::size_t ws = 0;
  op.check(mlu::get_attention_backward_workspace_size(op.handle(), qd, &ws), "get_attention_backward_workspace_size");
  void* workspace = op.workspace(ws);
  op.check(mlu::attention_backward(op.handle(), p, qd, q.data_ptr(), desc(k, op.name()), k.data_ptr(),
                                   desc(v, op.name()), v.data_ptr(), md ? &*md : nullptr,
                                   md ? attn_bias.data_ptr() : nullptr, desc(out, op.name()), out.data_ptr(),
                                   desc(grad_out, op.name()), grad_out.data_ptr(), desc(logsumexp, op.name()),
                                   logsumexp.data_ptr(), desc(dq, op.name()), dq.data_ptr(), desc(dk, op.name()),
                                   dk.data_ptr(), desc(dv, op.name()), dv.data_ptr(), workspace, ws),
           "attention_backward");
  return {grad_input_mask[0] ? dq : Tensor(), grad_input_mask[1] ? dk : Tensor(), grad_input_mask[2] ? dv : Tensor(),
          Tensor()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(mlu_sdpa_forward));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(mlu_sdpa_backward));
}

}  // namespace mlusim::bridge::ops

namespace at::native {
// A DispatchStub, not an operator: SDPA reads _fused_sdp_choice_stub for the query's device type.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &mlusim::bridge::ops::mlu_fused_sdp_choice)
}  // namespace at::native
