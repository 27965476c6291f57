#include "mlusim/sim/address.h"

#include <cstdio>

namespace mlusim::sim {

std::string_view space_name(Space s) {
  switch (s) {
    case Space::kGdram: return "GDRAM";
    case Space::kSram: return "SRAM";
    case Space::kNram: return "NRAM";
    case Space::kWram: return "WRAM";
  }
  return "?";
}

std::string Addr::str() const {
  char buf[48];
  if (space == Space::kGdram)
    std::snprintf(buf, sizeof buf, "GDRAM 0x%llx", static_cast<unsigned long long>(value));
  else
    std::snprintf(buf, sizeof buf, "%s+0x%llx", std::string(space_name(space)).c_str(), static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace mlusim::sim
