// The options `mlusim run` and `mlusim compare` share: the model, how to run it, the CPU
// fallback. Registered on a CLI11 subcommand, resolved into RunOptions after parsing.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model_runner.h"

namespace mlusim::cli {

// Bounds of the numeric options (a batch beyond this is no simulated workload anyone runs; the
// iteration counts keep a run's simulated time far inside 64-bit picoseconds).
constexpr std::int64_t kMaxBatch = 65536;
constexpr std::int64_t kMaxIterations = 1000000;

struct ModelRunOptions {
  std::string model;
  std::vector<std::string> input_shapes;
  std::string config = "mlu370-x4";  // sim::default_config_name()
  std::vector<std::string> sets;
  std::int64_t batch = 1;
  std::string dtype = "float32";
  bool train = false;
  int iterations = 1;
  int warmup = 0;
  bool timing_only = false;
  bool fallback = false;
  bool no_progress = false;
  std::string trace_level = "ops";
  double learning_rate = 0.01;
  std::uint64_t seed = 0;
  bool fuse = false;
  std::vector<std::string> fuse_patterns;  // empty = all
  bool channels_last = false;

  // `with_config`: false for compare (it takes a list of configs instead).
  void add_to(CLI::App& cmd, bool with_config = true);
  RunOptions resolve() const;
  // The config as it goes in file names: the preset name or the YAML file's stem.
  std::string config_label() const;
};

}  // namespace mlusim::cli
