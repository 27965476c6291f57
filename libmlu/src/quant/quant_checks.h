// The argument checks quantize, dequantize, qconv2d and qlinear share (quant.h): one function per
// concept, each naming the op and the argument in its message.
#pragma once

#include <cstdint>

#include "mlusim/mlu/quant.h"

namespace mlusim::mlu::quant {

// kNotSupported unless the loaded config's TFU has an int8 array:
// "<op>: config '<name>' has no int8 TFU array (tfu.int8 is 0x0)".
Status check_int8_tfu(const char* op);

// A per-tensor scale (finite, > 0) and zero point (within [quant_min, quant_max], which must lie
// in int8's range with quant_min <= quant_max). `what` names them ("x", "y", ...).
Status check_per_tensor(double scale, std::int64_t zero_point, std::int64_t quant_min, std::int64_t quant_max,
                        const char* op, const char* what);

// q against x's shape: per tensor as above; per channel the axis is in range and scales (fp32) /
// zero_points (int32) are contiguous 1-d [x.dim(axis)] with pointers.
Status check_quant_params(const QuantParams& q, const TensorDesc& x, const char* op);

// A 1-d contiguous [n] vector of dtype t with a pointer (w_scales, w_sums, bias, scales, ...).
Status check_channel_vector(const TensorDesc* d, const void* p, DType t, std::int64_t n, const char* op,
                            const char* name);

// True when t is 4-d and NHWC-dense: a kNHWC contiguous descriptor, or a kNCHW/kND one with
// channels_last strides (qconv2d's and qmax_pool2d's activations and weights).
bool nhwc_dense(const TensorDesc& t);
// Dim i of [N, C, H, W] whichever t's layout.
std::int64_t nchw_dim(const TensorDesc& t, int i);

}  // namespace mlusim::mlu::quant
