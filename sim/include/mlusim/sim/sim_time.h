// Simulated time: picoseconds as 64-bit integers, and the one rounding rule for turning engine
// cycles or byte counts into picoseconds (always up, so nothing finishes early).
#pragma once

#include <cmath>
#include <cstdint>

namespace mlusim::sim {

using Picos = std::uint64_t;  // simulated picoseconds since the owning device's epoch

constexpr double kPicosPerSecond = 1e12;

// Clock period of a clock in MHz, in picoseconds (1000 MHz -> 1000 ps). Fractional periods are
// kept as double so that cycles_to_ps rounds once, for the whole count.
constexpr double period_ps(double clock_mhz) { return 1e6 / clock_mhz; }

// cycles -> ps with ceil, as DESIGN.md requires ("Engine cycles convert to picoseconds with ceil").
// The 1e-6 ps slack absorbs binary floating-point error (e.g. 3 cycles at 1/3 ns); it is far
// below the 1 ps resolution, so an exact product is never rounded up by it.
inline Picos ceil_ps(double ps) {
  if (ps <= 0) return 0;
  return static_cast<Picos>(std::ceil(ps - 1e-6));
}
inline Picos cycles_to_ps(std::uint64_t cycles, double clock_mhz) {
  return ceil_ps(static_cast<double>(cycles) * period_ps(clock_mhz));
}
// Bandwidth in GB/s (1e9 bytes/s) is bytes per nanosecond, i.e. 1e-3 bytes per picosecond.
constexpr double gbps_to_bytes_per_ps(double gbps) { return gbps * 1e-3; }
inline Picos bytes_to_ps(double bytes, double gbps) { return ceil_ps(bytes / gbps_to_bytes_per_ps(gbps)); }

// ps -> cycles of a clock, rounded down (reports: whole cycles completed in that time).
inline std::uint64_t ps_to_cycles(Picos ps, double clock_mhz) {
  return static_cast<std::uint64_t>(std::floor(static_cast<double>(ps) / period_ps(clock_mhz) + 1e-9));
}

}  // namespace mlusim::sim
