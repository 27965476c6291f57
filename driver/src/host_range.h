// Whether a host range is mapped memory, so that copying from or to a garbage host pointer is an
// error code instead of a crash (of the calling thread, or later of the simulation thread).
#pragma once

#include <cstddef>

namespace mlusim::driver {

// True when every page of [p, p + bytes) is mapped in this process (bytes > 0). It does not
// check protection: a read-only or PROT_NONE page passes.
bool host_range_mapped(const void* p, std::size_t bytes);

}  // namespace mlusim::driver
