#include "pool/pool_geometry.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace mlusim::mlu::nn {

std::int64_t PoolAxis::first_valid(std::int64_t o) const {
  std::int64_t start = o * s - p;
  while (start < 0) start += d;
  return start;
}

std::int64_t PoolAxis::avg_extent(std::int64_t o, bool include_pad) const {
  std::int64_t start = o * s - p;
  std::int64_t end = std::min(start + k, in + p);
  if (include_pad) return end - start;
  start = std::max<std::int64_t>(start, 0);
  end = std::min(end, in);
  return end - start;
}

Status pool_output_extent(const char* op, const char* axis, std::int64_t in, std::int64_t k, std::int64_t s,
                          std::int64_t p, std::int64_t d, bool ceil_mode, std::int64_t* out) {
  const std::string where = std::string(op) + ": " + axis + ": ";
  MLU_CHECK(k > 0 && s > 0 && d > 0, Status::kBadParam,
            where + "kernel " + std::to_string(k) + ", stride " + std::to_string(s) + " and dilation " +
                std::to_string(d) + " must be positive");
  MLU_CHECK(p >= 0 && p <= k / 2, Status::kBadParam,
            where + "padding " + std::to_string(p) + " must be in [0, kernel/2 = " + std::to_string(k / 2) + "]");
  // torch's pooling_output_shape: floor division (rounding toward -inf), ceil_mode adds stride-1.
  const std::int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;  // the last window must start inside input or left padding
  MLU_CHECK(o >= 1, Status::kBadParam,
            where + "output size " + std::to_string(o) + " is too small (input " + std::to_string(in) + ")");
  *out = o;
  return Status::kSuccess;
}

PoolViews make_pool_views(const std::vector<const TensorDesc*>& descs, const std::vector<const void*>& ptrs) {
  PoolViews v;
  for (std::size_t i = 0; i < descs.size(); ++i) {
    TensorView t = make_view(*descs[i], ptrs[i]);
    if (t.ndim == 3) {  // unbatched [C, H, W]: a unit batch dim in front
      for (int k = 3; k > 0; --k) t.dims[k] = t.dims[k - 1], t.strides[k] = t.strides[k - 1];
      t.dims[0] = 1, t.strides[0] = 0, t.ndim = 4;
    }
    v.views.push_back(t);
  }
  // The plane dims (N, C) are equal across the views (H, W differ): drop unit ones and merge N
  // into C where every view allows it.
  const std::int64_t n = v.views[0].dims[0], c = v.views[0].dims[1];
  bool merge = true;
  if (n > 1 && c > 1)
    for (const TensorView& t : v.views) merge = merge && t.strides[0] == t.strides[1] * c;
  for (TensorView& t : v.views) {
    if (!merge) continue;
    const std::int64_t stride = c == 1 && n > 1 ? t.strides[0] : t.strides[1];
    t.dims[1] = n * c, t.strides[1] = stride;
    for (int k = 0; k < 3; ++k) t.dims[k] = t.dims[k + 1], t.strides[k] = t.strides[k + 1];
    t.ndim = 3;
  }
  v.plane_dims = merge ? 1 : 2;
  v.planes = n * c;
  return v;
}

Status check_pool_tensor(const char* op, const char* name, const TensorDesc& d, const void* p) {
  MLU_RETURN_IF_ERROR(check_desc(&d, op, name));
  MLU_RETURN_IF_ERROR(check_dtype_in(d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  MLU_CHECK(d.ndim() == 3 || d.ndim() == 4, Status::kBadParam,
            std::string(op) + ": " + name + " " + d.str() + " must be [N,C,H,W] or [C,H,W]");
  MLU_CHECK(d.layout() != Layout::kNHWC, Status::kNotSupported,
            std::string(op) + ": " + name + " has an NHWC descriptor; pass NCHW dims (channels-last strides work)");
  return check_ptr(p, d, op, name);
}

Status check_same_planes(const char* op, const TensorDesc& a, const char* an, const TensorDesc& b, const char* bn) {
  bool same = a.ndim() == b.ndim();
  for (int i = 0; same && i < a.ndim() - 2; ++i) same = a.dim(i) == b.dim(i);
  MLU_CHECK(same, Status::kBadParam,
            std::string(op) + ": " + an + " " + a.str() + " and " + bn + " " + b.str() + " differ in their N, C dims");
  return Status::kSuccess;
}

std::int64_t PoolTiling::plane_blocks() const { return planes / last_plane_dim * ((last_plane_dim + pb - 1) / pb); }

PoolTiling::Tile PoolTiling::tile(std::int64_t t) const {
  const std::int64_t bands = row_bands();
  const std::int64_t band = t % bands, block = t / bands;
  const std::int64_t per_row = (last_plane_dim + pb - 1) / pb;
  const std::int64_t outer = block / per_row, inner = block % per_row * pb;
  Tile r;
  r.plane0 = outer * last_plane_dim + inner;
  r.planes = std::min(pb, last_plane_dim - inner);
  r.oh0 = band * ohb;
  r.rows = std::min(ohb, h.out - r.oh0);
  return r;
}

void PoolTiling::plane_box(const PoolViews& v, const Tile& t, Box* b) const {
  std::int64_t flat = t.plane0;
  for (int i = v.plane_dims - 1; i >= 0; --i) {
    const std::int64_t d = v.views[0].dims[i];
    b->start[i] = flat % d;
    b->extent[i] = 1;
    flat /= d;
  }
  b->extent[v.plane_dims - 1] = t.planes;
}

PoolTiling::GradTile PoolTiling::grad_tile(std::int64_t t) const {
  const std::int64_t bands = (h.in + hb - 1) / hb;
  GradTile g;
  g.tile = tile(t / bands * row_bands());  // planes of that block
  g.h0 = t % bands * hb;
  g.h1 = std::min(h.in, g.h0 + hb);
  // Output rows whose window [o*s - p, o*s - p + (k-1)*d] meets [h0, h1).
  const std::int64_t lo_num = g.h0 + h.p - (h.k - 1) * h.d;
  const std::int64_t lo = lo_num <= 0 ? 0 : (lo_num + h.s - 1) / h.s;
  const std::int64_t hi = std::min(h.out, (g.h1 - 1 + h.p) / h.s + 1);
  g.tile.oh0 = std::min(lo, h.out);
  g.tile.rows = std::max<std::int64_t>(0, hi - g.tile.oh0);
  return g;
}

bool plan_pool_tiles(PoolTiling* t, std::size_t nram_bytes, std::uint32_t cores, PoolFootprint footprint,
                     std::int64_t tiles_per_core) {
  // Columns cover the windows and the whole input row (the backward writes every column).
  t->wq = (std::max(t->w.padded_span(t->w.out), t->w.in + t->w.p) + t->w.s - 1) / t->w.s;
  t->wpitch = t->wq * t->w.s;
  auto set_rows = [&](std::int64_t ohb) {
    t->ohb = ohb;
    const std::int64_t span =
        ohb == t->h.out ? std::max(t->h.padded_span(ohb), t->h.in + t->h.p) : t->h.padded_span(ohb);
    t->hq = (span + t->h.s - 1) / t->h.s;
  };
  auto fits = [&](std::int64_t pb, std::int64_t ohb) {
    t->pb = pb;
    set_rows(ohb);
    return footprint(*t) <= nram_bytes;
  };
  const bool whole_planes = fits(1, t->h.out);
  const bool enough_planes = t->planes >= tiles_per_core * static_cast<std::int64_t>(cores);
  // Plane mode: whole planes, as many as fit, but leave a few tiles per core.
  if (whole_planes && (tiles_per_core <= 0 || enough_planes || t->h.out < 16)) {
    const std::int64_t want = std::max<std::int64_t>(1, t->planes / (std::int64_t{4} * cores));
    std::int64_t pb = 1;
    while (pb * 2 <= std::min(want, t->last_plane_dim) && fits(pb * 2, t->h.out)) pb *= 2;
    fits(pb, t->h.out);
    return true;
  }
  // Band mode: one plane, the most output rows that fit.
  std::int64_t lo = 0, hi = t->h.out;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (fits(1, mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0) return false;
  if (tiles_per_core > 0) {
    // Equal bands (the last one is not a sliver computed at full size), enough of them to give
    // every core tiles_per_core pipeline steps while bands keep >= 4 rows.
    std::int64_t bands = (t->h.out + lo - 1) / lo;
    const std::int64_t want = (tiles_per_core * cores + t->planes - 1) / t->planes;
    bands = std::max(bands, std::min(want, std::max<std::int64_t>(1, t->h.out / 4)));
    lo = (t->h.out + bands - 1) / bands;
  }
  fits(1, lo);
  return true;
}

bool plan_pool_grad_tiles(PoolTiling* t, std::size_t nram_bytes, std::uint32_t cores, PoolFootprint footprint) {
  if (!plan_pool_tiles(t, nram_bytes, cores, footprint)) return false;
  if (t->ohb == t->h.out) {
    t->hb = t->h.in;
    return true;
  }
  // Input rows [h0, h0 + hb) need at most (hb - 1 + (k-1)*d) / s + 2 output rows.
  t->hb = (t->ohb - 2) * t->h.s - (t->h.k - 1) * t->h.d + 1;
  return t->hb >= 1;
}

}  // namespace mlusim::mlu::nn
