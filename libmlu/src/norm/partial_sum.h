// The second stage of a cross-core reduction: per-task partial rows, summed into the output.
#pragma once

#include <cstdint>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::nn {

// One reduction: out[j] = sum over r < rows of partial[r * out.numel() + j], where partial is a
// dense fp32 GDRAM array and j runs over out's elements in row-major order (out: fp32 or fp16,
// any strides).
struct PartialSum {
  const void* partial = nullptr;
  std::int64_t rows = 0;
  const TensorDesc* out = nullptr;
  void* out_ptr = nullptr;
};

// Enqueues one BLOCK kernel doing every reduction of `sums` in turn (each planned for an equal
// share of NRAM, since a task's buffers live until it ends). Tasks split each output's columns; a
// task sums its columns' [rows, chunk] tiles with a ones-row VFU matmul.
Status launch_partial_sums(Handle& h, const char* name, const std::vector<PartialSum>& sums);

}  // namespace mlusim::mlu::nn
