#include "run_options.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "mlusim/sim/config.h"
#include "numeric_options.h"

namespace mlusim::cli {

void ModelRunOptions::add_to(CLI::App& cmd, bool with_config) {
  std::string models;
  for (const auto& n : builtin_model_names()) models += (models.empty() ? "" : ", ") + n;
  cmd.add_option("model", model, "Built-in model (" + models + ") or a TorchScript .pt file")->required();
  cmd.add_option("--input-shape", input_shapes,
                 "Input shape, comma separated, B for the batch (e.g. B,3,224,224); once per input; "
                 "needed for TorchScript files without a <file>.json sidecar");
  if (with_config) {
    config = sim::default_config_name();
    cmd.add_option("-c,--config", config, "Hardware preset or YAML file")->capture_default_str();
    cmd.add_option("--set", sets, "Override a config key, key=value (repeatable)");
  }
  cmd.add_option("-b,--batch", batch, "Batch size")->capture_default_str()->check(integer_in(1, kMaxBatch));
  cmd.add_option("--dtype", dtype, "Data type of weights and activations")
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "float16"}));
  cmd.add_flag("--train", train, "One training step per iteration: forward, backward, SGD (default: inference)");
  cmd.add_option("-n,--iterations", iterations, "Measured iterations")
      ->capture_default_str()
      ->check(integer_in(1, kMaxIterations));
  cmd.add_option("--warmup", warmup, "Unmeasured iterations first (allocator cache, handles)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxIterations));
  cmd.add_flag("--timing-only", timing_only,
               "Skip floating-point arithmetic in kernels (same simulated time, less host time, results meaningless)");
  cmd.add_flag("--fallback", fallback,
               "Run ops without a device kernel on the CPU (counted in the report) instead of failing");
  cmd.add_option("--trace-level", trace_level, "Trace detail: ops, or intrinsics (large)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ops", "intrinsics"}));
  cmd.add_option("--lr", learning_rate, "SGD learning rate for --train")
      ->capture_default_str()
      ->check(real_in(0, std::numeric_limits<double>::infinity()));
  cmd.add_option("--seed", seed, "Seed of the random inputs, labels and device generator")
      ->capture_default_str()
      ->check(integer_in(0));
  cmd.add_flag("--no-progress", no_progress, "No progress line on stderr");
  cmd.add_flag("--channels-last", channels_last,
               "4-d inputs, parameters and buffers in torch.channels_last (NHWC strides), as "
               "model.to(memory_format=torch.channels_last): convolutions take libmlu's direct NHWC kernels");
  cmd.add_flag("--fuse", fuse,
               "Inference with the graph fused (conv+BN+activation, linear+activation, elementwise chains); "
               "`run` also runs it unfused and prints both");
  cmd.add_option("--fuse-patterns", fuse_patterns, "Only these fusion patterns (comma separated; implies --fuse)")
      ->delimiter(',')
      ->check(CLI::IsMember({"conv_bn_act", "linear_act", "elementwise"}));
}

RunOptions ModelRunOptions::resolve() const {
  RunOptions o;
  o.model = resolve_model(model, input_shapes);
  o.config = config;
  o.overrides = sets;
  o.batch = batch;
  o.dtype = dtype;
  o.train = train;
  o.iterations = iterations;
  o.warmup = warmup;
  o.timing_only = timing_only;
  o.fallback = fallback;
  o.trace_level = trace_level == "intrinsics" ? 2 : 1;
  o.progress = !no_progress;
  o.learning_rate = learning_rate;
  o.seed = seed;
  o.fuse = fuse || !fuse_patterns.empty();
  o.channels_last = channels_last;
  if (!fuse_patterns.empty()) {
    auto has = [&](const char* p) { return std::find(fuse_patterns.begin(), fuse_patterns.end(), p) != fuse_patterns.end(); };
    o.fusion.conv_bn_act = has("conv_bn_act");
    o.fusion.linear_act = has("linear_act");
    o.fusion.elementwise = has("elementwise");
  }
  return o;
}

std::string ModelRunOptions::config_label() const {
  const std::filesystem::path p(config);
  return p.has_extension() ? p.stem().string() : config;
}

}  // namespace mlusim::cli
