// Fuzz target: the CNRT C API (driver/include/cnrt.h) and the simulator extensions
// (mlusim_ext.h), driven by a byte stream of calls and their arguments.
//
// The input is read with libFuzzer's FuzzedDataProvider (integers from the input's end): a byte
// picks a call, the next bytes its arguments, until the input runs out (at most kMaxCalls calls). Calls: cnrtMalloc / cnrtFree,
// cnrtMemcpy (every direction, plus invalid direction values), cnrtMemcpyAsync(_V2/_V3),
// cnrtMemcpyPeer(Async), cnrtMemset(Async), queues (create, with priority, destroy, sync, query,
// priority, wait on a notifier), notifiers (create with flags, place, query, wait, elapsed time,
// duration, destroy), kernel launches (registered kernels below that copy, fill, trap, break a
// barrier, race their own DMA, assert, or do nothing; bogus kernel handles, NULL or short argument
// arrays, bad dims and function types), host functions, device set/get/count/properties/
// attributes/sync/reset, peer accessibility, device flags, cnrtMemGetInfo,
// cnrtPointerGetAttributes, pinned host memory, error names, and the extensions' clocks, stats,
// kernel records and launch tags.
//
// Arguments mix valid and invalid values: live, freed and interior device pointers, ranges past
// the end of an allocation, made-up addresses inside a device's address space, NULL and unmapped
// host addresses, huge sizes, destroyed and bogus queue/notifier handles, out-of-range devices,
// and enum values outside their enums (passed from C, cnrt_api_fuzz_c_calls.c). Host functions
// may call the API themselves (non-blocking calls, and a sync of their own queue).
//
// What the harness never does, because the caller would be at fault, not the runtime:
//   - pass host memory it does not own that may be mapped. Host buffers are a pageable and a
//     pinned one, each a device's whole DRAM plus kHostSlack, used at offsets below kHostSlack,
//     so any copy the runtime accepts stays inside them; a pointer just outside a device's
//     address space (host memory to the runtime) is passed only where the direction requires a
//     device pointer, so it is refused without being read;
//   - ask for pinned memory between 1 MiB and 2^47 bytes (granted for real; libFuzzer's malloc
//     limit would report it), or launch more than 512 valid tasks (legal, but slow to simulate).
// Not driven here: mlusimLoadConfig/mlusimReset (a rebuild per call), traces (file output),
// several host threads calling at once (tests/driver/stress does that).
//
// The runtime runs on the `tiny` preset with two devices and 16 MiB of DRAM each. Each input
// starts from the state the previous one left: at its end the harness frees what the input
// allocated, destroys its queues and notifiers, synchronizes both devices and resets their stats,
// so inputs are independent. CNRT_API_FUZZ_VERBOSE=1 prints every call and its code.
//
// Findings (abort with a message, or a sanitizer/libFuzzer report):
//   - a return code the call's comment in cnrt.h / mlusim_ext.h does not list (cnrtErrorInit and
//     cnrtErrorSysNoMem are allowed everywhere; cnrtErrorUnknown, an internal error, never);
//   - a failing code that is not recorded as the thread's last error, or has no message, or a
//     succeeding one that sets it;
//   - results that break the header's promises: cnrtMalloc's pointer not 512-byte aligned in a
//     device's space, cnrtMalloc(0) not NULL, a reused queue/notifier handle, cnrtFree or a
//     destroy succeeding twice, cnrtGetDevice not what cnrtSetDevice set, a device count not 2;
//   - after the input's cleanup: device memory still in use, or freeing/destroying what the input
//     created failing;
//   - a crash, a hang (-timeout), a leak (LeakSanitizer), ASan/UBSan reports, an exception.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "cnrt.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim_ext.h"

// The calls with enum parameters, made from C (cnrt_api_fuzz_c_calls.c): any int, as C callers may.
extern "C" {
cnrtRet_t fuzz_c_memcpy(void* dst, void* src, size_t bytes, int dir);
cnrtRet_t fuzz_c_memcpy_async(int variant, void* dst, void* src, size_t bytes, cnrtQueue_t queue, int dir);
cnrtRet_t fuzz_c_invoke_kernel(const void* kernel, cnrtDim3_t dim, int type, void** args, cnrtQueue_t queue);
cnrtRet_t fuzz_c_device_attribute(int* value, int attr, int device);
int fuzz_c_error_texts_present(int code);
}

// ---- kernels the fuzzer launches ------------------------------------------------------------

namespace {
using namespace mlusim::dev;
namespace sim = mlusim::sim;

// What fuzz_kernel does (its `mode` argument, taken modulo kKernelModes).
enum KernelMode : int {
  kCopy = 0,      // n floats src -> NRAM -> dst, split over the tasks
  kFill,          // dst[i] = 1 for i < n
  kTrap,          // trap()
  kBarrier,       // only even tasks reach sync_cluster: a barrier mismatch
  kHazard,        // an async copy into NRAM, then a read of that NRAM before sync_io
  kAssert,        // kassert(false)
  kScalar,        // a scalar load at src + n floats (GDRAM: not a scalar space) and an NRAM store at n
  kNothing,
  kKernelModes
};

std::pair<std::size_t, std::size_t> task_share(std::size_t n) {
  const std::size_t per = (n + task_dim() - 1) / task_dim();
  const std::size_t begin = std::min(n, per * task_id());
  return {begin, std::min(n, begin + per)};
}

}  // namespace

MLUSIM_KERNEL(fuzz_kernel, (const float* src, float* dst, int n, int mode)) {
  if (is_memory_core() && mode != kBarrier) return;
  const auto count = static_cast<std::size_t>(static_cast<unsigned>(n));  // negative: huge
  switch (((mode % kKernelModes) + kKernelModes) % kKernelModes) {
    case kCopy: {
      const auto [begin, end] = task_share(count);
      const std::size_t tile = 1024;
      auto buf = nram_alloc<float>(tile);
      for (std::size_t i = begin; i < end; i += tile) {
        const std::size_t m = std::min(tile, end - i);
        memcpy(buf, Gdram<float>(src) + static_cast<std::int64_t>(i), m * sizeof(float), Dir::kGdram2Nram);
        memcpy(Gdram<float>(dst) + static_cast<std::int64_t>(i), buf, m * sizeof(float), Dir::kNram2Gdram);
      }
      break;
    }
    case kFill: {
      const auto [begin, end] = task_share(count);
      if (begin == end) break;
      auto buf = nram_alloc<float>(end - begin);  // faults when it does not fit
      vec_fill(DType::kFloat32, buf, 1.0, end - begin);
      memcpy(Gdram<float>(dst) + static_cast<std::int64_t>(begin), buf, (end - begin) * sizeof(float), Dir::kNram2Gdram);
      break;
    }
    case kTrap: trap("fuzz trap"); break;
    case kBarrier:
      if (task_id() % 2 == 0) sync_cluster();
      break;
    case kHazard: {
      auto buf = nram_alloc<float>(64);
      auto other = nram_alloc<float>(64);
      memcpy_async(buf, Gdram<float>(src), 64 * sizeof(float), Dir::kGdram2Nram);
      vec_fill(DType::kFloat32, other, 0.0, 64);
      memcpy(other, buf, 64 * sizeof(float), Dir::kNram2Nram);  // reads buf before sync_io
      sync_io();
      break;
    }
    case kAssert: kassert(false, "fuzz assert"); break;
    case kScalar: {
      auto buf = nram_alloc<float>(16);
      store(buf + static_cast<std::int64_t>(count % 64), 1.0f);  // past 16 floats: out of bounds
      (void)load(Gdram<float>(src) + static_cast<std::int64_t>(count % 64));
      break;
    }
    default: break;
  }
}

MLUSIM_KERNEL(fuzz_empty_kernel, ()) {}

// ---- the harness ------------------------------------------------------------------------------

namespace {

constexpr int kDevices = 2;
constexpr std::size_t kDram = std::size_t{16} << 20;  // dram.capacity_bytes of each device
constexpr std::size_t kHostSlack = 4096;               // host offsets stay below this
constexpr std::size_t kHostBytes = kDram + kHostSlack;
constexpr std::size_t kMaxCalls = 64;
constexpr std::size_t kSlots = 8;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "cnrt_api_fuzz: FINDING: %s\n", what.c_str());
  std::abort();
}

struct DevicePtr {
  void* p = nullptr;
  std::size_t bytes = 0;
  int device = 0;
  bool live = false;
};
struct Handle {
  void* h = nullptr;
  int device = 0;
  bool live = false;
};

struct Harness {
  std::uint8_t* pageable = nullptr;  // kHostBytes, never freed
  std::uint8_t* pinned = nullptr;    // kHostBytes from cnrtHostMalloc, never freed
  std::array<std::uint64_t, kDevices> base{};  // start of each device's address space
} g;

// One input's state.
struct State {
  std::array<DevicePtr, kSlots> ptrs{};
  std::array<Handle, kSlots> queues{};
  std::array<Handle, kSlots> notifiers{};
  std::array<void*, 4> pinned{};  // small cnrtHostMalloc blocks (never used as copy endpoints)
  std::array<bool, 4> pinned_live{};
  int device = 0;                 // the thread's current device as the harness believes it
};

thread_local const char* call_name = "";  // the call being checked, for messages (host functions too)

bool g_verbose = false;  // $CNRT_API_FUZZ_VERBOSE=1: print every checked call (to read a reproducer)

// Checks `ret` against the codes the call may return, and the last-error contract.
void check(cnrtRet_t ret, std::initializer_list<cnrtRet_t> allowed) {
  if (g_verbose) std::fprintf(stderr, "cnrt_api_fuzz: %s -> %s %s\n", call_name, cnrtGetErrorName(ret), mlusimGetLastErrorMessage());
  bool ok = ret == cnrtSuccess || ret == cnrtErrorInit || ret == cnrtErrorSysNoMem;
  for (const cnrtRet_t a : allowed) ok = ok || ret == a;
  if (!ok)
    finding(std::string(call_name) + " returned " + cnrtGetErrorName(ret) + " (" + std::to_string(static_cast<int>(ret)) +
            "), not one of its documented codes: " + mlusimGetLastErrorMessage());
  if (ret == cnrtSuccess || ret == cnrtErrorNotReady) {
    if (cnrtPeekAtLastError() != cnrtSuccess)
      finding(std::string(call_name) + " returned " + cnrtGetErrorName(ret) + " but set the last error to " +
              cnrtGetErrorName(cnrtPeekAtLastError()));
    return;
  }
  if (cnrtPeekAtLastError() != ret)
    finding(std::string(call_name) + " returned " + cnrtGetErrorName(ret) + " but the last error is " +
            cnrtGetErrorName(cnrtPeekAtLastError()));
  if (*mlusimGetLastErrorMessage() == '\0') finding(std::string(call_name) + " failed without a message");
  if (cnrtGetLastError() != ret || cnrtPeekAtLastError() != cnrtSuccess)
    finding(std::string(call_name) + ": cnrtGetLastError did not return and reset the last error");
}

#define CALL(expr, ...)          \
  do {                           \
    call_name = #expr;           \
    check((expr), {__VA_ARGS__}); \
  } while (0)

class Driver {
 public:
  Driver(FuzzedDataProvider& in, State& s) : in_(in), s_(s) {}

  void run() {
    for (std::size_t i = 0; i < kMaxCalls && in_.remaining_bytes() > 0; ++i) step();
  }

 private:
  // ---- argument generators ----

  std::size_t slot() { return in_.ConsumeIntegralInRange<std::size_t>(0, kSlots - 1); }

  std::size_t size_arg() {
    switch (in_.ConsumeIntegralInRange(0, 4)) {
      case 0: return in_.ConsumeIntegral<std::uint8_t>();
      case 1: return in_.ConsumeIntegral<std::uint16_t>();
      case 2: return in_.ConsumeIntegralInRange<std::size_t>(0, std::size_t{1} << 20);
      case 3: {
        static constexpr std::size_t kSpecial[] = {0, 1, 511, 512, 513, 4096, kDram - 1, kDram, kDram + 1,
                                                   kDram / 2 + 1, SIZE_MAX, SIZE_MAX - 511, SIZE_MAX / 2,
                                                   std::size_t{1} << 40, std::size_t{1} << 47, (std::size_t{1} << 47) + 1};
        return kSpecial[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(kSpecial) - 1)];
      }
      default: return in_.ConsumeIntegral<std::uint32_t>();
    }
  }

  int device_arg() {
    switch (in_.ConsumeIntegralInRange(0, 3)) {
      case 0: return 0;
      case 1: return 1;
      case 2: return in_.ConsumeIntegralInRange(-2, 3);
      default: return in_.PickValueInArray({INT_MIN, INT_MAX, kDevices, -1});
    }
  }

  // A pointer for a copy, memset or free. *host_ok says it is the harness's own host memory
  // (the range [p, p + kDram) is inside one of its buffers).
  void* pointer_arg(bool* host_ok = nullptr) {
    if (host_ok) *host_ok = false;
    switch (in_.ConsumeIntegralInRange(0, 9)) {
      case 0:
      case 1:
      case 2: {  // a slot's pointer (live or freed) at offset 0 most often
        const DevicePtr& d = s_.ptrs[slot()];
        if (d.p == nullptr) return nullptr;
        std::uint64_t off = 0;
        switch (in_.ConsumeIntegralInRange(0, 5)) {
          case 0:
          case 1:
          case 2: off = 0; break;
          case 3: off = d.bytes; break;
          case 4: off = d.bytes > 0 ? d.bytes - 1 : 0; break;
          default: off = in_.ConsumeIntegral<std::uint16_t>(); break;
        }
        return reinterpret_cast<void*>(reinterpret_cast<std::uint64_t>(d.p) + off);
      }
      case 3: return nullptr;
      case 4: {  // anywhere in a device's address space (never dereferenced by the host)
        const int dev = in_.ConsumeIntegralInRange(0, kDevices - 1);
        return reinterpret_cast<void*>(g.base[dev] + in_.ConsumeIntegralInRange<std::uint64_t>(0, kDram - 1));
      }
      case 5:
      case 6: {
        if (host_ok) *host_ok = true;
        return g.pageable + in_.ConsumeIntegralInRange<std::size_t>(0, kHostSlack - 1);
      }
      case 7: {
        if (host_ok) *host_ok = true;
        return g.pinned + in_.ConsumeIntegralInRange<std::size_t>(0, kHostSlack - 1);
      }
      case 8: {  // just below a device's address space: host memory to the runtime (see copy_call)
        const int dev = in_.ConsumeIntegralInRange(0, kDevices - 1);
        return reinterpret_cast<void*>(g.base[dev] - in_.ConsumeIntegralInRange<std::uint64_t>(1, 4096));
      }
      default: {  // host addresses that are never mapped
        static const std::uint64_t kUnmapped[] = {1, 4095, 0xffff800000000000ull, 0xfffffffffffff000ull,
                                                  0x0000800000000000ull};
        return reinterpret_cast<void*>(kUnmapped[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(kUnmapped) - 1)]);
      }
    }
  }

  bool in_device_space(const void* p) const {
    const auto a = reinterpret_cast<std::uint64_t>(p);
    for (const std::uint64_t b : g.base)
      if (a >= b && a - b < kDram) return true;
    return false;
  }
  static bool unmapped(const void* p) {
    const auto a = reinterpret_cast<std::uint64_t>(p);
    return a < 4096 || a >= 0x0000800000000000ull;
  }
  // Whether the runtime could treat `p` as host memory it may touch: only the harness's buffers.
  bool safe_host(const void* p, bool host_ok) const { return p == nullptr || host_ok || in_device_space(p) || unmapped(p); }

  cnrtQueue_t queue_arg() {
    switch (in_.ConsumeIntegralInRange(0, 6)) {
      case 0:
      case 1:
      case 2: return static_cast<cnrtQueue_t>(s_.queues[slot()].h);  // live, destroyed or NULL
      case 3: return nullptr;
      case 4: return in_.ConsumeBool() ? cnrtQueuePerThread : cnrtQueueLegacy;
      case 5: return reinterpret_cast<cnrtQueue_t>(in_.ConsumeIntegral<std::uint64_t>());
      default: {  // a notifier handle where a queue belongs
        return static_cast<cnrtQueue_t>(s_.notifiers[slot()].h);
      }
    }
  }

  cnrtNotifier_t notifier_arg() {
    switch (in_.ConsumeIntegralInRange(0, 5)) {
      case 0:
      case 1:
      case 2:
      case 3: return static_cast<cnrtNotifier_t>(s_.notifiers[slot()].h);
      case 4: return reinterpret_cast<cnrtNotifier_t>(in_.ConsumeIntegral<std::uint64_t>());
      default: return reinterpret_cast<cnrtNotifier_t>(s_.queues[slot()].h);  // a queue handle
    }
  }

  // A cnrtMemTransDir_t value, or an int outside it as a C caller may pass.
  int dir_arg() {
    return in_.ConsumeIntegralInRange(0, 7) < 7 ? in_.ConsumeIntegralInRange(0, 5)
                                                : in_.PickValueInArray({-1, 6, 7, 1000, INT_MIN, INT_MAX});
  }

  // ---- calls ----

  void step() {
    switch (in_.ConsumeIntegralInRange(0, 27)) {
      case 0: malloc_call(); break;
      case 1: free_call(); break;
      case 2:
      case 3: copy_call(/*async=*/false); break;
      case 4:
      case 5: copy_call(/*async=*/true); break;
      case 6: memset_call(); break;
      case 7: peer_call(); break;
      case 8: queue_create(); break;
      case 9: queue_destroy(); break;
      case 10: {
        const cnrtQueue_t q = queue_arg();
        CALL(cnrtQueueSync(q), cnrtErrorInvalidResourceHandle, cnrtErrorKernelTrap);
        break;
      }
      case 11: {
        const cnrtQueue_t q = queue_arg();
        CALL(cnrtQueueQuery(q), cnrtErrorNotReady, cnrtErrorInvalidResourceHandle, cnrtErrorKernelTrap);
        break;
      }
      case 12: {
        const cnrtNotifier_t n = notifier_arg();
        const cnrtQueue_t q = queue_arg();
        const unsigned flag = in_.ConsumeBool() ? 0u : in_.ConsumeIntegral<unsigned>();
        CALL(cnrtQueueWaitNotifier(n, q, flag), cnrtErrorInvalidResourceHandle, cnrtErrorArgsInvalid);
        break;
      }
      case 13: notifier_create(); break;
      case 14: notifier_destroy(); break;
      case 15: {
        const cnrtNotifier_t n = notifier_arg();
        const cnrtQueue_t q = queue_arg();
        if (in_.ConsumeBool()) {
          CALL(cnrtPlaceNotifier(n, q), cnrtErrorInvalidResourceHandle);
        } else {
          const unsigned flags = in_.ConsumeBool() ? 0u : in_.ConsumeIntegral<unsigned>();
          CALL(cnrtPlaceNotifierWithFlags(n, q, flags), cnrtErrorInvalidResourceHandle, cnrtErrorArgsInvalid);
        }
        break;
      }
      case 16: {
        const cnrtNotifier_t n = notifier_arg();
        if (in_.ConsumeBool()) {
          CALL(cnrtQueryNotifier(n), cnrtErrorNotReady, cnrtErrorInvalidResourceHandle);
        } else {
          CALL(cnrtWaitNotifier(n), cnrtErrorInvalidResourceHandle);
        }
        break;
      }
      case 17: {
        const cnrtNotifier_t a = notifier_arg(), b = notifier_arg();
        float value = 0;
        float* out = in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &value;
        if (in_.ConsumeBool()) {
          CALL(cnrtNotifierElapsedTime(a, b, out), cnrtErrorArgsInvalid, cnrtErrorInvalidResourceHandle,
               cnrtErrorCndrvFuncCall, cnrtErrorNotReady);
        } else {
          CALL(cnrtNotifierDuration(a, b, out), cnrtErrorArgsInvalid, cnrtErrorInvalidResourceHandle,
               cnrtErrorCndrvFuncCall, cnrtErrorNotReady);
        }
        break;
      }
      case 18: launch_call(); break;
      case 19: host_func_call(); break;
      case 20: device_call(); break;
      case 21: CALL(cnrtSyncDevice(), cnrtErrorKernelTrap); break;
      case 22: info_call(); break;
      case 23: memory_info_call(); break;
      case 24: pinned_call(); break;
      case 25: {
        const cnrtQueue_t q = queue_arg();
        int priority = 0;
        CALL(cnrtQueueGetPriority(q, in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &priority), cnrtErrorArgsInvalid,
             cnrtErrorInvalidResourceHandle);
        break;
      }
      case 26: reset_call(); break;
      default: ext_call(); break;
    }
  }

  // A host function's argument: owned by the call that runs it.
  struct HostFuncArgs {
    cnrtQueue_t queue;  // the queue it was enqueued in, as the caller named it
    bool call_api;      // also make calls that do not wait for other work (see host_func)
  };

  // Runs on a runtime thread. With call_api it uses the API as cnrt.h allows a host function to:
  // calls that do not wait for work queued after it, and a sync of its own queue, which must
  // fail with cnrtErrorIllegalState instead of waiting for itself.
  static void host_func(void* user) {
    const HostFuncArgs args = *static_cast<HostFuncArgs*>(user);
    delete static_cast<HostFuncArgs*>(user);
    if (!args.call_api) return;
    int device = -1;
    CALL(cnrtGetDevice(&device));
    double ns = 0;
    CALL(mlusimGetHostTime(&ns));
    // The queue may have been destroyed since (its work still runs).
    CALL(cnrtQueueQuery(args.queue), cnrtErrorNotReady, cnrtErrorKernelTrap, cnrtErrorInvalidResourceHandle);
    const bool named = args.queue != nullptr && args.queue != cnrtQueuePerThread && args.queue != cnrtQueueLegacy;
    if (named) CALL(cnrtQueueSync(args.queue), cnrtErrorIllegalState, cnrtErrorInvalidResourceHandle);
  }

  void host_func_call() {
    const cnrtQueue_t q = queue_arg();
    const bool null_fn = in_.ConsumeIntegralInRange(0, 5) == 0;
    auto* args = new HostFuncArgs{q, in_.ConsumeBool()};
    const cnrtRet_t r = cnrtInvokeHostFunc(q, null_fn ? nullptr : &host_func, args);
    call_name = "cnrtInvokeHostFunc";
    if (r != cnrtSuccess || null_fn) delete args;
    check(r, {cnrtErrorArgsInvalid, cnrtErrorInvalidResourceHandle});
  }

  void malloc_call() {
    const std::size_t i = slot();
    const std::size_t bytes = size_arg();
    if (in_.ConsumeIntegralInRange(0, 15) == 0) {
      CALL(cnrtMalloc(nullptr, bytes), cnrtErrorArgsInvalid);
      return;
    }
    if (s_.ptrs[i].live) {  // keep it: free it first so nothing leaks from the harness's view
      CALL(cnrtFree(s_.ptrs[i].p), cnrtErrorArgsInvalid);
      forget(s_.ptrs[i].p);
    }
    void* p = reinterpret_cast<void*>(0x1);
    const cnrtRet_t r = cnrtMalloc(&p, bytes);
    call_name = "cnrtMalloc";
    check(r, {cnrtErrorNoMem});
    if (r != cnrtSuccess) return;
    if (bytes == 0) {
      if (p != nullptr) finding("cnrtMalloc(0) did not set *pPtr to NULL");
      return;
    }
    if (!in_device_space(p) || reinterpret_cast<std::uint64_t>(p) % 512 != 0)
      finding("cnrtMalloc returned " + std::to_string(reinterpret_cast<std::uint64_t>(p)) +
              ": not a 512-byte aligned address of a device");
    forget(p);  // a freed slot with the same address is no longer "freed"
    s_.ptrs[i] = DevicePtr{p, bytes, s_.device, true};
  }

  // Marks every slot holding `p` as freed.
  void forget(void* p) {
    for (DevicePtr& d : s_.ptrs)
      if (d.p == p) d.live = false;
  }

  void free_call() {
    bool host_ok = false;
    void* p = pointer_arg(&host_ok);
    const cnrtRet_t r = cnrtFree(p);
    call_name = "cnrtFree";
    check(r, {cnrtErrorArgsInvalid});
    if (r == cnrtSuccess && p != nullptr) {
      bool was_live = false;
      for (const DevicePtr& d : s_.ptrs) was_live = was_live || (d.live && d.p == p);
      if (!was_live) finding("cnrtFree succeeded on a pointer that is not a live allocation's start");
      forget(p);
    }
  }

  void copy_call(bool async) {
    bool dst_host = false, src_host = false;
    void* dst = pointer_arg(&dst_host);
    void* src = pointer_arg(&src_host);
    std::size_t bytes = size_arg();
    const int dir = dir_arg();
    // A host range the runtime accepts must be the harness's: between two host buffers the copy
    // is host-to-host and only the harness knows the buffers' size, so keep it inside them.
    if (dst_host && src_host) bytes = std::min(bytes, kDram);
    // A pointer outside the harness's buffers and every device's space (a slot's pointer plus an
    // offset past the space's end, or just below a space) is host memory to the runtime and may
    // be mapped: pass it only where the direction requires a device pointer there, so that the
    // runtime refuses the copy without touching it.
    const int raw_dir = dir;
    const bool known_dir = raw_dir >= cnrtMemcpyHostToDev && raw_dir <= cnrtMemcpyNoDirection;
    const bool dst_must_be_device = raw_dir == cnrtMemcpyHostToDev || raw_dir == cnrtMemcpyDevToDev || raw_dir == cnrtMemcpyPeerToPeer;
    const bool src_must_be_device = raw_dir == cnrtMemcpyDevToHost || raw_dir == cnrtMemcpyDevToDev || raw_dir == cnrtMemcpyPeerToPeer;
    if (known_dir && !safe_host(dst, dst_host) && !dst_must_be_device) return;
    if (known_dir && !safe_host(src, src_host) && !src_must_be_device) return;
    if (!async) {
      CALL(fuzz_c_memcpy(dst, src, bytes, dir), cnrtErrorMemcpyDirectionInvalid, cnrtErrorArgsInvalid, cnrtErrorKernelTrap);
      return;
    }
    const cnrtQueue_t q = queue_arg();
    const int variant = in_.ConsumeIntegralInRange(0, 2);  // cnrtMemcpyAsync, _V2, _V3
    CALL(fuzz_c_memcpy_async(variant, dst, src, bytes, q, dir), cnrtErrorMemcpyDirectionInvalid, cnrtErrorArgsInvalid,
         cnrtErrorInvalidResourceHandle);
  }

  void memset_call() {
    bool host_ok = false;
    void* p = pointer_arg(&host_ok);
    const int value = in_.ConsumeIntegral<int>();
    const std::size_t bytes = size_arg();
    if (in_.ConsumeBool()) {
      CALL(cnrtMemset(p, value, bytes), cnrtErrorArgsInvalid, cnrtErrorKernelTrap);
    } else {
      const cnrtQueue_t q = queue_arg();
      CALL(cnrtMemsetAsync(p, value, bytes, q), cnrtErrorArgsInvalid, cnrtErrorInvalidResourceHandle);
    }
  }

  void peer_call() {
    void* dst = pointer_arg();
    void* src = pointer_arg();
    const int dst_dev = device_arg(), src_dev = device_arg();
    const std::size_t bytes = size_arg();
    if (in_.ConsumeBool()) {
      CALL(cnrtMemcpyPeer(dst, dst_dev, src, src_dev, bytes), cnrtErrorDeviceInvalid, cnrtErrorArgsInvalid,
           cnrtErrorKernelTrap);
    } else {
      const cnrtQueue_t q = queue_arg();
      CALL(cnrtMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, q), cnrtErrorDeviceInvalid, cnrtErrorArgsInvalid,
           cnrtErrorInvalidResourceHandle);
    }
  }

  void queue_create() {
    const std::size_t i = slot();
    if (in_.ConsumeIntegralInRange(0, 15) == 0) {
      CALL(cnrtQueueCreate(nullptr), cnrtErrorArgsInvalid);
      return;
    }
    if (s_.queues[i].live) {
      CALL(cnrtQueueDestroy(static_cast<cnrtQueue_t>(s_.queues[i].h)), cnrtErrorInvalidResourceHandle);
      s_.queues[i].live = false;
    }
    cnrtQueue_t q = nullptr;
    cnrtRet_t r;
    if (in_.ConsumeBool()) {
      r = cnrtQueueCreate(&q);
      call_name = "cnrtQueueCreate";
    } else {
      const unsigned flags = in_.ConsumeIntegralInRange(0, 3) == 0 ? in_.ConsumeIntegral<unsigned>() : 0u;
      r = cnrtQueueCreateWithPriority(&q, flags, in_.ConsumeIntegral<int>());
      call_name = "cnrtQueueCreateWithPriority";
    }
    check(r, {cnrtErrorArgsInvalid, cnrtErrorNoMem});
    if (r != cnrtSuccess) return;
    if (q == nullptr || q == cnrtQueuePerThread || q == cnrtQueueLegacy) finding("a created queue has a reserved handle");
    for (const Handle& h : s_.queues)
      if (h.h == q) finding("a queue handle was reused");
    s_.queues[i] = Handle{q, s_.device, true};
  }

  void queue_destroy() {
    const std::size_t i = slot();
    const cnrtQueue_t q = in_.ConsumeIntegralInRange(0, 3) == 0 ? queue_arg() : static_cast<cnrtQueue_t>(s_.queues[i].h);
    const cnrtRet_t r = cnrtQueueDestroy(q);
    call_name = "cnrtQueueDestroy";
    check(r, {cnrtErrorInvalidResourceHandle});
    if (r == cnrtSuccess)
      for (Handle& h : s_.queues)
        if (h.h == q) {
          if (!h.live) finding("cnrtQueueDestroy succeeded on a destroyed queue");
          h.live = false;
        }
  }

  void notifier_create() {
    const std::size_t i = slot();
    if (in_.ConsumeIntegralInRange(0, 15) == 0) {
      CALL(cnrtNotifierCreate(nullptr), cnrtErrorArgsInvalid);
      return;
    }
    if (s_.notifiers[i].live) {
      CALL(cnrtNotifierDestroy(static_cast<cnrtNotifier_t>(s_.notifiers[i].h)), cnrtErrorInvalidResourceHandle);
      s_.notifiers[i].live = false;
    }
    cnrtNotifier_t n = nullptr;
    cnrtRet_t r;
    if (in_.ConsumeBool()) {
      r = cnrtNotifierCreate(&n);
      call_name = "cnrtNotifierCreate";
    } else {
      const unsigned flags = in_.ConsumeIntegralInRange(0, 3) == 0 ? in_.ConsumeIntegral<unsigned>()
                                                                    : in_.ConsumeIntegralInRange(0u, 15u);
      r = cnrtNotifierCreateWithFlags(&n, flags);
      call_name = "cnrtNotifierCreateWithFlags";
    }
    check(r, {cnrtErrorArgsInvalid, cnrtErrorNoMem});
    if (r != cnrtSuccess) return;
    if (n == nullptr) finding("a created notifier is NULL");
    for (const Handle& h : s_.notifiers)
      if (h.h == n) finding("a notifier handle was reused");
    s_.notifiers[i] = Handle{n, s_.device, true};
  }

  void notifier_destroy() {
    const cnrtNotifier_t n = notifier_arg();
    const cnrtRet_t r = cnrtNotifierDestroy(n);
    call_name = "cnrtNotifierDestroy";
    check(r, {cnrtErrorInvalidResourceHandle});
    if (r == cnrtSuccess) {
      bool known = false;
      for (Handle& h : s_.notifiers)
        if (h.h == n) {
          if (!h.live) finding("cnrtNotifierDestroy succeeded on a destroyed notifier");
          h.live = false;
          known = true;
        }
      if (!known) finding("cnrtNotifierDestroy succeeded on a handle no call created");
    }
  }

  void launch_call() {
    // Dimensions: small valid ones (at most 512 tasks, so launches stay quick), or a component
    // that makes the launch invalid whatever the others are.
    cnrtDim3_t dim{1, 1, 1};
    if (in_.ConsumeIntegralInRange(0, 3) != 0) {
      dim.x = in_.ConsumeIntegralInRange(1u, 32u);
      dim.y = in_.ConsumeIntegralInRange(1u, 4u);
      dim.z = in_.ConsumeIntegralInRange(1u, 4u);
    } else {
      static constexpr unsigned kBad[] = {0u, 65536u, 0x80000000u, 0xffffffffu};
      const unsigned bad = kBad[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(kBad) - 1)];
      const unsigned other = in_.ConsumeIntegral<unsigned>();
      switch (in_.ConsumeIntegralInRange(0, 2)) {
        case 0: dim = {bad == 65536u ? 0u : bad, other, 1}; break;
        case 1: dim = {in_.ConsumeIntegralInRange(1u, 32u), bad, other}; break;
        default: dim = {in_.ConsumeIntegralInRange(1u, 32u), other, bad}; break;
      }
    }
    static constexpr int kTypes[] = {cnrtFuncTypeBlock, cnrtFuncTypeUnion1, cnrtFuncTypeUnion2, cnrtFuncTypeUnion4,
                                     cnrtFuncTypeUnion8, cnrtFuncTypeUnion16, cnrtFuncTypeBlock1, 0, 3, -1, 128, INT_MIN};
    const int type = kTypes[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(kTypes) - 1)];

    const void* src = pointer_arg();
    void* dst = pointer_arg();
    int n = in_.ConsumeIntegralInRange(0, 3) == 0 ? in_.ConsumeIntegral<int>() : in_.ConsumeIntegralInRange(0, 8192);
    int mode = in_.ConsumeIntegralInRange(0, kKernelModes - 1);
    void* args[4] = {&src, &dst, &n, &mode};
    void** argv = args;
    const void* kernel = fuzz_kernel;
    static const mlusimKernel_t kUnregistered = {"not_registered", MLUSIM_KERNEL_MAGIC};
    switch (in_.ConsumeIntegralInRange(0, 9)) {
      case 0: kernel = fuzz_empty_kernel, argv = in_.ConsumeBool() ? nullptr : args; break;
      case 1: kernel = nullptr; break;
      case 2: kernel = &kUnregistered; break;
      case 3: kernel = reinterpret_cast<const void*>(in_.ConsumeIntegral<std::uint64_t>()); break;
      case 4: argv = nullptr; break;
      case 5: args[in_.ConsumeIntegralInRange(0, 3)] = nullptr; break;
      default: break;
    }
    const cnrtQueue_t q = queue_arg();
    // Kernel dims whose product passes the checks are small (above): the simulation stays short.
    if (static_cast<std::uint64_t>(dim.x) * dim.y * dim.z > 512 && dim.x != 0 && dim.y != 0 && dim.z != 0 &&
        dim.x <= static_cast<unsigned>(INT_MAX) && dim.y <= 65535u && dim.z <= 65535u)
      return;
    CALL(fuzz_c_invoke_kernel(kernel, dim, type, argv, q), cnrtErrorArgsInvalid, cnrtErrorInvalidKernel,
         cnrtErrorInvalidResourceHandle);
  }

  void device_call() {
    switch (in_.ConsumeIntegralInRange(0, 4)) {
      case 0: {
        const int d = device_arg();
        const cnrtRet_t r = cnrtSetDevice(d);
        call_name = "cnrtSetDevice";
        check(r, {cnrtErrorDeviceInvalid});
        if ((r == cnrtSuccess) != (d >= 0 && d < kDevices)) finding("cnrtSetDevice(" + std::to_string(d) + ") gave " + cnrtGetErrorName(r));
        if (r == cnrtSuccess) s_.device = d;
        break;
      }
      case 1: {
        int d = -7;
        const bool null = in_.ConsumeIntegralInRange(0, 7) == 0;
        const cnrtRet_t r = cnrtGetDevice(null ? nullptr : &d);
        call_name = "cnrtGetDevice";
        check(r, {cnrtErrorArgsInvalid});
        if (r == cnrtSuccess && d != s_.device)
          finding("cnrtGetDevice gave " + std::to_string(d) + " after cnrtSetDevice(" + std::to_string(s_.device) + ")");
        break;
      }
      case 2: {
        unsigned count = 0;
        const bool null = in_.ConsumeIntegralInRange(0, 7) == 0;
        const cnrtRet_t r = cnrtGetDeviceCount(null ? nullptr : &count);
        call_name = "cnrtGetDeviceCount";
        check(r, {cnrtErrorArgsInvalid});
        if (r == cnrtSuccess && count != kDevices) finding("cnrtGetDeviceCount gave " + std::to_string(count));
        break;
      }
      case 3: {
        unsigned can = 7;
        const int a = device_arg(), b = device_arg();
        CALL(cnrtGetPeerAccessibility(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &can, a, b), cnrtErrorArgsInvalid,
             cnrtErrorDeviceInvalid);
        break;
      }
      default: {
        const std::uint32_t flags = in_.ConsumeIntegralInRange(0, 3) == 0 ? in_.ConsumeIntegral<std::uint32_t>()
                                                                         : in_.ConsumeIntegralInRange(0u, 4u);
        CALL(cnrtSetDeviceFlag(flags), cnrtErrorArgsInvalid);
        std::uint32_t got = 0;
        CALL(cnrtGetDeviceFlag(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &got), cnrtErrorArgsInvalid);
        break;
      }
    }
  }

  void info_call() {
    switch (in_.ConsumeIntegralInRange(0, 3)) {
      case 0: {
        cnrtDeviceProp_t prop;
        const int d = device_arg();
        const bool null = in_.ConsumeIntegralInRange(0, 7) == 0;
        switch (in_.ConsumeIntegralInRange(0, 2)) {
          case 0: CALL(cnrtGetDeviceProperties(null ? nullptr : &prop, d), cnrtErrorArgsInvalid, cnrtErrorDeviceInvalid); break;
          case 1: CALL(cnrtGetDeviceProperties_V2(null ? nullptr : &prop, d), cnrtErrorArgsInvalid, cnrtErrorDeviceInvalid); break;
          default: CALL(cnrtGetDeviceProperties_V3(null ? nullptr : &prop, d), cnrtErrorArgsInvalid, cnrtErrorDeviceInvalid); break;
        }
        break;
      }
      case 1: {
        int value = 0;
        const int raw = in_.ConsumeBool() ? in_.PickValueInArray({0x01, 0x09, 0x101, 0x103, 0x201, 0x204, 0x205, 0x206, 0x301,
                                                                  0x306, 0x312, 0x401, 0x405, 0x406, 0x408})
                                          : in_.ConsumeIntegral<int>();
        const int d = device_arg();
        CALL(fuzz_c_device_attribute(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &value, raw, d), cnrtErrorArgsInvalid,
             cnrtErrorDeviceInvalid);
        break;
      }
      case 2: {
        int lo = 0, hi = 0;
        CALL(cnrtDeviceGetQueuePriorityRange(in_.ConsumeBool() ? &lo : nullptr, in_.ConsumeBool() ? &hi : nullptr),
             cnrtErrorArgsInvalid);
        int a = 0, b = 0, c = 0;
        CALL(cnrtGetLibVersion(&a, in_.ConsumeBool() ? &b : nullptr, &c), cnrtErrorArgsInvalid);
        CALL(cnrtDriverGetVersion(in_.ConsumeBool() ? &a : nullptr, &b, &c), cnrtErrorArgsInvalid);
        break;
      }
      default: {
        if (!fuzz_c_error_texts_present(in_.ConsumeIntegral<int>())) finding("NULL error name or string");
        break;
      }
    }
  }

  void memory_info_call() {
    if (in_.ConsumeBool()) {
      std::size_t free_bytes = 0, total = 0;
      CALL(cnrtMemGetInfo(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &free_bytes,
                          in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &total),
           cnrtErrorArgsInvalid);
      return;
    }
    cnrtPointerAttributes_t attr;
    const void* p = in_.ConsumeIntegralInRange(0, 3) == 0 ? reinterpret_cast<const void*>(in_.ConsumeIntegral<std::uint64_t>())
                                                          : pointer_arg();
    const bool null = in_.ConsumeIntegralInRange(0, 7) == 0;
    const cnrtRet_t r = cnrtPointerGetAttributes(null ? nullptr : &attr, p);
    call_name = "cnrtPointerGetAttributes";
    check(r, {cnrtErrorArgsInvalid});
    if (r == cnrtSuccess && attr.type == cnrtMemTypeDevice && !in_device_space(p))
      finding("cnrtPointerGetAttributes calls a pointer outside every device's space device memory");
  }

  void pinned_call() {
    const std::size_t i = in_.ConsumeIntegralInRange<std::size_t>(0, s_.pinned.size() - 1);
    switch (in_.ConsumeIntegralInRange(0, 3)) {
      case 0: {
        if (s_.pinned_live[i]) {
          CALL(cnrtFreeHost(s_.pinned[i]), cnrtErrorArgsInvalid);
          s_.pinned_live[i] = false;
        }
        std::size_t bytes = in_.ConsumeIntegralInRange(0, 3) == 0 ? size_arg() : in_.ConsumeIntegralInRange<std::size_t>(0, 8192);
        // Pinned memory is real host memory: a few GiB would be granted (and libFuzzer's malloc
        // limit reports it). Sizes above 1 MiB become one the runtime refuses outright (> 2^47).
        if (bytes > (std::size_t{1} << 20) && bytes <= (std::size_t{1} << 47)) bytes = (std::size_t{1} << 47) + 1;
        void* p = nullptr;
        const bool null = in_.ConsumeIntegralInRange(0, 15) == 0;
        const cnrtRet_t r = cnrtHostMalloc(null ? nullptr : &p, bytes);
        call_name = "cnrtHostMalloc";
        check(r, {cnrtErrorArgsInvalid});
        if (r == cnrtSuccess && !null && p != nullptr) {
          for (std::size_t k = 0; k < s_.pinned.size(); ++k)
            if (s_.pinned[k] == p) s_.pinned[k] = nullptr;  // a freed block's address reused
          s_.pinned[i] = p;
          s_.pinned_live[i] = true;
        }
        break;
      }
      case 1: {  // free, double free
        const cnrtRet_t r = cnrtFreeHost(s_.pinned[i]);
        call_name = "cnrtFreeHost";
        check(r, {cnrtErrorArgsInvalid});
        if (r == cnrtSuccess && s_.pinned[i] != nullptr && !s_.pinned_live[i]) finding("cnrtFreeHost freed a block twice");
        s_.pinned_live[i] = false;
        break;
      }
      default: {  // not a cnrtHostMalloc block: interior of the big pinned buffer, pageable, device
        void* p = in_.ConsumeBool() ? static_cast<void*>(g.pinned + in_.ConsumeIntegralInRange<std::size_t>(1, kHostSlack))
                                    : pointer_arg();
        if (p == g.pinned) p = g.pinned + 1;
        bool is_block = false;
        for (std::size_t k = 0; k < s_.pinned.size(); ++k) is_block = is_block || (s_.pinned_live[k] && s_.pinned[k] == p);
        if (is_block) return;
        CALL(cnrtFreeHost(p), cnrtErrorArgsInvalid);
        break;
      }
    }
  }

  void reset_call() {
    CALL(cnrtDeviceReset());
    // Everything of the current device is gone: allocations, queues, notifiers.
    for (DevicePtr& d : s_.ptrs)
      if (d.device == s_.device) d.live = false;
    for (Handle& h : s_.queues)
      if (h.device == s_.device) h.live = false;
    for (Handle& h : s_.notifiers)
      if (h.device == s_.device) h.live = false;
  }

  void ext_call() {
    switch (in_.ConsumeIntegralInRange(0, 6)) {
      case 0: {
        double ns = 0;
        std::uint64_t ps = 0;
        CALL(mlusimGetHostTime(in_.ConsumeBool() ? &ns : nullptr), cnrtErrorArgsInvalid);
        CALL(mlusimGetHostTimePs(in_.ConsumeBool() ? &ps : nullptr), cnrtErrorArgsInvalid);
        CALL(mlusimGetDeviceTime(in_.ConsumeBool() ? &ns : nullptr), cnrtErrorArgsInvalid);
        CALL(mlusimGetDeviceTimePs(in_.ConsumeBool() ? &ps : nullptr), cnrtErrorArgsInvalid);
        break;
      }
      case 1: {
        const std::string tag = in_.ConsumeRandomLengthString(300);
        CALL(mlusimSetLaunchTag(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : tag.c_str()));
        break;
      }
      case 2: {
        mlusimDeviceStats_t stats;
        const int d = device_arg();
        CALL(mlusimGetDeviceStats(d, in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &stats), cnrtErrorArgsInvalid,
             cnrtErrorDeviceInvalid);
        break;
      }
      case 3: {
        const int d = device_arg();
        std::size_t count = 0;
        CALL(mlusimGetKernelRecordCount(d, in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &count), cnrtErrorArgsInvalid,
             cnrtErrorDeviceInvalid);
        mlusimKernelRecord_t record;
        const std::size_t index = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::size_t>(0, count + 1)
                                                    : in_.ConsumeIntegral<std::size_t>();
        CALL(mlusimGetKernelRecord(d, index, in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : &record), cnrtErrorArgsInvalid,
             cnrtErrorDeviceInvalid);
        break;
      }
      case 4: {
        const int d = device_arg();
        std::vector<char> buf(in_.ConsumeIntegralInRange<std::size_t>(0, 64));
        std::size_t needed = 0;
        const bool null_buf = in_.ConsumeIntegralInRange(0, 3) == 0;
        // A NULL buffer with a size is an error; a NULL buffer of size 0 asks for the size only.
        const std::size_t size = null_buf ? (in_.ConsumeBool() ? 0 : 16) : buf.size();
        CALL(mlusimGetStatsJson(d, null_buf ? nullptr : buf.data(), size, in_.ConsumeBool() ? &needed : nullptr),
             cnrtErrorArgsInvalid, cnrtErrorDeviceInvalid);
        if (!null_buf && !buf.empty() && std::memchr(buf.data(), '\0', buf.size()) == nullptr && cnrtPeekAtLastError() == cnrtSuccess)
          finding("mlusimGetStatsJson left its buffer without a terminating NUL");
        break;
      }
      case 5: {
        char name[32];
        const std::size_t size = in_.ConsumeIntegralInRange<std::size_t>(0, sizeof name);
        CALL(mlusimGetConfigName(in_.ConsumeIntegralInRange(0, 7) == 0 ? nullptr : name, size), cnrtErrorArgsInvalid);
        break;
      }
      default: {
        CALL(mlusimSetTimingOnly(in_.ConsumeBool() ? 1 : 0));
        const int d = device_arg();
        CALL(mlusimResetStats(d), cnrtErrorDeviceInvalid);
        break;
      }
    }
  }

  FuzzedDataProvider& in_;
  State& s_;
};

// Frees and destroys what the input created, waits for both devices, and checks that all device
// memory is free again.
void cleanup(State& s) {
  for (DevicePtr& d : s.ptrs)
    if (d.live) {
      CALL(cnrtFree(d.p));
      for (DevicePtr& other : s.ptrs)
        if (other.p == d.p) other.live = false;
    }
  for (Handle& h : s.queues)
    if (h.live) CALL(cnrtQueueDestroy(static_cast<cnrtQueue_t>(h.h)));
  for (Handle& h : s.notifiers)
    if (h.live) CALL(cnrtNotifierDestroy(static_cast<cnrtNotifier_t>(h.h)));
  for (std::size_t i = 0; i < s.pinned.size(); ++i)
    if (s.pinned_live[i]) CALL(cnrtFreeHost(s.pinned[i]));
  for (int dev = kDevices - 1; dev >= 0; --dev) {
    CALL(cnrtSetDevice(dev));
    // Faults not reported yet are reported here, once.
    CALL(cnrtSyncDevice(), cnrtErrorKernelTrap);
    CALL(cnrtSyncDevice());
    std::size_t free_bytes = 0, total = 0;
    CALL(cnrtMemGetInfo(&free_bytes, &total));
    if (free_bytes != total || total != kDram)
      finding("after freeing everything, mlu" + std::to_string(dev) + " has " + std::to_string(free_bytes) + " of " +
              std::to_string(total) + " bytes free");
    CALL(mlusimResetStats(dev));
  }
  CALL(mlusimSetTimingOnly(0));
  CALL(mlusimSetLaunchTag(nullptr));
  cnrtGetLastError();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* verbose = std::getenv("CNRT_API_FUZZ_VERBOSE");
  g_verbose = verbose != nullptr && *verbose != '\0' && *verbose != '0';
  setenv("MLUSIM_CONFIG_DIR", MLUSIM_FUZZ_CONFIG_DIR, /*overwrite=*/0);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  const char* overrides[] = {"devices=2", "dram.capacity_bytes=16MiB"};
  if (mlusimLoadConfigWithOverrides("tiny", overrides, 2) != cnrtSuccess)
    finding(std::string("cannot load the tiny preset: ") + mlusimGetLastErrorMessage());
  mlusimSetFaultPrinting(0);
  // Each device's address space starts at its first allocation (best fit, lowest address first).
  for (int dev = 0; dev < kDevices; ++dev) {
    void* p = nullptr;
    if (cnrtSetDevice(dev) != cnrtSuccess || cnrtMalloc(&p, 512) != cnrtSuccess || cnrtFree(p) != cnrtSuccess)
      finding("cannot allocate on mlu" + std::to_string(dev));
    g.base[dev] = reinterpret_cast<std::uint64_t>(p);
  }
  cnrtSetDevice(0);
  g.pageable = static_cast<std::uint8_t*>(std::calloc(kHostBytes, 1));
  void* pinned = nullptr;
  if (g.pageable == nullptr || cnrtHostMalloc(&pinned, kHostBytes) != cnrtSuccess) finding("cannot allocate host buffers");
  g.pinned = static_cast<std::uint8_t*>(pinned);
  std::memset(g.pinned, 0, kHostBytes);
  cnrtGetLastError();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  State state;
  Driver(in, state).run();
  cleanup(state);
  return 0;
}
