#include "mlusim/sim/device.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <systemc>

#include "device/device_impl.h"
#include "interconnect/interconnect.h"

namespace mlusim::sim {

DeviceImpl::DeviceImpl(const HardwareConfig& cfg, int idx, TraceWriter& tw, Picos epoch,
                       interconnect::Interconnect* interconnect_links)
    : config(cfg),
      index(idx),
      trace(tw),
      epoch_ps(epoch),
      log_sink([](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }),
      gdram(cfg.dram_bytes, idx),
      l2(cfg.l2_cache ? cfg.l2_bytes : 0, cfg.l2_line_bytes, cfg.l2_ways, cfg.l2_set_hash),
      fabric("mlu" + std::to_string(idx)),
      scheduler(*this) {
  for (std::uint32_t c = 0; c < cfg.dram_channels; ++c)
    dram_channels.push_back(fabric.add_resource("DRAM channel " + std::to_string(c), cfg.dram_bandwidth_gbps / cfg.dram_channels));
  noc = fabric.add_resource("NoC/L2", cfg.noc_bandwidth_gbps);
  host_to_device = fabric.add_resource("host link H2D", cfg.host_link_bandwidth_gbps);
  device_to_host = fabric.add_resource("host link D2H", cfg.host_link_bandwidth_gbps);
  pageable_staging = fabric.add_resource("pageable staging", cfg.host_link_pageable_gbps);
  links = interconnect_links;
  for (std::uint32_t c = 0; c < cfg.clusters; ++c) clusters.push_back(std::make_unique<Cluster>(*this, c));
  // DRAM bandwidth counter: the load on all channels after every rate change, one sample per
  // distinct value, so a timeline shows how close kernels come to dram.bandwidth_gbps.
  fabric.set_rate_listener([this](Picos now) {
    if (!trace.records(TraceLevel::kOps)) return;
    double gbps = 0;
    for (ResourceId ch : dram_channels) gbps += fabric.current_load_gbps(ch);
    if (gbps == last_dram_gbps_) return;
    last_dram_gbps_ = gbps;
    trace.counter(trace_pid(), "DRAM bandwidth (GB/s)", now - epoch_ps, nlohmann::json{{"GB/s", gbps}});
  });
  stats.reset(cfg.total_cores() + cfg.clusters);
  stats.epoch_ps = epoch_ps;
}

DeviceImpl::~DeviceImpl() = default;

Picos DeviceImpl::now_abs() const {
  return static_cast<Picos>(sc_core::sc_time_stamp().value());  // resolution is 1 ps (Simulator)
}

void DeviceImpl::add_dram_uses(std::uint64_t addr, std::uint64_t bytes, double total_bytes,
                               std::vector<FlowUse>& uses) const {
  // Bytes per channel of [addr, addr+bytes) (dram_channel_of): granule by granule up to a round
  // boundary, whole rounds spread evenly (each channel holds one granule of every round, hashed
  // or not), the tail granule by granule.
  const std::uint64_t g = config.dram_interleave_bytes;
  const std::uint64_t nch = config.dram_channels;
  const std::uint64_t round = g * nch;
  std::vector<std::uint64_t> per(nch, 0);
  std::uint64_t a = addr - gdram.base();
  std::uint64_t left = bytes;
  auto granules_until = [&](std::uint64_t end) {
    while (left > 0 && a < end) {
      const std::uint64_t n = std::min({left, g - a % g, end - a});
      per[dram_channel_of(config, a)] += n;
      a += n;
      left -= n;
    }
  };
  granules_until((a + round - 1) / round * round);  // head: up to the next round boundary
  const std::uint64_t rounds = left / round;
  if (rounds > 0) {
    for (auto& p : per) p += rounds * g;
    a += rounds * round;
    left -= rounds * round;
  }
  granules_until(a + left);
  for (std::uint64_t c = 0; c < nch; ++c)
    if (per[c] > 0) uses.push_back({dram_channels[c], static_cast<double>(per[c]) / total_bytes});
}

int DeviceImpl::trace_pid() {
  if (!trace_process_declared_) {
    trace.process(index + 1, "mlu" + std::to_string(index) + " (" + config.name + ")");  // pid 0 is "idle" in Perfetto
    trace_process_declared_ = true;
  }
  return index + 1;
}

int DeviceImpl::trace_track(const std::string& name) { return trace.track(trace_pid(), name); }

// Host copies: host link (per direction; pageable copies also cross the driver's staging
// copy, pageable_bandwidth_gbps) + the DRAM channels of the device range. Latency:
// host_link.latency_ns + dram.latency_ns. Device-to-device: DRAM read + write, dram latency.
std::optional<std::string> DeviceImpl::validate_copy(const HostCopy& copy) const {
  using Kind = HostCopy::Kind;
  auto outside = [&](std::uint64_t addr, const char* role) -> std::optional<std::string> {
    if (gdram.contains(addr, copy.bytes)) return std::nullopt;
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
    return std::string(role) + " range [" + buf + ", +" + std::to_string(copy.bytes) +
           ") is outside device memory of mlu" + std::to_string(index);
  };
  const bool reads_device = copy.kind == Kind::kDeviceToHost || copy.kind == Kind::kDeviceToDevice || copy.kind == Kind::kToPeer;
  const bool writes_device = copy.kind == Kind::kHostToDevice || copy.kind == Kind::kDeviceToDevice || copy.kind == Kind::kMemset;
  if (reads_device)
    if (auto e = outside(copy.device_src, "source")) return e;
  if (writes_device)
    if (auto e = outside(copy.device_dst, "destination")) return e;
  if ((copy.kind == Kind::kHostToDevice && copy.host_src == nullptr && copy.bytes > 0) ||
      ((copy.kind == Kind::kDeviceToHost || copy.kind == Kind::kToPeer) && copy.host_dst == nullptr && copy.bytes > 0))
    return std::string("host buffer of a ") + std::to_string(copy.bytes) + "-byte copy is null";
  if (copy.kind == Kind::kToPeer &&
      (links == nullptr || copy.peer_device < 0 || copy.peer_device >= static_cast<int>(config.device_count) ||
       copy.peer_device == index ||
       !links->reachable(static_cast<unsigned>(index), static_cast<unsigned>(copy.peer_device))))
    return "peer copy mlu" + std::to_string(index) + " -> mlu" + std::to_string(copy.peer_device) +
           ": config " + config.name + " has no MLU-Link path or network route between them";
  return std::nullopt;
}

void DeviceImpl::submit_copy(const HostCopy& copy, std::function<void(Picos)> on_done) {
  using Kind = HostCopy::Kind;
  if (auto error = validate_copy(copy)) throw std::invalid_argument(*error);
  std::vector<FlowUse> uses;
  double latency_ns = config.dram_latency_ns;
  const double payload = static_cast<double>(std::max<std::size_t>(copy.bytes, 1));
  // The path each kind takes, where its bytes come from, and where they land.
  const std::uint8_t* src = nullptr;
  std::uint8_t* dst = nullptr;
  MemLevel from = MemLevel::kGdram, to = MemLevel::kGdram;
  switch (copy.kind) {
    case Kind::kHostToDevice:
      uses.push_back({host_to_device, 1.0});
      latency_ns += config.host_link_latency_ns;
      add_dram_uses(copy.device_dst, copy.bytes, payload, uses);
      src = static_cast<const std::uint8_t*>(copy.host_src);
      dst = gdram.backing(copy.device_dst);
      from = MemLevel::kHost;
      break;
    case Kind::kDeviceToHost:
      uses.push_back({device_to_host, 1.0});
      latency_ns += config.host_link_latency_ns;
      add_dram_uses(copy.device_src, copy.bytes, payload, uses);
      src = gdram.backing(copy.device_src);
      dst = static_cast<std::uint8_t*>(copy.host_dst);
      to = MemLevel::kHost;
      break;
    case Kind::kDeviceToDevice:
      add_dram_uses(copy.device_src, copy.bytes, payload, uses);
      add_dram_uses(copy.device_dst, copy.bytes, payload, uses);
      src = gdram.backing(copy.device_src);
      dst = gdram.backing(copy.device_dst);
      break;
    case Kind::kToPeer:  // lands in the peer's GDRAM (host_dst is its backing); timed by the interconnect
      src = gdram.backing(copy.device_src);
      dst = static_cast<std::uint8_t*>(copy.host_dst);
      break;
    case Kind::kMemset:
      add_dram_uses(copy.device_dst, copy.bytes, payload, uses);
      dst = gdram.backing(copy.device_dst);
      break;
  }
  // Host-link copies, device-to-device copies and memsets bypass the L2 (they read DRAM) and drop
  // the lines they write, so a later kernel read of the new bytes misses (memory/l2_cache.h).
  if (copy.kind == Kind::kHostToDevice || copy.kind == Kind::kDeviceToDevice || copy.kind == Kind::kMemset)
    l2.invalidate(copy.device_dst, copy.bytes);
  // Sources are read at start (staged), destinations written at completion.
  std::function<void()> land;
  if (copy.kind == Kind::kMemset) {
    land = [dst, n = copy.bytes, v = copy.memset_value] { std::memset(dst, v, n); };
  } else {
    auto staging = std::make_shared<std::vector<std::uint8_t>>(src, src + copy.bytes);
    land = [staging, dst] { std::memcpy(dst, staging->data(), staging->size()); };
  }
  if (!copy.pinned && (copy.kind == Kind::kHostToDevice || copy.kind == Kind::kDeviceToHost))
    uses.push_back({pageable_staging, 1.0});
  if (uses.empty()) uses.push_back({noc, 1.0});  // zero-byte device copy: needs some path
  // Merge duplicate channel entries (D2D touches channels twice) in resource order.
  std::map<std::uint32_t, double> merged;
  for (const FlowUse& u : uses) merged[u.resource] += u.weight;
  uses.clear();
  for (const auto& [r, w] : merged) uses.push_back({r, w});

  stats.traffic.add(from, to, copy.bytes);
  ++copies_in_flight;
  const Picos start = now_abs();
  const std::string label = copy.label.empty() ? "copy" : copy.label;
  auto done = [this, land = std::move(land), on_done = std::move(on_done), start, label, copy_kind = copy.kind,
               bytes = copy.bytes] {
    land();
    --copies_in_flight;
    if (trace.records(TraceLevel::kOps)) {
      const bool link = copy_kind == Kind::kHostToDevice || copy_kind == Kind::kDeviceToHost;
      nlohmann::json args = {{"bytes", bytes}};
      trace.complete_concurrent(trace_pid(), trace_track(link ? "host link" : copy_kind == Kind::kToPeer ? "MLU-Link" : "device copies"), label, "copy", start - epoch_ps,
                     now_abs() - start, &args);
    }
    if (on_done) on_done(now());
  };
  if (copy.kind == Kind::kToPeer) {
    links->start(static_cast<unsigned>(index), static_cast<unsigned>(copy.peer_device), static_cast<double>(copy.bytes),
                 std::move(done), label);
    return;
  }
  fabric.start(TransferRequest{static_cast<double>(copy.bytes), ceil_ps(latency_ns * 1000.0, "copy latency"), std::move(uses),
                               std::move(done), label});
}

// ---------------------------------------------------------------------------------------------

Device::Device(const HardwareConfig& config, int index, TraceWriter& trace, Picos epoch_ps,
               interconnect::Interconnect* links)
    : impl_(std::make_unique<DeviceImpl>(config, index, trace, epoch_ps, links)) {}
Device::~Device() = default;
int Device::index() const { return impl_->index; }
const HardwareConfig& Device::config() const { return impl_->config; }
std::uint64_t Device::gdram_base() const { return impl_->gdram.base(); }
std::uint64_t Device::gdram_size() const { return impl_->gdram.size(); }
bool Device::gdram_contains(std::uint64_t addr, std::uint64_t bytes) const { return impl_->gdram.contains(addr, bytes); }
void* Device::gdram_backing(std::uint64_t addr, std::uint64_t bytes) {
  if (!impl_->gdram.contains(addr, bytes))
    throw std::out_of_range("device range of " + std::to_string(bytes) + " bytes is outside GDRAM of mlu" +
                            std::to_string(impl_->index));
  return impl_->gdram.backing(addr);
}
void Device::set_gdram_validator(GdramValidator v) { impl_->gdram_validator = std::move(v); }
std::optional<std::string> Device::validate_launch(const KernelLaunch& launch) const {
  return impl_->scheduler.validate(launch);
}
std::optional<std::string> Device::validate_copy(const HostCopy& copy) const { return impl_->validate_copy(copy); }
std::uint64_t Device::submit(KernelLaunch launch, std::function<void(const KernelRecord&)> on_done) {
  return impl_->scheduler.submit(std::move(launch), std::move(on_done));
}
void Device::submit_copy(const HostCopy& copy, std::function<void(Picos)> on_done) {
  impl_->submit_copy(copy, std::move(on_done));
}
bool Device::idle() const { return impl_->scheduler.idle() && impl_->copies_in_flight == 0 && impl_->fabric.idle(); }
void Device::inject_dma_bit_flip(std::uint64_t nth) { impl_->dma_flip_countdown = nth; }

void Device::flush_l2() { impl_->l2.clear(); }
void Device::set_functional(bool f) { impl_->functional = f; }
bool Device::functional() const { return impl_->functional; }
Picos Device::now() const { return impl_->now(); }
const DeviceStats& Device::stats() const { return impl_->stats; }
void Device::reset_stats() {
  impl_->epoch_ps = impl_->now_abs();
  impl_->stats.reset(impl_->config.total_cores() + impl_->config.clusters);
  impl_->stats.epoch_ps = impl_->epoch_ps;
}
void Device::set_log_sink(std::function<void(const std::string&)> sink) { impl_->log_sink = std::move(sink); }
void Device::shutdown() {
  for (auto& c : impl_->clusters) c->shutdown();
  impl_->fabric.shutdown();
}

}  // namespace mlusim::sim
