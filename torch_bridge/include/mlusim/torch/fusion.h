// Graph fusion for TorchScript modules (`mlusim run --fuse`): rewrites a scripted or traced
// model's forward to use the fused ops torch.ops.mlu.* (src/ops/fused_ops.cpp over libmlu's
// fused.h). The Python twin for torch.fx is torch_mlu.fuse (python/torch_mlu/fusion.py).
//
// Patterns (each switchable):
//   conv_bn_act  aten::conv2d / aten::_convolution (2-d, not transposed) followed by
//                aten::batch_norm with training = False and running statistics, and/or by an
//                activation (relu, relu_, hardtanh(_) with 0..6 (ReLU6), gelu (none/tanh),
//                silu(_), sigmoid(_), tanh(_))                       -> mlu::conv_bn_act
//   linear_act   aten::linear followed by one of those activations     -> mlu::linear_act
//   elementwise  maximal groups of >= 2 elementwise nodes (add/sub/mul/div/pow/maximum/minimum/
//                rsub and their in-place forms, neg/abs/square/relu/exp/log/sqrt/rsqrt/sigmoid/
//                tanh/silu/gelu/reciprocal, comparisons, logical ops, where, masked_fill) with
//                constant scalar operands                                -> mlu::elementwise
// A value a pattern would hide is never used outside it (a convolution output that also feeds a
// residual stays a plain convolution; a group's inner values have no outside users). In-place
// nodes join only when the tensor they modify is produced inside the group or by a fresh
// (non-aliasing) node whose only use they are; binary in-place ops keep self's dtype (cast_like).
//
// How: the module must be in eval mode (throws std::invalid_argument otherwise; the fused ops are
// inference-only). fuse_torchscript clones the module (new types, shared tensors), inlines its
// forward, replaces the non-tensor attributes (training flags, eps, ...) by constants, propagates
// constants (BatchNorm's training branches disappear) and rewrites the graph. Parameters and
// buffers stay attributes, read at run time: moving the module to the device before or after
// fusing both work. `module` is replaced by the fused clone; other methods are not fused and
// calling train() on the result does not bring the unfused graph back.
#pragma once

#include <map>
#include <string>

namespace torch::jit {
struct Module;
}

namespace mlusim::bridge {

struct FusionOptions {
  bool conv_bn_act = true;
  bool linear_act = true;
  bool elementwise = true;
};

struct FusionStats {
  // "conv_bn_act", "linear_act", "elementwise" -> number of fused nodes created (all three keys).
  std::map<std::string, int> matches;
};

// Fuses `module`'s forward in place (see above). Throws std::invalid_argument for a module in
// training mode or without a forward method.
FusionStats fuse_torchscript(torch::jit::Module& module, const FusionOptions& options = {});

}  // namespace mlusim::bridge
