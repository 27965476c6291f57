// Rearranging a strided convolution's input so that its im2col gather copies runs of pixels.
//
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

// The pixels a 1x1 convolution without padding reads when strided by (sy, sx):
// dst[n, c, y, x] = src[n, c, y * sy, x * sx], dense [N, C, OH, OW]. The convolution then runs at
// stride 1 over it. Compared with the phase split (which reads and rewrites the whole input), only
// every sy-th row is read and only the used pixels are written: a quarter of the input at stride 2.
View4 subsampled_view(const View4& src, std::size_t sy, std::size_t sx);  // dense [N, C, OH, OW]
std::size_t subsampled_bytes(const View4& src, std::size_t sy, std::size_t sx, DType dtype);
Status launch_subsample(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                        std::size_t sy, std::size_t sx, std::uint64_t dst, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
