// Planning a convolution's implicit GEMM, shared by forward, backward-data and backward-weight.
#pragma once

#include <cstddef>

#include "conv/image_columns.h"
#include "gemm/gemm_plan.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

// Plans `problem` over the image columns `layout`. Split-K is dropped when its partial sums would
// not fit the workspace left after `ws_used` of `workspace_limit` bytes; kNotSupported (naming
// `op`) when no tiling fits the device's on-chip memories.
Status plan_conv_gemm(const Handle& h, gemm::GemmProblem& problem, const ImageColumns& layout, std::size_t ws_used,
                      std::size_t workspace_limit, const char* op, gemm::GemmPlan* plan);

}  // namespace mlusim::mlu::conv
