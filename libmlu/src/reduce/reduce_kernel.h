// The reduction kernel: one configurable kernel body for sum/prod/max/min (with or without
// indices), with an elementwise pre-op on the loaded tile and a post-op on the result.
//
// Iteration space (built by reduce_plan.h): x's dims split into kept (K) and reduced (S) dims,
// ordered so the three innermost dims form the tile box:
//  - row mode ([K..., S...], an S dim innermost in memory): the compact tile is [rows, n] with
//    one row per output; vec_reduce gives every row's partial in one intrinsic;
//  - column mode ([K..., S..., K_in], a kept dim innermost in memory): the tile is [R, kc]
//    with the reduced dims outer; R rows are folded pairwise (top half op= bottom half, one VFU
//    op over half the tile per level, log2(R) levels) into one row of kc outputs.
// Tiles are grouped into output blocks (a box of outputs) and steps (the reduced extent one
// tile at a time); partials accumulate per block in NRAM and are finalised (post-op, convert,
// strided store) after the block's last step. With `parts` > 1 the steps of each block are
// split over several tasks and every task stores its raw partial to the workspace; a second
// (combine) launch of this kernel reduces the parts.
//
// Index reductions (argmax & co) keep (value, index) pairs: within a row the first extreme is
// found as min(select(x == rowmax | isnan(x), iota, INT_MAX)); pairs are merged with an explicit
// rule (larger value, or equal value and smaller index, or NaN over non-NaN, or both NaN and
// smaller index), so ties resolve to the first index whatever the merge order.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "elementwise/iter_space.h"

namespace mlusim::mlu::red {

// Operand slots of the space (an unused slot has base 0 and zero strides).
enum Slot : int { kX = 0, kOut = 1, kOutIndex = 2, kMean = 3, kInIndex = 4, kSlots = 5 };

enum class Combine : std::uint8_t { kSum, kProd, kMax, kMin };
enum class PreOp : std::uint8_t {
  kNone,
  kAbs,
  kSquare,         // fused into the row reduction as sum of squares
  kAbsPow,         // |x|^pre_scalar
  kNonZero,        // x != 0 as 1/0
  kSubMeanSquare,  // (x - mean)^2, mean broadcast from the kMean operand
};
enum class PostOp : std::uint8_t {
  kNone,
  kDivide,      // / post_scalar (mean, var)
  kDivideSqrt,  // sqrt(/ post_scalar) (std)
  kSqrt,        // (2-norm)
  kPow,         // ^ post_scalar (p-norm root)
};

struct ReduceKernel {
  ew::IterSpace space;
  std::array<bool, kMaxDims> reduced{};  // per space dim
  bool column = false;
  std::array<std::int64_t, ew::kBoxDims> box{};  // tile extents along the three innermost dims
  Combine combine = Combine::kSum;
  bool with_index = false;        // also track the index along the (single) reduced dim
  bool index_from_input = false;  // candidate indices are read from kInIndex (combining parts)
  bool has_mean = false;
  PreOp pre = PreOp::kNone;
  double pre_scalar = 0;
  PostOp post = PostOp::kNone;
  double post_scalar = 1;
  DType acc = DType::kFloat32;  // VFU accumulation dtype: fp32 or int32
  std::int64_t parts = 1;       // > 1: part p stores raw partials at kOut/kOutIndex + p * part_elems
  std::int64_t part_elems = 0;

  // Enumeration (filled by finish_plan): a tile is (block, step).
  struct Coord {
    int dim;
    std::int64_t count;
  };
  std::vector<Coord> block_coords, step_coords;  // outer -> inner
  std::int64_t blocks = 0, steps = 0;

  std::int64_t tile_elems() const { return box[0] * box[1] * box[2]; }
  ew::Tile tile(std::int64_t block, std::int64_t step) const;
  // NRAM bytes per tile element of all buffers the kernel allocates (for sizing the box).
  std::size_t bytes_per_element() const;
};

// Fills block/step coordinates from space, reduced and box.
void finish_plan(ReduceKernel* k);

// The kernel body (BLOCK launch; task i takes a contiguous share of the blocks x parts units).
void reduce_body(const ReduceKernel& k);

}  // namespace mlusim::mlu::red
