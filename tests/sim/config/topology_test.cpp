// Topologies and routes (sim/src/interconnect/topology.h): which links exist, the shortest,
// deterministic paths, the network between hosts, and the errors that name the bad entry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "config/topology.h"

namespace mlusim::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Pair = std::pair<unsigned, unsigned>;

TopologySpec spec(unsigned chips, TopologyKind kind, unsigned ports, unsigned per_host = 64, std::string links = "") {
  TopologySpec s;
  s.chips = chips;
  s.chips_per_host = per_host;
  s.kind = kind;
  s.ports = ports;
  s.links = std::move(links);
  return s;
}

// The chips a route passes, from the sender to the receiver.
std::vector<unsigned> hops(const Topology& t, unsigned from, unsigned to) {
  std::vector<unsigned> chips{from};
  for (std::size_t id : t.route(from, to).links) chips.push_back(t.links()[id].to);
  return chips;
}

TEST(Topology, FullMeshIsOneHopEverywhere) {
  const Topology t(spec(4, TopologyKind::kFullMesh, 3));
  EXPECT_EQ(t.pairs().size(), 6u);
  for (unsigned a = 0; a < 4; ++a)
    for (unsigned b = 0; b < 4; ++b) {
      if (a == b) {
        EXPECT_EQ(t.route(a, b).kind, RouteKind::kSelf);
        continue;
      }
      EXPECT_EQ(t.route(a, b).kind, RouteKind::kMluLink);
      EXPECT_THAT(hops(t, a, b), ElementsAre(a, b));
    }
}

TEST(Topology, RingRoutesTheShortWayAndBreaksTiesLow) {
  const Topology t(spec(6, TopologyKind::kRing, 2));
  EXPECT_THAT(t.pairs(), ElementsAre(Pair{0, 1}, Pair{1, 2}, Pair{2, 3}, Pair{3, 4}, Pair{4, 5}, Pair{0, 5}));
  EXPECT_THAT(hops(t, 0, 2), ElementsAre(0u, 1u, 2u));
  EXPECT_THAT(hops(t, 0, 4), ElementsAre(0u, 5u, 4u));
  EXPECT_THAT(hops(t, 0, 3), ElementsAre(0u, 1u, 2u, 3u)) << "three hops either way: through chip 1 (lower than 5)";
  // Each direction of a link is its own resource.
  EXPECT_NE(t.route(0, 1).links[0], t.route(1, 0).links[0]);
  // Two chips: one link, not two.
  EXPECT_EQ(Topology(spec(2, TopologyKind::kRing, 1)).pairs().size(), 1u);
}

TEST(Topology, HostsAreJoinedByTheNetwork) {
  // Two hosts of four chips in a full mesh each.
  const Topology t(spec(8, TopologyKind::kFullMesh, 3, 4));
  EXPECT_EQ(t.hosts(), 2u);
  EXPECT_EQ(t.pairs().size(), 12u);
  EXPECT_EQ(t.route(1, 2).kind, RouteKind::kMluLink);
  EXPECT_EQ(t.route(3, 4).kind, RouteKind::kNetwork);
  EXPECT_TRUE(t.route(3, 4).links.empty());
  // No links at all: through the host within a host, the network across hosts.
  const Topology none(spec(4, TopologyKind::kNone, 0, 2));
  EXPECT_EQ(none.route(0, 1).kind, RouteKind::kHost);
  EXPECT_EQ(none.route(0, 2).kind, RouteKind::kNetwork);
}

TEST(Topology, ExplicitLinks) {
  const Topology t(spec(4, TopologyKind::kExplicit, 2, 64, " 0-1, 1-2 ,2-3"));
  EXPECT_THAT(t.pairs(), ElementsAre(Pair{0, 1}, Pair{1, 2}, Pair{2, 3}));
  EXPECT_THAT(hops(t, 3, 0), ElementsAre(3u, 2u, 1u, 0u));
  const Topology island(spec(4, TopologyKind::kExplicit, 1, 64, "0-1"));
  EXPECT_EQ(island.route(0, 3).kind, RouteKind::kHost) << "no path within the host: through the host link";
}

TEST(Topology, ErrorsNameTheEntry) {
  const auto error = [](const TopologySpec& s) {
    try {
      Topology t(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(spec(4, TopologyKind::kFullMesh, 2)), HasSubstr("mlu_link.ports: chip 0 has 3 links"));
  EXPECT_THAT(error(spec(4, TopologyKind::kExplicit, 2, 64, "0-1,x-2")), HasSubstr("'x-2' is not a pair"));
  EXPECT_THAT(error(spec(4, TopologyKind::kExplicit, 2, 64, "0-7")), HasSubstr("beyond the 4"));
  EXPECT_THAT(error(spec(4, TopologyKind::kExplicit, 2, 64, "1-1")), HasSubstr("to itself"));
  EXPECT_THAT(error(spec(4, TopologyKind::kExplicit, 2, 64, "0-1,1-0")), HasSubstr("listed twice"));
  EXPECT_THAT(error(spec(4, TopologyKind::kExplicit, 2, 2, "1-2")), HasSubstr("different hosts"));
  EXPECT_THAT(error(spec(4, TopologyKind::kRing, 2, 64, "0-1")), HasSubstr("only read with mlu_link.topology: explicit"));
  EXPECT_THAT(error(spec(4, TopologyKind::kRing, 2, 0)), HasSubstr("chips_per_host must be at least 1"));
  EXPECT_EQ(parse_topology("mesh"), std::nullopt);
  EXPECT_EQ(parse_topology("ring"), TopologyKind::kRing);
}

}  // namespace
}  // namespace mlusim::sim
