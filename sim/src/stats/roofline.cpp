#include "mlusim/sim/roofline.h"

#include <algorithm>
#include <cmath>

namespace mlusim::sim {

double tfu_peak_macs_per_s(const HardwareConfig& cfg, DType t) {
  // cores x rows x cols x arrays MACs per cycle (0 when the TFU lacks the dtype).
  return double(cfg.total_cores()) * double(cfg.tfu_array(t).macs_per_cycle()) * cfg.core_clock_mhz * 1e6;
}

double vfu_peak_elements_per_s(const HardwareConfig& cfg, DType t) {
  const double lanes = std::max<double>(1.0, double(cfg.vfu_width_bytes) / double(dtype_size(t)));
  return double(cfg.total_cores()) * lanes * cfg.core_clock_mhz * 1e6;
}

double peak_macs_per_s(const HardwareConfig& cfg, DType t) {
  const double tfu = tfu_peak_macs_per_s(cfg, t);
  return tfu > 0 ? tfu : vfu_peak_elements_per_s(cfg, t);
}

double dram_peak_bytes_per_s(const HardwareConfig& cfg) { return cfg.dram_bandwidth_gbps * 1e9; }

Picos roofline_bound_ps(const HardwareConfig& cfg, const MacsByDtype& macs, std::uint64_t dram_bytes) {
  double compute_s = 0;
  for (std::size_t i = 0; i < kDTypeCount; ++i)
    if (macs[i] > 0) compute_s += double(macs[i]) / peak_macs_per_s(cfg, static_cast<DType>(i));
  const double memory_s = double(dram_bytes) / dram_peak_bytes_per_s(cfg);
  return static_cast<Picos>(std::floor(std::max(compute_s, memory_s) * kPicosPerSecond));
}

}  // namespace mlusim::sim
