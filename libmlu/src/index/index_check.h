// Kernel-side handling of index tensors: int32/int64 indices brought to int32 in NRAM and
// range-checked on the VFU (two compares, a max and a reduce per chunk); an index outside
// [0, size) traps the kernel with the op's message. Kernels then read single indices with the
// scalar unit to form addresses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::idx {

using dev::Addr;

// What an out-of-range index is reported against.
struct IndexBound {
  const char* op;
  int dim;
  std::int64_t size;
};

// NRAM scratch for up to `capacity` indices at a time.
class IndexChecker {
 public:
  IndexChecker(std::size_t capacity, DType index_dtype);

  // Converts `count` indices at `src` (NRAM, index dtype) to int32, checks them against `bound`
  // and returns where the int32 indices are (src itself for int32 indices).
  Addr check(Addr src, std::size_t count, const IndexBound& bound) const;

  // Loads `count` indices from GDRAM (element stride `stride`) and checks them.
  Addr load(std::uint64_t gdram, std::int64_t stride, std::size_t count, const IndexBound& bound) const;

  // Per element NRAM bytes this checker allocates.
  static std::size_t bytes_per_index(DType index_dtype);

 private:
  DType dtype_;
  Addr raw_, values_, flags_, flags2_, any_;
};

// Scalar load of the i-th int32 index at `values`.
std::int64_t index_at(Addr values, std::size_t i);

}  // namespace mlusim::mlu::idx
