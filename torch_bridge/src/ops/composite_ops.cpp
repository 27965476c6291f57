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
//   count_nonzero = sum(x != 0)                       [ReduceOps / Nonzero]
//   isin = any(elements[..., None] == test.flatten()) [TensorCompare.cu's brute-force path]
//   searchsorted / bucketize = count of boundaries before x (broadcast compare + sum over the
//     sequence; NaN sorts last)                       [Bucketization.cu: binary search instead]
//   take = index_select of the flattened tensor       [TensorAdvancedIndexing]
//   channel_shuffle = view, transpose, contiguous     [ChanelShuffle.cpp]
//   index_add = scatter_add along dim with the index expanded to source's shape  [ScatterGather]
//   index_reduce (prod / mean / amax / amin) = scatter_reduce with the index expanded the same way
//   repeat_interleave(repeats) = searchsorted(cumsum(repeats), arange(total), right) (total read
//     back unless output_size is given, as CUDA's one sync)             [Repeat.cu]
//   renorm = self * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1) per slice along dim, the norm
//     by linalg_vector_norm                                             [Normalization / Renorm.cu]
//   rrelu_with_noise: training: noise = uniform(lower, upper) where x <= 0 (1 elsewhere), x noise;
//     eval: leaky_relu with slope (lower + upper) / 2                   [RreluWithNoise.cu]
//   linalg_cross (cross) = a1 b2 - a2 b1, ... one program per component, cat  [CrossKernel.cu]
//   _embedding_bag (sum / mean / max, per_sample_weights, padding_idx): each index's bag by
//     searchsorted over the offsets, index_select of the rows, scatter_add / scatter_reduce amax per
//     bag; backward: index_add / scatter_add of the gathered gradient rows, per_sample_weights'
//     gradient as row dot products                   [EmbeddingBag.cu]
//   upsample nearest / nearest-exact / linear / bilinear / trilinear (+ backward): index_select per
//     spatial dim, weights from a program (index_add back)  [UpSampleNearest*.cu, UpSampleBilinear2d.cu]
//   reflection_pad / replication_pad 1d-3d (+ backward) = index_select per padded dim with the
//     source index of each output position (index_add back)  [ReflectionPad.cu, ReplicationPadding.cu]
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/diagonal.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/full.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/where.h>
#include <ATen/ops/scatter_reduce.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/min.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/empty_like.h>
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


Tensor mlu_count_nonzero(const Tensor& self, at::IntArrayRef dims) {
  OpScope op("aten::count_nonzero", self);
  return at::sum(at::ne(self, 0), dims, /*keepdim=*/false, at::kLong);
}

Tensor isin_values(const Tensor& elements, const Tensor& test, bool invert) {
  const Tensor hit = at::any(at::eq(elements.unsqueeze(-1), test.flatten()), -1);
  return invert ? at::logical_not(hit) : hit;
}
Tensor& mlu_isin_tt_out(const Tensor& elements, const Tensor& test, bool /*assume_unique*/, bool invert, Tensor& out) {
  OpScope op("aten::isin", elements);
  if (test.numel() == 0) {  // nothing to find: all false (all true inverted)
    Tensor none = at::empty(elements.sizes(), elements.options().dtype(at::kBool));
    none.fill_(invert);
    return write_out(none, out, "aten::isin");
  }
  return write_out(isin_values(elements, test, invert), out, "aten::isin");
}
Tensor mlu_isin_tt(const Tensor& elements, const Tensor& test, bool assume_unique, bool invert) {
  Tensor out = at::empty({0}, elements.options().dtype(at::kBool));
  return mlu_isin_tt_out(elements, test, assume_unique, invert, out);
}
Tensor& mlu_isin_ts_out(const Tensor& elements, const c10::Scalar& test, bool assume_unique, bool invert, Tensor& out) {
  return mlu_isin_tt_out(elements, at::scalar_tensor(test, elements.options()), assume_unique, invert, out);
}
Tensor mlu_isin_ts(const Tensor& elements, const c10::Scalar& test, bool assume_unique, bool invert) {
  return mlu_isin_tt(elements, at::scalar_tensor(test, elements.options()), assume_unique, invert);
}
Tensor& mlu_isin_st_out(const c10::Scalar& element, const Tensor& test, bool assume_unique, bool invert, Tensor& out) {
  return mlu_isin_tt_out(at::scalar_tensor(element, test.options()), test, assume_unique, invert, out);
}
Tensor mlu_isin_st(const c10::Scalar& element, const Tensor& test, bool assume_unique, bool invert) {
  return mlu_isin_tt(at::scalar_tensor(element, test.options()), test, assume_unique, invert);
}

// The index of x in a sorted sequence (last dim of `seq`, whose leading dims match x's, or 1-d):
// left: #{s : !(s >= x)}, right: #{s : !(s > x)} (NaN x lands after every boundary, as torch's
// binary search places it).
Tensor search_sorted(const char* name, const Tensor& seq_in, const Tensor& x, bool out_int32, bool right,
                     std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  OpScope op(name, x);
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right", name, ": side can only be 'left' or 'right' but got ", *side);
    TORCH_CHECK(!(right && *side == "left"), name, ": side and right can't be set to opposites, got side of left ",
                "while right was True");
    right = *side == "right";
  }
  Tensor seq = sorter && sorter->defined() ? at::gather(seq_in, -1, *sorter) : seq_in;
  const Tensor xs = x.unsqueeze(-1);
  // Leading dims of an N-d seq line up with x's; a 1-d seq broadcasts against every x.
  const Tensor s = seq.dim() == 1 ? seq : seq.unsqueeze(-2);
  const Tensor before = right ? at::logical_not(at::gt(s, xs)) : at::logical_not(at::ge(s, xs));
  return at::sum(before, {-1}, /*keepdim=*/false, out_int32 ? at::kInt : at::kLong);
}
Tensor mlu_searchsorted(const Tensor& seq, const Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  return search_sorted("aten::searchsorted", seq, self, out_int32, right, side, sorter);
}
Tensor& mlu_searchsorted_out(const Tensor& seq, const Tensor& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<Tensor>& sorter, Tensor& out) {
  return write_out(mlu_searchsorted(seq, self, out_int32, right, side, sorter), out, "aten::searchsorted");
}
Tensor mlu_searchsorted_scalar(const Tensor& seq, const c10::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  return mlu_searchsorted(seq, at::scalar_tensor(self, seq.options()), out_int32, right, side, sorter);
}
Tensor mlu_bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  TORCH_CHECK(boundaries.dim() == 1, "aten::bucketize: boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return search_sorted("aten::bucketize", boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}
Tensor& mlu_bucketize_out(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right, Tensor& out) {
  return write_out(mlu_bucketize(self, boundaries, out_int32, right), out, "aten::bucketize");
}
Tensor mlu_bucketize_scalar(const c10::Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  return mlu_bucketize(at::scalar_tensor(self, boundaries.options()), boundaries, out_int32, right);
}

Tensor mlu_take(const Tensor& self, const Tensor& index) {
  OpScope op("aten::take", self);
  TORCH_CHECK(self.numel() > 0 || index.numel() == 0, "aten::take: tried to take from an empty tensor");
  // Negative indices count from the end (index_select bounds-checks the wrapped index).
  const Tensor flat = index.reshape({-1});
  const Tensor wrapped = run_elementwise_program({flat}, "where(lt($0, 0), add($0, " + std::to_string(self.numel()) + "), $0)");
  return at::index_select(self.reshape({-1}), 0, wrapped).view(index.sizes());
}
Tensor& mlu_take_out(const Tensor& self, const Tensor& index, Tensor& out) {
  return write_out(mlu_take(self, index), out, "aten::take");
}

Tensor mlu_channel_shuffle(const Tensor& self, int64_t groups) {
  OpScope op("aten::channel_shuffle", self);
  TORCH_CHECK(self.dim() > 2, "aten::channel_shuffle: expected input to have more than 2 dims, got ", self.dim());
  TORCH_CHECK(groups > 0 && self.size(1) % groups == 0, "aten::channel_shuffle: groups (", groups,
              ") must be positive and divide the ", self.size(1), " channels");
  std::vector<int64_t> split = self.sizes().vec();
  split[1] = self.size(1) / groups;
  split.insert(split.begin() + 1, groups);
  return self.reshape(split).transpose(1, 2).contiguous().view(self.sizes());
}

// index_add: self + alpha source scattered along dim by index (scatter_add's index expanded:
// index[i] for every position of source's slice i).
Tensor mlu_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const c10::Scalar& alpha) {
  OpScope op("aten::index_add", self);
  const int64_t d = wrap_dim(dim, self.dim(), "aten::index_add");
  TORCH_CHECK(index.dim() <= 1, "aten::index_add: index must be a vector, got ", index.dim(), " dims");
  if (self.dim() == 0)  // a scalar is a 1-element vector here, as torch treats it
    return mlu_index_add(self.view({1}), 0, index.reshape({-1}), source.reshape({-1}), alpha).squeeze(0);
  std::vector<int64_t> shape(static_cast<std::size_t>(source.dim()), 1);
  shape[static_cast<std::size_t>(d)] = index.numel();
  const Tensor idx = index.reshape(shape).expand(source.sizes());
  const Tensor src = alpha.equal(1) ? source : at::mul(source, alpha);
  return at::scatter_add(self, d, idx, src);
}
Tensor& mlu_index_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                          const c10::Scalar& alpha, Tensor& out) {
  return write_out(mlu_index_add(self, dim, index, source, alpha), out, "aten::index_add");
}
Tensor& mlu_index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const c10::Scalar& alpha) {
  return write_out(mlu_index_add(self, dim, index, source, alpha), self, "aten::index_add_");
}

// index_reduce: scatter_reduce along dim with the index expanded as for index_add (torch's
// index_reduce and scatter_reduce share the reductions and the include_self rule).
Tensor mlu_index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        c10::string_view reduce, bool include_self) {
  const char* name = "aten::index_reduce";
  OpScope op(name, self);
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin", name,
              ": reduce argument must be either prod, mean, amax or amin, got ", reduce);
  TORCH_CHECK(index.dim() <= 1, name, ": Index should have dimension 1 or 0 (got ", index.dim(), ")");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, name,
              ": Expected dtype int32/int64 for index but got: ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), name, ": self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  if (self.dim() == 0)
    return mlu_index_reduce(self.view({1}), 0, index.reshape({-1}), source.reshape({-1}), reduce, include_self).squeeze(0);
  const int64_t d = wrap_dim(dim, self.dim(), name);
  TORCH_CHECK(source.dim() == self.dim() || (source.dim() == 0 && self.dim() == 1), name,
              ": source and self must have the same number of dimensions");
  TORCH_CHECK(index.numel() == (source.dim() == 0 ? 1 : source.size(d)), name,
              ": Number of indices (", index.numel(), ") should be equal to source.size(dim) (",
              source.dim() == 0 ? 1 : source.size(d), ")");
  const Tensor src = source.dim() == 0 ? source.view({1}) : source;
  std::vector<int64_t> shape(static_cast<std::size_t>(src.dim()), 1);
  shape[static_cast<std::size_t>(d)] = index.numel();
  return at::scatter_reduce(self, d, index.reshape(shape).expand(src.sizes()), src, reduce, include_self);
}
Tensor& mlu_index_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                             c10::string_view reduce, bool include_self, Tensor& out) {
  return write_out(mlu_index_reduce(self, dim, index, source, reduce, include_self), out, "aten::index_reduce");
}
Tensor& mlu_index_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, c10::string_view reduce,
                         bool include_self) {
  return write_out(mlu_index_reduce(self, dim, index, source, reduce, include_self), self, "aten::index_reduce_");
}

// ---- repeat_interleave, renorm, rrelu ------------------------------------------------------------------

Tensor mlu_repeat_interleave(const Tensor& repeats, std::optional<c10::SymInt> output_size) {
  const char* name = "aten::repeat_interleave";
  OpScope op(name, repeats);
  TORCH_CHECK(repeats.dim() == 1, name, ": repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt, name,
              ": repeats has to be Long or Int tensor");
  if (repeats.numel() == 0) return empty_on(op.device(), {0}, repeats.scalar_type());
  const Tensor cum = at::cumsum(repeats, 0);
  int64_t total;
  if (output_size) {
    total = output_size->guard_int(__FILE__, __LINE__);
  } else {
    // One read of the device: the output's size (and the sign check CUDA's kernel makes).
    TORCH_CHECK(at::min(repeats).item<int64_t>() >= 0, name, ": repeats can not be negative");
    total = cum[-1].item<int64_t>();
  }
  if (total == 0) return empty_on(op.device(), {0}, repeats.scalar_type());
  const Tensor pos = at::arange(total, repeats.options());
  return at::searchsorted(cum, pos, repeats.scalar_type() == at::kInt, /*right=*/true);
}

Tensor mlu_renorm(const Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  const char* name = "aten::renorm";
  OpScope op(name, self);
  TORCH_CHECK(!p.isComplex() && !maxnorm.isComplex(), name, ": p and maxnorm must be real");
  TORCH_CHECK(p.toDouble() > 0, name, ": non-positive-norm not supported");
  TORCH_CHECK(maxnorm.toDouble() >= 0, name, ": expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, name, ": input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat || self.scalar_type() == at::kHalf, name, ": dtype ",
                              self.scalar_type(), " is not supported on device mlu (float32, float16)");
  const int64_t d = wrap_dim(dim, self.dim(), name);
  std::vector<int64_t> reduce;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != d) reduce.push_back(i);
  // The norm in fp32 (torch's accumulate type), the factor applied in fp32 and rounded once.
  const Tensor norm = at::linalg_vector_norm(self, p, reduce, /*keepdim=*/true, at::kFloat);
  const std::string m = c10::str(std::setprecision(17), maxnorm.toDouble());
  return run_elementwise_program({self, norm}, "cast_like(mul(cast($0, f32), where(gt($1, " + m + "), div(" + m +
                                                   ", add($1, 1e-07)), 1.0)), $0)");
}
Tensor& mlu_renorm_out(const Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm, Tensor& out) {
  return write_out(mlu_renorm(self, p, dim, maxnorm), out, "aten::renorm");
}
Tensor& mlu_renorm_(Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  return write_out(mlu_renorm(self, p, dim, maxnorm), self, "aten::renorm_");
}

Tensor mlu_rrelu_with_noise(const Tensor& self, Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                            bool training, std::optional<at::Generator> generator) {
  const char* name = "aten::rrelu_with_noise";
  OpScope op(name, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat || self.scalar_type() == at::kHalf, name, ": dtype ",
                              self.scalar_type(), " is not supported on device mlu (float32, float16)");
  if (!training) return at::leaky_relu(self, (lower.toDouble() + upper.toDouble()) / 2);
  TORCH_CHECK(noise.sizes() == self.sizes(), name, ": noise ", noise.sizes(), " must have self's sizes ", self.sizes());
  check_on_device(noise, op.device(), name, "noise");
  Tensor r = at::empty_like(self, at::MemoryFormat::Contiguous);
  r.uniform_(lower.toDouble(), upper.toDouble(), generator);
  write_out(run_elementwise_program({self, r}, "where(le($0, 0.0), $1, 1.0)"), noise, name);
  return run_elementwise_program({self, noise}, "mul($0, $1)");
}
Tensor& mlu_rrelu_with_noise_out(const Tensor& self, Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                                 bool training, std::optional<at::Generator> generator, Tensor& out) {
  return write_out(mlu_rrelu_with_noise(self, noise, lower, upper, training, generator), out, "aten::rrelu_with_noise");
}
Tensor& mlu_rrelu_with_noise_(Tensor& self, Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                              bool training, std::optional<at::Generator> generator) {
  return write_out(mlu_rrelu_with_noise(self, noise, lower, upper, training, generator), self,
                   "aten::rrelu_with_noise_");
}

// histc (float32): torch's linear histogram (Histogram.cpp / HistogramKernel.cpp): edges min, max
// (the data's aminmax when min == max, widened by 1 each way if still equal), bin =
// trunc((x - min) bins / (max - min)) in fp32 as the CPU computes it, x == max in the last bin, x
// outside [min, max] or NaN not counted; the counts by scatter_add of ones (exact below 2^24).
Tensor mlu_histc(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  const char* name = "aten::histc";
  OpScope op(name, self);
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for dimension 0");
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat, name, ": dtype ", self.scalar_type(),
                              " is not supported on device mlu (float32; torch's float16 kernel rounds each step)");
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {  // one read of the data's range, as the CPU's aminmax
    const auto [mn, mx] = mlu_aminmax(self, std::nullopt, false);
    lo = mn.item<double>();
    hi = mx.item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)), "torch.histc: range of [", lo,
              ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  Tensor counts = at::zeros({bins + 1}, self.options());
  if (self.numel() > 0) {
    const float l = static_cast<float>(lo), h = static_cast<float>(hi), width = h - l;  // fp32, as the CPU's edges
    auto f = [](float v) {  // a float literal that reads back as v
      std::string t = c10::str(std::setprecision(9), v);
      return t.find_first_of(".en") == std::string::npos ? t + ".0" : t;
    };
    const std::string b = std::to_string(bins);
    const Tensor bin = run_elementwise_program(
        {self.reshape({-1})}, "x = $0; p = cast(div(mul(sub(x, " + f(l) + "), " + b + ".0), " + f(width) +
                                  "), i32); v = logical_and(ge(x, " + f(l) + "), le(x, " + f(h) + ")); cast(where(v, minimum(p, " +
                                  std::to_string(bins - 1) + "), " + b + "), i64)");
    counts = counts.scatter_add(0, bin, at::ones({self.numel()}, self.options()));
  }
  return counts.narrow(0, 0, bins).contiguous();
}
Tensor& mlu_histc_out(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max, Tensor& out) {
  return write_out(mlu_histc(self, bins, min, max), out, "aten::histc");
}

// ---- linalg_cross ------------------------------------------------------------------------------------

// The three components along dim, each one program over the broadcast operands' slices
// (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0), concatenated along dim. torch.cross goes through it.
Tensor& mlu_linalg_cross_out(const Tensor& self, const Tensor& other, int64_t dim, Tensor& out) {
  const char* name = "aten::linalg_cross";
  OpScope op(name, self);
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  const int64_t d = wrap_dim(dim, self.dim(), name);
  TORCH_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(d), " and ", other.size(d));
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), other.sizes());
  const Tensor a = self.expand(shape), b = other.expand(shape);
  auto component = [&](int64_t i, int64_t j) {
    return run_elementwise_program({a.narrow(d, i, 1), b.narrow(d, j, 1), a.narrow(d, j, 1), b.narrow(d, i, 1)},
                                   "sub(mul($0, $1), mul($2, $3))");
  };
  return write_out(at::cat({component(1, 2), component(2, 0), component(0, 1)}, d), out, name);
}

// ---- embedding_bag -----------------------------------------------------------------------------------
//
// _embedding_bag / _embedding_bag_forward_only (F.embedding_bag, nn.EmbeddingBag): the bag of every
// index from searchsorted(offsets, position, right) - 1, the rows by index_select, then per bag:
//   sum   scatter_add of the rows (times per_sample_weights)
//   mean  the sum divided by the bag's count of indices (an empty bag stays 0)
//   max   scatter_reduce amax over the bag's rows (include_self=False: an empty bag stays 0); the
//         max index = the first position in the bag holding the max (torch's strict > scan), as
//         scatter_reduce amin of where(row == max, position, n)
// Indices equal to padding_idx do not count: their rows go to a dropped extra bag. Returns torch's
// (output, offset2bag, bag_size, max_indices); the backward is torch's formula over them.
std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_embedding_bag(const Tensor& weight, const Tensor& indices,
                                                             const Tensor& offsets, bool /*scale_grad_by_freq*/,
                                                             int64_t mode, bool /*sparse*/,
                                                             const std::optional<Tensor>& per_sample_weights,
                                                             bool include_last_offset, int64_t padding_idx) {
  const char* name = "aten::_embedding_bag";
  OpScope op(name, weight);
  TORCH_CHECK(weight.dim() == 2, name, ": weight must be 2-D, got ", weight.sizes());
  TORCH_CHECK(indices.dim() == 1 && offsets.dim() == 1, name, ": input and offsets must be 1-D here (the functional ",
              "flattens 2-D input), got ", indices.sizes(), " and ", offsets.sizes());
  TORCH_CHECK(mode >= 0 && mode <= 2, name, ": mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  const bool psw = per_sample_weights.has_value() && per_sample_weights->defined();
  TORCH_CHECK(!psw || mode == 0, "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported "
              "for mode='sum' (got mode='", mode == 1 ? "mean" : "max", "'). Please open a feature request on GitHub.");
  const int64_t n = indices.numel(), d = weight.size(1);
  const int64_t bags = include_last_offset ? std::max<int64_t>(offsets.numel() - 1, 0) : offsets.numel();
  const auto dev = at::TensorOptions().device(op.device());
  const Tensor idx = indices.to(at::kLong), starts = offsets.to(at::kLong).narrow(0, 0, bags).contiguous();
  // offset2bag[i]: the last bag starting at or before position i.
  const Tensor pos = at::arange(n, dev.dtype(at::kLong));
  Tensor offset2bag = n == 0 || bags == 0 ? at::zeros({n}, dev.dtype(at::kLong))
                                          : at::sub(at::searchsorted(starts, pos, false, /*right=*/true), 1);
  // Padding entries (and positions before the first offset) go to the extra bag `bags`.
  Tensor bag = offset2bag;
  if (padding_idx >= 0 && n > 0) bag = at::where(at::eq(idx, padding_idx), bags, offset2bag);
  const Tensor counted = at::ne(bag, bags);
  const Tensor bag_size = at::zeros({bags + 1}, dev.dtype(at::kLong))
                              .scatter_add(0, bag, counted.to(at::kLong)).narrow(0, 0, bags);
  // Sums and means accumulate fp16/bf16 rows in fp32 and round once (torch's CPU and CUDA kernels).
  const at::ScalarType acc = mode != 2 && weight.scalar_type() != at::kFloat ? at::kFloat : weight.scalar_type();
  Tensor rows = at::index_select(weight, 0, idx).to(acc);  // [n, d]
  if (psw) rows = at::mul(rows, per_sample_weights->to(acc).view({-1, 1}));
  const Tensor bag2d = bag.view({-1, 1}).expand({n, d});
  Tensor out = at::zeros({bags + 1, d}, weight.options().dtype(acc));
  Tensor max_indices = at::zeros({bags, mode == 2 ? d : 0}, dev.dtype(at::kLong));
  if (n > 0) {
    if (mode == 2) {
      out = out.scatter_reduce(0, bag2d, rows, "amax", /*include_self=*/false);
      const Tensor hit = at::eq(rows, at::index_select(out, 0, bag));
      const Tensor first = at::full({bags + 1, d}, n, dev.dtype(at::kLong))
                               .scatter_reduce(0, bag2d, at::where(hit, pos.view({-1, 1}), n), "amin", true)
                               .narrow(0, 0, bags);
      // An empty bag (first == n) reads the appended 0: its max index is 0, as the CPU's.
      const Tensor padded_idx = at::cat({idx, at::zeros({1}, dev.dtype(at::kLong))});
      max_indices = at::index_select(padded_idx, 0, first.reshape({-1})).view({bags, d});
    } else {
      out = out.scatter_add(0, bag2d, rows);
    }
  }
  out = out.narrow(0, 0, bags);
  if (mode == 1) out = at::div(out, at::clamp_min(bag_size, 1).view({-1, 1}).to(acc));
  return std::make_tuple(out.to(weight.scalar_type()).contiguous(), offset2bag, bag_size, max_indices);
}
std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_embedding_bag_forward_only(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
    bool sparse, const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx) {
  return mlu_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                           include_last_offset, padding_idx);
}

// The weight gradient (torch's _embedding_bag_dense_backward formula):
//   sum / mean  grad_weight[indices[i]] += grad[offset2bag[i]] (* per_sample_weights[i])
//               (/ bag_size for mean) (/ the index's count with scale_grad_by_freq): index_add of
//               the gathered rows; padding_idx entries add nothing
//   max         grad_weight[max_indices[b, j], j] += grad[b, j] for non-empty bags: scatter_add
// fp16/bf16 accumulate in fp32 and round once.
Tensor mlu_embedding_bag_dense_backward(const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
                                        const Tensor& bag_size, const Tensor& maximum_indices,
                                        c10::SymInt num_weights_sym, bool scale_grad_by_freq, int64_t mode,
                                        const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  const char* name = "aten::_embedding_bag_dense_backward";
  OpScope op(name, grad);
  const int64_t num_weights = num_weights_sym.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(mode >= 0 && mode <= 2, name, ": mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  TORCH_CHECK(grad.dim() == 2, name, ": grad must be 2-D [bags, embedding_dim], got ", grad.sizes());
  const at::ScalarType acc = at::kFloat;
  const int64_t d = grad.size(1);
  Tensor grad_weight = at::zeros({num_weights, d}, grad.options().dtype(acc));
  if (mode == 2) {
    if (grad.numel() == 0) return grad_weight.to(grad.scalar_type());
    const Tensor nonempty = at::gt(bag_size, 0).view({-1, 1});
    const Tensor g = at::where(nonempty, grad.to(acc), 0.0);
    return grad_weight.scatter_add_(0, maximum_indices.to(at::kLong), g).to(grad.scalar_type());
  }
  if (indices.numel() == 0) return grad_weight.to(grad.scalar_type());
  const Tensor idx = indices.to(at::kLong), bag = offset2bag.to(at::kLong);
  Tensor rows = at::index_select(grad.to(acc), 0, bag);  // [n, d]
  if (mode == 1) rows = at::div(rows, at::clamp_min(at::index_select(bag_size, 0, bag), 1).to(acc).view({-1, 1}));
  if (per_sample_weights.has_value() && per_sample_weights->defined())
    rows = at::mul(rows, per_sample_weights->to(acc).view({-1, 1}));
  if (scale_grad_by_freq) {
    const Tensor counts = at::zeros({num_weights}, grad.options().dtype(acc)).scatter_add_(0, idx, at::ones_like(idx, acc));
    rows = at::div(rows, at::index_select(counts, 0, idx).view({-1, 1}));
  }
  if (padding_idx >= 0) rows = at::where(at::eq(idx, padding_idx).view({-1, 1}), 0.0, rows);
  return grad_weight.index_add_(0, idx, rows).to(grad.scalar_type());
}

Tensor mlu_embedding_bag_backward(const Tensor& grad, const Tensor& indices, const Tensor& /*offsets*/,
                                  const Tensor& offset2bag, const Tensor& bag_size, const Tensor& maximum_indices,
                                  c10::SymInt num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
                                  const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse, "aten::_embedding_bag_backward: sparse gradients (sparse=True) are not "
                              "supported on device mlu (no sparse tensors); use sparse=False");
  return mlu_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices, std::move(num_weights),
                                          scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

// The gradient of per_sample_weights (mode sum): d out[bag(i)] / d w_i = weight[indices[i]], so
// grad_w[i] = <grad[offset2bag[i]], weight[indices[i]]> (0 for padding_idx entries): two row
// gathers, a product and a row sum, fp16/bf16 accumulated in fp32 (torch's
// _embedding_bag_per_sample_weights_backward_cpu / _cuda formula).
Tensor mlu_embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                                     const Tensor& offsets, const Tensor& offset2bag, int64_t mode,
                                                     int64_t padding_idx) {
  const char* name = "aten::_embedding_bag_per_sample_weights_backward";
  OpScope op(name, grad);
  TORCH_CHECK(mode == 0, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  TORCH_CHECK(grad.dim() == 2 && weight.dim() == 2 && grad.size(1) == weight.size(1), name, ": grad ", grad.sizes(),
              " and weight ", weight.sizes(), " must be 2-D with the same embedding size");
  TORCH_CHECK(indices.dim() == 1 && offset2bag.sizes() == indices.sizes(), name, ": indices ", indices.sizes(),
              " and offset2bag ", offset2bag.sizes(), " must be 1-D of the same length");
  const at::ScalarType acc = at::kFloat;
  if (indices.numel() == 0) return at::zeros({0}, grad.options());
  const Tensor idx = indices.to(at::kLong);
  const Tensor rows = at::index_select(weight, 0, idx).to(acc);
  const Tensor grads = at::index_select(grad, 0, offset2bag.to(at::kLong)).to(acc);
  Tensor result = at::sum(at::mul(rows, grads), {1});
  if (padding_idx >= 0) result = at::where(at::eq(idx, padding_idx), 0.0, result);
  return result.to(grad.scalar_type());
}

// ---- reflection / replication padding ----------------------------------------------------------------
//
// Each padded dim (the last 1, 2 or 3; padding = (left, right) of the last dim first, as F.pad) is
// one index_select with the source index of every output position, computed by a program over
// arange: j = i - left; reflect: n-1 - |n-1 - |j||; replicate: clamp(j, 0, n-1) (negative pads crop).
// The backward scatters the gradient back with the same indices (index_add), dims in reverse order.
enum class PadMode { kReflect, kReplicate };

Tensor pad_source_index(OpScope& op, int64_t n, int64_t left, int64_t out, PadMode mode) {
  const Tensor i = at::arange(out, at::TensorOptions().device(op.device()).dtype(at::kInt));
  const std::string j = "sub($0, " + std::to_string(left) + ")", last = std::to_string(n - 1);
  return run_elementwise_program({i}, mode == PadMode::kReflect
                                          ? "cast(sub(" + last + ", abs(sub(" + last + ", abs(" + j + ")))), i64)"
                                          : "cast(minimum(maximum(" + j + ", 0), " + last + "), i64)");
}

struct PadDim {
  int64_t dim, left, right, in, out;
};
std::vector<PadDim> pad_dims(const Tensor& self, at::IntArrayRef padding, int dims, PadMode mode, const char* name) {
  TORCH_CHECK(static_cast<int>(padding.size()) == 2 * dims, name, ": expected padding of ", 2 * dims, " values, got ",
              padding.size());
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, name, ": expected a ", dims + 1, "-d or ", dims + 2,
              "-d input, got ", self.dim(), " dims");
  std::vector<PadDim> out;
  for (int k = 0; k < dims; ++k) {
    const int64_t d = self.dim() - 1 - k, n = self.size(d), l = padding[2 * k], r = padding[2 * k + 1];
    if (mode == PadMode::kReflect)
      TORCH_CHECK(l < n && r < n, name, ": padding (", l, ", ", r, ") must be below the input size ", n, " of dim ", d);
    TORCH_CHECK(n + l + r > 0, name, ": padding (", l, ", ", r, ") leaves no output of dim ", d, " (size ", n, ")");
    out.push_back({d, l, r, n, n + l + r});
  }
  return out;
}

Tensor pad_forward(const char* name, const Tensor& self, at::IntArrayRef padding, int dims, PadMode mode) {
  OpScope op(name, self);
  Tensor out = self;
  for (const PadDim& p : pad_dims(self, padding, dims, mode, name))
    out = at::index_select(out, p.dim, pad_source_index(op, p.in, p.left, p.out, mode));
  return out.is_same(self) ? self.clone() : out;
}
Tensor pad_backward(const char* name, const Tensor& grad, const Tensor& self, at::IntArrayRef padding, int dims,
                    PadMode mode) {
  OpScope op(name, grad);
  const std::vector<PadDim> pd = pad_dims(self, padding, dims, mode, name);
  Tensor g = grad;
  for (auto it = pd.rbegin(); it != pd.rend(); ++it) {  // undo the last forward step first
    std::vector<int64_t> shape = g.sizes().vec();
    shape[static_cast<std::size_t>(it->dim)] = it->in;
    Tensor zero = at::zeros(shape, g.options());
    g = mlu_index_add(zero, it->dim, pad_source_index(op, it->in, it->left, it->out, mode), g, 1);
  }
  return g;
}

#define MLUSIM_PAD(fn, aten_name, dims, mode)                                                                      \
  Tensor mlu_##fn(const Tensor& self, at::IntArrayRef padding) {                                                 \
    return pad_forward("aten::" aten_name, self, padding, dims, mode);                                           \
  }                                                                                                              \
  Tensor& mlu_##fn##_out(const Tensor& self, at::IntArrayRef padding, Tensor& out) {                             \
    return write_out(mlu_##fn(self, padding), out, "aten::" aten_name);                                          \
  }                                                                                                              \
  Tensor mlu_##fn##_backward(const Tensor& grad, const Tensor& self, at::IntArrayRef padding) {                  \
    return pad_backward("aten::" aten_name "_backward", grad, self, padding, dims, mode);                        \
  }                                                                                                              \
  Tensor& mlu_##fn##_backward_out(const Tensor& grad, const Tensor& self, at::IntArrayRef padding, Tensor& gi) { \
    return write_out(mlu_##fn##_backward(grad, self, padding), gi, "aten::" aten_name "_backward");              \
  }
MLUSIM_PAD(reflection_pad1d, "reflection_pad1d", 1, PadMode::kReflect)
MLUSIM_PAD(reflection_pad2d, "reflection_pad2d", 2, PadMode::kReflect)
MLUSIM_PAD(reflection_pad3d, "reflection_pad3d", 3, PadMode::kReflect)
MLUSIM_PAD(replication_pad1d, "replication_pad1d", 1, PadMode::kReplicate)
MLUSIM_PAD(replication_pad2d, "replication_pad2d", 2, PadMode::kReplicate)
MLUSIM_PAD(replication_pad3d, "replication_pad3d", 3, PadMode::kReplicate)
#undef MLUSIM_PAD

// ---- upsampling: nearest, nearest-exact, linear / bilinear / trilinear ----------------------------------------
//
// Separable: each spatial dim (the last 1-3) in turn, with torch's source coordinates (UpSample.h)
// computed by a program over arange in fp32, scale = 1 / scale_factor when given, else in / out:
//   nearest        src = min(floor(o scale), in - 1)            (nearest-exact: floor((o + 1/2) scale))
//   linear         src = align_corners ? o (in - 1) / (out - 1) : max((o + 1/2) scale - 1/2, 0);
//                  y = x[i0] (1 - l) + x[i1] l with i0 = floor(src), i1 = min(i0 + 1, in - 1), l = src - i0
// (bilinear/trilinear interpolate one dim after the other: the same weights, rounded per dim).
// Backwards scatter the gradient with the same indices and weights (index_add), dims in reverse.
enum class Interp { kNearest, kNearestExact, kLinear };

struct InterpDim {
  int64_t dim, in, out;
  Tensor i0, i1, weight;  // weight: l, shaped to broadcast along dim (linear only)
};

// A program literal of a scale (all 17 digits: the coordinates are fp32 products with it).
std::string scale_text(double v) { return c10::str(std::setprecision(17), v); }

double source_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale, Interp mode) {
  if (mode == Interp::kLinear && align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

std::vector<InterpDim> interp_dims(OpScope& op, at::IntArrayRef input_size, at::IntArrayRef output_size, Interp mode,
                                   bool align_corners, at::ArrayRef<std::optional<double>> scales) {
  const auto k = static_cast<int64_t>(output_size.size());
  TORCH_CHECK(static_cast<int64_t>(input_size.size()) == k + 2, op.name(), ": expected a ", k + 2, "-d input, got ",
              input_size.size(), " dims");
  std::vector<InterpDim> dims;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t in = input_size[static_cast<std::size_t>(2 + i)], out = output_size[static_cast<std::size_t>(i)];
    TORCH_CHECK(in > 0 && out > 0, op.name(), ": input and output sizes must be positive, got ", in, " and ", out);
    const double sc = source_scale(in, out, align_corners, scales.size() > static_cast<std::size_t>(i) ? scales[static_cast<std::size_t>(i)] : std::nullopt, mode);
    const Tensor o = at::arange(out, at::TensorOptions().device(op.device()).dtype(at::kFloat));
    const std::string last = std::to_string(in - 1);
    InterpDim d{2 + i, in, out, Tensor(), Tensor(), Tensor()};
    if (mode == Interp::kLinear) {
      const std::string src = align_corners ? "mul($0, " + scale_text(sc) + ")"
                                            : "maximum(sub(mul(add($0, 0.5), " + scale_text(sc) + "), 0.5), 0.0)";
      const Tensor s = run_elementwise_program({o}, src);
      d.i0 = run_elementwise_program({s}, "minimum(cast($0, i64), " + last + ")");
      d.i1 = run_elementwise_program({d.i0}, "minimum(add($0, 1), " + last + ")");
      std::vector<int64_t> shape(static_cast<std::size_t>(k + 2), 1);
      shape[static_cast<std::size_t>(2 + i)] = out;
      d.weight = run_elementwise_program({s, d.i0}, "sub($0, cast($1, f32))").view(shape);
    } else {
      const std::string src = mode == Interp::kNearest ? "mul($0, " + scale_text(sc) + ")"
                                                       : "mul(add($0, 0.5), " + scale_text(sc) + ")";
      d.i0 = run_elementwise_program({o}, "minimum(cast(" + src + ", i64), " + last + ")");
    }
    dims.push_back(d);
  }
  return dims;
}

Tensor interp_forward(const char* name, const Tensor& self, at::IntArrayRef output_size, Interp mode, bool align_corners,
                      at::ArrayRef<std::optional<double>> scales) {
  OpScope op(name, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat || self.scalar_type() == at::kHalf, name,
                              ": dtype ", self.scalar_type(), " is not supported on device mlu (float32, float16)");
  Tensor x = self;
  const std::vector<InterpDim> dims = interp_dims(op, self.sizes(), output_size, mode, align_corners, scales);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const InterpDim& d = dims[k];
    const Tensor a = at::index_select(x, d.dim, d.i0);
    // fp16: the blends between dims stay fp32 (the weights' dtype) and the last rounds once, as
    // torch's kernels accumulate half in float.
    const std::string blend = "add(mul($0, sub(1.0, $2)), mul($1, $2))";
    const std::string text = self.scalar_type() == at::kHalf ? (k + 1 == dims.size() ? "cast(" + blend + ", f16)" : blend)
                                                             : "cast_like(" + blend + ", $0)";
    x = mode == Interp::kLinear ? run_elementwise_program({a, at::index_select(x, d.dim, d.i1), d.weight}, text) : a;
  }
  return x.is_same(self) ? self.clone() : x;
}

Tensor interp_backward(const char* name, const Tensor& grad, at::IntArrayRef output_size, at::IntArrayRef input_size,
                       Interp mode, bool align_corners, at::ArrayRef<std::optional<double>> scales) {
  OpScope op(name, grad);
  const std::vector<InterpDim> dims = interp_dims(op, input_size, output_size, mode, align_corners, scales);
  Tensor g = grad;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    std::vector<int64_t> shape = g.sizes().vec();
    shape[static_cast<std::size_t>(it->dim)] = it->in;
    const Tensor zero = at::zeros(shape, g.options());
    if (mode != Interp::kLinear) {
      g = mlu_index_add(zero, it->dim, it->i0, g, 1);
      continue;
    }
    const Tensor g0 = run_elementwise_program({g, it->weight}, "cast_like(mul($0, sub(1.0, $1)), $0)");
    const Tensor g1 = run_elementwise_program({g, it->weight}, "cast_like(mul($0, $1), $0)");
    g = mlu_index_add(mlu_index_add(zero, it->dim, it->i0, g0, 1), it->dim, it->i1, g1, 1);
  }
  return g;
}

using SymSizes = c10::SymIntArrayRef;
#define MLUSIM_NEAREST(fn, aten_name, mode, ...)                                                                   \
  Tensor mlu_##fn(const Tensor& self, SymSizes out_size, MLUSIM_SCALE_PARAMS_##__VA_ARGS__) {                      \
    return interp_forward("aten::" aten_name, self, C10_AS_INTARRAYREF_SLOW(out_size), mode, false,                \
                          {MLUSIM_SCALE_ARGS_##__VA_ARGS__});                                                      \
  }                                                                                                                \
  Tensor& mlu_##fn##_out(const Tensor& self, SymSizes out_size, MLUSIM_SCALE_PARAMS_##__VA_ARGS__, Tensor& out) {  \
    return write_out(mlu_##fn(self, out_size, MLUSIM_SCALE_ARGS_##__VA_ARGS__), out, "aten::" aten_name);         \
  }                                                                                                                \
  Tensor mlu_##fn##_backward(const Tensor& grad, SymSizes out_size, SymSizes in_size,                              \
                             MLUSIM_SCALE_PARAMS_##__VA_ARGS__) {                                                  \
    return interp_backward("aten::" aten_name "_backward", grad, C10_AS_INTARRAYREF_SLOW(out_size),               \
                           C10_AS_INTARRAYREF_SLOW(in_size), mode, false, {MLUSIM_SCALE_ARGS_##__VA_ARGS__});      \
  }                                                                                                                \
  Tensor& mlu_##fn##_backward_out(const Tensor& grad, SymSizes out_size, SymSizes in_size,                         \
                                  MLUSIM_SCALE_PARAMS_##__VA_ARGS__, Tensor& gi) {                                 \
    return write_out(mlu_##fn##_backward(grad, out_size, in_size, MLUSIM_SCALE_ARGS_##__VA_ARGS__), gi,           \
                     "aten::" aten_name "_backward");                                                              \
  }
#define MLUSIM_LINEAR(fn, aten_name, ...)                                                                          \
  Tensor mlu_##fn(const Tensor& self, SymSizes out_size, bool align, MLUSIM_SCALE_PARAMS_##__VA_ARGS__) {          \
    return interp_forward("aten::" aten_name, self, C10_AS_INTARRAYREF_SLOW(out_size), Interp::kLinear, align,     \
                          {MLUSIM_SCALE_ARGS_##__VA_ARGS__});                                                      \
  }                                                                                                                \
  Tensor& mlu_##fn##_out(const Tensor& self, SymSizes out_size, bool align, MLUSIM_SCALE_PARAMS_##__VA_ARGS__,     \
                         Tensor& out) {                                                                            \
    return write_out(mlu_##fn(self, out_size, align, MLUSIM_SCALE_ARGS_##__VA_ARGS__), out, "aten::" aten_name);  \
  }                                                                                                                \
  Tensor mlu_##fn##_backward(const Tensor& grad, SymSizes out_size, SymSizes in_size, bool align,                  \
                             MLUSIM_SCALE_PARAMS_##__VA_ARGS__) {                                                  \
    return interp_backward("aten::" aten_name "_backward", grad, C10_AS_INTARRAYREF_SLOW(out_size),               \
                           C10_AS_INTARRAYREF_SLOW(in_size), Interp::kLinear, align,                               \
                           {MLUSIM_SCALE_ARGS_##__VA_ARGS__});                                                     \
  }                                                                                                                \
  Tensor& mlu_##fn##_backward_out(const Tensor& grad, SymSizes out_size, SymSizes in_size, bool align,             \
                                  MLUSIM_SCALE_PARAMS_##__VA_ARGS__, Tensor& gi) {                                 \
    return write_out(mlu_##fn##_backward(grad, out_size, in_size, align, MLUSIM_SCALE_ARGS_##__VA_ARGS__), gi,    \
                     "aten::" aten_name "_backward");                                                              \
  }
// The optional scale factors of 1, 2 and 3 spatial dims (outermost first, as the schemas).
#define MLUSIM_SCALE_PARAMS_1 std::optional<double> s0
#define MLUSIM_SCALE_ARGS_1 s0
#define MLUSIM_SCALE_PARAMS_2 std::optional<double> s0, std::optional<double> s1
#define MLUSIM_SCALE_ARGS_2 s0, s1
#define MLUSIM_SCALE_PARAMS_3 std::optional<double> s0, std::optional<double> s1, std::optional<double> s2
#define MLUSIM_SCALE_ARGS_3 s0, s1, s2
MLUSIM_NEAREST(upsample_nearest1d, "upsample_nearest1d", Interp::kNearest, 1)
MLUSIM_NEAREST(upsample_nearest2d, "upsample_nearest2d", Interp::kNearest, 2)
MLUSIM_NEAREST(upsample_nearest3d, "upsample_nearest3d", Interp::kNearest, 3)
MLUSIM_NEAREST(upsample_nearest_exact1d, "_upsample_nearest_exact1d", Interp::kNearestExact, 1)
MLUSIM_NEAREST(upsample_nearest_exact2d, "_upsample_nearest_exact2d", Interp::kNearestExact, 2)
MLUSIM_NEAREST(upsample_nearest_exact3d, "_upsample_nearest_exact3d", Interp::kNearestExact, 3)
MLUSIM_LINEAR(upsample_linear1d, "upsample_linear1d", 1)
MLUSIM_LINEAR(upsample_bilinear2d, "upsample_bilinear2d", 2)
MLUSIM_LINEAR(upsample_trilinear3d, "upsample_trilinear3d", 3)
#undef MLUSIM_NEAREST
#undef MLUSIM_LINEAR
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
  m.impl("count_nonzero.dim_IntList", TORCH_FN(mlu_count_nonzero));
  m.impl("isin.Tensor_Tensor", TORCH_FN(mlu_isin_tt));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(mlu_isin_tt_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(mlu_isin_ts));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(mlu_isin_ts_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(mlu_isin_st));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(mlu_isin_st_out));
  m.impl("searchsorted.Tensor", TORCH_FN(mlu_searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(mlu_searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(mlu_searchsorted_scalar));
  m.impl("bucketize.Tensor", TORCH_FN(mlu_bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(mlu_bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(mlu_bucketize_scalar));
  m.impl("take", TORCH_FN(mlu_take));
  m.impl("take.out", TORCH_FN(mlu_take_out));
  m.impl("channel_shuffle", TORCH_FN(mlu_channel_shuffle));
  m.impl("linalg_cross.out", TORCH_FN(mlu_linalg_cross_out));
  m.impl("_embedding_bag", TORCH_FN(mlu_embedding_bag));
  m.impl("_embedding_bag_forward_only", TORCH_FN(mlu_embedding_bag_forward_only));
  m.impl("_embedding_bag_backward", TORCH_FN(mlu_embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(mlu_embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(mlu_embedding_bag_per_sample_weights_backward));
  m.impl("index_add", TORCH_FN(mlu_index_add));
  m.impl("index_add.out", TORCH_FN(mlu_index_add_out));
  m.impl("index_add_", TORCH_FN(mlu_index_add_));
  m.impl("index_reduce", TORCH_FN(mlu_index_reduce));
  m.impl("index_reduce.out", TORCH_FN(mlu_index_reduce_out));
  m.impl("index_reduce_", TORCH_FN(mlu_index_reduce_));
  m.impl("repeat_interleave.Tensor", TORCH_FN(mlu_repeat_interleave));
  m.impl("histc", TORCH_FN(mlu_histc));
  m.impl("histc.out", TORCH_FN(mlu_histc_out));
  m.impl("renorm", TORCH_FN(mlu_renorm));
  m.impl("renorm.out", TORCH_FN(mlu_renorm_out));
  m.impl("renorm_", TORCH_FN(mlu_renorm_));
  m.impl("rrelu_with_noise", TORCH_FN(mlu_rrelu_with_noise));
  m.impl("rrelu_with_noise.out", TORCH_FN(mlu_rrelu_with_noise_out));
  m.impl("rrelu_with_noise_", TORCH_FN(mlu_rrelu_with_noise_));
#define MLUSIM_REGISTER_PAD(fn)                                              \
  m.impl(#fn, TORCH_FN(mlu_##fn));                                           \
  m.impl(#fn ".out", TORCH_FN(mlu_##fn##_out));                              \
  m.impl(#fn "_backward", TORCH_FN(mlu_##fn##_backward));                    \
  m.impl(#fn "_backward.grad_input", TORCH_FN(mlu_##fn##_backward_out));
  MLUSIM_REGISTER_PAD(reflection_pad1d)
  MLUSIM_REGISTER_PAD(reflection_pad2d)
  MLUSIM_REGISTER_PAD(reflection_pad3d)
  MLUSIM_REGISTER_PAD(replication_pad1d)
  MLUSIM_REGISTER_PAD(replication_pad2d)
  MLUSIM_REGISTER_PAD(replication_pad3d)
#undef MLUSIM_REGISTER_PAD
#define MLUSIM_REGISTER_INTERP(fn, aten_name)                                    \
  m.impl(aten_name, TORCH_FN(mlu_##fn));                                         \
  m.impl(aten_name ".out", TORCH_FN(mlu_##fn##_out));                            \
  m.impl(aten_name "_backward", TORCH_FN(mlu_##fn##_backward));                  \
  m.impl(aten_name "_backward.grad_input", TORCH_FN(mlu_##fn##_backward_out));
  MLUSIM_REGISTER_INTERP(upsample_nearest1d, "upsample_nearest1d")
  MLUSIM_REGISTER_INTERP(upsample_nearest2d, "upsample_nearest2d")
  MLUSIM_REGISTER_INTERP(upsample_nearest3d, "upsample_nearest3d")
  MLUSIM_REGISTER_INTERP(upsample_nearest_exact1d, "_upsample_nearest_exact1d")
  MLUSIM_REGISTER_INTERP(upsample_nearest_exact2d, "_upsample_nearest_exact2d")
  MLUSIM_REGISTER_INTERP(upsample_nearest_exact3d, "_upsample_nearest_exact3d")
  MLUSIM_REGISTER_INTERP(upsample_linear1d, "upsample_linear1d")
  MLUSIM_REGISTER_INTERP(upsample_bilinear2d, "upsample_bilinear2d")
  MLUSIM_REGISTER_INTERP(upsample_trilinear3d, "upsample_trilinear3d")
#undef MLUSIM_REGISTER_INTERP
}

}  // namespace mlusim::bridge::ops
