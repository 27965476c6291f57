// The per-channel affine stage of fused convolutions, folded on chip: for channel c,
//   scale[c] = gamma[c] * rsqrt(var[c] + eps)          (gamma = 1 when absent; no var: no rsqrt)
//   shift[c] = beta[c] + (bias[c] - mean[c]) * scale[c] (absent terms 0)
//   v        = v * scale[c] + shift[c]
// i.e. inference batch norm (and the convolution's bias) applied to the fp32 result before its
// rounding. The kernel that owns an output block loads the block's channels of the (optional)
// tensors itself and folds them on the VFU, so no separate fold kernel or workspace is needed.
// Used by the GEMM epilogue (rows = channels) and the depthwise convolution (one channel per plane).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlusim/sim/dtype.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu {

// A [channels] vector in GDRAM, any stride, fp32 or fp16; base 0 = absent.
struct ChannelVector {
  std::uint64_t base = 0;
  std::int64_t stride = 1;  // elements
  sim::DType dtype = sim::DType::kFloat32;
  bool present() const { return base != 0; }
};

struct ChannelAffine {
  bool enabled = false;
  double eps = 0;
  ChannelVector gamma, beta, mean, var, bias;
};

// NRAM scratch for folding up to n channels at once and, with cols > 0, for applying them to
// blocks of up to n rows x cols columns at once.
struct AffineBuffers {
  dev::Addr raw[5];             // gamma, beta, mean, var, bias as loaded (4 bytes x n each)
  dev::Addr scale, shift, tmp;  // fp32 [n]
  dev::Addr ones, tile;         // fp32 [cols] of 1.0 and [n x cols] (cols > 0 only)
  std::size_t cols = 0;
};
// Bytes alloc_affine_buffers takes (each buffer rounded to 128).
std::size_t affine_buffer_bytes(std::size_t n, std::size_t cols);
// Allocates the buffers (and fills `ones`): call once per task.
AffineBuffers alloc_affine_buffers(std::size_t n, std::size_t cols);

// Issues the asynchronous loads of channels [c0, c0 + n) of the present tensors.
void load_affine_async(const ChannelAffine& a, std::size_t c0, std::size_t n, const AffineBuffers& b);
// Once those loads landed: b.scale and b.shift [0, n) in fp32.
void fold_affine(const ChannelAffine& a, std::size_t n, const AffineBuffers& b);
// x [rows, len] fp32 (dense) = x * scale[r] + shift[r] per row r. With the block buffers (len <=
// cols): scale and shift are broadcast along the rows by outer products with `ones` on the VFU
// (vec_matmul, K = 1: exact), so the block costs three full-width intrinsics instead of two short
// ones per row; otherwise (or for one row) per-row intrinsics with scalar operands.
void apply_row_affine(const AffineBuffers& b, dev::Addr x, std::size_t rows, std::size_t len);

}  // namespace mlusim::mlu
