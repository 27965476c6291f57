// A cluster: shared SRAM (with one bandwidth port in the fabric), a memory core that moves
// GDRAM <-> SRAM for union tasks, and cores_per_cluster compute cores.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/core.h"
#include "fabric/bandwidth_fabric.h"
#include "memory/onchip_memory.h"

namespace mlusim::sim {

class DeviceImpl;

class Cluster {
 public:
  Cluster(DeviceImpl& device, std::uint32_t index);
  std::uint32_t index() const { return index_; }
  OnChipMemory& sram() { return sram_; }
  ResourceId sram_port() const { return sram_port_; }
  Core& core(std::uint32_t i) { return *cores_[i]; }
  std::uint32_t core_count() const { return static_cast<std::uint32_t>(cores_.size()); }
  Core& memory_core() { return *memory_core_; }
  // Every compute core and the memory core are idle: a union group may take the cluster.
  bool idle() const;
  void shutdown();

 private:
  std::uint32_t index_;
  OnChipMemory sram_;
  ResourceId sram_port_;
  std::vector<std::unique_ptr<Core>> cores_;
  std::unique_ptr<Core> memory_core_;
};

}  // namespace mlusim::sim
