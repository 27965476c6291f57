#include "cluster/cluster.h"

#include "device/device_impl.h"

namespace mlusim::sim {

Cluster::Cluster(DeviceImpl& device, std::uint32_t index)
    : index_(index), sram_(Space::kSram, device.config.sram_bytes) {
  const HardwareConfig& cfg = device.config;
  sram_port_ = device.fabric.add_resource("cluster" + std::to_string(index) + " SRAM port", cfg.sram_bandwidth_gbps);
  for (std::uint32_t k = 0; k < cfg.cores_per_cluster; ++k)
    cores_.push_back(std::make_unique<Core>(device, *this, index, k, false, index * cfg.cores_per_cluster + k));
  memory_core_ = std::make_unique<Core>(device, *this, index, cfg.cores_per_cluster, true, cfg.total_cores() + index);
}

bool Cluster::idle() const {
  if (memory_core_->busy()) return false;
  for (const auto& c : cores_)
    if (c->busy()) return false;
  return true;
}

void Cluster::shutdown() {
  for (auto& c : cores_) c->shutdown();
  memory_core_->shutdown();
}

}  // namespace mlusim::sim
