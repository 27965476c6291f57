// Memory management: device allocations, pinned host allocations, cnrtMemGetInfo and pointer
// attributes. Copies and memsets are in api_copy.cpp.
#include <cstring>

#include "api_support.h"

using namespace mlusim::driver;

namespace {

// Why `addr` is not the start of a live allocation (for cnrtFree's message). mu held.
std::string not_an_allocation(Runtime& rt, const void* ptr) {
  const auto addr = reinterpret_cast<std::uint64_t>(ptr);
  for (int d = 0; d < rt.device_count(); ++d) {
    const DeviceAllocator& a = rt.device(d).allocator;
    if (!a.in_address_space(addr)) continue;
    if (const DeviceAllocator::Allocation* live = a.find(addr))
      return hex_address(ptr) + " is inside the allocation at " + hex_address(reinterpret_cast<void*>(live->addr)) +
             " of mlu" + std::to_string(d) + ", not its start";
    return hex_address(ptr) + " is not a live allocation of mlu" + std::to_string(d) + " (already freed or never allocated)";
  }
  if (rt.pinned().find(ptr, nullptr) > 0) return hex_address(ptr) + " is pinned host memory (free it with cnrtFreeHost)";
  return hex_address(ptr) + " is not device memory";
}

int allocation_device(Runtime& rt, std::uint64_t addr) {
  for (int d = 0; d < rt.device_count(); ++d) {
    const DeviceAllocator::Allocation* a = rt.device(d).allocator.find(addr);
    if (a != nullptr && a->addr == addr) return d;
  }
  return -1;
}

}  // namespace

extern "C" {

cnrtRet_t cnrtMalloc(void** pPtr, size_t bytes) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pPtr == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtMalloc: pPtr is NULL");
    if (bytes == 0) {
      *pPtr = nullptr;
      return cnrtSuccess;
    }
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtMalloc");
    DeviceAllocator& a = rt.device(t.device).allocator;
    const std::optional<std::uint64_t> addr = a.allocate(bytes);
    if (!addr)
      return t.fail(cnrtErrorNoMem, "cnrtMalloc: cannot allocate " + std::to_string(bytes) + " bytes on mlu" +
                                        std::to_string(t.device) + ": " + std::to_string(a.capacity() - a.reserved_bytes()) +
                                        " bytes free, largest free block " + std::to_string(a.largest_free_block()) + " bytes");
    *pPtr = reinterpret_cast<void*>(*addr);
    rt.note_allocation(t.device, t.clock);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtFree(void* ptr) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (ptr == nullptr) return cnrtSuccess;
    std::unique_lock<std::mutex> lk(rt.mu);
    const auto addr = reinterpret_cast<std::uint64_t>(ptr);
    if (allocation_device(rt, addr) < 0) return t.fail(cnrtErrorArgsInvalid, "cnrtFree: " + not_an_allocation(rt, ptr));
    // Like cudaFree: work already queued may still use the memory.
    rt.wait(lk, rt.unfinished_ops(-1, &t), t, "cnrtFree");
    const int dev = allocation_device(rt, addr);
    if (dev < 0) return t.fail(cnrtErrorArgsInvalid, "cnrtFree: " + hex_address(ptr) + " was freed by another thread meanwhile");
    rt.device(dev).allocator.release(addr);
    rt.note_allocation(dev, t.clock);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtHostMalloc(void** pPtr, size_t bytes) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pPtr == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtHostMalloc: pPtr is NULL");
    if (bytes == 0) {
      *pPtr = nullptr;
      return cnrtSuccess;
    }
    std::lock_guard<std::mutex> lk(rt.mu);
    void* p = rt.pinned().allocate(bytes);
    if (p == nullptr)
      return t.fail(cnrtErrorSysNoMem, "cnrtHostMalloc: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    *pPtr = p;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtFreeHost(void* ptr) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (ptr == nullptr) return cnrtSuccess;
    std::unique_lock<std::mutex> lk(rt.mu);
    auto is_start = [&] {
      const void* start = nullptr;
      return rt.pinned().find(ptr, &start) > 0 && start == ptr;
    };
    if (!is_start())
      return t.fail(cnrtErrorArgsInvalid, "cnrtFreeHost: " + hex_address(ptr) +
                                              " is not the start of a live cnrtHostMalloc allocation (freed, interior or not pinned)");
    rt.wait(lk, rt.unfinished_ops(-1, &t), t, "cnrtFreeHost");  // a queued copy may still read or write it
    if (!is_start()) return t.fail(cnrtErrorArgsInvalid, "cnrtFreeHost: " + hex_address(ptr) + " was freed by another thread meanwhile");
    rt.pinned().release(ptr);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtMemGetInfo(size_t* free, size_t* total) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (free == nullptr || total == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtMemGetInfo: free or total is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtMemGetInfo");
    const DeviceAllocator& a = rt.device(t.device).allocator;
    *total = a.capacity();
    *free = a.capacity() - a.reserved_bytes();
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtPointerGetAttributes(cnrtPointerAttributes_t* attr, const void* ptr) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (attr == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtPointerGetAttributes: attr is NULL");
    std::memset(attr, 0, sizeof *attr);
    attr->device = -1;
    attr->cacheMode = cnrtUvaUnknown;
    std::lock_guard<std::mutex> lk(rt.mu);
    const auto addr = reinterpret_cast<std::uint64_t>(ptr);
    for (int d = 0; d < rt.device_count(); ++d) {
      const DeviceAllocator::Allocation* a = rt.device(d).allocator.find(addr);
      if (a == nullptr) continue;
      attr->type = cnrtMemTypeDevice;
      attr->device = d;
      attr->size = a->requested;
      attr->devicePointer = const_cast<void*>(ptr);
      attr->deviceBasePointer = reinterpret_cast<void*>(a->addr);
      return cnrtSuccess;
    }
    if (const std::size_t size = rt.pinned().find(ptr, nullptr); size > 0) {
      attr->type = cnrtMemTypeHost;
      attr->size = size;
      attr->hostPointer = const_cast<void*>(ptr);
      return cnrtSuccess;
    }
    attr->type = cnrtMemTypeUnregistered;
    attr->hostPointer = const_cast<void*>(ptr);
    return cnrtSuccess;
  });
}

}  // extern "C"
