#include "config/topology.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <sstream>
#include <stdexcept>

namespace mlusim::sim {

std::optional<TopologyKind> parse_topology(const std::string& text) {
  if (text == "none") return TopologyKind::kNone;
  if (text == "full_mesh") return TopologyKind::kFullMesh;
  if (text == "ring") return TopologyKind::kRing;
  if (text == "explicit") return TopologyKind::kExplicit;
  return std::nullopt;
}

const char* topology_name(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kNone: return "none";
    case TopologyKind::kFullMesh: return "full_mesh";
    case TopologyKind::kRing: return "ring";
    case TopologyKind::kExplicit: return "explicit";
  }
  return "?";
}

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

std::string without_spaces(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }), s.end());
  return s;
}

// "0-1, 1-2" -> pairs; throws naming the entry that is not "<chip>-<chip>".
std::vector<std::pair<unsigned, unsigned>> parse_pairs(const std::string& text) {
  std::vector<std::pair<unsigned, unsigned>> out;
  std::stringstream all(text);
  std::string item;
  while (std::getline(all, item, ',')) {
    item = without_spaces(item);
    if (item.empty()) continue;
    const std::size_t dash = item.find('-');
    const auto is_number = [](const std::string& s) {
      return !s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    if (dash == std::string::npos || !is_number(item.substr(0, dash)) || !is_number(item.substr(dash + 1)))
      bad("mlu_link.links: '" + item + "' is not a pair of chips like 0-1");
    out.emplace_back(static_cast<unsigned>(std::stoul(item.substr(0, dash))),
                     static_cast<unsigned>(std::stoul(item.substr(dash + 1))));
  }
  return out;
}

}  // namespace

TopologySpec topology_spec(const HardwareConfig& cfg) {
  TopologySpec s;
  s.chips = cfg.device_count;
  s.chips_per_host = cfg.network_chips_per_host;
  const auto kind = parse_topology(cfg.mlu_link_topology);
  if (!kind)
    bad("mlu_link.topology: '" + cfg.mlu_link_topology + "' is not none, full_mesh, ring or explicit");
  s.kind = cfg.mlu_link_bandwidth_gbps > 0 ? *kind : TopologyKind::kNone;
  s.ports = cfg.mlu_link_ports;
  s.links = cfg.mlu_link_links == "none" || s.kind != TopologyKind::kExplicit ? std::string() : cfg.mlu_link_links;
  if (cfg.mlu_link_links != "none" && *kind != TopologyKind::kExplicit)
    bad("mlu_link.links is only read with mlu_link.topology: explicit (topology is " + cfg.mlu_link_topology +
        "); set it to none");
  return s;
}

Topology::Topology(const TopologySpec& spec) : spec_(spec), out_(spec.chips) {
  if (spec_.chips == 0) bad("a system needs at least one chip");
  if (spec_.chips_per_host == 0) bad("network.chips_per_host must be at least 1");
  if (spec_.kind != TopologyKind::kExplicit && !without_spaces(spec_.links).empty())
    bad("mlu_link.links is only read with mlu_link.topology: explicit (topology is " +
        std::string(topology_name(spec_.kind)) + ")");
  for (unsigned h = 0; h < hosts(); ++h) {
    const unsigned first = h * spec_.chips_per_host, last = std::min(spec_.chips, first + spec_.chips_per_host) - 1;
    if (spec_.kind == TopologyKind::kFullMesh) {
      for (unsigned a = first; a <= last; ++a)
        for (unsigned b = a + 1; b <= last; ++b) add_pair(a, b);
    } else if (spec_.kind == TopologyKind::kRing && last > first) {
      for (unsigned a = first; a < last; ++a) add_pair(a, a + 1);
      if (last - first >= 2) add_pair(first, last);
    }
  }
  if (spec_.kind == TopologyKind::kExplicit) {
    for (const auto& [a, b] : parse_pairs(spec_.links)) {
      if (a >= spec_.chips || b >= spec_.chips)
        bad("mlu_link.links: " + std::to_string(a) + "-" + std::to_string(b) + " names a chip beyond the " +
            std::to_string(spec_.chips) + " of `devices`");
      if (a == b) bad("mlu_link.links: " + std::to_string(a) + "-" + std::to_string(b) + " joins a chip to itself");
      if (host_of(a) != host_of(b))
        bad("mlu_link.links: " + std::to_string(a) + "-" + std::to_string(b) + " joins chips of different hosts (" +
            "network.chips_per_host = " + std::to_string(spec_.chips_per_host) + "); they talk over the network");
      add_pair(std::min(a, b), std::max(a, b));
    }
  }
  for (unsigned c = 0; c < spec_.chips; ++c)
    if (degree(c) > spec_.ports)
      bad("mlu_link.ports: chip " + std::to_string(c) + " has " + std::to_string(degree(c)) + " links in a " +
          topology_name(spec_.kind) + " of " + std::to_string(std::min(spec_.chips, spec_.chips_per_host)) +
          " chips per host, more than its " + std::to_string(spec_.ports) + " ports");
  for (auto& o : out_) std::sort(o.begin(), o.end());

  // Routes: breadth-first search from every chip within its host; neighbours in increasing order,
  // so the first path found to a chip goes through the lowest-numbered next chip.
  routes_.assign(spec_.chips, std::vector<Route>(spec_.chips));
  for (unsigned s = 0; s < spec_.chips; ++s) {
    std::vector<long> via(spec_.chips, -1);  // link id that reached the chip
    std::vector<bool> seen(spec_.chips, false);
    std::deque<unsigned> queue{s};
    seen[s] = true;
    while (!queue.empty()) {
      const unsigned c = queue.front();
      queue.pop_front();
      for (const auto& [n, id] : out_[c])
        if (!seen[n]) {
          seen[n] = true;
          via[n] = static_cast<long>(id);
          queue.push_back(n);
        }
    }
    for (unsigned d = 0; d < spec_.chips; ++d) {
      Route& r = routes_[s][d];
      if (d == s) continue;  // kSelf
      if (seen[d]) {
        r.kind = RouteKind::kMluLink;
        for (unsigned c = d; c != s; c = links_[static_cast<std::size_t>(via[c])].from)
          r.links.push_back(static_cast<std::size_t>(via[c]));
        std::reverse(r.links.begin(), r.links.end());
      } else {
        r.kind = host_of(s) == host_of(d) ? RouteKind::kHost : RouteKind::kNetwork;
      }
    }
  }
}

void Topology::add_pair(unsigned a, unsigned b) {
  for (const auto& [n, id] : out_[a])
    if (n == b) bad("mlu_link.links: " + std::to_string(a) + "-" + std::to_string(b) + " is listed twice");
  const std::size_t id = links_.size();
  links_.push_back({a, b});
  links_.push_back({b, a});
  out_[a].emplace_back(b, id);
  out_[b].emplace_back(a, id + 1);
}

std::vector<std::pair<unsigned, unsigned>> Topology::pairs() const {
  std::vector<std::pair<unsigned, unsigned>> p;
  for (std::size_t i = 0; i < links_.size(); i += 2) p.emplace_back(links_[i].from, links_[i].to);
  return p;
}

unsigned Topology::degree(unsigned chip) const { return static_cast<unsigned>(out_[chip].size()); }

Route Topology::route(unsigned from, unsigned to) const { return routes_.at(from).at(to); }

}  // namespace mlusim::sim
