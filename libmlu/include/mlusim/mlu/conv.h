// 2-d convolution: forward, backward-data and backward-weight, like torch.nn.functional.conv2d
// and its gradients (cross-correlation; stride, zero padding, dilation, groups incl. depthwise).
//
// Tensors: activations are 4-d descriptors with layout kNCHW (dims [N, C, H, W]) or kNHWC (dims
// [N, H, W, C]); kND 4-d descriptors read as NCHW. Weights are [OC, C/groups, KH, KW] (kNCHW or
// kND) or [OC, KH, KW, C/groups] (kNHWC). Any strides work (torch's channels_last is an NCHW
// descriptor with NHWC strides). Shapes follow torch: OH = (H + 2 pad_h - dil_h (KH - 1) - 1) /
// stride_h + 1. dtypes: all fp32, all fp16 or all bf16 (fp32 accumulation, one rounding to the
// 16-bit dtype; bf16 where the config computes it, else kNotSupported naming op and config).
//
// Kernels: with channels-innermost operands (NHWC / channels_last activations, weights with
// channel stride 1), groups == 1 and a TFU array for the dtype, the forward (without a batch norm
// folded in by fused.h) and the stride-1 backward-data run a direct kernel: the TFU's conv
// intrinsic on NHWC tiles, weights resident in WRAM, no im2col and no layout kernels
// (backward-data first writes the weights transposed, taps mirrored, to the workspace). Otherwise
// grouped and dense convolutions run on the TFU as implicit GEMMs (the GEMM engine of gemm.h with
// an im2col operand gathered by DMA from an input window the memory cores stage in SRAM);
// depthwise ones (C/groups == 1) run on the VFU. There, backward-data is a convolution of the
// output gradient with the weights' taps mirrored (the gradient is zero-interleaved on the device
// first when stride > 1); backward-weight is a GEMM of the output gradient with the im2col of the
// input, its depth (batch x output pixels) split over clusters when the weight tensor is small.
// Operands these GEMMs cannot read as they are (e.g. NHWC) are rearranged into the workspace on
// the device; so is the input of a forward convolution strided along x (split by column phase, or,
// for a 1x1 kernel without padding, just the pixels on the stride grid).
// Query the workspace with the get_..._workspace_size functions. Asynchronous.
// Records MACs = N x OC x OH x OW x C/groups x KH x KW, and the bytes of every operand once.
#pragma once

#include <cstddef>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

struct ConvParams {
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
};

// y = conv(x, w) (+ bias[OC], optional: nullptr).
Status get_conv2d_forward_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
                                         const TensorDesc& y, std::size_t* bytes);
Status conv2d_forward(Handle* h, const ConvParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                      const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& y, void* y_ptr,
                      void* workspace, std::size_t workspace_bytes);

// dx = gradient of the input, from dy (the output's gradient) and w (+ bias[C], optional: nullptr;
// a transposed convolution's bias, added in fp32 before dx's one rounding, as the forward's).
// kBadParam for a bias that is not 1-d [C] of dy's dtype, besides the checks every conv call makes.
// The workspace size covers calls with and without a bias.
Status get_conv2d_backward_data_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& dy,
                                               const TensorDesc& w, const TensorDesc& dx, std::size_t* bytes);
Status conv2d_backward_data(Handle* h, const ConvParams& p, const TensorDesc& dy, const void* dy_ptr,
                            const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
                            const TensorDesc& dx, void* dx_ptr, void* workspace, std::size_t workspace_bytes);

// dw = gradient of the weights, from x and dy (overwritten, not accumulated).
Status get_conv2d_backward_weight_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& x,
                                                 const TensorDesc& dy, const TensorDesc& dw, std::size_t* bytes);
Status conv2d_backward_weight(Handle* h, const ConvParams& p, const TensorDesc& x, const void* x_ptr,
                              const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dw, void* dw_ptr,
                              void* workspace, std::size_t workspace_bytes);

}  // namespace mlusim::mlu
