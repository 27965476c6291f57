#include "clique.h"

#include <stdexcept>
#include <string>

#include "dtypes.h"
#include "errors.h"

#include <mlusim_ext.h>

namespace mlusim::cncl {

std::mutex& lock() {
  static std::mutex m;
  return m;
}

namespace {

void* ptr(std::uint64_t a) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(a)); }

// execute() as one batch of host work charged `launches` kernel launches: the real library
// launches one kernel per participating rank (cncl.h).
cnclResult_t execute_charged(const Plan& plan, const RankQueues& rq, const char* what, int launches) {
  cnclResult_t r = CNCL_RET_SUCCESS;
  const cnrtRet_t e = driver::run_as_batch(static_cast<unsigned>(launches), [&] {
    r = execute(plan, rq, what);
    return cnrtSuccess;
  });
  if (r == CNCL_RET_SUCCESS && e != cnrtSuccess) r = fail_cnrt(std::string(what) + ": host clock", e);
  return r;
}

// What differs between two ranks' calls of one collective ("" if they agree).
std::string mismatch(const CollectiveCall& a, const CollectiveCall& b) {
  if (a.kind != b.kind) return std::string(collective_name(a.kind)) + " vs " + collective_name(b.kind);
  if (a.count != b.count) return "count " + std::to_string(a.count) + " vs " + std::to_string(b.count);
  if (a.dtype != b.dtype) return "datatype " + dtype_name(a.dtype) + " vs " + dtype_name(b.dtype);
  if (is_reduction(a.kind) && a.op != b.op) return "op " + op_name(a.op) + " vs " + op_name(b.op);
  if ((a.kind == CollectiveKind::kBroadcast || a.kind == CollectiveKind::kReduce) && a.root != b.root)
    return "root " + std::to_string(a.root) + " vs " + std::to_string(b.root);
  return "";
}

}  // namespace

Clique::Clique(std::vector<int> devices, std::uint32_t compute_cores, LinkModel link)
    : devices_(std::move(devices)), compute_cores_(compute_cores), link_(link), pending_(devices_.size()),
      alive_(devices_.size(), true), scratch_(devices_.size(), 0), scratch_bytes_(devices_.size(), 0) {
  for (int d : devices_) {
    pools_.push_back(std::make_unique<NotifierPool>(d));
    cnrtQueue_t q = nullptr;
    if (cnrtRet_t e = on_device(d, [&] { return cnrtQueueCreate(&q); }); e != cnrtSuccess) {
      for (cnrtQueue_t made : send_queues_) cnrtQueueDestroy(made);
      throw std::runtime_error(std::string("cnrtQueueCreate on mlu") + std::to_string(d) + ": " + cnrtGetErrorName(e));
    }
    send_queues_.push_back(q);
  }
}

Clique::~Clique() {
  for (cnrtQueue_t q : send_queues_) cnrtQueueDestroy(q);
  for (std::uint64_t s : scratch_)
    if (s != 0) cnrtFree(ptr(s));
}

RankQueues Clique::queues_for(const std::vector<cnrtQueue_t>& queues) {
  RankQueues rq;
  rq.devices = devices_;
  rq.queues = queues;
  rq.send_queues = send_queues_;
  for (auto& p : pools_) rq.pools.push_back(p.get());
  rq.compute_cores = compute_cores_;
  return rq;
}

cnclResult_t Clique::ensure_scratch(const std::vector<std::size_t>& bytes) {
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r] <= scratch_bytes_[r]) continue;
    void* p = nullptr;
    const cnrtRet_t e = on_device(devices_[r], [&] {
      if (scratch_[r] != 0) cnrtFree(ptr(scratch_[r]));  // waits for work still using it
      scratch_[r] = 0;
      scratch_bytes_[r] = 0;
      return cnrtMalloc(&p, bytes[r]);
    });
    if (e != cnrtSuccess)
      return fail(CNCL_RET_ERR_MEMORY, "scratch of " + std::to_string(bytes[r]) + " bytes on mlu" +
                                           std::to_string(devices_[r]) + ": " + cnrtGetErrorName(e));
    scratch_[r] = reinterpret_cast<std::uintptr_t>(p);
    scratch_bytes_[r] = bytes[r];
  }
  return CNCL_RET_SUCCESS;
}

cnclResult_t Clique::add_collective(int rank, const CollectiveCall& call) {
  pending_[static_cast<std::size_t>(rank)].push_back(call);
  return submit_ready();
}

cnclResult_t Clique::submit_ready() {
  const int n = ranks();
  cnclResult_t first_error = CNCL_RET_SUCCESS;
  for (;;) {
    for (int r = 0; r < n; ++r)
      if (pending_[static_cast<std::size_t>(r)].empty()) return first_error;
    std::vector<CollectiveCall> calls;
    for (auto& q : pending_) {
      calls.push_back(q.front());
      q.pop_front();
    }
    const CollectiveCall& c0 = calls[0];
    std::string diff;
    int odd = 0;
    for (int r = 1; r < n && diff.empty(); ++r)
      if (!(diff = mismatch(c0, calls[static_cast<std::size_t>(r)])).empty()) odd = r;
    if (!diff.empty()) {
      const cnclResult_t e = fail(CNCL_RET_ERR_INVALID, std::string(collective_name(c0.kind)) + ": rank 0 and rank " +
                                                            std::to_string(odd) + " called it differently (" + diff +
                                                            "); the collective is dropped on every rank");
      if (first_error == CNCL_RET_SUCCESS) first_error = e;
      continue;
    }
    Collective c;
    c.kind = c0.kind;
    c.count = c0.count;
    c.dtype = c0.dtype;
    c.op = c0.op;
    c.root = c0.root;
    std::vector<cnrtQueue_t> queues;
    for (const CollectiveCall& k : calls) {
      c.buffers.push_back(k.buffers);
      queues.push_back(k.queue);
    }
    const std::size_t need = scratch_bytes(c, n, link_);
    if (cnclResult_t e = ensure_scratch(std::vector<std::size_t>(static_cast<std::size_t>(n), need)); e != CNCL_RET_SUCCESS) {
      if (first_error == CNCL_RET_SUCCESS) first_error = e;
      continue;
    }
    Plan plan = build_plan(c, scratch_, link_);
    if (const auto t = reduce_dtype(c.dtype)) plan.reduce_type = *t;
    plan.reduce_op = reduce_vec_op(c.op);
    const cnclResult_t e = execute_charged(plan, queues_for(queues), collective_name(c.kind), n);
    if (e != CNCL_RET_SUCCESS && first_error == CNCL_RET_SUCCESS) first_error = e;
  }
}

cnclResult_t Clique::add_send(int from, int to, const P2PCall& call) {
  sends_[{from, to}].push_back(call);
  return match_p2p(from, to);
}

cnclResult_t Clique::add_recv(int to, int from, const P2PCall& call) {
  recvs_[{from, to}].push_back(call);
  return match_p2p(from, to);
}

cnclResult_t Clique::match_p2p(int from, int to) {
  auto& s = sends_[{from, to}];
  auto& r = recvs_[{from, to}];
  cnclResult_t first_error = CNCL_RET_SUCCESS;
  while (!s.empty() && !r.empty()) {
    const P2PCall send = s.front(), recv = r.front();
    s.pop_front();
    r.pop_front();
    if (send.count != recv.count || send.dtype != recv.dtype) {
      const cnclResult_t e =
          fail(CNCL_RET_ERR_INVALID, "cnclSend/cnclRecv from rank " + std::to_string(from) + " to rank " +
                                         std::to_string(to) + ": the send has " + std::to_string(send.count) + " x " +
                                         dtype_name(send.dtype) + ", the receive " + std::to_string(recv.count) + " x " +
                                         dtype_name(recv.dtype) + "; the pair is dropped");
      if (first_error == CNCL_RET_SUCCESS) first_error = e;
      continue;
    }
    const Plan plan = build_send_recv(ranks(), from, to, send.buffer, recv.buffer, send.count * dtype_bytes(send.dtype));
    std::vector<cnrtQueue_t> queues(static_cast<std::size_t>(ranks()), nullptr);
    // Only the two ranks' queues carry steps; the others' entry/exit marks issue nothing, but
    // need a queue: give them the sender's (a mark with no waiters and no work is not issued).
    for (auto& q : queues) q = send.queue;
    queues[static_cast<std::size_t>(to)] = recv.queue;
    const cnclResult_t e = execute_charged(plan, queues_for(queues), "cnclSend/cnclRecv", 1);
    if (e != CNCL_RET_SUCCESS && first_error == CNCL_RET_SUCCESS) first_error = e;
  }
  return first_error;
}

void Clique::drop_rank(int rank) {
  alive_[static_cast<std::size_t>(rank)] = false;
  for (auto& q : pending_) q.clear();  // no collective pending now can complete
  for (auto it = sends_.begin(); it != sends_.end(); ++it)
    if (it->first.first == rank || it->first.second == rank) it->second.clear();
  for (auto it = recvs_.begin(); it != recvs_.end(); ++it)
    if (it->first.first == rank || it->first.second == rank) it->second.clear();
}

}  // namespace mlusim::cncl
