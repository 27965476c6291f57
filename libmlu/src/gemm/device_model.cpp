#include "gemm/device_model.h"

#include <algorithm>

#include <mlusim_ext.h>

#include "mlusim/sim/engine_costs.h"

namespace mlusim::mlu::gemm {

std::uint64_t DeviceModel::matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n) const {
  if (m == 0 || k == 0 || n == 0) return 0;
  return on_tfu() ? sim::tfu_matmul_cycles(config, in, m, k, n)
                  : sim::vfu_matmul_cycles(config, sim::DType::kFloat32, m, k, n);
}

std::uint64_t DeviceModel::conv_cycles(std::uint64_t m, std::uint64_t taps, std::uint64_t cin, std::uint64_t n) const {
  if (m == 0 || taps == 0 || cin == 0 || n == 0) return 0;
  return sim::tfu_conv_intrinsic_cycles(config, in, m, taps, cin, n);
}

std::uint64_t DeviceModel::conv_chained_cycles(std::uint64_t m, std::uint64_t taps, std::uint64_t cin,
                                               std::uint64_t n) const {
  if (m == 0 || taps == 0 || cin == 0 || n == 0) return 0;
  return sim::tfu_conv_intrinsic_chained_cycles(config, in, m, taps, cin, n);
}

std::uint64_t DeviceModel::vfu_cycles_fp32(std::uint64_t n) const {
  return sim::vfu_elementwise_cycles(config, sim::DType::kFloat32, n);
}

DeviceModel device_model(const Handle& h, sim::DType in) {
  DeviceModel d;
  d.config = driver::loaded_config();
  const sim::HardwareConfig& cfg = d.config;
  d.in = in;
  const sim::TfuArray& a = cfg.tfu_array(in);
  d.tfu_rows = a.rows;
  d.tfu_cols = a.cols;
  d.weight_stationary = cfg.tfu_dataflow == sim::Dataflow::kWeightStationary;
  const double bytes_per_gbps = 1e3 / cfg.core_clock_mhz;  // GB/s -> bytes per cycle
  d.dram_bpc = cfg.dram_bandwidth_gbps * bytes_per_gbps;
  d.noc_bpc = cfg.noc_bandwidth_gbps * bytes_per_gbps;
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
