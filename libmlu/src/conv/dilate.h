// Zero-interleaving a gradient for a strided convolution's backward-data pass, on the device:
// dst[n, c, y * sy, x * sx] = src[n, c, y, x], every other element of dst zero; dst is dense
// [N, C, (H - 1) * sy + 1, (W - 1) * sx + 1]. Along a row the scatter is a matmul on the TFU with
// a 0/1 selection matrix S[x, x * sx] = 1 (row_permute.h); rows land sy apart with zero rows
// written between them.
#pragma once

#include <cstdint>

#include "conv/conv_shape.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

std::size_t dilated_bytes(const View4& src, std::size_t sy, std::size_t sx, DType dtype);
Status launch_dilate(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                     std::size_t sy, std::size_t sx, std::uint64_t dst, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
