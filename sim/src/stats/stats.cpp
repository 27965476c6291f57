#include "mlusim/sim/stats.h"

#include <nlohmann/json.hpp>

namespace mlusim::sim {

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::kScalar: return "Scalar";
    case Engine::kVfu: return "VFU";
    case Engine::kTfu: return "TFU";
    case Engine::kIoDma: return "IO-DMA";
    case Engine::kMoveDma: return "Move-DMA";
    case Engine::kMemcoreDma: return "MemCore-DMA";
  }
  return "?";
}

std::string_view mem_level_name(MemLevel l) {
  switch (l) {
    case MemLevel::kHost: return "host";
    case MemLevel::kGdram: return "GDRAM";
    case MemLevel::kSram: return "SRAM";
    case MemLevel::kNram: return "NRAM";
    case MemLevel::kWram: return "WRAM";
  }
  return "?";
}

EngineCounters& EngineCounters::operator+=(const EngineCounters& o) {
  busy_ps += o.busy_ps;
  intrinsics += o.intrinsics;
  cycles += o.cycles;
  return *this;
}

TrafficCounters& TrafficCounters::operator+=(const TrafficCounters& o) {
  for (std::size_t i = 0; i < kMemLevelCount; ++i) {
    read_bytes[i] += o.read_bytes[i];
    write_bytes[i] += o.write_bytes[i];
  }
  l2_hit_bytes += o.l2_hit_bytes;
  l2_overfetch_bytes += o.l2_overfetch_bytes;
  return *this;
}

void DeviceStats::reset(std::uint32_t cores_incl_memcores) {
  core_engines.assign(cores_incl_memcores, EngineSet{});
  traffic = TrafficCounters{};
  kernels.clear();
}

EngineSet DeviceStats::engine_totals() const {
  EngineSet total{};
  for (const EngineSet& s : core_engines)
    for (std::size_t e = 0; e < kEngineCount; ++e) total[e] += s[e];
  return total;
}

namespace {
nlohmann::json engines_json(const EngineSet& s) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t e = 0; e < kEngineCount; ++e) {
    if (s[e].intrinsics == 0) continue;
    j[std::string(engine_name(static_cast<Engine>(e)))] = {
        {"busy_ps", s[e].busy_ps}, {"intrinsics", s[e].intrinsics}, {"cycles", s[e].cycles}};
  }
  return j;
}
nlohmann::json traffic_json(const TrafficCounters& t) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t l = 0; l < kMemLevelCount; ++l) {
    if (t.read_bytes[l] == 0 && t.write_bytes[l] == 0) continue;
    j[std::string(mem_level_name(static_cast<MemLevel>(l)))] = {{"read_bytes", t.read_bytes[l]},
                                                                 {"write_bytes", t.write_bytes[l]}};
  }
  if (t.l2_hit_bytes > 0 || t.l2_overfetch_bytes > 0)
    j["L2"] = {{"hit_bytes", t.l2_hit_bytes}, {"overfetch_bytes", t.l2_overfetch_bytes}};
  return j;
}
}  // namespace

void DeviceStats::to_json(nlohmann::json& out) const {
  out = nlohmann::json::object();
  out["engines"] = engines_json(engine_totals());
  out["traffic"] = traffic_json(traffic);
  nlohmann::json ks = nlohmann::json::array();
  for (const KernelRecord& k : kernels) {
    nlohmann::json r = {{"id", k.id},
                        {"name", k.name},
                        {"dim", {k.dim.x, k.dim.y, k.dim.z}},
                        {"type", function_type_name(k.type)},
                        {"submit_ps", k.submit_ps},
                        {"start_ps", k.start_ps},
                        {"end_ps", k.end_ps},
                        {"cycles", k.cycles},
                        {"macs", k.macs},
                        {"vector_elements", k.vector_elements},
                        {"engines", engines_json(k.engines)},
                        {"traffic", traffic_json(k.traffic)}};
    if (k.faulted) r["fault"] = k.fault;
    ks.push_back(std::move(r));
  }
  out["kernels"] = std::move(ks);
}

}  // namespace mlusim::sim
