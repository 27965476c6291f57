// Which chips are joined by MLU-Link and how a copy between two chips is routed.
//
// Scope: the chips of one simulated system (config `devices`), grouped into hosts of
// `network.chips_per_host` consecutive chips. Within a host, chips are joined by bidirectional
// MLU-Link links, each direction a separate resource of `mlu_link.bandwidth_gbps`:
//   none       no links (peer copies go through the host link, as before MLU-Link existed)
//   full_mesh  a link between every pair of chips of a host
//   ring       chip i - chip i+1 of its host, and the last back to the first (two chips: one link)
//   explicit   the pairs listed in `mlu_link.links` ("0-1,1-2"), chips of one host only
// A chip's links may not exceed `mlu_link.ports`. A copy between chips of one host follows the
// shortest path in hops (ties: the path through the lowest-numbered next chip, so routes are
// deterministic) and streams through every hop at once (cut-through: the intermediate chips
// forward, they do not store the whole copy); it pays the link latency once per hop. Chips of one
// host with no path, or of different hosts, use the scale-out network: the sender's NIC out and
// the receiver's NIC in (`network.nic_bandwidth_gbps`, `network.nic_latency_ns`); a host without
// MLU-Link links between two of its chips sends through the host link instead (staged, as before).
// Pure logic: no SystemC, no timing (interconnect.h turns routes into fabric transfers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlusim/sim/config.h"

namespace mlusim::sim {

enum class TopologyKind { kNone, kFullMesh, kRing, kExplicit };

// Parses "none" | "full_mesh" | "ring" | "explicit"; nullopt for anything else.
std::optional<TopologyKind> parse_topology(const std::string& text);
const char* topology_name(TopologyKind kind);

struct TopologySpec {
  unsigned chips = 1;
  unsigned chips_per_host = 1;  // 0 is not allowed; chips need not be a multiple (the last host has fewer)
  TopologyKind kind = TopologyKind::kNone;
  unsigned ports = 0;           // links per chip at most
  std::string links;            // explicit: "a-b,c-d" (whitespace allowed)
};

// One direction of one link: `from` sends to `to`.
struct DirectedLink {
  unsigned from = 0, to = 0;
};

enum class RouteKind { kSelf, kMluLink, kNetwork, kHost };

struct Route {
  RouteKind kind = RouteKind::kSelf;
  std::vector<std::size_t> links;  // kMluLink: directed link ids (Topology::links()), in hop order
};

// The topology a config describes: mlu_link.topology/ports/links and network.chips_per_host, with
// no links at all when mlu_link.bandwidth_gbps is 0 (the chips have no MLU-Link) and "none" in
// mlu_link.links meaning no list. Throws std::invalid_argument for an unknown topology name.
TopologySpec topology_spec(const HardwareConfig& cfg);

class Topology {
 public:
  // Throws std::invalid_argument naming the problem (bad pair, chip out of range, a pair across
  // hosts, a duplicate, a chip over its ports, links given without `explicit`).
  explicit Topology(const TopologySpec& spec);

  const TopologySpec& spec() const { return spec_; }
  unsigned host_of(unsigned chip) const { return chip / spec_.chips_per_host; }
  unsigned hosts() const { return (spec_.chips + spec_.chips_per_host - 1) / spec_.chips_per_host; }
  // Both directions of every link: ids 2k (a -> b) and 2k + 1 (b -> a) for the k-th pair a < b.
  const std::vector<DirectedLink>& links() const { return links_; }
  std::vector<std::pair<unsigned, unsigned>> pairs() const;  // a < b, in id order
  unsigned degree(unsigned chip) const;
  Route route(unsigned from, unsigned to) const;  // from, to < chips

 private:
  void add_pair(unsigned a, unsigned b);
  TopologySpec spec_;
  std::vector<DirectedLink> links_;
  std::vector<std::vector<std::pair<unsigned, std::size_t>>> out_;  // per chip: (neighbour, link id), by neighbour
  std::vector<std::vector<Route>> routes_;                           // [from][to]
};

}  // namespace mlusim::sim
