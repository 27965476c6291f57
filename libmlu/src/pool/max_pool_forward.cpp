// max_pool2d_forward: one BLOCK kernel over pooling tiles (pool_geometry.h), fp32 on the VFU.
//
// Torch's CPU kernel scans each window row by row (kh outer, kw inner), keeping the first strict
// maximum, or the latest NaN, starting from -inf at the window's first in-bounds tap. The kernel
// does the same separably and gets identical indices: first along W (per input row, the best tap
// over kw), then along H (the best row over kh). Each stage is, per window offset,
//   take = (cand > best) | (cand != cand); best = take ? cand : best; index = take ? cand_idx : index
// as flat VFU operations over the whole tile (taps 1..k-1 only: see kernel()). Padding holds -inf,
// which never wins a strict comparison, so a window of -inf (or padding) keeps the first in-bounds
// tap, as torch. Strided windows: the band's column phases are split first (pool_band.h
// extract_phase: a select and a VFU matmul, two streaming passes), so every offset's candidates
// are a contiguous run; that split returns a -0 input as +0, so a window whose maximum is a -0
// gives +0 (same index). Indices are computed in fp32 (exact below 2^24 = H*W limit) and cast to
// int64 (or int32) for the output; without indices the index work is skipped.
// Channels-last x, y and indices take the NHWC kernel instead (max_pool_nhwc.h).
// Tiles are equal row bands of planes (kPoolTilesPerCore pipeline steps per core where the planes are
// few), triple-buffered by run_pipelined; the pad fill of a band buffer is redone only for tiles
// that reach the top or bottom padding.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "pool/max_pool_nhwc.h"
#include "pool/pool_band.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using namespace nn::pool;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;

constexpr DType kF32 = DType::kFloat32;

// Slack elements after arrays that are read at a constant shift.
std::int64_t band_slack(const PoolTiling& t) { return std::max<std::int64_t>(t.w.s, (t.w.k - 1) * t.w.d + 1); }
std::int64_t phase_slack(const PoolTiling& t) { return (t.w.k - 1) * t.w.d / t.w.s + 1; }
std::int64_t row_slack(const PoolTiling& t) { return (t.h.k - 1) * t.h.d / t.h.s * t.wq + 1; }

struct Sizes {
  std::size_t band, phase, rows_stage, out;  // elements
};
Sizes sizes(const PoolTiling& t) {
  const BandShape bs = band_shape(t, t.pb);
  return {static_cast<std::size_t>(bs.band_elems() + band_slack(t)),
          static_cast<std::size_t>(bs.phase_elems() + phase_slack(t)),
          static_cast<std::size_t>(bs.phase_elems() + row_slack(t)), static_cast<std::size_t>(bs.out_elems())};
}

std::size_t footprint(const PoolTiling& t) {
  const Sizes z = sizes(t);
  const bool split = t.w.s > 1;
  const std::size_t n = static_cast<std::size_t>(band_shape(t, t.pb).phase_elems());
  const auto kw1 = static_cast<std::size_t>(t.w.k - 1), kh1 = static_cast<std::size_t>(t.h.k - 1);
  std::size_t bytes = 3 * (align128(z.band * 4) + align128(z.out * 4) + align128(z.out * 8));  // per set
  bytes += align128(z.band * 4);                                                               // fp32 band
  if (split)
    bytes += 2 * align128(z.band * 4) + align128(z.band) + static_cast<std::size_t>(t.w.s) * align128(z.phase * 4) +
             align128(static_cast<std::size_t>(t.w.s) * 4);
  bytes += 2 * align128(z.rows_stage * 4) + 2 * align128(n * 4) + align128(n);  // W stage: hv, hc, t1, t2, take
  bytes += (2 + kw1) * align128(n * 4);                                         // col_base, col_first, cand_col
  bytes += (3 + kh1) * align128(z.out * 4);                                     // vi, cand_idx, fv, row_rel
  bytes += align128(static_cast<std::size_t>(std::max({t.wq, t.hq, t.w.s})) * 4) * 2;  // ones, row pattern
  return bytes;
}

struct Args {
  PoolViews pv;  // x, y, indices (when present)
  bool has_indices = false;
  PoolTiling t;
};

// Per tile: W stage over the band's rows (input values -> best tap of each window row, with its
// column), then H stage over output rows (best row of each window, flat index). Each stage starts
// from tap 0 itself instead of (-inf, first in-bounds tap): after tap 0 torch's state is exactly
// (value of tap 0, first in-bounds index) -- a tap-0 value that is not taken is -inf, and the
// first in-bounds tap is tap 0 whenever tap 0 is in bounds -- so only taps 1..k-1 run the update.
// Candidate columns and row terms are per-task constants; the row terms are relative to the tile's
// first padded row, whose offset is added once at the end.
void kernel(const Args& a) {
  const PoolTiling& t = a.t;
  const TensorView &x = a.pv.views[0], &y = a.pv.views[1];
  const BandShape full = band_shape(t, t.pb);
  const Sizes z = sizes(t);
  const bool split = t.w.s > 1;
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr raw[kPipelineBuffers], yo[kPipelineBuffers], io[kPipelineBuffers];
  bool filled[kPipelineBuffers] = {false, false, false};
  for (int k = 0; k < kPipelineBuffers; ++k)
    raw[k] = alloc(z.band * 4), yo[k] = alloc(z.out * 4), io[k] = alloc(z.out * 8);
  const Addr band = alloc(z.band * 4);
  Addr sel{}, zeros{}, mask0{}, e0{};
  std::vector<Addr> phases;
  if (split) {
    sel = alloc(z.band * 4), zeros = alloc(z.band * 4), mask0 = alloc(z.band), e0 = alloc(t.w.s * 4);
    for (std::int64_t p = 0; p < t.w.s; ++p) phases.push_back(alloc(z.phase * 4));
  }
  const std::size_t n_rows = static_cast<std::size_t>(full.phase_elems());
  const Addr hv = alloc(z.rows_stage * 4), hc = alloc(z.rows_stage * 4);
  const Addr t1 = alloc(n_rows * 4), t2 = alloc(n_rows * 4), take = alloc(n_rows);
  const Addr col_base = alloc(n_rows * 4), col_first = alloc(n_rows * 4);
  std::vector<Addr> cand_col(static_cast<std::size_t>(t.w.k)), row_rel(static_cast<std::size_t>(t.h.k));
  for (std::int64_t kw = 1; kw < t.w.k; ++kw) cand_col[kw] = alloc(n_rows * 4);
  const Addr vi = alloc(z.out * 4), cand_idx = alloc(z.out * 4), fv = alloc(z.out * 4);
  for (std::int64_t kh = 1; kh < t.h.k; ++kh) row_rel[kh] = alloc(z.out * 4);
  const std::size_t ones_n = static_cast<std::size_t>(std::max({t.wq, t.hq, t.w.s}));
  const Addr ones = alloc(ones_n * 4), row_pattern = alloc(ones_n * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);

  // Per-task patterns: column of each candidate (tap kw), first in-bounds column of each window.
  const auto hq = static_cast<std::size_t>(t.hq), wq = static_cast<std::size_t>(t.wq);
  std::vector<float> cb(wq), cf(wq);
  for (std::int64_t j = 0; j < t.wq; ++j) cb[j] = float(j * t.w.s - t.w.p), cf[j] = float(t.w.first_valid(j));
  store_scalars(col_base, cb);
  store_scalars(col_first, cf);
  const auto rows_all = static_cast<std::size_t>(full.rows());
  replicate(col_base, wq * 4, rows_all);
  replicate(col_first, wq * 4, rows_all);
  for (std::int64_t kw = 1; kw < t.w.k; ++kw)
    dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, cand_col[kw], col_base, double(kw * t.w.d), n_rows);
  if (split) {
    dev::vec_fill(kF32, zeros, 0.0, z.band);
    periodic_mask(mask0, t.w.s, 0, static_cast<std::int64_t>(z.band));
    fill_e0(e0, t.w.s);
  }
  // A [pb][hq][wq] array whose row i holds f(i), from hq scalar stores and a K=1 VFU matmul.
  auto row_array = [&](Addr dst, auto&& f) {
    std::vector<float> r(hq);
    for (std::size_t i = 0; i < hq; ++i) r[i] = float(f(static_cast<std::int64_t>(i)));
    store_scalars(row_pattern, r);
    tile::broadcast_rows(dst, row_pattern, ones, hq, wq, false);
    replicate(dst, hq * wq * 4, static_cast<std::size_t>(t.pb));
  };
  // Row term of tap kh, relative to the tile's first padded row: (i*sh + kh*dh) * W.
  for (std::int64_t kh = 1; kh < t.h.k; ++kh)
    row_array(row_rel[kh], [&](std::int64_t i) { return (i * t.h.s + kh * t.h.d) * t.w.in; });
  // First in-bounds row of each window, relative likewise: i*sh unless the window starts in the
  // top padding (only tiles whose first padded row is < 0: rebuilt when such a tile comes).
  std::int64_t fv_for = -2;  // -1: the in-bounds pattern
  auto build_fv = [&](const PoolTiling::Tile& tile) {
    const std::int64_t base = tile.oh0 * t.h.s - t.h.p;
    const std::int64_t key = base >= 0 ? -1 : tile.oh0;
    if (key == fv_for) return;
    fv_for = key;
    row_array(fv, [&](std::int64_t i) { return (t.h.first_valid(tile.oh0 + i) - base) * t.w.in; });
  };
  // torch's rule, one tap over n elements (max_pool_take).
  const MaxTakeScratch scratch{t1, t2, take};
  auto update = [&](Addr best_out, Addr idx_out, Addr best_in, Addr idx_in, Addr cand, Addr cidx, std::size_t n) {
    max_pool_take(scratch, n, best_out, best_in, cand, a.has_indices, idx_out, idx_in, cidx);
  };

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  auto tile_of = [&](std::size_t s) { return t.tile(static_cast<std::int64_t>(range.first + s)); };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const PoolTiling::Tile tile = tile_of(s);
        const bool fill = !filled[k] || tile_touches_row_padding(t, tile);
        filled[k] = true;
        load_band_async(t, a.pv, x, tile, raw[k], -INFINITY, fill);
      },
      [&](std::size_t s, int k) {
        const PoolTiling::Tile tile = tile_of(s);
        const BandShape bs = band_shape(t, tile.planes);
        const auto nb = static_cast<std::size_t>(bs.band_elems()), nr = static_cast<std::size_t>(bs.phase_elems());
        const auto no = static_cast<std::size_t>(bs.out_elems());
        Addr xb = raw[k];
        if (x.dtype != kF32) {
          dev::vec_cast(kF32, band, x.dtype, raw[k], nb);
          xb = band;
        }
        if (split)
          for (std::int64_t p = 0; p < t.w.s; ++p)
            extract_phase(phases[p], xb, p, t.w.s, static_cast<std::int64_t>(nb), mask0, zeros, sel, e0);
        // Candidates of tap kw for every window row: a contiguous run of its column phase.
        auto tap = [&](std::int64_t kw) {
          const std::int64_t off = kw * t.w.d;
          return (split ? phases[off % t.w.s] : xb).offset(off / t.w.s * 4);
        };
        // Along W: the best tap of each window row, and its column.
        if (t.w.k == 1) {
          dev::vec_unary(VecUnaryOp::kCopy, kF32, hv, tap(0), nr);
          if (a.has_indices) dev::vec_unary(VecUnaryOp::kCopy, kF32, hc, col_first, nr);
        }
        for (std::int64_t kw = 1; kw < t.w.k; ++kw)
          update(hv, hc, kw == 1 ? tap(0) : hv, kw == 1 ? col_first : hc, tap(kw), cand_col[kw], nr);
        // Along H: the best row of each window; index = row * W + column. Row offset kh*dh is row
        // block (kh*dh) % sh, shifted by (kh*dh) / sh rows. Values land in the output buffer.
        auto at = [&](std::int64_t kh) {
          const std::int64_t off = kh * t.h.d;
          return ((off % t.h.s) * bs.pb * bs.hq * bs.wq + off / t.h.s * bs.wq) * 4;
        };
        if (a.has_indices) build_fv(tile);
        const Addr vv = yo[k];
        if (a.has_indices) dev::vec_binary(VecBinaryOp::kAdd, kF32, vi, hc.offset(at(0)), fv, no);
        if (t.h.k == 1) dev::vec_unary(VecUnaryOp::kCopy, kF32, vv, hv.offset(at(0)), no);
        for (std::int64_t kh = 1; kh < t.h.k; ++kh) {
          if (a.has_indices)
            dev::vec_binary(VecBinaryOp::kAdd, kF32, cand_idx, hc.offset(at(kh)), row_rel[kh], no);
          update(vv, vi, kh == 1 ? hv.offset(at(0)) : vv, vi, hv.offset(at(kh)), cand_idx, no);
        }
        if (a.has_indices) {
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, vi, vi, double((tile.oh0 * t.h.s - t.h.p) * t.w.in), no);
          dev::vec_cast(a.pv.views[2].dtype, io[k], kF32, vi, no);
        }
      },
      [&](std::size_t s, int k) {
        const PoolTiling::Tile tile = tile_of(s);
        store_out_async(t, a.pv, y, tile, yo[k]);
        if (a.has_indices) store_out_async(t, a.pv, a.pv.views[2], tile, io[k], true);
      });
}

}  // namespace

Status pool2d_output_size(const Pool2dParams& p, std::int64_t in_h, std::int64_t in_w, std::int64_t* out_h,
                          std::int64_t* out_w) {
  const char* op = "pool2d_output_size";
  MLU_CHECK(out_h != nullptr && out_w != nullptr, Status::kBadParam, std::string(op) + ": output pointer is null");
  MLU_RETURN_IF_ERROR(
      nn::pool_output_extent(op, "H", in_h, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode, out_h));
  return nn::pool_output_extent(op, "W", in_w, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode, out_w);
}

Status max_pool2d_forward(Handle* h, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                          void* y_ptr, const TensorDesc* indices, void* indices_ptr) {
  using namespace nn;
  const char* op = "max_pool2d_forward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, "x", x, x_ptr));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, "y", y, y_ptr));
  MLU_RETURN_IF_ERROR(check_same_planes(op, x, "x", y, "y"));
  const int nd = x.ndim();
  std::int64_t oh = 0, ow = 0;
  MLU_RETURN_IF_ERROR(
      pool_output_extent(op, "H", x.dim(nd - 2), p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode, &oh));
  MLU_RETURN_IF_ERROR(
      pool_output_extent(op, "W", x.dim(nd - 1), p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode, &ow));
  MLU_CHECK(
      y.dim(nd - 2) == oh && y.dim(nd - 1) == ow, Status::kBadParam,
      std::string(op) + ": y " + y.str() + " must be " + std::to_string(oh) + "x" + std::to_string(ow) + " spatially");
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast dim");
  if (indices != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(indices, op, "indices"));
    MLU_RETURN_IF_ERROR(check_dtype_in(*indices, {DType::kInt64, DType::kInt32}, op, "indices"));
    MLU_RETURN_IF_ERROR(check_same_shape(y, *indices, op, "y", "indices"));
    MLU_CHECK(writable(*indices), Status::kBadParam, std::string(op) + ": indices has a broadcast dim");
    MLU_RETURN_IF_ERROR(check_ptr(indices_ptr, *indices, op, "indices"));
  }
  MLU_CHECK(x.dim(nd - 2) * x.dim(nd - 1) <= (std::int64_t{1} << 24), Status::kNotSupported,
            std::string(op) + ": planes of more than 2^24 elements (indices are computed in fp32)");
  if (y.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * x.element_size() +
                        static_cast<std::uint64_t>(y.numel()) * y.element_size();
  if (indices) bytes += static_cast<std::uint64_t>(indices->numel()) * indices->element_size();
  if (pool::max_pool_nhwc_applies(x, y, indices)) {  // channels-last operands: channels as the vector dim
    MLU_RETURN_IF_ERROR(pool::max_pool_nhwc_forward(*h, op, p, x, x_ptr, y, y_ptr, indices, indices_ptr, oh, ow));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  Args args;
  args.has_indices = indices != nullptr;
  std::vector<const TensorDesc*> descs{&x, &y};
  std::vector<const void*> ptrs{x_ptr, y_ptr};
  if (indices) descs.push_back(indices), ptrs.push_back(indices_ptr);
  args.pv = make_pool_views(descs, ptrs);
  PoolTiling& t = args.t;
  t.h = {x.dim(nd - 2), oh, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h};
  t.w = {x.dim(nd - 1), ow, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w};
  t.planes = args.pv.planes;
  t.last_plane_dim = args.pv.views[0].dims[args.pv.plane_dims - 1];
  MLU_CHECK(plan_pool_tiles(&t, h->nram_bytes(), h->total_cores(), footprint, kPoolTilesPerCore), Status::kNotSupported,
            std::string(op) + ": NRAM too small for one output row of " + x.str());
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(t.tiles())), cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
