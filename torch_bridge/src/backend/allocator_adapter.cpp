// The c10::DeviceAllocator of PrivateUse1 over the caching allocator core (CUDA twin:
// c10/cuda/CUDACachingAllocator.cpp's NativeCachingAllocator; as a DeviceAllocator it also serves
// torch.accelerator's memory API: empty_cache, memory_stats, reset_*_memory_stats,
// get_memory_info), the pinned host allocator over cnrtHostMalloc (CUDA twin:
// at::cuda::getPinnedMemoryAllocator), and the memory part of api.h. c10 headers only.
#include <atomic>
#include <mutex>

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>
#include <mlusim_ext.h>
#include <nlohmann/json.hpp>

#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

std::atomic<CachingAllocator*> g_allocator{nullptr};
std::mutex g_allocator_init_mu;

// The DataPtr context is the allocator's block handle (not the device pointer): a handle from
// before a fork or a config reload is recognised as stale and ignored.
void release_block(void* handle) {
  if (CachingAllocator* a = g_allocator.load(std::memory_order_acquire)) a->release(handle);
}

CachingAllocator& allocator_or_torch_error() {
  try {
    return caching_allocator();
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, e.what());
  }
}

// CachingAllocator's statistics in c10's structure (the same fields, CUDA's meaning).
c10::CachingAllocator::Stat to_c10(const Stat& s) {
  c10::CachingAllocator::Stat r;
  r.current = s.current;
  r.peak = s.peak;
  r.allocated = s.allocated;
  r.freed = s.freed;
  return r;
}
c10::CachingAllocator::StatArray to_c10(const StatArray& a) {
  c10::CachingAllocator::StatArray r;
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = to_c10(a[i]);
  return r;
}

int checked_device(int device);

struct MluDeviceAllocator final : public c10::DeviceAllocator {
  c10::DataPtr allocate(std::size_t n) override {
    CachingAllocator& a = allocator_or_torch_error();
    const int device = current_device();
    CachingAllocator::Allocation block;
    if (n > 0) {
      cnrtQueue_t queue = current_queue(device);
      try {
        block = a.allocate(device, n, queue);
      } catch (const OutOfMemoryError& e) {
        C10_THROW_ERROR(OutOfMemoryError, e.what());
      } catch (const std::exception& e) {
        C10_THROW_ERROR(Error, e.what());
      }
    }
    return {block.ptr, block.handle, &release_block, c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(device))};
  }
  // raw_allocate/raw_deallocate need context == pointer, which these blocks do not have.
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  // Storage clones (Allocator::clone): a device-to-device copy on the current queue, waited for.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count == 0) return;
    check_cnrt(cnrtMemcpy(dest, const_cast<void*>(src), count, cnrtMemcpyDevToDev), "cnrtMemcpy (device to device)");
  }

  bool initialized() override { return caching_allocator_if_created() != nullptr; }
  void emptyCache(c10::MempoolId_t mempool_id) override {
    TORCH_CHECK(mempool_id.first == 0 && mempool_id.second == 0, "the MLU caching allocator has no private memory pools");
    empty_cache();
  }
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override { record_stream(ptr, stream); }
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    const DeviceStats s = with_torch_errors([&] { return caching_allocator().stats(checked_device(device)); });
    c10::CachingDeviceAllocator::DeviceStats r;
    r.allocation = to_c10(s.allocation);
    r.segment = to_c10(s.segment);
    r.active = to_c10(s.active);
    r.inactive_split = to_c10(s.inactive_split);
    r.allocated_bytes = to_c10(s.allocated_bytes);
    r.reserved_bytes = to_c10(s.reserved_bytes);
    r.active_bytes = to_c10(s.active_bytes);
    r.inactive_split_bytes = to_c10(s.inactive_split_bytes);
    r.requested_bytes = to_c10(s.requested_bytes);
    r.oversize_allocations = to_c10(s.oversize_allocations);
    r.oversize_segments = to_c10(s.oversize_segments);
    r.num_alloc_retries = s.num_alloc_retries;
    r.num_ooms = s.num_ooms;
    r.num_device_alloc = s.num_device_alloc;
    r.num_device_free = s.num_device_free;
    r.max_split_size = s.max_split_size;
    return r;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    with_torch_errors([&] { reset_accumulated_memory_stats(device); });
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    with_torch_errors([&] { reset_peak_memory_stats(device); });
  }
  std::pair<std::size_t, std::size_t> getMemoryInfo(c10::DeviceIndex device) override {
    return with_torch_errors([&] { return mem_get_info(device); });
  }
};

void free_pinned(void* ptr) {
  if (ptr && cnrtFreeHost(ptr) != cnrtSuccess) cnrtGetLastError();  // e.g. after the runtime shut down
}

struct PinnedHostAllocator final : public c10::Allocator {
  c10::DataPtr allocate(std::size_t n) override {
    ensure_started();
    void* ptr = nullptr;
    if (n > 0) {
      const cnrtRet_t ret = cnrtHostMalloc(&ptr, n);
      if (ret != cnrtSuccess) C10_THROW_ERROR(Error, cnrt_message(ret, "cnrtHostMalloc"));
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

MluDeviceAllocator g_device_allocator;
PinnedHostAllocator g_pinned_allocator;

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_device_allocator);

// -1 = the current device; anything else must exist.
int checked_device(int device) {
  if (device < 0) return current_device();
  if (device >= device_count())
    throw std::invalid_argument("MLU device " + std::to_string(device) + " does not exist (the config has " +
                                std::to_string(device_count()) + " device(s))");
  return device;
}

const char* block_state(const BlockInfo& b) {
  if (b.allocated) return "active_allocated";
  if (b.active) return "active_pending_free";
  return "inactive";
}

}  // namespace

// ---- internal.h ---------------------------------------------------------------------------------

CachingAllocator* caching_allocator_if_created() { return g_allocator.load(std::memory_order_acquire); }

CachingAllocator& caching_allocator() {
  if (CachingAllocator* a = g_allocator.load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lock(g_allocator_init_mu);
  if (CachingAllocator* a = g_allocator.load()) return *a;
  auto* a = new CachingAllocator(AllocatorConfig::from_environment());  // never deleted
  a->set_event_sink([](const AllocatorEvent& event) {
    trace_recorder_add(event);
    memory_history_add(event);
  });
  ensure_started();  // fork/exit handlers see the allocator from now on
  g_allocator.store(a, std::memory_order_release);
  return *a;
}

// ---- device.h ------------------------------------------------------------------------------------

c10::Allocator* device_allocator() { return &g_device_allocator; }
c10::Allocator* pinned_host_allocator() { return &g_pinned_allocator; }

bool is_pinned_host_pointer(const void* ptr) {
  if (!ptr) return false;
  ensure_started();
  cnrtPointerAttributes_t attr{};
  if (cnrtPointerGetAttributes(&attr, ptr) != cnrtSuccess) {
    cnrtGetLastError();
    return false;
  }
  return attr.type == cnrtMemTypeHost;
}

void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  if (!data_ptr.get()) return;
  allocator_or_torch_error().record_stream(data_ptr.get(), queue_of(stream));
}

// ---- api.h: memory ------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::int64_t>> memory_stats(int device) {
  return caching_allocator().stats(checked_device(device)).flatten();
}

void reset_peak_memory_stats(int device) { caching_allocator().reset_peak_stats(checked_device(device)); }

void reset_accumulated_memory_stats(int device) {
  caching_allocator().reset_accumulated_stats(checked_device(device));
}

void empty_cache() {
  if (CachingAllocator* a = caching_allocator_if_created()) a->empty_cache();
}

std::string allocator_settings() { return caching_allocator().config().str(); }

void set_allocator_settings(const std::string& conf) { caching_allocator().set_config(AllocatorConfig::parse(conf)); }

void set_memory_fraction(double fraction, int device) {
  caching_allocator().set_memory_fraction(fraction, checked_device(device));
}

std::string memory_snapshot_json() {
  nlohmann::json segments = nlohmann::json::array();
  for (const SegmentInfo& s : caching_allocator().snapshot()) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const BlockInfo& b : s.blocks)
      blocks.push_back({{"address", b.address}, {"size", b.size}, {"requested_size", b.requested_size},
                        {"state", block_state(b)}});
    segments.push_back({{"device", s.device},
                        {"address", s.address},
                        {"total_size", s.total_size},
                        {"allocated_size", s.allocated_size},
                        {"active_size", s.active_size},
                        {"stream", reinterpret_cast<std::uintptr_t>(s.queue)},
                        {"segment_type", s.large ? "large" : "small"},
                        {"blocks", blocks}});
  }
  return segments.dump();
}

std::uintptr_t caching_allocator_alloc(std::size_t size, int device, std::int64_t queue_id) {
  device = checked_device(device);
  return reinterpret_cast<std::uintptr_t>(caching_allocator().malloc(device, size, queue_handle(device, queue_id)));
}

void caching_allocator_delete(std::uintptr_t ptr) {
  if (ptr == 0) return;
  caching_allocator().free(reinterpret_cast<void*>(ptr));
}

std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  ScopedDevice scope(checked_device(device));
  std::size_t free_bytes = 0, total = 0;
  check(cnrtMemGetInfo(&free_bytes, &total), "cnrtMemGetInfo");
  return {free_bytes, total};
}

void check_environment() {
  try {
    AllocatorConfig::from_environment();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see torch_bridge/README.md)");
  }
  cpu_fallback_enabled();
}

std::size_t live_allocations() {
  CachingAllocator* a = caching_allocator_if_created();
  return a ? a->live_allocations() : 0;
}

}  // namespace mlusim::bridge
