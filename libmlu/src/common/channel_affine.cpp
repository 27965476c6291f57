#include "common/channel_affine.h"
#include "common/int_math.h"

namespace mlusim::mlu {

using namespace mlusim::dev;
using sim::DType;
using sim::VecBinaryOp;
using sim::VecUnaryOp;

namespace {

const ChannelVector& vec(const ChannelAffine& a, int k) {
  const ChannelVector* v[5] = {&a.gamma, &a.beta, &a.mean, &a.var, &a.bias};
  return *v[k];
}

// A loaded vector as fp32: its raw buffer, or cast into `dst` when it is fp16.
Addr as_f32(const ChannelVector& v, Addr raw, Addr dst, std::size_t n) {
  if (v.dtype == DType::kFloat32) return raw;
  vec_cast(DType::kFloat32, dst, v.dtype, raw, n);
  return dst;
}

}  // namespace

std::size_t affine_buffer_bytes(std::size_t n, std::size_t cols) {
  return 8 * up128(n * 4) + (cols > 0 ? up128(cols * 4) + up128(n * cols * 4) : 0);
}

AffineBuffers alloc_affine_buffers(std::size_t n, std::size_t cols) {
  AffineBuffers b;
  for (Addr& r : b.raw) r = alloc(Space::kNram, up128(n * 4));
  b.scale = alloc(Space::kNram, up128(n * 4));
  b.shift = alloc(Space::kNram, up128(n * 4));
  b.tmp = alloc(Space::kNram, up128(n * 4));
  if (cols > 0) {
    b.cols = cols;
    b.ones = alloc(Space::kNram, up128(cols * 4));
    b.tile = alloc(Space::kNram, up128(n * cols * 4));
    vec_fill(DType::kFloat32, b.ones, 1.0, cols);
  }
  return b;
}

void load_affine_async(const ChannelAffine& a, std::size_t c0, std::size_t n, const AffineBuffers& b) {
  for (int k = 0; k < 5; ++k) {
    const ChannelVector& v = vec(a, k);
    if (!v.present()) continue;
    const std::int64_t es = static_cast<std::int64_t>(sim::dtype_size(v.dtype));
    const Addr src{Space::kGdram, v.base + static_cast<std::uint64_t>(static_cast<std::int64_t>(c0) * v.stride * es)};
    const CopyShape shape = v.stride == 1 || n == 1 ? CopyShape{n * static_cast<std::size_t>(es)}
                                                    : CopyShape{static_cast<std::size_t>(es), n, es, v.stride * es};
    memcpy_strided_async(b.raw[k], src, shape, Dir::kGdram2Nram);
  }
}

void fold_affine(const ChannelAffine& a, std::size_t n, const AffineBuffers& b) {
  constexpr DType f32 = DType::kFloat32;
  // scale = gamma * rsqrt(var + eps)
  if (a.gamma.present())
    vec_unary(VecUnaryOp::kCopy, f32, b.scale, as_f32(a.gamma, b.raw[0], b.tmp, n), n);
  else
    vec_fill(f32, b.scale, 1.0, n);
  if (a.var.present()) {
    const Addr var = as_f32(a.var, b.raw[3], b.tmp, n);
    vec_binary_scalar(VecBinaryOp::kAdd, f32, b.tmp, var, a.eps, n);
    vec_unary(VecUnaryOp::kRsqrt, f32, b.tmp, b.tmp, n);
    vec_binary(VecBinaryOp::kMul, f32, b.scale, b.scale, b.tmp, n);
  }
  // shift = beta + (bias - mean) * scale
  if (a.bias.present() || a.mean.present()) {
    if (a.bias.present())
      vec_unary(VecUnaryOp::kCopy, f32, b.shift, as_f32(a.bias, b.raw[4], b.tmp, n), n);
    else
      vec_fill(f32, b.shift, 0.0, n);
    if (a.mean.present()) vec_binary(VecBinaryOp::kSub, f32, b.shift, b.shift, as_f32(a.mean, b.raw[2], b.tmp, n), n);
    vec_binary(VecBinaryOp::kMul, f32, b.shift, b.shift, b.scale, n);
    if (a.beta.present()) vec_binary(VecBinaryOp::kAdd, f32, b.shift, b.shift, as_f32(a.beta, b.raw[1], b.tmp, n), n);
  } else if (a.beta.present()) {
    vec_unary(VecUnaryOp::kCopy, f32, b.shift, as_f32(a.beta, b.raw[1], b.tmp, n), n);
  } else {
    vec_fill(f32, b.shift, 0.0, n);
  }
}

void apply_row_affine(const AffineBuffers& b, Addr x, std::size_t rows, std::size_t len) {
  constexpr DType f32 = DType::kFloat32;
  if (rows > 1 && len <= b.cols) {
    vec_matmul(f32, f32, b.tile, b.scale, b.ones, rows, 1, len, false, false);  // tile[r, :] = scale[r]
    vec_binary(VecBinaryOp::kMul, f32, x, x, b.tile, rows * len);
    vec_matmul(f32, f32, x, b.shift, b.ones, rows, 1, len, false, true);  // x[r, :] += shift[r]
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const auto i = static_cast<std::int64_t>(r);
    const float scale = load(sim::Nram<float>(b.scale.value) + i);
    const float shift = load(sim::Nram<float>(b.shift.value) + i);
    const Addr row = x.offset(i * static_cast<std::int64_t>(len) * 4);
    vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, row, row, scale, len);
    vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, row, row, shift, len);
  }
}

}  // namespace mlusim::mlu
