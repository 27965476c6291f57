#include "memory/gdram.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mlusim::sim {
namespace {
void* map_or_throw(std::uint64_t bytes, int prot, const char* what) {
  void* p = ::mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("GDRAM: cannot map ") + std::to_string(bytes) + " bytes for the " + what +
                             ": " + std::strerror(errno));
  return p;
}
}  // namespace

GdramMemory::GdramMemory(std::uint64_t capacity_bytes) : size_(capacity_bytes) {
  reservation_ = map_or_throw(size_, PROT_NONE, "device address range");
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
