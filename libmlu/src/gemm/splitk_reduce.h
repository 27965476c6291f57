// Second half of a split-K GEMM: sums the fp32 partial products that clusters wrote for their
// depth parts and applies the epilogue (alpha, bias, beta x C, cast) into C. A BLOCK kernel on
// the VFU: each task takes blocks of [rows x cols], about one core's share of C each, and loads all
// parts of a block at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gemm/gemm_engine.h"

namespace mlusim::mlu::gemm {

// partials: fp32 [parts][batches][rows][cols] at GDRAM address `partial_base`. parts == 0 runs the
// epilogue on a zero product (a GEMM with empty depth: C = beta x C + bias).
Status launch_splitk_reduce(Handle& h, const std::string& name, const OutputSpec& out, std::uint64_t partial_base,
                            std::size_t parts, std::size_t batches, std::size_t rows, std::size_t cols);

}  // namespace mlusim::mlu::gemm
