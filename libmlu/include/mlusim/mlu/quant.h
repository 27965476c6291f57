// Affine int8 quantization, as torch.ao's quantized_decomposed ops define it, and int8
// convolution / linear on the TFU's int8 array (int32 accumulation, requantization on the VFU).
//
// Arithmetic (every step an IEEE fp32 operation unless it says int32, in this order, so a host
// reference reproduces results bit for bit):
//   quantize    q = clamp(rne(x * inv) + zp, qmin, qmax) as int8, rne = round half to even;
//               per tensor inv = fp32(1.0 / scale) with the reciprocal taken in double (as
//               quantized_decomposed.quantize_per_tensor computes 1.0 / scale in Python), per
//               channel inv = 1.0f / scale[c] in fp32 (its `1.0 / scales` on an fp32 tensor).
//               Computed as the int32 clamp of rne(x * inv) to [qmin - zp, qmax - zp], then + zp:
//               the same integers for every finite x (saturating at the int32 range); NaN -> zp.
//   dequantize  x = (fp32(q) - zp) * fp32(scale)
//   qconv2d / qlinear (weights symmetric: zero point 0, per output channel scale w_scale[oc]):
//               acc[p, oc] = sum over taps and channels of x_q * w_q          (int32, on the TFU)
//                          - x_zp * w_sum[oc]                                   (int32; w_sum from
//                            int8_weight_sums, the weight's sum over all but dim 0)
//               m[oc] = (x_scale * w_scale[oc]) * inv, c[oc] = bias[oc] * inv + y_zp (or y_zp),
//               inv = fp32(1.0 / y_scale) (reciprocal in double), all fp32, per output channel
//               v = fp32(acc) * m[oc] + c[oc]         (relu: v = max(v, y_zp))
//               y_q = rne(v) saturated to int8: y's quantize with the scale, bias and zero point
//               folded into one multiply-add (no bias add, no clamp, no zero-point add passes);
//               it may differ by one step from the unfolded order at exact rounding ties.
//               The padding of the convolution is x's zero point (the quantized 0.0), as in
//               dequantize -> zero-padded fp32 convolution -> quantize.
//
// Layouts: quantize/dequantize take contiguous tensors (per tensor: any dense tensor whose x and y
// descriptors have the same strides, e.g. both channels_last); the per-channel axis splits the
// contiguous tensor into [outer, C, inner]. qconv2d takes x and y NHWC-dense (a kNCHW descriptor
// with channels_last strides or a kNHWC one), weights [OC, KH, KW, C] dense (kNHWC, or kNCHW
// descriptor dims [OC, C, KH, KW] with channels_last strides), groups 1. qlinear: x [M, K] and
// y [M, N] row-major, w [N, K] row-major.
//
// Errors: kBadParam naming op and argument for wrong dtypes (x fp32 / int8 as the op needs, scales
// fp32, zero points int32), scale <= 0 or not finite, a zero point outside [qmin, qmax], qmin/qmax
// outside int8, an axis out of range, a weight zero point != 0 (not symmetric), shape mismatches;
// kNotSupported for a device whose config has no int8 TFU array (naming the op and the config).
//
// Kernels: quantize/dequantize are streaming VFU kernels (BLOCK, one task per core); qconv2d and
// qlinear one int8 direct-convolution kernel (qlinear is a 1x1 convolution over an [1, M, 1, K]
// image): each task takes output tiles of whole output rows by a chunk of output channels, stages
// the padded input rows (filled with x's zero point) in NRAM and the chunk's weights in WRAM, runs
// the TFU's int8 conv intrinsic over input-channel chunks (int32 accumulation; the next chunk's
// input loads while it runs), requantizes on the VFU and stores int8; tiles picked by a cost
// estimate (qconv.cpp). Records MACs (the convolution's) and the bytes of every operand once.
// Asynchronous on the handle's queue.
#pragma once

#include <cstdint>

#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// Quantization parameters: per tensor (axis < 0: scale, zero_point) or per channel along `axis`
// (scales fp32 [C] and zero_points int32 [C] in device memory).
struct QuantParams {
  int axis = -1;
  double scale = 1.0;
  std::int64_t zero_point = 0;
  const TensorDesc* scales = nullptr;
  const void* scales_ptr = nullptr;
  const TensorDesc* zero_points = nullptr;
  const void* zero_points_ptr = nullptr;
  std::int64_t quant_min = -128, quant_max = 127;
};

// y (int8) = quantize(x (fp32)).
Status quantize(Handle* h, const QuantParams& q, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                void* y_ptr);
// y (fp32) = dequantize(x (int8)).
Status dequantize(Handle* h, const QuantParams& q, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                  void* y_ptr);

// y (int8) = quantize(act(dequantize(a) + dequantize(b))), act = relu or none: torch.ao's
// reference chain dq -> add [-> relu] -> q (a residual connection) as one pass over int8 tensors,
// with exactly the fp32 steps of dequantize, an fp32 add, relu, and quantize (so bit for bit the
// CPU's reference). a, b, y: int8, the same dims and the same dense strides; per tensor only.
struct QAddParams {
  QuantParams a, b, y;
  bool relu = false;
};
Status qadd(Handle* h, const QAddParams& p, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
            const void* b_ptr, const TensorDesc& y, void* y_ptr);

// y = max pooling of int8 x (NHWC-dense, as qconv2d's x; y likewise): a window's max over its
// taps, padding never wins (as -inf in torch), no ceil mode. Exactly torch.ao's reference chain
// dq -> max_pool2d -> q when both ends share (scale, zero point): quantize(dequantize(v)) == v.
// kBadParam for kernel/stride/dilation < 1, padding < 0 or > kernel / 2, shapes that do not match.
struct QPoolParams {
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
};
Status qmax_pool2d(Handle* h, const QPoolParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                   void* y_ptr);

// sums (int32 [OC]) = the sum of each output channel's int8 weights (w [OC, ...] contiguous): the
// zero-point correction of qconv2d/qlinear, computed once per weight (a "prepack" step).
Status int8_weight_sums(Handle* h, const TensorDesc& w, const void* w_ptr, const TensorDesc& sums, void* sums_ptr);

// The requantization of an int8 convolution or linear (see the header comment).
struct Int8Output {
  double x_scale = 1.0;
  std::int64_t x_zero_point = 0;
  const TensorDesc* w_scales = nullptr;  // fp32 [OC] (a per-tensor weight scale repeated)
  const void* w_scales_ptr = nullptr;
  const TensorDesc* w_sums = nullptr;    // int32 [OC] from int8_weight_sums; needed when x_zero_point != 0
  const void* w_sums_ptr = nullptr;
  const TensorDesc* bias = nullptr;      // fp32 [OC], optional
  const void* bias_ptr = nullptr;
  bool relu = false;
  double y_scale = 1.0;
  std::int64_t y_zero_point = 0;
  // y is fp32 = (fp32(y_q) - y_zero_point) * fp32(y_scale): the dequantize that follows the layer
  // in torch.ao's reference chain, folded into the store (y_q is still rounded to int8 first).
  bool dequantize_output = false;
};

Status qconv2d(Handle* h, const ConvParams& p, const Int8Output& o, const TensorDesc& x, const void* x_ptr,
               const TensorDesc& w, const void* w_ptr, const TensorDesc& y, void* y_ptr);
Status qlinear(Handle* h, const Int8Output& o, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
               const void* w_ptr, const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu
