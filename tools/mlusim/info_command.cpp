// `mlusim info`: what a config amounts to: peaks per dtype, bandwidth per level, memory sizes.
#include <cstdio>

#include "commands.h"
#include "config_options.h"
#include "mlusim/sim/roofline.h"

namespace mlusim::cli {
namespace {

void print_info(const sim::HardwareConfig& c) {
  using sim::DType;
  std::printf("%s (%s)\n", c.name.c_str(), c.source_file.c_str());
  std::printf("  devices            %u\n", c.device_count);
  std::printf("  topology           %u clusters x %u cores (+1 memory core each) = %u cores @ %.0f MHz\n", c.clusters,
              c.cores_per_cluster, c.total_cores(), c.core_clock_mhz);
  std::printf("  compute capability %u.%u, bf16 %s\n", c.capability_major, c.capability_minor,
              c.computes(DType::kBFloat16) ? "yes" : "no (storage only; bf16 compute is an error)");
  std::printf("\npeak compute (whole device)\n");
  for (DType t : {DType::kInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    if (!c.computes(t)) continue;
    const sim::TfuArray& a = c.tfu_array(t);
    const double tfu = 2 * sim::tfu_peak_macs_per_s(c, t) / 1e12;
    const double vfu = 2 * sim::vfu_peak_elements_per_s(c, t) / 1e12;
    // Several arrays per core (tfu.arrays) show as "128x128 x2"; the peak counts all of them.
    const std::string copies = a.count > 1 ? " x" + std::to_string(a.count) : "";
    if (a.supported())
      std::printf("  %-5s TFU %3ux%-3u%s %8.2f T%s/s   VFU %7.2f T%s/s\n", std::string(sim::dtype_name(t)).c_str(),
                  a.rows, a.cols, copies.c_str(), tfu, t == DType::kInt8 ? "OP" : "FLOP", vfu,
                  t == DType::kInt8 ? "OP" : "FLOP");
    else
      std::printf("  %-5s TFU  none              VFU %7.2f T%s/s (roofline uses the VFU)\n",
                  std::string(sim::dtype_name(t)).c_str(), vfu, t == DType::kInt8 ? "OP" : "FLOP");
  }
  std::printf("  TFU dataflow       %s, fold overlap %s, intrinsic overlap %s, conv depth %s\n",
              c.tfu_dataflow == sim::Dataflow::kOutputStationary ? "output-stationary" : "weight-stationary",
              c.tfu_fold_overlap ? "on" : "off", c.tfu_intrinsic_overlap ? "on" : "off",
              c.tfu_conv_depth_per_tap ? "per tap" : "im2col");
  std::printf("\nbandwidth (GB/s)\n");
  std::printf("  DRAM               %8.1f  (%u channels, %llu-byte interleave%s, %.0f ns latency)\n",
              c.dram_bandwidth_gbps, c.dram_channels, static_cast<unsigned long long>(c.dram_interleave_bytes),
              c.dram_channel_hash ? ", hashed" : "", c.dram_latency_ns);
  std::printf("  NoC / L2           %8.1f\n", c.noc_bandwidth_gbps);
  std::printf("  IO-DMA per core    %8.1f  (all cores: %.1f)\n", c.io_dma_bandwidth_gbps,
              c.io_dma_bandwidth_gbps * c.total_cores());
  std::printf("  Move-DMA per core  %8.1f\n", c.move_dma_bandwidth_gbps);
  std::printf("  memory-core DMA    %8.1f  per cluster\n", c.memcore_dma_bandwidth_gbps);
  std::printf("  SRAM port          %8.1f  per cluster\n", c.sram_bandwidth_gbps);
  std::printf("  host link          %8.1f  pinned, %.1f pageable\n", c.host_link_bandwidth_gbps, c.host_link_pageable_gbps);
  if (c.mlu_link_bandwidth_gbps > 0) std::printf("  MLU-Link           %8.1f\n", c.mlu_link_bandwidth_gbps);
  std::printf("\nmemory\n");
  std::printf("  NRAM / WRAM        %llu KiB / %llu KiB per core\n", static_cast<unsigned long long>(c.nram_bytes >> 10),
              static_cast<unsigned long long>(c.wram_bytes >> 10));
  std::printf("  SRAM               %llu KiB per cluster\n", static_cast<unsigned long long>(c.sram_bytes >> 10));
  std::printf("  L2                 %llu KiB\n", static_cast<unsigned long long>(c.l2_bytes >> 10));
  std::printf("  DRAM               %.2f GiB\n", double(c.dram_bytes) / double(1ull << 30));
  std::printf("\nkernel launch\n");
  std::printf("  host               %.0f ns per launch call\n", c.launch_overhead_ns);
  std::printf("  device latency     %.0f ns, submission to first tasks\n", c.launch_latency_ns);
  const double balance = 2 * sim::peak_macs_per_s(c, DType::kFloat16) / sim::dram_peak_bytes_per_s(c);
  std::printf("\nfp16 machine balance: %.0f FLOP per DRAM byte\n", balance);
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto o = std::make_shared<ConfigOptions>();
  CLI::App* cmd = app.add_subcommand("info", "show a config's derived properties (peaks, bandwidths, sizes)");
  o->add_to(*cmd);
  return [o] {
    print_info(o->load());
    return 0;
  };
}

}  // namespace mlusim::cli
