// The collectives' time model of the "cncl" process group (formulas in collective_time_model.h).
#include "distributed/collective_time_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mlusim::bridge::cncl {

namespace {

struct Named {
  Collective op;
  const char* name;
};
constexpr Named kNames[] = {
    {Collective::kAllReduce, "all_reduce"}, {Collective::kReduceScatter, "reduce_scatter"},
    {Collective::kAllGather, "all_gather"}, {Collective::kBroadcast, "broadcast"},
    {Collective::kReduce, "reduce"},        {Collective::kAllToAll, "all_to_all"},
    {Collective::kSendRecv, "send_recv"},
};

}  // namespace

const char* collective_name(Collective op) {
  for (const Named& n : kNames)
    if (n.op == op) return n.name;
  throw std::invalid_argument("cncl: unknown collective kind " + std::to_string(static_cast<int>(op)));
}

Collective collective_from_name(std::string_view name) {
  for (const Named& n : kNames)
    if (name == n.name) return n.op;
  throw std::invalid_argument("cncl: no time model for '" + std::string(name) + "'");
}

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (const Named& n : kNames) names.emplace_back(n.name);
  return names;
}

ModelLink model_link(const InterconnectFigures& fig, int ranks) {
  ModelLink l;
  l.dram_gbps = fig.dram_gbps;
  if (ranks > fig.chips_per_host) {
    l.latency_ns = fig.nic_latency_ns + fig.dram_latency_ns;
    l.link_gbps = fig.nic_gbps;
  } else if (fig.mlu_link_gbps > 0 && (fig.mlu_link_topology == "full_mesh" || fig.mlu_link_topology == "ring")) {
    l.latency_ns = fig.mlu_link_latency_ns + fig.dram_latency_ns;
    l.link_gbps = fig.mlu_link_gbps;
  } else {
    // Through the host both ways: out of one chip's host link and into the other's.
    l.latency_ns = 2 * (fig.host_link_latency_ns + fig.dram_latency_ns);
    l.link_gbps = fig.host_link_gbps / 2;
  }
  return l;
}

double model_time_ns(Collective op, double bytes, int ranks, const InterconnectFigures& fig) {
  const double n = ranks;
  if (ranks <= 1) return 0.0;
  const ModelLink l = model_link(fig, ranks);
  if (!(l.link_gbps > 0) || !(l.dram_gbps > 0))
    throw std::invalid_argument("cncl: the time model needs a positive link and DRAM bandwidth (config " +
                                fig.config_name + ")");
  const double a = l.latency_ns, s = bytes;
  const double per_link = 1 / l.link_gbps;                           // ns per byte over the link
  const double per_reduced = std::max(per_link, 3 / l.dram_gbps);     // ns per byte received and reduced
  const double steps = n - 1;
  switch (op) {
    case Collective::kAllReduce: {
      const double ring = 2 * steps * a + steps * (s / n) * per_reduced + steps * (s / n) * per_link;
      const double levels = std::ceil(std::log2(n));
      const double tree = 2 * levels * (a + s * per_reduced);
      const double ring_link_only = 2 * steps * (a + s / n * per_link);
      const double tree_link_only = 2 * levels * (a + s * per_link);
      return ring_link_only < tree_link_only ? ring : tree;
    }
    case Collective::kReduceScatter:
      return steps * (a + (s / n) * per_reduced);
    case Collective::kAllGather:
      return steps * (a + (s / n) * per_link);
    case Collective::kBroadcast:
      return (2 * n - 2) * (a + (s / n) * per_link);
    case Collective::kReduce:
      return steps * (a + (s / n) * per_reduced) + steps * (a + (s / n) * per_link);
    case Collective::kAllToAll:
      return a + steps * (s / n) * per_link;
    case Collective::kSendRecv:
      return a + s * per_link;
  }
  throw std::invalid_argument("cncl: no time model for collective kind " + std::to_string(static_cast<int>(op)));
}

double bus_factor(Collective op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  throw std::invalid_argument("cncl: no bus factor for collective kind " + std::to_string(static_cast<int>(op)));
}

}  // namespace mlusim::bridge::cncl
