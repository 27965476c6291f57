// ProcessGroupCNCL: the "cncl" torch.distributed backend (see process_group_cncl.h).
#include "distributed/process_group_cncl.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "distributed/work_cncl.h"

namespace mlusim::bridge::cncl {

namespace {

constexpr c10::DeviceType kMlu = c10::DeviceType::PrivateUse1;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The bytes of device tensor `t` in a new host tensor, copied without simulated time (the
// collective's time comes from the model).
at::Tensor to_host(const at::Tensor& t) {
  at::Tensor host = at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()));
  if (t.numel()) memcpy_untimed(address(host.data_ptr()), address(t.data_ptr()), t.nbytes(), false);
  return host;
}

// An empty host tensor shaped like device tensor `t`, for Gloo to fill.
at::Tensor host_like(const at::Tensor& t) { return at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type())); }

// Host tensor `host` (at least t's bytes) into device tensor `t`, without simulated time.
void to_device(const at::Tensor& host, const at::Tensor& t) {
  if (t.numel()) memcpy_untimed(address(t.data_ptr()), address(host.data_ptr()), t.nbytes(), true);
}

bool all_on_cpu(const std::vector<at::Tensor>& tensors) {
  return std::all_of(tensors.begin(), tensors.end(), [](const at::Tensor& t) { return t.device().is_cpu(); });
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

std::uint64_t bytes_of(const std::vector<at::Tensor>& tensors) {
  std::uint64_t n = 0;
  for (const at::Tensor& t : tensors) n += t.nbytes();
  return n;
}

const char* reduce_op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    case c10d::ReduceOp::UNUSED: break;
  }
  return "UNUSED";
}

std::string list_text(const std::vector<double>& values) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < values.size(); ++i) s << (i ? ", " : "") << values[i];
  s << ']';
  return s.str();
}

// A notifier of the driver API that is destroyed on every path.
struct Marker {
  explicit Marker(int device) : handle(notifier_create(device, false)) {}
  ~Marker() { notifier_destroy(handle); }
  Marker(const Marker&) = delete;
  Marker& operator=(const Marker&) = delete;
  std::uintptr_t handle;
};

}  // namespace

ProcessGroupCNCL::ProcessGroupCNCL(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      transport_(std::move(transport)),
      options_(c10::make_intrusive<Options>(kBackendName, timeout)),
      fig_(interconnect_figures()) {
  TORCH_CHECK(transport_, "cncl: the process group needs a transport backend (Gloo), got none");
  check_same_system();
  TORCH_CHECK(fig_.nic_gbps > 0 || size <= fig_.chips_per_host, "cncl: ", size, " ranks need ", size,
              " chips, more than one host of ", fig_.chips_per_host, " chips and config ", fig_.config_name,
              " has no network (network.nic_bandwidth_gbps)");
  init();
}

ProcessGroupCNCL::~ProcessGroupCNCL() = default;

void ProcessGroupCNCL::check_same_system() {
  const std::vector<double> mine_values = {fig_.mlu_link_gbps, fig_.mlu_link_latency_ns,
                                           fig_.dram_gbps,     fig_.host_link_gbps,
                                           static_cast<double>(fig_.chips_per_host), fig_.nic_gbps};
  at::Tensor mine = at::tensor(mine_values, at::TensorOptions().dtype(at::kDouble));
  std::vector<std::vector<at::Tensor>> everyone(1);
  for (int r = 0; r < size_; ++r) everyone[0].push_back(at::empty_like(mine));
  std::vector<at::Tensor> inputs = {mine};
  transport_->allgather(everyone, inputs)->wait();
  for (int r = 0; r < size_; ++r) {
    const at::Tensor& other = everyone[0][r];
    if (at::equal(other, mine)) continue;
    const double* p = other.data_ptr<double>();
    TORCH_CHECK(false, "cncl: rank ", r, " simulates a different interconnect (mlu_link_gbps, ",
                "mlu_link_latency_ns, dram_gbps, host_link_gbps, chips_per_host, nic_gbps = ",
                list_text(std::vector<double>(p, p + other.numel())), ") than rank ", rank_, " (",
                list_text(mine_values), "); load the same config on every rank");
  }
}

uint64_t ProcessGroupCNCL::getSequenceNumberForGroup() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return sequence_;
}

std::vector<CollectiveRecord> ProcessGroupCNCL::collectives() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return collectives_;
}

void ProcessGroupCNCL::clear_collectives() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  collectives_.clear();
}

double ProcessGroupCNCL::comm_ns() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return comm_ns_;
}

// ---- the common path ----------------------------------------------------------------------------

c10::Device ProcessGroupCNCL::device_of(const std::vector<at::Tensor>& tensors, const char* what) const {
  std::set<std::string> names;
  for (const at::Tensor& t : tensors) names.insert(t.device().str());
  const bool one_mlu = names.size() == 1 && tensors.front().device().type() == kMlu;
  if (!one_mlu) {
    std::string got;
    for (const std::string& n : names) got += (got.empty() ? "'" : ", '") + n + "'";
    C10_THROW_ERROR(ValueError, c10::str("cncl ", what, ": tensors must all be on one mlu device, got [", got, "]"));
  }
  for (const at::Tensor& t : tensors)
    TORCH_CHECK_VALUE(t.is_contiguous(), "cncl ", what, ": tensors must be contiguous (got one of shape ",
                      t.sizes(), " with strides ", t.strides(), ")");
  return tensors.front().device();
}

std::string ProcessGroupCNCL::reduce_op(const c10d::ReduceOp& op, const char* what) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return "sum";
    case c10d::ReduceOp::PRODUCT: return "product";
    case c10d::ReduceOp::MAX: return "max";
    case c10d::ReduceOp::MIN: return "min";
    case c10d::ReduceOp::AVG: return "avg";
    default: break;
  }
  C10_THROW_ERROR(ValueError, c10::str("cncl ", what, ": reduce op ", reduce_op_name(op.op_),
                                       " is not supported (SUM, PRODUCT, MAX, MIN and AVG are)"));
}

// This rank's arrival: the simulated time its current stream reaches the collective, or the host's
// time after the launch cost if later. Found by running the simulation ahead (mlusimNotifierPeek):
// the host does not wait, so it goes on queuing work (backward kernels) that overlaps the
// collective, as with a real device. The device's data is then final up to the collective.
double ProcessGroupCNCL::arrive(const c10::Device& device) const {
  host_advance(fig_.launch_overhead_ns);
  const int index = device.index();
  Marker marker(index);
  notifier_record(marker.handle, index, current_queue_id(index));
  return std::max(notifier_peek_ns(marker.handle), host_time_ns());
}

c10::Stream ProcessGroupCNCL::group_stream(const c10::Device& device) {
  auto it = streams_.find(device.index());
  if (it == streams_.end()) it = streams_.emplace(device.index(), next_pool_queue_id(device.index())).first;
  return c10::Stream(c10::Stream::UNSAFE, device, it->second);
}

// Everyone's arrivals -> the end time (the same on every rank); then hold().
c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::finish(Collective op, c10d::OpType type, std::uint64_t bytes,
                                                        double arrival, const c10::Device& device,
                                                        std::vector<at::Tensor> result) {
  at::Tensor mine = at::full({1}, arrival, at::TensorOptions().dtype(at::kDouble));
  at::Tensor everyone = at::empty({size_}, at::TensorOptions().dtype(at::kDouble));
  transport_->all_gather_single(everyone, mine)->wait();
  const double* all = everyone.data_ptr<double>();
  const double end = *std::max_element(all, all + size_) + model_time_ns(op, static_cast<double>(bytes), size_, fig_);
  return hold(op, type, bytes, arrival, end, device, std::move(result));
}

// The group's stream waits for the caller's current stream, then holds until `end`; the Work (and
// its future) complete there; the result's memory stays in use until then.
c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::hold(Collective op, c10d::OpType type, std::uint64_t bytes,
                                                      double arrival, double end, const c10::Device& device,
                                                      std::vector<at::Tensor> result) {
  const c10::impl::VirtualGuardImpl impl(kMlu);
  const c10::Stream group = group_stream(device);
  c10::Event produced(kMlu);
  produced.record(impl.getStream(device));
  produced.block(group);
  // Named like the driver's copies ("memcpy HtoD 4096 B ..."): the collective's span in traces.
  queue_hold_until(device.index(), group.id(), end, std::string("cncl ") + collective_name(op) + " " + std::to_string(bytes) + " B");
  for (const at::Tensor& t : result)
    if (t.device().type() == kMlu) impl.recordDataPtrOnStream(t.storage().data_ptr(), group);
  comm_ns_ += end - arrival;
  collectives_.push_back({collective_name(op), bytes, arrival, end});
  ++sequence_;
  return c10::make_intrusive<WorkCNCL>(rank_, type, std::move(result), group);
}

void ProcessGroupCNCL::host_all_reduce(std::vector<at::Tensor>& hosts, const c10d::ReduceOp& op,
                                       const std::string& name) {
  c10d::AllreduceOptions gloo;
  gloo.reduceOp = name == "avg" ? c10d::ReduceOp(c10d::ReduceOp::SUM) : op;
  // One Gloo all-reduce per tensor: given a list, Gloo reduces the list's tensors into each other
  // (one tensor per device, and all of one shape); allreduce_coalesced's tensors are independent.
  for (at::Tensor& h : hosts) {
    std::vector<at::Tensor> one = {h};
    transport_->allreduce(one, gloo)->wait();
    if (name == "avg") h.div_(size_);
  }
}

void ProcessGroupCNCL::reduce_scatter_host(at::Tensor& host_out, at::Tensor host_in, const c10d::ReduceOp& op,
                                           const std::string& name) {
  std::vector<at::Tensor> hosts = {host_in};
  host_all_reduce(hosts, op, name);
  const int64_t block = host_out.numel();
  host_out.copy_(host_in.slice(0, rank_ * block, (rank_ + 1) * block));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::coalesced(std::vector<c10::intrusive_ptr<c10d::Work>> works,
                                                           std::vector<at::Tensor> outputs) {
  if (!works.empty()) return works.back();
  // Nothing to do: a Work complete on the caller's current stream.
  const c10::Device device(kMlu, static_cast<c10::DeviceIndex>(current_device()));
  return c10::make_intrusive<WorkCNCL>(rank_, c10d::OpType::COALESCED, std::move(outputs),
                                       c10::impl::VirtualGuardImpl(kMlu).getStream(device));
}

// ---- collectives --------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  if (all_on_cpu(tensors)) return transport_->allreduce(tensors, opts);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(tensors, "all_reduce");
  const std::string op = reduce_op(opts.reduceOp, "all_reduce");
  const double arrival = arrive(device);
  std::vector<at::Tensor> hosts;
  for (const at::Tensor& t : tensors) hosts.push_back(to_host(t));
  host_all_reduce(hosts, opts.reduceOp, op);
  for (std::size_t i = 0; i < tensors.size(); ++i) to_device(hosts[i], tensors[i]);
  return finish(Collective::kAllReduce, c10d::OpType::ALLREDUCE, bytes_of(tensors), arrival, device, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  return allreduce(tensors, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  if (all_on_cpu(tensors)) return transport_->broadcast(tensors, opts);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(tensors, "broadcast");
  const double arrival = arrive(device);
  std::vector<at::Tensor> hosts;
  for (const at::Tensor& t : tensors) hosts.push_back(to_host(t));
  c10d::BroadcastOptions gloo;
  gloo.rootRank = opts.rootRank;
  gloo.rootTensor = opts.rootTensor;
  transport_->broadcast(hosts, gloo)->wait();
  for (std::size_t i = 0; i < tensors.size(); ++i) to_device(hosts[i], tensors[i]);
  return finish(Collective::kBroadcast, c10d::OpType::BROADCAST, bytes_of(tensors), arrival, device, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  if (all_on_cpu(tensors)) return transport_->reduce(tensors, opts);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(tensors, "reduce");
  TORCH_CHECK_VALUE(reduce_op(opts.reduceOp, "reduce") != "avg",
                    "cncl reduce: reduce op AVG is not supported (Gloo's reduce, the transport, has none)");
  const double arrival = arrive(device);
  std::vector<at::Tensor> hosts;
  for (const at::Tensor& t : tensors) hosts.push_back(to_host(t));
  c10d::ReduceOptions gloo;
  gloo.reduceOp = opts.reduceOp;
  gloo.rootRank = opts.rootRank;
  gloo.rootTensor = opts.rootTensor;
  transport_->reduce(hosts, gloo)->wait();
  if (rank_ == opts.rootRank)
    for (std::size_t i = 0; i < tensors.size(); ++i) to_device(hosts[i], tensors[i]);
  // A chain toward the root (the C library's schedule) costs what the broadcast chain does, with
  // the reduction's DRAM term on every hop: modelled as a reduce-scatter of the whole buffer
  // followed by a gather of it, the ring's upper bound.
  return finish(Collective::kReduce, c10d::OpType::REDUCE, bytes_of(tensors), arrival, device, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> all = inputs;
  std::vector<at::Tensor> outs = flatten(outputs);
  all.insert(all.end(), outs.begin(), outs.end());
  if (all_on_cpu(all)) return transport_->allgather(outputs, inputs, opts);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(all, "all_gather");
  const double arrival = arrive(device);
  std::vector<at::Tensor> host_in;
  for (const at::Tensor& t : inputs) host_in.push_back(to_host(t));
  std::vector<std::vector<at::Tensor>> host_out(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (const at::Tensor& t : outputs[i]) host_out[i].push_back(host_like(t));
  transport_->allgather(host_out, host_in)->wait();
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = 0; j < outputs[i].size(); ++j) to_device(host_out[i][j], outputs[i][j]);
  return finish(Collective::kAllGather, c10d::OpType::ALLGATHER, bytes_of(outs), arrival, device, outs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::all_gather_single(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions& opts) {
  if (all_on_cpu({output, input})) return transport_->all_gather_single(output, input, opts);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of({output, input}, "all_gather_into_tensor");
  TORCH_CHECK_VALUE(output.numel() == size_ * input.numel(), "cncl all_gather_into_tensor: output has ",
                    output.numel(), " elements, expected ", size_, " ranks x ", input.numel());
  const double arrival = arrive(device);
  // Flat buffers, as NCCL takes them (SyncBatchNorm gathers a [C] vector into a [1, W*C] one).
  at::Tensor host_out = at::empty({output.numel()}, at::TensorOptions().dtype(output.scalar_type()));
  at::Tensor host_in = to_host(input).reshape(-1);
  transport_->all_gather_single(host_out, host_in)->wait();
  to_device(host_out, output);
  return finish(Collective::kAllGather, c10d::OpType::_ALLGATHER_BASE, output.nbytes(), arrival, device, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::all_gather_single_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "cncl all_gather_into_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (std::size_t i = 0; i < outputs.size(); ++i) works.push_back(all_gather_single(outputs[i], inputs[i], opts));
  return coalesced(std::move(works), outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "cncl reduce_scatter: ", outputs.size(), " outputs for ",
                    inputs.size(), " input lists");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<at::Tensor> ins = flatten(inputs);
  std::vector<at::Tensor> all = outputs;
  all.insert(all.end(), ins.begin(), ins.end());
  const c10::Device device = device_of(all, "reduce_scatter");
  const std::string op = reduce_op(opts.reduceOp, "reduce_scatter");
  const double arrival = arrive(device);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : inputs[i]) flat.push_back(to_host(t).reshape(-1));
    at::Tensor host_out = at::empty({outputs[i].numel()}, at::TensorOptions().dtype(outputs[i].scalar_type()));
    reduce_scatter_host(host_out, at::cat(flat), opts.reduceOp, op);
    to_device(host_out, outputs[i]);
  }
  return finish(Collective::kReduceScatter, c10d::OpType::REDUCE_SCATTER, bytes_of(ins), arrival, device, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce_scatter_single(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of({output, input}, "reduce_scatter_tensor");
  const std::string op = reduce_op(opts.reduceOp, "reduce_scatter_tensor");
  TORCH_CHECK_VALUE(input.numel() == size_ * output.numel(), "cncl reduce_scatter_tensor: input has ",
                    input.numel(), " elements, expected ", size_, " ranks x ", output.numel());
  const double arrival = arrive(device);
  at::Tensor host_out = at::empty({output.numel()}, at::TensorOptions().dtype(output.scalar_type()));
  reduce_scatter_host(host_out, to_host(input).reshape(-1), opts.reduceOp, op);
  to_device(host_out, output);
  return finish(Collective::kReduceScatter, c10d::OpType::_REDUCE_SCATTER_BASE, input.nbytes(), arrival, device,
                {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce_scatter_single_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "cncl reduce_scatter_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (std::size_t i = 0; i < outputs.size(); ++i) works.push_back(reduce_scatter_single(outputs[i], inputs[i], opts));
  return coalesced(std::move(works), outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& output_split_sizes,
                                                                   std::vector<int64_t>& input_split_sizes,
                                                                   const c10d::AllToAllOptions& /*opts*/) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of({output, input}, "all_to_all_single");
  const double arrival = arrive(device);
  at::Tensor host_out = host_like(output);
  at::Tensor host_in = to_host(input);
  transport_->all_to_all_single(host_out, host_in, output_split_sizes, input_split_sizes)->wait();
  to_device(host_out, output);
  return finish(Collective::kAllToAll, c10d::OpType::ALLTOALL_BASE, input.nbytes(), arrival, device, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::barrier(const c10d::BarrierOptions& /*opts*/) {
  // A one-float all-reduce on the current device's current stream.
  const c10::Device device(kMlu, static_cast<c10::DeviceIndex>(current_device()));
  std::vector<at::Tensor> token = {at::zeros({1}, at::TensorOptions().device(device).dtype(at::kFloat))};
  return allreduce(token, c10d::AllreduceOptions());
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  if (all_on_cpu(tensors)) return transport_->send(tensors, dst_rank, tag);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(tensors, "send");
  const double arrival = arrive(device);
  std::vector<at::Tensor> hosts;
  for (const at::Tensor& t : tensors) hosts.push_back(to_host(t));
  transport_->send(hosts, dst_rank, tag)->wait();
  // The receiver's end time needs the sender's arrival: it travels after the data.
  std::vector<at::Tensor> sent = {at::full({1}, arrival, at::TensorOptions().dtype(at::kDouble))};
  transport_->send(sent, dst_rank, tag)->wait();
  const std::uint64_t bytes = bytes_of(tensors);
  const double end = arrival + model_time_ns(Collective::kSendRecv, static_cast<double>(bytes), 2, fig_);
  return hold(Collective::kSendRecv, c10d::OpType::SEND, bytes, arrival, end, device, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  if (all_on_cpu(tensors)) return transport_->recv(tensors, src_rank, tag);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const c10::Device device = device_of(tensors, "recv");
  const double arrival = arrive(device);
  std::vector<at::Tensor> hosts;
  for (const at::Tensor& t : tensors) hosts.push_back(host_like(t));
  transport_->recv(hosts, src_rank, tag)->wait();
  std::vector<at::Tensor> sent = {at::empty({1}, at::TensorOptions().dtype(at::kDouble))};
  transport_->recv(sent, src_rank, tag)->wait();
  for (std::size_t i = 0; i < tensors.size(); ++i) to_device(hosts[i], tensors[i]);
  const std::uint64_t bytes = bytes_of(tensors);
  const double start = std::max(arrival, sent[0].data_ptr<double>()[0]);
  const double end = start + model_time_ns(Collective::kSendRecv, static_cast<double>(bytes), 2, fig_);
  return hold(Collective::kSendRecv, c10d::OpType::RECV, bytes, arrival, end, device, tensors);
}

}  // namespace mlusim::bridge::cncl
