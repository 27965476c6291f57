#include "mlusim/sim/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mlusim/sim/roofline.h"

namespace mlusim::sim {
namespace {

// Bytes that crossed the DRAM channels (GDRAM traffic the L2 did not serve).
std::uint64_t gdram_bytes(const TrafficCounters& t) { return t.dram_bytes(); }

// How many instances of an engine the device has (for utilisation).
std::uint64_t engine_instances(const HardwareConfig& cfg, Engine e) {
  return e == Engine::kMemcoreDma ? cfg.clusters : cfg.total_cores();
}

std::uint64_t total_macs(const KernelRecord& k) {
  std::uint64_t sum = 0;
  for (std::uint64_t m : k.macs_by_dtype) sum += m;
  return sum;
}

struct KernelMetrics {
  double seconds = 0, achieved_macs_per_s = 0, achieved_gbps = 0, bound_seconds = 0, efficiency = 0, peak_share = 0;
};

KernelMetrics metrics(const HardwareConfig& cfg, const KernelRecord& k) {
  KernelMetrics m;
  m.seconds = double(k.end_ps - k.start_ps) / kPicosPerSecond;
  const std::uint64_t bytes = gdram_bytes(k.traffic);
  m.bound_seconds = double(roofline_bound_ps(cfg, k.macs_by_dtype, bytes)) / kPicosPerSecond;
  if (m.seconds > 0) {
    m.achieved_macs_per_s = double(total_macs(k)) / m.seconds;
    m.achieved_gbps = double(bytes) / m.seconds / 1e9;
    m.efficiency = m.bound_seconds / m.seconds;
    double peak_time = 0;  // time the MACs would take at peak, per dtype
    for (std::size_t i = 0; i < kDTypeCount; ++i)
      if (k.macs_by_dtype[i]) peak_time += double(k.macs_by_dtype[i]) / peak_macs_per_s(cfg, static_cast<DType>(i));
    m.peak_share = peak_time / m.seconds;
  }
  return m;
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
  return buf;
}

}  // namespace

std::string format_cycle_report(const HardwareConfig& cfg, const DeviceStats& stats, Picos elapsed_ps) {
  std::ostringstream o;
  char line[512];
  const double elapsed_us = double(elapsed_ps) / 1e6;
  Picos kernel_ps = 0;
  for (const KernelRecord& k : stats.kernels) kernel_ps += k.end_ps - k.start_ps;
  std::snprintf(line, sizeof line, "mlusim cycle report: %s, %u clusters x %u cores @ %.0f MHz\n", cfg.name.c_str(),
                cfg.clusters, cfg.cores_per_cluster, cfg.core_clock_mhz);
  o << line;
  std::snprintf(line, sizeof line, "simulated time %.3f us (%llu cycles), %zu kernel launches\n\n", elapsed_us,
                static_cast<unsigned long long>(ps_to_cycles(elapsed_ps, cfg.core_clock_mhz)), stats.kernels.size());
  o << line;

  o << "kernels\n";
  std::snprintf(line, sizeof line, "  %-24s %12s %6s %12s %12s %10s %9s %11s %6s\n", "name", "cycles", "share", "MACs",
                "DRAM bytes", "DRAM GB/s", "MAC peak", "roofline us", "eff");
  o << line;
  for (const KernelRecord& k : stats.kernels) {
    const KernelMetrics m = metrics(cfg, k);
    const double share = kernel_ps ? 100.0 * double(k.end_ps - k.start_ps) / double(kernel_ps) : 0.0;
    std::snprintf(line, sizeof line, "  %-24.24s %12llu %5.1f%% %12llu %12s %10.1f %8.1f%% %11.3f %5.1f%%%s\n",
                  k.name.c_str(), static_cast<unsigned long long>(k.cycles), share,
                  static_cast<unsigned long long>(total_macs(k)), human_bytes(double(gdram_bytes(k.traffic))).c_str(),
                  m.achieved_gbps, 100.0 * m.peak_share, m.bound_seconds * 1e6, 100.0 * m.efficiency,
                  k.faulted ? "  FAULTED" : "");
    o << line;
  }

  o << "\nengines (utilisation = busy / (instances x simulated time))\n";
  const EngineSet totals = stats.engine_totals();
  for (std::size_t e = 0; e < kEngineCount; ++e) {
    const auto eng = static_cast<Engine>(e);
    const double denom = double(engine_instances(cfg, eng)) * double(elapsed_ps);
    const double util = denom > 0 ? 100.0 * double(totals[e].busy_ps) / denom : 0.0;
    std::snprintf(line, sizeof line, "  %-12s %6.2f%%  %10llu intrinsics  %14llu cycles\n",
                  std::string(engine_name(eng)).c_str(), util, static_cast<unsigned long long>(totals[e].intrinsics),
                  static_cast<unsigned long long>(totals[e].cycles));
    o << line;
  }

  o << "\nbytes per memory level\n";
  for (std::size_t l = 0; l < kMemLevelCount; ++l) {
    std::snprintf(line, sizeof line, "  %-6s read %12s   written %12s\n",
                  std::string(mem_level_name(static_cast<MemLevel>(l))).c_str(),
                  human_bytes(double(stats.traffic.read_bytes[l])).c_str(),
                  human_bytes(double(stats.traffic.write_bytes[l])).c_str());
    o << line;
  }
  return o.str();
}

void cycle_report_json(const HardwareConfig& cfg, const DeviceStats& stats, Picos elapsed_ps, nlohmann::json& out) {
  stats.to_json(out);
  out["config"] = cfg.name;
  out["elapsed_ps"] = elapsed_ps;
  out["elapsed_cycles"] = ps_to_cycles(elapsed_ps, cfg.core_clock_mhz);
  for (std::size_t i = 0; i < stats.kernels.size(); ++i) {
    const KernelMetrics m = metrics(cfg, stats.kernels[i]);
    out["kernels"][i]["roofline_ps"] = static_cast<Picos>(m.bound_seconds * kPicosPerSecond);
    out["kernels"][i]["efficiency"] = m.efficiency;
    out["kernels"][i]["mac_peak_share"] = m.peak_share;
    out["kernels"][i]["dram_gbps"] = m.achieved_gbps;
  }
  const EngineSet totals = stats.engine_totals();
  for (std::size_t e = 0; e < kEngineCount; ++e) {
    const auto eng = static_cast<Engine>(e);
    const double denom = double(engine_instances(cfg, eng)) * double(elapsed_ps);
    out["utilisation"][std::string(engine_name(eng))] = denom > 0 ? double(totals[e].busy_ps) / denom : 0.0;
  }
}

}  // namespace mlusim::sim
