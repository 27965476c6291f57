// Device management: count, current device, properties and attributes from the config,
// device-wide synchronisation and reset, peer accessibility, flags.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "api_support.h"

namespace mlusim::driver {
namespace {

int clamp_int(double v) { return static_cast<int>(std::clamp(v, 0.0, static_cast<double>(INT_MAX))); }

// Largest union width (clusters per task group) the device can hold: UNION16 at most.
int max_union_clusters(const sim::HardwareConfig& c) {
  int n = 1;
  while (n < 16 && static_cast<std::uint32_t>(n * 2) <= c.clusters) n *= 2;
  return n;
}

// One source for cnrtDeviceGetAttribute and cnrtGetDeviceProperties (see cnrt.h per value).
std::optional<int> attribute(const sim::HardwareConfig& c, int device, long long attr) {
  switch (attr) {
    case cnrtAttrComputeCapabilityMajor: return clamp_int(c.capability_major);
    case cnrtAttrComputeCapabilityMinor: return clamp_int(c.capability_minor);
    case cnrtAttrSparseComputingSupported: return 0;
    case cnrtAttrFP16ComputingSupported: return 1;
    case cnrtAttrINT4ComputingSupported: return 0;
    case cnrtAttrINT8ComputingSupported: return 1;
    case cnrtAttrBF16ComputingSupported: return c.vfu_bf16 ? 1 : 0;
    case cnrtAttrTF32ComputingSupported: return 0;
    case cnrtAttrComputeMode: return cnrtComputeModeDefault;
    case cnrtAttrQueueSize: return kMaxQueuesPerDevice;
    case cnrtAttrNotifierSize: return kMaxNotifiersPerDevice;
    case cnrtAttrSupportQueuePriorities: return 0;
    case cnrtAttrMaxDimX: return INT_MAX;
    case cnrtAttrMaxDimY: return 65535;
    case cnrtAttrMaxDimZ: return 65535;
    case cnrtAttrMaxClusterCountPerUnionTask: return max_union_clusters(c);
    case cnrtAttrClusterCount: return clamp_int(c.clusters);
    case cnrtAttrMcorePerCluster: return clamp_int(c.cores_per_cluster);
    case cnrtAttrMaxL2CacheSize: return clamp_int(static_cast<double>(c.l2_bytes));
    case cnrtAttrNramSizePerMcore: return clamp_int(static_cast<double>(c.nram_bytes));
    case cnrtAttrWramSizePerMcore: return clamp_int(static_cast<double>(c.wram_bytes));
    case cnrtAttrSramSizePerMcore: return clamp_int(static_cast<double>(c.sram_bytes));
    case cnrtAttrAvailableGlobalMemorySize: return clamp_int(static_cast<double>(c.dram_bytes >> 20));
    case cnrtAttrEccEnable: return 0;
    case cnrtAttrIpuClockRate: return clamp_int(std::round(c.core_clock_mhz * 1000.0));
    case cnrtAttrMemClockRate: return clamp_int(std::round(c.mem_clock_mhz * 1000.0));
    case cnrtAttrGmemBusWidth: return clamp_int(c.dram_bus_width_bits);
    case cnrtAttrTotalMemSize: return clamp_int(static_cast<double>(c.dram_bytes >> 20));
    case cnrtAttrPciBusID: return device + 1;
    case cnrtAttrPciDeviceID: return 0;
    case cnrtAttrPciDomainID: return 0;
    default: return std::nullopt;
  }
}

void fill_properties(const sim::HardwareConfig& c, int device, cnrtDeviceProp_t* p) {
  std::memset(p, 0, sizeof *p);
  auto a = [&](cnrtDeviceAttr_t attr) { return *attribute(c, device, attr); };
  std::snprintf(p->name, sizeof p->name, "MLU (mlusim %s)", c.name.c_str());
  p->totalMem = a(cnrtAttrTotalMemSize);
  p->maxDim[0] = a(cnrtAttrMaxDimX);
  p->maxDim[1] = a(cnrtAttrMaxDimY);
  p->maxDim[2] = a(cnrtAttrMaxDimZ);
  p->ipuClockRate = a(cnrtAttrIpuClockRate);
  p->memClockRate = a(cnrtAttrMemClockRate);
  p->major = a(cnrtAttrComputeCapabilityMajor);
  p->minor = a(cnrtAttrComputeCapabilityMinor);
  p->ECCEnabled = a(cnrtAttrEccEnable);
  p->pciBusID = a(cnrtAttrPciBusID);
  p->pciDeviceID = a(cnrtAttrPciDeviceID);
  p->pciDomainID = a(cnrtAttrPciDomainID);
  p->maxL2CacheSize = a(cnrtAttrMaxL2CacheSize);
  p->queuePrioritiesSupported = a(cnrtAttrSupportQueuePriorities);
  p->sparseComputingSupported = a(cnrtAttrSparseComputingSupported);
  p->FP16ComputingSupported = a(cnrtAttrFP16ComputingSupported);
  p->INT4ComputingSupported = a(cnrtAttrINT4ComputingSupported);
  p->INT8ComputingSupported = a(cnrtAttrINT8ComputingSupported);
  p->BF16ComputingSupported = a(cnrtAttrBF16ComputingSupported);
  p->TF32ComputingSupported = a(cnrtAttrTF32ComputingSupported);
  p->maxQueueSize = a(cnrtAttrQueueSize);
  p->maxNotifierSize = a(cnrtAttrNotifierSize);
  p->maxClusterCountPerUnionTask = a(cnrtAttrMaxClusterCountPerUnionTask);
  p->clusterCount = a(cnrtAttrClusterCount);
  p->McorePerCluster = a(cnrtAttrMcorePerCluster);
  p->maxQuadrantCount = 1;
  p->maxUnionTypePerQuadrant = p->maxClusterCountPerUnionTask;
  p->maxClusterPerUnionLimitTask = p->maxClusterCountPerUnionTask;
  p->ISAVersion = 300;
  p->NramSizePerMcore = a(cnrtAttrNramSizePerMcore);
  p->WramSizePerMcore = a(cnrtAttrWramSizePerMcore);
  p->SramSizePerMcore = a(cnrtAttrSramSizePerMcore);
  p->globalMemoryNodeCount = 1;
  p->GmemBusWidth = a(cnrtAttrGmemBusWidth);
  p->computeMode = a(cnrtAttrComputeMode);
  p->availableGlobalMemorySize = a(cnrtAttrAvailableGlobalMemorySize);
  char uuid[32];  // 16 bytes of "mlusim-dev<ordinal>", zero padded (not necessarily NUL-terminated)
  const int n = std::snprintf(uuid, sizeof uuid, "mlusim-dev%d", device);
  std::memcpy(p->uuid.uuid, uuid, std::min<std::size_t>(sizeof p->uuid.uuid, static_cast<std::size_t>(std::max(n, 0))));
  p->totalGlobalMemSize = c.dram_bytes;
}

cnrtRet_t get_properties(cnrtDeviceProp_t* prop, int device) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (prop == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtGetDeviceProperties: prop is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (device < 0 || device >= rt.device_count())
      return t.fail(cnrtErrorDeviceInvalid, "cnrtGetDeviceProperties: device " + std::to_string(device) + " does not exist (" +
                                                std::to_string(rt.device_count()) + " devices)");
    fill_properties(rt.config(), device, prop);
    return cnrtSuccess;
  });
}

std::uint32_t& device_flag() {
  static std::uint32_t flag = cnrtDeviceScheduleAuto;  // guarded by Runtime::mu
  return flag;
}

}  // namespace

std::string hex_address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace mlusim::driver

using namespace mlusim::driver;

extern "C" {

cnrtRet_t cnrtGetDeviceCount(unsigned int* pCount) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pCount == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtGetDeviceCount: pCount is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    *pCount = static_cast<unsigned int>(rt.device_count());
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtSetDevice(int ordinal) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::lock_guard<std::mutex> lk(rt.mu);
    if (ordinal < 0 || ordinal >= rt.device_count())
      return t.fail(cnrtErrorDeviceInvalid, "cnrtSetDevice: device " + std::to_string(ordinal) + " does not exist (" +
                                                std::to_string(rt.device_count()) + " devices)");
    t.device = ordinal;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtGetDevice(int* pOrdinal) {
  return api_call(HostCost::kApiCall, [&](Runtime&, HostThread& t) {
    if (pOrdinal == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtGetDevice: pOrdinal is NULL");
    *pOrdinal = t.device;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtGetDeviceProperties(cnrtDeviceProp_t* prop, int device) { return get_properties(prop, device); }
cnrtRet_t cnrtGetDeviceProperties_V2(cnrtDeviceProp_t* prop, int device) { return get_properties(prop, device); }
cnrtRet_t cnrtGetDeviceProperties_V3(cnrtDeviceProp_t* prop, int device) { return get_properties(prop, device); }

cnrtRet_t cnrtDeviceGetAttribute(int* pValue, cnrtDeviceAttr_t attr, int device) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pValue == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtDeviceGetAttribute: pValue is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (device < 0 || device >= rt.device_count())
      return t.fail(cnrtErrorDeviceInvalid, "cnrtDeviceGetAttribute: device " + std::to_string(device) + " does not exist");
    const std::optional<int> v = attribute(rt.config(), device, raw_enum(attr));
    if (!v) return t.fail(cnrtErrorArgsInvalid, "cnrtDeviceGetAttribute: attribute " + std::to_string(raw_enum(attr)) +
                                                    " is not supported (see cnrtDeviceAttr_t in cnrt.h)");
    *pValue = *v;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtSyncDevice(void) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtSyncDevice");
    const int dev = t.device;
    rt.wait(lk, rt.unfinished_ops(dev, &t), t, "cnrtSyncDevice");
    std::string message;
    const cnrtRet_t fault = rt.take_device_fault(dev, &message);
    if (fault != cnrtSuccess) return t.fail(fault, "cnrtSyncDevice: " + message);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtDeviceReset(void) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtDeviceReset");
    // Every queue may hold work that touches this device (copies are queue-ordered anywhere).
    rt.wait(lk, rt.unfinished_ops(-1, &t), t, "cnrtDeviceReset");
    rt.reset_device(t.device);
    rt.note_allocation(t.device, t.clock);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtGetPeerAccessibility(unsigned int* canAccess, int ordinal, int peerOrdinal) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (canAccess == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtGetPeerAccessibility: canAccess is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    const int n = rt.device_count();
    if (ordinal < 0 || ordinal >= n || peerOrdinal < 0 || peerOrdinal >= n)
      return t.fail(cnrtErrorDeviceInvalid, "cnrtGetPeerAccessibility: device " + std::to_string(ordinal) + " or " +
                                                std::to_string(peerOrdinal) + " does not exist (" + std::to_string(n) +
                                                " devices)");
    *canAccess = ordinal != peerOrdinal ? 1u : 0u;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtDeviceGetQueuePriorityRange(int* pMinPriority, int* pMaxPriority) {
  return api_call(HostCost::kApiCall, [&](Runtime&, HostThread& t) {
    if (pMinPriority == nullptr || pMaxPriority == nullptr)
      return t.fail(cnrtErrorArgsInvalid, "cnrtDeviceGetQueuePriorityRange: a pointer is NULL");
    *pMinPriority = 0;
    *pMaxPriority = 0;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtSetDeviceFlag(uint32_t flags) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (flags >= cnrtDeviceFlagsMaxNum)
      return t.fail(cnrtErrorArgsInvalid, "cnrtSetDeviceFlag: flags " + std::to_string(flags) + " is not a cnrtDeviceFlags_t value");
    std::lock_guard<std::mutex> lk(rt.mu);
    device_flag() = flags;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtGetDeviceFlag(uint32_t* pFlags) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pFlags == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtGetDeviceFlag: pFlags is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    *pFlags = device_flag();
    return cnrtSuccess;
  });
}

}  // extern "C"
