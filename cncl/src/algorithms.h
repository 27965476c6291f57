// The schedules of the collectives as plans (plan.h), and the scratch each needs.
//
// Chunks: a buffer of `count` elements split n ways is chunk k = [k*count/n, (k+1)*count/n).
// Ring primitives (ranks r -> r+1 mod n), on a work buffer W of n chunks per rank:
//   reduce-scatter: step s = 0..n-2: rank r sends W_r chunk (r-s-1) to rank r+1's scratch slot
//     s%2, and r+1 reduces it into its W chunk (r-s-1). Rank r sends at step s the chunk it
//     reduced at step s-1, so after n-1 steps W_r chunk r holds the reduction over all ranks.
//     A slot is reused two steps later: the copy waits for the receiver's reduction of step s-2.
//   all-gather: step s = 0..n-2: rank r sends W_r chunk (r-s) into W_{r+1} chunk (r-s) (the chunk
//     it received at step s-1); the first step waits for the receiver's reduce-scatter to end, so
//     no chunk it still sends is overwritten.
// Tree (binary: parent (r-1)/2): reduce up (children's whole buffers into the parent's scratch
// slot (child-1)%2, reduced in place), then copy the result down level by level.
// Chains (broadcast, reduce): ranks ordered from the root, the buffer cut into n slices so the
// n-1 hops pipeline (hop h of slice p overlaps hop h+1 of slice p-1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cncl.h"
#include "plan.h"

namespace mlusim::cncl {

enum class CollectiveKind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll };
const char* collective_name(CollectiveKind k);  // "cnclAllReduce", ...
bool is_reduction(CollectiveKind k);

struct RankBuffers {
  std::uint64_t send = 0, recv = 0;
};

struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::size_t count = 0;  // as the call's count argument (sendcount / recvcount / per-peer count)
  cnclDataType_t dtype = cnclFloat32;
  cnclReduceOp_t op = cnclSum;
  int root = 0;
  std::vector<RankBuffers> buffers;  // per rank
};

// The link figures the AllReduce algorithm choice uses (cncl.h): per hop latency (ns) and
// bandwidth (GB/s) of one peer copy.
struct LinkModel {
  double latency_ns = 0, bandwidth_gbps = 1;
};
// True when the ring is estimated faster: 2(n-1)(a + S/(nB)) < 2 ceil(log2 n)(a + S/B).
bool ring_faster(int ranks, double bytes, const LinkModel& link);

// Scratch bytes each rank needs for `c` (the algorithm choice included).
std::size_t scratch_bytes(const Collective& c, int ranks, const LinkModel& link);

// The plan of `c`; scratch[r] is rank r's scratch (at least scratch_bytes). Finished (exit marks).
Plan build_plan(const Collective& c, const std::vector<std::uint64_t>& scratch, const LinkModel& link);

// A matched send/recv pair: sender `from` pushes `bytes` into the receiver `to`.
Plan build_send_recv(int ranks, int from, int to, std::uint64_t src, std::uint64_t dst, std::size_t bytes);

}  // namespace mlusim::cncl
