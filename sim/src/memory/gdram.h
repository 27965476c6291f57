// GDRAM: the device's global memory. Device addresses are the host virtual addresses of a
// PROT_NONE reservation (so a host dereference of a device pointer faults at once, and device
// pointers of different devices never overlap); the bytes live in a separate MAP_NORESERVE
// mapping, so a 24 GB device costs host memory only for the pages that are touched.
//
// The reservation is placed at a fixed address per device index when that range is free
// (preferred_base: 32 TiB + index x 2 TiB, above ASan's shadow and below the stack), so device
// pointers, and the traces and allocator histories that show them, are the same in every run of
// the same program (ASLR would otherwise move them). If the range is taken, anywhere will do.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlusim::sim {

class GdramMemory {
 public:
  GdramMemory(std::uint64_t capacity_bytes, int device_index);
  // Where device `device_index`'s memory is placed when free (the config bounds DRAM to 1 TiB, so
  // the 2 TiB slots of up to 16 devices never overlap).
  static std::uint64_t preferred_base(int device_index);
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
