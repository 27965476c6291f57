// A collective as a dependency graph of device operations, before it is enqueued.
//
// Every step runs on one of a rank's two lanes: lane 0 is the queue the caller passed (reduction
// kernels, local copies, marks), lane 1 the rank's send queue (peer copies, pushed by the rank
// that owns the source), so a rank sends while it reduces, as the real library's kernel overlaps
// both. A mark does no work; it is a point in a lane others can wait for. Steps are numbered in
// generation order and each lane runs its steps in that order, so a dependency on an earlier step
// of the same lane is implicit; everything else (the other lane of the same rank included) is an
// explicit dependency, which the executor (executor.h) turns into a notifier wait.
//
// Invariants the builder keeps for every collective:
//   - a rank's memory is only read by steps of that rank (senders push);
//   - the first step of a rank's send lane waits for its entry mark (lane 0 has reached the
//     collective, so the data the caller queued before it is there);
//   - a copy that writes another rank's memory waits for that rank's entry mark (earlier work
//     there is not disturbed), and that rank's exit mark (lane 0) waits for the copy, and for the
//     rank's own send lane, so work queued after the collective sees the data and may reuse the
//     buffers.
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
  int rank = 0;      // whose lane runs it (and, for copies, whose memory `src` is)
  int lane = 0;      // 0: the caller's queue; 1: the rank's send queue (peer copies)
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

  // Steps return their index. `deps` are extra dependencies (any lane). A copy to another rank runs
  // on the sender's lane 1, every other step on lane 0.
  std::size_t copy(int rank, int dst_rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                   std::vector<std::size_t> deps = {});
  std::size_t reduce(int rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                     std::vector<std::size_t> deps = {});
  // The last step generated on `rank`'s lane 0 (its entry mark if none yet).
  std::size_t last_on(int rank) const { return last_[static_cast<std::size_t>(rank)]; }
  // The last step on `rank`'s send lane, or its entry mark if it has none.
  std::size_t last_sent(int rank) const { return last_send_[static_cast<std::size_t>(rank)]; }
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
  std::vector<std::size_t> entry_, last_, last_send_;
  std::vector<std::vector<std::size_t>> incoming_;  // per rank: copies from other queues into it
};

}  // namespace mlusim::cncl
