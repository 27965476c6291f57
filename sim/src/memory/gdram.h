// GDRAM: the device's global memory. Device addresses are the host virtual addresses of a
// PROT_NONE reservation (so a host dereference of a device pointer faults at once, and device
// pointers of different devices never overlap); the bytes live in a separate MAP_NORESERVE
// mapping, so a 24 GB device costs host memory only for the pages that are touched.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlusim::sim {

class GdramMemory {
 public:
  explicit GdramMemory(std::uint64_t capacity_bytes);
  ~GdramMemory();
  GdramMemory(const GdramMemory&) = delete;
  GdramMemory& operator=(const GdramMemory&) = delete;

  std::uint64_t base() const { return base_; }
  std::uint64_t size() const { return size_; }
  bool contains(std::uint64_t addr, std::uint64_t bytes) const {
    return addr >= base_ && bytes <= size_ && addr - base_ <= size_ - bytes;
  }
  // Backing bytes of a range; the caller has checked contains().
  std::uint8_t* backing(std::uint64_t addr) const { return backing_ + (addr - base_); }

 private:
  std::uint64_t size_;
  std::uint64_t base_ = 0;
  void* reservation_ = nullptr;
  std::uint8_t* backing_ = nullptr;
};

}  // namespace mlusim::sim
