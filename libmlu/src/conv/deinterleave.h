// Splitting an input's columns by phase for a convolution strided along x, on the device:
// dst[n, c, ph, r, q] = src[n, c, r, q * s + ph] (zero past the row's end), dense
// [N, C, s, H, ceil(W / s)]. Tap j of output column x then reads phase (j * dil - pad) mod s at
// column x + floor((j * dil - pad) / s): stride 1, so the im2col gather copies whole runs instead of
// one element per DMA segment. Along a row the split is a 0/1 permutation (row_permute.h).
#pragma once

#include <cstdint>
#include <string>

#include "conv/conv_shape.h"
#include "conv/image_columns.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

std::size_t phase_width(std::size_t w, std::size_t s);
// The split copy of `src` as an im2col source (base left 0).
SourceImage split_source(const View4& src, std::size_t s, DType dtype);
std::size_t deinterleaved_bytes(const View4& src, std::size_t s, DType dtype);
Status launch_deinterleave(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                           std::size_t s, std::uint64_t dst, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
