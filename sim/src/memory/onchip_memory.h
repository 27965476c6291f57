// An on-chip scratchpad (NRAM, WRAM or a cluster's SRAM): its bytes plus a bump allocator that
// kernels use through dev::alloc. Allocation is per task and released when the task ends, as
// BANG's statically declared __nram__/__wram__/__mlu_shared__ buffers are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlusim/sim/address.h"

namespace mlusim::sim {

class OnChipMemory {
 public:
  static constexpr std::uint64_t kAlignment = 128;  // vector operands align to 128 bytes (BANG)

  OnChipMemory(Space space, std::uint64_t bytes) : space_(space), bytes_(bytes) {}
  Space space() const { return space_; }
  std::uint64_t size() const { return bytes_; }
  bool contains(std::uint64_t offset, std::uint64_t bytes) const {
    return bytes <= bytes_ && offset <= bytes_ - bytes;
  }
  // Host view of [offset, offset+bytes); caller has checked contains(). Backing is allocated
  // on first use so that idle cores of a large preset cost no host memory.
  std::uint8_t* data(std::uint64_t offset) {
    if (storage_.empty()) storage_.resize(bytes_);
    return storage_.data() + offset;
  }

 private:
  Space space_;
  std::uint64_t bytes_;
  std::vector<std::uint8_t> storage_;
};

// Bump allocator over one OnChipMemory for one task. Returns the offset, or nullopt-like
// kNoSpace when the request does not fit (the caller faults the kernel with the numbers).
class BumpAllocator {
 public:
  static constexpr std::uint64_t kNoSpace = ~std::uint64_t{0};
  void reset() { top_ = 0; }
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t capacity) {
    std::uint64_t start = (top_ + OnChipMemory::kAlignment - 1) / OnChipMemory::kAlignment * OnChipMemory::kAlignment;
    if (bytes > capacity || start > capacity - bytes) return kNoSpace;
    top_ = start + bytes;
    return start;
  }
  std::uint64_t used() const { return top_; }

 private:
  std::uint64_t top_ = 0;
};

}  // namespace mlusim::sim
