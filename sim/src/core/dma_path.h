// What a copy costs: which engine issues it, which shared resources it crosses (with weights),
// its latency and its effective byte count. The fabric turns this into time.
//
// Cost formula (uncontended): time = latency + effective_bytes / min over its path of
// (capacity / weight), where
//   latency         = engine latency (IO-DMA: dma.io_latency_cycles, Move-DMA and memory-core DMA:
//                     dma.move_latency_cycles / dma.io_latency_cycles) in core cycles
//                     + if GDRAM is on the path: dram.latency_ns when any byte goes to DRAM,
//                       l2.hit_latency_ns when the L2 serves every byte (a read that hits entirely)
//                     + cluster.sram_latency_cycles if SRAM is
//   effective_bytes = segments x roundup(seg_bytes, dma.burst_bytes)   (DMA moves whole bursts)
//   path            = the issuing engine (weight 1)
//                     + each DRAM channel, weighted by the share of DRAM bytes that fall in it
//                       (addresses interleave every dram.interleave_bytes, hashed with
//                       dram.channel_hash: config.h dram_channel_of; GDRAM->GDRAM counts
//                       both the read and the write side); DRAM bytes = GDRAM bytes written +
//                       the whole L2 lines the read misses (the bytes read, without l2.cache)
//                     + the NoC/L2 stage (weight 1 per GDRAM side: hits cross it too)
//                     + the cluster's SRAM port (weight 1 per SRAM side).
// The L2 lookup (memory/l2_cache.h) happens when the copy is planned, i.e. issued: reads allocate
// their lines, writes allocate theirs (write-through).
// Contended: the fabric shares every resource max-min fairly (fabric/bandwidth_fabric.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "fabric/bandwidth_fabric.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/stats.h"

namespace mlusim::sim {

using fabric::FlowUse;
using fabric::ResourceId;

class DeviceImpl;
class Cluster;

struct DirSpaces {
  Space dst;
  Space src;
};
DirSpaces dir_spaces(dev::Dir d);

struct DmaPlan {
  Engine engine = Engine::kIoDma;
  double effective_bytes = 0;
  Picos latency_ps = 0;
  std::vector<FlowUse> uses;
  std::uint64_t l2_hit_bytes = 0;        // payload bytes of GDRAM reads the L2 served
  std::uint64_t l2_overfetch_bytes = 0;  // bytes of missing lines fetched beyond those read
};

// (address, bytes) of GDRAM segments.
using GdramSegments = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// gdram_reads / gdram_writes: every GDRAM segment the copy reads / writes. Updates the L2's state.
DmaPlan plan_dma(DeviceImpl& device, const Cluster& cluster, bool memory_core, ResourceId io_dma, ResourceId move_dma,
                 DirSpaces spaces, const dev::CopyShape& shape, const GdramSegments& gdram_reads,
                 const GdramSegments& gdram_writes);

}  // namespace mlusim::sim
