// int8 quantization on the device (torch_mlu.quantization's ops):
//
//   quantized_decomposed::quantize_per_tensor / dequantize_per_tensor / quantize_per_channel /
//   dequantize_per_channel (torch.ao's reference representation, defined in
//   torch/ao/quantization/fx/_decomposed.py) for PrivateUse1: libmlu quantize / dequantize, int8
//   only (uint8 and other dtypes raise NotImplementedError naming the op and the dtype).
//   Their .tensor overloads keep torch's composite kernels, which read the scalars with .item()
//   and call the overloads above.
//
//   mlu::int8_weight_sums(Tensor w) -> Tensor
//       int32 [OC]: each output channel's weight sum (libmlu int8_weight_sums; the zero-point
//       correction qconv2d / qlinear take, computed once per weight).
//   mlu::qconv2d(Tensor x, Tensor w, Tensor w_scales, Tensor? w_sums, Tensor? bias, int[2] stride,
//                int[2] padding, int[2] dilation, float x_scale, int x_zero_point, float y_scale,
//                int y_zero_point, bool relu, bool dequantize_output=False) -> Tensor
//       int8 x [N, C, H, W] (made channels_last on the device if it is not), int8 w [OC, C, KH, KW]
//       (channels_last), fp32 w_scales [OC] (symmetric weights), fp32 bias: the int8 convolution
//       on the TFU's int8 array with requantization (libmlu qconv2d); y int8, channels_last
//       (dequantize_output: y fp32, the following dequantize_per_tensor folded into the store).
//   mlu::qadd(Tensor a, Tensor b, float a_scale, int a_zero_point, float b_scale, int b_zero_point,
//             float y_scale, int y_zero_point, bool relu) -> Tensor
//       int8 a, b of the same shape: quantize(relu?(dequantize(a) + dequantize(b))) in one pass
//       (libmlu qadd), bit for bit the reference chain; y takes a's strides (b is copied to them
//       on the device when its strides differ).
//   mlu::qmax_pool2d(Tensor x, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation) -> Tensor
//       int8 max pooling (libmlu qmax_pool2d; x made channels_last on the device if it is not; y
//       channels_last): dq -> max_pool2d -> q with shared (scale, zero point), exactly.
//   mlu::qlinear(Tensor x, Tensor w, Tensor w_scales, Tensor? w_sums, Tensor? bias, float x_scale,
//                int x_zero_point, float y_scale, int y_zero_point, bool relu, bool dequantize_output=False)
//       int8 x [..., K], w [N, K]: y int8 [..., N] (libmlu qlinear).
// The arithmetic is libmlu's (mlu/quant.h); bad arguments raise ValueError naming the op.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "mlusim/mlu/quant.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {

namespace {

using at::Tensor;

bool has(const std::optional<Tensor>& t) { return t.has_value() && t->defined(); }

void check_int8(at::ScalarType dtype, const char* op, const char* what) {
  TORCH_CHECK_NOT_IMPLEMENTED(dtype == at::kChar, op, ": ", what, " ", dtype,
                              " is not supported on device mlu (int8 only: torch.int8 with quant_min/max in "
                              "[-128, 127])");
}

mlu::QuantParams per_tensor(double scale, std::int64_t zero_point, std::int64_t qmin, std::int64_t qmax) {
  mlu::QuantParams q;
  q.scale = scale, q.zero_point = zero_point, q.quant_min = qmin, q.quant_max = qmax;
  return q;
}

// Per-tensor ops are elementwise in memory order: y takes x's strides when x is dense.
Tensor dense_input(const Tensor& x) { return x.is_non_overlapping_and_dense() ? x : x.contiguous(); }

Tensor run_per_tensor(const char* name, bool quantize, const Tensor& input, const mlu::QuantParams& q,
                      at::ScalarType out_dtype) {
  OpScope op(name, input);
  check_on_device(input, op.device(), op.name(), "input");
  const Tensor x = dense_input(input);
  Tensor y = at::empty_strided(x.sizes(), x.strides(), x.options().dtype(out_dtype));
  const mlu::TensorDesc dx = desc(x, op.name()), dy = desc(y, op.name());
  if (quantize)
    op.check(mlu::quantize(op.handle(), q, dx, x.data_ptr(), dy, y.data_ptr()), "quantize");
  else
    op.check(mlu::dequantize(op.handle(), q, dx, x.data_ptr(), dy, y.data_ptr()), "dequantize");
  return y;
}

Tensor run_per_channel(const char* name, bool quantize, const Tensor& input, const Tensor& scales,
                       const std::optional<Tensor>& zero_points, std::int64_t axis, std::int64_t qmin,
                       std::int64_t qmax, at::ScalarType out_dtype) {
  OpScope op(name, input);
  check_on_device(input, op.device(), op.name(), "input");
  check_on_device(scales, op.device(), op.name(), "scales");
  TORCH_CHECK(scales.dim() == 1, op.name(), ": scales must be 1-d, got ", scales.sizes());
  axis = wrap_dim(axis, input.dim(), op.name());
  // libmlu takes fp32 scales and int32 zero points (torch's observers give fp32 / int64; fp64
  // scales are rounded to fp32 here, where torch would compute that channel in fp64).
  const Tensor s = scales.to(at::kFloat).contiguous();
  Tensor z = has(zero_points) ? zero_points->to(at::kInt).contiguous() : at::zeros_like(s, s.options().dtype(at::kInt));
  if (has(zero_points)) check_on_device(*zero_points, op.device(), op.name(), "zero_points");
  const Tensor x = input.contiguous();
  Tensor y = empty_on(op.device(), x.sizes(), out_dtype);
  mlu::QuantParams q;
  q.axis = static_cast<int>(axis), q.quant_min = qmin, q.quant_max = qmax;
  const mlu::TensorDesc dx = desc(x, op.name()), dy = desc(y, op.name()), ds = desc(s, op.name()),
                        dz = desc(z, op.name());
  q.scales = &ds, q.scales_ptr = s.data_ptr(), q.zero_points = &dz, q.zero_points_ptr = z.data_ptr();
  if (quantize)
    op.check(mlu::quantize(op.handle(), q, dx, x.data_ptr(), dy, y.data_ptr()), "quantize");
  else
    op.check(mlu::dequantize(op.handle(), q, dx, x.data_ptr(), dy, y.data_ptr()), "dequantize");
  return y;
}

at::ScalarType dequant_out(const std::optional<at::ScalarType>& out_dtype, const char* op) {
  const at::ScalarType t = out_dtype.value_or(at::kFloat);
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat, op, ": out_dtype ", t, " is not supported on device mlu (float32)");
  return t;
}

Tensor quantize_per_tensor(const Tensor& input, double scale, std::int64_t zero_point, std::int64_t qmin,
                           std::int64_t qmax, at::ScalarType dtype) {
  constexpr const char* name = "quantized_decomposed::quantize_per_tensor";
  check_int8(dtype, name, "dtype");
  const Tensor x = input.scalar_type() == at::kFloat ? input : input.to(at::kFloat);  // fp16/bf16 as torch: via fp32
  return run_per_tensor(name, true, x, per_tensor(scale, zero_point, qmin, qmax), at::kChar);
}

Tensor dequantize_per_tensor(const Tensor& input, double scale, std::int64_t zero_point, std::int64_t qmin,
                             std::int64_t qmax, at::ScalarType dtype, std::optional<at::ScalarType> out_dtype) {
  constexpr const char* name = "quantized_decomposed::dequantize_per_tensor";
  check_int8(dtype, name, "dtype");
  TORCH_CHECK(input.scalar_type() == dtype, name, ": Expecting input to have dtype ", dtype, ", but got dtype ",
              input.scalar_type());
  return run_per_tensor(name, false, input, per_tensor(scale, zero_point, qmin, qmax), dequant_out(out_dtype, name));
}

Tensor quantize_per_channel(const Tensor& input, const Tensor& scales, const Tensor& zero_points, std::int64_t axis,
                            std::int64_t qmin, std::int64_t qmax, at::ScalarType dtype) {
  constexpr const char* name = "quantized_decomposed::quantize_per_channel";
  check_int8(dtype, name, "dtype");
  const Tensor x = input.scalar_type() == at::kFloat ? input : input.to(at::kFloat);
  return run_per_channel(name, true, x, scales, zero_points, axis, qmin, qmax, at::kChar);
}

Tensor dequantize_per_channel(const Tensor& input, const Tensor& scales, const std::optional<Tensor>& zero_points,
                              std::int64_t axis, std::int64_t qmin, std::int64_t qmax, at::ScalarType dtype,
                              std::optional<at::ScalarType> out_dtype) {
  constexpr const char* name = "quantized_decomposed::dequantize_per_channel";
  check_int8(dtype, name, "dtype");
  TORCH_CHECK(input.scalar_type() == dtype, name, ": Expecting input to have dtype ", dtype, ", but got dtype ",
              input.scalar_type());
  return run_per_channel(name, false, input, scales, zero_points, axis, qmin, qmax, dequant_out(out_dtype, name));
}

Tensor int8_weight_sums(const Tensor& w) {
  OpScope op("mlu::int8_weight_sums", w);
  check_on_device(w, op.device(), op.name(), "w");
  check_int8(w.scalar_type(), op.name(), "w");
  TORCH_CHECK(w.dim() >= 1, op.name(), ": w must have at least one dim");
  const Tensor wc = w.contiguous();
  Tensor sums = empty_on(op.device(), {w.size(0)}, at::kInt);
  const mlu::TensorDesc dw = desc(wc, op.name()), ds = desc(sums, op.name());
  op.check(mlu::int8_weight_sums(op.handle(), dw, wc.data_ptr(), ds, sums.data_ptr()), "int8_weight_sums");
  return sums;
}

// The requantization arguments and their descriptors (which must outlive the libmlu call).
struct Int8Args {
  mlu::Int8Output o;
  mlu::TensorDesc scales, sums, bias;
  Tensor s, b;
  Int8Args(OpScope& op, const Tensor& w_scales, const std::optional<Tensor>& w_sums, const std::optional<Tensor>& bias_t,
           double x_scale, std::int64_t x_zp, double y_scale, std::int64_t y_zp, bool relu) {
    check_on_device(w_scales, op.device(), op.name(), "w_scales");
    s = w_scales.to(at::kFloat).contiguous();
    scales = desc(s, op.name());
    o.w_scales = &scales, o.w_scales_ptr = s.data_ptr();
    if (has(w_sums)) {
      check_on_device(*w_sums, op.device(), op.name(), "w_sums");
      sums = desc(*w_sums, op.name());
      o.w_sums = &sums, o.w_sums_ptr = w_sums->data_ptr();
    }
    if (has(bias_t)) {
      check_on_device(*bias_t, op.device(), op.name(), "bias");
      b = bias_t->to(at::kFloat).contiguous();
      bias = desc(b, op.name());
      o.bias = &bias, o.bias_ptr = b.data_ptr();
    }
    o.x_scale = x_scale, o.x_zero_point = x_zp, o.y_scale = y_scale, o.y_zero_point = y_zp, o.relu = relu;
  }
};

std::int64_t pair_at(at::IntArrayRef v, std::size_t i, const char* op, const char* what) {
  TORCH_CHECK(v.size() == 1 || v.size() == 2, op, ": ", what, " must have 1 or 2 values, got ", v.size());
  return v[v.size() == 1 ? 0 : i];
}

Tensor qconv2d(const Tensor& x, const Tensor& w, const Tensor& w_scales, const std::optional<Tensor>& w_sums,
               const std::optional<Tensor>& bias, at::IntArrayRef stride, at::IntArrayRef padding,
               at::IntArrayRef dilation, double x_scale, std::int64_t x_zp, double y_scale, std::int64_t y_zp,
               bool relu, bool dequantize_output) {
  OpScope op("mlu::qconv2d", x);
  check_on_device(x, op.device(), op.name(), "x");
  check_on_device(w, op.device(), op.name(), "w");
  check_int8(x.scalar_type(), op.name(), "x");
  check_int8(w.scalar_type(), op.name(), "w");
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4, op.name(), ": expected 4-d x and w, got ", x.sizes(), " and ", w.sizes());
  mlu::ConvParams p;
  p.stride_h = static_cast<int>(pair_at(stride, 0, op.name(), "stride"));
  p.stride_w = static_cast<int>(pair_at(stride, 1, op.name(), "stride"));
  p.pad_h = static_cast<int>(pair_at(padding, 0, op.name(), "padding"));
  p.pad_w = static_cast<int>(pair_at(padding, 1, op.name(), "padding"));
  p.dilation_h = static_cast<int>(pair_at(dilation, 0, op.name(), "dilation"));
  p.dilation_w = static_cast<int>(pair_at(dilation, 1, op.name(), "dilation"));
  const Tensor xc = x.contiguous(at::MemoryFormat::ChannelsLast), wc = w.contiguous(at::MemoryFormat::ChannelsLast);
  const std::int64_t kh = w.size(2), kw = w.size(3);
  const std::int64_t oh = (x.size(2) + 2 * p.pad_h - p.dilation_h * (kh - 1) - 1) / p.stride_h + 1;
  const std::int64_t ow = (x.size(3) + 2 * p.pad_w - p.dilation_w * (kw - 1) - 1) / p.stride_w + 1;
  TORCH_CHECK(oh > 0 && ow > 0, op.name(), ": the kernel ", w.sizes(), " is larger than the padded input ", x.sizes());
  Tensor y = at::empty({x.size(0), w.size(0), oh, ow}, xc.options()
                                                            .dtype(dequantize_output ? at::kFloat : at::kChar)
                                                            .memory_format(at::MemoryFormat::ChannelsLast));
  Int8Args a(op, w_scales, w_sums, bias, x_scale, x_zp, y_scale, y_zp, relu);
  a.o.dequantize_output = dequantize_output;
  const mlu::TensorDesc dx = desc(xc, op.name(), mlu::Layout::kNCHW), dw = desc(wc, op.name(), mlu::Layout::kNCHW),
                        dy = desc(y, op.name(), mlu::Layout::kNCHW);
  op.check(mlu::qconv2d(op.handle(), p, a.o, dx, xc.data_ptr(), dw, wc.data_ptr(), dy, y.data_ptr()), "qconv2d");
  return y;
}

Tensor qlinear(const Tensor& x, const Tensor& w, const Tensor& w_scales, const std::optional<Tensor>& w_sums,
               const std::optional<Tensor>& bias, double x_scale, std::int64_t x_zp, double y_scale, std::int64_t y_zp,
               bool relu, bool dequantize_output) {
  OpScope op("mlu::qlinear", x);
  check_on_device(x, op.device(), op.name(), "x");
  check_on_device(w, op.device(), op.name(), "w");
  check_int8(x.scalar_type(), op.name(), "x");
  check_int8(w.scalar_type(), op.name(), "w");
  TORCH_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1), op.name(), ": x ", x.sizes(),
              " and w ", w.sizes(), " cannot be multiplied (expected x [..., K], w [N, K])");
  const Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous(), wc = w.contiguous();
  Tensor y = empty_on(op.device(), {x2.size(0), w.size(0)}, dequantize_output ? at::kFloat : at::kChar);
  Int8Args a(op, w_scales, w_sums, bias, x_scale, x_zp, y_scale, y_zp, relu);
  a.o.dequantize_output = dequantize_output;
  const mlu::TensorDesc dx = desc(x2, op.name()), dw = desc(wc, op.name()), dy = desc(y, op.name());
  op.check(mlu::qlinear(op.handle(), a.o, dx, x2.data_ptr(), dw, wc.data_ptr(), dy, y.data_ptr()), "qlinear");
  std::vector<std::int64_t> sizes(x.sizes().begin(), x.sizes().end() - 1);
  sizes.push_back(w.size(0));
  return y.view(sizes);
}

Tensor qadd(const Tensor& a, const Tensor& b, double a_scale, std::int64_t a_zp, double b_scale, std::int64_t b_zp,
            double y_scale, std::int64_t y_zp, bool relu) {
  OpScope op("mlu::qadd", a);
  check_on_device(a, op.device(), op.name(), "a");
  check_on_device(b, op.device(), op.name(), "b");
  check_int8(a.scalar_type(), op.name(), "a");
  check_int8(b.scalar_type(), op.name(), "b");
  TORCH_CHECK(a.sizes() == b.sizes(), op.name(), ": a ", a.sizes(), " and b ", b.sizes(),
              " must have the same shape (no broadcasting)");
  const Tensor ad = dense_input(a);
  Tensor bd = b;
  if (bd.strides() != ad.strides()) {
    bd = at::empty_strided(ad.sizes(), ad.strides(), ad.options());
    copy_into(op, b, bd);
  }
  Tensor y = at::empty_strided(ad.sizes(), ad.strides(), ad.options());
  mlu::QAddParams p;
  p.a = per_tensor(a_scale, a_zp, -128, 127), p.b = per_tensor(b_scale, b_zp, -128, 127);
  p.y = per_tensor(y_scale, y_zp, -128, 127), p.relu = relu;
  op.check(mlu::qadd(op.handle(), p, desc(ad, op.name()), ad.data_ptr(), desc(bd, op.name()), bd.data_ptr(),
                     desc(y, op.name()), y.data_ptr()),
           "qadd");
  return y;
}

Tensor qmax_pool2d(const Tensor& x, at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                   at::IntArrayRef dilation) {
  OpScope op("mlu::qmax_pool2d", x);
  check_on_device(x, op.device(), op.name(), "x");
  check_int8(x.scalar_type(), op.name(), "x");
  TORCH_CHECK(x.dim() == 4, op.name(), ": expected a 4-d x, got ", x.sizes());
  mlu::QPoolParams p;
  p.kernel_h = static_cast<int>(pair_at(kernel, 0, op.name(), "kernel_size"));
  p.kernel_w = static_cast<int>(pair_at(kernel, 1, op.name(), "kernel_size"));
  p.stride_h = static_cast<int>(pair_at(stride.empty() ? kernel : stride, 0, op.name(), "stride"));
  p.stride_w = static_cast<int>(pair_at(stride.empty() ? kernel : stride, 1, op.name(), "stride"));
  p.pad_h = static_cast<int>(pair_at(padding, 0, op.name(), "padding"));
  p.pad_w = static_cast<int>(pair_at(padding, 1, op.name(), "padding"));
  p.dilation_h = static_cast<int>(pair_at(dilation, 0, op.name(), "dilation"));
  p.dilation_w = static_cast<int>(pair_at(dilation, 1, op.name(), "dilation"));
  TORCH_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 &&
                  p.dilation_w > 0,
              op.name(), ": kernel_size, stride and dilation must be positive");
  const Tensor xc = x.contiguous(at::MemoryFormat::ChannelsLast);
  const std::int64_t oh = (x.size(2) + 2 * p.pad_h - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  const std::int64_t ow = (x.size(3) + 2 * p.pad_w - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  TORCH_CHECK(oh > 0 && ow > 0, op.name(), ": the window is larger than the padded input ", x.sizes());
  Tensor y = at::empty({x.size(0), x.size(1), oh, ow}, xc.options().memory_format(at::MemoryFormat::ChannelsLast));
  op.check(mlu::qmax_pool2d(op.handle(), p, desc(xc, op.name(), mlu::Layout::kNCHW), xc.data_ptr(),
                            desc(y, op.name(), mlu::Layout::kNCHW), y.data_ptr()),
           "qmax_pool2d");
  return y;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(mlu, m) {
  m.def("qmax_pool2d(Tensor x, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation) -> Tensor");
  m.def("qadd(Tensor a, Tensor b, float a_scale, int a_zero_point, float b_scale, int b_zero_point, float y_scale, "
        "int y_zero_point, bool relu) -> Tensor");
  m.def("int8_weight_sums(Tensor w) -> Tensor");
  m.def("qconv2d(Tensor x, Tensor w, Tensor w_scales, Tensor? w_sums, Tensor? bias, int[2] stride, int[2] padding, "
        "int[2] dilation, float x_scale, int x_zero_point, float y_scale, int y_zero_point, bool relu, "
        "bool dequantize_output=False) -> Tensor");
  m.def("qlinear(Tensor x, Tensor w, Tensor w_scales, Tensor? w_sums, Tensor? bias, float x_scale, int x_zero_point, "
        "float y_scale, int y_zero_point, bool relu, bool dequantize_output=False) -> Tensor");
}

TORCH_LIBRARY_IMPL(mlu, PrivateUse1, m) {
  m.impl("int8_weight_sums", TORCH_FN(int8_weight_sums));
  m.impl("qconv2d", TORCH_FN(qconv2d));
  m.impl("qlinear", TORCH_FN(qlinear));
  m.impl("qadd", TORCH_FN(qadd));
  m.impl("qmax_pool2d", TORCH_FN(qmax_pool2d));
}

// The schemas are torch's (quantized_decomposed is defined when torch.ao.quantization.fx._decomposed
// is imported; torch_mlu imports it); registering a backend kernel first is allowed.
TORCH_LIBRARY_IMPL(quantized_decomposed, PrivateUse1, m) {
  m.impl("quantize_per_tensor", TORCH_FN(quantize_per_tensor));
  m.impl("dequantize_per_tensor", TORCH_FN(dequantize_per_tensor));
  m.impl("quantize_per_channel", TORCH_FN(quantize_per_channel));
  m.impl("dequantize_per_channel", TORCH_FN(dequantize_per_channel));
}

}  // namespace mlusim::bridge::ops
