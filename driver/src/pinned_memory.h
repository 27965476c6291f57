// Pinned host memory from cnrtHostMalloc: allocation and the registry that tells whether a host
// range is pinned (fast host-link transfers) or pageable.
//
// Not thread-safe: the runtime calls it under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace mlusim::driver {

class PinnedMemory {
 public:
  static constexpr std::size_t kAlignment = 4096;  // bytes: page aligned, as page-locked memory is

  PinnedMemory() = default;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  ~PinnedMemory();

  // nullptr when the host allocation fails. bytes must be > 0.
  void* allocate(std::size_t bytes);
  // false if p is not the start of a live pinned allocation.
  bool release(void* p);

  // Whether [p, p + bytes) lies inside one live pinned allocation.
  bool contains(const void* p, std::size_t bytes) const;
  // Size of the pinned allocation containing p (0 if none) and its start.
  std::size_t find(const void* p, const void** start) const;

 private:
  std::map<std::uintptr_t, std::size_t> live_;  // start -> bytes
};

}  // namespace mlusim::driver
