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
#include "model_spec.h"

namespace mlusim::cli {

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
  std::string profile_path;            // "" = none; else torch.profiler's trace (Kineto JSON) of the measured iterations
  int trace_level = 1;                 // 1 ops, 2 + intrinsics
  bool progress = true;                // progress line on stderr when it is a terminal
  double learning_rate = 0.01;
  std::uint64_t seed = 0;
  bool fuse = false;                   // rewrite the graph with the fused ops (inference only)
  bool channels_last = false;          // 4-d floating inputs, parameters and buffers in channels_last
  bridge::FusionOptions fusion;        // which patterns when fusing
};

struct RunResult {
  nlohmann::json report;  // the run report (schema in docs/cli.md: "mlusim_run": 1, ...)
  std::string text;       // the bridge's text cycle report
  std::map<std::string, int> fusion_matches;  // pattern -> fused nodes (when RunOptions::fuse)
};

// Bytes across the DRAM channels in a run report (its cycle report's memory traffic: GDRAM read +
// written, less the reads the L2 served, plus its over-fetch).
double dram_bytes(const nlohmann::json& run_report);

// Loads the config, runs the model, returns the reports. Throws std::runtime_error (config and
// model errors with the loader's message), c10 errors from ops surface as std::runtime_error.
RunResult run_model(const RunOptions& options);

}  // namespace mlusim::cli
