// Public config API: preset lookup, loading, overrides and validation against the schema table.
#include "mlusim/sim/config.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "config/schema.h"
#include "config/topology.h"
#include "config/tree.h"
#include "config/values.h"

#ifndef MLUSIM_SOURCE_CONFIG_DIR
#error "MLUSIM_SOURCE_CONFIG_DIR must name the configs/ directory (set by sim/CMakeLists.txt)"
#endif

namespace mlusim::sim {
namespace fs = std::filesystem;
using namespace config_internal;

namespace {

// Errors in `--set key=value` overrides name this instead of a file.
constexpr const char* kOverrideOrigin = "override";

// Control bytes other than newlines (a NUL would cut what() short) come out as \xNN in file names,
// keys and reasons.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_error(const std::string& file, const std::string& key, const std::string& reason) {
  return key.empty() ? printable(file) + ": " + printable(reason)
                     : printable(file) + ": " + printable(key) + ": " + printable(reason);
}

// "did you mean" text for an unknown key: a key whose last component matches exactly (right name,
// wrong section), else the closest key by edit distance if it is close enough to be a typo.
std::string suggestion(const std::string& key) {
  const std::string leaf_name = key.substr(key.rfind('.') + 1);
  const Field* by_name = nullptr;
  int name_matches = 0;
  const Field* closest = nullptr;
  std::size_t best = std::numeric_limits<std::size_t>::max();
  for (const Field& field : schema()) {
    const std::string_view candidate = field.key;
    const std::string_view candidate_name = candidate.substr(candidate.rfind('.') + 1);
    if (candidate_name == leaf_name) {
      by_name = &field;
      ++name_matches;
    }
    const std::size_t distance = edit_distance(key, candidate);
    if (distance < best) {
      best = distance;
      closest = &field;
    }
  }
  if (name_matches == 1) return std::string("; did you mean \"") + by_name->key + "\"?";
  if (closest != nullptr && best <= std::max<std::size_t>(2, key.size() / 3))
    return std::string("; did you mean \"") + closest->key + "\"?";
  return "";
}

std::string node_kind(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "\"" + node.Scalar() + "\"";
}

using Value = std::variant<std::string, std::uint64_t, double, bool, Dataflow>;

// Validates and stores one config key. Holds the row and the leaf so every error can name both.
class FieldReader {
 public:
  FieldReader(const Field& field, const Leaf& leaf) : field_(field), leaf_(leaf) {}

  void store(HardwareConfig& config) const {
    const Value value = parse();
    check_rule(value);
    std::visit([&](auto member) { assign(config, member, value); }, field_.member);
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const {
    throw ConfigError(leaf_.file, field_.key, at_line(reason, leaf_.line));
  }

  std::string expected() const {
    switch (field_.type) {
      case ValueType::kString: return "a string";
      case ValueType::kCount: return "an unsigned integer";
      case ValueType::kBytes: return "a byte size (e.g. 65536 or \"64KiB\")";
      case ValueType::kReal: return "a number";
      case ValueType::kBool: return "true or false";
      case ValueType::kDataflow: return "output_stationary or weight_stationary";
    }
    return "a value";
  }

  Value parse() const {
    const YAML::Node& node = leaf_.value;
    if (node.IsNull()) fail("has no value; expected " + expected());
    if (!node.IsScalar()) fail("expected " + expected() + ", got " + node_kind(node));
    const std::string& text = node.Scalar();
    switch (field_.type) {
      case ValueType::kString:
        if (text.empty()) fail("must not be empty");
        return text;
      case ValueType::kCount: {
        if (const auto value = parse_unsigned(text)) return *value;
        const auto real = parse_real(text);
        if (real && *real < 0) fail("must not be negative (expected an unsigned integer), got " + text);
        fail("expected " + expected() + ", got \"" + text + "\"");
      }
      case ValueType::kBytes: {
        std::string why;
        if (const auto value = parse_byte_size(text, &why)) return *value;
        fail(why);
      }
      case ValueType::kReal:
        if (const auto value = parse_real(text)) return *value;
        fail("expected " + expected() + ", got \"" + text + "\"");
      case ValueType::kBool:
        if (text == "true" || text == "True" || text == "TRUE") return true;
        if (text == "false" || text == "False" || text == "FALSE") return false;
        fail("expected " + expected() + ", got \"" + text + "\"");
      case ValueType::kDataflow:
        if (text == "output_stationary") return Dataflow::kOutputStationary;
        if (text == "weight_stationary") return Dataflow::kWeightStationary;
        fail("expected " + expected() + ", got \"" + text + "\"");
    }
    fail("unsupported value type");
  }

  std::string show(double x) const {
    if (field_.type == ValueType::kBytes) return format_bytes(static_cast<std::uint64_t>(x));
    return format_real(x);
  }
  std::string unit_suffix() const {
    return field_.type == ValueType::kBytes || *field_.unit == '\0' ? "" : std::string(" ") + field_.unit;
  }

  void check_rule(const Value& value) const {
    double x = 0;
    if (const auto* u = std::get_if<std::uint64_t>(&value)) {
      x = static_cast<double>(*u);
      if (field_.rule.power_of_two && (*u == 0 || (*u & (*u - 1)) != 0))
        fail("must be a power of two, got " + show(x) + unit_suffix());
    } else if (const auto* d = std::get_if<double>(&value)) {
      x = *d;
    } else {
      return;  // strings, booleans and enums have no numeric rule
    }
    const Rule& rule = field_.rule;
    const bool low = rule.min_exclusive ? x <= rule.min : x < rule.min;
    const bool high = x > rule.max;
    if ((!low && !high) || (rule.zero_allowed && x == 0)) return;
    std::string bound;
    if (std::isfinite(rule.min) && std::isfinite(rule.max)) {
      bound = std::string(rule.zero_allowed ? "0 or " : "") + "between " + show(rule.min) + " and " + show(rule.max);
    } else if (low) {
      bound = (rule.min_exclusive ? "> " : ">= ") + show(rule.min);
    } else {
      bound = "<= " + show(rule.max);
    }
    std::string why = *rule.why != '\0' ? std::string(" (") + rule.why + ")" : "";
    fail("must be " + bound + unit_suffix() + why + ", got " + show(x) + unit_suffix());
  }

  std::uint32_t narrow(std::uint64_t v) const {
    if (v > std::numeric_limits<std::uint32_t>::max())
      fail("must be <= " + std::to_string(std::numeric_limits<std::uint32_t>::max()) + ", got " + std::to_string(v));
    return static_cast<std::uint32_t>(v);
  }

  template <class Member>
  void assign(HardwareConfig& config, Member member, const Value& value) const {
    if constexpr (std::is_same_v<Member, TfuMember>) {
      (config.*(member.array)).*(member.dim) = narrow(std::get<std::uint64_t>(value));
    } else if constexpr (std::is_same_v<Member, TfuAllArraysMember>) {
      using HC = HardwareConfig;
      for (TfuArray HC::*array : {&HC::tfu_fp32, &HC::tfu_fp16, &HC::tfu_bf16, &HC::tfu_int8})
        (config.*array).*(member.dim) = narrow(std::get<std::uint64_t>(value));
    } else {
      using T = std::remove_reference_t<decltype(config.*member)>;
      if constexpr (std::is_same_v<T, std::uint32_t>) {
        config.*member = narrow(std::get<std::uint64_t>(value));
      } else {
        // A schema row whose type does not match its member is a programming error (bad_variant_access).
        config.*member = std::get<T>(value);
      }
    }
  }

  const Field& field_;
  const Leaf& leaf_;
};

void apply_overrides(Tree& tree, const std::vector<ConfigOverride>& overrides) {
  // Overrides rank above every file; among themselves, the later one wins.
  int order = std::numeric_limits<int>::max() / 2;
  for (const auto& [key, value] : overrides) {
    if (find_field(key) == nullptr) throw ConfigError(kOverrideOrigin, key, "unknown key" + suggestion(key));
    tree[key] = Leaf{YAML::Node(value), kOverrideOrigin, 0, ++order};
  }
}

void reject_unknown_keys(const Tree& tree) {
  for (const auto& [key, leaf] : tree) {
    if (find_field(key) != nullptr) continue;
    if (is_section(key)) {
      std::string children;
      for (const Field& field : schema()) {
        const std::string_view k = field.key;
        if (k.size() > key.size() && k.compare(0, key.size(), key) == 0 && k[key.size()] == '.')
          children += (children.empty() ? "" : ", ") + std::string(k.substr(key.size() + 1));
      }
      throw ConfigError(leaf.file, key,
                        at_line("is a section: expected a map of " + children + ", got " + node_kind(leaf.value),
                                leaf.line));
    }
    throw ConfigError(leaf.file, key, at_line("unknown key" + suggestion(key), leaf.line));
  }
}

// Keys with a schema default that nothing set get it, below every file in merge order (so a
// consistency error never blames a default over a value someone wrote).
void apply_defaults(Tree& tree) {
  for (const Field& field : schema())
    if (field.default_value != nullptr && tree.count(field.key) == 0)
      tree[field.key] = Leaf{YAML::Node(std::string(field.default_value)), "default", 0, -1};
}

void reject_missing_keys(const Tree& tree, const std::string& file) {
  std::vector<std::string> missing;
  for (const Field& field : schema())
    if (tree.count(field.key) == 0) missing.push_back(field.key);
  if (missing.empty()) return;
  std::string reason = "missing required key (every key must be set in the preset or a file it extends)";
  constexpr std::size_t kListed = 8;  // keep the message readable when most keys are missing
  if (missing.size() > 1) {
    reason += "; also missing:";
    for (std::size_t i = 1; i < missing.size() && i <= kListed; ++i) reason += (i == 1 ? " " : ", ") + missing[i];
    if (missing.size() > kListed + 1) reason += " and " + std::to_string(missing.size() - kListed - 1) + " more";
  }
  throw ConfigError(file, missing.front(), reason);
}

// Rules that relate several keys. A violation is reported against whichever of the keys was set
// last (the override, or the file furthest up the `extends` chain), since that is the change that
// broke the rule; the message names the other keys.
void check_consistency(const HardwareConfig& c, const Tree& tree) {
  const auto fail = [&](std::initializer_list<const char*> keys, const std::string& reason) {
    const char* blamed = *keys.begin();
    for (const char* key : keys)
      if (tree.at(key).order > tree.at(blamed).order) blamed = key;
    const Leaf& leaf = tree.at(blamed);
    throw ConfigError(leaf.file, blamed, at_line(reason, leaf.line));
  };

  // Addresses interleave over channels in interleave_bytes stripes, so the capacity must be a whole
  // number of stripes across all channels or the last channel would be partially populated.
  const bool stripe_overflows = c.dram_interleave_bytes > std::numeric_limits<std::uint64_t>::max() / c.dram_channels;
  const std::uint64_t stripe = c.dram_interleave_bytes * c.dram_channels;
  if (stripe_overflows || c.dram_bytes % stripe != 0)
    fail({"dram.capacity_bytes", "dram.channels", "dram.interleave_bytes"},
         "dram.capacity_bytes (" + format_bytes(c.dram_bytes) +
             ") must be a multiple of dram.interleave_bytes x dram.channels = " +
             format_bytes(c.dram_interleave_bytes) + " x " + std::to_string(c.dram_channels));

  // The L2's sets are whole: size = sets x ways x line.
  if (c.l2_cache && (c.l2_bytes == 0 || c.l2_bytes % (std::uint64_t{c.l2_line_bytes} * c.l2_ways) != 0))
    fail({"l2.cache", "l2.size_bytes", "l2.line_bytes", "l2.ways"},
         "with l2.cache on, l2.size_bytes (" + format_bytes(c.l2_bytes) +
             ") must be a nonzero multiple of l2.line_bytes x l2.ways = " + format_bytes(c.l2_line_bytes) + " x " +
             std::to_string(c.l2_ways));

  const struct {
    const TfuArray& array;
    const char* rows;
    const char* cols;
  } arrays[] = {{c.tfu_fp32, "tfu.fp32.rows", "tfu.fp32.cols"},
                {c.tfu_fp16, "tfu.fp16.rows", "tfu.fp16.cols"},
                {c.tfu_bf16, "tfu.bf16.rows", "tfu.bf16.cols"},
                {c.tfu_int8, "tfu.int8.rows", "tfu.int8.cols"}};
  for (const auto& a : arrays) {
    if (a.array.rows == 1 && a.array.cols == 1)  // SCALE-Sim's count would fall below the MAC roofline
      fail({a.rows, a.cols}, std::string(a.rows) + " x " + a.cols + " = 1 x 1 is not a systolic array: "
                                                                   "use at least 1 x 2 (or 0 x 0 for no TFU support)");
    if ((a.array.rows == 0) == (a.array.cols == 0)) continue;
    fail({a.rows, a.cols}, std::string(a.rows) + " = " + std::to_string(a.array.rows) + " but " + a.cols + " = " +
                               std::to_string(a.array.cols) +
                               ": set both to 0 (dtype unsupported by the TFU) or both above 0");
  }

  // Intrinsics pipeline into each other the way their folds do (compute/tfu_timing.h).
  if (c.tfu_intrinsic_overlap && !c.tfu_fold_overlap)
    fail({"tfu.intrinsic_overlap", "tfu.fold_overlap"},
         "tfu.intrinsic_overlap is true but tfu.fold_overlap is false: back-to-back intrinsics pipeline "
         "the way the folds of one intrinsic do, so they need fold_overlap: true");

  // bf16 reaches the TFU only through the VFU's conversions (kernels cast fp32 to bf16 there).
  if (c.tfu_bf16.supported() && !c.vfu_bf16)
    fail({"tfu.bf16.rows", "tfu.bf16.cols", "vfu.bf16"},
         "tfu.bf16 is " + std::to_string(c.tfu_bf16.rows) + " x " + std::to_string(c.tfu_bf16.cols) +
             " but vfu.bf16 is false: a chip with a bf16 tensor array converts bf16 on its VFU, set "
             "vfu.bf16: true");

  // The chips' links (config/topology.h): a valid name, pairs inside the system and its hosts,
  // no chip over its ports.
  try {
    Topology topology(topology_spec(c));
    if (topology.hosts() > 1 && c.network_nic_bandwidth_gbps <= 0)
      fail({"network.nic_bandwidth_gbps", "network.chips_per_host", "devices"},
           "network.nic_bandwidth_gbps is 0, but devices = " + std::to_string(c.device_count) +
               " with network.chips_per_host = " + std::to_string(c.network_chips_per_host) + " makes " +
               std::to_string(topology.hosts()) + " hosts: chips of different hosts need a network");
  } catch (const std::invalid_argument& e) {
    fail({"mlu_link.topology", "mlu_link.links", "mlu_link.ports", "network.chips_per_host", "devices"}, e.what());
  }

  // Pageable copies are staged through pinned buffers, so they cannot beat pinned ones.
  if (c.host_link_pageable_gbps > c.host_link_bandwidth_gbps)
    fail({"host_link.pageable_bandwidth_gbps", "host_link.bandwidth_gbps"},
         "host_link.pageable_bandwidth_gbps (" + format_real(c.host_link_pageable_gbps) +
             " GB/s) must not exceed host_link.bandwidth_gbps (" + format_real(c.host_link_bandwidth_gbps) +
             " GB/s): pageable copies are staged through pinned buffers");
}

HardwareConfig build(Tree tree, const std::string& file, const std::vector<ConfigOverride>& overrides) {
  apply_overrides(tree, overrides);
  reject_unknown_keys(tree);
  apply_defaults(tree);
  reject_missing_keys(tree, file);
  HardwareConfig config{};
  for (const Field& field : schema()) FieldReader(field, tree.at(field.key)).store(config);
  check_consistency(config, tree);
  config.source_file = file;
  return config;
}

}  // namespace

ConfigError::ConfigError(std::string file, std::string key, const std::string& reason)
    : std::runtime_error(format_error(file, key, reason)), file_(std::move(file)), key_(std::move(key)) {}

const TfuArray& HardwareConfig::tfu_array(DType t) const {
  static const TfuArray kUnsupported{};
  switch (t) {
    case DType::kFloat32: return tfu_fp32;
    case DType::kFloat16: return tfu_fp16;
    case DType::kBFloat16: return tfu_bf16;
    case DType::kInt8: return tfu_int8;
    default: return kUnsupported;
  }
}

// Presets are found, in order: $MLUSIM_CONFIG_DIR; <prefix>/share/mlusim/configs beside an
// installed libmlusim_sim (<prefix>/lib/...); the source tree's configs/ (build tree use).
fs::path config_dir() {
  const char* env = std::getenv("MLUSIM_CONFIG_DIR");
  if (env != nullptr && *env != '\0') return fs::path(env);
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&default_config_name), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const fs::path installed = fs::path(info.dli_fname).parent_path().parent_path() / "share" / "mlusim" / "configs";
    if (fs::is_directory(installed, ec)) return installed;
  }
  return fs::path(MLUSIM_SOURCE_CONFIG_DIR);
}

const char* default_config_name() { return "mlu370-x4"; }

fs::path resolve_config_path(const std::string& name_or_path) {
  std::error_code ec;  // a name too long for the file system is "no such file", not an exception
  if (looks_like_path(name_or_path)) {
    const fs::path path(name_or_path);
    if (!fs::is_regular_file(path, ec))
      throw ConfigError(name_or_path, "",
                        "no such config file (presets in " + config_dir().string() + ": " + preset_list() + ")");
    return path;
  }
  const fs::path path = config_dir() / (name_or_path + ".yaml");
  if (name_or_path.empty() || !fs::is_regular_file(path, ec))
    throw ConfigError(name_or_path.empty() ? std::string("\"\"") : name_or_path, "",
                      "unknown preset (available in " + config_dir().string() + ": " + preset_list() + ")");
  return path;
}

HardwareConfig load_config(const std::string& name_or_path, const std::vector<ConfigOverride>& overrides) {
  const fs::path path = resolve_config_path(name_or_path);
  return build(read_config_file(path), path.string(), overrides);
}

HardwareConfig parse_config(const std::string& yaml_text, const std::string& origin,
                            const std::vector<ConfigOverride>& overrides) {
  return build(read_config_text(yaml_text, origin, config_dir()), origin, overrides);
}

ConfigOverride parse_config_override(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(kOverrideOrigin, text, "expected key=value (e.g. dram.bandwidth_gbps=200)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace mlusim::sim
