// im2col (F.unfold, nn.Unfold) and col2im (F.fold, nn.Fold; im2col's backward and col2im's are each
// other) built from device kernels. CUDA twins: Im2Col.cu, Col2Im.cu (im2col.cuh).
//
//   The source position of every (kernel tap, window) pair, for x [N, C, H, W] flattened to
//   [N, C, H W]: h = oh sh - ph + ki dh, w = ow sw - pw + kj dw, as one program over aranges of
//   ki, kj, oh, ow, giving the flat index h W + w and whether it lies inside the image (padding).
//   im2col = index_select of those positions along the flattened spatial dim ([N, C, kh kw L]:
//   torch's column order c kh kw + ki kw + kj), padding positions set to 0 by a program;
//   col2im = index_add of the columns (padding positions masked to 0) into zeros [N, C, H W],
//   accumulated in fp32 for fp16 (CUDA's col2im sums each pixel in its accumulate type).
// Shapes and errors: torch's im2col_shape_check / col2im_shape_check.
// unfold_backward (Tensor.unfold's backward, istft's overlap-add): the windows' gradient
//   [..., n_windows (at dim), ..., size] index_added into zeros of the input's sizes at positions
//   window * step + k along dim (fp32 accumulation for fp16, as col2im).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/movedim.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

struct Window2d {
  std::int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

Window2d window_args(const char* name, at::IntArrayRef kernel, at::IntArrayRef dilation, at::IntArrayRef padding,
                     at::IntArrayRef stride) {
  TORCH_CHECK(kernel.size() == 2, name, ": It is expected kernel_size equals to 2, but got size ", kernel.size());
  TORCH_CHECK(dilation.size() == 2, name, ": It is expected dilation equals to 2, but got size ", dilation.size());
  TORCH_CHECK(padding.size() == 2, name, ": It is expected padding equals to 2, but got size ", padding.size());
  TORCH_CHECK(stride.size() == 2, name, ": It is expected stride equals to 2, but got size ", stride.size());
  return {kernel[0], kernel[1], dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]};
}

// The flat source index (int64 [kh kw L]; 0 at padding) and its validity (bool [kh kw L]) of every
// (ki, kj, oh, ow) for an image of h x w with oh_n x ow_n windows.
std::pair<Tensor, Tensor> column_positions(OpScope& op, const Window2d& a, std::int64_t h, std::int64_t w,
                                           std::int64_t oh_n, std::int64_t ow_n) {
  const auto f32 = at::TensorOptions().device(op.device()).dtype(at::kFloat);
  const Tensor ki = at::arange(a.kh, f32).view({a.kh, 1, 1, 1}), kj = at::arange(a.kw, f32).view({1, a.kw, 1, 1});
  const Tensor oh = at::arange(oh_n, f32).view({1, 1, oh_n, 1}), ow = at::arange(ow_n, f32).view({1, 1, 1, ow_n});
  auto n = [](std::int64_t v) { return std::to_string(v) + ".0"; };
  const std::string pos = "y = add(sub(mul($2, " + n(a.sh) + "), " + n(a.ph) + "), mul($0, " + n(a.dh) +
                          ")); x = add(sub(mul($3, " + n(a.sw) + "), " + n(a.pw) + "), mul($1, " + n(a.dw) +
                          ")); v = logical_and(logical_and(ge(y, 0.0), lt(y, " + n(h) + ")), logical_and(ge(x, 0.0), lt(x, " +
                          n(w) + "))); ";
  const Tensor index =
      run_elementwise_program({ki, kj, oh, ow}, pos + "cast(where(v, add(mul(y, " + n(w) + "), x), 0.0), i64)").reshape({-1});
  const Tensor valid = run_elementwise_program({ki, kj, oh, ow}, pos + "v").reshape({-1});
  return {index, valid};
}

void check_dtype(const Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ", t.scalar_type(), " is not supported on device mlu (float32, float16)");
}

Tensor mlu_im2col(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef dilation, at::IntArrayRef padding,
                  at::IntArrayRef stride) {
  const char* name = "aten::im2col";
  OpScope op(name, self);
  const Window2d a = window_args(name, kernel, dilation, padding, stride);
  at::native::im2col_shape_check(self, Tensor(), a.kh, a.kw, a.dh, a.dw, a.ph, a.pw, a.sh, a.sw);
  check_dtype(self, name);
  const bool batched = self.dim() == 4;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t oh = at::native::sliding_window_count(h, a.ph, a.dh, a.kh, a.sh);
  const std::int64_t ow = at::native::sliding_window_count(w, a.pw, a.dw, a.kw, a.sw);
  const std::int64_t k = a.kh * a.kw, l = oh * ow;
  Tensor out;
  if (x.numel() == 0) {
    out = at::zeros({n, c * k, l}, self.options());
  } else {
    const auto [index, valid] = column_positions(op, a, h, w, oh, ow);
    const Tensor taps = at::index_select(x.reshape({n, c, h * w}), 2, index);  // [N, C, K L]
    out = run_elementwise_program({taps, valid}, "where($1, $0, 0.0)").view({n, c * k, l});
  }
  return batched ? out : out.squeeze(0);
}
Tensor& mlu_im2col_out(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef dilation, at::IntArrayRef padding,
                       at::IntArrayRef stride, Tensor& out) {
  return write_out(mlu_im2col(self, kernel, dilation, padding, stride), out, "aten::im2col");
}

Tensor mlu_col2im(const Tensor& self, c10::SymIntArrayRef output_size_sym, at::IntArrayRef kernel,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  const char* name = "aten::col2im";
  OpScope op(name, self);
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(output_size.size() == 2, name, ": It is expected output_size equals to 2, but got size ",
              output_size.size());
  const Window2d a = window_args(name, kernel, dilation, padding, stride);
  at::native::col2im_shape_check(self, Tensor(), output_size[0], output_size[1], a.kh, a.kw, a.dh, a.dw, a.ph, a.pw,
                                 a.sh, a.sw);
  check_dtype(self, name);
  const bool batched = self.dim() == 3;
  const Tensor cols = batched ? self : self.unsqueeze(0);
  const std::int64_t h = output_size[0], w = output_size[1], k = a.kh * a.kw;
  const std::int64_t n = cols.size(0), c = cols.size(1) / k;
  const std::int64_t oh = at::native::sliding_window_count(h, a.ph, a.dh, a.kh, a.sh);
  const std::int64_t ow = at::native::sliding_window_count(w, a.pw, a.dw, a.kw, a.sw);
  Tensor acc = at::zeros({n, c, h * w}, self.options().dtype(at::kFloat));
  if (cols.numel() > 0) {
    const auto [index, valid] = column_positions(op, a, h, w, oh, ow);
    const Tensor src = run_elementwise_program({cols.reshape({n, c, k * oh * ow}), valid}, "where($1, cast($0, f32), 0.0)");
    acc = at::index_add(acc, 2, index, src);
  }
  const Tensor out = acc.to(self.scalar_type()).view({n, c, h, w});
  return batched ? out : out.squeeze(0);
}
Tensor& mlu_col2im_out(const Tensor& self, c10::SymIntArrayRef output_size, at::IntArrayRef kernel,
                       at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride, Tensor& out) {
  return write_out(mlu_col2im(self, output_size, kernel, dilation, padding, stride), out, "aten::col2im");
}

Tensor mlu_unfold_backward(const Tensor& grad_in, c10::SymIntArrayRef input_sizes_sym, int64_t dim, int64_t size,
                           int64_t step) {
  constexpr const char* kName = "aten::unfold_backward";
  OpScope op(kName, grad_in);
  const at::IntArrayRef input_sizes = C10_AS_INTARRAYREF_SLOW(input_sizes_sym);
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  TORCH_CHECK(size > 0 && step > 0, kName, ": size (", size, ") and step (", step, ") must be positive");
  if (ndim == 0) {  // a 0-dim tensor unfolds into one window of its one element: [1]
    TORCH_CHECK(grad_in.numel() == 1 && size == 1, kName, ": grad_in ", grad_in.sizes(),
                " is not the unfolded shape of a 0-dim tensor (size ", size, ")");
    return grad_in.reshape({}).clone();
  }
  const int64_t d = wrap_dim(dim, ndim, kName);
  TORCH_CHECK(grad_in.dim() == ndim + 1 && grad_in.size(-1) == size, kName,
              ": grad_in ", grad_in.sizes(), " is not the unfolded shape of ", input_sizes, " (dim ", d, ", size ",
              size, ")");
  const bool accumulate_fp32 = grad_in.scalar_type() == at::kHalf || grad_in.scalar_type() == at::kBFloat16;
  const at::ScalarType acc = accumulate_fp32 ? at::kFloat : grad_in.scalar_type();
  const Tensor result = at::zeros(input_sizes, grad_in.options().dtype(acc));
  const int64_t windows = grad_in.size(d);
  if (grad_in.numel() == 0) return result.to(grad_in.scalar_type());
  const auto long_opts = at::TensorOptions().device(op.device()).dtype(at::kLong);
  // position of (window w, tap k) = w step + k, in the windows' flattened (w, k) order
  const Tensor positions = run_elementwise_program(
      {at::arange(windows, long_opts).view({windows, 1}), at::arange(size, long_opts).view({1, size})},
      "add(mul($0, " + std::to_string(step) + "), $1)").reshape({windows * size});
  const Tensor src = grad_in.movedim(-1, d + 1).flatten(d, d + 1).to(acc);
  return at::index_add(result, d, positions, src).to(grad_in.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(mlu_im2col));
  m.impl("im2col.out", TORCH_FN(mlu_im2col_out));
  m.impl("col2im", TORCH_FN(mlu_col2im));
  m.impl("col2im.out", TORCH_FN(mlu_col2im_out));
  m.impl("unfold_backward", TORCH_FN(mlu_unfold_backward));
}

}  // namespace mlusim::bridge::ops
