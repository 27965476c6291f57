// The C entry points of cncl.h: one validation prologue per call (the codes cncl.h documents),
// then the group buffer or the clique.
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <mlusim_ext.h>

#include "clique.h"
#include "dtypes.h"
#include "errors.h"

using namespace mlusim::cncl;

namespace {

std::set<cnclComm*>& live_comms() {
  static std::set<cnclComm*> s;
  return s;
}
std::map<std::string, std::weak_ptr<Clique>>& cliques_by_id() {
  static std::map<std::string, std::weak_ptr<Clique>> m;
  return m;
}

// Per thread: group depth and the submissions recorded inside the group.
struct GroupState {
  int depth = 0;
  std::vector<std::function<cnclResult_t()>> deferred;
};
GroupState& group() {
  thread_local GroupState g;
  return g;
}

// Runs `submit` now, or at the outermost cnclGroupEnd.
cnclResult_t submit_or_defer(std::function<cnclResult_t()> submit) {
  if (group().depth > 0) {
    group().deferred.push_back(std::move(submit));
    return CNCL_RET_SUCCESS;
  }
  std::lock_guard<std::mutex> lk(lock());
  return submit();
}

// Runs a validation without charging host time for the cnrt queries it makes.
cnclResult_t uncharged(const std::function<cnclResult_t()>& check) {
  cnclResult_t r = CNCL_RET_SUCCESS;
  mlusim::driver::run_as_batch(0, [&] {
    r = check();
    return cnrtSuccess;
  });
  return r;
}

LinkModel link_model(const mlusim::sim::HardwareConfig& cfg) {
  LinkModel l;
  if (cfg.mlu_link_bandwidth_gbps > 0) {
    l.bandwidth_gbps = cfg.mlu_link_bandwidth_gbps;
    l.latency_ns = cfg.mlu_link_latency_ns + cfg.dram_latency_ns;
  } else {  // staged through pinned host memory: device-to-host, then host-to-device
    l.bandwidth_gbps = cfg.host_link_bandwidth_gbps / 2;
    l.latency_ns = 2 * (cfg.host_link_latency_ns + cfg.dram_latency_ns);
  }
  return l;
}

cnclResult_t check_comm(const char* fn, cnclComm_t comm) {
  if (comm == nullptr || live_comms().count(comm) == 0)
    return fail(CNCL_RET_ERR_INVALID, std::string(fn) + ": comm is not a live communicator");
  return CNCL_RET_SUCCESS;
}

cnclResult_t check_queue(const char* fn, cnclComm_t comm, cnrtQueue_t queue) {
  const int want = comm->clique->device(comm->rank);
  if (queue == nullptr)
    return fail(CNCL_RET_ERR_INVALID, std::string(fn) + ": queue is NULL; pass a queue of mlu" + std::to_string(want) +
                                          " (the communicator's device)");
  int dev = -1;
  if (mlusimQueueGetDevice(queue, &dev) != cnrtSuccess)
    return fail(CNCL_RET_ERR_INVALID, std::string(fn) + ": queue is not a live queue");
  if (dev != want)
    return fail(CNCL_RET_ERR_INVALID, std::string(fn) + ": queue belongs to mlu" + std::to_string(dev) + ", rank " +
                                          std::to_string(comm->rank) + "'s device is mlu" + std::to_string(want));
  return CNCL_RET_SUCCESS;
}

cnclResult_t check_dtype(const char* fn, cnclDataType_t dtype) {
  if (!valid_dtype(static_cast<long long>(dtype)))
    return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": datatype " + std::to_string(static_cast<long long>(dtype)) +
                                           " is not a cnclDataType_t");
  return CNCL_RET_SUCCESS;
}

cnclResult_t check_reduction(const char* fn, cnclDataType_t dtype, cnclReduceOp_t op) {
  if (!valid_op(static_cast<long long>(op)))
    return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": op " + std::to_string(static_cast<long long>(op)) +
                                           " is not a cnclReduceOp_t");
  const std::optional<mlusim::sim::DType> t = reduce_dtype(dtype);
  if (!t)
    return fail(CNCL_RET_ERR_UNSUPPORTED, std::string(fn) + ": " + op_name(op) + " in " + dtype_name(dtype) +
                                              ": the VFU reduces only cnclInt8, cnclInt32, cnclFloat16, cnclBfloat16 "
                                              "(where the config has bf16) and cnclFloat32");
  if (*t == mlusim::sim::DType::kBFloat16) {
    const mlusim::sim::HardwareConfig cfg = mlusim::driver::loaded_config();
    if (!cfg.computes(*t))
      return fail(CNCL_RET_ERR_UNSUPPORTED, std::string(fn) + ": " + op_name(op) + " in " + dtype_name(dtype) +
                                                ": config '" + cfg.name + "' has no bf16 arithmetic (vfu.bf16 is "
                                                "false; the MLU500 class, preset mlu590, has it)");
  }
  return CNCL_RET_SUCCESS;
}

cnclResult_t check_rank_arg(const char* fn, const char* what, int value, cnclComm_t comm) {
  if (value < 0 || value >= comm->clique->ranks())
    return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": " + what + " " + std::to_string(value) + " is outside 0.." +
                                           std::to_string(comm->clique->ranks() - 1));
  return CNCL_RET_SUCCESS;
}

// [p, p + bytes) must be inside one live allocation of the communicator's device.
cnclResult_t check_buffer(const char* fn, const char* what, const void* p, std::size_t bytes, cnclComm_t comm) {
  if (bytes == 0) return CNCL_RET_SUCCESS;
  if (p == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, std::string(fn) + ": " + what + " is NULL");
  cnrtPointerAttributes_t a{};
  const int want = comm->clique->device(comm->rank);
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const bool ok = cnrtPointerGetAttributes(&a, p) == cnrtSuccess && a.type == cnrtMemTypeDevice && a.device == want &&
                  at + bytes <= reinterpret_cast<std::uintptr_t>(a.deviceBasePointer) + a.size;
  if (!ok)
    return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": " + what + " [" + std::to_string(at) + ", +" +
                                           std::to_string(bytes) + ") is not inside a live allocation of mlu" +
                                           std::to_string(want));
  return CNCL_RET_SUCCESS;
}

#define CNCL_TRY(expr)                                          \
  do {                                                          \
    if (cnclResult_t cncl_r_ = (expr); cncl_r_ != CNCL_RET_SUCCESS) return cncl_r_; \
  } while (0)

// Validation shared by the collectives; `send_elems`/`recv_elems` are the buffer sizes in elements.
cnclResult_t collective(const char* fn, CollectiveCall call, std::size_t send_elems, std::size_t recv_elems,
                        bool send_used, bool recv_used, cnclComm_t comm) {
  std::lock_guard<std::mutex> lk(lock());
  CNCL_TRY(check_comm(fn, comm));
  CNCL_TRY(check_dtype(fn, call.dtype));
  if (is_reduction(call.kind)) CNCL_TRY(check_reduction(fn, call.dtype, call.op));
  if (call.kind == CollectiveKind::kBroadcast || call.kind == CollectiveKind::kReduce)
    CNCL_TRY(check_rank_arg(fn, "root", call.root, comm));
  CNCL_TRY(check_queue(fn, comm, call.queue));
  const std::size_t e = dtype_bytes(call.dtype);
  if (send_used) CNCL_TRY(check_buffer(fn, "sendbuff", reinterpret_cast<void*>(call.buffers.send), send_elems * e, comm));
  if (recv_used) CNCL_TRY(check_buffer(fn, "recvbuff", reinterpret_cast<void*>(call.buffers.recv), recv_elems * e, comm));
  return CNCL_RET_SUCCESS;
}

cnclResult_t enqueue_collective(const char* fn, const CollectiveCall& call, std::size_t send_elems,
                                std::size_t recv_elems, bool send_used, bool recv_used, cnclComm_t comm) {
  CNCL_TRY(uncharged([&] { return collective(fn, call, send_elems, recv_elems, send_used, recv_used, comm); }));
  std::shared_ptr<Clique> clique = comm->clique;
  const int rank = comm->rank;
  return submit_or_defer([clique, rank, call] { return clique->add_collective(rank, call); });
}

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// What the entry points need to size their buffer checks before validation runs: the clique's
// rank count and the caller's rank (1 and -1 for a comm that is not live; validation reports it).
struct CommShape {
  std::size_t ranks = 1;
  int rank = -1;
};
CommShape comm_shape(cnclComm_t comm) {
  std::lock_guard<std::mutex> lk(lock());
  if (live_comms().count(comm) == 0) return {};
  return {static_cast<std::size_t>(comm->clique->ranks()), comm->rank};
}

}  // namespace

extern "C" {

cnclResult_t cnclGetCliqueId(cnclCliqueId* clique_id) {
  if (clique_id == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclGetCliqueId: clique_id is NULL");
  static std::mt19937_64 gen(0x636e636cULL);  // deterministic ids: runs repeat exactly
  std::lock_guard<std::mutex> lk(lock());
  std::memset(clique_id->data, 0, sizeof clique_id->data);
  for (std::size_t i = 0; i < 16; i += 8) {
    const std::uint64_t v = gen();
    std::memcpy(clique_id->data + i, &v, 8);
  }
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclInitComms(cnclComm_t* comms, int num_comm, const int* dev_list, const int* rank_list, int nrank,
                           const cnclCliqueId* clique_id) {
  const char* fn = "cnclInitComms";
  if (comms == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclInitComms: comms is NULL");
  if (dev_list == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclInitComms: dev_list is NULL");
  if (num_comm < 1) return fail(CNCL_RET_ERR_ARGUMENT, "cnclInitComms: num_comm " + std::to_string(num_comm) + " < 1");
  if (nrank != num_comm)
    return fail(CNCL_RET_ERR_ARGUMENT, "cnclInitComms: nrank " + std::to_string(nrank) + " != num_comm " +
                                           std::to_string(num_comm) + " (every rank of a clique lives in this process)");
  unsigned dev_count = 0;
  if (cnrtRet_t e = cnrtGetDeviceCount(&dev_count); e != cnrtSuccess) return fail_cnrt("cnclInitComms: cnrtGetDeviceCount", e);
  std::vector<int> devices(static_cast<std::size_t>(nrank), -1);
  std::set<int> used_devices;
  for (int i = 0; i < num_comm; ++i) {
    const int d = dev_list[i], r = rank_list ? rank_list[i] : i;
    if (d < 0 || d >= static_cast<int>(dev_count))
      return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": dev_list[" + std::to_string(i) + "] = " + std::to_string(d) +
                                             " is not a device (" + std::to_string(dev_count) + " devices)");
    if (r < 0 || r >= nrank || devices[static_cast<std::size_t>(r)] != -1)
      return fail(CNCL_RET_ERR_INIT, std::string(fn) + ": rank_list[" + std::to_string(i) + "] = " + std::to_string(r) +
                                         (r < 0 || r >= nrank ? " is outside 0.." + std::to_string(nrank - 1) : " is given twice"));
    if (!used_devices.insert(d).second)
      return fail(CNCL_RET_ERR_INIT, std::string(fn) + ": device " + std::to_string(d) + " has two ranks (one rank per device)");
    devices[static_cast<std::size_t>(r)] = d;
  }
  std::lock_guard<std::mutex> lk(lock());
  std::string id;
  if (clique_id != nullptr) {
    id.assign(clique_id->data, sizeof clique_id->data);
    if (auto it = cliques_by_id().find(id); it != cliques_by_id().end() && !it->second.expired())
      return fail(CNCL_RET_ERR_INIT, "cnclInitComms: the clique of this id already exists");
  }
  mlusim::sim::HardwareConfig cfg;
  try {
    cfg = mlusim::driver::loaded_config();
  } catch (const std::exception& e) {
    return fail(CNCL_RET_ERR_SYSTEM, std::string("cnclInitComms: ") + e.what());
  }
  std::shared_ptr<Clique> clique;
  try {
    clique = std::make_shared<Clique>(devices, cfg.total_cores(), link_model(cfg));
  } catch (const std::runtime_error& e) {
    return fail(CNCL_RET_ERR_SYSTEM, std::string("cnclInitComms: ") + e.what());
  }
  if (!id.empty()) cliques_by_id()[id] = clique;
  for (int i = 0; i < num_comm; ++i) {
    auto* c = new cnclComm{clique, rank_list ? rank_list[i] : i};
    live_comms().insert(c);
    comms[i] = c;
  }
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclDestroyComms(cnclComm_t* comms, int num_comm) {
  if (comms == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclDestroyComms: comms is NULL");
  if (num_comm < 1) return fail(CNCL_RET_ERR_ARGUMENT, "cnclDestroyComms: num_comm " + std::to_string(num_comm) + " < 1");
  std::lock_guard<std::mutex> lk(lock());
  for (int i = 0; i < num_comm; ++i)
    if (live_comms().count(comms[i]) == 0)
      return fail(CNCL_RET_ERR_INVALID, "cnclDestroyComms: comms[" + std::to_string(i) + "] is not a live communicator");
  for (int i = 0; i < num_comm; ++i) {
    if (live_comms().erase(comms[i]) == 0) continue;  // listed twice
    comms[i]->clique->drop_rank(comms[i]->rank);
    delete comms[i];
  }
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGetCommRank(int* rank, cnclComm_t comm) {
  if (rank == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclGetCommRank: rank is NULL");
  std::lock_guard<std::mutex> lk(lock());
  CNCL_TRY(check_comm("cnclGetCommRank", comm));
  *rank = comm->rank;
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGetCommCount(int* count, cnclComm_t comm) {
  if (count == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclGetCommCount: count is NULL");
  std::lock_guard<std::mutex> lk(lock());
  CNCL_TRY(check_comm("cnclGetCommCount", comm));
  *count = comm->clique->ranks();
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGetCommDevice(int* dev, cnclComm_t comm) {
  if (dev == nullptr) return fail(CNCL_RET_ERR_NULL_POINTER, "cnclGetCommDevice: dev is NULL");
  std::lock_guard<std::mutex> lk(lock());
  CNCL_TRY(check_comm("cnclGetCommDevice", comm));
  *dev = comm->clique->device(comm->rank);
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclAllReduce(const void* sendbuff, void* recvbuff, size_t count, cnclDataType_t datatype,
                           cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kAllReduce, count, datatype, op, 0, {addr(sendbuff), addr(recvbuff)}, queue};
  return enqueue_collective("cnclAllReduce", c, count, count, true, true, comm);
}

cnclResult_t cnclBroadcast(const void* sendbuff, void* recvbuff, size_t count, cnclDataType_t datatype, int root,
                           cnclComm_t comm, cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kBroadcast, count, datatype, cnclSum, root, {addr(sendbuff), addr(recvbuff)}, queue};
  const bool is_root = comm_shape(comm).rank == root;
  return enqueue_collective("cnclBroadcast", c, count, count, is_root, true, comm);
}

cnclResult_t cnclReduce(const void* sendbuff, void* recvbuff, size_t count, cnclDataType_t datatype, cnclReduceOp_t op,
                        int root, cnclComm_t comm, cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kReduce, count, datatype, op, root, {addr(sendbuff), addr(recvbuff)}, queue};
  const bool is_root = comm_shape(comm).rank == root;
  return enqueue_collective("cnclReduce", c, count, count, true, is_root, comm);
}

cnclResult_t cnclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, cnclDataType_t datatype,
                           cnclComm_t comm, cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kAllGather, sendcount, datatype, cnclSum, 0, {addr(sendbuff), addr(recvbuff)}, queue};
  const std::size_t n = comm_shape(comm).ranks;
  return enqueue_collective("cnclAllGather", c, sendcount, sendcount * n, true, true, comm);
}

cnclResult_t cnclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, cnclDataType_t datatype,
                               cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kReduceScatter, recvcount, datatype, op, 0, {addr(sendbuff), addr(recvbuff)}, queue};
  const std::size_t n = comm_shape(comm).ranks;
  return enqueue_collective("cnclReduceScatter", c, recvcount * n, recvcount, true, true, comm);
}

cnclResult_t cnclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, cnclDataType_t datatype, cnclComm_t comm,
                          cnrtQueue_t queue) {
  CollectiveCall c{CollectiveKind::kAlltoAll, count, datatype, cnclSum, 0, {addr(sendbuff), addr(recvbuff)}, queue};
  const std::size_t n = comm_shape(comm).ranks;
  if (count > 0 && sendbuff == recvbuff && sendbuff != nullptr)
    return fail(CNCL_RET_ERR_ARGUMENT, "cnclAlltoAll: sendbuff and recvbuff must differ");
  return enqueue_collective("cnclAlltoAll", c, count * n, count * n, true, true, comm);
}

static cnclResult_t p2p(const char* fn, bool is_send, const void* buff, size_t count, cnclDataType_t datatype, int peer,
                        cnclComm_t comm, cnrtQueue_t queue) {
  const cnclResult_t checked = uncharged([&]() -> cnclResult_t {
    std::lock_guard<std::mutex> lk(lock());
    CNCL_TRY(check_comm(fn, comm));
    CNCL_TRY(check_dtype(fn, datatype));
    CNCL_TRY(check_rank_arg(fn, "peer", peer, comm));
    if (peer == comm->rank)
      return fail(CNCL_RET_ERR_ARGUMENT, std::string(fn) + ": peer " + std::to_string(peer) + " is the caller's own rank");
    CNCL_TRY(check_queue(fn, comm, queue));
    return check_buffer(fn, is_send ? "sendbuff" : "recvbuff", buff, count * dtype_bytes(datatype), comm);
  });
  if (checked != CNCL_RET_SUCCESS) return checked;
  std::shared_ptr<Clique> clique = comm->clique;
  const int rank = comm->rank;
  const P2PCall call{addr(buff), count, datatype, queue};
  return submit_or_defer([=] {
    return is_send ? clique->add_send(rank, peer, call) : clique->add_recv(rank, peer, call);
  });
}

cnclResult_t cnclSend(const void* sendbuff, size_t count, cnclDataType_t datatype, int peer, cnclComm_t comm,
                      cnrtQueue_t queue) {
  return p2p("cnclSend", true, sendbuff, count, datatype, peer, comm, queue);
}

cnclResult_t cnclRecv(void* recvbuff, size_t count, cnclDataType_t datatype, int peer, cnclComm_t comm,
                      cnrtQueue_t queue) {
  return p2p("cnclRecv", false, recvbuff, count, datatype, peer, comm, queue);
}

cnclResult_t cnclGroupStart(void) {
  ++group().depth;
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGroupEnd(void) {
  GroupState& g = group();
  if (g.depth == 0) return fail(CNCL_RET_ERR_INVALID, "cnclGroupEnd: no matching cnclGroupStart");
  if (--g.depth > 0) return CNCL_RET_SUCCESS;
  std::vector<std::function<cnclResult_t()>> work = std::move(g.deferred);
  g.deferred.clear();
  cnclResult_t first = CNCL_RET_SUCCESS;
  std::string first_detail;
  for (auto& w : work) {
    const cnclResult_t r = submit_or_defer(std::move(w));
    if (r != CNCL_RET_SUCCESS && first == CNCL_RET_SUCCESS) {
      first = r;
      first_detail = cnclGetLastErrorStr();
    }
  }
  if (first != CNCL_RET_SUCCESS) return fail(first, first_detail);
  return CNCL_RET_SUCCESS;
}

}  // extern "C"
