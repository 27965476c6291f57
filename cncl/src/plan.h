// A collective as a dependency graph of device operations, before it is enqueued.
//
// Every step runs on one rank's queue: a copy (local, or a peer copy pushed by the rank that owns
// the source), a reduction kernel (dst op= src on the owner's cores) or a mark (no work; a point
// in a queue others can wait for). Steps are numbered in generation order, and each queue runs its
// steps in that order, so a dependency on an earlier step of the same queue is implicit; the
// executor (executor.h) turns dependencies across queues into notifier waits.
//
// Invariants the builder keeps for every collective:
//   - a rank's memory is only read by steps on its own queue (senders push);
//   - a copy that writes another rank's memory waits for that rank's entry mark (its queue has
//     reached the collective, so earlier work there is not disturbed), and that rank's exit mark
//     waits for the copy (work queued after the collective sees the data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::cncl {

struct Step {
  enum class Kind { kMark, kCopy, kReduce };
  Kind kind = Kind::kMark;
  int rank = 0;      // whose queue runs it (and, for copies, whose memory `src` is)
  int dst_rank = 0;  // copies: whose memory `dst` is
  std::uint64_t dst = 0, src = 0;
  std::size_t bytes = 0;  // copies and reductions; 0 issues nothing (the step is then a mark)
  std::vector<std::size_t> deps;
};

class Plan {
 public:
  Plan(int ranks, std::size_t elem_bytes);

  int ranks() const { return ranks_; }
  std::size_t elem_bytes() const { return elem_; }
  const std::vector<Step>& steps() const { return steps_; }

  // Steps return their index. `deps` are extra dependencies (any queue).
  std::size_t copy(int rank, int dst_rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                   std::vector<std::size_t> deps = {});
  std::size_t reduce(int rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                     std::vector<std::size_t> deps = {});
  // The last step generated on `rank`'s queue (its entry mark if none yet).
  std::size_t last_on(int rank) const { return last_[static_cast<std::size_t>(rank)]; }
  // Closes the plan: one exit mark per rank waiting for every copy into it from another queue.
  void finish();

  sim::DType reduce_type = sim::DType::kFloat32;
  sim::VecBinaryOp reduce_op = sim::VecBinaryOp::kAdd;
  const char* algorithm = "";

 private:
  std::size_t add(Step s);
  int ranks_;
  std::size_t elem_;
  std::vector<Step> steps_;
  std::vector<std::size_t> entry_, last_;
  std::vector<std::vector<std::size_t>> incoming_;  // per rank: copies from other queues into it
};

}  // namespace mlusim::cncl
