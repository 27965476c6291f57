// The kernel behind dilate.h and deinterleave.h: every row of a 4-d tensor's planes goes through
// the same 0/1 matrix P (row x P on the TFU: a permutation or a scatter with zeros, exact), and
// the result lands in a dense destination at a place that depends on (plane, row). Rows of many
// planes are processed per intrinsic (M = a multiple of the array's rows; one intrinsic per output
// piece, so a piece's rows are contiguous in NRAM and leave in one segment where they are
// contiguous in the destination too) and the next chunk loads while the TFU works. Without a TFU
// for the dtype, element-sized copies in NRAM apply P.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "conv/conv_shape.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

struct RowPermute {
  View4 src;  // rows of src.w() elements, src.n() * src.c() * src.h() of them
  std::uint64_t src_base = 0;
  std::size_t out_w = 0;  // elements per output row
  // P: output element `to` of a row = input element `from` (pairs listed once; others are 0).
  std::vector<std::pair<std::size_t, std::size_t>> ones;  // (from, to)
  // Blocked P (block_w > 0): P is block_w x block_out and applies to each run of block_w
  // elements of a row (the row zero-padded to whole blocks in NRAM), so the TFU streams K =
  // block_w instead of the whole row; `ones` then index within a block. Piece k of an output row
  // is the concatenation of piece k (block_out / pieces elements) of its blocks, of which the
  // first out_w / pieces elements are stored. 0: P is w x out_w over the whole row.
  std::size_t block_w = 0, block_out = 0;
  // Output row (plane, r): its first element lands at dst_base + row_offset(plane, r) elements,
  // split in `pieces` runs of out_w / pieces elements, piece k piece_stride elements after piece 0.
  std::uint64_t dst_base = 0;
  std::int64_t plane_stride = 0, row_stride = 0;  // row_offset = plane * plane_stride + r * row_stride
  std::size_t pieces = 1;
  std::int64_t piece_stride = 0;
  // Zero rows to write after each output row but a plane's last: `gap_rows` rows of out_w
  // elements, row_stride / (gap_rows + 1) apart (the dilation's interleaved zero rows).
  std::size_t gap_rows = 0;
};

Status launch_row_permute(Handle& h, const std::string& name, DType dtype, const RowPermute& job,
                          std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
