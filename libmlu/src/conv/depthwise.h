// Depthwise convolutions (C/groups == 1) on the VFU: per output plane, a sum over taps of a
// scalar weight times a shifted window of its input plane. The TFU would waste its array on
// K = KH x KW per intrinsic; on the VFU each tap is one vector multiply and one add over a whole
// band of output rows: the band's input rows sit in NRAM with zero padding around them, row pitch
// Wb, and the accumulator uses the same pitch, so every tap's window is one contiguous run
// (strided outputs are computed at stride 1 along the band and read back strided).
//   forward:        y[o] = sum_taps w[o, tap] * x[o / m] window (+ bias[o]), m = OC / C;
//   backward data:  dx[c] = sum_j sum_taps w[c*m + j, tap] * dy[c*m + j] window with mirrored taps
//                   (dy zero-interleaved first when strided);
//   backward weight: dw[o, tap] = sum over images and pixels of dy[o] * x[o / m] window at tap.
#pragma once

#include <cstdint>

#include "conv/conv_forward.h"
#include "conv/conv_shape.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

// No workspace: strided inputs and outputs are read and written with strided copies. `stage` (the
// fused output stage) applies to each output plane after its bias, before the rounding.
Status depthwise_forward(Handle& h, const ConvShape& s, const View4& xv, std::uint64_t x, const View4& wv,
                         std::uint64_t w, std::int64_t bias_stride, std::uint64_t bias, const OutputStage& stage,
                         const View4& yv, std::uint64_t y, std::uint32_t* kernels);

std::size_t depthwise_backward_data_workspace(const ConvShape& s);
// `bias` (0: none) adds bias[c] to dx's channel c before the rounding (conv_transpose's bias).
Status depthwise_backward_data(Handle& h, const ConvShape& s, const View4& dyv, std::uint64_t dy, const View4& wv,
                               std::uint64_t w, std::int64_t bias_stride, std::uint64_t bias, const View4& dxv,
                               std::uint64_t dx, std::uint64_t workspace, std::size_t workspace_bytes,
                               std::uint32_t* kernels);

Status depthwise_backward_weight(Handle& h, const ConvShape& s, const View4& xv, std::uint64_t x, const View4& dyv,
                                 std::uint64_t dy, const View4& dwv, std::uint64_t dw, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
