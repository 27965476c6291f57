// Pools whose windows are gathered from the input (nn_ops.cpp has the libmlu pool2d kernels):
// max_pool3d_with_indices, avg_pool3d, _adaptive_avg_pool3d, adaptive_max_pool2d (adaptive_max_pool1d
// through it), adaptive_max_pool3d and their backwards, max_unpool2d / max_unpool3d. Built from
// device kernels; CUDA twins: DilatedMaxPool3d.cu, AveragePool3d.cu, AdaptiveAveragePooling3d.cu,
// AdaptiveMaxPooling2d.cu / 3d.cu, MaxUnpooling.cu.
//
// Every spatial dim j has windows of at most T_j taps: output o's tap t reads source position
//   pooling   o s - p + t d  (t < kernel; d = 1 for average pooling)
//   adaptive  start(o) + t, start = floor(o in / out), end = ceil((o + 1) in / out)  (t < end - start)
// (programs over aranges; adaptive starts and ends by the device's floor_divide), a tap outside the
// window or the input being invalid. The taps of all dims combine into one flat index of the
// flattened spatial input per (output, tap), [P, T]; index_select gathers x [N, C, S] into
// [N, C, P, T], then:
//   max      invalid taps read -inf, max over T (values and the first maximal tap, as torch's strict
//            > scan), the flat index of that tap as torch's indices (d H W + h W + w);
//   average  invalid taps read 0, the fp32 sum over T divided by the window's divisor: divisor_override,
//            or the product over dims of the window size clipped to the padded input
//            (count_include_pad) or to the input; adaptive: the window size.
// Backwards: max scatter_adds the gradient to its index; average index_adds grad / divisor to every
// valid tap (fp32 accumulation). max_unpool scatters x to its indices in zeros (the last write to a
// position wins, as the CPU's loop); its backward is torch's gather formula.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/floor_divide.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/max.h>
#include <ATen/ops/scatter.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

std::string n(std::int64_t v) { return std::to_string(v) + ".0"; }

void check_float(const Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ",
                              t.scalar_type(), " is not supported on device mlu (float32, float16)");
}

// One spatial dim's windows.
struct WindowDim {
  std::int64_t in, out, taps;
  Tensor pos;      // fp32 [out, taps]: the tap's source position, -1 when invalid
  Tensor divisor;  // fp32 [out]: the window's share of the average's divisor (average pools)
};

// Windows of a (dilated, padded, strided) pool: o s - p + t d for t < k.
WindowDim pool_dim(OpScope& op, std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s, std::int64_t p,
                   std::int64_t d, bool count_include_pad) {
  const auto f32 = at::TensorOptions().device(op.device()).dtype(at::kFloat);
  const Tensor o = at::arange(out, f32).view({out, 1}), t = at::arange(k, f32).view({1, k});
  WindowDim w{in, out, k, Tensor(), Tensor()};
  w.pos = run_elementwise_program({o, t}, "x = add(sub(mul($0, " + n(s) + "), " + n(p) + "), mul($1, " + n(d) +
                                              ")); where(logical_and(ge(x, 0.0), lt(x, " + n(in) + ")), x, -1.0)");
  // torch's avg_pool: start = o s - p, end = min(start + k, in + p); the divisor counts
  // end - start (count_include_pad) or min(end, in) - max(start, 0).
  const std::string start = "st = sub(mul($0, " + n(s) + "), " + n(p) + "); en = minimum(add(st, " + n(k) + "), " +
                            n(in + p) + "); ";
  w.divisor = run_elementwise_program(
                  {o.view({out})}, start + (count_include_pad ? "sub(en, st)"
                                                              : "sub(minimum(en, " + n(in) + "), maximum(st, 0.0))"));
  return w;
}

// Adaptive windows: [floor(o in / out), ceil((o + 1) in / out)).
WindowDim adaptive_dim(OpScope& op, std::int64_t in, std::int64_t out) {
  std::int64_t taps = 1;  // the longest window (shapes only)
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t st = (o * in) / out, en = ((o + 1) * in + out - 1) / out;
    taps = std::max(taps, en - st);
  }
  const auto i64 = at::TensorOptions().device(op.device()).dtype(at::kLong);
  const Tensor o = at::arange(out, i64);
  const Tensor st = at::floor_divide(run_elementwise_program({o}, "mul($0, " + std::to_string(in) + ")"), out);
  const Tensor en = at::floor_divide(
      run_elementwise_program({o}, "add(mul(add($0, 1), " + std::to_string(in) + "), " + std::to_string(out - 1) + ")"), out);
  const Tensor t = at::arange(taps, i64.dtype(at::kFloat)).view({1, taps});
  WindowDim w{in, out, taps, Tensor(), Tensor()};
  w.pos = run_elementwise_program({st.view({out, 1}), en.view({out, 1}), t},
                                  "s = cast($0, f32); x = add(s, $2); where(lt(x, cast($1, f32)), x, -1.0)");
  w.divisor = run_elementwise_program({st, en}, "cast(sub($1, $0), f32)");
  return w;
}

// The taps of all dims: flat source index int64 [P T] (0 when invalid) and validity bool [P, T].
struct Windows {
  std::int64_t p = 1, t = 1, s = 1;
  std::vector<std::int64_t> out_sizes;
  Tensor index, valid, divisor;  // divisor fp32 [P, 1]
};

Windows combine(const std::vector<WindowDim>& dims) {
  const auto k = static_cast<std::int64_t>(dims.size());
  Windows w;
  std::vector<Tensor> pos, div;
  std::string valid, flat, divs;
  std::int64_t stride = 1;
  for (std::int64_t j = k - 1; j >= 0; --j) {
    const WindowDim& d = dims[static_cast<std::size_t>(j)];
    std::vector<std::int64_t> shape(static_cast<std::size_t>(2 * k), 1), dshape(static_cast<std::size_t>(k), 1);
    shape[static_cast<std::size_t>(j)] = d.out;
    shape[static_cast<std::size_t>(k + j)] = d.taps;
    dshape[static_cast<std::size_t>(j)] = d.out;
    const std::string a = "$" + std::to_string(pos.size());
    pos.push_back(d.pos.view(shape));
    div.push_back(d.divisor.view(dshape));
    valid = valid.empty() ? "ge(" + a + ", 0.0)" : "logical_and(" + valid + ", ge(" + a + ", 0.0))";
    const std::string term = "mul(" + a + ", " + n(stride) + ")";
    flat = flat.empty() ? term : "add(" + flat + ", " + term + ")";
    divs = divs.empty() ? "$" + std::to_string(div.size() - 1) : "mul(" + divs + ", $" + std::to_string(div.size() - 1) + ")";
    stride *= d.in;
  }
  for (const WindowDim& d : dims) {
    w.p *= d.out;
    w.t *= d.taps;
    w.out_sizes.push_back(d.out);
  }
  w.s = stride;
  w.valid = run_elementwise_program(pos, valid).reshape({w.p, w.t});
  w.index = run_elementwise_program(pos, "cast(where(" + valid + ", " + flat + ", 0.0), i64)").reshape({w.p * w.t});
  w.divisor = run_elementwise_program(div, k == 1 ? "mul($0, 1.0)" : divs).reshape({w.p, 1});
  return w;
}

// x as [N, C, S] (an unbatched input gets N = 1) and the output's leading sizes.
struct Batched {
  Tensor x;
  std::vector<std::int64_t> lead;  // the output's sizes before the spatial dims
};
Batched flatten_input(const Tensor& self, std::int64_t spatial) {
  Batched b;
  const bool batched = self.dim() == spatial + 2;
  const Tensor x = batched ? self : self.unsqueeze(0);
  std::int64_t s = 1;
  for (std::int64_t d = 2; d < x.dim(); ++d) s *= x.size(d);
  b.x = x.reshape({x.size(0), x.size(1), s});
  b.lead = batched ? std::vector<std::int64_t>{self.size(0), self.size(1)} : std::vector<std::int64_t>{self.size(0)};
  return b;
}
std::vector<std::int64_t> out_shape(const Batched& b, const Windows& w) {
  std::vector<std::int64_t> shape = b.lead;
  shape.insert(shape.end(), w.out_sizes.begin(), w.out_sizes.end());
  return shape;
}

// Max over the windows: (values, indices) in the output's shape.
std::tuple<Tensor, Tensor> window_max(const Tensor& self, const Windows& w, std::int64_t spatial) {
  const Batched b = flatten_input(self, spatial);
  const std::int64_t nb = b.x.size(0), c = b.x.size(1);
  const std::vector<std::int64_t> shape = out_shape(b, w);
  if (b.x.numel() == 0 || w.p == 0)
    return {at::zeros(shape, self.options()), at::zeros(shape, self.options().dtype(at::kLong))};
  const Tensor g = at::index_select(b.x, 2, w.index).view({nb, c, w.p, w.t});
  const Tensor masked = run_elementwise_program({g, w.valid}, "where($1, $0, -inf)");
  const auto [values, arg] = at::max(masked, 3, /*keepdim=*/true);
  const Tensor index = at::gather(w.index.view({1, 1, w.p, w.t}).expand({nb, c, w.p, w.t}), 3, arg);
  return {values.reshape(shape), index.reshape(shape)};
}

// The sum over each window divided by `divisor` ([P, 1], or a constant when given).
Tensor window_avg(const Tensor& self, const Windows& w, std::int64_t spatial, std::optional<std::int64_t> divisor) {
  const Batched b = flatten_input(self, spatial);
  const std::int64_t nb = b.x.size(0), c = b.x.size(1);
  const std::vector<std::int64_t> shape = out_shape(b, w);
  if (b.x.numel() == 0 || w.p == 0) return at::zeros(shape, self.options());
  const Tensor g = at::index_select(b.x, 2, w.index).view({nb, c, w.p, w.t});
  const Tensor sum = at::sum(run_elementwise_program({g, w.valid}, "where($1, cast($0, f32), 0.0)"), {3}, true);
  const Tensor avg = divisor ? run_elementwise_program({sum}, "div($0, " + n(*divisor) + ")")
                             : run_elementwise_program({sum, w.divisor}, "div($0, $1)");
  return avg.to(self.scalar_type()).reshape(shape);
}

// grad_input of a max pool: grad scatter_added to its indices (fp32 accumulation).
Tensor window_max_backward(const Tensor& grad, const Tensor& self, const Tensor& indices, std::int64_t spatial) {
  const Batched b = flatten_input(self, spatial);
  const std::int64_t nb = b.x.size(0), c = b.x.size(1), s = b.x.size(2);
  Tensor acc = at::zeros({nb, c, s}, self.options().dtype(at::kFloat));
  if (grad.numel() > 0)
    acc = at::scatter_add(acc, 2, indices.reshape({nb, c, -1}), grad.reshape({nb, c, -1}).to(at::kFloat));
  return acc.to(self.scalar_type()).view(self.sizes());
}

// grad_input of an average pool: grad / divisor index_added to every valid tap.
Tensor window_avg_backward(const Tensor& grad, const Tensor& self, const Windows& w, std::int64_t spatial,
                           std::optional<std::int64_t> divisor) {
  const Batched b = flatten_input(self, spatial);
  const std::int64_t nb = b.x.size(0), c = b.x.size(1), s = b.x.size(2);
  Tensor acc = at::zeros({nb, c, s}, self.options().dtype(at::kFloat));
  if (grad.numel() > 0 && w.p > 0) {
    const Tensor g = grad.reshape({nb, c, w.p, 1});
    const Tensor src = divisor ? run_elementwise_program({g, w.valid}, "where($1, div(cast($0, f32), " + n(*divisor) + "), 0.0)")
                               : run_elementwise_program({g, w.valid, w.divisor}, "where($1, div(cast($0, f32), $2), 0.0)");
    acc = at::index_add(acc, 2, w.index, src.reshape({nb, c, w.p * w.t}));
  }
  return acc.to(self.scalar_type()).view(self.sizes());
}

// ---- max_pool3d / avg_pool3d --------------------------------------------------------------------------

struct Pool3dArgs {
  std::int64_t k[3], s[3], p[3], d[3], in[3], out[3];
};

// torch's argument expansion (one value or three; stride empty = kernel) and pool3d_shape_check.
Pool3dArgs pool3d_args(const char* name, const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, bool avg) {
  auto three = [&](at::IntArrayRef v, const char* what, bool empty_ok, std::int64_t* dst, const std::int64_t* dflt) {
    TORCH_CHECK(v.size() == 1 || v.size() == 3 || (empty_ok && v.empty()), name, ": ", what,
                " must either be a single int, or a tuple of three ints");
    for (int i = 0; i < 3; ++i) dst[i] = v.empty() ? dflt[i] : v.size() == 1 ? v[0] : v[static_cast<std::size_t>(i)];
  };
  Pool3dArgs a{};
  three(kernel, "kernel_size", false, a.k, nullptr);
  three(stride, "stride", true, a.s, a.k);
  three(padding, "padding", false, a.p, nullptr);
  const std::int64_t one[3] = {1, 1, 1};
  if (avg) std::copy(one, one + 3, a.d);
  else three(dilation, "dilation", false, a.d, nullptr);
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, name, ": Expected 4D or 5D tensor for input, but got: ", self.sizes());
  for (int i = 0; i < 3; ++i) {
    a.in[i] = self.size(self.dim() - 3 + i);
    TORCH_CHECK(a.s[i] > 0 && a.k[i] > 0 && a.d[i] > 0, name, ": kernel size, stride and dilation must be positive");
    a.out[i] = at::native::pooling_output_shape<std::int64_t>(a.in[i], a.k[i], a.p[i], a.s[i], a.d[i], ceil_mode);
  }
  at::native::pool3d_shape_check(self, self.size(self.dim() - 4), static_cast<int>(a.k[0]), static_cast<int>(a.k[1]),
                                 static_cast<int>(a.k[2]), static_cast<int>(a.s[0]), static_cast<int>(a.s[1]),
                                 static_cast<int>(a.s[2]), static_cast<int>(a.p[0]), static_cast<int>(a.p[1]),
                                 static_cast<int>(a.p[2]), static_cast<int>(a.d[0]), static_cast<int>(a.d[1]),
                                 static_cast<int>(a.d[2]), a.in[0], a.in[1], a.in[2], a.out[0], a.out[1], a.out[2],
                                 name, avg);
  return a;
}

Windows pool3d_windows(OpScope& op, const Pool3dArgs& a, bool count_include_pad) {
  std::vector<WindowDim> dims;
  for (int i = 0; i < 3; ++i)
    dims.push_back(pool_dim(op, a.in[i], a.out[i], a.k[i], a.s[i], a.p[i], a.d[i], count_include_pad));
  return combine(dims);
}

std::tuple<Tensor, Tensor> mlu_max_pool3d_with_indices(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                                                       at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const char* name = "aten::max_pool3d_with_indices";
  OpScope op(name, self);
  check_float(self, name);
  const Pool3dArgs a = pool3d_args(name, self, kernel, stride, padding, dilation, ceil_mode, false);
  return window_max(self, pool3d_windows(op, a, true), 3);
}
std::tuple<Tensor&, Tensor&> mlu_max_pool3d_with_indices_out(const Tensor& self, at::IntArrayRef kernel,
                                                             at::IntArrayRef stride, at::IntArrayRef padding,
                                                             at::IntArrayRef dilation, bool ceil_mode, Tensor& out,
                                                             Tensor& indices) {
  auto [v, i] = mlu_max_pool3d_with_indices(self, kernel, stride, padding, dilation, ceil_mode);
  write_out(v, out, "aten::max_pool3d_with_indices");
  write_out(i, indices, "aten::max_pool3d_with_indices");
  return {out, indices};
}
Tensor mlu_max_pool3d_with_indices_backward(const Tensor& grad, const Tensor& self, at::IntArrayRef /*kernel*/,
                                            at::IntArrayRef /*stride*/, at::IntArrayRef /*padding*/,
                                            at::IntArrayRef /*dilation*/, bool /*ceil_mode*/, const Tensor& indices) {
  const char* name = "aten::max_pool3d_with_indices_backward";
  OpScope op(name, self);
  check_float(self, name);
  TORCH_CHECK(grad.sizes() == indices.sizes(), name, ": grad_output ", grad.sizes(), " and indices ", indices.sizes(),
              " must have the same sizes");
  return window_max_backward(grad, self, indices, 3);
}
Tensor& mlu_max_pool3d_with_indices_backward_out(const Tensor& grad, const Tensor& self, at::IntArrayRef kernel,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 at::IntArrayRef dilation, bool ceil_mode, const Tensor& indices,
                                                 Tensor& gi) {
  return write_out(mlu_max_pool3d_with_indices_backward(grad, self, kernel, stride, padding, dilation, ceil_mode, indices),
                   gi, "aten::max_pool3d_with_indices_backward");
}

void check_divisor(std::optional<std::int64_t> divisor, const char* name) {
  TORCH_CHECK(!divisor || *divisor != 0, name, ": divisor must be not zero");
}

Tensor mlu_avg_pool3d(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<std::int64_t> divisor) {
  const char* name = "aten::avg_pool3d";
  OpScope op(name, self);
  check_float(self, name);
  check_divisor(divisor, name);
  const Pool3dArgs a = pool3d_args(name, self, kernel, stride, padding, {}, ceil_mode, true);
  return window_avg(self, pool3d_windows(op, a, count_include_pad), 3, divisor);
}
Tensor& mlu_avg_pool3d_out(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                           bool ceil_mode, bool count_include_pad, std::optional<std::int64_t> divisor, Tensor& out) {
  return write_out(mlu_avg_pool3d(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor), out,
                   "aten::avg_pool3d");
}
Tensor mlu_avg_pool3d_backward(const Tensor& grad, const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<std::int64_t> divisor) {
  const char* name = "aten::avg_pool3d_backward";
  OpScope op(name, self);
  check_float(self, name);
  check_divisor(divisor, name);
  const Pool3dArgs a = pool3d_args(name, self, kernel, stride, padding, {}, ceil_mode, true);
  return window_avg_backward(grad, self, pool3d_windows(op, a, count_include_pad), 3, divisor);
}
Tensor& mlu_avg_pool3d_backward_out(const Tensor& grad, const Tensor& self, at::IntArrayRef kernel,
                                    at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad, std::optional<std::int64_t> divisor, Tensor& gi) {
  return write_out(mlu_avg_pool3d_backward(grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor),
                   gi, "aten::avg_pool3d_backward");
}

// ---- adaptive pools ------------------------------------------------------------------------------------

Windows adaptive_windows(OpScope& op, const Tensor& self, at::IntArrayRef output_size, std::int64_t spatial) {
  const char* name = op.name();
  TORCH_CHECK(static_cast<std::int64_t>(output_size.size()) == spatial, name, ": output_size must be ", spatial,
              " values, got ", output_size.size());
  TORCH_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, name, ": Expected ", spatial + 1, "D or ",
              spatial + 2, "D tensor for input, but got: ", self.sizes());
  for (std::int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, name, ": Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", self.sizes(), " with dimension ", d, " being empty");
  std::vector<WindowDim> dims;
  for (std::int64_t j = 0; j < spatial; ++j) {
    TORCH_CHECK(output_size[static_cast<std::size_t>(j)] >= 0, name, ": output_size must be non-negative, got ",
                output_size);
    dims.push_back(adaptive_dim(op, self.size(self.dim() - spatial + j), output_size[static_cast<std::size_t>(j)]));
  }
  return combine(dims);
}

std::tuple<Tensor, Tensor> adaptive_max(const char* name, const Tensor& self, at::IntArrayRef output_size,
                                        std::int64_t spatial) {
  OpScope op(name, self);
  check_float(self, name);
  return window_max(self, adaptive_windows(op, self, output_size, spatial), spatial);
}
Tensor adaptive_max_backward(const char* name, const Tensor& grad, const Tensor& self, const Tensor& indices,
                             std::int64_t spatial) {
  OpScope op(name, self);
  check_float(self, name);
  TORCH_CHECK(grad.sizes() == indices.sizes(), name, ": grad_output ", grad.sizes(), " and indices ", indices.sizes(),
              " must have the same sizes");
  return window_max_backward(grad, self, indices, spatial);
}

#define MLUSIM_ADAPTIVE_MAX(fn, spatial)                                                                              \
  std::tuple<Tensor, Tensor> mlu_##fn(const Tensor& self, at::IntArrayRef output_size) {                              \
    return adaptive_max("aten::" #fn, self, output_size, spatial);                                                    \
  }                                                                                                                   \
  std::tuple<Tensor&, Tensor&> mlu_##fn##_out(const Tensor& self, at::IntArrayRef output_size, Tensor& out,           \
                                              Tensor& indices) {                                                      \
    auto [v, i] = mlu_##fn(self, output_size);                                                                        \
    write_out(v, out, "aten::" #fn);                                                                                  \
    write_out(i, indices, "aten::" #fn);                                                                              \
    return {out, indices};                                                                                            \
  }                                                                                                                   \
  Tensor mlu_##fn##_backward(const Tensor& grad, const Tensor& self, const Tensor& indices) {                         \
    return adaptive_max_backward("aten::" #fn "_backward", grad, self, indices, spatial);                             \
  }                                                                                                                   \
  Tensor& mlu_##fn##_backward_out(const Tensor& grad, const Tensor& self, const Tensor& indices, Tensor& gi) {        \
    return write_out(mlu_##fn##_backward(grad, self, indices), gi, "aten::" #fn "_backward");                         \
  }
MLUSIM_ADAPTIVE_MAX(adaptive_max_pool2d, 2)
MLUSIM_ADAPTIVE_MAX(adaptive_max_pool3d, 3)
#undef MLUSIM_ADAPTIVE_MAX

Tensor mlu_adaptive_avg_pool3d(const Tensor& self, c10::SymIntArrayRef output_size) {
  const char* name = "aten::_adaptive_avg_pool3d";
  OpScope op(name, self);
  check_float(self, name);
  return window_avg(self, adaptive_windows(op, self, C10_AS_INTARRAYREF_SLOW(output_size), 3), 3, std::nullopt);
}
Tensor& mlu_adaptive_avg_pool3d_out(const Tensor& self, c10::SymIntArrayRef output_size, Tensor& out) {
  return write_out(mlu_adaptive_avg_pool3d(self, output_size), out, "aten::adaptive_avg_pool3d");
}
Tensor mlu_adaptive_avg_pool3d_backward(const Tensor& grad, const Tensor& self) {
  const char* name = "aten::_adaptive_avg_pool3d_backward";
  OpScope op(name, self);
  check_float(self, name);
  const std::vector<std::int64_t> out(grad.sizes().end() - 3, grad.sizes().end());
  return window_avg_backward(grad, self, adaptive_windows(op, self, out, 3), 3, std::nullopt);
}
Tensor& mlu_adaptive_avg_pool3d_backward_out(const Tensor& grad, const Tensor& self, Tensor& gi) {
  return write_out(mlu_adaptive_avg_pool3d_backward(grad, self), gi, "aten::adaptive_avg_pool3d_backward");
}

// ---- max_unpool -----------------------------------------------------------------------------------------

Tensor max_unpool(const char* name, const Tensor& self, const Tensor& indices, at::IntArrayRef output_size,
                  std::int64_t spatial) {
  OpScope op(name, self);
  check_on_device(indices, op.device(), name, "indices");
  TORCH_CHECK(indices.scalar_type() == at::kLong, name, ": elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(static_cast<std::int64_t>(output_size.size()) == spatial, name,
              ": There should be exactly ", spatial, " elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, name, ": Input to max_unpooling", spatial,
              "d should be a ", spatial + 1, "d or ", spatial + 2, "d Tensor, but got a tensor with ", self.dim(),
              " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(), name, ": Expected shape of indices to be same as that of the input "
              "tensor (", self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (std::int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, name, ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", d, " being empty.");
  TORCH_CHECK_NOT_IMPLEMENTED(has_mlu_dtype(self.scalar_type()) && self.scalar_type() != at::kDouble, name, ": dtype ",
                              self.scalar_type(), " is not supported on device mlu");
  const Batched b = flatten_input(self, spatial);
  std::int64_t s = 1;
  for (const std::int64_t v : output_size) s *= v;
  std::vector<std::int64_t> shape = b.lead;
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  Tensor out = at::zeros({b.x.size(0), b.x.size(1), s}, self.options());
  // An index outside [0, S) faults the scatter kernel, as the CPU raises for it.
  if (self.numel() > 0) out = at::scatter(out, 2, indices.reshape({b.x.size(0), b.x.size(1), -1}), b.x);
  return out.view(shape);
}
Tensor mlu_max_unpool2d(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size) {
  return max_unpool("aten::max_unpool2d", self, indices, C10_AS_INTARRAYREF_SLOW(output_size), 2);
}
Tensor& mlu_max_unpool2d_out(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size, Tensor& out) {
  return write_out(mlu_max_unpool2d(self, indices, output_size), out, "aten::max_unpool2d");
}
Tensor mlu_max_unpool3d(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding) {
  const char* name = "aten::max_unpool3d";
  TORCH_CHECK(stride.size() == 3 && padding.size() == 3, name, ": stride and padding must have 3 elements, got ",
              stride.size(), " and ", padding.size());
  for (std::size_t i = 0; i < 3; ++i)
    TORCH_CHECK(stride[i] > 0, name, ": strides should be greater than zero, but got stride: ", stride);
  return max_unpool(name, self, indices, C10_AS_INTARRAYREF_SLOW(output_size), 3);
}
Tensor& mlu_max_unpool3d_out(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size,
                             at::IntArrayRef stride, at::IntArrayRef padding, Tensor& out) {
  return write_out(mlu_max_unpool3d(self, indices, output_size, stride, padding), out, "aten::max_unpool3d");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool3d_with_indices", TORCH_FN(mlu_max_pool3d_with_indices));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(mlu_max_pool3d_with_indices_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(mlu_max_pool3d_with_indices_backward));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(mlu_max_pool3d_with_indices_backward_out));
  m.impl("avg_pool3d", TORCH_FN(mlu_avg_pool3d));
  m.impl("avg_pool3d.out", TORCH_FN(mlu_avg_pool3d_out));
  m.impl("avg_pool3d_backward", TORCH_FN(mlu_avg_pool3d_backward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(mlu_avg_pool3d_backward_out));
  m.impl("adaptive_max_pool2d", TORCH_FN(mlu_adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(mlu_adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(mlu_adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(mlu_adaptive_max_pool2d_backward_out));
  m.impl("adaptive_max_pool3d", TORCH_FN(mlu_adaptive_max_pool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(mlu_adaptive_max_pool3d_out));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(mlu_adaptive_max_pool3d_backward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(mlu_adaptive_max_pool3d_backward_out));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(mlu_adaptive_avg_pool3d));
  m.impl("adaptive_avg_pool3d.out", TORCH_FN(mlu_adaptive_avg_pool3d_out));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(mlu_adaptive_avg_pool3d_backward));
  m.impl("adaptive_avg_pool3d_backward.grad_input", TORCH_FN(mlu_adaptive_avg_pool3d_backward_out));
  m.impl("max_unpool2d", TORCH_FN(mlu_max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(mlu_max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(mlu_max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(mlu_max_unpool3d_out));
}

}  // namespace mlusim::bridge::ops
