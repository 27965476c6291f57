// The Work of a "cncl" collective (ProcessGroupCNCL): its result is ready on the group's own
// device queue when an event recorded there after the collective's end completes, as
// ProcessGroupNCCL's work is ready on its NCCL stream. Torch headers: compiled only into
// torch_mlu._C_cncl.
#pragma once

#include <chrono>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace mlusim::bridge::cncl {

class WorkCNCL : public c10d::Work {
 public:
  // `done` is the group's queue (a c10 stream of device "mlu") right after the collective's hold:
  // an event recorded there completes at the collective's simulated end. The Future completes on
  // that queue too: its callbacks (DDP's comm hooks, FSDP2's waits) make the caller's current
  // stream wait for it instead of blocking the host. `result` are the tensors the collective
  // writes (Work.result() and the Future's value).
  WorkCNCL(int rank, c10d::OpType op, std::vector<at::Tensor> result, const c10::Stream& done);

  // The event has completed (the simulation reached the collective's end).
  bool isCompleted() override;
  bool isSuccess() const override;
  // Make the caller's current stream on the device wait for the collective: returns at once,
  // as ProcessGroupNCCL's wait() does; `timeout` is not used (nothing blocks the host).
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void blockCurrentStream() override;
  // Blocks the host until the collective's end.
  void synchronize() override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<at::Tensor> result_;
  c10::Device device_;
  c10::Event done_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace mlusim::bridge::cncl
