#include "executor.h"

#include <string>

#include "errors.h"
#include "reduce_kernel.h"

namespace mlusim::cncl {

namespace {

void* ptr(std::uint64_t a) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(a)); }

}  // namespace

NotifierPool::~NotifierPool() {
  for (cnrtNotifier_t n : notifiers_) cnrtNotifierDestroy(n);
}

cnclResult_t NotifierPool::get(std::size_t i, cnrtNotifier_t* out) {
  while (notifiers_.size() <= i) {
    cnrtNotifier_t n = nullptr;
    const cnrtRet_t r = on_device(device_, [&] { return cnrtNotifierCreate(&n); });
    if (r != cnrtSuccess) return fail_cnrt("cnrtNotifierCreate on mlu" + std::to_string(device_), r);
    notifiers_.push_back(n);
  }
  *out = notifiers_[i];
  return CNCL_RET_SUCCESS;
}

cnclResult_t execute(const Plan& plan, const RankQueues& rq, const char* what) {
  const std::vector<Step>& steps = plan.steps();
  std::vector<bool> waited_on(steps.size(), false);
  const auto same_lane = [&](const Step& a, const Step& b) { return a.rank == b.rank && a.lane == b.lane; };
  for (const Step& s : steps)
    for (std::size_t d : s.deps)
      if (!same_lane(steps[d], s)) waited_on[d] = true;
  std::vector<cnrtNotifier_t> placed(steps.size(), nullptr);
  std::vector<std::size_t> used(rq.pools.size(), 0);
  const std::string name(what);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const auto r = static_cast<std::size_t>(s.rank);
    cnrtQueue_t q = s.lane == 0 ? rq.queues[r] : rq.send_queues[r];
    for (std::size_t d : s.deps) {
      if (same_lane(steps[d], s)) continue;
      if (cnrtRet_t e = cnrtQueueWaitNotifier(placed[d], q, 0); e != cnrtSuccess)
        return fail_cnrt(name + ": cnrtQueueWaitNotifier on rank " + std::to_string(s.rank), e);
    }
    if (s.bytes > 0) {
      cnrtRet_t e = cnrtSuccess;
      const char* call = "";
      if (s.kind == Step::Kind::kCopy && s.dst_rank == s.rank) {
        call = "cnrtMemcpyAsync";
        e = cnrtMemcpyAsync(ptr(s.dst), ptr(s.src), s.bytes, q, cnrtMemcpyDevToDev);
      } else if (s.kind == Step::Kind::kCopy) {
        call = "cnrtMemcpyPeerAsync";
        e = cnrtMemcpyPeerAsync(ptr(s.dst), rq.devices[static_cast<std::size_t>(s.dst_rank)], ptr(s.src), rq.devices[r],
                                s.bytes, q);
      } else if (s.kind == Step::Kind::kReduce) {
        call = "reduction kernel launch";
        e = launch_reduce(q, rq.compute_cores, plan.reduce_type, plan.reduce_op, s.dst, s.src, s.bytes / plan.elem_bytes());
      }
      if (e != cnrtSuccess) return fail_cnrt(name + ": " + call + " on rank " + std::to_string(s.rank), e);
    }
    if (waited_on[i]) {
      cnrtNotifier_t n = nullptr;
      if (cnclResult_t e = rq.pools[r]->get(used[r]++, &n); e != CNCL_RET_SUCCESS) return e;
      if (cnrtRet_t e = cnrtPlaceNotifier(n, q); e != cnrtSuccess)
        return fail_cnrt(name + ": cnrtPlaceNotifier on rank " + std::to_string(s.rank), e);
      placed[i] = n;
    }
  }
  return CNCL_RET_SUCCESS;
}

}  // namespace mlusim::cncl
