// conv2d_bn_act_forward: conv2d_forward's kernels with the fused output stage (conv_forward.h):
// the kernel that stores each output block folds the BN tensors (and the bias) of its channels
// into scale and shift on chip (common/channel_affine.h) and applies them and the activation to
// the fp32 accumulator before the one rounding and store.
#include <cmath>
#include <string>

#include "common/activation.h"
#include "common/channel_affine.h"
#include "common/error.h"
#include "common/launch.h"
#include "conv/conv_forward.h"
#include "conv/conv_shape.h"
#include "mlusim/mlu/fused.h"

namespace mlusim::mlu {
namespace {

constexpr const char* kOp = "fused_conv_bn_act";
constexpr const char* kQuery = "get_conv2d_bn_act_workspace_size";

std::uint64_t addr(const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); }

bool folds(const BatchNormInference* bn) {
  return bn && (bn->weight || bn->bias || bn->running_mean || bn->running_var);
}

// The BN tensors against OC (the weights' first dim, once w is known valid).
Status check_bn(const BatchNormInference& bn, std::int64_t oc, bool check_pointers) {
  MLU_CHECK(std::isfinite(bn.eps) && bn.eps >= 0, Status::kBadParam,
            std::string(kOp) + ": eps " + std::to_string(bn.eps) + " must be finite and >= 0");
  const struct {
    const char* name;
    const TensorDesc* d;
    const void* p;
  } tensors[] = {{"bn weight", bn.weight, bn.weight_ptr},
                 {"bn bias", bn.bias, bn.bias_ptr},
                 {"bn running_mean", bn.running_mean, bn.running_mean_ptr},
                 {"bn running_var", bn.running_var, bn.running_var_ptr}};
  for (const auto& t : tensors) {
    if (!t.d) continue;
    MLU_RETURN_IF_ERROR(check_desc(t.d, kOp, t.name));
    MLU_CHECK(t.d->dtype() == DType::kFloat32 || t.d->dtype() == DType::kFloat16, Status::kBadParam,
              std::string(kOp) + ": " + t.name + " " + t.d->str() + " must be fp32 or fp16");
    MLU_CHECK(t.d->ndim() == 1 && t.d->dim(0) == oc, Status::kBadParam,
              std::string(kOp) + ": " + t.name + " " + t.d->str() + " must be 1-d [" + std::to_string(oc) +
                  "] (one value per output channel)");
    if (check_pointers) MLU_RETURN_IF_ERROR(check_ptr(t.p, *t.d, kOp, t.name));
  }
  return Status::kSuccess;
}

ChannelVector vec(const TensorDesc* d, const void* p) {
  if (!d || d->numel() == 0) return {};
  return ChannelVector{addr(p), d->stride(0), d->dtype()};
}

// Validation shared by the query and the op: the weights' descriptor (for OC) and the BN tensors.
Status check_common(Handle* h, Activation act, const TensorDesc& w, const BatchNormInference* bn, bool check_pointers) {
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_CHECK(is_valid_activation(act), Status::kBadParam,
            std::string(kOp) + ": unknown activation " + std::to_string(static_cast<int>(act)));
  MLU_RETURN_IF_ERROR(check_desc(&w, kOp, "w"));
  MLU_CHECK(w.ndim() == 4, Status::kBadParam, std::string(kOp) + ": w " + w.str() + " must be 4-d");
  if (bn) MLU_RETURN_IF_ERROR(check_bn(*bn, w.dim(0), check_pointers));
  return Status::kSuccess;
}

// The output stage: with BN tensors, the channel affine folds them and the bias (which the
// convolution then does not add itself); without, the bias stays the convolution's.
conv::OutputStage stage_for(Activation act, const BatchNormInference* bn, const TensorDesc* bias,
                            const void* bias_ptr) {
  conv::OutputStage stage;
  stage.act = act;
  stage.workspace_query = kQuery;
  if (folds(bn)) {
    ChannelAffine& a = stage.affine;
    a.enabled = true;
    a.eps = bn->eps;
    a.gamma = vec(bn->weight, bn->weight_ptr);
    a.beta = vec(bn->bias, bn->bias_ptr);
    a.mean = vec(bn->running_mean, bn->running_mean_ptr);
    a.var = vec(bn->running_var, bn->running_var_ptr);
    if (bias) a.bias = vec(bias, bias_ptr);
  }
  return stage;
}

}  // namespace

Status get_conv2d_bn_act_workspace_size(Handle* h, const ConvParams& p, Activation act, const TensorDesc& x,
                                        const TensorDesc& w, const BatchNormInference* bn, const TensorDesc& y,
                                        std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(kOp) + ": workspace size pointer is null");
  MLU_RETURN_IF_ERROR(check_common(h, act, w, bn, false));
  return conv::forward_workspace_size(h, kOp, p, x, w, stage_for(act, bn, nullptr, nullptr), y, bytes);
}

Status conv2d_bn_act_forward(Handle* h, const ConvParams& p, Activation act, const TensorDesc& x, const void* x_ptr,
                             const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
                             const BatchNormInference* bn, const TensorDesc& y, void* y_ptr, void* workspace,
                             std::size_t workspace_bytes) {
  MLU_RETURN_IF_ERROR(check_common(h, act, w, bn, true));
  const conv::OutputStage stage = stage_for(act, bn, bias, bias_ptr);
  const bool folded = stage.affine.enabled;
  // A folded bias is not the convolution's: validate it here as conv2d_forward would.
  if (folded && bias) {
    MLU_RETURN_IF_ERROR(check_desc(bias, kOp, "bias"));
    MLU_CHECK(bias->dtype() == x.dtype() && bias->ndim() == 1 && bias->dim(0) == w.dim(0), Status::kBadParam,
              std::string(kOp) + ": bias " + bias->str() + " must be 1-d [" + std::to_string(w.dim(0)) +
                  "] of the input's dtype");
    MLU_RETURN_IF_ERROR(check_ptr(bias_ptr, *bias, kOp, "bias"));
  }
  conv::ForwardResult r;
  MLU_RETURN_IF_ERROR(conv::forward(h, kOp, p, x, x_ptr, w, w_ptr, folded ? nullptr : bias, folded ? nullptr : bias_ptr,
                                    stage, y, y_ptr, workspace, workspace_bytes, &r));
  if (y.numel() == 0) {  // nothing launched
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  std::uint64_t extra = folded && bias ? conv::tensor_bytes(*bias) : 0;
  if (folded)
    for (const TensorDesc* d : {bn->weight, bn->bias, bn->running_mean, bn->running_var})
      if (d) extra += conv::tensor_bytes(*d);
  record(*h, kOp, r.macs, r.bytes + extra, r.kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
