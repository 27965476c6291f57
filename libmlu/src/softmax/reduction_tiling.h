// Tiling of a reduction over a group of dims. Views share dims grouped as
//   [outer dims..., reduced dims..., inner dims...]
// (after coalesce_groups). A tile is the box
//   1 x .. x ob (last outer dim) | reduced group (whole, or a chunk of its last dim) | 1 x .. x ic (last inner dim)
// laid out in NRAM as [ob, nr, ic]: ob independent blocks, each reducing over its nr rows, with
// ic = 1 (the reduced elements of a slice are contiguous: row mode) or ic > 1 (they are columns).
// A "group" is one (outer block, inner block); a reduction that does not fit NRAM walks its
// group in several chunks per pass (multi-pass).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "softmax/box_copy.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu::nn {

struct TileBox {
  Box box;
  tile::Shape shape;
};

struct ReductionTiling {
  int ndim = 0;
  int r_begin = 0, i_begin = 0;  // outer dims [0, r_begin), reduced [r_begin, i_begin), inner [i_begin, ndim)
  std::array<std::int64_t, kMaxViewDims> dims{};
  std::int64_t ob = 1;  // rows of the last outer dim per tile
  std::int64_t ic = 1;  // columns of the last inner dim per tile
  std::int64_t rc = 0;  // multi-pass: elements of the last reduced dim per chunk; 0 = single pass

  bool multipass() const { return rc > 0; }
  std::int64_t reduced() const;  // elements reduced per slice
  std::int64_t slices() const;   // independent reductions (outer x inner elements)
  std::int64_t groups() const;   // tiles per pass
  std::int64_t chunks() const;   // chunks per group and pass (1 when single pass)
  std::size_t max_rows() const;  // nr of the largest tile
  tile::Shape max_shape() const { return {static_cast<std::size_t>(ob), max_rows(), static_cast<std::size_t>(ic)}; }
  TileBox box(std::int64_t group, std::int64_t chunk) const;
  // The box of the per-slice statistic of `group` in a view with the same dims whose reduced
  // group is all unit dims (shape [ob, 1, ic]); stats_box_of does the same for any tile's box.
  Box stats_box(std::int64_t group) const;
  Box stats_box_of(const Box& tile_box) const;

  // Single pass: the tiles task `task` of `tasks` walks (launches use groups() tasks at most).
  // With one outer dim in row mode, the task's share of rows starts and ends with a half-size
  // tile: the first compute and the last one overlap only half a tile's DMA, so shortening them
  // brings a DMA-bound kernel closer to its roofline (measured on mlu370-x4: fp16 softmax on
  // BERT shapes 80% -> 87%). Otherwise the task's groups.
  std::vector<TileBox> pass_tiles(std::size_t task, std::size_t tasks) const;
};

// One step of a task's walk over its tiles: in multi-pass, chunk `chunk` of group `group` in
// sweep `pass`; in single pass, one of the task's tiles (group -1, pass and chunk 0).
struct PassStep {
  std::int64_t group;
  TileBox tb;
  std::size_t pass, chunk;
};

// The steps one task walks: single pass, its (ramped) pass_tiles; multi-pass, for each group of
// [groups.first, groups.second), `passes` sweeps over the group's chunks.
class PassSchedule {
 public:
  PassSchedule(const ReductionTiling& t, std::pair<std::size_t, std::size_t> groups, std::size_t passes,
               std::size_t task, std::size_t tasks);
  std::size_t size() const { return steps_; }
  PassStep at(std::size_t s) const;

 private:
  const ReductionTiling& t_;
  std::size_t first_group_, chunks_, per_group_, steps_;
  std::vector<TileBox> single_;
};

// NRAM bytes an op needs for tiles of at most `shape` (every buffer rounded up to 128 bytes).
using NramFootprint = std::function<std::size_t(const tile::Shape& shape)>;

// Picks ob, ic and rc for views of `dims` grouped at r_begin / i_begin: the whole reduced group per
// tile when it fits `nram_bytes`, else chunks of its last dim (multi-pass). Tiles grow (more outer
// rows) up to about `target_elements`, with the row count chosen so that `cores` tasks get equal
// shares (whole tiles each). nullopt when not even one element per slice fits.
std::optional<ReductionTiling> plan_reduction(const TensorView& shape, int r_begin, int i_begin, std::size_t nram_bytes,
                                              std::uint32_t cores, std::int64_t target_elements,
                                              const NramFootprint& footprint);

// Tile size that gives each of `cores` about 4 tiles (loads, compute and stores overlap; each tile
// pays one DMA latency at its sync, and the last tile's compute is exposed: 4 measured best on
// mlu370-x4 for BERT shapes), but at least 4096 elements (per-intrinsic start-up amortised).
std::int64_t target_tile_elements(std::int64_t total_elements, std::uint32_t cores);

inline std::size_t align128(std::size_t bytes) { return (bytes + 127) / 128 * 128; }

}  // namespace mlusim::mlu::nn
