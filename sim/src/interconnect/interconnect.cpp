#include "interconnect/interconnect.h"

#include <stdexcept>

#include "mlusim/sim/sim_time.h"

namespace mlusim::sim::interconnect {

Interconnect::Interconnect(const HardwareConfig& cfg)
    : cfg_(cfg), topology_(topology_spec(cfg)), fabric_("interconnect") {
  for (const DirectedLink& l : topology_.links())
    link_res_.push_back(fabric_.add_resource("MLU-Link " + std::to_string(l.from) + "->" + std::to_string(l.to),
                                             cfg.mlu_link_bandwidth_gbps));
  if (topology_.hosts() > 1)
    for (unsigned c = 0; c < cfg.device_count; ++c) {
      nic_out_.push_back(fabric_.add_resource("NIC out mlu" + std::to_string(c), cfg.network_nic_bandwidth_gbps));
      nic_in_.push_back(fabric_.add_resource("NIC in mlu" + std::to_string(c), cfg.network_nic_bandwidth_gbps));
    }
}

bool Interconnect::reachable(unsigned from, unsigned to) const {
  const RouteKind k = topology_.route(from, to).kind;
  return k == RouteKind::kMluLink || k == RouteKind::kNetwork;
}

fabric::TransferRequest Interconnect::request(unsigned from, unsigned to, double bytes) const {
  const Route r = topology_.route(from, to);
  fabric::TransferRequest req;
  req.bytes = bytes;
  double latency_ns = cfg_.dram_latency_ns;
  if (r.kind == RouteKind::kMluLink) {
    for (std::size_t id : r.links) req.uses.push_back({link_res_[id], 1.0});
    latency_ns += static_cast<double>(r.links.size()) * cfg_.mlu_link_latency_ns;
  } else if (r.kind == RouteKind::kNetwork) {
    req.uses.push_back({nic_out_[from], 1.0});
    req.uses.push_back({nic_in_[to], 1.0});
    latency_ns += cfg_.network_nic_latency_ns;
  } else {
    throw std::logic_error("interconnect: mlu" + std::to_string(from) + " -> mlu" + std::to_string(to) +
                           " has no MLU-Link path or network route");
  }
  req.latency_ps = ceil_ps(latency_ns * 1000.0, "peer copy latency");
  return req;
}

std::shared_ptr<fabric::Transfer> Interconnect::start(unsigned from, unsigned to, double bytes,
                                                      std::function<void()> on_complete, std::string label) {
  fabric::TransferRequest req = request(from, to, bytes);
  req.on_complete = std::move(on_complete);
  req.label = std::move(label);
  return fabric_.start(std::move(req));
}

Picos Interconnect::uncontended_ps(unsigned from, unsigned to, double bytes) const {
  return fabric_.uncontended_ps(request(from, to, bytes));
}

}  // namespace mlusim::sim::interconnect
