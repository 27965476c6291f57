#include "device_allocator.h"

#include <iterator>

namespace mlusim::driver {

DeviceAllocator::DeviceAllocator(std::uint64_t base, std::uint64_t capacity)
    : base_(base), capacity_(capacity / kGranule * kGranule) {
  if (capacity_ > 0) insert_free(base_, capacity_);
}

void DeviceAllocator::insert_free(std::uint64_t addr, std::uint64_t size) {
  free_by_addr_.emplace(addr, size);
  free_by_size_.emplace(size, addr);
}

void DeviceAllocator::erase_free(std::map<std::uint64_t, std::uint64_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_addr_.erase(it);
}

std::optional<std::uint64_t> DeviceAllocator::allocate(std::uint64_t bytes) {
  if (bytes == 0 || bytes > capacity_) return std::nullopt;
  const std::uint64_t size = (bytes + kGranule - 1) / kGranule * kGranule;  // no overflow: bytes <= capacity_
  auto fit = free_by_size_.lower_bound({size, 0});
  if (fit == free_by_size_.end()) return std::nullopt;
  const auto [block_size, addr] = *fit;
  erase_free(free_by_addr_.find(addr));
  if (block_size > size) insert_free(addr + size, block_size - size);
  live_.emplace(addr, Allocation{addr, bytes, size});
  reserved_ += size;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return addr;
}

bool DeviceAllocator::release(std::uint64_t addr) {
  auto it = live_.find(addr);
  if (it == live_.end()) return false;
  std::uint64_t start = addr;
  std::uint64_t size = it->second.reserved;
  reserved_ -= size;
  live_.erase(it);
  // Coalesce with the free neighbours on both sides.
  auto next = free_by_addr_.lower_bound(start);
  if (next != free_by_addr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      erase_free(prev);
    }
  }
  next = free_by_addr_.lower_bound(start + size);
  if (next != free_by_addr_.end() && next->first == start + size) {
    size += next->second;
    erase_free(next);
  }
  insert_free(start, size);
  return true;
}

void DeviceAllocator::release_all() {
  live_.clear();
  free_by_addr_.clear();
  free_by_size_.clear();
  reserved_ = 0;
  if (capacity_ > 0) insert_free(base_, capacity_);
}

const DeviceAllocator::Allocation* DeviceAllocator::find(std::uint64_t addr) const {
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  return addr - a.addr < a.requested ? &a : nullptr;
}

bool DeviceAllocator::contains(std::uint64_t addr, std::uint64_t bytes) const {
  const Allocation* a = find(addr);
  return a != nullptr && bytes <= a->requested - (addr - a->addr);
}

}  // namespace mlusim::driver
