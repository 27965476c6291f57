// The Work of a "cncl" collective: see work_cncl.h.
#include "distributed/work_cncl.h"

#include <utility>

#include <ATen/core/jit_type.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace mlusim::bridge::cncl {

WorkCNCL::WorkCNCL(int rank, c10d::OpType op, std::vector<at::Tensor> result, const c10::Stream& done)
    : c10d::Work(rank, op),
      result_(std::move(result)),
      device_(done.device()),
      done_(done.device_type()),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(), std::vector<c10::Device>{device_})) {
  done_.record(done);
  // A Future with devices records its own event on each device's current stream when completed
  // and makes its consumers' streams wait for that: with `done` current, that is the group's queue.
  c10::StreamGuard on_done(done);
  future_->markCompleted(c10::IValue(result_));
}

bool WorkCNCL::isCompleted() { return done_.query(); }

bool WorkCNCL::isSuccess() const { return true; }

bool WorkCNCL::wait(std::chrono::milliseconds /*timeout*/) {
  blockCurrentStream();
  return true;
}

void WorkCNCL::blockCurrentStream() {
  done_.block(c10::impl::VirtualGuardImpl(device_.type()).getStream(device_));
}

void WorkCNCL::synchronize() { done_.synchronize(); }

std::vector<at::Tensor> WorkCNCL::result() { return result_; }

c10::intrusive_ptr<c10::ivalue::Future> WorkCNCL::getFuture() { return future_; }

}  // namespace mlusim::bridge::cncl
