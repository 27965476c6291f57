// Reading config YAML into a flat key -> value map, following `extends:` chains.
//
// Each document is flattened to dotted key paths ("dram.bandwidth_gbps"); a file that extends
// another starts from the other's map and replaces the keys it sets, which is a deep merge of the
// nested maps in which the later file wins. Every value remembers the file and line it came from,
// so an error names the file that actually holds the bad value.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace mlusim::sim::config_internal {

struct Leaf {
  YAML::Node value;  // a scalar normally; a map, sequence or null when the file has the wrong shape
  std::string file;  // file (or origin / "override") that set the value
  int line = 0;      // 1-based line in `file`; 0 when unknown
  int order = 0;     // merge order: a leaf from a later file (or an override) has a higher order
};

using Tree = std::map<std::string, Leaf>;

// True when `name_or_path` names a file rather than a preset: it contains '/' or ends in ".yaml".
bool looks_like_path(const std::string& name_or_path);

// Names of the presets (*.yaml) in config_dir(), sorted, and the same as "a, b, c" for messages.
std::vector<std::string> preset_names();
std::string preset_list();

// Appends " (line N)" when the line is known.
std::string at_line(const std::string& reason, int line);

// Reads a YAML file and everything it extends. Throws ConfigError.
Tree read_config_file(const std::filesystem::path& path);

// Reads YAML text; `origin` names it in errors and `extends:` is resolved against `base_dir`.
Tree read_config_text(const std::string& text, const std::string& origin, const std::filesystem::path& base_dir);

}  // namespace mlusim::sim::config_internal
