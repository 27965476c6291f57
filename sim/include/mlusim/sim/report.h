// Cycle reports of one device's statistics: a text table for terminals and JSON for tools.
//
// Per kernel: cycles, share of all kernel time, MACs, DRAM bytes, achieved MAC rate and DRAM
// bandwidth against the config's peaks, the roofline bound and efficiency (bound / time). Per
// engine: utilisation = busy time summed over its instances / (instances x elapsed time). Per
// memory level: bytes read and written.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "mlusim/sim/config.h"
#include "mlusim/sim/stats.h"

namespace mlusim::sim {

// elapsed_ps: the device time the report covers (e.g. Device::now() since the last reset).
std::string format_cycle_report(const HardwareConfig& cfg, const DeviceStats& stats, Picos elapsed_ps);
void cycle_report_json(const HardwareConfig& cfg, const DeviceStats& stats, Picos elapsed_ps, nlohmann::json& out);

}  // namespace mlusim::sim
