// Moving 4-d tensors between their own strides and dense NCHW in the workspace, on the device
// (gemm/strided_copy.h: NHWC <-> NCHW is a batch of [C, H*W] transposes on the TFU).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "conv/conv_shape.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

std::array<std::int64_t, 4> dense_strides(const std::array<std::int64_t, 4>& dims);

// dst (dense, view's dims) = src (view's strides).
Status to_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t src, const View4& view,
                std::uint64_t dst, std::uint32_t* kernels);
// Replaces an operand by a dense copy of it at `dst`: to_dense, then *base = dst and view's
// strides become dense. Adds the kernels launched to *kernels.
Status move_to_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t dst, std::uint64_t* base,
                     View4* view, std::uint32_t* kernels);
// dst (view's strides) = src (dense, view's dims).
Status from_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t src, const View4& view,
                  std::uint64_t dst, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
