// The links between chips as shared bandwidth: every peer copy of the system is a transfer in one
// fabric (fabric/bandwidth_fabric.h) whose resources are the directions of the MLU-Link links and
// each chip's network port (out and in), so concurrent copies that share a link or a port share
// its bandwidth max-min fairly, whichever chips issued them.
//
// Cost of a copy of S bytes from chip a to chip b (uncontended; topology.h routes it):
//   MLU-Link, h hops:  h x mlu_link.latency_ns + dram.latency_ns + S / mlu_link.bandwidth_gbps
//   network:           network.nic_latency_ns + dram.latency_ns + S / network.nic_bandwidth_gbps
//                      (through a's NIC out and b's NIC in)
// Not modelled: the DRAM reads and writes at both ends (links and NICs are slower than a chip's
// DRAM in every preset), switch buffering, packet headers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric/bandwidth_fabric.h"
#include "config/topology.h"
#include "mlusim/sim/config.h"

namespace mlusim::sim::interconnect {

class Interconnect {
 public:
  explicit Interconnect(const HardwareConfig& cfg);

  const Topology& topology() const { return topology_; }
  // A copy from chip `from` to chip `to` can use the interconnect (MLU-Link path or network).
  bool reachable(unsigned from, unsigned to) const;
  // Starts a copy now; on_complete runs in the fabric thread at its end. Precondition: reachable.
  std::shared_ptr<fabric::Transfer> start(unsigned from, unsigned to, double bytes, std::function<void()> on_complete,
                                          std::string label);
  // Its uncontended time, ps (the formula above).
  Picos uncontended_ps(unsigned from, unsigned to, double bytes) const;
  const fabric::BandwidthFabric& fabric() const { return fabric_; }
  fabric::BandwidthFabric& fabric() { return fabric_; }

 private:
  fabric::TransferRequest request(unsigned from, unsigned to, double bytes) const;
  HardwareConfig cfg_;
  Topology topology_;
  fabric::BandwidthFabric fabric_;
  std::vector<fabric::ResourceId> link_res_;            // per directed link
  std::vector<fabric::ResourceId> nic_out_, nic_in_;    // per chip (when the system has several hosts)
};

}  // namespace mlusim::sim::interconnect
