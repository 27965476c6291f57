// Scaled dot-product attention as one kernel (forward) and two kernels (backward), flash-attention
// style: the score matrix Q K^T never goes to GDRAM. PyTorch's semantics
// (torch.nn.functional.scaled_dot_product_attention without dropout):
//
//   O = softmax(scale * Q K^T + bias) V,   bias = the additive mask, a boolean mask's
//                                          log(mask) (true = 0, false = -inf), or the causal
//                                          mask (key position c visible from query r iff c <= r,
//                                          top-left aligned as torch's tril for L != S)
//
// Q [B, H, L, D], K [B, H, S, D], V [B, H, S, Dv], O [B, H, L, Dv], any strides (SDPA's
// transposed views of [B, L, H, D] projections included). Rows whose every key is masked give
// O = 0 (torch's math path uses _safe_softmax: zeros, not NaN) and zero gradients.
//
// How the forward kernel works (attention/attention_forward.cpp): one work item is a block of Br
// query rows of one (batch, head); the BLOCK tasks share the work items. Per item, Q's block stays
// in NRAM (multiplied by the scale once, when that is exact in the input dtype: fp32, or a
// power-of-two scale; otherwise each fp32 score tile is, as CUDA's flash kernels do, since an fp16
// Q x scale would shift a score s by up to |s| 2^-11), and the blocks of Bc keys and values stream through WRAM, double
// buffered (the next block's DMA runs during this block's compute). Per key block:
//   S  = Q K_j^T (TFU, fp32 accumulate; the mask block is DMA'd into S first and the product
//        accumulates onto it, so an fp32 mask costs no VFU pass)
//   m' = max(m, rowmax S);  P = exp(S - m');  l = l exp(m - m') + rowsum P     (VFU, fp32)
//   O  = O exp(m - m') + P V_j   (TFU accumulating onto the rescaled O; P rounded to the input
//        dtype first for fp16/bf16)
// and at the end O / l is stored once and logsumexp = m + log l (fp32, per row) is kept for the
// backward. Causal key blocks wholly above the diagonal are skipped; blocks across it add the
// 0/-inf pattern by one on-chip (Move-DMA) copy from a sliding 0 | -inf vector.
// Cycles are those of the intrinsics the kernel issues (sim's TFU/VFU/DMA formulas); per key
// block of r rows x c keys:
//   TFU  mm(r, D, c) + mm(r, c, Dv)               mm = the TFU formula (tfu_timing.h) for the dtype
//   VFU  ~ (4 + t) passes over r x c              rowmax, subtract, exp (t = vfu.transcendental_factor
//        + 2 passes over r x Dv (rescale O)         passes), rowsum, (+1 cast for fp16/bf16,
//                                                  +1 for a mask that needs converting,
//                                                  +1 scale when the score tiles take it)
//   DMA  (c x D + c x Dv) x es bytes + the mask block, overlapped with the compute above
// GDRAM traffic: Q and O once, K and V once per query block (ceil(L / Br) times), the mask once
// per element; never anything of size L x S besides a full mask the caller passed.
// Br and Bc (multiples of 16) are chosen per call from these formulas, the tasks' balance over the
// cores, the cores' fair share of DRAM and the first block's exposed copies, among the tilings
// whose buffers fit core.nram_bytes and core.wram_bytes (attention/attention_common.cpp).
//
// The backward recomputes P from Q, K and the logsumexp (no stored probabilities):
//   D_r = rowsum(dO ∘ O);  dP = dO V^T;  dS = P ∘ (dP - D);  dQ = scale dS K;
//   dK = scale dS^T Q;  dV = P^T dO
// as two kernels, so no two tasks ever add into the same gradient (no atomics, no partial sums in
// DRAM): the first walks query blocks (dQ, and D into the workspace), the second key blocks (dK and
// dV, with K and V resident and the transposed products S^T = K Q^T, dP^T = V dO^T computed
// directly, so no on-chip transpose is needed).
//
// Dropout is not part of these kernels: a caller that needs dropout_p > 0 composes the attention
// from device ops (matmul, softmax, dropout, matmul), as torch_bridge does.
#pragma once

#include <cstddef>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

struct AttentionParams {
  double scale = 0.0;  // multiplies Q K^T; must be finite and non-zero (torch: 1/sqrt(D) by default)
  bool causal = false;  // add the causal mask (then `mask` must be null, as in torch)
};

// O (and logsumexp) from Q, K, V and an optional mask.
//   q, k, v, o: 4-d as above, one dtype: fp32, fp16, or bf16 (bf16 where the config computes it,
//               vfu.bf16); fp32 accumulation, one rounding of O.
//   mask:       null, or broadcastable to [B, H, L, S] (1 to 4 dims, right-aligned, each dim equal
//               or 1; stride-0 dims welcome): bool, or additive of q's dtype or fp32.
//   lse:        null, or fp32 [B, H, L] (any strides): logsumexp of each row of the biased,
//               scaled scores (the backward's input). -FLT_MAX for a row with every key masked.
// kBadParam: shapes that do not agree (named), a non-finite or zero scale, causal with a mask, an
// output with a broadcast dim. kNotSupported: another dtype, S = 0, or a head_dim whose smallest
// tile does not fit the core's NRAM/WRAM (the message names core.nram_bytes / core.wram_bytes).
// Records "attention_forward": MACs = B H L S (D + Dv), bytes = q, k, v, mask, o, lse once.
Status attention_forward(Handle* h, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                         const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                         const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, void* o_ptr,
                         const TensorDesc* lse, void* lse_ptr);

// kSuccess when attention_forward and attention_backward accept these descriptors (shapes,
// dtypes, mask, and a tiling that fits the config), with the status and detail they would give
// otherwise; nothing is launched and no pointer is needed. For callers choosing between this
// kernel and a composed path (torch_bridge's SDPA backend choice).
Status attention_check(Handle* h, const AttentionParams& p, const TensorDesc& q, const TensorDesc& k,
                       const TensorDesc& v, const TensorDesc* mask);

// Workspace of attention_backward: B x H x L fp32 values (the row terms D).
Status get_attention_backward_workspace_size(Handle* h, const TensorDesc& q, std::size_t* bytes);

// dq, dk, dv (shapes of q, k, v, one dtype with them, any non-broadcast strides) from the forward's
// inputs, its o and lse, and do (o's shape and dtype). Same params and mask as the forward.
// Records "attention_backward": MACs = 2.5 x the forward's (S, dP, dV, dQ, dK products; S is
// computed by both kernels), bytes = every input and output once; 2 kernels.
Status attention_backward(Handle* h, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                          const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                          const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, const void* o_ptr,
                          const TensorDesc& d_o, const void* do_ptr, const TensorDesc& lse, const void* lse_ptr,
                          const TensorDesc& dq, void* dq_ptr, const TensorDesc& dk, void* dk_ptr,
                          const TensorDesc& dv, void* dv_ptr, void* workspace, std::size_t workspace_bytes);

}  // namespace mlusim::mlu
