#include "norm/batch_norm_split.h"

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "softmax/box_copy.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu::nn {

using sim::Addr;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;
using tile::kF32;

namespace {

// Below this many values per busy task the unsplit kernel is short (32 KiB of fp32 in under a
// microsecond at a core's IO-DMA rate), and the split's two extra launches cost as much.
constexpr std::int64_t kMinTaskElements = 8192;
// Channels a slice's tile should span: 64 fp32 channels are 256-byte DMA segments (channels-last
// rows), against 4-byte ones when a whole-reduction tile fits only a column or two.
constexpr std::int64_t kSliceColumns = 64;
// Bounds on the split: slices of fewer values gain nothing, more slices only grow the partials.
constexpr std::int64_t kMinSliceRows = 8, kMaxSlices = 1024;

}  // namespace

std::int64_t choose_slices(const ReductionTiling& t, std::uint32_t cores, std::size_t nram_bytes,
                           const NramFootprint& footprint) {
  const std::int64_t groups = t.groups(), inner_last = t.dims[static_cast<std::size_t>(t.ndim - 1)];
  const std::int64_t width = std::min(inner_last, kSliceColumns);
  const bool narrow = t.ic < width;
  if (groups <= 0 || (groups >= static_cast<std::int64_t>(cores) && !narrow) || t.ndim >= kMaxViewDims) return 1;
  if (t.slices() * t.reduced() / std::min<std::int64_t>(groups, cores) < kMinTaskElements) return 1;
  const std::int64_t d = t.dims[static_cast<std::size_t>(t.r_begin)];
  // Indices of D whose values (rest = reduced / D each: the other reduced dims) fit a tile of
  // `width` columns (footprint grows with rows).
  const std::int64_t rest = t.reduced() / d;
  std::int64_t lo = 0, hi = d;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (footprint({1, static_cast<std::size_t>(mid * rest), static_cast<std::size_t>(width)}) <= nram_bytes)
      lo = mid;
    else
      hi = mid - 1;
  }
  auto up = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const std::int64_t fit = lo > 0 ? up(d, lo) : 1;  // 0: not even one index fits; slices run multi-pass
  const std::int64_t groups_wide = t.slices() / inner_last * up(inner_last, width);
  const std::int64_t want = std::max({std::int64_t{2}, fit, up(static_cast<std::int64_t>(cores), groups_wide)});
  for (std::int64_t s = want; s <= std::min(kMaxSlices, d) && d / s * rest >= kMinSliceRows; ++s)
    if (d % s == 0) return s;
  return 1;
}

std::pair<int, int> split_first_reduced(const std::vector<TensorView*>& views, int r_begin, int i_begin,
                                        std::int64_t slices) {
  const auto r = static_cast<std::size_t>(r_begin);
  for (TensorView* v : views) {
    for (int k = v->ndim; k > r_begin; --k) {
      v->dims[static_cast<std::size_t>(k)] = v->dims[static_cast<std::size_t>(k - 1)];
      v->strides[static_cast<std::size_t>(k)] = v->strides[static_cast<std::size_t>(k - 1)];
    }
    ++v->ndim;
    v->dims[r + 1] = v->dims[r] / slices;  // the slice's rows, at the dim's stride
    v->dims[r] = slices;
    v->strides[r] = v->strides[r + 1] * v->dims[r + 1];
  }
  return {r_begin + 1, i_begin + 1};
}

Status split_and_plan(Handle& h, const char* op, const TensorDesc& x, const std::vector<TensorView*>& views,
                      std::int64_t slices, const NramFootprint& footprint, int* r_begin, int* i_begin,
                      ReductionTiling* tiling) {
  std::tie(*r_begin, *i_begin) = split_first_reduced(views, *r_begin, *i_begin, slices);
  const auto t = plan_batch_norm_tiles(h, *views.front(), *r_begin, *i_begin, footprint);
  MLU_CHECK(t.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  *tiling = *t;
  return Status::kSuccess;
}

TensorDesc fp32_channels(std::int64_t channels) {
  TensorDesc d;
  d.set(DType::kFloat32, {channels});
  return d;
}

void make_partial(TensorView* v, int split_r_begin, std::int64_t channels) {
  v->strides[static_cast<std::size_t>(split_r_begin - 1)] = channels;
}

std::size_t split_workspace_bytes(std::int64_t slices, std::int64_t channels) {
  return static_cast<std::size_t>(2 * slices + 2) * static_cast<std::size_t>(channels) * 4;
}

std::optional<ReductionTiling> plan_batch_norm_tiles(Handle& h, const TensorView& x, int r_begin, int i_begin,
                                                     const NramFootprint& footprint) {
  return plan_reduction(x, r_begin, i_begin, h.nram_bytes(), h.total_cores(),
                        target_tile_elements(x.numel(), h.total_cores()), footprint);
}

std::size_t split_workspace_for(Handle& h, const TensorDesc& x, const BatchNormShape& s,
                                const NramFootprint& footprint) {
  TensorView xv = permuted_view(x, nullptr, s);
  const auto [r_begin, i_begin] = group_batch_norm_views({&xv}, s);
  const auto tiling = plan_batch_norm_tiles(h, xv, r_begin, i_begin, footprint);
  const std::int64_t slices = tiling ? choose_slices(*tiling, h.total_cores(), h.nram_bytes(), footprint) : 1;
  return slices > 1 ? split_workspace_bytes(slices, s.channels) : 0;
}

Status split_workspace_query(Handle* h, const char* op, const TensorDesc& x, const NramFootprint& footprint,
                             std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(op) + ": bytes is null");
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  BatchNormShape s;
  MLU_RETURN_IF_ERROR(check_batch_norm_input(op, x, &s));
  *bytes = x.numel() == 0 ? 0 : split_workspace_for(*h, x, s, footprint);
  return Status::kSuccess;
}

namespace {

// The kernel runs after the launch returns: it keeps views, not the caller's descriptors.
struct CombineJob {
  CombineForward c;
  TensorView running_mean, running_var, save_mean, save_invstd;
  bool has_running_mean = false, has_running_var = false, has_save_mean = false, has_save_invstd = false;
  std::size_t block = 0;  // channels per block
};

void combine_kernel(const CombineJob& j) {
  const CombineForward& c = j.c;
  const auto s_n = static_cast<std::size_t>(c.slices);
  const std::size_t nb = j.block;
  const Addr m = dev::alloc(Space::kNram, s_n * nb * 4), v = dev::alloc(Space::kNram, s_n * nb * 4);
  const Addr ones = dev::alloc(Space::kNram, s_n * 4);
  const Addr mean = dev::alloc(Space::kNram, nb * 4), neg = dev::alloc(Space::kNram, nb * 4);
  const Addr var = dev::alloc(Space::kNram, nb * 4), out = dev::alloc(Space::kNram, nb * 4);
  const Addr rm = dev::alloc(Space::kNram, nb * 4), rv = dev::alloc(Space::kNram, nb * 4);
  const Addr out2 = dev::alloc(Space::kNram, nb * 4), tmp = dev::alloc(Space::kNram, nb * 4);
  dev::vec_fill(kF32, ones, 1.0, s_n);
  const double inv_s = 1.0 / static_cast<double>(c.slices);
  const auto channels = static_cast<std::size_t>(c.channels);
  const std::size_t blocks = ceil_div(channels, nb);
  for (std::size_t b = dev::task_id(); b < blocks; b += dev::task_dim()) {
    const std::size_t c0 = b * nb, n = std::min(nb, channels - c0);
    const dev::CopyShape rows{n * 4, s_n, static_cast<std::int64_t>(n * 4), static_cast<std::int64_t>(channels * 4)};
    dev::memcpy_strided_async(m, Addr{Space::kGdram, c.partial_mean + c0 * 4}, rows, dev::Dir::kGdram2Nram);
    dev::memcpy_strided_async(v, Addr{Space::kGdram, c.partial_var + c0 * 4}, rows, dev::Dir::kGdram2Nram);
    Box box;
    box.start[0] = static_cast<std::int64_t>(c0), box.extent[0] = static_cast<std::int64_t>(n);
    if (j.has_running_mean) load_f32_async(j.running_mean, box, rm, n);
    if (j.has_running_var) load_f32_async(j.running_var, box, rv, n);
    dev::sync_io();
    tile::sum_cols(mean, ones, m, s_n, n, false);
    dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, mean, mean, inv_s, n);
    dev::vec_unary(VecUnaryOp::kNeg, kF32, neg, mean, n);
    tile::broadcast_cols(m, ones, neg, s_n, n, true);  // m_s - mean
    dev::vec_binary(VecBinaryOp::kMul, kF32, m, m, m, s_n * n);
    tile::sum_cols(var, ones, m, s_n, n, false);
    tile::sum_cols(var, ones, v, s_n, n, true);
    dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, var, var, inv_s, n);
    dev::memcpy_async(Addr{Space::kGdram, c.total_mean + c0 * 4}, mean, n * 4, dev::Dir::kNram2Gdram);
    dev::memcpy_async(Addr{Space::kGdram, c.total_var + c0 * 4}, var, n * 4, dev::Dir::kNram2Gdram);
    if (j.has_save_mean) {
      dev::vec_unary(VecUnaryOp::kCopy, kF32, out, mean, n);
      store_f32_async(j.save_mean, box, out, n);
    }
    if (j.has_save_invstd) {
      dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, out2, var, c.eps, n);
      dev::vec_unary(VecUnaryOp::kRsqrt, kF32, out2, out2, n);
      store_f32_async(j.save_invstd, box, out2, n);
    }
    if (j.has_running_mean) {
      widen_f32(j.running_mean.dtype, rm, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, rm, rm, 1 - c.momentum, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg, mean, c.momentum, n);
      dev::vec_binary(VecBinaryOp::kAdd, kF32, rm, rm, neg, n);
      store_f32_async(j.running_mean, box, rm, n);
    }
    if (j.has_running_var) {  // unbiased: var * M / (M - 1) (M = 1: NaN, as torch's 0/0)
      const double unbias = static_cast<double>(c.m) / static_cast<double>(c.m - 1);
      widen_f32(j.running_var.dtype, rv, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, rv, rv, 1 - c.momentum, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, tmp, var, c.momentum * unbias, n);
      dev::vec_binary(VecBinaryOp::kAdd, kF32, rv, rv, tmp, n);
      store_f32_async(j.running_var, box, rv, n);
    }
    dev::sync_io();
  }
}

}  // namespace

Status launch_combine_forward(Handle& h, const char* name, const CombineForward& c) {
  auto job = std::make_shared<CombineJob>();
  job->c = c;
  job->c.running_mean = job->c.running_var = job->c.save_mean = job->c.save_invstd = nullptr;
  if ((job->has_running_mean = c.running_mean != nullptr)) job->running_mean = make_view(*c.running_mean, c.running_mean_ptr);
  if ((job->has_running_var = c.running_var != nullptr)) job->running_var = make_view(*c.running_var, c.running_var_ptr);
  if ((job->has_save_mean = c.save_mean != nullptr)) job->save_mean = make_view(*c.save_mean, c.save_mean_ptr);
  if ((job->has_save_invstd = c.save_invstd != nullptr)) job->save_invstd = make_view(*c.save_invstd, c.save_invstd_ptr);
  // About one block per core, within half of NRAM: the two [S, block] partial tiles and ten
  // [block] vectors (S <= 1024: at least 38 channels per block in mlu370-x4's 640 KiB).
  const auto channels = static_cast<std::size_t>(c.channels), slices = static_cast<std::size_t>(c.slices);
  const std::size_t fit = std::max<std::size_t>(1, h.nram_bytes() / 2 / (4 * (2 * slices + 10)));
  job->block = std::min(fit, ceil_div(channels, static_cast<std::size_t>(h.total_cores())));
  return launch(
      h, name, [job] { combine_kernel(*job); }, block_dim(h, ceil_div(channels, job->block)), cnrtFuncTypeBlock);
}

}  // namespace mlusim::mlu::nn
