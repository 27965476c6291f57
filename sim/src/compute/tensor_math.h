// TFU arithmetic: matmul and conv2d on raw host pointers into the simulated on-chip memories.
// Timing is separate (compute/tfu_timing.h). All matrices are dense and row-major.
//
// Supported (input dtype -> output dtype):
//   fp32 -> fp32            fp32 products, fp32 accumulation
//   fp16 -> fp16 | fp32     operands widened to fp32, fp32 accumulation (also of the existing C when
//                           accumulating), one rounding to fp16 at the end for an fp16 output
//   bf16 -> bf16 | fp32     the same with bf16 (exact widening; one round-to-nearest-even to bf16)
//   int8 -> int32           exact integer products and sums; the int32 result wraps (two's
//                           complement) if it overflows, for any K
// Anything else throws std::invalid_argument naming both dtypes. Whether the configured TFU has an
// array for the input dtype is the caller's check (tfu_array_for in compute/tfu_timing.h).
// The output may overlap an input (it is then computed through a temporary).
#pragma once

#include <cstddef>

#include "mlusim/sim/dtype.h"

namespace mlusim::sim::compute {

// True for the (input, output) dtype pairs listed above.
bool tensor_dtypes_supported(DType in_t, DType out_t);

// C[M,N] (+)= A[M,K] x B, with B stored as [K,N], or as [N,K] when b_transposed (so C = A x B^T,
// the layout of conv weights and of nn.Linear). accumulate: C += A x B, else C = A x B.
// K == 0 gives C = 0 (or leaves C unchanged when accumulating); M == 0 or N == 0 does nothing.
void matmul(DType in_t, DType out_t, void* c, const void* a, const void* b, std::size_t m,
            std::size_t k, std::size_t n, bool b_transposed, bool accumulate);

// The same product with A stored depth-major, [K,M] (element (m, k) of A at a[k * M + m]):
// A is transposed into a temporary first, so the numerics are matmul()'s.
void matmul_a_k_major(DType in_t, DType out_t, void* c, const void* a, const void* b, std::size_t m,
                      std::size_t k, std::size_t n, bool b_transposed, bool accumulate);

// Output extent of a convolution along one axis, no padding (the caller pre-pads):
// (in - dilation*(kernel-1) - 1) / stride + 1. Throws std::invalid_argument when the dilated
// kernel does not fit in `in`, or kernel, stride or dilation is 0.
std::size_t conv_out_size(std::size_t in, std::size_t kernel, std::size_t stride,
                          std::size_t dilation);

// out[OH,OW,OC] (+)= conv(in[IH,IW,C], weights[OC,KH,KW,C]) — HWC activations, OHWI weights, no
// padding, OH/OW from conv_out_size:
//   out[oh,ow,o] = sum_{kh,kw,c} in[oh*stride_h + kh*dilation_h, ow*stride_w + kw*dilation_w, c]
//                                * weights[o,kh,kw,c]
// With weights_k_major the weights are [KH,KW,C,OC] instead (weights[kh,kw,c,o]: the depth-major
// [K, N] matrix, matmul's B not transposed).
// Computed as im2col (a [OH*OW, KH*KW*C] matrix) times the [K, OC] weight matrix through matmul(),
// so the dtype rules and numerics are matmul's.
void conv2d(DType in_t, DType out_t, void* out, const void* in, const void* weights,
            std::size_t ih, std::size_t iw, std::size_t c, std::size_t oc, std::size_t kh,
            std::size_t kw, std::size_t stride_h, std::size_t stride_w, std::size_t dilation_h,
            std::size_t dilation_w, bool weights_k_major, bool accumulate);

}  // namespace mlusim::sim::compute
