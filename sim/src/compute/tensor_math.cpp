#include "compute/tensor_math.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "compute/half_convert.h"

namespace mlusim::sim::compute {
namespace {

using Index = Eigen::Index;
template <class T> using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using CMat = Eigen::Map<const RowMat<T>>;
template <class T> using MMat = Eigen::Map<RowMat<T>>;

// int8 products are integers of magnitude <= 2^14, so any sum of up to 2^10 of them is an integer
// of magnitude <= 2^24 and exact in fp32 whatever the summation order: int8 GEMMs run on the fp32
// GEMM kernel (SIMD on every x86-64) in K chunks of this length, combined with wrapping int32 adds.
constexpr Index kInt8ExactKInFloat = Index{1} << 10;

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  return a_bytes != 0 && b_bytes != 0 && std::less<>{}(pa, pb + b_bytes) &&
         std::less<>{}(pb, pa + a_bytes);
}

// B as a [K,N] expression whatever its storage.
template <class T> auto b_view(const void* b, Index k, Index n, bool transposed) {
  struct View {
    CMat<T> map;
    bool transposed;
  };
  return transposed ? View{CMat<T>(static_cast<const T*>(b), n, k), true}
                    : View{CMat<T>(static_cast<const T*>(b), k, n), false};
}

// Widens a stored matrix (fp16, bf16 or int8) into a row-major fp32 matrix of the same shape.
RowMat<float> widen(DType t, const void* p, Index rows, Index cols) {
  RowMat<float> w(rows, cols);
  if (t == DType::kFloat16 || t == DType::kBFloat16)
    float16s_to_floats(t, p, w.data(), static_cast<std::size_t>(rows * cols));
  else
    w = CMat<std::int8_t>(static_cast<const std::int8_t*>(p), rows, cols).cast<float>();
  return w;
}

void matmul_f32(float* c, const void* a, const void* b, Index m, Index k, Index n,
                bool b_transposed, bool accumulate, bool alias) {
  CMat<float> am(static_cast<const float*>(a), m, k);
  MMat<float> cm(c, m, n);
  auto v = b_view<float>(b, k, n, b_transposed);
  if (alias) {
    const RowMat<float> p = v.transposed ? RowMat<float>(am * v.map.transpose()) : RowMat<float>(am * v.map);
    if (accumulate) cm += p;
    else cm = p;
    return;
  }
  if (v.transposed) {
    if (accumulate) cm.noalias() += am * v.map.transpose();
    else cm.noalias() = am * v.map.transpose();
  } else {
    if (accumulate) cm.noalias() += am * v.map;
    else cm.noalias() = am * v.map;
  }
}

// in_t: fp16 or bf16; out_t: in_t or fp32.
void matmul_f16(DType in_t, DType out_t, void* c, const void* a, const void* b, Index m, Index k, Index n,
                bool b_transposed, bool accumulate) {
  const RowMat<float> af = widen(in_t, a, m, k);
  const RowMat<float> bf = b_transposed ? widen(in_t, b, n, k) : widen(in_t, b, k, n);
  RowMat<float> p(m, n);
  if (b_transposed) p.noalias() = af * bf.transpose();
  else p.noalias() = af * bf;
  if (out_t == DType::kFloat32) {
    MMat<float> cm(static_cast<float*>(c), m, n);
    if (accumulate) cm += p;
    else cm = p;
  } else {
    const auto count = static_cast<std::size_t>(m * n);
    if (accumulate) p += widen(in_t, c, m, n);
    floats_to_float16s(in_t, p.data(), c, count);
  }
}

void matmul_i8(std::int32_t* c, const void* a, const void* b, Index m, Index k, Index n,
               bool b_transposed, bool accumulate) {
  const RowMat<float> af = widen(DType::kInt8, a, m, k);
  // B as [K,N] (materialised when stored transposed, so K chunks are row blocks).
  RowMat<float> bf = b_transposed ? RowMat<float>(widen(DType::kInt8, b, n, k).transpose())
                                  : widen(DType::kInt8, b, k, n);
  MMat<std::int32_t> cm(c, m, n);
  RowMat<std::uint32_t> acc = accumulate ? RowMat<std::uint32_t>(cm.cast<std::uint32_t>())
                                         : RowMat<std::uint32_t>::Zero(m, n);
  RowMat<float> p(m, n);
  for (Index k0 = 0; k0 < k; k0 += kInt8ExactKInFloat) {
    const Index kc = std::min(kInt8ExactKInFloat, k - k0);
    p.noalias() = af.middleCols(k0, kc) * bf.middleRows(k0, kc);
    acc += p.cast<std::int32_t>().cast<std::uint32_t>();  // exact integers; the adds wrap
  }
  cm = acc.cast<std::int32_t>();
}

std::string dtype_pair(DType in_t, DType out_t) {
  return "input dtype '" + std::string(dtype_name(in_t)) + "' with output dtype '" +
         std::string(dtype_name(out_t)) + "'";
}

}  // namespace

bool tensor_dtypes_supported(DType in_t, DType out_t) {
  switch (in_t) {
    case DType::kFloat32: return out_t == DType::kFloat32;
    case DType::kFloat16: return out_t == DType::kFloat16 || out_t == DType::kFloat32;
    case DType::kBFloat16: return out_t == DType::kBFloat16 || out_t == DType::kFloat32;
    case DType::kInt8: return out_t == DType::kInt32;
    default: return false;
  }
}

void matmul(DType in_t, DType out_t, void* c, const void* a, const void* b, std::size_t m,
            std::size_t k, std::size_t n, bool b_transposed, bool accumulate) {
  if (!tensor_dtypes_supported(in_t, out_t))
    throw std::invalid_argument("TFU matmul does not support " + dtype_pair(in_t, out_t));
  if (m == 0 || n == 0) return;
  const auto im = static_cast<Index>(m), ik = static_cast<Index>(k), in = static_cast<Index>(n);
  switch (in_t) {
    case DType::kFloat32: {
      const std::size_t es = sizeof(float);
      const bool alias = overlaps(c, m * n * es, a, m * k * es) || overlaps(c, m * n * es, b, k * n * es);
      return matmul_f32(static_cast<float*>(c), a, b, im, ik, in, b_transposed, accumulate, alias);
    }
    case DType::kFloat16:  // operands are widened into temporaries first: aliasing is harmless
    case DType::kBFloat16:
      return matmul_f16(in_t, out_t, c, a, b, im, ik, in, b_transposed, accumulate);
    case DType::kInt8:  // likewise
      return matmul_i8(static_cast<std::int32_t*>(c), a, b, im, ik, in, b_transposed, accumulate);
    default: break;
  }
  throw std::invalid_argument("TFU matmul does not support " + dtype_pair(in_t, out_t));
}

void matmul_a_k_major(DType in_t, DType out_t, void* c, const void* a, const void* b, std::size_t m,
                      std::size_t k, std::size_t n, bool b_transposed, bool accumulate) {
  const std::size_t es = dtype_size(in_t);
  thread_local std::vector<unsigned char> am;
  am.resize(m * k * es);
  const auto* src = static_cast<const unsigned char*>(a);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < k; ++j) std::memcpy(&am[(i * k + j) * es], src + (j * m + i) * es, es);
  matmul(in_t, out_t, c, am.data(), b, m, k, n, b_transposed, accumulate);
}

std::size_t conv_out_size(std::size_t in, std::size_t kernel, std::size_t stride,
                          std::size_t dilation) {
  if (kernel == 0 || stride == 0 || dilation == 0)
    throw std::invalid_argument("conv2d: kernel, stride and dilation must be >= 1 (kernel " +
                                std::to_string(kernel) + ", stride " + std::to_string(stride) +
                                ", dilation " + std::to_string(dilation) + ")");
  const std::size_t span = dilation * (kernel - 1) + 1;
  if (span > in)
    throw std::invalid_argument("conv2d: dilated kernel extent " + std::to_string(span) +
                                " exceeds input extent " + std::to_string(in));
  return (in - span) / stride + 1;
}

void conv2d(DType in_t, DType out_t, void* out, const void* in, const void* weights,
            std::size_t ih, std::size_t iw, std::size_t c, std::size_t oc, std::size_t kh,
            std::size_t kw, std::size_t stride_h, std::size_t stride_w, std::size_t dilation_h,
            std::size_t dilation_w, bool weights_k_major, bool accumulate) {
  if (!tensor_dtypes_supported(in_t, out_t))
    throw std::invalid_argument("TFU conv2d does not support " + dtype_pair(in_t, out_t));
  const std::size_t oh = conv_out_size(ih, kh, stride_h, dilation_h);
  const std::size_t ow = conv_out_size(iw, kw, stride_w, dilation_w);
  const std::size_t m = oh * ow;
  const std::size_t k = kh * kw * c;
  if (m == 0 || oc == 0) return;

  // A 1x1 kernel at stride 1 reads the input as it is: [IH*IW, C] is already the im2col matrix.
  if (kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1)
    return matmul(in_t, out_t, out, in, weights, m, k, oc, /*b_transposed=*/!weights_k_major, accumulate);

  // im2col: row (oh, ow), columns (kh, kw, c); each (kh, kw) tap is C contiguous elements.
  const std::size_t es = dtype_size(in_t);
  thread_local std::vector<unsigned char> col;
  col.resize(m * k * es);
  const auto* src = static_cast<const unsigned char*>(in);
  const std::size_t tap_bytes = c * es;
  unsigned char* dst = col.data();
  for (std::size_t y = 0; y < oh; ++y) {
    for (std::size_t x = 0; x < ow; ++x) {
      for (std::size_t ky = 0; ky < kh; ++ky) {
        const std::size_t iy = y * stride_h + ky * dilation_h;
        const unsigned char* row = src + (iy * iw + x * stride_w) * tap_bytes;
        for (std::size_t kx = 0; kx < kw; ++kx) {
          std::memcpy(dst, row + kx * dilation_w * tap_bytes, tap_bytes);
          dst += tap_bytes;
        }
      }
    }
  }
  matmul(in_t, out_t, out, col.data(), weights, m, k, oc, /*b_transposed=*/!weights_k_major, accumulate);
}

}  // namespace mlusim::sim::compute
