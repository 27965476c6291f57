#include "config/schema.h"

namespace mlusim::sim::config_internal {
namespace {

using HC = HardwareConfig;

// The on-chip memories share a 32-bit address space, so none can exceed 4 GiB.
constexpr double kOnChipLimit = 4.0 * 1024 * 1024 * 1024;
constexpr const char* kOnChipWhy = "the on-chip address space is 32 bits";
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kString: return "string";
    case ValueType::kCount: return "unsigned integer";
    case ValueType::kBytes: return "byte size";
    case ValueType::kReal: return "number";
    case ValueType::kBool: return "boolean";
    case ValueType::kDataflow: return "dataflow";
  }
  return "value";
}

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      {"name", ValueType::kString, "", &HC::name, any_value()},
      {"devices", ValueType::kCount, "chips", &HC::device_count, between(1, 16, "the driver exposes at most 16 devices")},

      {"topology.clusters", ValueType::kCount, "clusters", &HC::clusters, between(1, 1024)},
      {"topology.cores_per_cluster", ValueType::kCount, "cores", &HC::cores_per_cluster, between(1, 16)},
      {"clock.core_mhz", ValueType::kReal, "MHz", &HC::core_clock_mhz, positive()},
      {"clock.mem_mhz", ValueType::kReal, "MHz", &HC::mem_clock_mhz, positive()},

      {"core.nram_bytes", ValueType::kBytes, "bytes", &HC::nram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"core.wram_bytes", ValueType::kBytes, "bytes", &HC::wram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"cluster.sram_bytes", ValueType::kBytes, "bytes", &HC::sram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"cluster.sram_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::sram_bandwidth_gbps, positive()},
      {"cluster.sram_latency_cycles", ValueType::kCount, "cycles", &HC::sram_latency_cycles, any_value()},

      {"dram.capacity_bytes", ValueType::kBytes, "bytes", &HC::dram_bytes,
       at_least(kMiB)},
      {"dram.channels", ValueType::kCount, "channels", &HC::dram_channels, between(1, 1024)},
      {"dram.interleave_bytes", ValueType::kBytes, "bytes", &HC::dram_interleave_bytes, power_of_two()},
      {"dram.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::dram_bandwidth_gbps, positive()},
      {"dram.latency_ns", ValueType::kReal, "ns", &HC::dram_latency_ns, at_least(0)},
      {"dram.bus_width_bits", ValueType::kCount, "bits", &HC::dram_bus_width_bits, at_least(1)},

      {"l2.size_bytes", ValueType::kBytes, "bytes", &HC::l2_bytes, between(0, kOnChipLimit, kOnChipWhy)},
      {"l2.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::noc_bandwidth_gbps, positive()},

      {"dma.io_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::io_dma_bandwidth_gbps, positive()},
      {"dma.move_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::move_dma_bandwidth_gbps, positive()},
      {"dma.memcore_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::memcore_dma_bandwidth_gbps, positive()},
      {"dma.io_latency_cycles", ValueType::kCount, "cycles", &HC::io_dma_latency_cycles, any_value()},
      {"dma.move_latency_cycles", ValueType::kCount, "cycles", &HC::move_dma_latency_cycles, any_value()},
      {"dma.burst_bytes", ValueType::kBytes, "bytes", &HC::dma_burst_bytes, power_of_two()},

      {"host_link.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::host_link_bandwidth_gbps, positive()},
      {"host_link.pageable_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::host_link_pageable_gbps, positive()},
      {"host_link.latency_ns", ValueType::kReal, "ns", &HC::host_link_latency_ns, at_least(0)},
      // 0 GB/s is meaningful here: the chip has no MLU-Link and peer copies go through the host.
      {"mlu_link.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::mlu_link_bandwidth_gbps, at_least(0)},
      {"mlu_link.latency_ns", ValueType::kReal, "ns", &HC::mlu_link_latency_ns, at_least(0)},

      // At least one fp32 lane (4 bytes); a power of two so 128-byte-aligned operands split evenly.
      {"vfu.width_bytes", ValueType::kBytes, "bytes", &HC::vfu_width_bytes, power_of_two(4)},
      {"vfu.startup_cycles", ValueType::kCount, "cycles", &HC::vfu_startup_cycles, any_value()},
      {"vfu.transcendental_factor", ValueType::kCount, "x", &HC::vfu_transcendental_factor, at_least(1)},

      // 0 x 0 = dtype not supported by the TFU; rows and cols must agree (checked in config.cpp).
      {"tfu.fp32.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp32, &TfuArray::rows}, any_value()},
      {"tfu.fp32.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp32, &TfuArray::cols}, any_value()},
      {"tfu.fp16.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp16, &TfuArray::rows}, any_value()},
      {"tfu.fp16.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp16, &TfuArray::cols}, any_value()},
      {"tfu.int8.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_int8, &TfuArray::rows}, any_value()},
      {"tfu.int8.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_int8, &TfuArray::cols}, any_value()},
      {"tfu.dataflow", ValueType::kDataflow, "", &HC::tfu_dataflow, any_value()},
      {"tfu.fold_overlap", ValueType::kBool, "", &HC::tfu_fold_overlap, any_value()},

      {"scalar.onchip_access_cycles", ValueType::kCount, "cycles", &HC::scalar_onchip_cycles, at_least(1)},

      {"host.launch_overhead_ns", ValueType::kReal, "ns", &HC::launch_overhead_ns, at_least(0)},
      {"host.api_call_ns", ValueType::kReal, "ns", &HC::api_call_ns, at_least(0)},
  };
  return fields;
}

const Field* find_field(std::string_view key) {
  for (const Field& field : schema())
    if (key == field.key) return &field;
  return nullptr;
}

bool is_section(std::string_view path) {
  if (path.empty()) return false;
  for (const Field& field : schema()) {
    const std::string_view key = field.key;
    if (key.size() > path.size() && key.substr(0, path.size()) == path && key[path.size()] == '.') return true;
  }
  return false;
}

}  // namespace mlusim::sim::config_internal
