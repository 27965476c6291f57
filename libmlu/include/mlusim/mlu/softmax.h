// Softmax and log-softmax along one dim, forward and backward, with PyTorch's semantics
// (aten _softmax, _log_softmax and their _backward_data). Numerically stable: each slice is
// shifted by its maximum before exp. fp32, fp16 and bf16 tensors; arithmetic is fp32 on chip.
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

enum class SoftmaxMode : std::uint8_t {
  kSoftmax,     // y = exp(x - max) / sum(exp(x - max))
  kLogSoftmax,  // y = x - max - log(sum(exp(x - max)))
};

// y = softmax(x) (or log_softmax) along `dim` (negative counts from the end; a 0-d tensor is a
// 1-element slice). x and y have the same dims, any strides (y not broadcast); dtypes fp32,
// fp16 or bf16 each, so fp16 -> fp32 is torch's half_to_float.
Status softmax_forward(Handle* h, SoftmaxMode mode, int dim, const TensorDesc& x, const void* x_ptr,
                       const TensorDesc& y, void* y_ptr);

// dx from the forward output y and the incoming gradient dy, along `dim`:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
// y, dy and dx have the same dims, fp32, fp16 or bf16 each.
Status softmax_backward(Handle* h, SoftmaxMode mode, int dim, const TensorDesc& y, const void* y_ptr,
                        const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dx, void* dx_ptr);

}  // namespace mlusim::mlu
