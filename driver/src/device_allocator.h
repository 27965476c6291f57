// The device address space of one simulated device: a best-fit allocator over
// [base, base + capacity) and the registry of live allocations that every device pointer and
// range is validated against.
//
// Granularity: every allocation starts on a 512-byte boundary and occupies its size rounded up
// to a multiple of 512 bytes (what cnrtMemGetInfo counts as used). Validation uses the
// requested size: a range that runs into the rounding slack is invalid.
//
// Not thread-safe: the runtime calls it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace mlusim::driver {

class DeviceAllocator {
 public:
  static constexpr std::uint64_t kGranule = 512;  // bytes: alignment and size unit

  struct Allocation {
    std::uint64_t addr = 0;
    std::uint64_t requested = 0;  // bytes asked for
    std::uint64_t reserved = 0;   // requested rounded up to kGranule
  };

  DeviceAllocator(std::uint64_t base, std::uint64_t capacity);

  // Best fit: the smallest free block that holds the rounded size (lowest address on ties).
  // nullopt when none does. bytes must be > 0.
  std::optional<std::uint64_t> allocate(std::uint64_t bytes);
  // Releases the allocation starting at addr; false if addr is not the start of one.
  bool release(std::uint64_t addr);
  void release_all();

  // The live allocation containing addr, or nullptr.
  const Allocation* find(std::uint64_t addr) const;
  // Whether [addr, addr + bytes) lies inside one live allocation's requested size (bytes > 0).
  bool contains(std::uint64_t addr, std::uint64_t bytes) const;
  bool in_address_space(std::uint64_t addr) const { return addr >= base_ && addr - base_ < capacity_; }

  std::uint64_t base() const { return base_; }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t reserved_bytes() const { return reserved_; }  // sum of live reserved sizes
  std::uint64_t peak_reserved_bytes() const { return peak_reserved_; }
  std::size_t live_count() const { return live_.size(); }
  std::size_t free_block_count() const { return free_by_addr_.size(); }
  std::uint64_t largest_free_block() const { return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first; }

 private:
  void insert_free(std::uint64_t addr, std::uint64_t size);
  void erase_free(std::map<std::uint64_t, std::uint64_t>::iterator it);

  std::uint64_t base_;
  std::uint64_t capacity_;
  std::uint64_t reserved_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_by_addr_;               // addr -> size
  std::set<std::pair<std::uint64_t, std::uint64_t>> free_by_size_;    // (size, addr)
  std::map<std::uint64_t, Allocation> live_;                          // addr -> allocation
};

}  // namespace mlusim::driver
