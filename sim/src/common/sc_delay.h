// SystemC delays from picoseconds, exactly and checked. sc_time(double, SC_PS) would round a
// count above 2^53 ps (2.5 simulated hours) to a double and wrap when now + delay passes 2^64 ps;
// these build the time from the integer value (the resolution is 1 ps, simulator.cpp) and raise
// SimTimeOverflow naming the quantity instead.
#pragma once

#include <systemc>

#include "mlusim/sim/sim_time.h"

namespace mlusim::sim {

// A delay of `ps` from now; throws SimTimeOverflow("<quantity>: end") when now + ps does not fit.
inline sc_core::sc_time sc_delay(Picos ps, const char* quantity) {
  const Picos now = static_cast<Picos>(sc_core::sc_time_stamp().value());
  if (ps > kMaxPicos - now) throw SimTimeOverflow(quantity, static_cast<double>(now) + static_cast<double>(ps));
  return sc_core::sc_time::from_value(ps);
}

}  // namespace mlusim::sim
