// Traces (the driver's timeline plus the caching allocator's events and memory counters) and the
// cycle report of the torch bridge (driver statistics and kernel records, allocator statistics,
// CPU-fallback ops). No torch headers.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <mlusim_ext.h>
#include <nlohmann/json.hpp>

#include "mlusim/sim/roofline.h"

#include "backend/internal.h"
#include "mlusim/torch/api.h"

namespace mlusim::bridge {
namespace {

// ---- allocator events for traces ---------------------------------------------------------------

struct RecordedEvent {
  AllocatorEvent event;
  std::uint64_t ts_ps;  // the allocating thread's simulated host clock
};

std::atomic<bool> g_recording{false};
std::mutex g_trace_mu;
std::vector<RecordedEvent> g_events;

const char* event_name(AllocatorEventKind k) {
  switch (k) {
    case AllocatorEventKind::kMalloc: return "malloc";
    case AllocatorEventKind::kFree: return "free";
    case AllocatorEventKind::kSegmentAlloc: return "segment alloc (cnrtMalloc)";
    case AllocatorEventKind::kSegmentFree: return "segment free (cnrtFree)";
    case AllocatorEventKind::kOutOfMemory: return "out of memory";
  }
  return "?";
}

// Picoseconds as the exact decimal of microseconds ("1.234567", "1.5", "2").
std::string micros(std::uint64_t ps) {
  std::string s = std::to_string(ps / 1000000);
  std::uint64_t frac = ps % 1000000;
  if (frac) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%06llu", static_cast<unsigned long long>(frac));
    std::string f = buf;
    while (!f.empty() && f.back() == '0') f.pop_back();
    s += "." + f;
  }
  return s;
}

std::string hex(std::uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---- the op table: ATen ops that ran libmlu kernels ------------------------------------------------

struct OpTotals {
  std::uint64_t calls = 0, libmlu_ops = 0, macs = 0, bytes = 0, kernels = 0;
};

std::mutex g_ops_mu;
std::atomic<std::uint64_t> g_op_calls{0};
std::map<int, std::map<std::string, OpTotals>> g_ops;  // device -> aten op -> totals

// ---- cycle report ----------------------------------------------------------------------------------

struct KernelSummary {
  std::string name;
  std::uint64_t launches = 0, cycles = 0, macs = 0, vector_elements = 0, faulted = 0;
  double time_ns = 0;
};

// One ATen op's row: the libmlu work it asked for (MACs, minimum DRAM bytes) and what its
// kernels (grouped by launch tag) took.
struct OpSummary {
  std::string name;
  OpTotals totals;
  std::uint64_t launches = 0, cycles = 0;
  double time_ns = 0;
  sim::MacsByDtype macs_by_dtype{};
  std::uint64_t dram_bytes = 0;  // what its kernels actually moved to and from GDRAM
  double bound_ns = 0;           // roofline bound of (totals.macs at its dtype's peak, totals.bytes)
  double peak_macs_per_s = 0;    // of the dtype its kernels multiplied in most (0: the op needs no MACs)
};

struct ReportData {
  int device = 0;
  std::string config;
  mlusimDeviceStats_t stats{};
  double host_ns = 0;
  unsigned clusters = 0, cores_per_cluster = 0;
  double clock_mhz = 0;
  std::vector<KernelSummary> kernels;  // by cycles, descending
  std::vector<OpSummary> ops;          // by cycles, descending
  double dram_peak_bytes_per_s = 0;
  std::uint64_t kernel_cycles = 0;
  DeviceStats allocator;
  std::vector<std::pair<std::string, std::uint64_t>> fallback;
  // Multiplies by input dtype (TFU and VFU matmuls): MACs, the time of the kernels that multiplied
  // mostly in that dtype, and the dtype's peak MAC rate (sim::peak_macs_per_s).
  sim::MacsByDtype macs_by_dtype{};
  std::array<double, sim::kDTypeCount> mac_kernel_ns{};
  std::array<double, sim::kDTypeCount> peak_macs_per_s{};
};

ReportData collect(int device) {
  ensure_started();
  ReportData r;
  r.device = device < 0 ? current_device() : device;
  r.config = config_name();
  check(mlusimGetDeviceStats(r.device, &r.stats), "mlusimGetDeviceStats");
  if (mlusimGetHostTime(&r.host_ns) != cnrtSuccess) cnrtGetLastError();
  cnrtDeviceProp_t prop{};
  check(cnrtGetDeviceProperties(&prop, r.device), "cnrtGetDeviceProperties");
  r.clusters = static_cast<unsigned>(prop.clusterCount);
  r.cores_per_cluster = static_cast<unsigned>(prop.McorePerCluster);
  r.clock_mhz = prop.ipuClockRate / 1000.0;
  std::size_t count = 0;
  check(mlusimGetKernelRecordCount(r.device, &count), "mlusimGetKernelRecordCount");
  std::map<std::string, KernelSummary> by_name;
  std::map<std::string, OpSummary> by_op;
  for (std::size_t i = 0; i < count; ++i) {
    mlusimKernelRecord_t k{};
    check(mlusimGetKernelRecord(r.device, i, &k), "mlusimGetKernelRecord");
    KernelSummary& s = by_name[k.name];
    s.name = k.name;
    ++s.launches;
    s.cycles += k.cycles;
    s.macs += k.macs;
    s.vector_elements += k.vector_elements;
    s.time_ns += k.end_ns - k.start_ns;
    s.faulted += k.faulted ? 1 : 0;
    r.kernel_cycles += k.cycles;
    std::size_t main_dtype = 0;
    for (std::size_t d = 0; d < sim::kDTypeCount; ++d) {
      r.macs_by_dtype[d] += k.macs_by_dtype[d];
      if (k.macs_by_dtype[d] > k.macs_by_dtype[main_dtype]) main_dtype = d;
    }
    if (k.macs_by_dtype[main_dtype] > 0) r.mac_kernel_ns[main_dtype] += k.end_ns - k.start_ns;
    if (k.tag[0] != '\0') {
      OpSummary& o = by_op[k.tag];
      ++o.launches;
      o.cycles += k.cycles;
      o.time_ns += k.end_ns - k.start_ns;
      for (std::size_t d = 0; d < sim::kDTypeCount; ++d) o.macs_by_dtype[d] += k.macs_by_dtype[d];
      o.dram_bytes += k.dram_bytes;  // across the DRAM channels (L2 hits excluded)
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_ops_mu);
    for (const auto& [name, t] : g_ops[r.device]) by_op[name].totals = t;
  }
  const sim::HardwareConfig cfg = driver::loaded_config();
  r.dram_peak_bytes_per_s = sim::dram_peak_bytes_per_s(cfg);
  for (std::size_t d = 0; d < sim::kDTypeCount; ++d) r.peak_macs_per_s[d] = sim::peak_macs_per_s(cfg, static_cast<sim::DType>(d));
  for (auto& [name, o] : by_op) {
    o.name = name;
    // The bound counts the op's own MACs (libmlu's theoretical figure), at the rate of the dtype
    // its kernels multiplied in; MACs a kernel spends on data movement (e.g. a VFU matmul that
    // compacts columns) are implementation cost, not work the op must do.
    std::size_t top = 0;
    for (std::size_t d = 1; d < sim::kDTypeCount; ++d)
      if (o.macs_by_dtype[d] > o.macs_by_dtype[top]) top = d;
    sim::MacsByDtype needed{};
    needed[top] = o.totals.macs;
    o.bound_ns = static_cast<double>(sim::roofline_bound_ps(cfg, needed, o.totals.bytes)) / 1000.0;
    if (o.totals.macs > 0) o.peak_macs_per_s = sim::peak_macs_per_s(cfg, static_cast<sim::DType>(top));
    r.ops.push_back(o);
  }
  std::sort(r.ops.begin(), r.ops.end(),
            [](const OpSummary& a, const OpSummary& b) { return a.cycles != b.cycles ? a.cycles > b.cycles : a.name < b.name; });
  for (auto& [name, s] : by_name) r.kernels.push_back(s);
  std::sort(r.kernels.begin(), r.kernels.end(),
            [](const KernelSummary& a, const KernelSummary& b) { return a.cycles != b.cycles ? a.cycles > b.cycles : a.name < b.name; });
  r.allocator = caching_allocator().stats(r.device);
  r.fallback = fallback_counts_snapshot();
  return r;
}

const char* const kEngineNames[MLUSIM_ENGINE_COUNT] = {"scalar", "VFU", "TFU", "IO-DMA", "Move-DMA", "MemCore-DMA"};
const char* const kLevelNames[MLUSIM_MEM_LEVEL_COUNT] = {"host", "GDRAM", "SRAM", "NRAM", "WRAM"};

double engine_instances(const ReportData& r, int engine) {
  return engine == 5 ? r.clusters : static_cast<double>(r.clusters) * r.cores_per_cluster;
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
  return buf;
}

std::string format_text(const ReportData& r) {
  std::ostringstream o;
  char line[512];
  const mlusimDeviceStats_t& s = r.stats;
  std::snprintf(line, sizeof line, "mlusim cycle report (torch_mlu): device %d, config %s, %u clusters x %u cores @ %.0f MHz\n",
                r.device, r.config.c_str(), r.clusters, r.cores_per_cluster, r.clock_mhz);
  o << line;
  std::snprintf(line, sizeof line, "simulated time %.3f us (device), host clock %.3f us, %llu kernel launches (%llu faulted)\n",
                s.elapsed_ns / 1e3, r.host_ns / 1e3, static_cast<unsigned long long>(s.kernels),
                static_cast<unsigned long long>(s.faulted_kernels));
  o << line;
  // Blocking calls (synchronize, .item(), .cpu(), blocking copies, frees of busy memory) are the
  // first thing to look for: each one drains the device and stalls the host.
  std::snprintf(line, sizeof line, "host syncs: %llu blocking calls waited %.3f us for the device (simulated host time)\n\n",
                static_cast<unsigned long long>(s.host_syncs), s.host_sync_wait_ns / 1e3);
  o << line;

  o << "ops (ATen ops that ran kernels; bound = roofline of their MACs and minimum DRAM bytes)\n";
  std::snprintf(line, sizeof line, "  %-34s %7s %8s %14s %7s %12s %14s %12s %8s %9s\n", "op", "calls", "kernels", "cycles",
                "share", "time us", "MACs", "min bytes", "of peak", "of bound");
  o << line;
  if (r.ops.empty()) o << "  (none)\n";
  for (const OpSummary& op : r.ops) {
    const double share = r.kernel_cycles ? 100.0 * double(op.cycles) / double(r.kernel_cycles) : 0.0;
    const double t_s = op.time_ns * 1e-9;
    char peak[16] = "-", bound[16] = "-";
    if (op.peak_macs_per_s > 0 && t_s > 0)
      std::snprintf(peak, sizeof peak, "%.1f%%", 100.0 * double(op.totals.macs) / t_s / op.peak_macs_per_s);
    if (op.time_ns > 0 && op.bound_ns > 0) std::snprintf(bound, sizeof bound, "%.1f%%", 100.0 * op.bound_ns / op.time_ns);
    std::snprintf(line, sizeof line, "  %-34s %7llu %8llu %14llu %6.1f%% %12.3f %14llu %12s %8s %9s\n", op.name.c_str(),
                  static_cast<unsigned long long>(op.totals.calls), static_cast<unsigned long long>(op.launches),
                  static_cast<unsigned long long>(op.cycles), share, op.time_ns / 1e3,
                  static_cast<unsigned long long>(op.totals.macs), human_bytes(double(op.totals.bytes)).c_str(), peak,
                  bound);
    o << line;
  }

  o << "\nkernels\n";
  std::snprintf(line, sizeof line, "  %-32s %8s %14s %7s %12s %14s %14s\n", "name", "launches", "cycles", "share", "time us",
                "MACs", "vector elems");
  o << line;
  if (r.kernels.empty()) o << "  (none)\n";
  for (const KernelSummary& k : r.kernels) {
    const double share = r.kernel_cycles ? 100.0 * double(k.cycles) / double(r.kernel_cycles) : 0.0;
    std::snprintf(line, sizeof line, "  %-32s %8llu %14llu %6.1f%% %12.3f %14llu %14llu%s\n", k.name.c_str(),
                  static_cast<unsigned long long>(k.launches), static_cast<unsigned long long>(k.cycles), share,
                  k.time_ns / 1e3, static_cast<unsigned long long>(k.macs),
                  static_cast<unsigned long long>(k.vector_elements), k.faulted ? "  FAULTED" : "");
    o << line;
  }

  // The multiply rate by dtype: what mixed precision buys (fp16 on the TFU's fp16 array).
  o << "\nmultiplies by dtype (TFU and VFU matmuls; rate over the kernels that multiplied mostly in it)\n";
  std::snprintf(line, sizeof line, "  %-6s %18s %12s %16s %16s %8s\n", "dtype", "MACs", "kernel us", "GMAC/s", "peak GMAC/s",
                "of peak");
  o << line;
  bool any_macs = false;
  for (std::size_t d = 0; d < sim::kDTypeCount; ++d) {
    if (r.macs_by_dtype[d] == 0) continue;
    any_macs = true;
    const double rate = r.mac_kernel_ns[d] > 0 ? double(r.macs_by_dtype[d]) / (r.mac_kernel_ns[d] * 1e-9) : 0.0;
    const double peak = r.peak_macs_per_s[d];
    std::snprintf(line, sizeof line, "  %-6s %18llu %12.3f %16.1f %16.1f %7.1f%%\n",
                  std::string(sim::dtype_name(static_cast<sim::DType>(d))).c_str(),
                  static_cast<unsigned long long>(r.macs_by_dtype[d]), r.mac_kernel_ns[d] / 1e3, rate / 1e9, peak / 1e9,
                  peak > 0 ? 100.0 * rate / peak : 0.0);
    o << line;
  }
  if (!any_macs) o << "  (none)\n";

  o << "\nengines\n";
  std::snprintf(line, sizeof line, "  %-12s %14s %12s %14s %12s\n", "engine", "busy us", "utilisation", "intrinsics", "cycles");
  o << line;
  for (int e = 0; e < MLUSIM_ENGINE_COUNT; ++e) {
    const double denom = engine_instances(r, e) * s.elapsed_ns;
    const double util = denom > 0 ? 100.0 * s.engine_busy_ns[e] / denom : 0.0;
    std::snprintf(line, sizeof line, "  %-12s %14.3f %11.2f%% %14llu %12llu\n", kEngineNames[e], s.engine_busy_ns[e] / 1e3,
                  util, static_cast<unsigned long long>(s.engine_intrinsics[e]),
                  static_cast<unsigned long long>(s.engine_cycles[e]));
    o << line;
  }

  o << "\nmemory traffic\n";
  std::snprintf(line, sizeof line, "  %-8s %16s %16s\n", "level", "read", "written");
  o << line;
  for (int l = 0; l < MLUSIM_MEM_LEVEL_COUNT; ++l) {
    std::snprintf(line, sizeof line, "  %-8s %16s %16s\n", kLevelNames[l], human_bytes(double(s.read_bytes[l])).c_str(),
                  human_bytes(double(s.write_bytes[l])).c_str());
    o << line;
  }
  if (s.l2_hit_bytes > 0) {  // l2.cache: GDRAM reads the L2 served; what crossed the DRAM channels
    std::snprintf(line, sizeof line, "  %-8s %16s %16s\n", "L2 hits", human_bytes(double(s.l2_hit_bytes)).c_str(), "");
    o << line;
    std::snprintf(line, sizeof line, "  %-8s %16s %16s\n", "DRAM", human_bytes(double(s.dram_bytes)).c_str(), "(both ways)");
    o << line;
  }

  const DeviceStats& a = r.allocator;
  o << "\ndevice memory (caching allocator)\n";
  std::snprintf(line, sizeof line, "  %-24s %14s %14s\n", "", "current", "peak");
  o << line;
  auto row = [&](const char* name, const Stat& st, bool bytes) {
    if (bytes)
      std::snprintf(line, sizeof line, "  %-24s %14s %14s\n", name, human_bytes(double(st.current)).c_str(),
                    human_bytes(double(st.peak)).c_str());
    else
      std::snprintf(line, sizeof line, "  %-24s %14lld %14lld\n", name, static_cast<long long>(st.current),
                    static_cast<long long>(st.peak));
    o << line;
  };
  row("allocated", a.allocated_bytes[kAggregateStat], true);
  row("reserved", a.reserved_bytes[kAggregateStat], true);
  row("active", a.active_bytes[kAggregateStat], true);
  row("non-releasable", a.inactive_split_bytes[kAggregateStat], true);
  row("allocations", a.allocation[kAggregateStat], false);
  row("segments", a.segment[kAggregateStat], false);
  std::snprintf(line, sizeof line,
                "  driver mallocs %lld, driver frees %lld, alloc retries %lld, OOMs %lld; driver live %s (peak %s)\n",
                static_cast<long long>(a.num_device_alloc), static_cast<long long>(a.num_device_free),
                static_cast<long long>(a.num_alloc_retries), static_cast<long long>(a.num_ooms),
                human_bytes(double(s.allocated_bytes)).c_str(), human_bytes(double(s.peak_allocated_bytes)).c_str());
  o << line;

  o << "\nCPU fallback ops (not simulated)\n";
  if (r.fallback.empty()) o << "  (none)\n";
  for (const auto& [name, calls] : r.fallback) {
    std::snprintf(line, sizeof line, "  %-48s %10llu calls\n", name.c_str(), static_cast<unsigned long long>(calls));
    o << line;
  }
  return o.str();
}

nlohmann::json format_json(const ReportData& r) {
  const mlusimDeviceStats_t& s = r.stats;
  nlohmann::json j;
  j["device"] = r.device;
  j["config"] = r.config;
  j["elapsed_ns"] = s.elapsed_ns;
  j["host_ns"] = r.host_ns;
  j["kernel_launches"] = s.kernels;
  j["faulted_kernels"] = s.faulted_kernels;
  j["host_syncs"] = s.host_syncs;
  nlohmann::json multiplies = nlohmann::json::array();
  for (std::size_t d = 0; d < sim::kDTypeCount; ++d) {
    if (r.macs_by_dtype[d] == 0) continue;
    const double rate = r.mac_kernel_ns[d] > 0 ? double(r.macs_by_dtype[d]) / (r.mac_kernel_ns[d] * 1e-9) : 0.0;
    multiplies.push_back({{"dtype", std::string(sim::dtype_name(static_cast<sim::DType>(d)))},
                          {"macs", r.macs_by_dtype[d]},
                          {"kernel_time_ns", r.mac_kernel_ns[d]},
                          {"macs_per_s", rate},
                          {"peak_macs_per_s", r.peak_macs_per_s[d]}});
  }
  j["multiplies_by_dtype"] = multiplies;
  j["host_sync_wait_ns"] = s.host_sync_wait_ns;
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelSummary& k : r.kernels)
    kernels.push_back({{"name", k.name},
                       {"launches", k.launches},
                       {"cycles", k.cycles},
                       {"share", r.kernel_cycles ? double(k.cycles) / double(r.kernel_cycles) : 0.0},
                       {"time_ns", k.time_ns},
                       {"macs", k.macs},
                       {"vector_elements", k.vector_elements},
                       {"faulted", k.faulted}});
  j["kernels"] = kernels;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpSummary& op : r.ops) {
    nlohmann::json macs = nlohmann::json::object();
    for (std::size_t d = 0; d < sim::kDTypeCount; ++d)
      if (op.macs_by_dtype[d]) macs[std::string(sim::dtype_name(static_cast<sim::DType>(d)))] = op.macs_by_dtype[d];
    ops.push_back({{"name", op.name},
                   {"calls", op.totals.calls},
                   {"libmlu_ops", op.totals.libmlu_ops},
                   {"kernels", op.launches},
                   {"cycles", op.cycles},
                   {"share", r.kernel_cycles ? double(op.cycles) / double(r.kernel_cycles) : 0.0},
                   {"time_ns", op.time_ns},
                   {"macs", op.totals.macs},
                   {"kernel_macs_by_dtype", macs},
                   {"min_dram_bytes", op.totals.bytes},
                   {"dram_bytes", op.dram_bytes},
                   {"roofline_bound_ns", op.bound_ns},
                   {"peak_macs_per_s", op.peak_macs_per_s}});
  }
  j["ops"] = ops;
  j["dram_peak_bytes_per_s"] = r.dram_peak_bytes_per_s;
  nlohmann::json engines = nlohmann::json::object();
  for (int e = 0; e < MLUSIM_ENGINE_COUNT; ++e) {
    const double denom = engine_instances(r, e) * s.elapsed_ns;
    engines[kEngineNames[e]] = {{"busy_ns", s.engine_busy_ns[e]},
                                {"utilisation", denom > 0 ? s.engine_busy_ns[e] / denom : 0.0},
                                {"intrinsics", s.engine_intrinsics[e]},
                                {"cycles", s.engine_cycles[e]}};
  }
  j["engines"] = engines;
  nlohmann::json traffic = nlohmann::json::object();
  for (int l = 0; l < MLUSIM_MEM_LEVEL_COUNT; ++l)
    traffic[kLevelNames[l]] = {{"read_bytes", s.read_bytes[l]}, {"write_bytes", s.write_bytes[l]}};
  // l2.cache: of GDRAM's read_bytes, those the L2 served, and what it fetched beyond the bytes read;
  // dram_bytes: what crossed the DRAM channels.
  traffic["L2"] = {{"hit_bytes", s.l2_hit_bytes}, {"overfetch_bytes", s.l2_overfetch_bytes}};
  traffic["DRAM"] = {{"bytes", s.dram_bytes}};
  j["memory_traffic"] = traffic;
  nlohmann::json alloc = nlohmann::json::object();
  for (const auto& [k, v] : r.allocator.flatten()) alloc[k] = v;
  j["allocator"] = alloc;
  j["driver_memory"] = {{"allocated_bytes", s.allocated_bytes},
                        {"peak_allocated_bytes", s.peak_allocated_bytes},
                        {"live_allocations", s.live_allocations}};
  nlohmann::json fb = nlohmann::json::object();
  for (const auto& [name, calls] : r.fallback) fb[name] = calls;
  j["cpu_fallback"] = fb;
  return j;
}

}  // namespace

// ---- internal.h: trace recorder -----------------------------------------------------------------

void trace_recorder_begin() {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  g_events.clear();
  g_recording = true;
}

void trace_recorder_end() { g_recording = false; }

void trace_recorder_clear() {
  g_recording = false;
  std::lock_guard<std::mutex> lock(g_trace_mu);
  g_events.clear();
}

void trace_recorder_drop_events() {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  g_events.clear();
}

void trace_recorder_add(const AllocatorEvent& event) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  std::uint64_t ps = 0;
  if (mlusimGetHostTimePs(&ps) != cnrtSuccess) cnrtGetLastError();
  std::lock_guard<std::mutex> lock(g_trace_mu);
  g_events.push_back({event, ps});
}

void trace_merge_allocator_events(const std::string& path) {
  std::vector<RecordedEvent> events;
  {
    std::lock_guard<std::mutex> lock(g_trace_mu);
    events = g_events;
  }
  if (events.empty()) return;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("trace: cannot read back " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  nlohmann::json trace = nlohmann::json::parse(text);
  nlohmann::json& list = trace["traceEvents"];
  // Existing processes and tracks: reuse an "allocator" track of the device if there is one.
  std::map<int, int> max_tid, allocator_tid;
  std::map<int, bool> has_process;
  for (const nlohmann::json& e : list) {
    if (!e.contains("pid")) continue;
    const int pid = e["pid"].get<int>();
    const int tid = e.value("tid", 0);
    max_tid[pid] = std::max(max_tid.count(pid) ? max_tid[pid] : 0, tid);
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") has_process[pid] = true;
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" && e.contains("args") &&
        e["args"].value("name", "") == "allocator")
      allocator_tid[pid] = tid;
  }
  const std::string config = trace.contains("otherData") ? trace["otherData"].value("config", "") : "";
  // Events in the driver's key order (name, cat, ph, pid, tid, ts, args); ts is written below as
  // the exact decimal of picoseconds (traces/README.md).
  using ojson = nlohmann::ordered_json;
  std::vector<ojson> added;
  auto track = [&](int device) {
    const int pid = device + 1;
    if (!has_process[pid]) {
      added.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                       {"args", {{"name", "mlu" + std::to_string(device) + " (" + config + ")"}}}});
      has_process[pid] = true;
    }
    if (!allocator_tid.count(pid)) {
      const int tid = (max_tid.count(pid) ? max_tid[pid] : 0) + 1;
      max_tid[pid] = tid;
      allocator_tid[pid] = tid;
      added.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", "allocator"}}}});
      added.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                       {"args", {{"sort_index", 1000000}}}});
    }
    return std::make_pair(pid, allocator_tid[pid]);
  };
  // Allocator events carry the host clock (since the config was loaded); the device's trace
  // events count from its stats epoch: rebase, and leave out what happened before it.
  std::map<int, std::uint64_t> epoch_ps;
  for (const RecordedEvent& r : events) {
    if (epoch_ps.count(r.event.device)) continue;
    mlusimDeviceStats_t st{};
    if (mlusimGetDeviceStats(r.event.device, &st) != cnrtSuccess) cnrtGetLastError();
    epoch_ps[r.event.device] = static_cast<std::uint64_t>(st.epoch_ns * 1000.0 + 0.5);
  }
  for (RecordedEvent r : events) {
    const AllocatorEvent& e = r.event;
    if (r.ts_ps < epoch_ps[e.device]) continue;
    r.ts_ps -= epoch_ps[e.device];
    const auto [pid, tid] = track(e.device);
    ojson args = {{"bytes", e.size}};
    if (e.address) args["address"] = hex(e.address);
    if (e.kind != AllocatorEventKind::kOutOfMemory) args["queue"] = hex(reinterpret_cast<std::uintptr_t>(e.queue));
    args["allocated_bytes"] = e.allocated_bytes;
    args["reserved_bytes"] = e.reserved_bytes;
    args["ts_ps"] = r.ts_ps;
    added.push_back({{"name", event_name(e.kind)}, {"cat", "alloc"}, {"ph", "i"}, {"s", "t"}, {"pid", pid},
                     {"tid", tid}, {"ts", r.ts_ps}, {"args", args}});
    added.push_back({{"name", "memory reserved (bytes)"}, {"ph", "C"}, {"pid", pid}, {"tid", tid}, {"ts", r.ts_ps},
                     {"args", {{"bytes", e.reserved_bytes}}}});
    added.push_back({{"name", "torch allocated (bytes)"}, {"ph", "C"}, {"pid", pid}, {"tid", tid}, {"ts", r.ts_ps},
                     {"args", {{"bytes", e.allocated_bytes}}}});
  }
  // Append one event per line before the end of "traceEvents", keeping the driver's text as is.
  std::string lines;
  bool first = list.empty();
  for (ojson& e : added) {
    std::string line = e.dump();
    if (e.contains("ts")) {
      const std::string raw = "\"ts\":" + std::to_string(e["ts"].get<std::uint64_t>());
      const auto at = line.find(raw);
      if (at != std::string::npos) line.replace(at, raw.size(), "\"ts\":" + micros(e["ts"].get<std::uint64_t>()));
    }
    lines += (first ? "\n" : ",\n") + line;
    first = false;
  }
  const auto end = text.rfind("],\"otherData\"");
  if (end != std::string::npos) {
    std::size_t insert_at = end;
    while (insert_at > 0 && (text[insert_at - 1] == '\n' || text[insert_at - 1] == ' ')) --insert_at;
    text.insert(insert_at, lines);
  } else {
    for (ojson& e : added) {
      if (e.contains("ts")) e["ts"] = double(e["ts"].get<std::uint64_t>()) / 1e6;
      list.push_back(nlohmann::json::parse(e.dump()));
    }
    text = trace.dump();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("trace: cannot write " + path);
}

// ---- api.h: traces and reports ----------------------------------------------------------------------

void trace_begin(int level) {
  ensure_started();
  caching_allocator();  // the allocator's events go to the recorder from now on
  check(mlusimTraceBegin(static_cast<mlusimTraceLevel_t>(level)), "mlusimTraceBegin");
  trace_recorder_begin();
}

void trace_end() {
  trace_recorder_end();
  check(mlusimTraceEnd(), "mlusimTraceEnd");
}

void trace_write(const std::string& path) {
  check(mlusimTraceWrite(path.c_str()), "mlusimTraceWrite");
  trace_merge_allocator_events(path);
}

std::string cycle_report(int device) { return format_text(collect(device)); }

std::string cycle_report_json(int device) { return format_json(collect(device)).dump(2); }

std::vector<std::pair<std::string, double>> device_stats(int device) {
  ensure_started();
  mlusimDeviceStats_t s{};
  check(mlusimGetDeviceStats(device < 0 ? current_device() : device, &s), "mlusimGetDeviceStats");
  return {{"elapsed_ns", s.elapsed_ns},
          {"kernels", double(s.kernels)},
          {"faulted_kernels", double(s.faulted_kernels)},
          {"host_syncs", double(s.host_syncs)},
          {"host_sync_wait_ns", s.host_sync_wait_ns},
          {"allocated_bytes", double(s.allocated_bytes)},
          {"peak_allocated_bytes", double(s.peak_allocated_bytes)},
          {"live_allocations", double(s.live_allocations)},
          {"host_read_bytes", double(s.read_bytes[0])},
          {"host_write_bytes", double(s.write_bytes[0])},
          {"gdram_read_bytes", double(s.read_bytes[1])},
          {"gdram_write_bytes", double(s.write_bytes[1])},
          {"l2_hit_bytes", double(s.l2_hit_bytes)},
          {"dram_bytes", double(s.dram_bytes)}};
}

void reset_stats(int device) {
  ensure_started();
  device = device < 0 ? current_device() : device;
  check(mlusimResetStats(device), "mlusimResetStats");
  op_table_clear(device);
  reset_cpu_fallback_counts();
}

void flush_l2(int device) {
  ensure_started();
  device = device < 0 ? current_device() : device;
  check(mlusimFlushL2(device), "mlusimFlushL2");
}

// ---- internal.h: the op table --------------------------------------------------------------------

void op_table_add(int device, const char* aten_op, std::uint64_t macs, std::uint64_t bytes, std::uint32_t kernels) {
  std::lock_guard<std::mutex> lock(g_ops_mu);
  OpTotals& t = g_ops[device][aten_op];
  ++t.libmlu_ops;
  t.macs += macs;
  t.bytes += bytes;
  t.kernels += kernels;
}

std::uint64_t op_calls() { return g_op_calls.load(std::memory_order_relaxed); }

void op_table_count_call(int device, const char* aten_op) {
  g_op_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_ops_mu);
  ++g_ops[device][aten_op].calls;
}

void op_table_clear(int device) {
  std::lock_guard<std::mutex> lock(g_ops_mu);
  if (device < 0) g_ops.clear();
  else g_ops.erase(device);
}

}  // namespace mlusim::bridge
