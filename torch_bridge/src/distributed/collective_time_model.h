// The simulated time of a "cncl" collective across rank processes (ProcessGroupCNCL), and the
// nccl-tests bus-bandwidth factors its report uses. The only copy of the formulas: torch_mlu's
// distributed.py exposes these through torch_mlu._C_cncl. No torch headers.
//
// Each rank process simulates its own chip; rank r stands for chip r of the config's system (its
// host: r / network.chips_per_host). The model follows the schedules of the cncl C library
// (cncl/src/algorithms.h). With n ranks, S bytes, a = link latency + DRAM latency (ns), B = link
// bandwidth and D = DRAM bandwidth (GB/s = bytes/ns), the link being the slowest kind a ring of
// the ranks crosses: the network (network.nic_*) when the ranks span hosts, else MLU-Link
// (mlu_link.*) when every chip of the host is linked to its neighbours (full_mesh or ring), else
// the host link both ways (half its bandwidth, twice its latency: an explicit or absent topology
// leaves some neighbours unlinked):
//
//   all_reduce       ring: 2(n-1) a + (n-1)(S/n) max(1/B, 3/D) + (n-1)(S/n)/B
//                    tree: 2 ceil(log2 n) (a + S max(1/B, 3/D)); the smaller by the link-only
//                    estimates (ring 2(n-1)(a + S/n/B), tree 2 ceil(log2 n)(a + S/B)), as the C
//                    library chooses
//   reduce_scatter   (n-1) (a + (S_in/n) max(1/B, 3/D))
//   all_gather       (n-1) (a + (S_out/n) / B)
//   broadcast        (2n-2) (a + (S/n) / B)              (chain of n slices)
//   reduce           the reduce-scatter's time + the all-gather's (a bound on the chain)
//   all_to_all       a + (n-1) (S/n) / B                 (every rank's port sends n-1 blocks)
//   send_recv        a + S / B
//   barrier          all_reduce of 4 bytes (a one-float all-reduce)
//
// A reduce-scatter step's reduction costs a chip 3 bytes of DRAM traffic per byte received (reads
// two, writes one); copies over the links are not charged to DRAM (as in the simulator's
// interconnect, sim/src/interconnect/interconnect.h). One rank takes no time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mlusim/torch/api.h"

namespace mlusim::bridge::cncl {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll, kSendRecv };

// "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all", "send_recv":
// the names of the collectives log and of comm_report.
const char* collective_name(Collective op);
// The collective of a name above; std::invalid_argument ("cncl: no time model for 'gather'").
Collective collective_from_name(std::string_view name);
std::vector<std::string> collective_names();

// The model's link for `ranks` ranks (chips 0..ranks-1): a (ns), B and D (GB/s).
struct ModelLink {
  double latency_ns = 0;
  double link_gbps = 0;
  double dram_gbps = 0;
};
ModelLink model_link(const InterconnectFigures& fig, int ranks);

// Simulated ns of `op` over `ranks` ranks, `bytes` as the formulas define S for it; 0 for one rank.
double model_time_ns(Collective op, double bytes, int ranks, const InterconnectFigures& fig);

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor, what each rank's link carries per byte
// of the operation: 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
// all_to_all, 1 for broadcast, reduce and send_recv.
double bus_factor(Collective op, int ranks);

}  // namespace mlusim::bridge::cncl
