// Antialiased resizing (F.interpolate(..., antialias=True): _upsample_bilinear2d_aa,
// _upsample_bicubic2d_aa and their backwards) as two GEMMs on the device. The filter is separable
// and its taps depend only on the sizes, so each spatial dim is a dense interpolation matrix
// M (out x in) built on the host from torch's weights (UpSampleKernel.cpp,
// _compute_indices_min_size_weights_aa; CUDA twin UpSampleBilinear2d.cu's aa kernels):
//
//   scale   = align_corners ? (in - 1) / (out - 1) : (scale given ? 1 / scale : in / out)
//   support = (scale >= 1 ? scale : 1) * interp_size / 2   (interp_size 2 bilinear, 4 bicubic)
//   center  = scale (o + 1/2);  taps j in [max(int(center - support + 1/2), 0),
//                                        min(int(center + support + 1/2), in))
//   M[o, j] = f((j - center + 1/2) / max(scale, 1)), normalised to sum 1 over the row;
//   f = triangle 1 - |x| (bilinear) or Keys' cubic with a = -0.5 (bicubic)
//
// out = M_h x M_w^T (the W pass first, then H, as the CPU's separable passes), the backward
// grad_in = M_h^T grad M_w. Each matrix is uploaded per call (in x out floats); the products run
// on the TFU. float32 and float16 (fp32 accumulation, one rounding), 4-d NCHW.
#include <cmath>
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

enum class Filter { kBilinear, kBicubic };

double filter_weight(Filter f, double x) {
  x = std::fabs(x);
  if (f == Filter::kBilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;  // the antialiased bicubic filter's a (PIL's), not upsample_bicubic2d's -0.75
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// The interpolation matrix of one dim (out x in), float32 on the device.
Tensor aa_matrix(Filter f, std::int64_t in, std::int64_t out, bool align_corners, std::optional<double> given,
                 const c10::Device& device) {
  const double scale = align_corners ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                       : (given && *given > 0) ? 1.0 / *given
                                               : static_cast<double>(in) / static_cast<double>(out);
  const double interp_size = f == Filter::kBilinear ? 2.0 : 4.0;
  const double support = (scale >= 1.0 ? scale : 1.0) * interp_size * 0.5;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  Tensor m = at::zeros({out, in}, at::TensorOptions().dtype(at::kFloat));
  float* p = m.data_ptr<float>();
  for (std::int64_t o = 0; o < out; ++o) {
    const double center = scale * (static_cast<double>(o) + 0.5);
    const std::int64_t lo = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    const std::int64_t hi = std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in);
    double total = 0.0;
    for (std::int64_t j = lo; j < hi; ++j) total += filter_weight(f, (static_cast<double>(j) - center + 0.5) * invscale);
    for (std::int64_t j = lo; j < hi; ++j) {
      const double w = filter_weight(f, (static_cast<double>(j) - center + 0.5) * invscale);
      p[o * in + j] = static_cast<float>(total != 0.0 ? w / total : 0.0);
    }
  }
  return m.to(device);
}

void check_aa_input(const Tensor& t, at::IntArrayRef input_size, at::IntArrayRef output_size, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ",
                              t.scalar_type(), " is not supported on device mlu (float32, float16)");
  TORCH_CHECK(output_size.size() == 2, name, ": expected output_size of 2 values, got ", output_size.size());
  TORCH_CHECK(input_size.size() == 4, name, ": expected a 4-d input (size ", input_size, ")");
  TORCH_CHECK(input_size[2] > 0 && input_size[3] > 0 && output_size[0] > 0 && output_size[1] > 0, name,
              ": input and output sizes should be greater than 0, but got input (H: ", input_size[2], ", W: ",
              input_size[3], ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
}

Tensor aa_forward(Filter f, const Tensor& self, at::IntArrayRef output_size, bool align, std::optional<double> sh,
                  std::optional<double> sw, const char* name) {
  OpScope op(name, self);
  check_aa_input(self, self.sizes(), output_size, name);
  if (self.numel() == 0) return at::zeros({self.size(0), self.size(1), output_size[0], output_size[1]}, self.options());
  const Tensor mh = aa_matrix(f, self.size(2), output_size[0], align, sh, op.device());
  const Tensor mw = aa_matrix(f, self.size(3), output_size[1], align, sw, op.device());
  const Tensor rows = at::matmul(self.to(at::kFloat), mw.t());  // [N, C, H, out_w]
  return at::matmul(mh, rows).to(self.scalar_type());
}

Tensor aa_backward(Filter f, const Tensor& grad, at::IntArrayRef output_size, at::IntArrayRef input_size, bool align,
                   std::optional<double> sh, std::optional<double> sw, const char* name) {
  OpScope op(name, grad);
  check_aa_input(grad, input_size, output_size, name);
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == input_size[0] && grad.size(1) == input_size[1] &&
                  grad.size(2) == output_size[0] && grad.size(3) == output_size[1],
              name, ": grad_output must have sizes [", input_size[0], ", ", input_size[1], ", ", output_size[0], ", ",
              output_size[1], "], got ", grad.sizes());
  if (grad.numel() == 0) return at::zeros(input_size, grad.options());
  const Tensor mh = aa_matrix(f, input_size[2], output_size[0], align, sh, op.device());
  const Tensor mw = aa_matrix(f, input_size[3], output_size[1], align, sw, op.device());
  return at::matmul(at::matmul(mh.t(), grad.to(at::kFloat)), mw).to(grad.scalar_type());
}

using SymSizes = c10::SymIntArrayRef;

template <Filter F>
Tensor mlu_aa(const Tensor& self, SymSizes output_size, bool align, std::optional<double> sh, std::optional<double> sw) {
  return aa_forward(F, self, C10_AS_INTARRAYREF_SLOW(output_size), align, sh, sw,
                    F == Filter::kBilinear ? "aten::_upsample_bilinear2d_aa" : "aten::_upsample_bicubic2d_aa");
}
template <Filter F>
Tensor& mlu_aa_out(const Tensor& self, SymSizes output_size, bool align, std::optional<double> sh,
                   std::optional<double> sw, Tensor& out) {
  return write_out(mlu_aa<F>(self, output_size, align, sh, sw), out,
                   F == Filter::kBilinear ? "aten::_upsample_bilinear2d_aa.out" : "aten::_upsample_bicubic2d_aa.out");
}
template <Filter F>
Tensor mlu_aa_backward(const Tensor& grad, SymSizes output_size, SymSizes input_size, bool align,
                       std::optional<double> sh, std::optional<double> sw) {
  return aa_backward(F, grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, sh, sw,
                     F == Filter::kBilinear ? "aten::_upsample_bilinear2d_aa_backward"
                                            : "aten::_upsample_bicubic2d_aa_backward");
}
template <Filter F>
Tensor& mlu_aa_backward_out(const Tensor& grad, SymSizes output_size, SymSizes input_size, bool align,
                            std::optional<double> sh, std::optional<double> sw, Tensor& grad_input) {
  return write_out(mlu_aa_backward<F>(grad, output_size, input_size, align, sh, sw), grad_input,
                   F == Filter::kBilinear ? "aten::_upsample_bilinear2d_aa_backward.grad_input"
                                          : "aten::_upsample_bicubic2d_aa_backward.grad_input");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(mlu_aa<Filter::kBilinear>));
  m.impl("_upsample_bilinear2d_aa.out", TORCH_FN(mlu_aa_out<Filter::kBilinear>));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(mlu_aa_backward<Filter::kBilinear>));
  m.impl("_upsample_bilinear2d_aa_backward.grad_input", TORCH_FN(mlu_aa_backward_out<Filter::kBilinear>));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(mlu_aa<Filter::kBicubic>));
  m.impl("_upsample_bicubic2d_aa.out", TORCH_FN(mlu_aa_out<Filter::kBicubic>));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(mlu_aa_backward<Filter::kBicubic>));
  m.impl("_upsample_bicubic2d_aa_backward.grad_input", TORCH_FN(mlu_aa_backward_out<Filter::kBicubic>));
}

}  // namespace mlusim::bridge::ops
