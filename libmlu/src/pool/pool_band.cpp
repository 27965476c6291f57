#include "pool/pool_band.h"

#include <algorithm>

namespace mlusim::mlu::nn::pool {

using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;

BandShape band_shape(const PoolTiling& t, std::int64_t planes) { return BandShape{planes, t.hq, t.wq, t.h.s, t.w.s}; }

void load_band_async(const PoolTiling& t, const PoolViews& pv, const TensorView& x, const PoolTiling::Tile& tile,
                     Addr raw, double pad_value, bool fill) {
  const BandShape bs = band_shape(t, tile.planes);
  if (fill) dev::vec_fill(x.dtype, raw, pad_value, static_cast<std::size_t>(bs.band_elems() + bs.sw));
  const int hd = pv.plane_dims, wd = pv.plane_dims + 1;
  const std::int64_t es = static_cast<std::int64_t>(x.elem_size());
  const std::int64_t span = t.h.padded_span(tile.rows);
  // Phase r holds band rows i = r + j*sh, i.e. input rows h = oh0*sh - ph + i.
  TensorView rows = x;
  rows.strides[hd] = x.strides[hd] * t.h.s;
  for (std::int64_t r = 0; r < t.h.s; ++r) {
    const std::int64_t h_first = tile.oh0 * t.h.s - t.h.p + r;  // input row of j = 0
    std::int64_t j0 = 0;
    if (h_first < 0) j0 = (-h_first + t.h.s - 1) / t.h.s;
    const std::int64_t j_end = std::min((span - r + t.h.s - 1) / t.h.s, (t.h.in - h_first + t.h.s - 1) / t.h.s);
    if (j_end <= j0) continue;
    Box b;
    t.plane_box(pv, tile, &b);
    rows.base = x.base + static_cast<std::uint64_t>((h_first + j0 * t.h.s) * x.strides[hd] * es);
    b.start[hd] = 0, b.extent[hd] = j_end - j0;
    b.start[wd] = 0, b.extent[wd] = t.w.in;
    NramStrides ns{};
    ns[hd - 1] = bs.hq * bs.wpitch();
    ns[hd] = bs.wpitch();
    ns[wd] = 1;
    const std::int64_t at = ((r * bs.pb) * bs.hq + j0) * bs.wpitch() + t.w.p;
    load_box_async(rows, b, raw.offset(at * es), ns);
  }
}

bool tile_touches_row_padding(const PoolTiling& t, const PoolTiling::Tile& tile) {
  const std::int64_t first = tile.oh0 * t.h.s - t.h.p;
  return first < 0 || first + t.h.padded_span(tile.rows) > t.h.in;
}

void store_out_async(const PoolTiling& t, const PoolViews& pv, const TensorView& y, const PoolTiling::Tile& tile,
                     Addr out, bool already_typed) {
  const BandShape bs = band_shape(t, tile.planes);
  if (!already_typed && y.dtype != DType::kFloat32)
    dev::vec_cast(y.dtype, out, DType::kFloat32, out, static_cast<std::size_t>(bs.out_elems()));
  const int hd = pv.plane_dims, wd = pv.plane_dims + 1;
  Box b;
  t.plane_box(pv, tile, &b);
  b.start[hd] = tile.oh0, b.extent[hd] = tile.rows;
  b.start[wd] = 0, b.extent[wd] = t.w.out;
  NramStrides ns{};
  ns[hd - 1] = bs.hq * bs.wq;
  ns[hd] = bs.wq;
  ns[wd] = 1;
  store_box_async(y, b, out, ns);
}

void extract_phase(Addr dst, Addr band, std::int64_t p, std::int64_t sw, std::int64_t n, Addr mask0, Addr zeros,
                   Addr scratch, Addr e0) {
  const auto un = static_cast<std::size_t>(n), usw = static_cast<std::size_t>(sw);
  dev::vec_select(DType::kFloat32, scratch, mask0, band.offset(p * 4), zeros, un);
  // dst[0, j] = sum_k e0[k] * scratch[j*sw + k]: B stored [n/sw, sw], i.e. transposed.
  dev::vec_matmul(DType::kFloat32, DType::kFloat32, dst, e0, scratch, 1, usw, un / usw, true, false);
}

void fill_e0(Addr e0, std::int64_t sw) {
  dev::vec_fill(DType::kFloat32, e0, 0.0, static_cast<std::size_t>(sw));
  store_scalars(e0, {1.0f});
}

void interleave_phases(Addr dst, const std::vector<Addr>& phases, std::int64_t n, std::int64_t sw,
                       const std::vector<Addr>& masks, Addr ones, Addr scratch) {
  const auto un = static_cast<std::size_t>(n), usw = static_cast<std::size_t>(sw);
  for (std::size_t p = 0; p < phases.size(); ++p) {
    // Repeat each element sw times: [n, 1] x ones[1, sw].
    const Addr target = p == 0 ? dst : scratch;
    dev::vec_matmul(DType::kFloat32, DType::kFloat32, target, phases[p], ones, un, 1, usw, false, false);
    if (p > 0) dev::vec_select(DType::kFloat32, dst, masks[p], scratch, dst, un * usw);
  }
}

void max_pool_take(const MaxTakeScratch& s, std::size_t n, Addr best_out, Addr best_in, Addr cand, bool indices,
                   Addr idx_out, Addr idx_in, Addr cidx) {
  constexpr DType kF32 = DType::kFloat32;
  dev::vec_binary(VecBinaryOp::kGt, kF32, s.t1, cand, best_in, n);
  dev::vec_binary(VecBinaryOp::kNe, kF32, s.t2, cand, cand, n);
  dev::vec_binary(VecBinaryOp::kMax, kF32, s.t1, s.t1, s.t2, n);
  dev::vec_cast(DType::kBool, s.take, kF32, s.t1, n);
  dev::vec_select(kF32, best_out, s.take, cand, best_in, n);
  if (indices) dev::vec_select(kF32, idx_out, s.take, cidx, idx_in, n);
}

void store_scalars(Addr dst, const std::vector<float>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    dev::store(sim::Nram<float>(dst.value) + static_cast<std::int64_t>(i), values[i]);
}

void replicate(Addr dst, std::size_t block_bytes, std::size_t copies) {
  if (copies <= 1 || block_bytes == 0) return;
  dev::CopyShape shape;
  shape.seg_bytes = block_bytes;
  shape.n1 = copies - 1;
  shape.dst_stride1 = static_cast<std::int64_t>(block_bytes);
  shape.src_stride1 = 0;
  dev::memcpy_strided(dst.offset(static_cast<std::int64_t>(block_bytes)), dst, shape, dev::Dir::kNram2Nram);
}

void periodic_mask(Addr dst, std::int64_t period, std::int64_t phase, std::int64_t n) {
  std::vector<std::uint8_t> one(static_cast<std::size_t>(period), 0);
  one[static_cast<std::size_t>(phase)] = 1;
  dev::store_bytes(dst, one.data(), one.size());
  const std::int64_t copies = (n + period - 1) / period;
  replicate(dst, static_cast<std::size_t>(period), static_cast<std::size_t>(copies));
}

}  // namespace mlusim::mlu::nn::pool
