// Kernel-side data movement for tiles: strided boxes between GDRAM and NRAM, with on-chip
// broadcast expansion and transposition. Called from kernel bodies only (uses the dev:: API).
//
// On chip a tile is always compact row-major [ext2, ext1, ext0] (ext0 innermost), whatever the
// operand's strides in GDRAM. Loading one operand's tile:
//  - dims along which the operand has stride 0 (broadcast) are read once ("reduced box") and
//    replicated on chip by doubling NRAM->NRAM copies (log2(extent) Move-DMA copies, no DRAM);
//  - when the reduced box's smallest GDRAM stride is 1 on the innermost dim, the DMA writes
//    contiguous runs straight into the tile ("direct");
//  - when the unit-stride dim is another one (a transposed view), the box is read in the
//    operand's own order (contiguous runs) into a staging buffer and scattered element by
//    element on chip ("staged"): DRAM sees bursts, the per-element cost goes to the Move-DMA;
//  - with no unit stride at all, elements are read one per segment (each a whole DRAM burst).
// A load is issued asynchronously (issue_load) and completed after sync_io (finish_load: the
// on-chip scatter and broadcast expansion), so the next tile's DMA overlaps the current compute.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "elementwise/iter_space.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::tile {

using dev::Addr;

// One dim of a box copy: extent and byte strides on both sides (dims listed outer -> inner).
struct CopyDim {
  std::int64_t extent;
  std::int64_t dst_stride;
  std::int64_t src_stride;
};

// Copies every element of the box. Dims of extent 1 are dropped, dims contiguous on both sides
// are merged, the innermost contiguous run becomes the DMA segment (else one element per
// segment), the next two dims the CopyShape levels, and any further dims loop in kernel code.
void copy_box(Addr dst, Addr src, dev::Dir dir, std::size_t elem_bytes, std::vector<CopyDim> dims, bool async);

// One operand's view of a tile: GDRAM address of its first element and its element strides and
// the tile's extents along the box dims ([0] innermost).
struct BoxView {
  std::uint64_t gdram = 0;
  DType dtype = DType::kFloat32;
  std::array<std::int64_t, ew::kBoxDims> ext{};
  std::array<std::int64_t, ew::kBoxDims> stride{};
};

BoxView box_view(const ew::IterSpace& space, const ew::Operand& op, const ew::Tile& tile);

// Element offset, within the operand, of the j-th element of the compact tile (row-major over
// ext[2], ext[1], ext[0]), relative to v.gdram.
std::int64_t element_offset(const BoxView& v, std::int64_t j);

// Whether loading this operand can ever need a staging buffer (tile elements x element size):
// decided from its strides alone, so the host can size NRAM.
bool may_need_staging(const std::array<std::int64_t, ew::kBoxDims>& box_strides);

// Starts the GDRAM->NRAM DMA of `v` into the compact tile at `tile` (staging may be an invalid
// address when may_need_staging was false).
void issue_load(const BoxView& v, Addr tile, Addr staging);
// After sync_io: scatter from staging and expand broadcast dims (synchronous Move-DMA copies).
void finish_load(const BoxView& v, Addr tile, Addr staging);

// Stores the compact tile at `tile` to `v` (which must not broadcast).
void store(const BoxView& v, Addr tile, bool async);

// Within each position of `outer` (dims with equal src/dst byte strides), replicates the block
// of `block_bytes` at the position's start `copies` times back to back, by doubling NRAM->NRAM
// copies: ceil(log2(copies)) copies in all.
void replicate(Addr base, std::int64_t block_bytes, std::int64_t copies, const std::vector<CopyDim>& outer);

// An address that marks "no buffer" (e.g. no staging allocated).
constexpr Addr kNoBuffer{sim::Space::kNram, ~std::uint64_t{0}};

}  // namespace mlusim::mlu::tile
