#include "host_range.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace mlusim::driver {

bool host_range_mapped(const void* p, std::size_t bytes) {
  static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  if (bytes == 0) return true;
  if (begin + bytes < begin) return false;  // wraps around the address space
  const std::uintptr_t first = begin / page * page;
  const std::uintptr_t last = (begin + bytes + page - 1) / page * page;
  // msync(MS_ASYNC) does no I/O on anonymous memory; it fails with ENOMEM when part of the
  // range is not mapped, which is exactly the question.
  return msync(reinterpret_cast<void*>(first), last - first, MS_ASYNC) == 0 || errno != ENOMEM;
}

}  // namespace mlusim::driver
