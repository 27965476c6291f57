#include "core/dma_path.h"

#include <array>
#include <map>

#include "cluster/cluster.h"
#include "device/device_impl.h"

namespace mlusim::sim {

DirSpaces dir_spaces(dev::Dir d) {
  using dev::Dir;
  switch (d) {
    case Dir::kGdram2Nram: return {Space::kNram, Space::kGdram};
    case Dir::kNram2Gdram: return {Space::kGdram, Space::kNram};
    case Dir::kGdram2Wram: return {Space::kWram, Space::kGdram};
    case Dir::kWram2Gdram: return {Space::kGdram, Space::kWram};
    case Dir::kGdram2Sram: return {Space::kSram, Space::kGdram};
    case Dir::kSram2Gdram: return {Space::kGdram, Space::kSram};
    case Dir::kSram2Nram: return {Space::kNram, Space::kSram};
    case Dir::kNram2Sram: return {Space::kSram, Space::kNram};
    case Dir::kSram2Wram: return {Space::kWram, Space::kSram};
    case Dir::kWram2Sram: return {Space::kSram, Space::kWram};
    case Dir::kNram2Wram: return {Space::kWram, Space::kNram};
    case Dir::kWram2Nram: return {Space::kNram, Space::kWram};
    case Dir::kNram2Nram: return {Space::kNram, Space::kNram};
    case Dir::kGdram2Gdram: return {Space::kGdram, Space::kGdram};
    case Dir::kSram2Sram: return {Space::kSram, Space::kSram};
  }
  return {Space::kGdram, Space::kGdram};
}

DmaPlan plan_dma(DeviceImpl& device, const Cluster& cluster, bool memory_core, ResourceId io_dma, ResourceId move_dma,
                 DirSpaces spaces, const dev::CopyShape& shape, const GdramSegments& gdram_reads,
                 const GdramSegments& gdram_writes) {
  const HardwareConfig& cfg = device.config;
  const int gdram_sides = (spaces.src == Space::kGdram) + (spaces.dst == Space::kGdram);
  const int sram_sides = (spaces.src == Space::kSram) + (spaces.dst == Space::kSram);

  DmaPlan plan;
  const std::uint64_t burst = cfg.dma_burst_bytes;
  const std::uint64_t seg_effective = (shape.seg_bytes + burst - 1) / burst * burst;
  plan.effective_bytes = static_cast<double>(seg_effective * shape.n1 * shape.n2);

  std::uint32_t latency_cycles = 0;
  if (memory_core) {
    plan.engine = Engine::kMemcoreDma;
    plan.uses.push_back({io_dma, 1.0});
    latency_cycles = cfg.io_dma_latency_cycles;
  } else if (gdram_sides > 0) {
    plan.engine = Engine::kIoDma;
    plan.uses.push_back({io_dma, 1.0});
    latency_cycles = cfg.io_dma_latency_cycles;
  } else {
    plan.engine = Engine::kMoveDma;
    plan.uses.push_back({move_dma, 1.0});
    latency_cycles = cfg.move_dma_latency_cycles;
  }
  double latency_ps = static_cast<double>(latency_cycles) * period_ps(cfg.core_clock_mhz);
  if (gdram_sides > 0) {
    plan.uses.push_back({device.noc, static_cast<double>(gdram_sides)});
    // DRAM channels: weight = DRAM bytes on the channel / payload bytes (both sides summed).
    const double payload = static_cast<double>(shape.total_bytes());
    std::vector<FlowUse> channel_uses;
    for (const auto& [addr, bytes] : gdram_reads) {
      const L2Cache::ReadResult r = device.l2.read(addr, bytes, [&](std::uint64_t miss_addr, std::uint64_t miss_bytes) {
        device.add_dram_uses(miss_addr, miss_bytes, payload, channel_uses);
      });
      plan.l2_hit_bytes += r.hit_bytes;
      plan.l2_overfetch_bytes += r.fill_bytes - (bytes - r.hit_bytes);
    }
    for (const auto& [addr, bytes] : gdram_writes) {
      device.l2.write(addr, bytes);
      device.add_dram_uses(addr, bytes, payload, channel_uses);
    }
    std::map<std::uint32_t, double> merged;  // ordered by resource id: deterministic
    for (const FlowUse& u : channel_uses) merged[u.resource] += u.weight;
    for (const auto& [res, w] : merged) plan.uses.push_back({res, w});
    latency_ps += (channel_uses.empty() ? cfg.l2_hit_latency_ns : cfg.dram_latency_ns) * 1000.0;
  }
  if (sram_sides > 0) {
    latency_ps += static_cast<double>(cfg.sram_latency_cycles) * period_ps(cfg.core_clock_mhz);
    plan.uses.push_back({cluster.sram_port(), static_cast<double>(sram_sides)});
  }
  plan.latency_ps = ceil_ps(latency_ps, "DMA latency");
  return plan;
}

}  // namespace mlusim::sim
