#include "gemm/device_model.h"

#include <algorithm>

#include "mlusim/sim/simulator.h"

namespace mlusim::mlu::gemm {

std::uint64_t DeviceModel::matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n) const {
  if (m == 0 || k == 0 || n == 0) return 0;
  auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
  if (!on_tfu()) {
    const std::uint64_t lanes = std::max<std::uint64_t>(1, vfu_width_bytes / 4);
    return vfu_startup_cycles + m * k * ceil_div(n, lanes);
  }
  const std::uint64_t r = tfu_rows, c = tfu_cols;
  // OS: rows take M, K streams; WS: rows take K, M streams (see tfu_timing.h).
  const std::uint64_t spatial_rows = weight_stationary ? k : m, streamed = weight_stationary ? m : k;
  const std::uint64_t folds = ceil_div(spatial_rows, r) * ceil_div(n, c);
  const std::uint64_t per_fold = weight_stationary ? streamed + 2 * r + c - 2 : streamed + r + c - 2;
  if (!fold_overlap) return folds * per_fold - 1;
  return per_fold + (folds - 1) * std::max(streamed, r) - 1;
}

std::uint64_t DeviceModel::vfu_cycles_fp32(std::uint64_t n) const {
  const std::uint64_t lanes = std::max<std::uint32_t>(1, vfu_width_bytes / 4);
  return vfu_startup_cycles + (n + lanes - 1) / lanes;
}

DeviceModel device_model(const Handle& h, sim::DType in) {
  // The simulator's config is immutable between loads (mlusimLoadConfig drains the device and
  // invalidates every handle), so reading it from the host thread here is safe.
  const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
  DeviceModel d;
  const sim::TfuArray& a = cfg.tfu_array(in);
  d.tfu_rows = a.rows;
  d.tfu_cols = a.cols;
  d.weight_stationary = cfg.tfu_dataflow == sim::Dataflow::kWeightStationary;
  d.fold_overlap = cfg.tfu_fold_overlap;
  d.vfu_width_bytes = cfg.vfu_width_bytes;
  d.vfu_startup_cycles = cfg.vfu_startup_cycles;
  const double bytes_per_gbps = 1e3 / cfg.core_clock_mhz;  // GB/s -> bytes per cycle
  d.dram_bpc = cfg.dram_bandwidth_gbps * bytes_per_gbps;
  d.io_dma_bpc = cfg.io_dma_bandwidth_gbps * bytes_per_gbps;
  d.move_dma_bpc = cfg.move_dma_bandwidth_gbps * bytes_per_gbps;
  d.memcore_dma_bpc = cfg.memcore_dma_bandwidth_gbps * bytes_per_gbps;
  d.sram_bpc = cfg.sram_bandwidth_gbps * bytes_per_gbps;
  d.io_latency_cycles =
      cfg.io_dma_latency_cycles + static_cast<std::uint32_t>(cfg.dram_latency_ns * cfg.core_clock_mhz / 1e3);
  d.move_latency_cycles = cfg.move_dma_latency_cycles + cfg.sram_latency_cycles;
  d.burst_bytes = cfg.dma_burst_bytes;
  d.nram_bytes = h.nram_bytes();
  d.wram_bytes = h.wram_bytes();
  d.sram_bytes = h.sram_bytes();
  d.clusters = h.clusters();
  d.cores_per_cluster = h.cores_per_cluster();
  return d;
}

}  // namespace mlusim::mlu::gemm
