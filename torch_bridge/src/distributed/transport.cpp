// The driver calls behind the "cncl" process group (ProcessGroupCNCL, process_group_cncl.h):
// untimed copies for the bytes that travel between rank processes over Gloo, the host clock, and a
// queue operation that ends at the simulated time the interconnect model gives. No torch headers.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/torch/api.h"

namespace mlusim::bridge {

namespace {

void check(cnrtRet_t r, const std::string& what) {
  if (r != cnrtSuccess)
    throw std::runtime_error(what + ": " + cnrtGetErrorName(r) + " (" + mlusimGetLastErrorMessage() + ")");
}

}  // namespace

void memcpy_untimed(std::uintptr_t dst, std::uintptr_t src, std::size_t bytes, bool to_device) {
  check(mlusimMemcpyNoTime(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                           to_device ? cnrtMemcpyHostToDev : cnrtMemcpyDevToHost),
        "mlusimMemcpyNoTime");
}

double host_time_ns() {
  double ns = 0;
  check(mlusimGetHostTime(&ns), "mlusimGetHostTime");
  return ns;
}

double notifier_peek_ns(std::uintptr_t notifier) {
  double ns = 0;
  check(mlusimNotifierPeek(reinterpret_cast<cnrtNotifier_t>(notifier), &ns), "mlusimNotifierPeek");
  return ns;
}

void host_advance(double ns) { check(mlusimHostAdvance(ns), "mlusimHostAdvance"); }

void queue_hold_until(int device, std::int64_t queue_id, double until_ns, const std::string& label) {
  if (!std::isfinite(until_ns)) throw std::invalid_argument("queue_hold_until: time must be finite");
  check(mlusimQueueWaitUntil(queue_handle(device, queue_id), std::max(until_ns, 0.0), label.c_str()),
        "mlusimQueueWaitUntil");
}

std::vector<std::pair<double, double>> kernel_spans(int device) {
  std::size_t n = 0;
  check(mlusimGetKernelRecordCount(device, &n), "mlusimGetKernelRecordCount");
  std::vector<std::pair<double, double>> spans;
  spans.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    mlusimKernelRecord_t r{};
    check(mlusimGetKernelRecord(device, i, &r), "mlusimGetKernelRecord");
    spans.emplace_back(r.start_ns, r.end_ns);
  }
  return spans;
}

InterconnectFigures interconnect_figures() {
  const sim::HardwareConfig c = driver::loaded_config();
  InterconnectFigures f;
  f.devices = static_cast<int>(c.device_count);
  f.mlu_link_gbps = c.mlu_link_bandwidth_gbps;
  f.mlu_link_latency_ns = c.mlu_link_latency_ns;
  f.host_link_gbps = c.host_link_bandwidth_gbps;
  f.host_link_latency_ns = c.host_link_latency_ns;
  f.dram_gbps = c.dram_bandwidth_gbps;
  f.dram_latency_ns = c.dram_latency_ns;
  f.launch_overhead_ns = c.launch_overhead_ns;
  f.mlu_link_topology = c.mlu_link_topology;
  f.chips_per_host = static_cast<int>(c.network_chips_per_host);
  f.nic_gbps = c.network_nic_bandwidth_gbps;
  f.nic_latency_ns = c.network_nic_latency_ns;
  f.config_name = c.name;
  return f;
}

}  // namespace mlusim::bridge
