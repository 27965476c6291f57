// Kernel-side building blocks of the pooling kernels: loading a tile's padded, row-phase-split
// input band, splitting W phases on the VFU, interleaving them back, and small index patterns.
// Layouts (fp32 unless said otherwise), for a tile of pb planes and hq rows per row phase:
//   band    [sh][pb][hq][wpitch]   padded input rows, row i of the band in block i % sh, row i / sh
//   phases  [sw] x [sh][pb][hq][wq] column phase p: padded column j*sw + p at column j
//   out     [pb][hq][wq]           output (oh, ow) of plane p at (p, oh, ow)
#pragma once

#include <cstdint>
#include <vector>

#include "mlusim/sim/kernel_api.h"
#include "pool/pool_geometry.h"

namespace mlusim::mlu::nn::pool {

using sim::Addr;

struct BandShape {
  std::int64_t pb = 1, hq = 1, wq = 1, sh = 1, sw = 1;
  std::int64_t wpitch() const { return wq * sw; }
  std::int64_t rows() const { return sh * pb * hq; }  // band rows over all phases
  std::int64_t band_elems() const { return rows() * wpitch(); }
  std::int64_t phase_elems() const { return rows() * wq; }  // one W phase of the band
  std::int64_t out_elems() const { return pb * hq * wq; }
};
BandShape band_shape(const PoolTiling& t, std::int64_t planes);

// Issues the loads of tile `tile`'s input band into `raw` (x's dtype, band layout), after filling
// it with pad_value (the padding and every unused slot) when `fill`. x: a pool view [plane dims.., H, W].
void load_band_async(const PoolTiling& t, const PoolViews& pv, const TensorView& x, const PoolTiling::Tile& tile,
                     Addr raw, double pad_value, bool fill = true);
// Whether a tile's padded rows reach outside the input (its band then needs the pad fill). A tile
// that does not can skip the fill when its buffer was filled once before: the DMA rewrites every
// in-bounds slot, padding columns are never written, and rows past its span feed only outputs
// past its rows (computed and ignored).
bool tile_touches_row_padding(const PoolTiling& t, const PoolTiling::Tile& tile);

// Stores an [pb][hq][wq] output array into y's rows [oh0, oh0 + rows) x [0, OW) of the tile's
// planes. `out` holds fp32 (narrowed in place to y's dtype first) unless already_typed. y: a pool
// view.
void store_out_async(const PoolTiling& t, const PoolViews& pv, const TensorView& y, const PoolTiling::Tile& tile,
                     Addr out, bool already_typed = false);

// Column phase p of a band (n = band_elems elements of `band`, with >= sw slack elements after it)
// into `dst` (n / sw elements): dst[j] = band[j*sw + p]. Two streaming VFU passes: the other
// phases are zeroed by a select against `zeros` (mask0: bool, 1 where i % sw == 0), then each group
// of sw is contracted with e0 = [1, 0, .., 0] (sw fp32) by a VFU matmul reading the band as
// [n/sw, sw] (b_transposed: one pass per element of K = sw, over n/sw columns). The product keeps
// every finite value, inf and NaN (x*1 + 0*0 + ..), but a -0 comes back +0 (the matmul's sum
// starts from +0). A vec_reduce over groups of sw would be exact but costs one VFU cycle per
// group (rows x ceil(sw / lanes)), 32x a streaming pass in fp32: it dominated the pooling kernels.
void extract_phase(Addr dst, Addr band, std::int64_t p, std::int64_t sw, std::int64_t n, Addr mask0, Addr zeros,
                   Addr scratch, Addr e0);
// e0 for extract_phase: sw fp32 values [1, 0, .., 0].
void fill_e0(Addr e0, std::int64_t sw);

// dst[i*sw + p] = phase_p[i] for every phase: interleaves sw arrays of n elements into n*sw.
// Each phase is repeated sw times (a K=1 VFU matmul with a ones row: exact, inf/NaN-safe) and
// selected by a periodic mask. masks[p]: bool, 1 where i % sw == p; ones: >= sw ones.
void interleave_phases(Addr dst, const std::vector<Addr>& phases, std::int64_t n, std::int64_t sw,
                       const std::vector<Addr>& masks, Addr ones, Addr scratch);

// torch's max-pooling rule for one window tap over n fp32 elements (torch's CPU kernel keeps the
// first strict maximum, or the latest NaN):
//   take = cand > best_in || cand is NaN; best_out = take ? cand : best_in;
//   with indices: idx_out = take ? cidx : idx_in.
// t1, t2: fp32 scratch, take: bool scratch, n elements each.
struct MaxTakeScratch {
  Addr t1, t2, take;
};
void max_pool_take(const MaxTakeScratch& s, std::size_t n, Addr best_out, Addr best_in, Addr cand, bool indices,
                   Addr idx_out = {}, Addr idx_in = {}, Addr cidx = {});

// Writes values computed by the kernel's scalar code with one scalar store each (fp32).
void store_scalars(Addr dst, const std::vector<float>& values);
// A channels-last [rows][ow][cb] fp32 array whose pixel (i, j) holds f(i, j) in every channel:
// rows x ow scalar stores into `pattern`, broadcast along the channels by a K = 1 VFU matmul
// (exact). ones: >= cb ones.
template <class F>
void pixel_pattern(Addr dst, Addr pattern, Addr ones, std::int64_t rows, std::int64_t ow, std::int64_t cb, F&& f) {
  std::vector<float> v(static_cast<std::size_t>(rows * ow));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < ow; ++j) v[static_cast<std::size_t>(i * ow + j)] = float(f(i, j));
  store_scalars(pattern, v);
  dev::vec_matmul(sim::DType::kFloat32, sim::DType::kFloat32, dst, pattern, ones, static_cast<std::size_t>(rows * ow),
                  1, static_cast<std::size_t>(cb), false, false);
}
// Copies the first block_bytes of dst over the next copies-1 blocks (one Move-DMA, source stride 0).
void replicate(Addr dst, std::size_t block_bytes, std::size_t copies);
// dst (bool, n): 1 where i % period == phase.
void periodic_mask(Addr dst, std::int64_t period, std::int64_t phase, std::int64_t n);

}  // namespace mlusim::mlu::nn::pool
