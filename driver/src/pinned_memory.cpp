#include "pinned_memory.h"

#include <cstdlib>

namespace mlusim::driver {

PinnedMemory::~PinnedMemory() {
  for (const auto& [addr, bytes] : live_) std::free(reinterpret_cast<void*>(addr));
}

void* PinnedMemory::allocate(std::size_t bytes) {
  // More than a 47-bit user address space can hold: fail here rather than in the allocator
  // (sanitizer allocators abort on such sizes instead of returning NULL).
  if (bytes > (std::size_t{1} << 47)) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, kAlignment, bytes) != 0) return nullptr;
  live_.emplace(reinterpret_cast<std::uintptr_t>(p), bytes);
  return p;
}

bool PinnedMemory::release(void* p) {
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == live_.end()) return false;
  live_.erase(it);
  std::free(p);
  return true;
}

std::size_t PinnedMemory::find(const void* p, const void** start) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = live_.upper_bound(a);
  if (it == live_.begin()) return 0;
  --it;
  if (a - it->first >= it->second) return 0;
  if (start) *start = reinterpret_cast<const void*>(it->first);
  return it->second;
}

bool PinnedMemory::contains(const void* p, std::size_t bytes) const {
  const void* start = nullptr;
  const std::size_t size = find(p, &start);
  if (size == 0) return false;
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(start);
  return bytes <= size - offset;
}

}  // namespace mlusim::driver
