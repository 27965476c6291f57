// 2-d pooling over NCHW activations, forward and backward, with PyTorch's semantics (aten
// max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and their backwards). Tensors are
// [N,C,H,W] or unbatched [C,H,W] (dims in that order, any strides), fp32, fp16 or bf16 (where the
// config computes it) with fp32 arithmetic on chip.
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

struct Pool2dParams {
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;      // torch's default stride is the kernel size: pass it
  std::int64_t pad_h = 0, pad_w = 0;            // at most half the kernel size (torch's rule)
  std::int64_t dilation_h = 1, dilation_w = 1;  // max pooling only (must be 1 for avg pooling)
  bool ceil_mode = false;
  bool count_include_pad = true;      // avg pooling: padded zeros count in the divisor
  std::int64_t divisor_override = 0;  // avg pooling: > 0 replaces the divisor
};

// Output extent of one spatial dim, as torch's pooling_output_shape:
//   out = floor_or_ceil((in + 2*pad - dilation*(kernel-1) - 1) / stride) + 1, and with ceil_mode
//   the last window must start inside the input or its left padding.
// kBadParam for a non-positive kernel/stride/dilation, negative or too large padding, or out < 1.
Status pool2d_output_size(const Pool2dParams& p, std::int64_t in_h, std::int64_t in_w, std::int64_t* out_h,
                          std::int64_t* out_w);

// y = max over each window; indices (optional: nullptr) = flat index h*W + w of the maximum in its
// input plane, int64 or int32 (torch returns int64). Ties pick the first maximum in window scan
// order; NaN wins (the last NaN), as torch's CPU kernel.
// A window whose maximum is -0.0 gives +0.0 (the kernel's column split sums with +0; values
// compare equal, torch gives -0.0).
Status max_pool2d_forward(Handle* h, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                          void* y_ptr, const TensorDesc* indices, void* indices_ptr);

// dx = 0 except dx[plane, indices[o]] += dy[o] for every output o of that plane (overlapping
// windows accumulate). dy and indices have y's dims; dx has x's dims.
Status max_pool2d_backward(Handle* h, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& indices, const void* indices_ptr, const TensorDesc& dx, void* dx_ptr);

// y = sum over each window / divisor, divisor = divisor_override, else the window's size clipped to
// the padded input (count_include_pad) or to the input.
Status avg_pool2d_forward(Handle* h, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                          void* y_ptr);
// dx[i] = sum over the windows w containing i of dy[w] / divisor(w).
Status avg_pool2d_backward(Handle* h, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& dx, void* dx_ptr);

// Adaptive average pooling to y's spatial size: output (i, j) averages input rows
// [floor(i*H/OH), ceil((i+1)*H/OH)) and columns [floor(j*W/OW), ceil((j+1)*W/OW)).
Status adaptive_avg_pool2d_forward(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr);
Status adaptive_avg_pool2d_backward(Handle* h, const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dx,
                                    void* dx_ptr);

}  // namespace mlusim::mlu
