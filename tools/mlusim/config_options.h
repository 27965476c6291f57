// --config / --set, shared by every subcommand that builds a simulated device.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mlusim/sim/config.h"

namespace mlusim::cli {

struct ConfigOptions {
  std::string config = sim::default_config_name();
  std::vector<std::string> sets;
  void add_to(CLI::App& app);
  // Loads the preset with the overrides; a bad value raises sim::ConfigError naming file and key.
  sim::HardwareConfig load() const;
};

}  // namespace mlusim::cli
