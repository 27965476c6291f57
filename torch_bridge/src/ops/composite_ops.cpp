// ATen ops built from other device kernels (views, index_select, cat, reductions, sin/cos, arange
// and compare): no kernel of their own, every step on the device. CUDA twins in brackets.
//
//   tan = sin / cos                                   [UnaryOpsKernel.cu]
//   flip: index_select with reversed indices per dim  [TensorTransformations.cu]
//   roll: cat of the two slices per dim               [TensorTransformations.cu]
//   trace = sum of the diagonal view                  [TriangularOps / ReduceOps]
//   nansum = sum of where(isnan, 0, x)                [ReduceSumProdKernel.cu]
//   aminmax = (amin, amax)                            [ReduceMinMaxKernel.cu]
//   eye(n, m) = (arange(n)[:, None] == arange(m)[None, :])   [TensorFactories.cu]
//   equal = same shape and all(eq)                    [Equal.cpp; one device sync for the answer]
#include <ATen/core/Tensor.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/diagonal.h>
#include <ATen/ops/div.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

Tensor mlu_tan(const Tensor& self) {
  OpScope op("aten::tan", self);
  return at::div(at::sin(self), at::cos(self));
}
Tensor& mlu_tan_out(const Tensor& self, Tensor& out) { return write_out(mlu_tan(self), out, "aten::tan"); }
Tensor& mlu_tan_(Tensor& self) { return write_out(mlu_tan(self), self, "aten::tan"); }

Tensor mlu_flip(const Tensor& self, at::IntArrayRef dims) {
  OpScope op("aten::flip", self);
  Tensor out = self;
  std::vector<bool> seen(static_cast<std::size_t>(std::max<int64_t>(self.dim(), 1)), false);
  for (const int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, self.dim(), "aten::flip");
    TORCH_CHECK(!seen[static_cast<std::size_t>(d)], "aten::flip: dim ", dim, " appears more than once");
    seen[static_cast<std::size_t>(d)] = true;
    if (self.dim() == 0 || self.size(d) <= 1) continue;
    const Tensor reversed = at::arange(self.size(d) - 1, -1, -1, self.options().dtype(at::kLong));
    out = at::index_select(out, d, reversed);
  }
  return out.is_same(self) ? self.clone() : out;
}

Tensor mlu_roll(const Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  OpScope op("aten::roll", self);
  TORCH_CHECK(!shifts.empty(), "aten::roll: shifts must not be empty");
  if (dims.empty()) {  // roll the flattened tensor
    TORCH_CHECK(shifts.size() == 1, "aten::roll: without dims, shifts must have one entry, got ", shifts.size());
    return mlu_roll(self.flatten(), shifts, {0}).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "aten::roll: shifts (", shifts.size(), ") and dims (", dims.size(),
              ") must have the same length");
  Tensor out = self;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], self.dim(), "aten::roll");
    const int64_t n = self.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;  // Python's modulo: roll right by s
    if (s == 0) continue;
    out = at::cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(self) ? self.clone() : out;
}

Tensor mlu_trace(const Tensor& self) {
  OpScope op("aten::trace", self);
  TORCH_CHECK(self.dim() == 2, "aten::trace: expected a matrix, got ", self.dim(), " dimensions");
  return at::sum(at::diagonal(self));
}

Tensor mlu_nansum(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  OpScope op("aten::nansum", self);
  const Tensor zeroed = at::isFloatingType(self.scalar_type())
                            ? run_elementwise_program({self}, "cast_like(where(ne($0, $0), 0.0, $0), $0)")
                            : self;
  return at::sum(zeroed, dim, keepdim, dtype);
}
Tensor& mlu_nansum_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, Tensor& out) {
  return write_out(mlu_nansum(self, dim, keepdim, dtype), out, "aten::nansum");
}

std::tuple<Tensor, Tensor> mlu_aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  OpScope op("aten::aminmax", self);
  if (!dim) {
    const Tensor flat = self.flatten();
    Tensor lo = at::amin(flat, {0}), hi = at::amax(flat, {0});
    if (keepdim) {
      std::vector<int64_t> ones(static_cast<std::size_t>(self.dim()), 1);
      return {lo.view(ones), hi.view(ones)};
    }
    return {lo, hi};
  }
  return {at::amin(self, {*dim}, keepdim), at::amax(self, {*dim}, keepdim)};
}
std::tuple<Tensor&, Tensor&> mlu_aminmax_out(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& min,
                                             Tensor& max) {
  auto [lo, hi] = mlu_aminmax(self, dim, keepdim);
  write_out(lo, min, "aten::aminmax");
  write_out(hi, max, "aten::aminmax");
  return {min, max};
}

Tensor& mlu_eye_m_out(int64_t n, int64_t m, Tensor& out) {
  OpScope op("aten::eye", out);
  TORCH_CHECK(n >= 0 && m >= 0, "aten::eye: n and m must be >= 0, got ", n, " and ", m);
  const auto idx = out.options().dtype(at::kInt);
  const Tensor eye = at::eq(at::arange(n, idx).view({n, 1}), at::arange(m, idx).view({1, m}));
  return write_out(eye.to(out.scalar_type()), out, "aten::eye");
}
Tensor& mlu_eye_out(int64_t n, Tensor& out) { return mlu_eye_m_out(n, n, out); }

bool mlu_equal(const Tensor& self, const Tensor& other) {
  OpScope op("aten::equal", self);
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::all(at::eq(self, other)).item<bool>();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("tan", TORCH_FN(mlu_tan));
  m.impl("tan.out", TORCH_FN(mlu_tan_out));
  m.impl("tan_", TORCH_FN(mlu_tan_));
  m.impl("flip", TORCH_FN(mlu_flip));
  m.impl("roll", TORCH_FN(mlu_roll));
  m.impl("trace", TORCH_FN(mlu_trace));
  m.impl("nansum", TORCH_FN(mlu_nansum));
  m.impl("nansum.out", TORCH_FN(mlu_nansum_out));
  m.impl("aminmax", TORCH_FN(mlu_aminmax));
  m.impl("aminmax.out", TORCH_FN(mlu_aminmax_out));
  m.impl("eye.m_out", TORCH_FN(mlu_eye_m_out));
  m.impl("eye.out", TORCH_FN(mlu_eye_out));
  m.impl("equal", TORCH_FN(mlu_equal));
}

}  // namespace mlusim::bridge::ops
