// Enqueues a plan (plan.h) on the ranks' queues.
//
// Steps are issued in plan order. A dependency on a step of another lane becomes a notifier
// placed right after that step on its queue and a cnrtQueueWaitNotifier on the dependent step's
// queue just before it; dependencies within a queue are its order. Copies within a device are
// cnrtMemcpyAsync (DevToDev), across devices cnrtMemcpyPeerAsync on the sender's queue,
// reductions the kernel of reduce_kernel.h. Zero-byte steps issue nothing but can still be waited
// for (their notifier completes when the queue reaches it).
#pragma once

#include <vector>

#include <cnrt.h>

#include "cncl.h"
#include "plan.h"

namespace mlusim::cncl {

// Notifiers of one rank's device, reused from one plan to the next: every wait on a notifier is
// issued (by the same execute call) before the notifier is placed again, so a wait always refers
// to the placement it was meant for.
class NotifierPool {
 public:
  explicit NotifierPool(int device) : device_(device) {}
  ~NotifierPool();
  NotifierPool(const NotifierPool&) = delete;
  NotifierPool& operator=(const NotifierPool&) = delete;
  // The i-th notifier (created on the device on first use). CNCL_RET_ERR_SYSTEM if that fails.
  cnclResult_t get(std::size_t i, cnrtNotifier_t* out);

 private:
  int device_;
  std::vector<cnrtNotifier_t> notifiers_;
};

// Runs `body` with `device` as the calling thread's current device, then restores it.
template <class Body>
cnrtRet_t on_device(int device, Body&& body) {
  int before = 0;
  if (cnrtRet_t r = cnrtGetDevice(&before); r != cnrtSuccess) return r;
  if (cnrtRet_t r = cnrtSetDevice(device); r != cnrtSuccess) return r;
  const cnrtRet_t r = body();
  cnrtSetDevice(before);
  return r;
}

struct RankQueues {
  std::vector<int> devices;           // per rank
  std::vector<cnrtQueue_t> queues;    // per rank: lane 0, the caller's queue
  std::vector<cnrtQueue_t> send_queues;  // per rank: lane 1, the library's send queue
  std::vector<NotifierPool*> pools;   // per rank
  std::uint32_t compute_cores = 1;    // per device (all devices share one config)
};

// `what` names the collective in error messages. CNCL_RET_ERR_SYSTEM naming the failed cnrt call;
// steps issued before a failure stay enqueued.
cnclResult_t execute(const Plan& plan, const RankQueues& rq, const char* what);

}  // namespace mlusim::cncl
