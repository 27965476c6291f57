#include "config_options.h"

namespace mlusim::cli {

void ConfigOptions::add_to(CLI::App& app) {
  app.add_option("-c,--config", config, "hardware preset name (configs/: tiny, mlu270, mlu370-x4, mlu370-x8, mlu370-x8-server, mlu370-x8-cluster, mlu590, tpu-v3, h200) or a YAML file path")
      ->capture_default_str();
  app.add_option("--set", sets, "override one config key, e.g. --set dram.bandwidth_gbps=200 (repeatable)");
}

sim::HardwareConfig ConfigOptions::load() const {
  std::vector<sim::ConfigOverride> overrides;
  for (const std::string& s : sets) overrides.push_back(sim::parse_config_override(s));
  return sim::load_config(config, overrides);
}

}  // namespace mlusim::cli
