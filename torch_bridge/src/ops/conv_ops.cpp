// ATen convolution kernels over libmlu's conv.h. torch 1.13 routes convolutions of a PrivateUse1
// tensor to exactly two ops (aten/src/ATen/native/Convolution.cpp, ConvBackend::Overrideable):
// convolution_overrideable and convolution_backward_overrideable. 1-d convolutions arrive as 2-d
// ones with H = 1 (torch's view1d_as_2d runs before the backend is called); 3-d ones are not
// supported by libmlu. Zero-batch / zero-channel inputs never reach them (torch's Empty backend).
//
//   forward (transposed = false):  y  = conv2d_forward(x, w) (+ bias)
//   backward:                      dx = conv2d_backward_data(dy, w), dw = conv2d_backward_weight(x, dy),
//                                  db = sum of dy over N, H, W (libmlu reduce)
//   transposed convolution (conv_transpose2d, weights [C_in, C_out/groups, KH, KW]) is the
//   backward-data of the convolution with those weights, and its gradients are the forward and
//   backward-weight of that convolution:
//                                  y  = conv2d_backward_data(x, w) (+ bias: its epilogue, one rounding)
//                                  dx = conv2d_forward(dy, w),  dw = conv2d_backward_weight(dy, x)
//   output_padding (< stride or dilation, as torch checks) adds rows/columns no input tap
//   reaches: backward-data writes them as zeros, as conv_transpose2d does before the bias.
//
// Layouts: operands go to libmlu with their strides (channels_last is an NCHW descriptor with NHWC
// strides). The forward result is channels_last when the input or the weights are, as torch's CPU
// backends (mkldnn_conv_use_channels_last), contiguous otherwise; grad_input and grad_weight take
// the layout of input and weight.
#include <climits>

#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/reduce.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::Tensor;

constexpr const char* kForward = "aten::convolution_overrideable";
constexpr const char* kBackward = "aten::convolution_backward_overrideable";

int to_int(std::int64_t v, const char* op, const char* what) {
  TORCH_CHECK(v >= INT_MIN && v <= INT_MAX, op, ": ", what, " ", v, " is out of range");
  return static_cast<int>(v);
}

mlu::ConvParams conv_params(const char* op, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                            std::int64_t groups) {
  TORCH_CHECK_NOT_IMPLEMENTED(stride.size() == 2 && padding.size() == 2 && dilation.size() == 2, op,
                              ": only 1-d and 2-d convolutions are supported on device mlu (libmlu"
                              "conv2d), got ", stride.size(), " spatial dims");
  for (std::size_t i = 0; i < 2; ++i) {
    TORCH_CHECK(stride[i] >= 1, op, ": stride must be positive, got ", stride);
    TORCH_CHECK(padding[i] >= 0, op, ": padding must be non-negative, got ", padding);
    TORCH_CHECK(dilation[i] >= 1, op, ": dilation must be positive, got ", dilation);
  }
  TORCH_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  mlu::ConvParams p;
  p.stride_h = to_int(stride[0], op, "stride");
  p.stride_w = to_int(stride[1], op, "stride");
  p.pad_h = to_int(padding[0], op, "padding");
  p.pad_w = to_int(padding[1], op, "padding");
  p.dilation_h = to_int(dilation[0], op, "dilation");
  p.dilation_w = to_int(dilation[1], op, "dilation");
  p.groups = to_int(groups, op, "groups");
  return p;
}

// input/weight (and bias) on the op's device, 4-d, one dtype among float32 / float16.
void check_tensors(const OpScope& op, const Tensor& input, const Tensor& weight, const Tensor* bias,
                   const char* input_name) {
  check_on_device(input, op.device(), op.name(), input_name);
  check_on_device(weight, op.device(), op.name(), "weight");
  TORCH_CHECK_NOT_IMPLEMENTED(input.dim() == 4 && weight.dim() == 4, op.name(), ": only 1-d and 2-d convolutions are "
                              "supported on device mlu (libmlu conv2d), got ", input_name, " ",
                              input.sizes(), " and weight ", weight.sizes());
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), op.name(), ": Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  if (bias && bias->defined()) {
    check_on_device(*bias, op.device(), op.name(), "bias");
    TORCH_CHECK(bias->scalar_type() == input.scalar_type(), op.name(), ": Input type (", input.scalar_type(),
                ") and bias type (", bias->scalar_type(), ") should be the same");
  }
  // bf16 passes here; libmlu refuses it on a preset without bf16 arithmetic, naming the preset.
  const at::ScalarType t = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16, op.name(), ": dtype ", t,
                              " is not supported on device mlu (libmlu conv2d takes float32, float16 and bfloat16)");
}

at::MemoryFormat result_format(const Tensor& input, const Tensor& weight) {
  const bool cl = input.suggest_memory_format() == at::MemoryFormat::ChannelsLast ||
                  weight.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
  return cl ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

// Gradients take their tensor's own layout: AccumulateGrad copies a gradient whose strides differ
// from its leaf's.
at::MemoryFormat own_format(const Tensor& t) {
  return t.suggest_memory_format() == at::MemoryFormat::ChannelsLast ? at::MemoryFormat::ChannelsLast
                                                                      : at::MemoryFormat::Contiguous;
}

Tensor empty_conv(const OpScope& op, IntArrayRef sizes, at::ScalarType dtype, at::MemoryFormat fmt) {
  return at::empty(sizes, at::TensorOptions().device(op.device()).dtype(dtype).memory_format(fmt));
}

// ---- libmlu calls --------------------------------------------------------------------------------

void forward(OpScope& op, const mlu::ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* bias,
             const Tensor& y) {
  const mlu::TensorDesc dx = desc(x, op.name()), dw = desc(w, op.name()), dy = desc(y, op.name());
  mlu::TensorDesc db;
  if (bias) db = desc(*bias, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_conv2d_forward_workspace_size(op.handle(), p, dx, dw, dy, &bytes),
           "get_conv2d_forward_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::conv2d_forward(op.handle(), p, dx, x.data_ptr(), dw, w.data_ptr(), bias ? &db : nullptr,
                               bias ? bias->data_ptr() : nullptr, dy, y.data_ptr(), ws, bytes),
           "conv2d_forward");
}

// dx from dy and w (dx: the convolution's input shape), + bias[c] when given (conv_transpose).
void backward_data(OpScope& op, const mlu::ConvParams& p, const Tensor& dy, const Tensor& w, const Tensor* bias,
                   const Tensor& dx) {
  const mlu::TensorDesc ddy = desc(dy, op.name()), dw = desc(w, op.name()), ddx = desc(dx, op.name());
  mlu::TensorDesc db;
  if (bias) db = desc(*bias, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_conv2d_backward_data_workspace_size(op.handle(), p, ddy, dw, ddx, &bytes),
           "get_conv2d_backward_data_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::conv2d_backward_data(op.handle(), p, ddy, dy.data_ptr(), dw, w.data_ptr(), bias ? &db : nullptr,
                                     bias ? bias->data_ptr() : nullptr, ddx, dx.data_ptr(), ws, bytes),
           "conv2d_backward_data");
}

// dw from x (the convolution's input) and dy (its output's gradient).
void backward_weight(OpScope& op, const mlu::ConvParams& p, const Tensor& x, const Tensor& dy, const Tensor& dw) {
  const mlu::TensorDesc dx = desc(x, op.name()), ddy = desc(dy, op.name()), ddw = desc(dw, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_conv2d_backward_weight_workspace_size(op.handle(), p, dx, ddy, ddw, &bytes),
           "get_conv2d_backward_weight_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::conv2d_backward_weight(op.handle(), p, dx, x.data_ptr(), ddy, dy.data_ptr(), ddw, dw.data_ptr(), ws,
                                       bytes),
           "conv2d_backward_weight");
}

// db[c] = sum of dy over N, H, W.
void bias_grad(OpScope& op, const Tensor& dy, const Tensor& db) {
  if (db.numel() == 0) return;
  const mlu::TensorDesc ddy = desc(dy, op.name()), ddb = desc(db, op.name());
  const std::vector<int> dims{0, 2, 3};
  std::size_t bytes = 0;
  op.check(mlu::get_reduce_workspace_size(op.handle(), ddy, dims, &bytes), "get_reduce_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::reduce(op.handle(), mlu::ReduceOp::kSum, ddy, dy.data_ptr(), dims, false, ddb, db.data_ptr(), ws,
                       bytes),
           "reduce");
}

// ---- the two ATen ops -----------------------------------------------------------------------------

std::int64_t out_size(std::int64_t in, std::int64_t k, const mlu::ConvParams& p, int dim) {
  const std::int64_t pad = dim == 0 ? p.pad_h : p.pad_w, stride = dim == 0 ? p.stride_h : p.stride_w,
                     dil = dim == 0 ? p.dilation_h : p.dilation_w;
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

std::int64_t transposed_size(std::int64_t in, std::int64_t k, std::int64_t out_pad, const mlu::ConvParams& p,
                             int dim) {
  const std::int64_t pad = dim == 0 ? p.pad_h : p.pad_w, stride = dim == 0 ? p.stride_h : p.stride_w,
                     dil = dim == 0 ? p.dilation_h : p.dilation_w;
  return (in - 1) * stride - 2 * pad + dil * (k - 1) + out_pad + 1;
}

void check_output_padding(const char* op, IntArrayRef output_padding, bool transposed, const mlu::ConvParams& p) {
  TORCH_CHECK_NOT_IMPLEMENTED(output_padding.size() == 2 || output_padding.empty(), op,
                              ": only 1-d and 2-d convolutions are supported on device mlu");
  for (std::size_t i = 0; i < output_padding.size(); ++i) {
    const std::int64_t op_i = output_padding[i];
    if (!transposed) {
      TORCH_CHECK(op_i == 0, op, ": output_padding is only supported for transposed convolutions, got ",
                  output_padding);
      continue;
    }
    const std::int64_t stride = i == 0 ? p.stride_h : p.stride_w, dil = i == 0 ? p.dilation_h : p.dilation_w;
    TORCH_CHECK(op_i >= 0 && (op_i < stride || op_i < dil), op, ": output padding must be smaller than either stride "
                "or dilation, got output_padding ", output_padding);
  }
}

// A transposed convolution's input seen as the gradient of the convolution whose input is the
// transposed output: with output_padding >= stride, that convolution's output (out_size of the
// transposed output) has more rows/columns than the transposed input. The extra positions take no
// part in the transposed convolution, so they are zeros: `t` padded with zeros at the bottom and
// right to [.., h, w] (t itself when it already has that size).
Tensor zero_extended(OpScope& op, const Tensor& t, std::int64_t h, std::int64_t w) {
  if (t.size(2) == h && t.size(3) == w) return t;
  Tensor full = empty_conv(op, {t.size(0), t.size(1), h, w}, t.scalar_type(), own_format(t));
  full.zero_();
  full.narrow(2, 0, t.size(2)).narrow(3, 0, t.size(3)).copy_(t);
  return full;
}

std::int64_t output_pad(IntArrayRef output_padding, std::size_t i) {
  return output_padding.size() > i ? output_padding[i] : 0;
}

Tensor mlu_convolution(const Tensor& input, const Tensor& weight, const c10::optional<Tensor>& bias_opt,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                       IntArrayRef output_padding, int64_t groups) {
  OpScope op(kForward, input);
  const Tensor bias = bias_opt.has_value() ? *bias_opt : Tensor();
  check_tensors(op, input, weight, &bias, "input");
  const mlu::ConvParams p = conv_params(op.name(), stride, padding, dilation, groups);
  check_output_padding(op.name(), output_padding, transposed, p);
  const at::MemoryFormat fmt = result_format(input, weight);
  const std::int64_t kh = weight.size(2), kw = weight.size(3);
  if (bias.defined()) {
    const std::int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == channels, op.name(), ": expected bias of shape [", channels,
                "], got ", bias.sizes());
  }
  if (!transposed) {
    TORCH_CHECK(input.size(1) == weight.size(1) * groups, op.name(), ": expected input ", input.sizes(), " to have ",
                weight.size(1) * groups, " channels (weight ", weight.sizes(), ", groups ", groups, "), but got ",
                input.size(1), " channels instead");
    const std::int64_t oh = out_size(input.size(2), kh, p, 0), ow = out_size(input.size(3), kw, p, 1);
    TORCH_CHECK(oh > 0 && ow > 0, op.name(), ": the kernel ", weight.sizes(), " (dilated) is larger than the padded "
                "input ", input.sizes());
    Tensor out = empty_conv(op, {input.size(0), weight.size(0), oh, ow}, input.scalar_type(), fmt);
    forward(op, p, input, weight, bias.defined() ? &bias : nullptr, out);
    return out;
  }
  // conv_transpose2d: weights [C_in, C_out / groups, KH, KW].
  TORCH_CHECK(input.size(1) == weight.size(0), op.name(), ": expected input ", input.sizes(), " to have ",
              weight.size(0), " channels (transposed weight ", weight.sizes(), "), but got ", input.size(1),
              " channels instead");
  TORCH_CHECK(weight.size(0) % groups == 0, op.name(), ": weight ", weight.sizes(), " is not divisible by groups ",
              groups);
  const std::int64_t oh = transposed_size(input.size(2), kh, output_pad(output_padding, 0), p, 0),
                     ow = transposed_size(input.size(3), kw, output_pad(output_padding, 1), p, 1);
  TORCH_CHECK(oh > 0 && ow > 0, op.name(), ": the transposed convolution of input ", input.sizes(), " with weight ",
              weight.sizes(), " has an empty output (", oh, "x", ow, ")");
  Tensor out = empty_conv(op, {input.size(0), weight.size(1) * groups, oh, ow}, input.scalar_type(), fmt);
  backward_data(op, p, zero_extended(op, input, out_size(oh, kh, p, 0), out_size(ow, kw, p, 1)), weight,
                bias.defined() ? &bias : nullptr, out);
  return out;
}

std::tuple<Tensor, Tensor, Tensor> mlu_convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                             const Tensor& weight, IntArrayRef stride,
                                                             IntArrayRef padding, IntArrayRef dilation,
                                                             bool transposed, IntArrayRef output_padding,
                                                             int64_t groups, std::array<bool, 3> output_mask) {
  OpScope op(kBackward, grad_output);
  check_tensors(op, input, weight, nullptr, "input");
  check_on_device(grad_output, op.device(), op.name(), "grad_output");
  TORCH_CHECK(grad_output.dim() == 4 && grad_output.scalar_type() == input.scalar_type(), op.name(),
              ": expected grad_output to be a 4-d ", input.scalar_type(), " tensor, got ", grad_output.scalar_type(),
              grad_output.sizes());
  const mlu::ConvParams p = conv_params(op.name(), stride, padding, dilation, groups);
  check_output_padding(op.name(), output_padding, transposed, p);
  // The convolution libmlu sees: its input x and its output's gradient dy (a transposed
  // convolution's input, zero-extended where output_padding >= stride: see zero_extended).
  const std::int64_t kh = weight.size(2), kw = weight.size(3);
  const Tensor& x = transposed ? grad_output : input;
  const Tensor dy = transposed ? zero_extended(op, input, out_size(x.size(2), kh, p, 0), out_size(x.size(3), kw, p, 1))
                               : grad_output;
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = empty_conv(op, input.sizes(), input.scalar_type(), own_format(input));
    if (transposed && dy.sizes() != input.sizes()) {
      Tensor full = empty_conv(op, dy.sizes(), input.scalar_type(), own_format(input));
      forward(op, p, grad_output, weight, nullptr, full);
      grad_input.copy_(full.narrow(2, 0, input.size(2)).narrow(3, 0, input.size(3)));
    } else if (transposed) {
      forward(op, p, grad_output, weight, nullptr, grad_input);
    } else {
      backward_data(op, p, grad_output, weight, nullptr, grad_input);
    }
  }
  if (output_mask[1]) {
    grad_weight = empty_conv(op, weight.sizes(), weight.scalar_type(), own_format(weight));
    backward_weight(op, p, x, dy, grad_weight);
  }
  if (output_mask[2]) {
    grad_bias = empty_on(op.device(), {grad_output.size(1)}, grad_output.scalar_type());
    bias_grad(op, grad_output, grad_bias);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(mlu_convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(mlu_convolution_backward));
}

}  // namespace mlusim::bridge::ops
