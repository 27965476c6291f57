// Peak rates derived from a config, and the roofline bound of a piece of work.
//
// The roofline is an oracle for tests and a yardstick for reports: sim/ never reads it to
// compute or clamp time. A kernel's simulated time must never be below its bound.
//   TFU peak (MAC/s)  = cores x rows x cols x clock      (per dtype; 0 if the TFU lacks it)
//   VFU peak (elem/s) = cores x (vfu.width_bytes / dtype size) x clock
//   compute peak (FLOP/s) = 2 x TFU peak, or 2 x VFU peak (one FMA per lane) when the TFU lacks
//                       the dtype, as DESIGN.md requires
//   DRAM peak (B/s)   = dram.bandwidth_gbps x 1e9
//   bound(work)       = max(sum over dtypes of MACs / MAC peak(dtype), DRAM bytes / DRAM peak)
#pragma once

#include <array>
#include <cstdint>

#include "mlusim/sim/config.h"
#include "mlusim/sim/dtype.h"
#include "mlusim/sim/sim_time.h"

namespace mlusim::sim {

using MacsByDtype = std::array<std::uint64_t, kDTypeCount>;  // indexed by DType

// cores x rows x cols x tfu.arrays x core clock; 0 when the TFU lacks `t`.
double tfu_peak_macs_per_s(const HardwareConfig& cfg, DType t);
double vfu_peak_elements_per_s(const HardwareConfig& cfg, DType t);
// Multiply-accumulates per second for `t`: the TFU's, or the VFU's FMA rate if the TFU lacks `t`.
double peak_macs_per_s(const HardwareConfig& cfg, DType t);
double dram_peak_bytes_per_s(const HardwareConfig& cfg);

// Lower bound in picoseconds (rounded down) for doing `macs` and moving `dram_bytes` on the whole
// device.
Picos roofline_bound_ps(const HardwareConfig& cfg, const MacsByDtype& macs, std::uint64_t dram_bytes);

}  // namespace mlusim::sim
