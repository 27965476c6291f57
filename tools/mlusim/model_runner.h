// Runs a TorchScript model on a simulated MLU through the PyTorch bridge and collects what
// `mlusim run` and `mlusim compare` print: the bridge's cycle report plus the run's header.
// The only part of the CLI that includes torch headers (model_runner.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlusim/torch/fusion.h"

namespace mlusim::cli {

// A model: its TorchScript file and what its sidecar says (inputs with -1 for the batch, the
// training loss "cross_entropy" (with `classes`) or "mse").
struct ModelSpec {
  std::string name;
  std::filesystem::path file;
  std::vector<std::vector<std::int64_t>> inputs;
  std::string loss = "mse";
  std::int64_t classes = 0;
  std::int64_t vocab = 0;  // > 0: the inputs are token ids in [0, vocab) (language models)
  std::string description;
};

// The built-in models' folder: $MLUSIM_MODEL_DIR, else <prefix>/share/mlusim/models beside an
// installed mlusim, else the build tree's models/.
std::filesystem::path model_dir();
std::vector<std::string> builtin_model_names();
// A built-in name or a TorchScript file (.pt); `input_shapes` ("1,3,224,224", -1 or B = batch)
// replace the sidecar's inputs and are required for files without one. Throws
// std::invalid_argument naming what to fix.
ModelSpec resolve_model(const std::string& name_or_path, const std::vector<std::string>& input_shapes);

struct RunOptions {
  ModelSpec model;
  std::string config;                  // preset name or YAML path
  std::vector<std::string> overrides;  // key=value
  std::int64_t batch = 1;
  std::string dtype = "float32";       // float32 | float16
  bool train = false;                  // forward + backward + SGD step per iteration
  int iterations = 1;
  int warmup = 0;                      // untimed iterations before the measured ones
  bool timing_only = false;
  bool fallback = false;               // run ops without a device kernel on the CPU (counted)
  std::string trace_path;              // "" = no trace
  int trace_level = 1;                 // 1 ops, 2 + intrinsics
  bool progress = true;                // progress line on stderr when it is a terminal
  double learning_rate = 0.01;
  std::uint64_t seed = 0;
  bool fuse = false;                   // rewrite the graph with the fused ops (inference only)
  bridge::FusionOptions fusion;        // which patterns when fusing
};

struct RunResult {
  nlohmann::json report;  // the run report (schema in docs/cli.md: "mlusim_run": 1, ...)
  std::string text;       // the bridge's text cycle report
  std::map<std::string, int> fusion_matches;  // pattern -> fused nodes (when RunOptions::fuse)
};

// GDRAM bytes read + written in a run report (its cycle report's memory traffic).
double gdram_bytes(const nlohmann::json& run_report);

// Loads the config, runs the model, returns the reports. Throws std::runtime_error (config and
// model errors with the loader's message), c10 errors from ops surface as std::runtime_error.
RunResult run_model(const RunOptions& options);

}  // namespace mlusim::cli
