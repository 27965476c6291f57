// Hardware configuration of one simulated chip, as read from a YAML preset in configs/.
//
// Every parameter is declared once, here, with its unit. Hardware figures have no defaults in C++:
// they come only from the YAML files (a preset may `extends:` another and override keys), so a
// figure and its source comment live in exactly one place. The only defaults are those of keys
// added after the presets existed, whose default is the behaviour before the key (schema.cpp).
// A loaded config is fully validated: unknown keys, missing keys, wrong types and impossible
// values raise ConfigError naming file, key and reason.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlusim/sim/dtype.h"

namespace mlusim::sim {

// A systolic array shape for one dtype; rows == cols == 0 means the TFU does not support it.
// `count` identical arrays of this shape work on one intrinsic together (`tfu.arrays`, one key for
// all dtypes; the timing formula is in sim/src/compute/tfu_timing.h).
struct TfuArray {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::uint32_t count = 1;  // `tfu.arrays`: arrays per core (TPU: MXUs per TensorCore)
  bool supported() const { return rows > 0 && cols > 0; }
  // Peak multiply-accumulates per core-clock cycle of one core: rows x cols x count (0 if unsupported).
  std::uint64_t macs_per_cycle() const { return std::uint64_t{rows} * cols * count; }
};

enum class Dataflow : std::uint8_t { kOutputStationary, kWeightStationary };

struct HardwareConfig {
  std::string name;                 // `name`: preset name shown in reports
  std::string source_file;          // file it was loaded from (not a YAML key)
  std::uint32_t device_count;       // `devices`: identical chips in the system
  // `compute_capability.major` / `.minor`: what cnrtGetDeviceProperties and torch.mlu report
  // (MLU300 class 3.x, MLU500 class 5.x); torch.mlu.is_bf16_supported() is major >= 5, as
  // Cambricon's torch_mlu decides it. Default 3.0, what every preset reported before the keys.
  std::uint32_t capability_major;
  std::uint32_t capability_minor;

  // --- topology and clocks ---
  std::uint32_t clusters;           // `topology.clusters`
  std::uint32_t cores_per_cluster;  // `topology.cores_per_cluster` (MLU: 4 compute cores + 1 memory core)
  double core_clock_mhz;            // `clock.core_mhz`: IPU clock; every engine cycle is one of these
  double mem_clock_mhz;             // `clock.mem_mhz`: DRAM clock, reported in device properties only

  // --- on-chip memories (bytes) ---
  std::uint64_t nram_bytes;         // `core.nram_bytes`: usable NRAM per compute core
  std::uint64_t wram_bytes;         // `core.wram_bytes`: WRAM per compute core
  std::uint64_t sram_bytes;         // `cluster.sram_bytes`: usable shared SRAM per cluster
  double sram_bandwidth_gbps;       // `cluster.sram_bandwidth_gbps`: one cluster's SRAM port, GB/s
  std::uint32_t sram_latency_cycles;  // `cluster.sram_latency_cycles`

  // --- DRAM (GDRAM) ---
  std::uint64_t dram_bytes;         // `dram.capacity_bytes`
  std::uint32_t dram_channels;      // `dram.channels`: address-interleaved channels
  std::uint64_t dram_interleave_bytes;  // `dram.interleave_bytes`: consecutive bytes per channel
  bool dram_channel_hash;           // `dram.channel_hash`: rounds of granules rotated (dram_channel_of)
  double dram_bandwidth_gbps;       // `dram.bandwidth_gbps`: all channels together, GB/s
  double dram_latency_ns;           // `dram.latency_ns`: first-byte latency of a DRAM access
  std::uint32_t dram_bus_width_bits;  // `dram.bus_width_bits`: reported in device properties

  // --- L2 / NoC: one shared bandwidth stage between clusters and DRAM, and (l2.cache) a
  // set-associative LRU tag store that serves kernels' repeated GDRAM reads (memory/l2_cache.h) ---
  std::uint64_t l2_bytes;           // `l2.size_bytes`: capacity (reported in device properties)
  double noc_bandwidth_gbps;        // `l2.bandwidth_gbps`: aggregate NoC/L2 bandwidth, GB/s
  bool l2_cache;                    // `l2.cache`: model hits and misses (false: every access goes to DRAM)
  std::uint32_t l2_line_bytes;      // `l2.line_bytes`: allocation unit
  std::uint32_t l2_ways;            // `l2.ways`: associativity
  bool l2_set_hash;                 // `l2.set_hash`: line i's set rotated by a digit sum (l2_cache.h)
  double l2_hit_latency_ns;         // `l2.hit_latency_ns`: first-byte latency of a DMA that hits entirely

  // --- DMA engines ---
  double io_dma_bandwidth_gbps;     // `dma.io_bandwidth_gbps`: one compute core's IO-DMA (off<->on chip)
  double move_dma_bandwidth_gbps;   // `dma.move_bandwidth_gbps`: one core's Move-DMA (on<->on chip)
  double memcore_dma_bandwidth_gbps;  // `dma.memcore_bandwidth_gbps`: a memory core's DMA (GDRAM<->SRAM)
  std::uint32_t io_dma_latency_cycles;    // `dma.io_latency_cycles`: issue-to-first-byte, IO-DMA
  std::uint32_t move_dma_latency_cycles;  // `dma.move_latency_cycles`: issue-to-first-byte, Move-DMA
  std::uint32_t dma_burst_bytes;    // `dma.burst_bytes`: each contiguous segment is rounded up to this

  // --- host link and chip-to-chip link ---
  double host_link_bandwidth_gbps;  // `host_link.bandwidth_gbps`: pinned host memory, per direction
  double host_link_pageable_gbps;   // `host_link.pageable_bandwidth_gbps`: pageable host memory
  double host_link_latency_ns;      // `host_link.latency_ns`
  double mlu_link_bandwidth_gbps;   // `mlu_link.bandwidth_gbps`: 0 = no MLU-Link (peer copies via host)
  double mlu_link_latency_ns;       // `mlu_link.latency_ns`: per hop
  std::string mlu_link_topology;    // `mlu_link.topology`: none | full_mesh | ring | explicit (config/topology.h)
  std::uint32_t mlu_link_ports;     // `mlu_link.ports`: MLU-Link links a chip can have
  std::string mlu_link_links;       // `mlu_link.links`: the pairs of an explicit topology ("0-1,1-2"), or none
  std::uint32_t network_chips_per_host;  // `network.chips_per_host`: consecutive chips per host
  double network_nic_bandwidth_gbps;     // `network.nic_bandwidth_gbps`: each chip's scale-out port, per direction
  double network_nic_latency_ns;         // `network.nic_latency_ns`: chip to chip across hosts

  // --- VFU: a SIMD unit `vfu.width_bytes` wide ---
  std::uint32_t vfu_width_bytes;    // `vfu.width_bytes`: bytes processed per cycle (fp32 lanes = width/4)
  std::uint32_t vfu_startup_cycles;   // `vfu.startup_cycles`: pipeline fill per intrinsic
  std::uint32_t vfu_transcendental_factor;  // `vfu.transcendental_factor`: cycles per vector for exp/log/...
  bool vfu_bf16;                    // `vfu.bf16`: the VFU computes on and converts bf16 (width/2 lanes,
                                    // as fp16); false = bf16 is storage and byte copies only

  // --- TFU: systolic array per dtype (`tfu.arrays` sets the count of all four) ---
  TfuArray tfu_fp32;                // `tfu.fp32.rows`, `tfu.fp32.cols`, `tfu.arrays`
  TfuArray tfu_fp16;                // `tfu.fp16.rows`, `tfu.fp16.cols`, `tfu.arrays`
  TfuArray tfu_bf16;                // `tfu.bf16.rows`, `tfu.bf16.cols`, `tfu.arrays` (default 0 x 0)
  TfuArray tfu_int8;                // `tfu.int8.rows`, `tfu.int8.cols`, `tfu.arrays`
  Dataflow tfu_dataflow;            // `tfu.dataflow`: output_stationary | weight_stationary
  bool tfu_fold_overlap;            // `tfu.fold_overlap`: pipeline consecutive folds
  bool tfu_intrinsic_overlap;       // `tfu.intrinsic_overlap`: pipeline back-to-back intrinsics too
  bool tfu_conv_depth_per_tap;      // `tfu.conv_depth_per_tap`: a weight-stationary array folds a conv
                                    // intrinsic's depth tap by tap (compute/tfu_timing.h)

  // --- scalar unit ---
  std::uint32_t scalar_onchip_cycles;  // `scalar.onchip_access_cycles`: one NRAM/WRAM/SRAM load/store

  // --- device front end ---
  double launch_latency_ns;         // `scheduler.launch_latency_ns`: a kernel's submission to its first
                                    // tasks starting (device/scheduler.h)

  // --- host-side costs charged by the driver ---
  double launch_overhead_ns;        // `host.launch_overhead_ns`: host time of one kernel launch call
  double api_call_ns;               // `host.api_call_ns`: host time of any other driver call

  const TfuArray& tfu_array(DType t) const;  // {0,0} for dtypes the TFU never supports
  // False only for bf16 on a chip without `vfu.bf16`: its arithmetic and conversions are errors
  // there (the intrinsic faults naming op and config), as on MLU3xx, which have no bf16 units.
  bool computes(DType t) const { return t != DType::kBFloat16 || vfu_bf16; }
  std::uint32_t total_cores() const { return clusters * cores_per_cluster; }
};

// Raised for every invalid configuration. what() reads "<file>: <key>: <reason>", or
// "<file>: <reason>" for errors that concern no single key (YAML syntax, missing file). `file` is
// "override" for a bad override.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string key, const std::string& reason);
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }

 private:
  std::string file_;
  std::string key_;
};

// One `--set key=value` style override, applied after all `extends:` merging.
using ConfigOverride = std::pair<std::string, std::string>;

// Splits "key=value" at the first '='. Throws ConfigError when there is no '=' or no key.
ConfigOverride parse_config_override(const std::string& text);

// Directory holding the presets: $MLUSIM_CONFIG_DIR if set, else the installed/ source configs/.
std::filesystem::path config_dir();

// Resolves a preset name ("tiny", "mlu370-x4") or a path to a YAML file.
std::filesystem::path resolve_config_path(const std::string& name_or_path);

// Loads, merges `extends:` chains (relative to the including file; cycles rejected), applies
// overrides, and validates. Throws ConfigError.
HardwareConfig load_config(const std::string& name_or_path, const std::vector<ConfigOverride>& overrides = {});

// Parses a YAML document given as text (tests); `origin` names it in errors. `extends:` paths are
// resolved against config_dir().
HardwareConfig parse_config(const std::string& yaml_text, const std::string& origin,
                            const std::vector<ConfigOverride>& overrides = {});

// Name of the default preset ("mlu370-x4").
const char* default_config_name();

// x's position in rounds of n: (x % n + digitsum(x / n)) % n, digitsum(q) = the sum of q's digits
// in base n. Each round of n consecutive x still covers every position once (a rotation), but
// strides that are a multiple of n (or of a power of n) no longer all land on one position: the
// simple stand-in, valid for any n, for the XOR hashes memory controllers and caches apply to
// address bits so that power-of-two strides spread (DRAM channels, L2 sets).
inline std::uint64_t digit_sum_rotation(std::uint64_t x, std::uint64_t n) {
  if (n <= 1) return 0;
  std::uint64_t rot = 0;
  for (std::uint64_t q = x / n; q > 0; q /= n) rot += q % n;
  return (x % n + rot) % n;
}

// The DRAM channel that holds byte `offset` of device memory. Addresses are cut into granules of
// dram.interleave_bytes; granule x sits in round q = x / channels at position x % channels.
//   plain interleave (dram.channel_hash false): channel = x % channels
//   hashed (true):                             channel = digit_sum_rotation(x, channels)
// Hashed, strides that are a multiple of a round (a matrix whose rows are 4 KiB apart on 16 x
// 256 B channels) no longer start every row on the same channel (partition camping).
inline std::uint32_t dram_channel_of(const HardwareConfig& c, std::uint64_t offset) {
  const std::uint64_t n = c.dram_channels, x = offset / c.dram_interleave_bytes;
  return static_cast<std::uint32_t>(c.dram_channel_hash ? digit_sum_rotation(x, n) : x % n);
}

}  // namespace mlusim::sim
