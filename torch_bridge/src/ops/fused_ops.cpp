// Fused inference ops torch.ops.mlu.* over libmlu's fused.h, for the graph passes that apply them
// to unmodified models (torch_mlu.fuse for torch.fx, mlusim::bridge::fuse_torchscript for
// TorchScript). Schemas (TORCH_LIBRARY(mlu)):
//
//   mlu::conv_bn_act(Tensor input, Tensor weight, Tensor? bias, Tensor? bn_weight, Tensor? bn_bias,
//                    Tensor? bn_mean, Tensor? bn_var, float eps, int[2] stride, int[2] padding,
//                    int[2] dilation, int groups, str activation) -> Tensor
//       act(batch_norm_eval(conv2d(input, weight, bias))): libmlu conv2d_bn_act_forward (the BN
//       fold runs on the device, the convolution's output stage applies scale, shift and the
//       activation before its one rounding). Missing BN tensors count as gamma = 1, beta = 0,
//       mean = 0 and no normalisation by running_var (all four None: no batch norm).
//   mlu::linear_act(Tensor input, Tensor weight, Tensor? bias, str activation) -> Tensor
//       act(F.linear(input, weight, bias)): libmlu linear_act (GEMM epilogue).
//   mlu::linear_residual(Tensor input, Tensor weight, Tensor? bias, Tensor residual, str activation)
//       -> Tensor
//       act(F.linear(input, weight, bias) + residual): libmlu linear_residual (the residual
//       connection's add in the GEMM epilogue; residual broadcasts to the output's shape).
//   mlu::add_layer_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight,
//                       Tensor? bias, float eps) -> (Tensor sum, Tensor out)
//       sum = input + residual, out = F.layer_norm(sum, ...): libmlu add_layer_norm_forward (one
//       kernel; residual broadcasts to input's shape).
//   mlu::add_rms_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight,
//                     float eps) -> (Tensor sum, Tensor out)
//       sum = input + residual, out = sum * rsqrt(mean(sum^2 over the normalized dims) + eps) *
//       weight (LLaMA's RMSNorm): libmlu rms_norm_forward with the residual.
//   mlu::rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> Tensor
//       the same norm of input alone (libmlu rms_norm_forward, one kernel).
//   mlu::elementwise(Tensor[] inputs, str program) -> Tensor
//       one streaming kernel (libmlu elementwise_program) computing `program` over the broadcast
//       inputs; the result has torch's dtype for the chain of ops the program spells out.
//   mlu::elementwise_into(Tensor[] inputs, str program, Tensor(a!) out) -> Tensor(a!)
//       the same kernel writing into `out` (any strides; the inputs broadcast to its shape; the
//       result converts to out's dtype if torch.can_cast allows), fp16 steps in fp32 rounded once:
//       what torch.compile's Inductor kernels on the device store with (no copy kernel).
//
// activation: "none", "relu", "relu6", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh".
//
// The program format (parsed once per call on the host):
//
//   program   := (NAME '=' expr ';')* expr          the last expression is the output
//   expr      := OP '(' expr (',' expr)* ')' | '$' INDEX | NAME | literal
//   literal   := NUMBER [':' DTYPE] | true | false | inf | -inf | nan
//
//   $i is inputs[i] (every input must be used); NAME refers to an earlier `NAME = expr;`
//   (shared subexpressions: `t = add($0, $1); mul(t, sigmoid(t))`). A literal is a Python
//   scalar: a number with '.', 'e', inf or nan is a float (float32 like torch's default dtype),
//   otherwise an int (int64), true/false a bool; they promote as Python scalars do in torch
//   (2.0 * fp16 tensor -> fp16). With ':DTYPE' it is a zero-dim tensor of that dtype instead.
//   DTYPE: f32 f16 i8 i32 i64 bool (or float32 float16 int8 int32 int64).
//   OP (torch's semantics and result dtypes, intermediates keep their result dtype):
//     add(a, b[, alpha]) sub(a, b[, alpha])      a +/- alpha * b (alpha a number literal)
//     mul div pow maximum minimum                 div is true division (int / int -> float)
//     neg abs square relu exp log sqrt rsqrt sigmoid tanh silu reciprocal gelu gelu_tanh sin cos
//     eq ne lt le gt ge                           -> bool
//     logical_and logical_or logical_xor logical_not   -> bool
//     where(cond, a, b)                           cond ? a : b
//     cast(a, DTYPE)                              a.to(dtype)
//     cast_like(a, b)                             a.to(b.dtype) (b a tensor): in-place ops keep self's dtype
//   Every op needs at least one tensor operand (no constant-only subexpressions).
//   Example: "relu(add($0, $1))", "where($1, -10000.0, div($0, 8.0))".
//
// Kernels: PrivateUse1 (libmlu; OpScope names them "mlu::<op>" in the cycle report) and CPU (the
// unfused reference with ordinary at:: ops: fp16 computes each step in fp32 and rounds once, as
// the device does). Inference only: an Autograd kernel raises when grad mode is on and an input
// requires grad (the ops have no backward formula).
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/add.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/hardtanh.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/le.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/log.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/logical_xor.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/square.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "mlusim/mlu/fused.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::Tensor;

constexpr const char* kConvBnAct = "mlu::conv_bn_act";
constexpr const char* kLinearAct = "mlu::linear_act";
constexpr const char* kElementwise = "mlu::elementwise";
constexpr const char* kLinearResidual = "mlu::linear_residual";
constexpr const char* kAddLayerNorm = "mlu::add_layer_norm";
constexpr const char* kAddRmsNorm = "mlu::add_rms_norm";
constexpr const char* kRmsNorm = "mlu::rms_norm";

// ---- activations ---------------------------------------------------------------------------------

struct ActivationName {
  const char* name;
  mlu::Activation act;
};
constexpr ActivationName kActivations[] = {
    {"none", mlu::Activation::kNone},       {"relu", mlu::Activation::kRelu},
    {"relu6", mlu::Activation::kRelu6},     {"gelu", mlu::Activation::kGelu},
    {"gelu_tanh", mlu::Activation::kGeluTanh}, {"silu", mlu::Activation::kSilu},
    {"sigmoid", mlu::Activation::kSigmoid}, {"tanh", mlu::Activation::kTanh},
};

mlu::Activation parse_activation(const char* op, c10::string_view name) {
  std::string known;
  for (const ActivationName& a : kActivations) {
    if (name == a.name) return a.act;
    known += known.empty() ? "" : ", ";
    known += a.name;
  }
  C10_THROW_ERROR(ValueError, c10::str(op, ": unknown activation '", std::string(name), "' (known: ", known, ")"));
}

// The activation with ordinary at:: ops (the CPU reference).
Tensor apply_activation(const Tensor& y, mlu::Activation act) {
  switch (act) {
    case mlu::Activation::kNone: return y;
    case mlu::Activation::kRelu: return at::relu(y);
    case mlu::Activation::kRelu6: return at::hardtanh(y, 0.0, 6.0);
    case mlu::Activation::kGelu: return at::gelu(y, "none");
    case mlu::Activation::kGeluTanh: return at::gelu(y, "tanh");
    case mlu::Activation::kSilu: return at::silu(y);
    case mlu::Activation::kSigmoid: return at::sigmoid(y);
    case mlu::Activation::kTanh: return at::tanh(y);
  }
  C10_THROW_ERROR(Error, "invalid activation");
}

bool floating_conv_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kHalf; }

// ---- conv_bn_act -----------------------------------------------------------------------------------

int to_int(std::int64_t v, const char* op, const char* what) {
  TORCH_CHECK(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(), op, ": ", what, " ", v,
              " is out of range");
  return static_cast<int>(v);
}

struct ConvArgs {
  mlu::ConvParams p;
  std::int64_t oh = 0, ow = 0;
};

// Checks shared by the device and the CPU kernel (shapes, dtypes, parameters).
ConvArgs check_conv_bn_act(const char* op, const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                           const std::vector<std::pair<const c10::optional<Tensor>*, const char*>>& bn, double eps,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, std::int64_t groups) {
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4, op,
              ": expected a 3-d or 4-d input and 4-d weight (2-d convolution), got input ", x.sizes(), " and weight ",
              w.sizes());
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), op, ": Input type (", x.scalar_type(), ") and weight type (",
              w.scalar_type(), ") should be the same");
  TORCH_CHECK_NOT_IMPLEMENTED(floating_conv_dtype(x.scalar_type()), op, ": dtype ", x.scalar_type(),
                              " is not supported (float32 and float16; libmlu conv2d_bn_act_forward)");
  TORCH_CHECK(stride.size() == 2 && padding.size() == 2 && dilation.size() == 2, op,
              ": stride, padding and dilation must have 2 values each, got ", stride, ", ", padding, ", ", dilation);
  for (std::size_t i = 0; i < 2; ++i) {
    TORCH_CHECK(stride[i] >= 1, op, ": stride must be positive, got ", stride);
    TORCH_CHECK(padding[i] >= 0, op, ": padding must be non-negative, got ", padding);
    TORCH_CHECK(dilation[i] >= 1, op, ": dilation must be positive, got ", dilation);
  }
  TORCH_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  TORCH_CHECK(std::isfinite(eps) && eps >= 0, op, ": eps must be finite and non-negative, got ", eps);
  const std::int64_t oc = w.size(0);
  TORCH_CHECK(x.size(1) == w.size(1) * groups, op, ": expected input ", x.sizes(), " to have ", w.size(1) * groups,
              " channels (weight ", w.sizes(), ", groups ", groups, "), but got ", x.size(1), " channels instead");
  TORCH_CHECK(oc % groups == 0, op, ": weight ", w.sizes(), " has ", oc, " output channels, not divisible by groups ",
              groups);
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->scalar_type() == x.scalar_type(), op, ": Input type (", x.scalar_type(), ") and bias type (",
                bias->scalar_type(), ") should be the same");
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == oc, op, ": expected bias of shape [", oc, "], got ",
                bias->sizes());
  }
  for (const auto& [t, name] : bn) {
    if (!t->has_value() || !(*t)->defined()) continue;
    TORCH_CHECK((*t)->dim() == 1 && (*t)->size(0) == oc, op, ": expected ", name, " of shape [", oc, "], got ",
                (*t)->sizes());
    TORCH_CHECK(floating_conv_dtype((*t)->scalar_type()), op, ": ", name, " must be float32 or float16, got ",
                (*t)->scalar_type());
  }
  ConvArgs a;
  a.p.stride_h = to_int(stride[0], op, "stride");
  a.p.stride_w = to_int(stride[1], op, "stride");
  a.p.pad_h = to_int(padding[0], op, "padding");
  a.p.pad_w = to_int(padding[1], op, "padding");
  a.p.dilation_h = to_int(dilation[0], op, "dilation");
  a.p.dilation_w = to_int(dilation[1], op, "dilation");
  a.p.groups = to_int(groups, op, "groups");
  a.oh = (x.size(2) + 2 * padding[0] - dilation[0] * (w.size(2) - 1) - 1) / stride[0] + 1;
  a.ow = (x.size(3) + 2 * padding[1] - dilation[1] * (w.size(3) - 1) - 1) / stride[1] + 1;
  TORCH_CHECK(a.oh > 0 && a.ow > 0, op, ": the kernel ", w.sizes(), " (dilated) is larger than the padded input ",
              x.sizes());
  return a;
}

bool has(const c10::optional<Tensor>& t) { return t.has_value() && t->defined(); }

Tensor mlu_conv_bn_act(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                       const c10::optional<Tensor>& bn_weight, const c10::optional<Tensor>& bn_bias,
                       const c10::optional<Tensor>& bn_mean, const c10::optional<Tensor>& bn_var, double eps,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, std::int64_t groups,
                       c10::string_view activation) {
  if (x.dim() == 3)  // unbatched [C, H, W], as conv2d allows
    return mlu_conv_bn_act(x.unsqueeze(0), w, bias, bn_weight, bn_bias, bn_mean, bn_var, eps, stride, padding,
                           dilation, groups, activation)
        .squeeze(0);
  OpScope op(kConvBnAct, x);
  const mlu::Activation act = parse_activation(op.name(), activation);
  check_on_device(x, op.device(), op.name(), "input");
  check_on_device(w, op.device(), op.name(), "weight");
  const std::vector<std::pair<const c10::optional<Tensor>*, const char*>> bn_args{
      {&bn_weight, "bn_weight"}, {&bn_bias, "bn_bias"}, {&bn_mean, "bn_mean"}, {&bn_var, "bn_var"}};
  if (has(bias)) check_on_device(*bias, op.device(), op.name(), "bias");
  for (const auto& [t, name] : bn_args)
    if (has(*t)) check_on_device(**t, op.device(), op.name(), name);
  const ConvArgs a = check_conv_bn_act(op.name(), x, w, bias, bn_args, eps, stride, padding, dilation, groups);

  const bool cl = x.suggest_memory_format() == at::MemoryFormat::ChannelsLast ||
                  w.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
  Tensor y = at::empty({x.size(0), w.size(0), a.oh, a.ow},
                       at::TensorOptions().device(op.device()).dtype(x.scalar_type()).memory_format(
                           cl ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
  if (y.numel() == 0) return y;

  const mlu::TensorDesc dx = desc(x, op.name()), dw = desc(w, op.name()), dy = desc(y, op.name());
  mlu::TensorDesc db, dbn[4];
  if (has(bias)) db = desc(*bias, op.name());
  mlu::BatchNormInference bn;
  bn.eps = eps;
  bool any_bn = false;
  const Tensor* bn_tensors[4] = {has(bn_weight) ? &*bn_weight : nullptr, has(bn_bias) ? &*bn_bias : nullptr,
                                 has(bn_mean) ? &*bn_mean : nullptr, has(bn_var) ? &*bn_var : nullptr};
  const mlu::TensorDesc** bn_desc[4] = {&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var};
  const void** bn_ptr[4] = {&bn.weight_ptr, &bn.bias_ptr, &bn.running_mean_ptr, &bn.running_var_ptr};
  for (int i = 0; i < 4; ++i) {
    if (!bn_tensors[i]) continue;
    dbn[i] = desc(*bn_tensors[i], op.name());
    *bn_desc[i] = &dbn[i];
    *bn_ptr[i] = bn_tensors[i]->data_ptr();
    any_bn = true;
  }
  const mlu::BatchNormInference* bnp = any_bn ? &bn : nullptr;
  std::size_t bytes = 0;
  op.check(mlu::get_conv2d_bn_act_workspace_size(op.handle(), a.p, act, dx, dw, bnp, dy, &bytes),
           "get_conv2d_bn_act_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::conv2d_bn_act_forward(op.handle(), a.p, act, dx, x.data_ptr(), dw, w.data_ptr(),
                                      has(bias) ? &db : nullptr, has(bias) ? bias->data_ptr() : nullptr, bnp, dy,
                                      y.data_ptr(), ws, bytes),
           "conv2d_bn_act_forward");
  return y;
}

// The CPU reference: conv2d, batch norm (eval), activation with at:: ops; fp16 in fp32, rounded once.
Tensor cpu_conv_bn_act(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                       const c10::optional<Tensor>& bn_weight, const c10::optional<Tensor>& bn_bias,
                       const c10::optional<Tensor>& bn_mean, const c10::optional<Tensor>& bn_var, double eps,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, std::int64_t groups,
                       c10::string_view activation) {
  if (x.dim() == 3)
    return cpu_conv_bn_act(x.unsqueeze(0), w, bias, bn_weight, bn_bias, bn_mean, bn_var, eps, stride, padding,
                           dilation, groups, activation)
        .squeeze(0);
  const char* op = kConvBnAct;
  const mlu::Activation act = parse_activation(op, activation);
  const std::vector<std::pair<const c10::optional<Tensor>*, const char*>> bn_args{
      {&bn_weight, "bn_weight"}, {&bn_bias, "bn_bias"}, {&bn_mean, "bn_mean"}, {&bn_var, "bn_var"}};
  check_conv_bn_act(op, x, w, bias, bn_args, eps, stride, padding, dilation, groups);
  const auto f = [](const c10::optional<Tensor>& t) -> c10::optional<Tensor> {
    if (!has(t)) return c10::nullopt;
    return t->to(at::kFloat);
  };
  Tensor y = at::conv2d(x.to(at::kFloat), w.to(at::kFloat), f(bias), stride, padding, dilation, groups);
  const std::int64_t oc = w.size(0);
  if (has(bn_mean) && has(bn_var)) {
    y = at::batch_norm(y, f(bn_weight), f(bn_bias), f(bn_mean), f(bn_var), /*training=*/false, 0.0, eps,
                       /*cudnn_enabled=*/false);
  } else if (has(bn_weight) || has(bn_bias) || has(bn_mean) || has(bn_var)) {
    // Partial BN tensors (libmlu's definition): scale = gamma [/ sqrt(var + eps)], shift = beta - mean * scale.
    Tensor scale = has(bn_weight) ? bn_weight->to(at::kFloat) : at::ones({oc}, y.options());
    if (has(bn_var)) scale = at::mul(scale, at::rsqrt(at::add(bn_var->to(at::kFloat), eps)));
    Tensor shift = has(bn_bias) ? bn_bias->to(at::kFloat) : at::zeros({oc}, y.options());
    if (has(bn_mean)) shift = at::sub(shift, at::mul(bn_mean->to(at::kFloat), scale));
    y = at::add(at::mul(y, scale.view({1, oc, 1, 1})), shift.view({1, oc, 1, 1}));
  }
  return apply_activation(y, act).to(x.scalar_type());
}

// ---- linear_act ------------------------------------------------------------------------------------

void check_linear_act(const char* op, const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias) {
  TORCH_CHECK(x.dim() >= 1, op, ": input must have at least 1 dim, got a zero-dim tensor");
  TORCH_CHECK(w.dim() == 2, op, ": weight must be 2-d [out_features, in_features], got ", w.sizes());
  TORCH_CHECK(x.size(-1) == w.size(1), op, ": mat1 and mat2 shapes cannot be multiplied (input ", x.sizes(),
              ", weight ", w.sizes(), ")");
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), op, ": expected input and weight to have the same dtype, but got ",
              x.scalar_type(), " and ", w.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(floating_conv_dtype(x.scalar_type()), op, ": dtype ", x.scalar_type(),
                              " is not supported (float32 and float16; libmlu linear_act)");
  if (has(bias)) {
    TORCH_CHECK(bias->scalar_type() == x.scalar_type(), op,
                ": expected input and bias to have the same dtype, but got ", x.scalar_type(), " and ",
                bias->scalar_type());
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == w.size(0), op, ": expected bias of shape [", w.size(0), "], got ",
                bias->sizes());
  }
}

std::vector<std::int64_t> linear_out_sizes(const Tensor& x, const Tensor& w) {
  std::vector<std::int64_t> s(x.sizes().begin(), x.sizes().end() - 1);
  s.push_back(w.size(0));
  return s;
}

Tensor mlu_linear_act(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                      c10::string_view activation) {
  OpScope op(kLinearAct, x);
  const mlu::Activation act = parse_activation(op.name(), activation);
  check_on_device(x, op.device(), op.name(), "input");
  check_on_device(w, op.device(), op.name(), "weight");
  if (has(bias)) check_on_device(*bias, op.device(), op.name(), "bias");
  check_linear_act(op.name(), x, w, bias);
  Tensor y = empty_on(op.device(), linear_out_sizes(x, w), x.scalar_type());
  if (y.numel() == 0) return y;
  TORCH_CHECK_NOT_IMPLEMENTED(x.size(-1) > 0, op.name(), ": in_features = 0 is not supported on device mlu");
  const mlu::TensorDesc dx = desc(x, op.name()), dw = desc(w, op.name()), dy = desc(y, op.name());
  mlu::TensorDesc db;
  if (has(bias)) db = desc(*bias, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_linear_act_workspace_size(op.handle(), act, dx, dw, has(bias) ? &db : nullptr, dy, &bytes),
           "get_linear_act_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::linear_act(op.handle(), act, dx, x.data_ptr(), dw, w.data_ptr(), has(bias) ? &db : nullptr,
                           has(bias) ? bias->data_ptr() : nullptr, dy, y.data_ptr(), ws, bytes),
           "linear_act");
  return y;
}

Tensor cpu_linear_act(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                      c10::string_view activation) {
  const mlu::Activation act = parse_activation(kLinearAct, activation);
  check_linear_act(kLinearAct, x, w, bias);
  c10::optional<Tensor> b;
  if (has(bias)) b = bias->to(at::kFloat);
  const Tensor y = at::linear(x.to(at::kFloat), w.to(at::kFloat), b);
  return apply_activation(y, act).to(x.scalar_type());
}

// ---- linear_residual ---------------------------------------------------------------------------------

// The linear's checks plus the residual's: same dtype as input, broadcastable to the output.
void check_linear_residual(const char* op, const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                           const Tensor& residual) {
  check_linear_act(op, x, w, bias);
  TORCH_CHECK(residual.scalar_type() == x.scalar_type(), op, ": expected input and residual to have the same dtype, "
              "but got ", x.scalar_type(), " and ", residual.scalar_type());
  const std::vector<std::int64_t> out = linear_out_sizes(x, w);
  TORCH_CHECK(at::is_expandable_to(residual.sizes(), out), op, ": residual of shape ", residual.sizes(),
              " cannot be broadcast to the linear's output shape ", IntArrayRef(out));
}

Tensor mlu_linear_residual(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                           const Tensor& residual, c10::string_view activation) {
  OpScope op(kLinearResidual, x);
  const mlu::Activation act = parse_activation(op.name(), activation);
  check_on_device(x, op.device(), op.name(), "input");
  check_on_device(w, op.device(), op.name(), "weight");
  check_on_device(residual, op.device(), op.name(), "residual");
  if (has(bias)) check_on_device(*bias, op.device(), op.name(), "bias");
  check_linear_residual(op.name(), x, w, bias, residual);
  Tensor y = empty_on(op.device(), linear_out_sizes(x, w), x.scalar_type());
  if (y.numel() == 0) return y;
  TORCH_CHECK_NOT_IMPLEMENTED(x.size(-1) > 0, op.name(), ": in_features = 0 is not supported on device mlu");
  const Tensor r = residual.expand(y.sizes());
  const mlu::TensorDesc dx = desc(x, op.name()), dw = desc(w, op.name()), dy = desc(y, op.name());
  const mlu::TensorDesc dr = desc(r, op.name());
  mlu::TensorDesc db;
  if (has(bias)) db = desc(*bias, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_linear_residual_workspace_size(op.handle(), act, dx, dw, has(bias) ? &db : nullptr, dr, dy,
                                                   &bytes),
           "get_linear_residual_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::linear_residual(op.handle(), act, dx, x.data_ptr(), dw, w.data_ptr(), has(bias) ? &db : nullptr,
                                has(bias) ? bias->data_ptr() : nullptr, dr, r.data_ptr(), dy, y.data_ptr(), ws, bytes),
           "linear_residual");
  return y;
}

Tensor cpu_linear_residual(const Tensor& x, const Tensor& w, const c10::optional<Tensor>& bias,
                           const Tensor& residual, c10::string_view activation) {
  const mlu::Activation act = parse_activation(kLinearResidual, activation);
  check_linear_residual(kLinearResidual, x, w, bias, residual);
  c10::optional<Tensor> b;
  if (has(bias)) b = bias->to(at::kFloat);
  const Tensor y = at::add(at::linear(x.to(at::kFloat), w.to(at::kFloat), b), residual.to(at::kFloat));
  return apply_activation(y, act).to(x.scalar_type());
}

// ---- add_layer_norm / add_rms_norm -------------------------------------------------------------------

// Shared checks: the normalized shape ends input's shape, weight/bias have it, residual broadcasts
// to input with its dtype. Returns the normalized ndim.
int check_add_norm(const char* op, const Tensor& x, const Tensor& residual, IntArrayRef normalized_shape,
                   const c10::optional<Tensor>& weight, const c10::optional<Tensor>& bias) {
  const std::int64_t nn = static_cast<std::int64_t>(normalized_shape.size());
  TORCH_CHECK(nn >= 1 && x.dim() >= nn && x.sizes().slice(x.dim() - nn) == normalized_shape, op,
              ": normalized_shape ", normalized_shape, " must be non-empty and end input's shape ", x.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(floating_conv_dtype(x.scalar_type()) || x.scalar_type() == at::kBFloat16, op,
                              ": dtype ", x.scalar_type(), " is not supported (float32, float16, bfloat16)");
  TORCH_CHECK(residual.scalar_type() == x.scalar_type(), op, ": expected input and residual to have the same dtype, "
              "but got ", x.scalar_type(), " and ", residual.scalar_type());
  TORCH_CHECK(at::is_expandable_to(residual.sizes(), x.sizes()), op, ": residual of shape ", residual.sizes(),
              " cannot be broadcast to input's shape ", x.sizes());
  for (const auto& [t, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    TORCH_CHECK(!has(*t) || (*t)->sizes() == normalized_shape, op, ": expected ", name, " of shape ",
                normalized_shape, ", got ", (*t)->sizes());
  return static_cast<int>(nn);
}

// residual undefined: RMS norm of x alone (no sum: returned undefined).
std::tuple<Tensor, Tensor> mlu_add_norm(const char* name, bool rms, const Tensor& x, const Tensor& residual,
                                        IntArrayRef normalized_shape, const c10::optional<Tensor>& weight,
                                        const c10::optional<Tensor>& bias, double eps) {
  OpScope op(name, x);
  const bool add = residual.defined();
  check_on_device(x, op.device(), op.name(), "input");
  if (add) check_on_device(residual, op.device(), op.name(), "residual");
  if (has(weight)) check_on_device(*weight, op.device(), op.name(), "weight");
  if (has(bias)) check_on_device(*bias, op.device(), op.name(), "bias");
  const int nn = check_add_norm(op.name(), x, add ? residual : x, normalized_shape, weight, bias);
  Tensor sum = add ? empty_on(op.device(), x.sizes(), x.scalar_type()) : Tensor();
  Tensor out = empty_on(op.device(), x.sizes(), x.scalar_type());
  if (x.numel() == 0) return {sum, out};
  const Tensor r = add ? residual.expand(x.sizes()) : Tensor();
  const mlu::TensorDesc dx = desc(x, op.name()), dy = desc(out, op.name());
  mlu::TensorDesc dr, ds;
  if (add) dr = desc(r, op.name()), ds = desc(sum, op.name());
  mlu::TensorDesc dw, db;
  if (has(weight)) dw = desc(*weight, op.name());
  if (has(bias)) db = desc(*bias, op.name());
  const void* wp = has(weight) ? weight->data_ptr() : nullptr;
  if (rms) {
    op.check(mlu::rms_norm_forward(op.handle(), nn, eps, dx, x.data_ptr(), add ? &dr : nullptr,
                                   add ? r.data_ptr() : nullptr, has(weight) ? &dw : nullptr, wp,
                                   add ? &ds : nullptr, add ? sum.data_ptr() : nullptr, dy, out.data_ptr(), nullptr,
                                   nullptr),
             "rms_norm_forward");
  } else {
    op.check(mlu::add_layer_norm_forward(op.handle(), nn, eps, dx, x.data_ptr(), dr, r.data_ptr(),
                                         has(weight) ? &dw : nullptr, wp, has(bias) ? &db : nullptr,
                                         has(bias) ? bias->data_ptr() : nullptr, &ds, sum.data_ptr(), dy,
                                         out.data_ptr(), nullptr, nullptr, nullptr, nullptr),
             "add_layer_norm_forward");
  }
  return {sum, out};
}

std::tuple<Tensor, Tensor> mlu_add_layer_norm(const Tensor& x, const Tensor& residual, IntArrayRef normalized_shape,
                                              const c10::optional<Tensor>& weight, const c10::optional<Tensor>& bias,
                                              double eps) {
  return mlu_add_norm(kAddLayerNorm, false, x, residual, normalized_shape, weight, bias, eps);
}

std::tuple<Tensor, Tensor> mlu_add_rms_norm(const Tensor& x, const Tensor& residual, IntArrayRef normalized_shape,
                                            const c10::optional<Tensor>& weight, double eps) {
  return mlu_add_norm(kAddRmsNorm, true, x, residual, normalized_shape, weight, c10::nullopt, eps);
}

Tensor mlu_rms_norm(const Tensor& x, IntArrayRef normalized_shape, const c10::optional<Tensor>& weight, double eps) {
  return std::get<1>(mlu_add_norm(kRmsNorm, true, x, Tensor(), normalized_shape, weight, c10::nullopt, eps));
}

// CPU references: the add rounded to the dtype (as eager's add), the norm in fp32, one rounding.
std::tuple<Tensor, Tensor> cpu_add_layer_norm(const Tensor& x, const Tensor& residual, IntArrayRef normalized_shape,
                                              const c10::optional<Tensor>& weight, const c10::optional<Tensor>& bias,
                                              double eps) {
  check_add_norm(kAddLayerNorm, x, residual, normalized_shape, weight, bias);
  const Tensor sum = at::add(x, residual);
  const auto f = [](const c10::optional<Tensor>& t) -> c10::optional<Tensor> {
    if (!has(t)) return c10::nullopt;
    return t->to(at::kFloat);
  };
  const Tensor out = at::layer_norm(sum.to(at::kFloat), normalized_shape, f(weight), f(bias), eps);
  return {sum, out.to(x.scalar_type())};
}

Tensor cpu_rms(const Tensor& sum, int nn, const c10::optional<Tensor>& weight, double eps) {
  const Tensor s = sum.to(at::kFloat);
  std::vector<std::int64_t> dims;
  for (int i = 0; i < nn; ++i) dims.push_back(s.dim() - nn + i);
  Tensor out = at::mul(s, at::rsqrt(at::add(at::mean(at::mul(s, s), dims, /*keepdim=*/true), eps)));
  if (has(weight)) out = at::mul(out, weight->to(at::kFloat));
  return out.to(sum.scalar_type());
}

std::tuple<Tensor, Tensor> cpu_add_rms_norm(const Tensor& x, const Tensor& residual, IntArrayRef normalized_shape,
                                            const c10::optional<Tensor>& weight, double eps) {
  const int nn = check_add_norm(kAddRmsNorm, x, residual, normalized_shape, weight, c10::nullopt);
  const Tensor sum = at::add(x, residual);
  return {sum, cpu_rms(sum, nn, weight, eps)};
}

Tensor cpu_rms_norm(const Tensor& x, IntArrayRef normalized_shape, const c10::optional<Tensor>& weight, double eps) {
  return cpu_rms(x, check_add_norm(kRmsNorm, x, x, normalized_shape, weight, c10::nullopt), weight, eps);
}

// ---- elementwise programs --------------------------------------------------------------------------

enum class PKind { kInput, kLiteral, kUnary, kBinary, kCompare, kLogical, kLogicalNot, kWhere, kCast, kCastLike };

// How an operand takes part in type promotion (torch's ResultTypeState): dimensioned tensors,
// zero-dim tensors, wrapped numbers (Python scalars).
enum class Rank { kDim, kZeroDim, kWrapped };

struct PNode {
  PKind kind = PKind::kInput;
  int a = -1, b = -1, c = -1;
  int input = -1;
  double value = 0;     // literal value; alpha for add/sub
  bool typed = false;   // literal with ':DTYPE' (a zero-dim tensor rather than a Python scalar)
  at::ScalarType dtype = at::kFloat;  // literal dtype / cast target
  std::string op;       // op name for unary/binary/compare/logical
};

struct Program {
  std::string text;
  std::vector<PNode> nodes;
  int output = -1;
};

struct OpInfo {
  PKind kind;
  int arity;
};

const std::map<std::string, OpInfo>& op_table() {
  static const std::map<std::string, OpInfo> t = {
      {"add", {PKind::kBinary, 2}},        {"sub", {PKind::kBinary, 2}},       {"mul", {PKind::kBinary, 2}},
      {"div", {PKind::kBinary, 2}},        {"pow", {PKind::kBinary, 2}},       {"maximum", {PKind::kBinary, 2}},
      {"minimum", {PKind::kBinary, 2}},    {"neg", {PKind::kUnary, 1}},        {"abs", {PKind::kUnary, 1}},
      {"square", {PKind::kUnary, 1}},      {"relu", {PKind::kUnary, 1}},       {"exp", {PKind::kUnary, 1}},
      {"log", {PKind::kUnary, 1}},         {"sqrt", {PKind::kUnary, 1}},       {"rsqrt", {PKind::kUnary, 1}},
      {"sigmoid", {PKind::kUnary, 1}},     {"tanh", {PKind::kUnary, 1}},       {"silu", {PKind::kUnary, 1}},
      {"reciprocal", {PKind::kUnary, 1}},  {"gelu", {PKind::kUnary, 1}},       {"gelu_tanh", {PKind::kUnary, 1}},
      {"sin", {PKind::kUnary, 1}},         {"cos", {PKind::kUnary, 1}},
      {"eq", {PKind::kCompare, 2}},        {"ne", {PKind::kCompare, 2}},       {"lt", {PKind::kCompare, 2}},
      {"le", {PKind::kCompare, 2}},        {"gt", {PKind::kCompare, 2}},       {"ge", {PKind::kCompare, 2}},
      {"logical_and", {PKind::kLogical, 2}}, {"logical_or", {PKind::kLogical, 2}},
      {"logical_xor", {PKind::kLogical, 2}}, {"logical_not", {PKind::kLogicalNot, 1}},
      {"where", {PKind::kWhere, 3}},       {"cast", {PKind::kCast, 2}},         {"cast_like", {PKind::kCastLike, 2}},
  };
  return t;
}

bool parse_dtype_name(const std::string& s, at::ScalarType* t) {
  static const std::map<std::string, at::ScalarType> names = {
      {"f32", at::kFloat}, {"float32", at::kFloat}, {"float", at::kFloat}, {"f16", at::kHalf},
      {"float16", at::kHalf}, {"half", at::kHalf},  {"i8", at::kChar},     {"int8", at::kChar},
      {"i32", at::kInt},   {"int32", at::kInt},     {"i64", at::kLong},    {"int64", at::kLong},
      {"long", at::kLong}, {"bool", at::kBool},
  };
  const auto it = names.find(s);
  if (it == names.end()) return false;
  *t = it->second;
  return true;
}

class Parser {
 public:
  Parser(const std::string& text, std::size_t inputs) : text_(text), inputs_(inputs) { prog_.text = text; }

  Program parse() {
    // (NAME '=' expr ';')* expr
    while (true) {
      skip();
      const std::size_t save = pos_;
      std::string name;
      if (ident(&name)) {
        skip();
        if (peek() == '=' && !(pos_ + 1 < text_.size() && text_[pos_ + 1] == '=')) {
          ++pos_;
          if (op_table().count(name) || name == "true" || name == "false" || name == "inf" || name == "nan")
            fail(save, "'" + name + "' is reserved and cannot name a value");
          const int v = expr();
          skip();
          expect(';');
          names_[name] = v;
          continue;
        }
      }
      pos_ = save;
      break;
    }
    prog_.output = expr();
    skip();
    if (pos_ != text_.size())
      fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "' after the output expression");
    std::vector<bool> used(inputs_, false);
    for (const PNode& n : prog_.nodes)
      if (n.kind == PKind::kInput) used[static_cast<std::size_t>(n.input)] = true;
    for (std::size_t i = 0; i < inputs_; ++i)
      if (!used[i]) fail(text_.size(), "input $" + std::to_string(i) + " is not used (every input must be)");
    return prog_;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    C10_THROW_ERROR(ValueError, c10::str(kElementwise, ": program \"", text_, "\": at position ", at, ": ", what));
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail(pos_, std::string("expected '") + c + "'" + (pos_ < text_.size() ? "" : " (end of program)"));
    ++pos_;
  }
  bool ident(std::string* out) {
    if (!(std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_')) return false;
    const std::size_t b = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    *out = text_.substr(b, pos_ - b);
    return true;
  }
  int add(PNode n) {
    prog_.nodes.push_back(std::move(n));
    return static_cast<int>(prog_.nodes.size()) - 1;
  }
  int literal(double v, bool floating_lit, bool boolean, std::size_t at) {
    PNode n;
    n.kind = PKind::kLiteral;
    n.value = v;
    n.dtype = boolean ? at::kBool : floating_lit ? at::kFloat : at::kLong;
    skip();
    if (peek() == ':') {
      ++pos_;
      skip();
      std::string dt;
      at::ScalarType t;
      if (!ident(&dt) || !parse_dtype_name(dt, &t))
        fail(at, "unknown dtype '" + dt + "' (f32, f16, i8, i32, i64, bool)");
      n.dtype = t;
      n.typed = true;
    }
    return add(n);
  }
  bool is_literal(int id) const { return prog_.nodes[static_cast<std::size_t>(id)].kind == PKind::kLiteral; }

  int expr() {
    skip();
    const std::size_t at = pos_;
    const char c = peek();
    if (c == '$') {
      ++pos_;
      const std::size_t b = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (b == pos_) fail(at, "expected an input index after '$'");
      const long long i = std::atoll(text_.substr(b, pos_ - b).c_str());
      if (i < 0 || static_cast<std::size_t>(i) >= inputs_)
        fail(at, "input $" + std::to_string(i) + " does not exist (" + std::to_string(inputs_) + " inputs given)");
      PNode n;
      n.kind = PKind::kInput;
      n.input = static_cast<int>(i);
      return add(n);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      // number, -inf
      std::size_t b = pos_;
      if (c == '-' || c == '+') {
        ++pos_;
        std::string word;
        const std::size_t w = pos_;
        if (ident(&word)) {
          if (word == "inf") return literal(c == '-' ? -INFINITY : INFINITY, true, false, at);
          pos_ = w;
          fail(at, "expected a number after '" + std::string(1, c) + "'");
        }
      }
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                     ((text_[pos_] == '-' || text_[pos_] == '+') &&
                                      (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
        ++pos_;
      const std::string num = text_.substr(b, pos_ - b);
      const bool floating_lit = num.find_first_of(".eE") != std::string::npos;
      char* end = nullptr;
      const double v = std::strtod(num.c_str(), &end);
      if (end == nullptr || *end != '\0' || num.empty()) fail(at, "bad number '" + num + "'");
      return literal(v, floating_lit, false, at);
    }
    std::string word;
    if (!ident(&word)) fail(at, c == '\0' ? "expected an expression (end of program)"
                                         : "expected an expression, got '" + std::string(1, c) + "'");
    if (word == "true" || word == "false") return literal(word == "true" ? 1.0 : 0.0, false, true, at);
    if (word == "inf") return literal(INFINITY, true, false, at);
    if (word == "nan") return literal(NAN, true, false, at);
    skip();
    if (peek() != '(') {
      const auto it = names_.find(word);
      if (it == names_.end()) fail(at, "unknown name '" + word + "'");
      return it->second;
    }
    const auto it = op_table().find(word);
    if (it == op_table().end()) {
      std::string known;
      for (const auto& [k, v] : op_table()) known += (known.empty() ? "" : " ") + k;
      fail(at, "unknown op '" + word + "' (known: " + known + ")");
    }
    ++pos_;  // '('
    PNode n;
    n.kind = it->second.kind;
    n.op = word;
    std::vector<int> args;
    if (n.kind == PKind::kCast) {
      args.push_back(expr());
      expect(',');
      skip();
      std::string dt;
      at::ScalarType t;
      const std::size_t dpos = pos_;
      if (!ident(&dt) || !parse_dtype_name(dt, &t)) fail(dpos, "cast: unknown dtype '" + dt + "'");
      n.dtype = t;
      expect(')');
    } else {
      skip();
      while (true) {
        args.push_back(expr());
        skip();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(')');
        break;
      }
      const bool alpha_ok = n.op == "add" || n.op == "sub";
      const int arity = it->second.arity;
      if (alpha_ok && args.size() == 3) {
        if (!is_literal(args[2]) || prog_.nodes[static_cast<std::size_t>(args[2])].typed)
          fail(at, word + ": alpha (the third operand) must be a number literal");
        n.value = prog_.nodes[static_cast<std::size_t>(args[2])].value;
        args.pop_back();
      } else {
        n.value = 1.0;
      }
      if (static_cast<int>(args.size()) != arity)
        fail(at, word + " takes " + std::to_string(arity) + (alpha_ok ? " (or 3 with alpha)" : "") +
                     " operands, got " + std::to_string(args.size()));
    }
    if (n.kind == PKind::kCastLike && is_literal(args[1]))
      fail(at, "cast_like: the second operand must be a tensor (its dtype is the result's)");
    bool any_tensor = false;
    for (int a : args) any_tensor = any_tensor || !is_literal(a);
    if (!any_tensor) fail(at, word + ": needs at least one tensor operand (fold constants before fusing)");
    n.a = args.size() > 0 ? args[0] : -1;
    n.b = args.size() > 1 ? args[1] : -1;
    n.c = args.size() > 2 ? args[2] : -1;
    return add(n);
  }

  const std::string& text_;
  std::size_t inputs_;
  std::size_t pos_ = 0;
  Program prog_;
  std::map<std::string, int> names_;
};

// ---- result dtypes (torch's ResultTypeState) ----

struct TypeInfo {
  at::ScalarType dtype;
  Rank rank;
};

at::ScalarType promote_skip_undefined(at::ScalarType a, at::ScalarType b) {
  if (a == at::ScalarType::Undefined) return b;
  if (b == at::ScalarType::Undefined) return a;
  return c10::promoteTypes(a, b);
}

at::ScalarType combine_categories(at::ScalarType higher, at::ScalarType lower) {
  if (at::isFloatingType(higher)) return higher;
  if (higher == at::kBool || at::isFloatingType(lower)) return promote_skip_undefined(higher, lower);
  if (higher != at::ScalarType::Undefined) return higher;
  return lower;
}

TypeInfo result_of(std::initializer_list<TypeInfo> operands) {
  at::ScalarType dim = at::ScalarType::Undefined, zero = at::ScalarType::Undefined,
                 wrapped = at::ScalarType::Undefined;
  bool any_dim = false;
  for (const TypeInfo& t : operands) {
    if (t.rank == Rank::kDim) {
      dim = promote_skip_undefined(dim, t.dtype);
      any_dim = true;
    } else if (t.rank == Rank::kZeroDim) {
      zero = promote_skip_undefined(zero, t.dtype);
    } else {
      wrapped = promote_skip_undefined(wrapped, t.dtype);
    }
  }
  return {combine_categories(dim, combine_categories(zero, wrapped)), any_dim ? Rank::kDim : Rank::kZeroDim};
}

bool floating_unary(const std::string& op) {
  return !(op == "neg" || op == "abs" || op == "square" || op == "relu");
}

std::vector<TypeInfo> infer_types(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<TypeInfo> t(p.nodes.size(), TypeInfo{at::kFloat, Rank::kDim});
  for (std::size_t id = 0; id < p.nodes.size(); ++id) {  // operands precede their users (parse order)
    const PNode& n = p.nodes[id];
    auto at_ = [&](int i) { return t[static_cast<std::size_t>(i)]; };
    switch (n.kind) {
      case PKind::kInput: {
        const Tensor& x = inputs[static_cast<std::size_t>(n.input)];
        t[id] = {x.scalar_type(), x.dim() == 0 ? Rank::kZeroDim : Rank::kDim};
        break;
      }
      case PKind::kLiteral: t[id] = {n.dtype, n.typed ? Rank::kZeroDim : Rank::kWrapped}; break;
      case PKind::kUnary: {
        TypeInfo r = at_(n.a);
        if (floating_unary(n.op) && !at::isFloatingType(r.dtype)) r.dtype = at::kFloat;
        t[id] = r;
        break;
      }
      case PKind::kBinary: {
        TypeInfo r = result_of({at_(n.a), at_(n.b)});
        if (n.op == "div" && !at::isFloatingType(r.dtype)) r.dtype = at::kFloat;
        t[id] = r;
        break;
      }
      case PKind::kCompare:
      case PKind::kLogical: t[id] = {at::kBool, result_of({at_(n.a), at_(n.b)}).rank}; break;
      case PKind::kLogicalNot: t[id] = {at::kBool, at_(n.a).rank}; break;
      case PKind::kWhere: {
        TypeInfo r = result_of({at_(n.b), at_(n.c)});
        r.rank = result_of({at_(n.a), at_(n.b), at_(n.c)}).rank;
        t[id] = r;
        break;
      }
      case PKind::kCast: t[id] = {n.dtype, at_(n.a).rank == Rank::kDim ? Rank::kDim : Rank::kZeroDim}; break;
      case PKind::kCastLike:
        t[id] = {at_(n.b).dtype, at_(n.a).rank == Rank::kDim ? Rank::kDim : Rank::kZeroDim};
        break;
    }
  }
  return t;
}

std::vector<std::int64_t> broadcast_all(const std::vector<Tensor>& inputs) {
  std::vector<std::int64_t> shape;
  for (const Tensor& t : inputs) shape = at::infer_size(shape, t.sizes());
  return shape;
}

mlu::UnaryOp unary_op(const std::string& s) {
  static const std::map<std::string, mlu::UnaryOp> m = {
      {"neg", mlu::UnaryOp::kNeg},         {"abs", mlu::UnaryOp::kAbs},           {"square", mlu::UnaryOp::kSquare},
      {"relu", mlu::UnaryOp::kRelu},       {"exp", mlu::UnaryOp::kExp},           {"log", mlu::UnaryOp::kLog},
      {"sqrt", mlu::UnaryOp::kSqrt},       {"rsqrt", mlu::UnaryOp::kRsqrt},       {"sigmoid", mlu::UnaryOp::kSigmoid},
      {"tanh", mlu::UnaryOp::kTanh},       {"silu", mlu::UnaryOp::kSilu},         {"gelu", mlu::UnaryOp::kGelu},
      {"reciprocal", mlu::UnaryOp::kReciprocal}, {"gelu_tanh", mlu::UnaryOp::kGeluTanh},
      {"sin", mlu::UnaryOp::kSin},         {"cos", mlu::UnaryOp::kCos},
  };
  return m.at(s);
}
mlu::BinaryOp binary_op(const std::string& s) {
  static const std::map<std::string, mlu::BinaryOp> m = {
      {"add", mlu::BinaryOp::kAdd}, {"sub", mlu::BinaryOp::kSub},         {"mul", mlu::BinaryOp::kMul},
      {"div", mlu::BinaryOp::kDiv}, {"pow", mlu::BinaryOp::kPow},         {"maximum", mlu::BinaryOp::kMaximum},
      {"minimum", mlu::BinaryOp::kMinimum},
  };
  return m.at(s);
}
mlu::CompareOp compare_op(const std::string& s) {
  static const std::map<std::string, mlu::CompareOp> m = {
      {"eq", mlu::CompareOp::kEq}, {"ne", mlu::CompareOp::kNe}, {"lt", mlu::CompareOp::kLt},
      {"le", mlu::CompareOp::kLe}, {"gt", mlu::CompareOp::kGt}, {"ge", mlu::CompareOp::kGe},
  };
  return m.at(s);
}
mlu::LogicalOp logical_op(const std::string& s) {
  if (s == "logical_and") return mlu::LogicalOp::kAnd;
  if (s == "logical_or") return mlu::LogicalOp::kOr;
  return mlu::LogicalOp::kXor;
}

mlu::ElementwiseProgram to_mlu(const Program& p, const std::vector<TypeInfo>& types, const char* op) {
  mlu::ElementwiseProgram out;
  std::vector<int> ids(p.nodes.size(), -1);
  for (std::size_t id = 0; id < p.nodes.size(); ++id) {
    const PNode& n = p.nodes[id];
    auto o = [&](int i) { return ids[static_cast<std::size_t>(i)]; };
    switch (n.kind) {
      case PKind::kInput: ids[id] = out.input(n.input); break;
      case PKind::kLiteral: ids[id] = out.constant(n.value, mlu_dtype(n.dtype, op)); break;
      case PKind::kUnary: ids[id] = out.unary(unary_op(n.op), o(n.a)); break;
      case PKind::kBinary: ids[id] = out.binary(binary_op(n.op), o(n.a), o(n.b), n.value); break;
      case PKind::kCompare: ids[id] = out.compare(compare_op(n.op), o(n.a), o(n.b)); break;
      case PKind::kLogical: ids[id] = out.logical(logical_op(n.op), o(n.a), o(n.b)); break;
      case PKind::kLogicalNot: ids[id] = out.logical_not(o(n.a)); break;
      case PKind::kWhere: ids[id] = out.where(o(n.a), o(n.b), o(n.c)); break;
      case PKind::kCast: ids[id] = out.cast(o(n.a), mlu_dtype(n.dtype, op)); break;
      case PKind::kCastLike: ids[id] = out.cast(o(n.a), mlu_dtype(types[id].dtype, op)); break;
    }
  }
  out.set_output(ids[static_cast<std::size_t>(p.output)]);
  return out;
}

}  // namespace

namespace {
Tensor run_program(at::TensorList inputs_in, c10::string_view program_text, bool fp32_intermediates,
                   const Tensor* out = nullptr);
}  // namespace

// Declared in op_support.h: other op families compute through programs too (program_ops.cpp).
// Each such program is one ATen op, so it computes as torch's kernels do: fp16 intermediates in
// fp32, rounded once on store (mlu::ElementwiseProgram::fp32_intermediates).
Tensor run_elementwise_program(at::TensorList inputs_in, c10::string_view program_text) {
  return run_program(inputs_in, program_text, true);
}

namespace {

// out: write the result into this tensor (any strides; the inputs broadcast to its shape, the
// result converts to its dtype as a copy would) instead of a new one.
Tensor run_program(at::TensorList inputs_in, c10::string_view program_text, bool fp32_intermediates,
                   const Tensor* out) {
  TORCH_CHECK_VALUE(!inputs_in.empty(), kElementwise, ": needs at least one input tensor");
  // The device: the first input that is not a CPU scalar.
  const Tensor* dev_of = &inputs_in[0];
  for (const Tensor& t : inputs_in)
    if (t.device().type() != at::kCPU) {
      dev_of = &t;
      break;
    }
  OpScope op(kElementwise, *dev_of);
  std::vector<Tensor> inputs;
  inputs.reserve(inputs_in.size());
  for (std::size_t i = 0; i < inputs_in.size(); ++i) {
    const Tensor& t = inputs_in[i];
    TORCH_CHECK(t.defined(), op.name(), ": input ", i, " is undefined");
    // A zero-dim CPU tensor is a scalar operand, as torch's TensorIterator allows: upload it. A
    // wrapped Python float (float64, out= and Scalar overloads pass them) computes as float32: it
    // only sets the result's category, never its precision (torch's wrapped-number rule).
    if (t.device().type() == at::kCPU && t.dim() == 0) {
      Tensor scalar = t.to(op.device());
      if (t.unsafeGetTensorImpl()->is_wrapped_number() && scalar.scalar_type() == at::kDouble)
        scalar = scalar.to(at::kFloat);
      inputs.push_back(scalar);
    } else {
      inputs.push_back(t);
    }
    const std::string name = "input " + std::to_string(i);
    check_on_device(inputs.back(), op.device(), op.name(), name.c_str());
  }
  const std::string text(program_text);
  const Program prog = Parser(text, inputs.size()).parse();
  const std::vector<TypeInfo> types = infer_types(prog, inputs);
  const at::ScalarType out_dtype = types[static_cast<std::size_t>(prog.output)].dtype;
  const auto is_double = [](const Tensor& t) { return t.scalar_type() == at::kDouble; };
  if (std::any_of(inputs.begin(), inputs.end(), is_double) || (out != nullptr && out->scalar_type() == at::kDouble)) {
    // No fp64 on the VFU: float64 inputs narrowed to fp32 (narrow_float64's range check), the
    // program run in fp32, its result widened to the dtype torch's promotion gives (or out's).
    for (Tensor& t : inputs)
      if (is_double(t)) t = narrow_float64(t, op.name());
    const Tensor narrow_result = run_program(inputs, program_text, fp32_intermediates, nullptr);
    if (out == nullptr) return narrow_result.to(out_dtype);
    out->copy_(narrow_result);
    return *out;
  }
  std::vector<std::int64_t> shape = broadcast_all(inputs);
  Tensor y;
  if (out != nullptr) {
    TORCH_CHECK(out->defined(), op.name(), ": out is undefined");
    check_on_device(*out, op.device(), op.name(), "out");
    TORCH_CHECK_VALUE(at::can_cast(out_dtype, out->scalar_type()), op.name(), ": the program's result dtype ",
                      out_dtype, " cannot be cast to out's dtype ", out->scalar_type());
    // The inputs broadcast to out's shape (libmlu wants y's dims = the inputs' broadcast shape).
    const std::vector<std::int64_t> to(out->sizes().begin(), out->sizes().end());
    bool broadcasts = shape.size() <= to.size();
    for (std::size_t i = 1; broadcasts && i <= shape.size(); ++i) {
      const std::int64_t s = shape[shape.size() - i];
      broadcasts = s == 1 || s == to[to.size() - i];
    }
    TORCH_CHECK_VALUE(broadcasts, op.name(), ": the inputs' broadcast shape ", IntArrayRef(shape),
                      " does not broadcast to out's shape ", out->sizes());
    for (Tensor& t : inputs)
      if (t.sizes() != out->sizes()) t = t.expand(out->sizes());
    shape = to;
    y = *out;
  } else {
    const Tensor* like = nullptr;
    for (const Tensor& t : inputs)
      if (t.sizes() == IntArrayRef(shape)) {
        like = &t;
        break;
      }
    y = like ? empty_like_dense(*like, shape, out_dtype) : empty_on(op.device(), shape, out_dtype);
  }
  mlu::ElementwiseProgram mp = to_mlu(prog, types, op.name());
  mp.fp32_intermediates = fp32_intermediates;
  std::vector<mlu::TensorDesc> descs;
  descs.reserve(inputs.size());
  for (const Tensor& t : inputs) descs.push_back(desc(t, op.name()));
  std::vector<mlu::TensorArg> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) args.push_back({&descs[i], inputs[i].data_ptr()});
  const mlu::TensorDesc dy = desc(y, op.name());
  op.check(mlu::elementwise_program(op.handle(), mp, args, dy, y.data_ptr()), "elementwise_program");
  return y;
}

// mlu::elementwise (what the fusion pass emits for a chain of ATen ops): each intermediate
// rounded to its dtype, as the unfused chain rounds it.
Tensor mlu_elementwise(at::TensorList inputs, c10::string_view program) { return run_program(inputs, program, false); }

// mlu::elementwise_into (Inductor's kernels on the device, torch_mlu/inductor_kernel.py): the
// result stored straight into the output buffer's view (no copy kernel), fp16 steps computed in
// fp32 and rounded once on store, as Inductor's generated kernels compute.
Tensor mlu_elementwise_into(at::TensorList inputs, c10::string_view program, const Tensor& out) {
  run_program(inputs, program, true, &out);
  return out;
}

// The CPU reference: the chain of at:: ops. Literals are wrapped numbers (Python scalars) or
// zero-dim tensors; a step whose result is fp16 computes in fp32 and rounds once, as the device.
Tensor cpu_elementwise(at::TensorList inputs_in, c10::string_view program_text) {
  TORCH_CHECK_VALUE(!inputs_in.empty(), kElementwise, ": needs at least one input tensor");
  std::vector<Tensor> inputs(inputs_in.begin(), inputs_in.end());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].defined(), kElementwise, ": input ", i, " is undefined");
    TORCH_CHECK(inputs[i].device().type() == at::kCPU, kElementwise, ": expected input ", i,
                " on the CPU (mixed devices), got ", inputs[i].device());
  }
  const std::string text(program_text);
  const Program prog = Parser(text, inputs.size()).parse();
  const std::vector<TypeInfo> types = infer_types(prog, inputs);
  std::vector<Tensor> v(prog.nodes.size());
  for (std::size_t id = 0; id < prog.nodes.size(); ++id) {
    const PNode& n = prog.nodes[id];
    const at::ScalarType rt = types[id].dtype;
    // Operand `i` for a step computing in `rt`: fp16 operands of fp16 steps compute in fp32.
    auto arg = [&](int i) {
      const Tensor& t = v[static_cast<std::size_t>(i)];
      return t.scalar_type() == at::kHalf ? t.to(at::kFloat) : t;
    };
    auto arg_for = [&](int i, bool half_step) {
      const Tensor& t = v[static_cast<std::size_t>(i)];
      if (half_step && t.scalar_type() == at::kHalf) return t.to(at::kFloat);
      return t;
    };
    const bool half_step = rt == at::kHalf;
    Tensor r;
    switch (n.kind) {
      case PKind::kInput: v[id] = inputs[static_cast<std::size_t>(n.input)]; continue;
      case PKind::kLiteral: {
        const at::Scalar s = n.dtype == at::kBool    ? at::Scalar(n.value != 0)
                             : at::isFloatingType(n.dtype) ? at::Scalar(n.value)
                                                           : at::Scalar(static_cast<std::int64_t>(n.value));
        v[id] = n.typed ? at::scalar_tensor(s, at::TensorOptions().dtype(n.dtype))
                        : at::native::wrapped_scalar_tensor(s);
        continue;
      }
      case PKind::kUnary: {
        const Tensor a = arg_for(n.a, half_step);
        const std::string& o = n.op;
        if (o == "neg") r = at::neg(a);
        else if (o == "abs") r = at::abs(a);
        else if (o == "square") r = at::mul(a, a);
        else if (o == "relu") r = at::relu(a);
        else {
          const Tensor f = at::isFloatingType(a.scalar_type()) ? a : a.to(at::kFloat);
          if (o == "exp") r = at::exp(f);
          else if (o == "log") r = at::log(f);
          else if (o == "sqrt") r = at::sqrt(f);
          else if (o == "rsqrt") r = at::rsqrt(f);
          else if (o == "sigmoid") r = at::sigmoid(f);
          else if (o == "tanh") r = at::tanh(f);
          else if (o == "silu") r = at::silu(f);
          else if (o == "reciprocal") r = at::reciprocal(f);
          else if (o == "gelu") r = at::gelu(f, "none");
          else if (o == "sin") r = at::sin(f);
          else if (o == "cos") r = at::cos(f);
          else r = at::gelu(f, "tanh");
        }
        break;
      }
      case PKind::kBinary: {
        const Tensor a = arg_for(n.a, half_step), b = arg_for(n.b, half_step);
        const std::string& o = n.op;
        // An integral-valued alpha as an int (torch refuses a float alpha for integral tensors).
        const at::Scalar alpha = std::nearbyint(n.value) == n.value && std::abs(n.value) < 9.0e15
                                     ? at::Scalar(static_cast<std::int64_t>(n.value))
                                     : at::Scalar(n.value);
        if (o == "add") r = at::add(a, b, alpha);
        else if (o == "sub") r = at::sub(a, b, alpha);
        else if (o == "mul") r = at::mul(a, b);
        else if (o == "div") r = at::div(a, b);
        else if (o == "pow") r = at::pow(a, b);
        else if (o == "maximum") r = at::maximum(a, b);
        else r = at::minimum(a, b);
        break;
      }
      case PKind::kCompare: {
        const Tensor a = arg(n.a), b = arg(n.b);
        const std::string& o = n.op;
        if (o == "eq") r = at::eq(a, b);
        else if (o == "ne") r = at::ne(a, b);
        else if (o == "lt") r = at::lt(a, b);
        else if (o == "le") r = at::le(a, b);
        else if (o == "gt") r = at::gt(a, b);
        else r = at::ge(a, b);
        break;
      }
      case PKind::kLogical: {
        const Tensor a = v[static_cast<std::size_t>(n.a)], b = v[static_cast<std::size_t>(n.b)];
        r = n.op == "logical_and" ? at::logical_and(a, b) : n.op == "logical_or" ? at::logical_or(a, b)
                                                                                 : at::logical_xor(a, b);
        break;
      }
      case PKind::kLogicalNot: r = at::logical_not(v[static_cast<std::size_t>(n.a)]); break;
      case PKind::kWhere: {
        const Tensor c = v[static_cast<std::size_t>(n.a)];
        const Tensor a = v[static_cast<std::size_t>(n.b)].to(rt), b = v[static_cast<std::size_t>(n.c)].to(rt);
        r = at::where(c.scalar_type() == at::kBool ? c : c.ne(0), a, b);
        break;
      }
      case PKind::kCast: r = v[static_cast<std::size_t>(n.a)].to(n.dtype); break;
      case PKind::kCastLike: r = v[static_cast<std::size_t>(n.a)].to(rt); break;
    }
    v[id] = r.scalar_type() == rt ? r : r.to(rt);
  }
  Tensor out = v[static_cast<std::size_t>(prog.output)];
  const std::vector<std::int64_t> shape = broadcast_all(inputs);
  if (out.sizes() != IntArrayRef(shape)) out = out.expand(shape);
  return out.contiguous();
}

// The CPU reference of elementwise_into: the chain of at:: ops, copied into out.
Tensor cpu_elementwise_into(at::TensorList inputs, c10::string_view program, const Tensor& out) {
  TORCH_CHECK(out.device().type() == at::kCPU, "mlu::elementwise_into: expected out on the CPU, got ", out.device());
  out.copy_(cpu_elementwise(inputs, program));
  return out;
}

// ---- inference only ----------------------------------------------------------------------------------

// Autograd kernel of every mlu:: op: refuses inputs that require grad while grad mode is on (there
// is no backward formula), otherwise runs the op below autograd.
void inference_only(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const std::size_t n = schema.arguments().size();
  if (c10::GradMode::is_enabled()) {
    for (std::size_t i = 0; i < n; ++i) {
      const c10::IValue& v = (*stack)[stack->size() - n + i];
      bool grad = false;
      if (v.isTensor()) {
        grad = v.toTensor().defined() && v.toTensor().requires_grad();
      } else if (v.isTensorList()) {
        for (const Tensor& t : v.toTensorList().vec()) grad = grad || (t.defined() && t.requires_grad());
      }
      TORCH_CHECK(!grad, schema.name(), ": argument '", schema.arguments()[i].name(),
                  "' requires grad, but the fused ops are inference-only (no backward formula); run the fused "
                  "model under torch.no_grad() or torch.inference_mode() (torch_mlu.fuse / mlusim --fuse are for "
                  "inference)");
    }
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  op.callBoxed(stack);
}

}  // namespace

TORCH_LIBRARY(mlu, m) {
  m.def("conv_bn_act(Tensor input, Tensor weight, Tensor? bias, Tensor? bn_weight, Tensor? bn_bias, Tensor? bn_mean, "
        "Tensor? bn_var, float eps, int[2] stride, int[2] padding, int[2] dilation, int groups, str activation) -> "
        "Tensor");
  m.def("linear_act(Tensor input, Tensor weight, Tensor? bias, str activation) -> Tensor");
  m.def("linear_residual(Tensor input, Tensor weight, Tensor? bias, Tensor residual, str activation) -> Tensor");
  m.def("add_layer_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps) -> (Tensor, Tensor)");
  m.def("add_rms_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, float eps) -> "
        "(Tensor, Tensor)");
  m.def("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> Tensor");
  m.def("elementwise(Tensor[] inputs, str program) -> Tensor");
  m.def("elementwise_into(Tensor[] inputs, str program, Tensor(a!) out) -> Tensor(a!)");
}

TORCH_LIBRARY_IMPL(mlu, PrivateUse1, m) {
  m.impl("conv_bn_act", TORCH_FN(mlu_conv_bn_act));
  m.impl("linear_act", TORCH_FN(mlu_linear_act));
  m.impl("linear_residual", TORCH_FN(mlu_linear_residual));
  m.impl("add_layer_norm", TORCH_FN(mlu_add_layer_norm));
  m.impl("add_rms_norm", TORCH_FN(mlu_add_rms_norm));
  m.impl("rms_norm", TORCH_FN(mlu_rms_norm));
  m.impl("elementwise", TORCH_FN(mlu_elementwise));
  m.impl("elementwise_into", TORCH_FN(mlu_elementwise_into));
}

TORCH_LIBRARY_IMPL(mlu, CPU, m) {
  m.impl("conv_bn_act", TORCH_FN(cpu_conv_bn_act));
  m.impl("linear_act", TORCH_FN(cpu_linear_act));
  m.impl("linear_residual", TORCH_FN(cpu_linear_residual));
  m.impl("add_layer_norm", TORCH_FN(cpu_add_layer_norm));
  m.impl("add_rms_norm", TORCH_FN(cpu_add_rms_norm));
  m.impl("rms_norm", TORCH_FN(cpu_rms_norm));
  m.impl("elementwise", TORCH_FN(cpu_elementwise));
  m.impl("elementwise_into", TORCH_FN(cpu_elementwise_into));
}

TORCH_LIBRARY_IMPL(mlu, Autograd, m) {
  m.impl("conv_bn_act", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("linear_act", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("linear_residual", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("add_layer_norm", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("add_rms_norm", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("rms_norm", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("elementwise", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
  m.impl("elementwise_into", torch::CppFunction::makeFromBoxedFunction<&inference_only>());
}

}  // namespace mlusim::bridge::ops
