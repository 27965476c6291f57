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
// it with pad_value (the padding and every unused slot). x: a pool view [plane dims.., H, W].
void load_band_async(const PoolTiling& t, const PoolViews& pv, const TensorView& x, const PoolTiling::Tile& tile,
                     Addr raw, double pad_value);

// Stores an [pb][hq][wq] output array into y's rows [oh0, oh0 + rows) x [0, OW) of the tile's
// planes. `out` holds fp32 (narrowed in place to y's dtype first) unless already_typed. y: a pool
// view.
void store_out_async(const PoolTiling& t, const PoolViews& pv, const TensorView& y, const PoolTiling::Tile& tile,
                     Addr out, bool already_typed = false);

// Column phase p of a band (n = band_elems elements of `band`, with >= sw slack elements after it)
// into `dst` (n / sw elements): dst[j] = band[j*sw + p]. Exact for every value: the other phases
// are replaced by `neutral` (a vector of the reduce's identity: -inf for max, 0 for sum) and each
// group of sw is reduced. mask0: bool, 1 where i % sw == 0.
void extract_phase(Addr dst, Addr band, std::int64_t p, std::int64_t sw, std::int64_t n, Addr mask0, Addr neutral,
                   Addr scratch, sim::VecReduceOp op);

// dst[i*sw + p] = phase_p[i] for every phase: interleaves sw arrays of n elements into n*sw.
// Each phase is repeated sw times (a K=1 VFU matmul with a ones row: exact, inf/NaN-safe) and
// selected by a periodic mask. masks[p]: bool, 1 where i % sw == p; ones: >= sw ones.
void interleave_phases(Addr dst, const std::vector<Addr>& phases, std::int64_t n, std::int64_t sw,
                       const std::vector<Addr>& masks, Addr ones, Addr scratch);

// Writes values computed by the kernel's scalar code with one scalar store each (fp32).
void store_scalars(Addr dst, const std::vector<float>& values);
// Copies the first block_bytes of dst over the next copies-1 blocks (one Move-DMA, source stride 0).
void replicate(Addr dst, std::size_t block_bytes, std::size_t copies);
// dst (bool, n): 1 where i % period == phase.
void periodic_mask(Addr dst, std::int64_t period, std::int64_t phase, std::int64_t n);

}  // namespace mlusim::mlu::nn::pool
