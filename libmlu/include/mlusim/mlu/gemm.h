// GEMM: C = act(alpha * op(A) x op(B) + bias + beta * C), batched and broadcast like torch.matmul
// (act: MatmulParams::activation, none by default).
//
//   A: [..., M, K] (or [..., K, M] with trans_a), B: [..., K, N] (or [..., N, K] with trans_b),
//   C: [..., M, N]; the matrices may have any strides (a transposed view given by strides works
//   the same as the trans flags). Batch dims (all but the last two) are right-aligned against C's:
//   each of A's and B's must equal C's or be 1 (missing dims count as 1); C's batch dims are the
//   result's. bias: optional 1-d [N] (any stride) added to every row of C.
//   dtypes: A, B, C and bias all fp32, all fp16 or all bf16. fp16/bf16 multiplies accumulate in
//   fp32 and the result (alpha x product + bias + beta x C, computed in fp32) is rounded once to
//   the 16-bit dtype. bf16 needs a device that computes it (HardwareConfig::computes; MLU5xx
//   presets): elsewhere kNotSupported naming the op and the config.
//   beta == 0: C is not read (NaN/inf in it do not propagate, as torch.addmm).
//   residual (MatmulParams::residual): beta multiplies R instead of C, C = act(alpha * op(A) x
//   op(B) + bias + beta * R), and C is only written: a residual connection's add (y = x W + b + r)
//   in the GEMM epilogue, R read block by block on chip instead of by a separate elementwise pass.
//   R has C's dims and dtype, any strides (0: broadcast); it must not overlap C unless it is C's
//   exact view. Such calls record "fused_matmul_residual" (bytes: R read once, C written once).
//   activation (activation.h): applied on chip to that fp32 result before the rounding, so
//   linear + bias + activation is one pass over C (no DRAM round trip); such calls record their
//   op as "fused_matmul_act" instead of "matmul".
//
// It runs on the TFU (the VFU where the device's TFU lacks the dtype) with UNION1 launches whose
// memory cores stage shared operand panels in SRAM. Workspace is needed when an operand must be
// repacked (a view with no contiguous K: transposed on the device) or the depth is split over
// clusters; query it with get_matmul_workspace_size. Asynchronous: results after cnrtQueueSync.
// Records MACs = batch x M x N x K and the bytes of A, B, bias, C (read if beta != 0, written).
#pragma once

#include <cstddef>

#include "mlusim/mlu/activation.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

struct MatmulParams {
  bool trans_a = false;  // op(A) = A^T (A's last two dims swapped)
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  Activation activation = Activation::kNone;  // applied last, to alpha x product + bias + beta x C
  // Optional residual R read in C's place (see above; beta must then be non-zero). Not owned.
  const TensorDesc* residual = nullptr;
  const void* residual_ptr = nullptr;
};

Status get_matmul_workspace_size(Handle* h, const MatmulParams& params, const TensorDesc& a, const TensorDesc& b,
                                 const TensorDesc* bias, const TensorDesc& c, std::size_t* bytes);

// bias / bias_ptr: nullptr for none.
Status matmul(Handle* h, const MatmulParams& params, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
              const void* b_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& c, void* c_ptr,
              void* workspace, std::size_t workspace_bytes);

}  // namespace mlusim::mlu
