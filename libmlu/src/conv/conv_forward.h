// conv2d_forward's body, shared with the fused convolution of fused.h: the same validation,
// workspace and kernels, plus an optional fused output stage applied on chip before the result is
// rounded and stored (no DRAM round trip).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/channel_affine.h"
#include "mlusim/mlu/activation.h"
#include "mlusim/mlu/conv.h"

namespace mlusim::mlu::conv {

// After the bias: the channel affine (common/channel_affine.h; channel = output channel), folded
// on chip by the kernel that stores each output block, then v = act(v); all fp32 on chip.
struct OutputStage {
  ChannelAffine affine;
  Activation act = Activation::kNone;
  const char* workspace_query = "get_conv2d_forward_workspace_size";  // named in messages
};

struct ForwardResult {
  std::uint64_t macs = 0, bytes = 0;  // conv2d_forward's record: MACs and the bytes of x, w, bias, y
  std::uint32_t kernels = 0;
};

// `op` names the entry point in messages and kernel names. Nothing is recorded.
Status forward_workspace_size(Handle* h, const char* op, const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
                              const OutputStage& stage, const TensorDesc& y, std::size_t* bytes);
Status forward(Handle* h, const char* op, const ConvParams& p, const TensorDesc& x, const void* x_ptr,
               const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
               const OutputStage& stage, const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes,
               ForwardResult* result);

}  // namespace mlusim::mlu::conv
