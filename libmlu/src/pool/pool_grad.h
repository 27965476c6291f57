// Kernel-side pieces of the pooling backwards. A backward tile owns input rows [h0, h1) of its
// planes; the gradient of its band is accumulated phase-split, one block per (row phase, column
// phase):
//   grad    [sh][sw] x [pb][hq][wq] (+ slack)   block (r, c) holds padded band position
//                                               (q*sh + r, j*sw + c) at (p, q, j)
// so the contribution of window offset (kh, kw) from every output (p, oh, ow) is one flat add of
// an output-shaped array at a constant shift into one block. Blocks are then interleaved along W
// (pool_band.h) and stored row phase by row phase; input rows no window reaches get zeros.
#pragma once

#include <cstdint>
#include <vector>

#include "pool/pool_band.h"

namespace mlusim::mlu::nn::pool {

// Elements of one phase block (an output-shaped array plus the largest offset shift).
std::int64_t grad_block_elems(const PoolTiling& t);

// Loads rows [oh0, oh0 + rows) of an output-shaped view (dy, indices) into `raw` laid out
// [pb][hq][wq] in the view's dtype, after zero-filling it (so unused slots contribute nothing).
void load_out_band_async(const PoolTiling& t, const PoolViews& pv, const TensorView& v, const PoolTiling::Tile& tile,
                         Addr raw);

// Adds `contribution` ([pb][hq][wq], n = out elems) into the grad block of window offset (kh, kw).
void add_contribution(const PoolTiling& t, const BandShape& bs, Addr grad, Addr contribution, std::int64_t kh,
                      std::int64_t kw);

// Interleaves the grad blocks along W into `rows` ([sh][pb][hq][wpitch], fp32) and stores dx rows
// [h0, h1) of the tile's planes (narrowing in place to dx's dtype), zero-filling the rows the band
// does not reach from `zeros` (zero_bytes of zeros).
void store_grad_async(const PoolTiling& t, const PoolViews& pv, const TensorView& dx, const PoolTiling::GradTile& g,
                      Addr grad, Addr rows, const std::vector<Addr>& masks, Addr ones, Addr scratch, Addr zeros,
                      std::size_t zero_bytes);

}  // namespace mlusim::mlu::nn::pool
