// What the libmlu benchmarks share: a device session on the mlu370-x4 preset (a libmlu handle,
// device buffers freed at the end, optional timing-only mode) and hard failure on any error (a
// benchmark that silently measured a failed op would report nonsense).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::bench {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "benchmark: %s\n", what.c_str());
  std::abort();
}
inline void check(mlu::Status s, const char* what) {
  if (s != mlu::Status::kSuccess) die(std::string(what) + ": " + mlu::status_name(s) + " " + mlu::last_error_detail());
}
inline void check(cnrtRet_t r, const char* what) {
  if (r != cnrtSuccess) die(std::string(what) + ": " + cnrtGetErrorStr(r) + " " + mlusimGetLastErrorMessage());
}

// One device session per benchmark case: a fresh mlu370-x4, a handle, device buffers.
// Timing-only mode skips floating-point arithmetic; cycles are identical by design.
struct Session {
  mlu::Handle* h = nullptr;
  std::vector<void*> buffers;
  explicit Session(bool timing_only) {
    check(mlusimLoadConfig("mlu370-x4"), "load config");
    check(mlusimSetTimingOnly(timing_only ? 1 : 0), "timing-only");
    check(mlu::Handle::create(&h), "handle");
  }
  ~Session() {
    for (void* p : buffers) cnrtFree(p);
    mlu::Handle::destroy(h);
    mlusimSetTimingOnly(0);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  void* alloc(std::size_t bytes) {
    void* p = nullptr;
    check(cnrtMalloc(&p, std::max<std::size_t>(bytes, 1)), "cnrtMalloc");
    buffers.push_back(p);
    return p;
  }
};

}  // namespace mlusim::bench
