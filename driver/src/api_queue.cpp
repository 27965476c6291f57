// Queue management: create, destroy, sync, query, cross-queue waits.
#include "api_support.h"

using namespace mlusim::driver;

namespace {

cnrtRet_t bad_queue(HostThread& t, const char* fn, cnrtQueue_t queue) {
  return t.fail(cnrtErrorInvalidResourceHandle, std::string(fn) + ": queue " + hex_address(queue) +
                                                    " is not a live queue (destroyed, or not a queue handle)");
}

cnrtRet_t create_queue(const char* fn, cnrtQueue_t* pQueue, unsigned int flags, int priority) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pQueue == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": pQueue is NULL");
    if (flags != 0) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": flags must be 0 (got " + std::to_string(flags) + ")");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    cnrtQueue_t q = rt.create_queue(t.device, priority);
    if (q == nullptr)
      return t.fail(cnrtErrorNoMem, std::string(fn) + ": mlu" + std::to_string(t.device) + " already has " +
                                        std::to_string(kMaxQueuesPerDevice) + " queues");
    *pQueue = q;
    return cnrtSuccess;
  });
}

}  // namespace

extern "C" {

cnrtRet_t cnrtQueueCreate(cnrtQueue_t* pQueue) { return create_queue("cnrtQueueCreate", pQueue, 0, 0); }

cnrtRet_t cnrtQueueCreateWithPriority(cnrtQueue_t* pQueue, unsigned int flags, int priority) {
  return create_queue("cnrtQueueCreateWithPriority", pQueue, flags, priority);
}

cnrtRet_t cnrtQueueGetPriority(cnrtQueue_t queue, int* priority) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (priority == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtQueueGetPriority: priority is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return bad_queue(t, "cnrtQueueGetPriority", queue);
    *priority = q->priority;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtQueueDestroy(cnrtQueue_t queue) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (queue == nullptr || queue == cnrtQueueLegacy || queue == cnrtQueuePerThread)
      return t.fail(cnrtErrorInvalidResourceHandle, "cnrtQueueDestroy: the default queue cannot be destroyed");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (!rt.destroy_queue(queue)) return bad_queue(t, "cnrtQueueDestroy", queue);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtQueueSync(cnrtQueue_t queue) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtQueueSync");
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return bad_queue(t, "cnrtQueueSync", queue);
    if (t.host_func_op != nullptr && q->running.get() == t.host_func_op)
      return t.fail(cnrtErrorIllegalState, "cnrtQueueSync: called from a host function on the queue it waits for (it would never return)");
    if (OpPtr last = q->last) rt.wait(lk, {last}, t, "cnrtQueueSync");
    std::string message;
    const cnrtRet_t fault = rt.take_fault(*q, &message);
    if (fault != cnrtSuccess) return t.fail(fault, "cnrtQueueSync: " + message);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtQueueQuery(cnrtQueue_t queue) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtQueueQuery");
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return bad_queue(t, "cnrtQueueQuery", queue);
    OpPtr last = q->last;
    if (last && !Runtime::done_by(*last, t.clock)) {
      rt.reach(lk, t.clock);
      if (!Runtime::done_by(*last, t.clock)) return cnrtErrorNotReady;
    }
    std::string message;
    const cnrtRet_t fault = rt.take_fault(*q, &message);
    if (fault != cnrtSuccess) return t.fail(fault, "cnrtQueueQuery: " + message);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtQueueWaitNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flag) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtQueueWaitNotifier");
    NotifierPtr n = rt.find_notifier(notifier);
    if (!n)
      return t.fail(cnrtErrorInvalidResourceHandle, "cnrtQueueWaitNotifier: notifier " + hex_address(notifier) + " is not a live notifier");
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return bad_queue(t, "cnrtQueueWaitNotifier", queue);
    if (flag != CNRT_NOTIFIER_WAIT_DEFAULT)
      return t.fail(cnrtErrorArgsInvalid, "cnrtQueueWaitNotifier: flag must be CNRT_NOTIFIER_WAIT_DEFAULT (0), got " + std::to_string(flag));
    if (!n->placement || n->placement->done) return cnrtSuccess;  // nothing to wait for
    auto op = std::make_shared<Op>();
    op->kind = OpKind::kWaitMarker;
    op->device = q->device;
    op->target = n->placement;
    op->label = "wait notifier " + std::to_string(n->id);
    rt.submit(op, q, t);
    return cnrtSuccess;
  });
}

}  // extern "C"
