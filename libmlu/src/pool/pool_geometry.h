// Pooling geometry shared by the pooling kernels: per-axis window arithmetic (torch's), the
// validation of descriptors, and the NRAM layout of a tile.
//
// A tile is `planes` whole (N, C) planes when their output rows all fit NRAM ("plane mode"), else
// one plane and a band of output rows ("band mode"). Its input rows, in padded coordinates, are
// held phase-split: padded row i of the band lives in row block (i % stride_h) at row i / stride_h,
// so the rows a window offset kh needs for every output row form one contiguous run
// (block (kh*dh) % sh, rows oh + (kh*dh) / sh). Along W the same is done by the kernels on the VFU.
// Every stage is then a flat VFU operation over whole [planes, rows, cols] arrays, shifted by a
// constant offset per window position; positions past the valid outputs are computed and ignored.
#pragma once

#include <cstdint>
#include <vector>

#include "mlusim/mlu/pool.h"
#include "softmax/box_copy.h"

namespace mlusim::mlu::nn {

// One spatial axis.
struct PoolAxis {
  std::int64_t in = 0, out = 0, k = 1, s = 1, p = 0, d = 1;
  // Padded extent the windows of outputs [0, out) span: (out-1)*s + (k-1)*d + 1.
  std::int64_t padded_span(std::int64_t outs) const { return (outs - 1) * s + (k - 1) * d + 1; }
  // torch max pooling: the first in-bounds tap of output o's window (start, advanced by d while < 0).
  std::int64_t first_valid(std::int64_t o) const;
  // torch avg pooling: the window's divisor with and without the padding counted.
  std::int64_t avg_extent(std::int64_t o, bool include_pad) const;
};

// Output extent as torch's pooling_output_shape; kBadParam (message names op and axis) if invalid.
Status pool_output_extent(const char* op, const char* axis, std::int64_t in, std::int64_t k, std::int64_t s,
                          std::int64_t p, std::int64_t d, bool ceil_mode, std::int64_t* out);

// x, y (and the like) as views over [plane dims..., H, W], plane dims coalesced jointly.
struct PoolViews {
  std::vector<TensorView> views;
  int plane_dims = 0;       // leading dims before H, W (coalesced; >= 1)
  std::int64_t planes = 0;  // product of the plane dims
};
PoolViews make_pool_views(const std::vector<const TensorDesc*>& descs, const std::vector<const void*>& ptrs);

// Checks a [N,C,H,W] or [C,H,W] fp32/fp16 tensor (kNHWC descriptors are not supported).
Status check_pool_tensor(const char* op, const char* name, const TensorDesc& d, const void* p);
// Checks that a and b have the same plane dims.
Status check_same_planes(const char* op, const TensorDesc& a, const char* an, const TensorDesc& b, const char* bn);

// The tiles of a pooling pass.
struct PoolTiling {
  PoolAxis h, w;
  std::int64_t planes = 0;          // total planes
  std::int64_t last_plane_dim = 0;  // extent of the innermost plane dim (a tile's planes stay within one run of it)
  std::int64_t pb = 1;              // planes per tile
  std::int64_t ohb = 1;             // output rows per tile
  // Padded-row layout of a tile: rows per phase block, W pitch.
  std::int64_t hq = 0, wq = 0, wpitch = 0;

  std::int64_t row_bands() const { return (h.out + ohb - 1) / ohb; }
  std::int64_t plane_blocks() const;
  std::int64_t tiles() const { return plane_blocks() * row_bands(); }
  // Tile t: first plane (flat), plane count, first output row, output rows.
  struct Tile {
    std::int64_t plane0, planes, oh0, rows;
  };
  Tile tile(std::int64_t t) const;

  // Backward tiles own input rows, so no two tiles write the same gradient: tile t's planes, its
  // input rows [h0, h1) and (in `tile`) the output rows whose windows touch them.
  std::int64_t hb = 0;  // input rows per backward tile (== in rows in plane mode)
  struct GradTile {
    Tile tile;
    std::int64_t h0, h1;
  };
  std::int64_t grad_tiles() const { return plane_blocks() * ((h.in + hb - 1) / hb); }
  GradTile grad_tile(std::int64_t t) const;
  // The box of the views' plane dims for a tile's planes (H, W left for the caller).
  void plane_box(const PoolViews& v, const Tile& t, Box* b) const;
};

// Picks planes per tile (plane mode) or a row band (band mode) so that footprint(pb, ohb) fits
// NRAM, aiming at a few tiles per core; sets hq, wq, wpitch. False when even one output row of
// one plane does not fit.
using PoolFootprint = std::size_t (*)(const PoolTiling& t);
// The same for backward tiles (input row bands; hb set too).
// tiles_per_core > 0 (forward passes): when whole planes give fewer than tiles_per_core tiles per
// core (and have >= 16 output rows), or do not fit, planes are cut into equal row bands (at least
// 4 output rows each) so that
// every core gets several pipeline steps and no band is mostly empty.
bool plan_pool_tiles(PoolTiling* t, std::size_t nram_bytes, std::uint32_t cores, PoolFootprint footprint,
                     std::int64_t tiles_per_core = 0);
// Pipeline steps per core the forward pooling kernels aim at: the first load and the last store
// are not hidden.
constexpr std::int64_t kPoolTilesPerCore = 8;
bool plan_pool_grad_tiles(PoolTiling* t, std::size_t nram_bytes, std::uint32_t cores, PoolFootprint footprint);

}  // namespace mlusim::mlu::nn
