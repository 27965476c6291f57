#include "config/schema.h"

namespace mlusim::sim::config_internal {
namespace {

using HC = HardwareConfig;

// The on-chip memories share a 32-bit address space, so none can exceed 4 GiB.
constexpr double kOnChipLimit = 4.0 * 1024 * 1024 * 1024;
constexpr const char* kOnChipWhy = "the on-chip address space is 32 bits";
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kTiB = 1024.0 * 1024.0 * 1024.0 * 1024.0;

// Bounds that keep simulated time exact and representable (sim_time.h: 64-bit picoseconds, at
// most 2^64 - 1 ps = 213.5 days). Within them the longest single duration an accepted config can
// produce is a whole-DRAM transfer at the slowest rate, 1 TiB at 1 MB/s = 1.1e18 ps (12.7 days),
// and every per-call, per-access or per-cycle cost is at most a second, so any accepted config can
// simulate at least a day of device time; what still overflows raises SimTimeOverflow.
// Clocks: 1 MHz (a 1e6 ps period: a day is 8.64e10 cycles) to 100 GHz (a 10 ps period, ten times
// the 1 ps time resolution, so rounding a cycle up to whole ps costs at most 10%).
constexpr double kMinMhz = 1, kMaxMhz = 100000;
constexpr const char* kClockWhy = "1 MHz to 100 GHz keeps a cycle between 10 ps and 1 us of 64-bit picosecond time";
// Rates: 1 MB/s (one byte per 1e6 ps) to 1 PB/s (1000 bytes per ps), four orders of magnitude
// around every real link (PCIe 3 x1 ~1 GB/s .. HBM3e ~5 TB/s).
constexpr double kMinGbps = 1e-3, kMaxGbps = 1e6;
constexpr const char* kRateWhy = "1 MB/s to 1 PB/s keeps every transfer within 64-bit picosecond time";
// Latencies and host costs: at most a second (1e12 ps) each; in cycles, 1e9 (1000 s at 1 MHz).
constexpr double kMaxNs = 1e9, kMaxCycles = 1e9;
constexpr const char* kLatencyWhy = "at most 1 s, so a day of simulated time holds at least 86400 of them";
constexpr const char* kCyclesWhy = "at most 1e9 cycles, 1000 s at the slowest clock";
// Device memory: 1 TiB, above any chip's today (192 GB HBM3e), and 12.7 days to copy at 1 MB/s.
constexpr const char* kDramWhy = "1 MiB to 1 TiB; a whole-memory copy at the slowest rate must fit 64-bit picoseconds";
// Engine shapes: the widest real TFU is 256 x 256 (TPU v5p's MXUs are 128 x 128); 4096 keeps the
// SCALE-Sim cycle counts (rows + cols + M per fold) and the host arrays small.
constexpr double kMaxPes = 4096;
// Arrays per core: real cores have a few (TPU v2/v3: 2 MXUs per TensorCore, v4/v5p: 4); 64 x the
// largest array still gives per-core peaks (64 x 4096^2 MACs/cycle) far inside 64-bit counters.
constexpr double kMaxArrays = 64;
constexpr const char* kPortsWhy = "a chip links to at most the 15 others of a 16-chip system";
constexpr const char* kArraysWhy = "real cores have 1 to 4 tensor arrays; 64 leaves room for what-if studies";

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
      // Reported only (device properties, torch.mlu.get_device_capability / is_bf16_supported);
      // 3.0 (MLU300 class) is what every preset reported before the keys existed.
      {"compute_capability.major", ValueType::kCount, "", &HC::capability_major, between(1, 99), "3"},
      {"compute_capability.minor", ValueType::kCount, "", &HC::capability_minor, between(0, 99), "0"},

      {"topology.clusters", ValueType::kCount, "clusters", &HC::clusters, between(1, 1024)},
      {"topology.cores_per_cluster", ValueType::kCount, "cores", &HC::cores_per_cluster, between(1, 16)},
      {"clock.core_mhz", ValueType::kReal, "MHz", &HC::core_clock_mhz, between(kMinMhz, kMaxMhz, kClockWhy)},
      {"clock.mem_mhz", ValueType::kReal, "MHz", &HC::mem_clock_mhz, between(kMinMhz, kMaxMhz, kClockWhy)},

      {"core.nram_bytes", ValueType::kBytes, "bytes", &HC::nram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"core.wram_bytes", ValueType::kBytes, "bytes", &HC::wram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"cluster.sram_bytes", ValueType::kBytes, "bytes", &HC::sram_bytes, between(1, kOnChipLimit, kOnChipWhy)},
      {"cluster.sram_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::sram_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      {"cluster.sram_latency_cycles", ValueType::kCount, "cycles", &HC::sram_latency_cycles, between(0, kMaxCycles, kCyclesWhy)},

      {"dram.capacity_bytes", ValueType::kBytes, "bytes", &HC::dram_bytes, between(kMiB, kTiB, kDramWhy)},
      {"dram.channels", ValueType::kCount, "channels", &HC::dram_channels, between(1, 1024)},
      {"dram.interleave_bytes", ValueType::kBytes, "bytes", &HC::dram_interleave_bytes, power_of_two(1, 1024 * kMiB)},
      // Off by default: before the key every preset interleaved plainly (granule x on channel
      // x % channels). On: each round of granules rotated by its index's digit sum (config.h,
      // dram_channel_of), as controllers hash addresses so power-of-two strides spread.
      {"dram.channel_hash", ValueType::kBool, "", &HC::dram_channel_hash, any_value(), "false"},
      {"dram.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::dram_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      {"dram.latency_ns", ValueType::kReal, "ns", &HC::dram_latency_ns, between(0, kMaxNs, kLatencyWhy)},
      {"dram.bus_width_bits", ValueType::kCount, "bits", &HC::dram_bus_width_bits, between(1, 65536)},

      {"l2.size_bytes", ValueType::kBytes, "bytes", &HC::l2_bytes, between(0, kOnChipLimit, kOnChipWhy)},
      {"l2.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::noc_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      // The hit/miss model (memory/l2_cache.h). Off by default: before the keys every preset's L2 was
      // a bandwidth stage only. No MLU publishes its L2 geometry: 64-byte lines are the DRAM burst
      // of every preset (a miss fetches no more than the DMA's burst rounding already moves, as a
      // sectored GPU L2 fetches 32-byte sectors of its 128-byte lines), 16 ways are typical; sizes
      // must give whole sets (checked in config.cpp).
      {"l2.cache", ValueType::kBool, "", &HC::l2_cache, any_value(), "false"},
      {"l2.line_bytes", ValueType::kBytes, "bytes", &HC::l2_line_bytes, power_of_two(16, kMiB), "64"},
      {"l2.ways", ValueType::kCount, "ways", &HC::l2_ways, between(1, 64), "16"},
      // Off by default: before the key line i sat in set i mod sets. On: set digit_sum_rotation(i,
      // sets) (config.h), as caches hash address bits into the set index so that power-of-two
      // strides do not crowd a few sets.
      {"l2.set_hash", ValueType::kBool, "", &HC::l2_set_hash, any_value(), "false"},
      // 0 = a hit costs only the DMA engine's own latency; presets that enable the cache set it.
      {"l2.hit_latency_ns", ValueType::kReal, "ns", &HC::l2_hit_latency_ns, between(0, kMaxNs, kLatencyWhy), "0"},

      {"dma.io_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::io_dma_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      {"dma.move_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::move_dma_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      {"dma.memcore_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::memcore_dma_bandwidth_gbps,
       between(kMinGbps, kMaxGbps, kRateWhy)},
      {"dma.io_latency_cycles", ValueType::kCount, "cycles", &HC::io_dma_latency_cycles, between(0, kMaxCycles, kCyclesWhy)},
      {"dma.move_latency_cycles", ValueType::kCount, "cycles", &HC::move_dma_latency_cycles, between(0, kMaxCycles, kCyclesWhy)},
      // Each contiguous segment is rounded up to a burst; real bursts are 32-128 bytes.
      {"dma.burst_bytes", ValueType::kBytes, "bytes", &HC::dma_burst_bytes, power_of_two(1, kMiB)},

      {"host_link.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::host_link_bandwidth_gbps, between(kMinGbps, kMaxGbps, kRateWhy)},
      {"host_link.pageable_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::host_link_pageable_gbps,
       between(kMinGbps, kMaxGbps, kRateWhy)},
      {"host_link.latency_ns", ValueType::kReal, "ns", &HC::host_link_latency_ns, between(0, kMaxNs, kLatencyWhy)},
      // 0 GB/s is meaningful here: the chip has no MLU-Link and peer copies go through the host.
      {"mlu_link.bandwidth_gbps", ValueType::kReal, "GB/s", &HC::mlu_link_bandwidth_gbps,
       zero_or_between(kMinGbps, kMaxGbps, kRateWhy)},
      {"mlu_link.latency_ns", ValueType::kReal, "ns", &HC::mlu_link_latency_ns, between(0, kMaxNs, kLatencyWhy)},
      // How the chips are joined (config/topology.h). The defaults are what every preset meant
      // before these keys: all chips of one host, each reaching every other directly.
      {"mlu_link.topology", ValueType::kString, "", &HC::mlu_link_topology, any_value(), "full_mesh"},
      {"mlu_link.ports", ValueType::kCount, "links", &HC::mlu_link_ports, between(0, 15, kPortsWhy), "15"},
      {"mlu_link.links", ValueType::kString, "", &HC::mlu_link_links, any_value(), "none"},
      {"network.chips_per_host", ValueType::kCount, "chips", &HC::network_chips_per_host,
       between(1, 16, "the driver exposes at most 16 devices"), "16"},
      // 0 GB/s: no scale-out network (every chip is in one host).
      {"network.nic_bandwidth_gbps", ValueType::kReal, "GB/s", &HC::network_nic_bandwidth_gbps,
       zero_or_between(kMinGbps, kMaxGbps, kRateWhy), "0"},
      {"network.nic_latency_ns", ValueType::kReal, "ns", &HC::network_nic_latency_ns, between(0, kMaxNs, kLatencyWhy), "0"},

      // At least one fp32 lane (4 bytes); a power of two so 128-byte-aligned operands split evenly.
      {"vfu.width_bytes", ValueType::kBytes, "bytes", &HC::vfu_width_bytes, power_of_two(4, 65536)},
      {"vfu.startup_cycles", ValueType::kCount, "cycles", &HC::vfu_startup_cycles, between(0, 1e6)},
      {"vfu.transcendental_factor", ValueType::kCount, "x", &HC::vfu_transcendental_factor, between(1, 1024)},
      // Whether the VFU has bf16 arithmetic and conversions (MLU5xx); false, the default, is what
      // every preset meant before the key: bf16 is storage only, its compute an error.
      {"vfu.bf16", ValueType::kBool, "", &HC::vfu_bf16, any_value(), "false"},

      // 0 x 0 = dtype not supported by the TFU; rows and cols must agree (checked in config.cpp).
      {"tfu.fp32.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp32, &TfuArray::rows}, between(0, kMaxPes)},
      {"tfu.fp32.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp32, &TfuArray::cols}, between(0, kMaxPes)},
      {"tfu.fp16.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp16, &TfuArray::rows}, between(0, kMaxPes)},
      {"tfu.fp16.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_fp16, &TfuArray::cols}, between(0, kMaxPes)},
      // bf16 inputs, fp32 accumulation; 0 x 0 (the default: no bf16 before the key) = unsupported.
      {"tfu.bf16.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_bf16, &TfuArray::rows}, between(0, kMaxPes), "0"},
      {"tfu.bf16.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_bf16, &TfuArray::cols}, between(0, kMaxPes), "0"},
      {"tfu.int8.rows", ValueType::kCount, "PEs", TfuMember{&HC::tfu_int8, &TfuArray::rows}, between(0, kMaxPes)},
      {"tfu.int8.cols", ValueType::kCount, "PEs", TfuMember{&HC::tfu_int8, &TfuArray::cols}, between(0, kMaxPes)},
      // Identical arrays per core that share each intrinsic's folds (tfu_timing.h); 1 = one array,
      // the SCALE-Sim v2 reference and what every preset meant before the key existed.
      {"tfu.arrays", ValueType::kCount, "arrays", TfuAllArraysMember{&TfuArray::count},
       between(1, kMaxArrays, kArraysWhy), "1"},
      {"tfu.dataflow", ValueType::kDataflow, "", &HC::tfu_dataflow, any_value()},
      {"tfu.fold_overlap", ValueType::kBool, "", &HC::tfu_fold_overlap, any_value()},
      // false, the default: every intrinsic pays its first fold's fill and last fold's drain, what
      // every preset meant before the key (tfu_timing.h, "Back-to-back intrinsics").
      {"tfu.intrinsic_overlap", ValueType::kBool, "", &HC::tfu_intrinsic_overlap, any_value(), "false"},
      // false, the default: a conv intrinsic's depth is SCALE-Sim's im2col depth KH x KW x Cin,
      // what every preset meant before the key (tfu_timing.h).
      {"tfu.conv_depth_per_tap", ValueType::kBool, "", &HC::tfu_conv_depth_per_tap, any_value(), "false"},

      {"scalar.onchip_access_cycles", ValueType::kCount, "cycles", &HC::scalar_onchip_cycles, between(1, 1e6)},

      // 0, the default: a launch's tasks start the moment it is submitted, what every preset meant
      // before the key (device/scheduler.h).
      {"scheduler.launch_latency_ns", ValueType::kReal, "ns", &HC::launch_latency_ns, between(0, kMaxNs, kLatencyWhy),
       "0"},

      {"host.launch_overhead_ns", ValueType::kReal, "ns", &HC::launch_overhead_ns, between(0, kMaxNs, kLatencyWhy)},
      {"host.api_call_ns", ValueType::kReal, "ns", &HC::api_call_ns, between(0, kMaxNs, kLatencyWhy)},
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
