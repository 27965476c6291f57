#include "memory/gdram.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mlusim::sim {
namespace {
void* map_or_throw(std::uint64_t bytes, int prot, const char* what, void* hint = nullptr) {
  if (hint != nullptr) {
    // MAP_FIXED_NOREPLACE: the hint or nothing (EEXIST when something lives there already).
    void* p = ::mmap(hint, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == hint) return p;
    if (p != MAP_FAILED) ::munmap(p, bytes);  // a kernel before 4.17 treats the flag as a hint
  }
  void* p = ::mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("GDRAM: cannot map ") + std::to_string(bytes) + " bytes for the " + what +
                             ": " + std::strerror(errno));
  return p;
}
}  // namespace

std::uint64_t GdramMemory::preferred_base(int device_index) {
  constexpr std::uint64_t kTiB = 1ull << 40;
  return 32 * kTiB + static_cast<std::uint64_t>(device_index) * 2 * kTiB;
}

GdramMemory::GdramMemory(std::uint64_t capacity_bytes, int device_index) : size_(capacity_bytes) {
  reservation_ = map_or_throw(size_, PROT_NONE, "device address range",
                              reinterpret_cast<void*>(static_cast<std::uintptr_t>(preferred_base(device_index))));
  base_ = reinterpret_cast<std::uintptr_t>(reservation_);
  try {
    backing_ = static_cast<std::uint8_t*>(map_or_throw(size_, PROT_READ | PROT_WRITE, "backing store"));
  } catch (...) {
    ::munmap(reservation_, size_);
    throw;
  }
}

GdramMemory::~GdramMemory() {
  ::munmap(backing_, size_);
  ::munmap(reservation_, size_);
}

}  // namespace mlusim::sim
