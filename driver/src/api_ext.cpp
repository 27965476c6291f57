// Simulator extensions (mlusim_ext.h): configs, reset, modes, clocks, traces, statistics.
#include <cmath>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api_support.h"
#include "mlusim/sim/simulator.h"
#include "mlusim/sim/trace.h"
#include "mlusim_ext.h"

using namespace mlusim::driver;
namespace sim = mlusim::sim;

namespace {

cnrtRet_t load(const char* fn, const std::string& name, const std::vector<sim::ConfigOverride>& overrides) {
  HostThread& t = this_thread();
  try {
    const sim::HardwareConfig config = sim::load_config(name, overrides);
    return Runtime::load(config, name, overrides, t);
  } catch (const sim::ConfigError& e) {
    return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return t.fail(cnrtErrorSysNoMem, std::string(fn) + ": out of host memory");
  } catch (const std::exception& e) {
    return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": " + e.what());
  }
}

void copy_string(const std::string& s, char* buf, std::size_t size) {
  const std::size_t n = std::min(s.size(), size - 1);
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}

// Runs `fn` with the simulated device on the simulation thread. mu held through `lk`.
template <class Fn>
cnrtRet_t with_device(const char* name, int device, Fn&& fn) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (device < 0 || device >= rt.device_count())
      return t.fail(cnrtErrorDeviceInvalid, std::string(name) + ": device " + std::to_string(device) + " does not exist (" +
                                                std::to_string(rt.device_count()) + " devices)");
    return fn(rt, t, lk);
  });
}

}  // namespace

extern "C" {

cnrtRet_t mlusimLoadConfig(const char* name_or_path) {
  if (name_or_path == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimLoadConfig: name_or_path is NULL");
  return load("mlusimLoadConfig", name_or_path, {});
}

cnrtRet_t mlusimLoadConfigWithOverrides(const char* name_or_path, const char* const* overrides, size_t count) {
  HostThread& t = this_thread();
  const char* fn = "mlusimLoadConfigWithOverrides";
  if (name_or_path == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": name_or_path is NULL");
  if (count > 0 && overrides == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": overrides is NULL");
  std::vector<sim::ConfigOverride> parsed;
  for (size_t i = 0; i < count; ++i) {
    if (overrides[i] == nullptr)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": overrides[" + std::to_string(i) + "] is NULL");
    try {
      parsed.push_back(sim::parse_config_override(overrides[i]));
    } catch (const std::exception& e) {
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": " + e.what());
    }
  }
  return load(fn, name_or_path, parsed);
}

cnrtRet_t mlusimReset(void) {
  std::string name;
  std::vector<sim::ConfigOverride> overrides;
  Runtime::current_source(&name, &overrides);
  return load("mlusimReset", name, overrides);
}

cnrtRet_t mlusimGetConfigName(char* buf, size_t size) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (buf == nullptr || size == 0) return t.fail(cnrtErrorArgsInvalid, "mlusimGetConfigName: buf is NULL or size is 0");
    std::lock_guard<std::mutex> lk(rt.mu);
    copy_string(rt.config().name, buf, size);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimSetTimingOnly(int enable) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread&) {
    std::unique_lock<std::mutex> lk(rt.mu);
    rt.set_timing_only(enable != 0);
    rt.run_on_sim(lk, [&] {
      sim::Simulator& s = sim::Simulator::instance();
      for (int i = 0; i < s.device_count(); ++i) s.device(i).set_functional(enable == 0);
    });
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetHostTimePs(uint64_t* ps) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (ps == nullptr) return t.fail(cnrtErrorArgsInvalid, "mlusimGetHostTimePs: ps is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    *ps = t.clock >= rt.epoch() ? t.clock - rt.epoch() : 0;
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetHostTime(double* ns) {
  if (ns == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetHostTime: ns is NULL");
  uint64_t ps = 0;
  const cnrtRet_t r = mlusimGetHostTimePs(&ps);
  if (r == cnrtSuccess) *ns = static_cast<double>(ps) / 1000.0;
  return r;
}

cnrtRet_t mlusimGetDeviceTimePs(uint64_t* ps) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (ps == nullptr) return t.fail(cnrtErrorArgsInvalid, "mlusimGetDeviceTimePs: ps is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    *ps = rt.sim_now() - rt.epoch();
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetDeviceTime(double* ns) {
  if (ns == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetDeviceTime: ns is NULL");
  uint64_t ps = 0;
  const cnrtRet_t r = mlusimGetDeviceTimePs(&ps);
  if (r == cnrtSuccess) *ns = static_cast<double>(ps) / 1000.0;
  return r;
}

cnrtRet_t mlusimSetFaultPrinting(int enable) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread&) {
    rt.set_fault_printing(enable != 0);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimTraceBegin(mlusimTraceLevel_t level) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    sim::TraceLevel l;
    switch (raw_enum(level)) {
      case MLUSIM_TRACE_OFF: l = sim::TraceLevel::kOff; break;
      case MLUSIM_TRACE_OPS: l = sim::TraceLevel::kOps; break;
      case MLUSIM_TRACE_INTRINSICS: l = sim::TraceLevel::kIntrinsics; break;
      default:
        return t.fail(cnrtErrorArgsInvalid, "mlusimTraceBegin: level " + std::to_string(raw_enum(level)) +
                                                " is not a mlusimTraceLevel_t value");
    }
    std::unique_lock<std::mutex> lk(rt.mu);
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().trace().begin(l); });
    rt.set_trace_recording(l != sim::TraceLevel::kOff);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimTraceEnd(void) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread&) {
    std::unique_lock<std::mutex> lk(rt.mu);
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().trace().end(); });
    rt.set_trace_recording(false);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimTraceWrite(const char* path) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (path == nullptr || *path == '\0') return t.fail(cnrtErrorArgsInvalid, "mlusimTraceWrite: path is NULL or empty");
    const std::filesystem::path file(path);
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!out) return t.fail(cnrtErrorSys, std::string("mlusimTraceWrite: cannot open ") + path + " for writing");
    std::unique_lock<std::mutex> lk(rt.mu);
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().trace().dump(out); });
    out.flush();
    if (!out) return t.fail(cnrtErrorSys, std::string("mlusimTraceWrite: writing ") + path + " failed");
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetDeviceStats(int device, mlusimDeviceStats_t* stats) {
  if (stats == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetDeviceStats: stats is NULL");
  return with_device("mlusimGetDeviceStats", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    std::memset(stats, 0, sizeof *stats);
    rt.run_on_sim(lk, [&] {
      const sim::Device& d = sim::Simulator::instance().device(device);
      const sim::DeviceStats& s = d.stats();
      stats->elapsed_ns = static_cast<double>(d.now()) / 1000.0;
      stats->epoch_ns = s.epoch_ps >= rt.epoch() ? static_cast<double>(s.epoch_ps - rt.epoch()) / 1000.0 : 0.0;
      stats->kernels = s.kernels.size();
      stats->faulted_kernels = static_cast<uint64_t>(
          std::count_if(s.kernels.begin(), s.kernels.end(), [](const sim::KernelRecord& r) { return r.faulted; }));
      for (int l = 0; l < MLUSIM_MEM_LEVEL_COUNT; ++l) {
        stats->read_bytes[l] = s.traffic.read_bytes[static_cast<std::size_t>(l)];
        stats->write_bytes[l] = s.traffic.write_bytes[static_cast<std::size_t>(l)];
      }
      stats->l2_hit_bytes = s.traffic.l2_hit_bytes;
      stats->l2_overfetch_bytes = s.traffic.l2_overfetch_bytes;
      stats->dram_bytes = s.traffic.dram_bytes();
      const sim::EngineSet totals = s.engine_totals();
      for (int e = 0; e < MLUSIM_ENGINE_COUNT; ++e) {
        const sim::EngineCounters& c = totals[static_cast<std::size_t>(e)];
        stats->engine_busy_ns[e] = static_cast<double>(c.busy_ps) / 1000.0;
        stats->engine_intrinsics[e] = c.intrinsics;
        stats->engine_cycles[e] = c.cycles;
      }
    });
    const DeviceAllocator& a = rt.device(device).allocator;
    stats->allocated_bytes = a.reserved_bytes();
    stats->peak_allocated_bytes = a.peak_reserved_bytes();
    stats->live_allocations = a.live_count();
    stats->host_syncs = rt.device(device).host_syncs;
    stats->host_sync_wait_ns = static_cast<double>(rt.device(device).host_sync_wait_ps) / 1000.0;
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimResetStats(int device) {
  return with_device("mlusimResetStats", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().device(device).reset_stats(); });
    rt.device(device).host_syncs = 0;
    rt.device(device).host_sync_wait_ps = 0;
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimActivityEnable(int enable) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread&) {
    std::lock_guard<std::mutex> lk(rt.mu);
    rt.activity.enable(enable != 0);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimActivityRead(mlusimActivity_t* records, size_t capacity, size_t* count, uint64_t* dropped) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (count == nullptr) return t.fail(cnrtErrorArgsInvalid, "mlusimActivityRead: count is NULL");
    if (records == nullptr && capacity > 0)
      return t.fail(cnrtErrorArgsInvalid, "mlusimActivityRead: records is NULL but capacity is " + std::to_string(capacity));
    std::lock_guard<std::mutex> lk(rt.mu);
    *count = rt.activity.drain(records, capacity);
    if (dropped != nullptr) *dropped = rt.activity.dropped();
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimPushCorrelationId(uint64_t id) {
  HostThread& t = this_thread();
  t.correlation_ids.push_back(id);
  return cnrtSuccess;
}

cnrtRet_t mlusimPopCorrelationId(void) {
  HostThread& t = this_thread();
  if (t.correlation_ids.empty())
    return t.fail(cnrtErrorIllegalState, "mlusimPopCorrelationId: no correlation id was pushed on this thread");
  t.correlation_ids.pop_back();
  return cnrtSuccess;
}

cnrtRet_t mlusimInjectDmaBitFlip(int device, unsigned long long nth) {
  return with_device("mlusimInjectDmaBitFlip", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().device(device).inject_dma_bit_flip(nth); });
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimFlushL2(int device) {
  return with_device("mlusimFlushL2", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    rt.run_on_sim(lk, [&] { sim::Simulator::instance().device(device).flush_l2(); });
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimInjectKernelFault(int device, unsigned long long nth) {
  return with_device("mlusimInjectKernelFault", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>&) {
    rt.device(device).kernel_fault_countdown = nth;
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetStatsJson(int device, char* buf, size_t size, size_t* needed) {
  if (buf == nullptr && size > 0) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetStatsJson: buf is NULL");
  return with_device("mlusimGetStatsJson", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    std::string text;
    rt.run_on_sim(lk, [&] {
      nlohmann::json j;
      sim::Simulator::instance().device(device).stats().to_json(j);
      text = j.dump();
    });
    if (needed != nullptr) *needed = text.size() + 1;
    if (size > 0) copy_string(text, buf, size);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimHostAdvance(double ns) {
  return api_call(HostCost::kNone, [&](Runtime&, HostThread& t) {
    if (!(ns >= 0) || !std::isfinite(ns))
      return t.fail(cnrtErrorArgsInvalid, "mlusimHostAdvance: ns must be finite and >= 0, got " + std::to_string(ns));
    t.clock = sim::add_ps(t.clock, sim::ceil_ps(ns * 1000.0, "mlusimHostAdvance ns"), "host clock after mlusimHostAdvance");
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimMemcpyNoTime(void* dst, const void* src, size_t bytes, cnrtMemTransDir_t dir) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    const char* fn = "mlusimMemcpyNoTime";
    if (bytes == 0) return cnrtSuccess;
    if (dst == nullptr || src == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": dst or src is NULL");
    const long long d = raw_enum(dir);
    if (d != cnrtMemcpyHostToDev && d != cnrtMemcpyDevToHost)
      return t.fail(cnrtErrorMemcpyDirectionInvalid, std::string(fn) + ": dir must be cnrtMemcpyHostToDev or cnrtMemcpyDevToHost");
    std::unique_lock<std::mutex> lk(rt.mu);
    const void* dev = d == cnrtMemcpyHostToDev ? dst : src;
    const PointerClass c = rt.classify(dev, bytes);
    if (c.kind != PointerClass::kDevice)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": device range [" + hex_address(dev) + ", +" +
                                              std::to_string(bytes) + ") is not inside a live device allocation");
    const int device = c.device;
    rt.run_on_sim(lk, [&] {
      void* backing = sim::Simulator::instance().device(device).gdram_backing(reinterpret_cast<std::uint64_t>(dev), bytes);
      if (d == cnrtMemcpyHostToDev)
        std::memcpy(backing, src, bytes);
      else
        std::memcpy(dst, backing, bytes);
    });
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimQueueGetDevice(cnrtQueue_t queue, int* device) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (device == nullptr) return t.fail(cnrtErrorArgsInvalid, "mlusimQueueGetDevice: device is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (rt.device_count() == 0) return t.fail(cnrtErrorNoDevice, "mlusimQueueGetDevice: no simulated device");
    const QueuePtr q = rt.find_queue(queue, t);
    if (!q) return t.fail(cnrtErrorInvalidResourceHandle, "mlusimQueueGetDevice: queue " + hex_address(queue) + " is not a live queue");
    *device = q->device;
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimSetLaunchTag(const char* tag) {
  // Per-thread state only: no runtime lock, no simulated host time.
  std::string& t = this_thread().launch_tag;
  t = tag != nullptr ? tag : "";
  if (t.size() > 127) t.resize(127);
  return cnrtSuccess;
}

cnrtRet_t mlusimGetKernelRecordCount(int device, size_t* count) {
  if (count == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetKernelRecordCount: count is NULL");
  return with_device("mlusimGetKernelRecordCount", device, [&](Runtime& rt, HostThread&, std::unique_lock<std::mutex>& lk) {
    rt.run_on_sim(lk, [&] { *count = sim::Simulator::instance().device(device).stats().kernels.size(); });
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimGetKernelRecord(int device, size_t index, mlusimKernelRecord_t* record) {
  if (record == nullptr) return this_thread().fail(cnrtErrorArgsInvalid, "mlusimGetKernelRecord: record is NULL");
  return with_device("mlusimGetKernelRecord", device, [&](Runtime& rt, HostThread& t, std::unique_lock<std::mutex>& lk) {
    bool found = false;
    std::size_t count = 0;
    const sim::Picos epoch = rt.epoch();
    rt.run_on_sim(lk, [&] {
      const sim::DeviceStats& s = sim::Simulator::instance().device(device).stats();
      count = s.kernels.size();
      if (index >= count) return;
      found = true;
      const sim::KernelRecord& r = s.kernels[index];
      auto ns = [&](sim::Picos device_ps) {
        const sim::Picos abs = s.epoch_ps + device_ps;
        return abs >= epoch ? static_cast<double>(abs - epoch) / 1000.0 : 0.0;
      };
      std::memset(record, 0, sizeof *record);
      copy_string(r.name, record->name, sizeof record->name);
      copy_string(r.tag, record->tag, sizeof record->tag);
      record->id = r.id;
      record->dim = cnrtDim3_t{r.dim.x, r.dim.y, r.dim.z};
      record->type = static_cast<cnrtFunctionType_t>(r.type);
      record->submit_ns = ns(r.submit_ps);
      record->start_ns = ns(r.start_ps);
      record->end_ns = ns(r.end_ps);
      record->cycles = r.cycles;
      record->faulted = r.faulted ? 1 : 0;
      copy_string(r.fault, record->fault, sizeof record->fault);
      record->macs = r.macs;
      record->vector_elements = r.vector_elements;
      constexpr std::size_t kRecordDtypes = sizeof record->macs_by_dtype / sizeof record->macs_by_dtype[0];
      for (std::size_t d = 0; d < r.macs_by_dtype.size() && d < kRecordDtypes; ++d)
        record->macs_by_dtype[d] = r.macs_by_dtype[d];
      for (std::size_t l = 0; l < MLUSIM_MEM_LEVEL_COUNT; ++l) {
        record->read_bytes[l] = r.traffic.read_bytes[l];
        record->write_bytes[l] = r.traffic.write_bytes[l];
      }
      record->l2_hit_bytes = r.traffic.l2_hit_bytes;
      record->l2_overfetch_bytes = r.traffic.l2_overfetch_bytes;
      record->dram_bytes = r.traffic.dram_bytes();
    });
    if (!found)
      return t.fail(cnrtErrorArgsInvalid, "mlusimGetKernelRecord: index " + std::to_string(index) + " >= record count " +
                                              std::to_string(count));
    return cnrtSuccess;
  });
}

}  // extern "C"

namespace mlusim::driver {

sim::HardwareConfig loaded_config() {
  sim::HardwareConfig out;
  const cnrtRet_t r = api_call(HostCost::kNone, [&](Runtime& rt, HostThread&) {
    std::lock_guard<std::mutex> lk(rt.mu);
    out = rt.config();
    return cnrtSuccess;
  });
  if (r != cnrtSuccess) throw std::runtime_error(std::string("mlusim runtime: ") + cnrtGetErrorStr(r));
  return out;
}

cnrtRet_t run_as_batch(unsigned launches, const std::function<cnrtRet_t()>& issue) {
  HostThread& t = this_thread();
  const bool outer = !t.batched;
  if (outer && launches > 0) {  // the launches come first, as a launch's cost precedes its kernel
    const cnrtRet_t charged = api_call(HostCost::kNone, [&](Runtime& rt, HostThread& th) {
      for (unsigned i = 0; i < launches; ++i) th.clock = sim::add_ps(th.clock, rt.launch_cost(), "host clock after a batch");
      return cnrtSuccess;
    });
    if (charged != cnrtSuccess) return charged;
  }
  t.batched = true;
  cnrtRet_t r = cnrtSuccess;
  try {
    r = issue();
  } catch (...) {
    t.batched = !outer;
    throw;
  }
  t.batched = !outer;
  return r;
}

}  // namespace mlusim::driver
