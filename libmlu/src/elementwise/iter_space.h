// The iteration space of a streaming kernel: an N-d box of indices and, for each operand, its
// GDRAM base and its stride along every dim (0 = broadcast). Built on the host from tensor
// descriptors; the kernel walks it tile by tile.
//
// Normal form (what make_iter_space returns): size-1 dims dropped, dims ordered by operand 0's
// strides (largest first, so a dense output is written in memory order and its innermost stride
// is 1), adjacent dims merged where every operand steps uniformly across them, then padded with
// leading size-1 dims to at least kBoxDims dims. Tiles are boxes over the kBoxDims innermost dims.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::ew {

constexpr int kBoxDims = 3;

struct Operand {
  std::uint64_t base = 0;  // GDRAM address of element [0, ..., 0]
  DType dtype = DType::kFloat32;
  std::array<std::int64_t, kMaxDims> strides{};  // elements, per iteration dim
};

struct IterSpace {
  int ndim = 0;  // outer -> inner
  std::array<std::int64_t, kMaxDims> dims{};
  std::vector<Operand> operands;

  std::int64_t numel() const;
};

// Broadcast shape of `descs` (numpy rules, dims aligned at the last one). Fails with kBadParam
// naming `op` and the two clashing operands.
struct NamedDesc {
  const char* name;
  const TensorDesc* desc;
};
Status broadcast_shape(const char* op, const std::vector<NamedDesc>& descs, std::vector<std::int64_t>* shape);

// Operand i = descs[i] at ptrs[i], broadcast to `shape` (callers check broadcastability), in
// normal form. Operand 0 decides the dim order (pass the output first).
IterSpace make_iter_space(const std::vector<std::int64_t>& shape, const std::vector<const TensorDesc*>& descs,
                          const std::vector<const void*>& ptrs);

// Brings a space with explicit per-dim strides into normal form (used by reductions, which build
// their own strides). With `sort` false the dim order is kept (logical order matters).
void normalize(IterSpace* space, bool sort);

// Tiling: boxes of box[0] x box[1] x box[2] elements over the three innermost dims (box[0] the
// innermost); every other dim is walked one index per tile. Consecutive tiles are adjacent in
// the innermost dims first, so a task that owns a run of tiles streams through memory.
struct TilePlan {
  std::array<std::int64_t, kBoxDims> box{};
  std::array<std::int64_t, kBoxDims> chunks{};  // ceil(dim / box) per box dim
  std::int64_t tiles = 0;
  std::int64_t max_elems() const { return box[0] * box[1] * box[2]; }
};
// Largest boxes of at most `max_tile_elems` elements (>= 1), filling the innermost dim first.
TilePlan plan_tiles(const IterSpace& space, std::int64_t max_tile_elems);

struct Tile {
  std::array<std::int64_t, kMaxDims> origin{};  // index of the tile's first element, per dim
  std::array<std::int64_t, kBoxDims> ext{};     // extents along the box dims ([0] = innermost)
  std::int64_t elems() const { return ext[0] * ext[1] * ext[2]; }
};
Tile tile_at(const IterSpace& space, const TilePlan& plan, std::int64_t index);

// Element offset of the tile's first element in `op`, and op's strides along the box dims.
std::int64_t tile_offset(const IterSpace& space, const Operand& op, const Tile& tile);
std::array<std::int64_t, kBoxDims> box_strides(const IterSpace& space, const Operand& op);

}  // namespace mlusim::mlu::ew
