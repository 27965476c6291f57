// Notifier management: create, destroy, place, query, wait, elapsed time.
#include "api_support.h"
#include "mlusim_ext.h"

using namespace mlusim::driver;

namespace {

constexpr unsigned kKnownNotifierFlags =
    CNRT_NOTIFIER_DISABLE_TIMING_SW | CNRT_NOTIFIER_DISABLE_TIMING_ALL | CNRT_NOTIFIER_INTERPROCESS;

cnrtRet_t bad_notifier(HostThread& t, const char* fn, cnrtNotifier_t n) {
  return t.fail(cnrtErrorInvalidResourceHandle, std::string(fn) + ": notifier " + hex_address(n) +
                                                    " is not a live notifier (NULL, destroyed, or not a notifier handle)");
}

cnrtRet_t create_notifier(const char* fn, cnrtNotifier_t* pNotifier, unsigned int flags) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (pNotifier == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": pNotifier is NULL");
    if ((flags & ~kKnownNotifierFlags) != 0)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": unknown flag bits in " + std::to_string(flags));
    if ((flags & CNRT_NOTIFIER_INTERPROCESS) && !(flags & CNRT_NOTIFIER_DISABLE_TIMING_ALL))
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": CNRT_NOTIFIER_INTERPROCESS requires CNRT_NOTIFIER_DISABLE_TIMING_ALL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    cnrtNotifier_t n = rt.create_notifier(t.device, flags);
    if (n == nullptr)
      return t.fail(cnrtErrorNoMem, std::string(fn) + ": mlu" + std::to_string(t.device) + " already has " +
                                        std::to_string(kMaxNotifiersPerDevice) + " notifiers");
    *pNotifier = n;
    return cnrtSuccess;
  });
}

cnrtRet_t place(const char* fn, cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flags) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    NotifierPtr n = rt.find_notifier(notifier);
    if (!n) return bad_notifier(t, fn, notifier);
    QueuePtr q = rt.find_queue(queue, t);
    if (!q)
      return t.fail(cnrtErrorInvalidResourceHandle, std::string(fn) + ": queue " + hex_address(queue) + " is not a live queue");
    if (flags != CNRT_NOTIFIER_PLACE_DEFAULT)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": flags must be CNRT_NOTIFIER_PLACE_DEFAULT (0), got " + std::to_string(flags));
    auto op = std::make_shared<Op>();
    op->kind = OpKind::kMarker;
    op->device = q->device;
    op->label = "notifier " + std::to_string(n->id);
    rt.submit(op, q, t);
    n->placement = op;
    return cnrtSuccess;
  });
}

// ElapsedTime (ms) and Duration (us): the same interval, different units and timing flags.
cnrtRet_t interval(const char* fn, cnrtNotifier_t start, cnrtNotifier_t end, float* out, unsigned disabling_flags,
                   double ps_per_unit) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    NotifierPtr s = rt.find_notifier(start), e = rt.find_notifier(end);
    if (!s) return bad_notifier(t, fn, start);
    if (!e) return bad_notifier(t, fn, end);
    if (out == nullptr) return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": the result pointer is NULL");
    if ((s->flags | e->flags) & disabling_flags)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": a notifier was created with timing disabled");
    if (!s->placement || !e->placement)
      return t.fail(cnrtErrorCndrvFuncCall, std::string(fn) + ": the " + (!s->placement ? "start" : "end") +
                                                " notifier was never placed");
    OpPtr a = s->placement, b = e->placement;
    if (!Runtime::done_by(*a, t.clock) || !Runtime::done_by(*b, t.clock)) {
      rt.reach(lk, t.clock);
      if (!Runtime::done_by(*a, t.clock) || !Runtime::done_by(*b, t.clock)) return cnrtErrorNotReady;
    }
    const double ps = static_cast<double>(b->end_ps) - static_cast<double>(a->end_ps);
    *out = static_cast<float>(ps / ps_per_unit);
    return cnrtSuccess;
  });
}

}  // namespace

extern "C" {

cnrtRet_t cnrtNotifierCreate(cnrtNotifier_t* pNotifier) {
  return create_notifier("cnrtNotifierCreate", pNotifier, CNRT_NOTIFIER_DEFAULT);
}

cnrtRet_t cnrtNotifierCreateWithFlags(cnrtNotifier_t* pNotifier, unsigned int flags) {
  return create_notifier("cnrtNotifierCreateWithFlags", pNotifier, flags);
}

cnrtRet_t cnrtNotifierDestroy(cnrtNotifier_t notifier) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::lock_guard<std::mutex> lk(rt.mu);
    if (!rt.destroy_notifier(notifier)) return bad_notifier(t, "cnrtNotifierDestroy", notifier);
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue) {
  return place("cnrtPlaceNotifier", notifier, queue, CNRT_NOTIFIER_PLACE_DEFAULT);
}

cnrtRet_t cnrtPlaceNotifierWithFlags(cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flags) {
  return place("cnrtPlaceNotifierWithFlags", notifier, queue, flags);
}

cnrtRet_t cnrtQueryNotifier(cnrtNotifier_t notifier) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    NotifierPtr n = rt.find_notifier(notifier);
    if (!n) return bad_notifier(t, "cnrtQueryNotifier", notifier);
    OpPtr p = n->placement;
    if (!p || Runtime::done_by(*p, t.clock)) return cnrtSuccess;
    rt.reach(lk, t.clock);
    return Runtime::done_by(*p, t.clock) ? cnrtSuccess : cnrtErrorNotReady;
  });
}

cnrtRet_t cnrtWaitNotifier(cnrtNotifier_t notifier) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    NotifierPtr n = rt.find_notifier(notifier);
    if (!n) return bad_notifier(t, "cnrtWaitNotifier", notifier);
    if (OpPtr p = n->placement) rt.wait(lk, {p}, t, "cnrtWaitNotifier");
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimNotifierPeek(cnrtNotifier_t notifier, double* ns) {
  return api_call(HostCost::kNone, [&](Runtime& rt, HostThread& t) {
    if (ns == nullptr) return t.fail(cnrtErrorArgsInvalid, "mlusimNotifierPeek: ns is NULL");
    std::unique_lock<std::mutex> lk(rt.mu);
    NotifierPtr n = rt.find_notifier(notifier);
    if (!n) return bad_notifier(t, "mlusimNotifierPeek", notifier);
    OpPtr p = n->placement;
    if (!p) return t.fail(cnrtErrorIllegalState, "mlusimNotifierPeek: the notifier was never placed");
    const Picos saved = t.clock;
    rt.wait(lk, {p}, t, "mlusimNotifierPeek", false);
    const Picos at = std::max(saved, p->end_ps);
    t.clock = saved;  // the caller did not wait
    *ns = static_cast<double>(at >= rt.epoch() ? at - rt.epoch() : 0) / 1000.0;
    return cnrtSuccess;
  });
}

cnrtRet_t cnrtNotifierElapsedTime(cnrtNotifier_t start, cnrtNotifier_t end, float* ms) {
  return interval("cnrtNotifierElapsedTime", start, end, ms, CNRT_NOTIFIER_DISABLE_TIMING_SW | CNRT_NOTIFIER_DISABLE_TIMING_ALL,
                  1e9);
}

cnrtRet_t cnrtNotifierDuration(cnrtNotifier_t start, cnrtNotifier_t end, float* us) {
  return interval("cnrtNotifierDuration", start, end, us, CNRT_NOTIFIER_DISABLE_TIMING_ALL, 1e6);
}

}  // extern "C"
