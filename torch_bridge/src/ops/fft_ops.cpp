// Discrete Fourier transforms on the device: aten::_fft_r2c, _fft_c2c, _fft_c2r and their out=
// forms, which torch.fft.* (fft, ifft, rfft, irfft, hfft, ihfft and their 2-d / n-d forms), stft
// and istft reach. CUDA twin: SpectralOps.cpp over cuFFT (aten/src/ATen/native/cuda).
//
// Each 1-d transform is a dense DFT on the TFU: one GEMM of the signals (every other dim batched
// as rows) against the plan's DFT matrix W. Complex data is interleaved (re, im) pairs, so a
// complex transform is real arithmetic on the real view, and the GEMM reads and writes the pairs
// in place (no separate real and imaginary planes). With theta = 2 pi (j k mod n) / n, signal
// index j, frequency k, s = -1 forward and +1 inverse:
//
//   c2c  (rows, 2n) @ W (2n, 2m), m = n:   W[(j,re),(k,re)] = W[(j,im),(k,im)] = cos theta,
//                                           W[(j,re),(k,im)] = s sin theta, W[(j,im),(k,re)] = -s sin theta
//   r2c  (rows, n)  @ W (n, 2m):            W[j,(k,re)] = cos theta, W[j,(k,im)] = -sin theta;
//                                           m = n/2 + 1 (onesided) or n
//   c2r  (rows, 2m) @ W (2m, n), m = n/2+1: W[(k,re),j] = w_k cos theta, W[(k,im),j] = -w_k sin theta,
//                                           w_k = 1 for k = 0 and k = n/2, else 2 (the hermitian
//                                           half counts twice; the imaginary parts of the DC and
//                                           Nyquist bins drop out, as in pocketfft and cuFFT)
//
// W is the plan's twiddle table, computed on the host in double precision (the angle reduced
// exactly as j k mod n) and uploaded per call, as cuFFT and MKL plans precompute theirs; the
// transform itself is the device's GEMM, float32 with float32 accumulation. A multi-dim transform
// is one such GEMM per dim (r2c on the last of `dim`, then c2c on the others; c2r the reverse).
// Normalisation (fft_norm_mode: 0 none, 1 by 1/sqrt(N), 2 by 1/N, N = the product of the
// transformed signal lengths) is folded into the first GEMM's W.
//
// Cost: 2n x 2m multiply-adds per complex signal (the GEMM's timing), against an FFT's
// O(n log n); for the lengths models use (stft windows, spectral layers up to a few thousand
// points) the TFU's throughput outweighs that. Limits: W may hold at most kMaxPlanElements
// values (c2c: n <= 2048), beyond that NotImplementedError naming the length. Dtypes: float32 /
// complex64; float16 / complex32 compute in float32 and round once; float64 / complex128 are
// narrowed to float32 with narrow_float64's range check (float32 precision).
#include <cmath>
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::Tensor;

// The largest DFT matrix a plan uploads (float32 values: 64 MiB).
constexpr std::int64_t kMaxPlanElements = std::int64_t{1} << 24;

enum class Kind { kR2C, kC2C, kC2R };

// The plan's DFT matrix (see the file comment) for signal length n and m output bins (c2r: m
// input bins), times `scale`, as a float32 device tensor.
Tensor dft_matrix(Kind kind, std::int64_t n, std::int64_t m, int sign, double scale, const c10::Device& device,
                  const char* name) {
  const std::int64_t rows = kind == Kind::kR2C ? n : 2 * (kind == Kind::kC2C ? n : m);
  const std::int64_t cols = kind == Kind::kC2R ? n : 2 * m;
  TORCH_CHECK_NOT_IMPLEMENTED(rows * cols <= kMaxPlanElements, name, ": a length-", n,
                              " transform is beyond device mlu's DFT plans (its ", rows, " x ", cols,
                              " DFT matrix exceeds ", kMaxPlanElements, " elements)");
  Tensor w = at::empty({rows, cols}, at::TensorOptions().dtype(at::kFloat));
  float* p = w.data_ptr<float>();
  const double step = 2.0 * M_PI / static_cast<double>(n);
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t k = 0; k < m; ++k) {
      const double theta = step * static_cast<double>((j * k) % n);
      const double c = std::cos(theta) * scale, s = std::sin(theta) * scale;
      switch (kind) {
        case Kind::kR2C:
          p[j * cols + 2 * k] = static_cast<float>(c);
          p[j * cols + 2 * k + 1] = static_cast<float>(-s);
          break;
        case Kind::kC2C:
          p[(2 * j) * cols + 2 * k] = static_cast<float>(c);
          p[(2 * j + 1) * cols + 2 * k + 1] = static_cast<float>(c);
          p[(2 * j) * cols + 2 * k + 1] = static_cast<float>(sign * s);
          p[(2 * j + 1) * cols + 2 * k] = static_cast<float>(-sign * s);
          break;
        case Kind::kC2R: {
          const double wk = (k == 0 || 2 * k == n) ? 1.0 : 2.0;
          p[(2 * k) * cols + j] = static_cast<float>(wk * c);
          p[(2 * k + 1) * cols + j] = static_cast<float>(-wk * s);
          break;
        }
      }
    }
  }
  return w.to(device);  // one host -> device transfer (the plan upload)
}

// One 1-d transform of `x` (float32 for r2c, complex64 else) along `dim`: n the signal length, m
// the bins (r2c/c2c: output; c2r: input). Returns complex64 (r2c, c2c) or float32 (c2r).
Tensor dft_along(const Tensor& x, std::int64_t dim, Kind kind, std::int64_t n, std::int64_t m, int sign, double scale,
                 const char* name) {
  const Tensor moved = x.movedim(dim, -1);
  std::vector<std::int64_t> out_sizes(moved.sizes().begin(), moved.sizes().end());
  out_sizes.back() = kind == Kind::kC2R ? n : m;
  const std::int64_t signals = moved.numel() / std::max<std::int64_t>(moved.size(-1), 1);
  const std::int64_t in_cols = kind == Kind::kR2C ? n : 2 * moved.size(-1);
  // contiguous(): a reshape of overlapping frames (stft's as_strided windows) stays a view the GEMM
  // cannot read; the copy lays them out.
  const Tensor rows = (kind == Kind::kR2C ? moved : at::view_as_real(moved)).reshape({signals, in_cols}).contiguous();
  const Tensor w = dft_matrix(kind, n, m, sign, scale, x.device(), name);
  const Tensor product = at::mm(rows, w);  // (signals, out_cols) on the TFU
  Tensor result;
  if (kind == Kind::kC2R) {
    result = product.view(out_sizes);
  } else {
    std::vector<std::int64_t> pair_sizes = out_sizes;
    pair_sizes.push_back(2);
    result = at::view_as_complex(product.view(pair_sizes));
  }
  return result.movedim(-1, dim);
}

// The product of the transformed lengths' normalisation (fft_norm_mode).
double norm_scale(std::int64_t normalization, double signal_numel, const char* name) {
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(signal_numel);
    case 2: return 1.0 / signal_numel;
    default: TORCH_CHECK_VALUE(false, name, ": unknown normalization mode ", normalization, " (0, 1 or 2)");
  }
}

// `self` as the float32 / complex64 data the GEMMs take (16-bit widened, float64 narrowed with a
// range check), conjugate views resolved.
Tensor compute_input(const Tensor& self, const char* name) {
  const at::ScalarType t = self.scalar_type();
  const bool complex = self.is_complex();
  const at::ScalarType part = complex ? c10::toRealValueType(t) : t;
  TORCH_CHECK_NOT_IMPLEMENTED(part == at::kFloat || part == at::kHalf || part == at::kDouble, name, ": dtype ", t,
                              " is not supported on device mlu (float32, complex64, float16, complex32, "
                              "float64, complex128)");
  const Tensor resolved = self.resolve_conj().resolve_neg();
  if (part == at::kFloat) return resolved;
  if (part == at::kDouble) {
    if (!complex) return narrow_float64(resolved, name);
    return at::view_as_complex(narrow_float64(at::view_as_real(resolved), name));
  }
  return resolved.to(complex ? at::kComplexFloat : at::kFloat);
}

std::vector<std::int64_t> wrapped_dims(IntArrayRef dim, std::int64_t ndim, const char* name) {
  std::vector<std::int64_t> dims;
  for (const std::int64_t d : dim) dims.push_back(wrap_dim(d, ndim, name));
  return dims;
}

Tensor fft_r2c(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool onesided, const char* name) {
  OpScope op(name, self);
  TORCH_CHECK(!self.is_complex(), name, ": expects a real input tensor, got ", self.scalar_type());
  TORCH_CHECK(!dim.empty(), name, ": dim must not be empty");
  const auto dims = wrapped_dims(dim, self.dim(), name);
  double numel = 1.0;
  for (const std::int64_t d : dims) numel *= static_cast<double>(self.size(d));
  double scale = norm_scale(normalization, numel, name);
  Tensor x = compute_input(self, name);
  const at::ScalarType out_dtype = c10::toComplexType(self.scalar_type());
  const std::int64_t last = dims.back();
  const std::int64_t n = x.size(last);
  if (x.numel() == 0) {
    std::vector<std::int64_t> sizes(x.sizes().begin(), x.sizes().end());
    sizes[last] = onesided ? n / 2 + 1 : n;
    return empty_on(op.device(), sizes, out_dtype);
  }
  x = dft_along(x, last, Kind::kR2C, n, onesided ? n / 2 + 1 : n, -1, scale, name);
  for (std::size_t i = 0; i + 1 < dims.size(); ++i)
    x = dft_along(x, dims[i], Kind::kC2C, x.size(dims[i]), x.size(dims[i]), -1, 1.0, name);
  return x.scalar_type() == out_dtype ? x : x.to(out_dtype);
}

Tensor fft_c2c(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool forward, const char* name) {
  OpScope op(name, self);
  TORCH_CHECK(self.is_complex(), name, ": expects a complex input tensor, got ", self.scalar_type());
  const auto dims = wrapped_dims(dim, self.dim(), name);
  double numel = 1.0;
  for (const std::int64_t d : dims) numel *= static_cast<double>(self.size(d));
  double scale = norm_scale(normalization, numel, name);
  Tensor x = compute_input(self, name);
  if (x.numel() == 0 || dims.empty()) return (dims.empty() ? x.clone() : x).to(self.scalar_type());
  for (const std::int64_t d : dims) {
    x = dft_along(x, d, Kind::kC2C, x.size(d), x.size(d), forward ? -1 : 1, scale, name);
    scale = 1.0;
  }
  return x.scalar_type() == self.scalar_type() ? x : x.to(self.scalar_type());
}

Tensor fft_c2r(const Tensor& self, IntArrayRef dim, std::int64_t normalization, std::int64_t last_dim_size,
               const char* name) {
  OpScope op(name, self);
  TORCH_CHECK(self.is_complex(), name, ": expects a complex input tensor, got ", self.scalar_type());
  TORCH_CHECK(!dim.empty(), name, ": dim must not be empty");
  TORCH_CHECK_VALUE(last_dim_size >= 1, name, ": Invalid number of data points (", last_dim_size, ") specified");
  const auto dims = wrapped_dims(dim, self.dim(), name);
  const std::int64_t last = dims.back();
  const std::int64_t bins = last_dim_size / 2 + 1;
  TORCH_CHECK(self.size(last) >= bins, name, ": the input has ", self.size(last), " bins along dim ", last,
              ", a length-", last_dim_size, " real output needs ", bins);
  double numel = static_cast<double>(last_dim_size);
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) numel *= static_cast<double>(self.size(dims[i]));
  double scale = norm_scale(normalization, numel, name);
  const at::ScalarType out_dtype = c10::toRealValueType(self.scalar_type());
  Tensor x = compute_input(self, name).narrow(last, 0, bins);
  if (x.numel() == 0) {
    std::vector<std::int64_t> sizes(x.sizes().begin(), x.sizes().end());
    sizes[last] = last_dim_size;
    return empty_on(op.device(), sizes, out_dtype);
  }
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
    x = dft_along(x, dims[i], Kind::kC2C, x.size(dims[i]), x.size(dims[i]), 1, scale, name);
    scale = 1.0;
  }
  x = dft_along(x, last, Kind::kC2R, last_dim_size, bins, 1, scale, name);
  return x.scalar_type() == out_dtype ? x : x.to(out_dtype);
}

Tensor mlu_fft_r2c(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool onesided) {
  return fft_r2c(self, dim, normalization, onesided, "aten::_fft_r2c");
}
Tensor& mlu_fft_r2c_out(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool onesided, Tensor& out) {
  constexpr const char* kName = "aten::_fft_r2c.out";
  check_out_dtype(out, c10::toComplexType(self.scalar_type()), kName);
  return write_out(fft_r2c(self, dim, normalization, onesided, kName), out, kName);
}
Tensor mlu_fft_c2c(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool forward) {
  return fft_c2c(self, dim, normalization, forward, "aten::_fft_c2c");
}
Tensor& mlu_fft_c2c_out(const Tensor& self, IntArrayRef dim, std::int64_t normalization, bool forward, Tensor& out) {
  constexpr const char* kName = "aten::_fft_c2c.out";
  check_out_dtype(out, self.scalar_type(), kName);
  return write_out(fft_c2c(self, dim, normalization, forward, kName), out, kName);
}
Tensor mlu_fft_c2r(const Tensor& self, IntArrayRef dim, std::int64_t normalization, std::int64_t last_dim_size) {
  return fft_c2r(self, dim, normalization, last_dim_size, "aten::_fft_c2r");
}
Tensor& mlu_fft_c2r_out(const Tensor& self, IntArrayRef dim, std::int64_t normalization, std::int64_t last_dim_size,
                        Tensor& out) {
  constexpr const char* kName = "aten::_fft_c2r.out";
  check_out_dtype(out, c10::toRealValueType(self.scalar_type()), kName);
  return write_out(fft_c2r(self, dim, normalization, last_dim_size, kName), out, kName);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_r2c", TORCH_FN(mlu_fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(mlu_fft_r2c_out));
  m.impl("_fft_c2c", TORCH_FN(mlu_fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(mlu_fft_c2c_out));
  m.impl("_fft_c2r", TORCH_FN(mlu_fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(mlu_fft_c2r_out));
}

}  // namespace mlusim::bridge::ops
