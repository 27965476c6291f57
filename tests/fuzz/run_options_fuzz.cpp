// Fuzz target: the option parser of `mlusim run` and `mlusim compare` (tools/mlusim/run_options.h):
// ModelRunOptions::add_to on a CLI11 app, CLI11's parse, then ModelRunOptions::resolve() (the
// model file, its sidecar <model>.json and --input-shape) and config_label().
//
// Input: the command line, one argv token per line ('\n'; a final newline ends the last token).
// The first token picks the subcommand as in `mlusim`: "run" or "compare" (anything else is
// parsed too and must fail with a CLI11 ParseError: a subcommand is required).
//
// Expected outcomes: options resolved; CLI::ParseError (CLI11: unknown option, bad value,
// failed validator, --help...) from the parse; std::invalid_argument (unknown model, bad shape,
// bad sidecar) from resolve().
// Findings: any other exception (e.g. std::out_of_range from std::stoll, CLI::ConstructionError,
// a filesystem_error), a crash, a hang, a sanitizer report, and resolved options outside the
// bounds the validators promise (batch, iterations, warmup, learning rate, input sizes).
//
// Files. The fuzzer runs in a scratch folder (it changes its current directory there in
// LLVMFuzzerInitialize, so give it corpus folders and -artifact_prefix as absolute paths), which holds a few
// models: model.pt with a valid sidecar model.json, noshape.pt without a sidecar, bad.pt with a
// sidecar that is not JSON, wrong.pt with a sidecar of the wrong types. $MLUSIM_MODEL_DIR points
// at a scratch models folder with every built-in model as an empty .pt, some with sidecars. Paths
// in the input may name any file, but resolve() only tests files for existence and reads
// <model>.json sidecars, except for one thing the fuzzer must not reach: a model file ending in
// ".pt2" that exists is converted by running python (model_spec.cpp, convert_exported_program).
// So resolve() is skipped when the model's extension is ".pt2" (the same test resolve_model
// makes); parsing still covers such tokens.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model_spec.h"
#include "run_options.h"

namespace {

namespace fs = std::filesystem;
using mlusim::cli::ModelRunOptions;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "run_options_fuzz: FINDING: %s\n", what.c_str());
  std::abort();
}

fs::path g_scratch;

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

void remove_scratch() {
  std::error_code ec;
  if (!g_scratch.empty()) fs::remove_all(g_scratch, ec);
}

void check_resolved(const mlusim::cli::RunOptions& o, const ModelRunOptions& opts) {
  if (o.batch < 1 || o.batch > mlusim::cli::kMaxBatch) finding("batch " + std::to_string(o.batch) + " passed the validator");
  if (o.iterations < 1 || o.iterations > mlusim::cli::kMaxIterations) finding("iterations " + std::to_string(o.iterations));
  if (o.warmup < 0 || o.warmup > mlusim::cli::kMaxIterations) finding("warmup " + std::to_string(o.warmup));
  if (!(o.learning_rate >= 0) || !std::isfinite(o.learning_rate)) finding("learning rate " + std::to_string(o.learning_rate));
  if (o.dtype != "float32" && o.dtype != "float16") finding("dtype '" + o.dtype + "' passed the validator");
  if (o.trace_level != 1 && o.trace_level != 2) finding("trace level " + std::to_string(o.trace_level));
  if (o.model.inputs.empty()) finding("a resolved model without input shapes");
  for (const auto& shape : o.model.inputs) {
    if (shape.empty()) finding("an empty input shape");
    for (const std::int64_t d : shape)
      if (d != -1 && (d < 1 || d > mlusim::cli::kMaxInputDim)) finding("input size " + std::to_string(d));
  }
  if (!opts.fuse_patterns.empty() && !o.fuse) finding("--fuse-patterns without fusing");
  (void)opts.config_label();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("MLUSIM_CONFIG_DIR", MLUSIM_FUZZ_CONFIG_DIR, /*overwrite=*/0);
  std::string pattern = (fs::temp_directory_path() / "mlusim_run_options_fuzz_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) finding("mkdtemp failed");
  g_scratch = pattern;
  std::atexit(remove_scratch);
  const fs::path work = g_scratch / "cwd", models = g_scratch / "models";
  fs::create_directories(work);
  fs::create_directories(models);
  const std::string sidecar = R"({"inputs": [[-1, 3, 8, 8]], "loss": "cross_entropy", "classes": 10})";
  write(work / "model.pt", "");
  write(work / "model.json", sidecar);
  write(work / "noshape.pt", "");
  write(work / "bad.pt", "");
  write(work / "bad.json", "{not json");
  write(work / "wrong.pt", "");
  write(work / "wrong.json", R"({"inputs": [["B", 3]], "loss": 7, "classes": -1})");
  for (const std::string& name : mlusim::cli::builtin_model_names()) write(models / (name + ".pt"), "");
  write(models / "resnet18.json", sidecar);
  write(models / "mlp.json", R"({"inputs": [[-1, 32]], "loss": "mse", "vocab": 0, "description": "fuzz"})");
  write(models / "gpt2-small.json", R"({"inputs": [[-1, 128]], "loss": "cross_entropy", "classes": 0, "vocab": 50257})");
  setenv("MLUSIM_MODEL_DIR", models.c_str(), 1);
  if (chdir(work.c_str()) != 0) finding("chdir into the scratch folder failed");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (!input.empty() && input.back() == '\n') input.pop_back();
  std::vector<std::string> tokens;
  if (size > 0) {
    std::size_t begin = 0;
    while (true) {
      const std::size_t end = input.find('\n', begin);
      tokens.push_back(input.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
      if (end == std::string::npos) break;
      begin = end + 1;
    }
  }

  CLI::App app{"mlusim (fuzz)"};
  app.require_subcommand(1);
  ModelRunOptions run_opts, compare_opts;
  CLI::App* run = app.add_subcommand("run", "run a model");
  run_opts.add_to(*run, /*with_config=*/true);
  CLI::App* compare = app.add_subcommand("compare", "compare configs");
  compare_opts.add_to(*compare, /*with_config=*/false);

  // CLI11 takes the arguments in reverse order.
  std::vector<std::string> args(tokens.rbegin(), tokens.rend());
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
    return 0;
  }
  const ModelRunOptions& opts = run->parsed() ? run_opts : compare_opts;
  if (!run->parsed() && !compare->parsed()) finding("parse succeeded without a subcommand");
  if (fs::path(opts.model).extension() == ".pt2") return 0;  // would run python: see the header
  try {
    check_resolved(opts.resolve(), opts);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
