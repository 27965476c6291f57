// The library handle: bound to one device and one cnrt queue; every op is enqueued on that queue.
// Also keeps the op log (theoretical MACs and bytes of each op, for efficiency reports) and the
// device random generator state used by dropout.
//
// Thread safety: a handle may be used by one host thread at a time (as cuDNN/CNNL handles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cnrt.h>

#include "mlusim/mlu/status.h"

namespace mlusim::mlu {

// One op call: what it must do at least (the roofline inputs), and how many kernels it launched.
struct OpRecord {
  std::string name;          // "matmul", "conv2d_forward", "add", ...
  std::uint64_t macs = 0;    // multiply-accumulates the op needs
  std::uint64_t bytes = 0;   // DRAM bytes it must move at least: inputs read once + outputs written once
  std::uint32_t kernels = 0; // kernel launches it enqueued
};

class Handle {
 public:
  // The current device of the calling thread (cnrtGetDevice) and its NULL (default) queue.
  static Status create(Handle** out);
  static Status destroy(Handle* handle);

  Status set_queue(cnrtQueue_t queue);
  cnrtQueue_t queue() const { return queue_; }
  int device() const { return device_; }

  // Device properties used for tiling and launch shapes.
  std::uint64_t nram_bytes() const { return nram_bytes_; }
  std::uint64_t wram_bytes() const { return wram_bytes_; }
  std::uint64_t sram_bytes() const { return sram_bytes_; }
  std::uint32_t clusters() const { return clusters_; }
  std::uint32_t cores_per_cluster() const { return cores_per_cluster_; }
  std::uint32_t total_cores() const { return clusters_ * cores_per_cluster_; }

  // Op log: appended by every op that enqueued work.
  const std::vector<OpRecord>& ops() const { return ops_; }
  void clear_ops() { ops_.clear(); }
  void truncate_ops(std::size_t count) { if (count < ops_.size()) ops_.resize(count); }
  void record_op(OpRecord r) { ops_.push_back(std::move(r)); }

  // Random numbers (dropout): a Philox-style counter generator; each call reserves `count`
  // numbers and returns the first counter, so results do not depend on tiling.
  void set_seed(std::uint64_t seed) { seed_ = seed, offset_ = 0; }
  // Continues another generator's stream (a framework's per-device generator): the next
  // reserve_random returns `offset`.
  void set_random_state(std::uint64_t seed, std::uint64_t offset) { seed_ = seed, offset_ = offset; }
  std::uint64_t seed() const { return seed_; }
  std::uint64_t reserve_random(std::uint64_t count) {
    const std::uint64_t first = offset_;
    offset_ += count;
    return first;
  }

 private:
  Handle() = default;
  int device_ = 0;
  cnrtQueue_t queue_ = nullptr;
  std::uint64_t nram_bytes_ = 0, wram_bytes_ = 0, sram_bytes_ = 0;
  std::uint32_t clusters_ = 0, cores_per_cluster_ = 0;
  std::vector<OpRecord> ops_;
  std::uint64_t seed_ = 0, offset_ = 0;
};

}  // namespace mlusim::mlu
