// ATen sorting and selection kernels over libmlu's sort (sort.h: a stable bitonic network on the
// simulated cores), and what torch builds on them:
//
//   sort.stable / sort.values_stable   dim moved last (a device copy), libmlu sort, moved back;
//                                      always stable (stable=False allows any tie order)
//   topk / topk.values                 sort (descending for largest), the first k along dim
//   kthvalue.values                    ascending sort, position k - 1
//   median / median.dim_values         ascending sort, position (n - 1) / 2, or the first NaN of
//   nanmedian / nanmedian.dim_values   the row (median) / (valid - 1) / 2 of the non-NaN (nanmedian):
//                                      NaNs counted on the device, the position from one program,
//                                      values and indices by gather
//   _unique2, unique_consecutive       sort (unique), runs of equal neighbours: masked_select of
//                                      the run starts, a cumsum for the inverse, scatter_add counts
//   mode / mode.values                 stable sort along dim; each sorted position's place in its
//                                      run of equal values (position - the run's start, a cummax
//                                      of the run starts); the first longest run (argmax) is the
//                                      smallest of the most frequent values, its index the last
//                                      occurrence in the input (amax of the matching positions),
//                                      as the CPU's
//   randperm.generator_out             stable sort of n random int32 keys in [0, 2^31 - 1) drawn on
//                                      the device (the generator's stream), the permutation = the
//                                      sort's indices [CUDA: random keys, radix sort; ties among the
//                                      keys (expected n^2 / 2^32 pairs) keep index order]
//
// argsort, msort, sort (no stable flag) and the .dim functional forms of kthvalue / median /
// nanmedian are torch composites over these. Backwards are torch's formulas (gather/scatter on
// the indices). NaN sorts as the largest value (torch's order); -0.0 comes back as 0.0.
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/where.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/sum.h>
#include <c10/core/SymInt.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "mlusim/mlu/sort.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// values, indices of self sorted along dim (fresh tensors; views of dim-last buffers).
std::tuple<Tensor, Tensor> sort_along(OpScope& op, const Tensor& self, std::int64_t dim, bool descending) {
  const char* name = op.name();
  dim = wrap_dim(dim, self.dim(), name);
  if (self.numel() == 0)
    return {empty_on(op.device(), self.sizes(), self.scalar_type()), empty_on(op.device(), self.sizes(), at::kLong)};
  const Tensor x = (self.dim() == 0 ? self.view({1}) : self.movedim(dim, -1)).contiguous();
  const mlu::TensorDesc dx = desc(x, name);
  Tensor values = empty_on(op.device(), x.sizes(), x.scalar_type());
  Tensor indices = empty_on(op.device(), x.sizes(), at::kLong);
  const std::size_t ws_bytes = mlu::sort_workspace_bytes(op.handle(), dx);
  void* ws = op.workspace(ws_bytes);
  op.check(mlu::sort(op.handle(), dx, x.data_ptr(), descending, desc(values, name), values.data_ptr(),
                     desc(indices, name), indices.data_ptr(), ws, ws_bytes),
           "sort");
  if (self.dim() == 0) return {values.squeeze(0), indices.squeeze(0)};
  return {values.movedim(-1, dim), indices.movedim(-1, dim)};
}

// sort_along for every dtype sort takes: uint8 / int16 sort as their int32 copy (the same order),
// the values narrowed back.
std::tuple<Tensor, Tensor> sort_any(OpScope& op, const Tensor& self, int64_t dim, bool descending) {
  if (!is_narrow_int(self.scalar_type())) return sort_along(op, self, dim, descending);
  auto [v, i] = sort_along(op, self.to(at::kInt), dim, descending);
  return {v.to(self.scalar_type()), i};
}

std::tuple<Tensor, Tensor> mlu_sort_stable(const Tensor& self, std::optional<bool> /*stable*/, int64_t dim,
                                           bool descending) {
  OpScope op("aten::sort", self);
  return sort_any(op, self, dim, descending);
}
std::tuple<Tensor&, Tensor&> mlu_sort_values_stable(const Tensor& self, std::optional<bool> /*stable: always*/, int64_t dim,
                                                    bool descending, Tensor& values, Tensor& indices) {
  OpScope op("aten::sort", self);
  check_out_dtype(values, self.scalar_type(), op.name());
  check_out_dtype(indices, at::kLong, op.name());
  auto [v, i] = sort_any(op, self, dim, descending);
  write_out(v, values, op.name());
  write_out(i, indices, op.name());
  return {values, indices};
}

// ---- topk, kthvalue ------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> mlu_topk(const Tensor& self, c10::SymInt k_sym, int64_t dim, bool largest, bool /*sorted*/) {
  OpScope op("aten::topk", self);
  const int64_t k = k_sym.guard_int(__FILE__, __LINE__);
  const int64_t d = wrap_dim(dim, self.dim(), op.name());
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK_INDEX(k >= 0 && k <= size, "selected index k out of range");
  auto [v, i] = sort_any(op, self, d, largest);
  if (self.dim() == 0) return {v, i};
  return {v.narrow(d, 0, k).contiguous(), i.narrow(d, 0, k).contiguous()};
}
std::tuple<Tensor&, Tensor&> mlu_topk_values(const Tensor& self, c10::SymInt k, int64_t dim, bool largest, bool sorted,
                                             Tensor& values, Tensor& indices) {
  auto [v, i] = mlu_topk(self, std::move(k), dim, largest, sorted);
  write_out(v, values, "aten::topk");
  write_out(i, indices, "aten::topk");
  return {values, indices};
}

// The element at `pos` (int64, keepdim shape) of the sorted rows along dim.
std::tuple<Tensor, Tensor> pick(const Tensor& sorted, const Tensor& sorted_idx, int64_t dim, const Tensor& pos,
                                bool keepdim) {
  Tensor v = at::gather(sorted, dim, pos), i = at::gather(sorted_idx, dim, pos);
  if (!keepdim) v = v.squeeze(dim), i = i.squeeze(dim);
  return {v, i};
}

std::tuple<Tensor&, Tensor&> mlu_kthvalue_values(const Tensor& self, int64_t k, int64_t dim, bool keepdim,
                                                 Tensor& values, Tensor& indices) {
  OpScope op("aten::kthvalue", self);
  const int64_t d = wrap_dim(dim, self.dim(), op.name());
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK_INDEX(k >= 1 && k <= size, "kthvalue(): selected number k out of range for dimension ", d);
  auto [v, i] = sort_along(op, self, d, false);
  if (self.dim() == 0) {
    write_out(v, values, op.name());
    write_out(i, indices, op.name());
    return {values, indices};
  }
  Tensor kv = v.narrow(d, k - 1, 1), ki = i.narrow(d, k - 1, 1);
  if (!keepdim) kv = kv.squeeze(d), ki = ki.squeeze(d);
  write_out(kv, values, op.name());
  write_out(ki, indices, op.name());
  return {values, indices};
}

// ---- median, nanmedian ----------------------------------------------------------------------------

// Values and indices of the (nan)median of self along d (keepdim shape unless !keepdim).
std::tuple<Tensor, Tensor> median_along(OpScope& op, const Tensor& self, int64_t d, bool keepdim, bool ignore_nan) {
  auto [v, i] = sort_along(op, self.dim() == 0 ? self.view({1}) : self, self.dim() == 0 ? 0 : d, false);
  const int64_t dd = self.dim() == 0 ? 0 : d;
  const int64_t n = v.size(dd);
  TORCH_CHECK_INDEX(n > 0, op.name(), "(): expected a non-empty dimension ", d);
  const std::string N = std::to_string(n);
  Tensor pos;
  if (at::isFloatingType(self.scalar_type())) {
    const Tensor nans = at::sum(at::isnan(v), {dd}, true);  // int64
    // median: the first NaN (they sort last, in order) if any; nanmedian: the lower median of the rest.
    pos = ignore_nan ? run_elementwise_program(
                           {nans}, "where(gt(sub(" + N + ", $0), 0), cast(div(sub(sub(" + N + ", $0), 1), 2.0), i64), 0)")
                     : run_elementwise_program(
                           {nans}, "where(gt($0, 0), sub(" + N + ", $0), " + std::to_string((n - 1) / 2) + ")");
  } else {
    std::vector<int64_t> shape(v.sizes().begin(), v.sizes().end());
    shape[static_cast<std::size_t>(dd)] = 1;
    pos = at::full(shape, (n - 1) / 2, v.options().dtype(at::kLong));
  }
  auto [mv, mi] = pick(v, i, dd, pos, keepdim || self.dim() == 0);
  if (self.dim() == 0) return {mv.squeeze(0), mi.squeeze(0)};
  return {mv, mi};
}

Tensor median_all(const char* name, const Tensor& self, bool ignore_nan) {
  OpScope op(name, self);
  if (self.numel() == 0) return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  return std::get<0>(median_along(op, self.reshape({-1}), 0, false, ignore_nan));
}
Tensor mlu_median(const Tensor& self) { return median_all("aten::median", self, false); }
Tensor mlu_nanmedian(const Tensor& self) { return median_all("aten::nanmedian", self, true); }

std::tuple<Tensor&, Tensor&> median_dim_out(const char* name, const Tensor& self, int64_t dim, bool keepdim,
                                            Tensor& values, Tensor& indices, bool ignore_nan) {
  OpScope op(name, self);
  const int64_t d = wrap_dim(dim, self.dim(), name);
  auto [v, i] = median_along(op, self, d, keepdim, ignore_nan);
  write_out(v, values, name);
  write_out(i, indices, name);
  return {values, indices};
}
std::tuple<Tensor&, Tensor&> mlu_median_dim_values(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                                   Tensor& indices) {
  return median_dim_out("aten::median", self, dim, keepdim, values, indices, false);
}
std::tuple<Tensor&, Tensor&> mlu_nanmedian_dim_values(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                                      Tensor& indices) {
  return median_dim_out("aten::nanmedian", self, dim, keepdim, values, indices, true);
}

// ---- mode ---------------------------------------------------------------------------------------------------

std::tuple<Tensor&, Tensor&> mlu_mode_values(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                             Tensor& indices) {
  OpScope op("aten::mode", self);
  const char* name = op.name();
  const int64_t d = wrap_dim(dim, self.dim(), name);
  check_out_dtype(indices, at::kLong, name);
  if (self.dim() == 0) {
    write_out(self.clone(), values, name);
    return {values, write_out(at::zeros({}, self.options().dtype(at::kLong)), indices, name)};
  }
  TORCH_CHECK_INDEX(self.size(d) > 0, "mode(): Expected reduction dim ", d, " to have non-zero size.");
  const int64_t n = self.size(d);
  const Tensor x = self.movedim(d, -1).contiguous();
  const auto [sorted, perm] = x.sort(/*stable=*/true, -1, /*descending=*/false);
  const Tensor pos = at::arange(n, x.options().dtype(at::kLong));
  std::vector<int64_t> first_sizes(x.sizes().begin(), x.sizes().end());
  first_sizes.back() = 1;
  const Tensor starts = at::cat({at::ones(first_sizes, x.options().dtype(at::kBool)),
                                 at::ne(sorted.narrow(-1, 1, n - 1), sorted.narrow(-1, 0, n - 1))},
                                -1);
  const Tensor run_start = std::get<0>(at::cummax(at::where(starts, pos, 0), -1));
  const Tensor best = at::argmax(pos.sub(run_start), -1, /*keepdim=*/true);
  Tensor v = sorted.gather(-1, best);
  Tensor idx = at::where(at::eq(x, v), pos, -1).amax(-1, /*keepdim=*/true);
  if (keepdim) {
    v = v.movedim(-1, d);
    idx = idx.movedim(-1, d);
  } else {
    v = v.squeeze(-1);
    idx = idx.squeeze(-1);
  }
  write_out(v, values, name);
  write_out(idx, indices, name);
  return {values, indices};
}

std::tuple<Tensor, Tensor> mlu_mode(const Tensor& self, int64_t dim, bool keepdim) {
  Tensor values = empty_on(self.device(), {0}, self.scalar_type());
  Tensor indices = empty_on(self.device(), {0}, at::kLong);
  mlu_mode_values(self, dim, keepdim, values, indices);
  return {values, indices};
}

// ---- unique, unique_consecutive ------------------------------------------------------------------------

// The runs of equal neighbours of a flat `s` (sorted for unique; NaN != NaN, so every NaN is its
// own run, as on the CPU): the first of each run (masked_select: one count read to size it), the
// run number of every element (a device cumsum of the run starts) in the order `perm` gives
// (scattered back through it) or in place, and the run lengths (scatter_add of ones).
std::tuple<Tensor, Tensor, Tensor> runs_of(const Tensor& s, const Tensor* perm, bool return_inverse, bool return_counts,
                                           at::IntArrayRef self_sizes) {
  const int64_t n = s.numel();
  const auto long_opts = s.options().dtype(at::kLong);
  if (n == 0)
    return {s, at::empty(return_inverse ? self_sizes : at::IntArrayRef{0}, long_opts), at::empty({0}, long_opts)};
  const Tensor starts = at::cat({at::ones({1}, s.options().dtype(at::kBool)), at::ne(s.slice(0, 1), s.slice(0, 0, n - 1))});
  const Tensor out = at::masked_select(s, starts);
  const Tensor group = run_elementwise_program({at::cumsum(starts, 0)}, "sub($0, 1)");
  Tensor inverse = at::empty({0}, long_opts), counts = at::empty({0}, long_opts);
  if (return_inverse)
    inverse = (perm ? at::empty({n}, long_opts).scatter_(0, *perm, group) : group).view(self_sizes);
  if (return_counts) counts = at::zeros({out.numel()}, long_opts).scatter_add_(0, group, at::ones({n}, long_opts));
  return {out, inverse, counts};
}

std::tuple<Tensor, Tensor, Tensor> mlu_unique2(const Tensor& self, bool /*sorted: always*/, bool return_inverse,
                                               bool return_counts) {
  OpScope op("aten::_unique2", self);
  auto [s, perm] = sort_along(op, self.reshape({-1}), 0, false);
  return runs_of(s, &perm, return_inverse, return_counts, self.sizes());
}

// _unique (torch.unique's older entry point, which index_fill's backward calls): _unique2 without
// counts (the inverse, when asked, has self's shape).
std::tuple<Tensor, Tensor> mlu_unique(const Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = mlu_unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

std::tuple<Tensor, Tensor, Tensor> mlu_unique_consecutive(const Tensor& self, bool return_inverse, bool return_counts,
                                                          std::optional<int64_t> dim) {
  OpScope op("aten::unique_consecutive", self);
  TORCH_CHECK_NOT_IMPLEMENTED(!dim.has_value() || self.dim() <= 1, op.name(),
                              ": unique_consecutive along a dim of an N-d tensor is not implemented on device mlu");
  return runs_of(self.reshape({-1}), nullptr, return_inverse, return_counts, self.sizes());
}

Tensor& mlu_randperm_out(c10::SymInt n_sym, std::optional<at::Generator> gen, Tensor& out) {
  OpScope op("aten::randperm", out);
  const int64_t n = n_sym.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(n >= 0, "randperm: n must be non-negative, got", n);
  // Every index n - 1 must be exact in a floating result: mantissa digits (with the hidden bit).
  const int digits = out.scalar_type() == at::kHalf       ? 11
                     : out.scalar_type() == at::kBFloat16 ? 8
                     : out.scalar_type() == at::kFloat    ? 24
                                                          : 53;
  TORCH_CHECK(!out.is_floating_point() || n <= (int64_t{1} << digits), "randperm: n = ", n,
              " is not exactly representable in ", out.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(out.scalar_type() != at::kBool && out.scalar_type() != at::kComplexFloat &&
                                  out.scalar_type() != at::kComplexDouble,
                              op.name(), ": dtype ", out.scalar_type(), " is not supported on device mlu");
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  Tensor keys = empty_on(op.device(), {n}, at::kInt);
  keys.random_(0, std::numeric_limits<int32_t>::max(), std::move(gen));
  out.copy_(std::get<1>(sort_along(op, keys, 0, false)));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("randperm.generator_out", TORCH_FN(mlu_randperm_out));
  m.impl("_unique2", TORCH_FN(mlu_unique2));
  m.impl("_unique", TORCH_FN(mlu_unique));
  m.impl("unique_consecutive", TORCH_FN(mlu_unique_consecutive));
  m.impl("sort.stable", TORCH_FN(mlu_sort_stable));
  m.impl("sort.values_stable", TORCH_FN(mlu_sort_values_stable));
  m.impl("topk", TORCH_FN(mlu_topk));
  m.impl("topk.values", TORCH_FN(mlu_topk_values));
  m.impl("kthvalue.values", TORCH_FN(mlu_kthvalue_values));
  m.impl("median", TORCH_FN(mlu_median));
  m.impl("median.dim_values", TORCH_FN(mlu_median_dim_values));
  m.impl("nanmedian", TORCH_FN(mlu_nanmedian));
  m.impl("nanmedian.dim_values", TORCH_FN(mlu_nanmedian_dim_values));
  m.impl("mode", TORCH_FN(mlu_mode));
  m.impl("mode.values", TORCH_FN(mlu_mode_values));
}

}  // namespace mlusim::bridge::ops
