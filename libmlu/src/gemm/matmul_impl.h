// matmul (gemm.h) under a given op name, for the entry points built on it (matmul itself, and
// fused.h's linear_act): validation messages, kernel names and the OpRecord use `op`.
#pragma once

#include <cstddef>

#include "mlusim/mlu/gemm.h"

namespace mlusim::mlu::gemm {

Status matmul_workspace(Handle* h, const char* op, const MatmulParams& params, const TensorDesc& a, const TensorDesc& b,
                        const TensorDesc* bias, const TensorDesc& c, std::size_t* bytes);

Status run_matmul(Handle* h, const char* op, const MatmulParams& params, const TensorDesc& a, const void* a_ptr,
                  const TensorDesc& b, const void* b_ptr, const TensorDesc* bias, const void* bias_ptr,
                  const TensorDesc& c, void* c_ptr, void* workspace, std::size_t workspace_bytes);

}  // namespace mlusim::mlu::gemm
