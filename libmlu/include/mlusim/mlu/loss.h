// Negative log-likelihood loss, forward and backward, with PyTorch's semantics (aten
// nll_loss_forward / nll_loss_backward, and nll_loss2d for inputs with spatial dims). Cross
// entropy is log_softmax (softmax.h) followed by this op, as torch composes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

enum class LossReduction : std::uint8_t { kNone, kMean, kSum };

// Shapes (C classes): input [C] with target [] ; input [N,C] with target [N] ; input [N,C,d1..dk]
// with target [N,d1..dk]. Input fp32, fp16 or bf16 (bf16 where the config computes it); target int32
// or int64; weight (optional, nullptr for none) [C], a float dtype.
//   sample loss  l_i = -w[t_i] * input[i, t_i]      (0, and weight 0, where t_i == ignore_index)
//   kNone: output has target's dims, l_i per sample
//   kSum:  output [] = sum l_i
//   kMean: output [] = sum l_i / sum w[t_i] (the weighted mean; 0/0 = NaN when all are ignored)
// total_weight [] receives sum w[t_i] over non-ignored samples (0 for kNone), as torch returns it.
// A target outside [0, C) that is not ignore_index faults the kernel ("target ... out of bounds"),
// reported at the queue's sync as cnrtErrorKernelTrap, like torch's device-side assert.
//
// kMean and kSum reduce per-core partial sums in a second kernel through `workspace`.
Status get_nll_loss_workspace_size(Handle* h, const TensorDesc& input, LossReduction reduction, std::size_t* bytes);

Status nll_loss_forward(Handle* h, LossReduction reduction, std::int64_t ignore_index, const TensorDesc& input,
                        const void* input_ptr, const TensorDesc& target, const void* target_ptr,
                        const TensorDesc* weight, const void* weight_ptr, void* workspace, std::size_t workspace_bytes,
                        const TensorDesc& output, void* output_ptr, const TensorDesc& total_weight,
                        void* total_weight_ptr);

// grad_input (input's dims, fp32, fp16 or bf16) = 0 everywhere except grad_input[i, t_i] = -w[t_i] * g_i,
// where g_i = grad_output[i] (kNone), grad_output (kSum) or grad_output / total_weight (kMean).
// grad_output: target's dims for kNone, [] otherwise; total_weight: [] from the forward.
Status nll_loss_backward(Handle* h, LossReduction reduction, std::int64_t ignore_index, const TensorDesc& grad_output,
                         const void* grad_output_ptr, const TensorDesc& target, const void* target_ptr,
                         const TensorDesc* weight, const void* weight_ptr, const TensorDesc& total_weight,
                         const void* total_weight_ptr, const TensorDesc& grad_input, void* grad_input_ptr);

}  // namespace mlusim::mlu
