// Simulated time: picoseconds as 64-bit integers, the one rounding rule for turning engine cycles
// or byte counts into picoseconds (always up, so nothing finishes early), and the overflow check
// every conversion goes through.
//
// Range: 2^64 - 1 ps is about 213.5 days. The config schema bounds every clock, bandwidth, latency
// and size (configs/README.md) so that a single duration of any accepted config stays far below
// that (the slowest whole-DRAM transfer, 1 TiB at 1 MB/s, is 12.7 days) and any config can simulate
// at least a day; a duration or instant that still does not fit raises SimTimeOverflow naming the
// quantity instead of wrapping.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlusim::sim {

using Picos = std::uint64_t;  // simulated picoseconds since the owning device's epoch

constexpr double kPicosPerSecond = 1e12;
constexpr Picos kMaxPicos = std::numeric_limits<Picos>::max();

// A simulated duration or instant that does not fit 64-bit picoseconds. what() names the quantity:
// "simulated time overflow: <quantity> of 3.2e+20 ps does not fit 64-bit picoseconds (at most
// 18446744073709551615 ps, about 213 days)".
class SimTimeOverflow : public std::overflow_error {
 public:
  SimTimeOverflow(const std::string& quantity, double ps)
      : std::overflow_error("simulated time overflow: " + quantity + " of " + describe(ps) +
                            " does not fit 64-bit picoseconds (at most " + std::to_string(kMaxPicos) +
                            " ps, about 213 days)"),
        quantity_(quantity),
        ps_(ps) {}

  const std::string& quantity() const { return quantity_; }
  double ps() const { return ps_; }
  // The same overflow with the quantity placed in its context ("transfer 'x'" + ": latency").
  SimTimeOverflow within(const std::string& context) const { return {context + ": " + quantity_, ps_}; }

 private:
  std::string quantity_;
  double ps_;

  static std::string describe(double ps) {
    if (std::isnan(ps)) return "an undefined number of ps";
    char text[40];
    std::snprintf(text, sizeof text, "%.4g ps", ps);
    return text;
  }
};

// Clock period of a clock in MHz, in picoseconds (1000 MHz -> 1000 ps). Fractional periods are
// kept as double so that cycles_to_ps rounds once, for the whole count.
constexpr double period_ps(double clock_mhz) { return 1e6 / clock_mhz; }

// ps -> whole ps with ceil, as DESIGN.md requires ("Engine cycles convert to picoseconds with ceil").
// The 1e-6 ps slack absorbs binary floating-point error (e.g. 3 cycles at 1/3 ns); it is far
// below the 1 ps resolution, so an exact product is never rounded up by it. `quantity` names the
// duration in the SimTimeOverflow raised when it is NaN or does not fit 64 bits.
inline Picos ceil_ps(double ps, const char* quantity) {
  if (ps <= 0) return 0;
  const double whole = std::ceil(ps - 1e-6);
  if (!(whole < 18446744073709551616.0)) throw SimTimeOverflow(quantity, ps);  // 2^64; also NaN
  return static_cast<Picos>(whole);
}
inline Picos cycles_to_ps(std::uint64_t cycles, double clock_mhz, const char* quantity) {
  return ceil_ps(static_cast<double>(cycles) * period_ps(clock_mhz), quantity);
}
// Bandwidth in GB/s (1e9 bytes/s) is bytes per nanosecond, i.e. 1e-3 bytes per picosecond.
constexpr double gbps_to_bytes_per_ps(double gbps) { return gbps * 1e-3; }
inline Picos bytes_to_ps(double bytes, double gbps, const char* quantity) {
  return ceil_ps(bytes / gbps_to_bytes_per_ps(gbps), quantity);
}

// a + b, or SimTimeOverflow naming `quantity` when the sum passes 2^64 - 1 ps.
inline Picos add_ps(Picos a, Picos b, const char* quantity) {
  if (b > kMaxPicos - a) throw SimTimeOverflow(quantity, static_cast<double>(a) + static_cast<double>(b));
  return a + b;
}

// ps -> cycles of a clock, rounded down (reports: whole cycles completed in that time).
inline std::uint64_t ps_to_cycles(Picos ps, double clock_mhz) {
  return static_cast<std::uint64_t>(std::floor(static_cast<double>(ps) / period_ps(clock_mhz) + 1e-9));
}

}  // namespace mlusim::sim
