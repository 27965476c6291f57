// Tiling of an elementwise pass over coalesced views: a tile is a box of whole innermost rows
// (or a chunk of one long row), visited in row-major order, so each tile is few, long DMA
// segments and the logical (row-major) index of every element is known to the kernel.
#pragma once

#include <cstdint>

#include "softmax/box_copy.h"

namespace mlusim::mlu::nn {

struct ElementwiseTiling {
  int ndim = 0;  // >= 2 (unit dims prepended)
  std::array<std::int64_t, kMaxViewDims> dims{};
  std::int64_t rows = 1;  // of dim ndim-2 per tile
  std::int64_t cols = 1;  // of dim ndim-1 per tile

  std::int64_t tiles() const;
  std::int64_t max_elements() const { return rows * cols; }
  Box box(std::int64_t tile) const;
  // Row-major index (over all dims) of the first element of row `r` of box `b`.
  std::int64_t flat_index(const Box& b, std::int64_t r) const;
};

// Views of equal dims coalesced jointly (all dims one group) and padded to >= 2 dims; the tiling
// of tiles up to `max_elements` elements.
ElementwiseTiling plan_elementwise(std::vector<TensorView*> views, std::int64_t max_elements);

}  // namespace mlusim::mlu::nn
