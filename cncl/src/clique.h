// A clique: the ranks of one set of communicators, their devices, the calls waiting to be matched
// and the per-rank resources (scratch, notifiers) their collectives use. All access under lock().
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <cnrt.h>

#include "algorithms.h"
#include "cncl.h"
#include "executor.h"

namespace mlusim::cncl {

std::mutex& lock();  // the library lock: every entry point holds it

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::size_t count = 0;
  cnclDataType_t dtype = cnclFloat32;
  cnclReduceOp_t op = cnclSum;
  int root = 0;
  RankBuffers buffers;
  cnrtQueue_t queue = nullptr;
};

struct P2PCall {
  std::uint64_t buffer = 0;
  std::size_t count = 0;
  cnclDataType_t dtype = cnclFloat32;
  cnrtQueue_t queue = nullptr;
};

class Clique {
 public:
  // Creates the per-rank send queues; throws std::runtime_error naming the cnrt error if that fails.
  Clique(std::vector<int> devices, std::uint32_t compute_cores, LinkModel link);
  ~Clique();
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;

  int ranks() const { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_[static_cast<std::size_t>(rank)]; }

  // Queues a rank's call; submits every collective whose calls are now complete on all ranks.
  cnclResult_t add_collective(int rank, const CollectiveCall& call);
  cnclResult_t add_send(int from, int to, const P2PCall& call);
  cnclResult_t add_recv(int to, int from, const P2PCall& call);
  // A rank's communicator is gone: its pending calls, and collectives it can no longer complete, are dropped.
  void drop_rank(int rank);

 private:
  cnclResult_t submit_ready();
  cnclResult_t match_p2p(int from, int to);
  cnclResult_t ensure_scratch(const std::vector<std::size_t>& bytes);
  RankQueues queues_for(const std::vector<cnrtQueue_t>& queues);

  std::vector<int> devices_;
  std::uint32_t compute_cores_;
  LinkModel link_;
  std::vector<std::deque<CollectiveCall>> pending_;
  std::vector<bool> alive_;
  std::map<std::pair<int, int>, std::deque<P2PCall>> sends_, recvs_;  // key (from, to)
  std::vector<std::uint64_t> scratch_;
  std::vector<std::size_t> scratch_bytes_;
  std::vector<std::unique_ptr<NotifierPool>> pools_;
  std::vector<cnrtQueue_t> send_queues_;  // per rank: lane 1 of every plan (plan.h)
};

}  // namespace mlusim::cncl

// The handle behind cnclComm_t.
struct cnclComm {
  std::shared_ptr<mlusim::cncl::Clique> clique;
  int rank = 0;
};
