// The configuration schema: one row per YAML key, naming its type, unit, the HardwareConfig member
// it fills and the rule its value must satisfy. This table is the only list of keys in C++; the
// loader, the validator, "did you mean" suggestions and the README check all read it.
// Rules that relate several keys (DRAM capacity vs. interleave x channels, TFU rows vs. cols) live
// in config.cpp next to the validator.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mlusim/sim/config.h"

namespace mlusim::sim::config_internal {

enum class ValueType : std::uint8_t {
  kString,    // any non-empty YAML scalar
  kCount,     // unsigned integer
  kBytes,     // unsigned integer of bytes, or a string with a binary unit ("640KiB")
  kReal,      // finite real number
  kBool,      // true | false
  kDataflow,  // output_stationary | weight_stationary
};

std::string_view value_type_name(ValueType type);

// Bounds on a numeric value. Unsigned types are already >= 0 by parsing.
struct Rule {
  double min = -std::numeric_limits<double>::infinity();  // inclusive, unless min_exclusive
  double max = std::numeric_limits<double>::infinity();   // inclusive
  bool min_exclusive = false;
  bool power_of_two = false;
  bool zero_allowed = false;  // 0 is accepted besides [min, max]
  const char* why = "";  // appended to the error to say where a bound comes from
};

inline Rule any_value() { return {}; }
inline Rule at_least(double min) { return Rule{min, std::numeric_limits<double>::infinity(), false, false, false, ""}; }
inline Rule between(double min, double max, const char* why = "") { return Rule{min, max, false, false, false, why}; }
// 0, or between min and max (a rate where 0 means "absent").
inline Rule zero_or_between(double min, double max, const char* why = "") {
  return Rule{min, max, false, false, true, why};
}
inline Rule power_of_two(double min, double max, const char* why = "") { return Rule{min, max, false, true, false, why}; }

// A TfuArray field inside HardwareConfig (e.g. tfu_fp16.cols): C++ has no pointer to a nested
// member, so it is a pair of member pointers.
struct TfuMember {
  TfuArray HardwareConfig::*array;
  std::uint32_t TfuArray::*dim;
};

// A TfuArray field set in all three dtype arrays at once (tfu.arrays -> TfuArray::count): the
// arrays are one piece of hardware; each dtype's rows x cols is how one array operates in it.
struct TfuAllArraysMember {
  std::uint32_t TfuArray::*dim;
};

using Member = std::variant<std::string HardwareConfig::*, std::uint32_t HardwareConfig::*,
                            std::uint64_t HardwareConfig::*, double HardwareConfig::*, bool HardwareConfig::*,
                            Dataflow HardwareConfig::*, TfuMember, TfuAllArraysMember>;

struct Field {
  const char* key;   // dotted YAML path, e.g. "dram.bandwidth_gbps"
  ValueType type;
  const char* unit;  // shown in error messages and configs/README.md; "" for unitless values
  Member member;
  Rule rule;
  // YAML text used when no file and no override sets the key; nullptr = required. Only keys added
  // after the presets existed have one, and it is the behaviour the simulator had before the key
  // (so older user configs keep loading and mean what they meant). Hardware figures never do.
  const char* default_value = nullptr;
};

// Every key, in the order of HardwareConfig.
const std::vector<Field>& schema();

// The row for `key`, or nullptr.
const Field* find_field(std::string_view key);

// True if `path` is a strict prefix section of some key ("dram", "tfu", "tfu.fp16").
bool is_section(std::string_view path);

}  // namespace mlusim::sim::config_internal
