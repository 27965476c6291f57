#include "host_thread.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace mlusim::driver {

HostThread& this_thread() {
  thread_local HostThread state;
  if (state.os_thread_id == 0) state.os_thread_id = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return state;
}

}  // namespace mlusim::driver
