// Dropout and random fills with the handle's seeded device random generator (Handle::set_seed). The random bits
// are Philox4x32-10 words computed by the kernel on the simulated cores from (seed, counter):
//   key     = (seed & 0xffffffff, seed >> 32)
//   counter = (b & 0xffffffff, b >> 32, 0, 0) with b = first + i / 4, word i % 4,
// for the i-th element in row-major order of the tensor's dims, where `first` is the block the
// handle's reserve_random handed out for this call. Element i is kept when
// (word >> 8) * 2^-24 < 1 - p. So the mask depends only on the seed, the call's position in the
// handle's sequence and the element's logical index: never on tiling, strides or core count.
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// torch's native_dropout (training): mask = keep (bool or int8 0/1), y = x * mask / (1 - p);
// p = 1 gives y = 0 and an all-false mask, p = 0 gives y = x. p in [0, 1]. y and mask have x's
// dims (y fp32, fp16 or bf16 where the config computes it; x likewise; fp32 math, one rounding).
Status dropout_forward(Handle* h, double p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr,
                       const TensorDesc& mask, void* mask_ptr);

// torch's native_dropout_backward: dx = dy * mask * scale (scale = 1 / (1 - p), or 0 for p = 1).
Status dropout_backward(Handle* h, double scale, const TensorDesc& dy, const void* dy_ptr, const TensorDesc& mask,
                        const void* mask_ptr, const TensorDesc& dx, void* dx_ptr);

// torch's uniform_(from, to): y[i] = lo + (hi - lo) * u_i with u_i = (word >> 8) * 2^-24 in [0, 1),
// the word numbered as dropout's above (element i in row-major order of y's dims). u and the affine
// map are fp32 on the VFU, rounded once to y's dtype (fp32 or fp16; any strides, no broadcast dims).
// Other distributions are elementwise maps of these uniforms (the torch bridge: normal by Box-Muller,
// exponential, cauchy, log-normal, geometric, integer ranges). Reserves ceil(n / 4) * 4 numbers of the
// handle's sequence. kBadParam: lo or hi not finite, lo > hi. Records "random_uniform": 0 MACs,
// y's bytes, 1 kernel (none when y is empty).
Status random_uniform(Handle* h, double lo, double hi, const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu
