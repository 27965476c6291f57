// Statistics of one simulated device: engine busy time and intrinsic counts per core, bytes moved
// per memory level, and one record per kernel launch. All times are picoseconds relative to the
// device's epoch (the simulated time at which the device was built or its stats were reset).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mlusim/sim/dtype.h"
#include "mlusim/sim/launch.h"
#include "mlusim/sim/sim_time.h"

namespace mlusim::sim {

// The pipelines of a core. A memory core has only kMemcoreDma (and kScalar).
enum class Engine : std::uint8_t { kScalar, kVfu, kTfu, kIoDma, kMoveDma, kMemcoreDma };
constexpr std::size_t kEngineCount = 6;
std::string_view engine_name(Engine e);  // "Scalar", "VFU", "TFU", "IO-DMA", "Move-DMA", "MemCore-DMA"

enum class MemLevel : std::uint8_t { kHost, kGdram, kSram, kNram, kWram };
constexpr std::size_t kMemLevelCount = 5;
std::string_view mem_level_name(MemLevel l);

struct EngineCounters {
  Picos busy_ps = 0;              // time with at least one operation in progress on the engine
  std::uint64_t intrinsics = 0;   // operations issued
  std::uint64_t cycles = 0;       // compute engines: sum of the cycle formula's results
  EngineCounters& operator+=(const EngineCounters& o);
};

struct TrafficCounters {
  std::array<std::uint64_t, kMemLevelCount> read_bytes{};
  std::array<std::uint64_t, kMemLevelCount> write_bytes{};
  // The L2 (l2.cache; memory/l2_cache.h): of read_bytes[kGdram], the bytes it served (they did
  // not cross the DRAM channels), and the bytes it fetched from DRAM beyond those read (a missing
  // line comes whole: the rest of partially read lines). DRAM traffic = GDRAM reads + writes -
  // l2_hit_bytes + l2_overfetch_bytes (dram_bytes()).
  std::uint64_t l2_hit_bytes = 0;
  std::uint64_t l2_overfetch_bytes = 0;
  std::uint64_t dram_bytes() const {
    return read_bytes[static_cast<std::size_t>(MemLevel::kGdram)] + write_bytes[static_cast<std::size_t>(MemLevel::kGdram)] -
           l2_hit_bytes + l2_overfetch_bytes;
  }
  void add(MemLevel from, MemLevel to, std::uint64_t bytes) {
    read_bytes[static_cast<std::size_t>(from)] += bytes;
    write_bytes[static_cast<std::size_t>(to)] += bytes;
  }
  TrafficCounters& operator+=(const TrafficCounters& o);
};

using EngineSet = std::array<EngineCounters, kEngineCount>;

struct KernelRecord {
  std::uint64_t id = 0;       // launch sequence number on this device, from 0
  std::string name;
  std::string tag;            // KernelLaunch::tag
  Dim3 dim;
  FunctionType type = FunctionType::kBlock;
  Picos submit_ps = 0;        // handed to the device
  Picos start_ps = 0;         // first task started (the epoch's start if that was earlier)
  Picos end_ps = 0;           // last task (and its outstanding copies) finished
  std::uint64_t cycles = 0;   // first task start to end in core clock cycles (also across a reset)
  bool faulted = false;
  std::string fault;          // the fault message, empty when it ran clean
  EngineSet engines{};        // summed over all cores that ran its tasks
  TrafficCounters traffic;
  std::uint64_t macs = 0;     // TFU multiply-accumulates performed
  std::array<std::uint64_t, kDTypeCount> macs_by_dtype{};  // TFU and VFU (vec_matmul) MACs by input DType
  std::uint64_t vector_elements = 0;  // VFU elements processed
};

class DeviceStats {
 public:
  DeviceStats() = default;
  void reset(std::uint32_t cores_incl_memcores);
  // Per core (compute cores first, cluster-major, then memory cores), per engine.
  std::vector<EngineSet> core_engines;
  TrafficCounters traffic;
  std::vector<KernelRecord> kernels;
  Picos epoch_ps = 0;          // absolute SystemC time that device time 0 corresponds to

  EngineSet engine_totals() const;
  void to_json(nlohmann::json& out) const;
};

}  // namespace mlusim::sim
