// Copying a batch of strided matrices into another layout, on the device: the GEMM engine needs
// its row operand k-contiguous (torch's A.t() in dW = dY^T X is rewritten first), and the
// convolutions move NHWC tensors to NCHW and back.
//   both with contiguous rows (col stride 1): row segments, GDRAM -> GDRAM copies;
//   one contiguous along rows, the other along columns, and a TFU for the dtype: a transpose on
//     the TFU, tile by tile: a [tc, tr] block (tr contiguous) goes to WRAM as the b_transposed
//     operand and is multiplied by an R x R identity in NRAM, which yields the [tr, tc] block
//     (exact for finite values: x * 1 + sum of 0 * y; an inf or NaN spreads NaN over its tile
//     column, as 0 * inf = NaN);
//   otherwise: element-sized DMA segments (correct for any strides, a 64-byte burst per element).
#pragma once

#include <cstdint>
#include <string>

#include "gemm/operands.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::gemm {

// Matrix b of a batch: element (r, c) at base + batch.offset(b) + r * row_stride + c * col_stride.
struct MatrixView {
  std::uint64_t base = 0;
  BatchIndexer batch;
  std::int64_t row_stride = 0, col_stride = 0;  // elements
};

// dst(b, r, c) = src(b, r, c) for b < batches, r < rows, c < cols. Returns the kernels launched.
Status launch_strided_copy(Handle& h, const std::string& name, sim::DType dtype, std::size_t batches, std::size_t rows,
                           std::size_t cols, const MatrixView& src, const MatrixView& dst, std::uint32_t* kernels);

// A view that packs densely: [batches][rows][cols] at `base`, batch index over `dims`.
MatrixView dense_view(std::uint64_t base, const std::vector<std::int64_t>& dims, std::size_t rows, std::size_t cols);

}  // namespace mlusim::mlu::gemm
