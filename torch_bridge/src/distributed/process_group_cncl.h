// ProcessGroupCNCL: the torch.distributed backend "cncl" for device "mlu" across processes, a
// c10d::Backend as ProcessGroupNCCL is (torch_mlu/distributed.py registers it; torch_mlu._C_cncl
// creates it). Torch headers: compiled only into torch_mlu._C_cncl.
//
// Each rank process simulates its own chip. A collective's data travels between the processes
// over an inner Gloo backend (torch.distributed's own TCP transport, on the group's store under
// the prefix "cncl_transport"); the bytes move in and out of the simulated device with untimed
// copies (transport.cpp), and the collective's simulated time comes from the interconnect model
// (collective_time_model.h), computed the same way on every rank from all ranks' arrival times:
//
//     end = max over ranks of arrival + model time
//
// so runs are deterministic and `torchrun --nnodes N` spreads a simulated system over real
// machines. Each collective call also costs the calling thread one kernel launch of host time
// (host.launch_overhead_ns), as CNCL launches one kernel per rank.
//
// Ordering, like ProcessGroupNCCL: a collective reads its input once the calling thread's current
// stream has produced it; its result is ready on the group's own stream (one pool queue per
// device) at the model's end time. Work::wait() and the Future's callbacks (DDP's comm hooks
// included) make the current stream wait for that, so compute overlaps communication on the
// device; the host does not block: a rank's arrival is found by running its simulation ahead to
// the point its current stream reaches the collective (mlusimNotifierPeek), not by waiting. The
// result tensors are recorded on the group's stream (their memory is not reused before the end).
// What is approximated: with the simulation ahead of the host, work the host then queues on an
// idle stream starts no earlier than the arrival; the collective's link and DRAM traffic does not
// slow the chip's concurrent kernels.
//
// Collectives: allreduce (and coalesced) with sum, product, max, min, avg; broadcast; allgather,
// all_gather_single (all_gather_into_tensor) and its coalesced form; reduce_scatter,
// reduce_scatter_single (reduce_scatter_tensor) and its coalesced form; all_to_all_single;
// reduce (not avg: Gloo's reduce has none); barrier; send, recv. Tensors must be contiguous and
// on one "mlu" device; lists of CPU tensors go straight to the Gloo backend (host memory, no
// simulated time, as a "cpu:gloo" backend would). Bad input raises c10::ValueError (Python's
// ValueError) naming the collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/collective_time_model.h"
#include "mlusim/torch/api.h"

namespace mlusim::bridge::cncl {

inline constexpr const char* kBackendName = "cncl";

// One entry of a rank's collectives log: arrival and end in ns of the simulated host clock.
struct CollectiveRecord {
  std::string op;           // a collective_name(): "all_reduce", ..., "send_recv"
  std::uint64_t bytes = 0;  // S as the model defines it for op
  double arrival_ns = 0;
  double end_ns = 0;
};

class ProcessGroupCNCL : public c10d::Backend {
 public:
  // `transport` is a Gloo backend of the same ranks on PrefixStore("cncl_transport", store).
  // Checks that every rank simulates the same interconnect (one all-gather over `transport`) and
  // that the config has room for `size` chips.
  ProcessGroupCNCL(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupCNCL() override;

  const std::string getBackendName() const override { return kBackendName; }
  c10::intrusive_ptr<Options> getBackendOptions() override { return options_; }
  uint64_t getSequenceNumberForGroup() override;

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> all_gather_single(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> all_gather_single_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_single(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_single_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                   std::vector<int64_t>& output_split_sizes,
                                                   std::vector<int64_t>& input_split_sizes,
                                                   const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;

  // This rank's collectives, oldest first (what torch_mlu.distributed.comm_report reads).
  std::vector<CollectiveRecord> collectives() const;
  void clear_collectives();
  // Simulated ns of this rank's collectives (end - arrival), summed since creation.
  double comm_ns() const;

 private:
  // Throws c10::ValueError naming `what` unless `tensors` are contiguous and all on one mlu device.
  c10::Device device_of(const std::vector<at::Tensor>& tensors, const char* what) const;
  // The reduce op's model name ("sum", ..., "avg"); c10::ValueError naming `what` for the others.
  static std::string reduce_op(const c10d::ReduceOp& op, const char* what);
  double arrive(const c10::Device& device) const;
  c10::intrusive_ptr<c10d::Work> finish(Collective op, c10d::OpType type, std::uint64_t bytes, double arrival,
                                        const c10::Device& device, std::vector<at::Tensor> result);
  c10::intrusive_ptr<c10d::Work> hold(Collective op, c10d::OpType type, std::uint64_t bytes, double arrival,
                                      double end, const c10::Device& device, std::vector<at::Tensor> result);
  c10::Stream group_stream(const c10::Device& device);
  // Gloo all-reduce of each host tensor in place; avg (`name`) is a sum divided by the group size.
  void host_all_reduce(std::vector<at::Tensor>& hosts, const c10d::ReduceOp& op, const std::string& name);
  // Gloo has no reduce-scatter for every dtype: all-reduce `host_in` (flat), keep this rank's block.
  void reduce_scatter_host(at::Tensor& host_out, at::Tensor host_in, const c10d::ReduceOp& op, const std::string& name);
  // One Work for several collectives of one stream: the last one's (its event follows the others).
  c10::intrusive_ptr<c10d::Work> coalesced(std::vector<c10::intrusive_ptr<c10d::Work>> works,
                                           std::vector<at::Tensor> outputs);
  void check_same_system();

  c10::intrusive_ptr<c10d::Backend> transport_;
  c10::intrusive_ptr<Options> options_;
  InterconnectFigures fig_;
  // One collective at a time: ranks must issue them in the same order, and the log, the streams
  // and the sequence number are shared by the threads that call in (autograd's device thread
  // runs DDP's hooks while the main thread may call collectives too). Recursive: barrier and the
  // coalesced forms are made of the other collectives.
  mutable std::recursive_mutex mutex_;
  std::map<int, std::int64_t> streams_;  // device index -> the group's pool queue on it
  std::vector<CollectiveRecord> collectives_;
  double comm_ns_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace mlusim::bridge::cncl
