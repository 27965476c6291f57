#include "pool/pool_grad.h"

#include <algorithm>

namespace mlusim::mlu::nn::pool {

using sim::DType;
using sim::VecBinaryOp;

std::int64_t grad_block_elems(const PoolTiling& t) {
  const BandShape bs = band_shape(t, t.pb);
  return bs.out_elems() + (t.h.k - 1) * t.h.d / t.h.s * t.wq + (t.w.k - 1) * t.w.d / t.w.s + 1;
}

void load_out_band_async(const PoolTiling& t, const PoolViews& pv, const TensorView& v, const PoolTiling::Tile& tile,
                         Addr raw) {
  const BandShape bs = band_shape(t, tile.planes);
  // Zero bytes: int64 has no VFU fill, so fill its bytes as twice as many int32 zeros.
  const std::size_t es = v.elem_size();
  dev::vec_fill(es == 8 ? DType::kInt32 : v.dtype, raw, 0.0,
                static_cast<std::size_t>(bs.out_elems()) * (es == 8 ? 2 : 1));
  if (tile.rows == 0) return;
  const int hd = pv.plane_dims, wd = pv.plane_dims + 1;
  Box b;
  t.plane_box(pv, tile, &b);
  b.start[hd] = tile.oh0, b.extent[hd] = tile.rows;
  b.start[wd] = 0, b.extent[wd] = t.w.out;
  NramStrides ns{};
  ns[hd - 1] = bs.hq * bs.wq;
  ns[hd] = bs.wq;
  ns[wd] = 1;
  load_box_async(v, b, raw, ns);
}

void add_contribution(const PoolTiling& t, const BandShape& bs, Addr grad, Addr contribution, std::int64_t kh,
                      std::int64_t kw) {
  const std::int64_t dh = kh * t.h.d, dw = kw * t.w.d;
  const std::int64_t block = (dh % t.h.s) * t.w.s + dw % t.w.s;
  const std::int64_t at = block * grad_block_elems(t) + dh / t.h.s * bs.wq + dw / t.w.s;
  const Addr dst = grad.offset(at * 4);
  const auto n = static_cast<std::size_t>(bs.out_elems());
  dev::vec_binary(VecBinaryOp::kAdd, DType::kFloat32, dst, dst, contribution, n);
}

void store_grad_async(const PoolTiling& t, const PoolViews& pv, const TensorView& dx, const PoolTiling::GradTile& g,
                      Addr grad, Addr rows, const std::vector<Addr>& masks, Addr ones, Addr scratch, Addr zeros,
                      std::size_t zero_bytes) {
  const PoolTiling::Tile& tile = g.tile;
  const BandShape bs = band_shape(t, tile.planes);
  const std::int64_t block = grad_block_elems(t), per_phase = bs.pb * bs.hq * bs.wpitch();
  for (std::int64_t r = 0; r < t.h.s; ++r) {
    std::vector<Addr> phases;
    for (std::int64_t c = 0; c < t.w.s; ++c) phases.push_back(grad.offset((r * t.w.s + c) * block * 4));
    const Addr dst = rows.offset(r * per_phase * 4);
    if (t.w.s == 1)
      dev::vec_unary(sim::VecUnaryOp::kCopy, DType::kFloat32, dst, phases[0], static_cast<std::size_t>(bs.out_elems()));
    else
      interleave_phases(dst, phases, bs.out_elems(), t.w.s, masks, ones, scratch);
  }
  const std::size_t all = static_cast<std::size_t>(t.h.s * per_phase);
  if (dx.dtype != DType::kFloat32) dev::vec_cast(dx.dtype, rows, DType::kFloat32, rows, all);
  const int hd = pv.plane_dims, wd = pv.plane_dims + 1;
  const std::int64_t es = static_cast<std::int64_t>(dx.elem_size());
  // Band row i (phase i % sh, row i / sh) is input row oh0*sh - ph + i.
  const std::int64_t first = tile.oh0 * t.h.s - t.h.p;
  const std::int64_t cov_lo = std::max(g.h0, first), cov_hi = std::min(g.h1, first + bs.hq * t.h.s);
  TensorView stepped = dx;
  stepped.strides[hd] = dx.strides[hd] * t.h.s;
  for (std::int64_t r = 0; r < t.h.s; ++r) {
    // Rows h = first + r + q*sh within [cov_lo, cov_hi).
    const std::int64_t q0 = std::max<std::int64_t>(0, (cov_lo - first - r + t.h.s - 1) / t.h.s);
    const std::int64_t q1 = (cov_hi - first - r + t.h.s - 1) / t.h.s;
    if (q1 <= q0) continue;
    Box b;
    t.plane_box(pv, tile, &b);
    stepped.base = dx.base + static_cast<std::uint64_t>((first + r + q0 * t.h.s) * dx.strides[hd] * es);
    b.start[hd] = 0, b.extent[hd] = q1 - q0;
    b.start[wd] = 0, b.extent[wd] = t.w.in;
    NramStrides ns{};
    ns[hd - 1] = bs.hq * bs.wpitch();
    ns[hd] = bs.wpitch();
    ns[wd] = 1;
    store_box_async(stepped, b, rows.offset((r * per_phase + q0 * bs.wpitch() + t.w.p) * es), ns);
  }
  // Rows of [h0, h1) outside the band: no window reaches them.
  for (const auto& [lo, hi] : {std::pair{g.h0, std::min(g.h1, std::max(g.h0, cov_lo))},
                               std::pair{std::max(g.h0, std::max(cov_hi, cov_lo)), g.h1}}) {
    if (hi <= lo) continue;
    Box b;
    t.plane_box(pv, tile, &b);
    b.start[hd] = lo, b.extent[hd] = hi - lo;
    b.start[wd] = 0, b.extent[wd] = t.w.in;
    fill_box_async(dx, b, zeros, zero_bytes);
  }
}

}  // namespace mlusim::mlu::nn::pool
