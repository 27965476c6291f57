#include "host_thread.h"

namespace mlusim::driver {

HostThread& this_thread() {
  thread_local HostThread state;
  return state;
}

}  // namespace mlusim::driver
