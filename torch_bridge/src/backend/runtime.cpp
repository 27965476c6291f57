// The device side of the backend: c10's DeviceGuardImplInterface for PrivateUse1 (CUDA twin:
// c10/cuda/impl/CUDAGuardImpl.h), devices = CNRT devices, c10 streams = CNRT queues (CUDA twin:
// c10/cuda/CUDAStream.cpp's pools), events = CNRT notifiers; device generators; config reloads;
// fork and exit handling. c10 headers only. The device generators are in generator.cpp.
#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <c10/core/DeviceCapability.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <mlusim_ext.h>

#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

// Bumped when every per-thread cache must be rebuilt (config reload, fork child).
std::atomic<std::uint64_t> g_epoch{1};
std::atomic<int> g_device_count{-1};

struct ThreadState {
  std::uint64_t epoch = 0;
  int device = 0;                        // the driver's current device of this thread
  std::vector<std::int64_t> queue_ids;   // current queue per device
};

// The current device is cached per thread: every CNRT call costs simulated host time
// (host.api_call_ns), and cnrtGetDevice on every op would show up in the cycle counts.
// Changing the device with cnrtSetDevice behind the bridge's back is not supported.
ThreadState& thread_state() {
  thread_local ThreadState s;
  const std::uint64_t e = g_epoch.load(std::memory_order_acquire);
  if (s.epoch != e) {
    ensure_started();
    int d = 0;
    if (cnrtGetDevice(&d) != cnrtSuccess) {
      cnrtGetLastError();
      d = 0;
    }
    s.device = d;
    s.queue_ids.clear();
    s.epoch = e;
  }
  return s;
}

int resolve(int device) { return device < 0 ? current_device() : device; }

[[noreturn]] void rethrow_as_torch(const std::exception& e) { C10_THROW_ERROR(Error, e.what()); }

// The queue pool: kQueuePoolSize queues per device, created on first use.
std::mutex g_queue_mu;
std::vector<std::array<cnrtQueue_t, kQueuePoolSize>> g_pool;
std::vector<std::uint32_t> g_pool_next;

// ---- fork and exit --------------------------------------------------------------------------

void on_fork_prepare() {
  if (CachingAllocator* a = caching_allocator_if_created()) a->lock();
  g_queue_mu.lock();
}

void on_fork_parent() {
  g_queue_mu.unlock();
  if (CachingAllocator* a = caching_allocator_if_created()) a->unlock();
}

// The child's driver starts a new runtime on its first call: nothing of the parent's device
// state exists there. Device tensors inherited from the parent become stale (freeing them is a
// no-op; reading them is an error from the driver).
void on_fork_child() {
  g_queue_mu.unlock();
  if (CachingAllocator* a = caching_allocator_if_created()) {
    a->unlock();
    a->abandon();
  }
  reset_runtime_state();
  trace_recorder_clear();
}

void on_exit() {
  // The driver shuts down right after this handler; later frees (static destructors, the last
  // Python objects) must not call it.
  if (CachingAllocator* a = caching_allocator_if_created()) a->set_shutting_down();
}

// ---- the guard -------------------------------------------------------------------------------

struct MluGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDeviceType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kDeviceType);
    const c10::Device old = getDevice();
    if (d.index() >= 0 && d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(current_device()));
  }
  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kDeviceType);
    if (d.index() < 0) return;
    try {
      set_device(d.index());
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      if (d.index() >= 0) set_device(d.index());
    } catch (...) {
    }
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    std::int64_t id = 0;
    int device = 0;
    try {
      device = resolve(d.index());
      id = current_queue_id(device);
    } catch (...) {
    }
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(device)), id);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(resolve(d.index()))), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    const int device = resolve(d.index());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(device)),
                       next_pool_queue_id(device));
  }
  // torch.Stream(device="mlu") / torch.accelerator: a pool queue, as CUDA's getNewStream hands out
  // its pool streams (priorities are accepted and ignored: CNRT queues have none).
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override { return getStreamFromGlobalPool(d, false); }
  void* getStreamNativeHandle(const c10::Stream s) const override { return queue_of(s); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    const c10::Stream old = getStream(s.device());
    try {
      set_current_queue_id(s.device_index(), s.id());
    } catch (...) {
    }
    return old;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    if (event) notifier_destroy(reinterpret_cast<std::uintptr_t>(event));
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "event device index ", device_index,
                " does not match the recording queue's device ", stream.device_index());
    try {
      if (!*event)
        *event = reinterpret_cast<void*>(notifier_create(stream.device_index(), flag == c10::EventFlag::BACKEND_DEFAULT));
      notifier_record(reinterpret_cast<std::uintptr_t>(*event), stream.device_index(), stream.id());
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    try {
      queue_wait_notifier(stream.device_index(), stream.id(), reinterpret_cast<std::uintptr_t>(event));
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  bool queryEvent(void* event) const override {
    if (!event) return true;
    try {
      return notifier_query(reinterpret_cast<std::uintptr_t>(event));
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  void synchronizeEvent(void* event) const override {
    if (event) with_torch_errors([&] { notifier_synchronize(reinterpret_cast<std::uintptr_t>(event)); });
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start && end, "elapsed_time: both events must be recorded first");
    return with_torch_errors(
        [&] { return notifier_elapsed_ms(reinterpret_cast<std::uintptr_t>(start), reinterpret_cast<std::uintptr_t>(end)); });
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    with_torch_errors([&] { synchronize(device_index); });
  }
  c10::DeviceIndex deviceCount() const noexcept override { return static_cast<c10::DeviceIndex>(device_count()); }
  // The dtypes device tensors may have: the VFU/TFU dtypes (fp32, fp16, int32, int8, bool), int64
  // (narrowed to int32 with a range check), float64 (storage, copies and casts) and the other
  // integer types ops cast through. No bfloat16 on the MLU300 class, no complex, no quantized.
  c10::DeviceCapability getDeviceCapability(c10::Device /*d*/) const override {
    c10::DeviceCapability cap;
    cap.capability_data.capability_bits = 0;
    auto& t = cap.capability_data.supported_scalar_types;
    t.has_Byte = t.has_Char = t.has_Short = t.has_Int = t.has_Long = 1;
    t.has_Half = t.has_Float = t.has_Double = t.has_Bool = 1;
    return cap;
  }
  bool queryStream(const c10::Stream& stream) const override {
    try {
      return query_queue(stream.device_index(), stream.id());
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    try {
      synchronize_queue(stream.device_index(), stream.id());
    } catch (const std::exception& e) {
      rethrow_as_torch(e);
    }
  }
  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    record_stream(data_ptr, stream);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, MluGuardImpl);

}  // namespace

// ---- internals ----------------------------------------------------------------------------------

void ensure_started() {
  static std::once_flag once;
  std::call_once(once, [] {
    unsigned count = 0;
    if (cnrtGetDeviceCount(&count) != cnrtSuccess) cnrtGetLastError();  // starts the driver runtime
    pthread_atfork(&on_fork_prepare, &on_fork_parent, &on_fork_child);
    std::atexit(&on_exit);
  });
}

std::string cnrt_message(cnrtRet_t ret, const char* what) {
  std::string m = std::string(what) + " failed: " + cnrtGetErrorName(ret);
  const char* detail = mlusimGetLastErrorMessage();
  if (detail && *detail) m += std::string(": ") + detail;
  cnrtGetLastError();
  return m;
}

void check(cnrtRet_t ret, const char* what) {
  if (ret != cnrtSuccess) throw std::runtime_error(cnrt_message(ret, what));
}

ScopedDevice::ScopedDevice(int device) : previous_(current_device()) {
  if (device != previous_) set_device(device);
}
ScopedDevice::~ScopedDevice() {
  try {
    if (current_device() != previous_) set_device(previous_);
  } catch (...) {
  }
}

std::uint64_t runtime_epoch() { return g_epoch.load(std::memory_order_acquire); }

void reset_runtime_state() {
  {
    std::lock_guard<std::mutex> lock(g_queue_mu);
    g_pool.clear();
    g_pool_next.clear();
  }
  g_device_count.store(-1);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
}

// ---- c10 helpers (device.h) -------------------------------------------------------------------

[[noreturn]] void throw_cnrt_error(cnrtRet_t ret, const char* what) { C10_THROW_ERROR(Error, cnrt_message(ret, what)); }

cnrtQueue_t queue_of(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kDeviceType, "queue_of: ", stream, " is not a stream of the MLU");
  try {
    return queue_handle(stream.device_index(), stream.id());
  } catch (const std::exception& e) {
    rethrow_as_torch(e);
  }
}

c10::Stream current_stream(int device) {
  device = resolve(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(device)),
                     current_queue_id(device));
}

cnrtQueue_t current_queue(int device) { return queue_of(current_stream(device)); }

// ---- api.h: devices ---------------------------------------------------------------------------

bool init() {
  ensure_started();
  return true;
}

int device_count() {
  int n = g_device_count.load();
  if (n >= 0) return n;
  ensure_started();
  unsigned count = 0;
  if (cnrtGetDeviceCount(&count) != cnrtSuccess) {
    cnrtGetLastError();
    return 0;
  }
  n = static_cast<int>(count);
  g_device_count.store(n);
  return n;
}

DeviceProperties device_properties(int device) {
  ensure_started();
  device = resolve(device);
  cnrtDeviceProp_t p{};
  check(cnrtGetDeviceProperties(&p, device), "cnrtGetDeviceProperties");
  DeviceProperties r;
  r.name = p.name;
  r.total_memory = p.totalGlobalMemSize;
  r.clusters = p.clusterCount;
  r.cores_per_cluster = p.McorePerCluster;
  r.core_clock_mhz = p.ipuClockRate / 1000.0;
  r.major = p.major;
  r.minor = p.minor;
  return r;
}

int current_device() { return thread_state().device; }

void set_device(int device) {
  ThreadState& s = thread_state();
  if (s.device == device) return;
  const cnrtRet_t ret = cnrtSetDevice(device);
  if (ret == cnrtErrorDeviceInvalid) {
    cnrtGetLastError();
    throw std::invalid_argument("MLU device " + std::to_string(device) + " does not exist (the config has " +
                                std::to_string(device_count()) + " device(s))");
  }
  check(ret, "cnrtSetDevice");
  s.device = device;
}

void synchronize(int device) {
  ScopedDevice scope(resolve(device));
  check(cnrtSyncDevice(), "cnrtSyncDevice");
}

// ---- api.h: queues ----------------------------------------------------------------------------

std::int64_t current_queue_id(int device) {
  ThreadState& s = thread_state();
  device = device < 0 ? s.device : device;
  return static_cast<std::size_t>(device) < s.queue_ids.size() ? s.queue_ids[static_cast<std::size_t>(device)] : 0;
}

void set_current_queue_id(int device, std::int64_t id) {
  if (id < 0 || id > kQueuePoolSize) throw std::invalid_argument("unknown MLU queue id " + std::to_string(id));
  ThreadState& s = thread_state();
  device = device < 0 ? s.device : device;
  if (s.queue_ids.size() <= static_cast<std::size_t>(device)) s.queue_ids.resize(static_cast<std::size_t>(device) + 1, 0);
  s.queue_ids[static_cast<std::size_t>(device)] = id;
}

std::int64_t next_pool_queue_id(int device) {
  device = resolve(device);
  if (device >= device_count()) throw std::invalid_argument("MLU device " + std::to_string(device) + " does not exist");
  std::lock_guard<std::mutex> lock(g_queue_mu);
  if (g_pool_next.size() <= static_cast<std::size_t>(device)) g_pool_next.resize(static_cast<std::size_t>(device) + 1, 0);
  return 1 + static_cast<std::int64_t>(g_pool_next[static_cast<std::size_t>(device)]++ % kQueuePoolSize);
}

cnrtQueue_t queue_handle(int device, std::int64_t id) {
  if (id == 0) return nullptr;
  if (id < 0 || id > kQueuePoolSize) throw std::invalid_argument("unknown MLU queue id " + std::to_string(id));
  if (device < 0 || device >= device_count())
    throw std::invalid_argument("MLU device " + std::to_string(device) + " does not exist");
  std::lock_guard<std::mutex> lock(g_queue_mu);
  if (g_pool.size() <= static_cast<std::size_t>(device)) g_pool.resize(static_cast<std::size_t>(device) + 1, {});
  cnrtQueue_t& q = g_pool[static_cast<std::size_t>(device)][static_cast<std::size_t>(id - 1)];
  if (!q) {
    ScopedDevice scope(device);
    check(cnrtQueueCreate(&q), "cnrtQueueCreate");
  }
  return q;
}

bool query_queue(int device, std::int64_t id) {
  device = resolve(device);
  cnrtQueue_t q = queue_handle(device, id);
  ScopedDevice scope(device);
  const cnrtRet_t ret = cnrtQueueQuery(q);
  if (ret == cnrtErrorNotReady) return false;
  check(ret, "cnrtQueueQuery");
  return true;
}

void synchronize_queue(int device, std::int64_t id) {
  device = resolve(device);
  cnrtQueue_t q = queue_handle(device, id);
  ScopedDevice scope(device);
  check(cnrtQueueSync(q), "cnrtQueueSync");
}

// ---- api.h: notifiers -------------------------------------------------------------------------

std::uintptr_t notifier_create(int device, bool enable_timing) {
  ScopedDevice scope(resolve(device));
  cnrtNotifier_t n = nullptr;
  check(cnrtNotifierCreateWithFlags(&n, enable_timing ? CNRT_NOTIFIER_DEFAULT : CNRT_NOTIFIER_DISABLE_TIMING_SW),
        "cnrtNotifierCreateWithFlags");
  return reinterpret_cast<std::uintptr_t>(n);
}

void notifier_destroy(std::uintptr_t notifier) noexcept {
  if (notifier && cnrtNotifierDestroy(reinterpret_cast<cnrtNotifier_t>(notifier)) != cnrtSuccess) cnrtGetLastError();
}

void notifier_record(std::uintptr_t notifier, int device, std::int64_t queue_id) {
  device = resolve(device);
  cnrtQueue_t q = queue_handle(device, queue_id);
  ScopedDevice scope(device);
  check(cnrtPlaceNotifier(reinterpret_cast<cnrtNotifier_t>(notifier), q), "cnrtPlaceNotifier");
}

bool notifier_query(std::uintptr_t notifier) {
  const cnrtRet_t ret = cnrtQueryNotifier(reinterpret_cast<cnrtNotifier_t>(notifier));
  if (ret == cnrtErrorNotReady) return false;
  check(ret, "cnrtQueryNotifier");
  return true;
}

void notifier_synchronize(std::uintptr_t notifier) {
  check(cnrtWaitNotifier(reinterpret_cast<cnrtNotifier_t>(notifier)), "cnrtWaitNotifier");
}

double notifier_elapsed_ms(std::uintptr_t start, std::uintptr_t end) {
  float ms = 0;
  const cnrtRet_t ret =
      cnrtNotifierElapsedTime(reinterpret_cast<cnrtNotifier_t>(start), reinterpret_cast<cnrtNotifier_t>(end), &ms);
  switch (ret) {
    case cnrtSuccess: return ms;
    case cnrtErrorNotReady:
      cnrtGetLastError();
      throw std::runtime_error("elapsed_time: a notifier has not completed yet (synchronize the end notifier first)");
    case cnrtErrorCndrvFuncCall:
      cnrtGetLastError();
      throw std::runtime_error("elapsed_time: both notifiers must be recorded first");
    case cnrtErrorArgsInvalid:
      cnrtGetLastError();
      throw std::runtime_error("elapsed_time: both notifiers must be created with enable_timing=True");
    default: check(ret, "cnrtNotifierElapsedTime");
  }
  return ms;
}

void queue_wait_notifier(int device, std::int64_t queue_id, std::uintptr_t notifier) {
  device = resolve(device);
  cnrtQueue_t q = queue_handle(device, queue_id);
  ScopedDevice scope(device);
  check(cnrtQueueWaitNotifier(reinterpret_cast<cnrtNotifier_t>(notifier), q, 0), "cnrtQueueWaitNotifier");
}

// ---- api.h: configs ---------------------------------------------------------------------------

void load_config(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  ensure_started();
  CachingAllocator& a = caching_allocator();
  const std::size_t live = a.live_allocations();
  if (live > 0)
    throw std::runtime_error("load_config: " + std::to_string(live) +
                             " device memory block(s) are still allocated (live MLU tensors); delete them first "
                             "(del x; gc.collect()): they would point into the old system's freed memory");
  a.empty_cache();
  std::vector<const char*> args;
  for (const std::string& o : overrides) args.push_back(o.c_str());
  check(mlusimLoadConfigWithOverrides(name_or_path.c_str(), args.data(), args.size()), "mlusimLoadConfig");
  a.abandon();  // the old system's memory and queues are gone; statistics restart
  reset_runtime_state();
  trace_recorder_drop_events();  // the driver dropped its trace events too (new epoch)
  op_table_clear(-1);           // the driver's statistics restart with the new system
}

std::string config_name() {
  ensure_started();
  char buf[256] = {0};
  check(mlusimGetConfigName(buf, sizeof buf), "mlusimGetConfigName");
  return buf;
}

void set_timing_only(bool enabled) {
  ensure_started();
  check(mlusimSetTimingOnly(enabled ? 1 : 0), "mlusimSetTimingOnly");
}

void inject_kernel_fault(int device, std::uint64_t nth) {
  ensure_started();
  check(mlusimInjectKernelFault(device < 0 ? current_device() : device, nth), "mlusimInjectKernelFault");
}

}  // namespace mlusim::bridge
