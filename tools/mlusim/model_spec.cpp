#include "model_spec.h"
#include "python_module.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <nlohmann/json.hpp>

#ifndef MLUSIM_BUILD_MODEL_DIR
#error "MLUSIM_BUILD_MODEL_DIR must name the build tree's models/ folder (tools/mlusim/CMakeLists.txt)"
#endif

namespace fs = std::filesystem;

namespace mlusim::cli {

std::vector<std::int64_t> parse_input_shape(const std::string& text) {
  std::vector<std::int64_t> dims;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "B" || item == "b" || item == "-1") {
      dims.push_back(-1);
      continue;
    }
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1 || v > kMaxInputDim)
      throw std::invalid_argument("--input-shape " + text + ": '" + item + "' is not a size between 1 and " +
                                  std::to_string(kMaxInputDim) + " (use B or -1 for the batch dimension)");
    dims.push_back(v);
  }
  if (dims.empty()) throw std::invalid_argument("--input-shape: empty shape");
  return dims;
}

bool read_model_sidecar(const fs::path& json_path, ModelSpec& spec) {
  std::ifstream in(json_path);
  if (!in) return false;
  const auto fail = [&](const std::string& why) -> void {
    throw std::invalid_argument(json_path.string() + ": not a model sidecar (" + why + ")");
  };
  nlohmann::json j;
  try {
    in >> j;
    if (!j.is_object()) fail("expected a JSON object");
    std::vector<std::vector<std::int64_t>> inputs;
    for (const auto& shape : j.at("inputs")) inputs.push_back(shape.get<std::vector<std::int64_t>>());
    if (inputs.empty()) fail("\"inputs\" is empty");
    for (const auto& shape : inputs) {
      if (shape.empty()) fail("an input shape is empty");
      for (const std::int64_t d : shape)
        if (d != -1 && (d < 1 || d > kMaxInputDim))
          fail("input size " + std::to_string(d) + " is not -1 (the batch) or between 1 and " +
               std::to_string(kMaxInputDim));
    }
    spec.inputs = std::move(inputs);
    spec.loss = j.value("loss", "mse");
    if (spec.loss != "mse" && spec.loss != "cross_entropy") fail("\"loss\" must be mse or cross_entropy, got " + spec.loss);
    spec.classes = j.value("classes", std::int64_t{0});
    spec.vocab = j.value("vocab", std::int64_t{0});
    if (spec.classes < 0 || spec.vocab < 0) fail("\"classes\" and \"vocab\" must not be negative");
    if (spec.loss == "cross_entropy" && spec.classes < 1) fail("\"loss\": cross_entropy needs \"classes\" >= 1");
    spec.description = j.value("description", "");
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return true;
}

fs::path model_dir() {
  if (const char* env = std::getenv("MLUSIM_MODEL_DIR"); env != nullptr && *env != '\0') return fs::path(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "mlusim" / "models";
    if (fs::is_directory(installed, ec)) return installed;
  }
  return fs::path(MLUSIM_BUILD_MODEL_DIR);
}

// MLUSIM_BUILTIN_MODELS: tools/CMakeLists.txt's list, comma-separated.
std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  std::stringstream list(MLUSIM_BUILTIN_MODELS);
  for (std::string name; std::getline(list, name, ',');) names.push_back(name);
  return names;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A torch.export program (.pt2) as TorchScript: pt2_to_torchscript.py (beside the built-in
// models) traces it with the venv's python ($MLUSIM_PYTHON, else the one the build used) into a
// cache folder keyed by the file's path, size and modification time; later runs reuse it.
fs::path convert_exported_program(const fs::path& program) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(program, ec);
  const std::string key = absolute.string() + "|" + std::to_string(fs::file_size(program, ec)) + "|" +
                          std::to_string(fs::last_write_time(program, ec).time_since_epoch().count());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(key));
  const fs::path dir = fs::temp_directory_path() / ("mlusim-pt2-" + std::string(hex));
  const fs::path out = dir / (program.stem().string() + ".pt"), sidecar = dir / (program.stem().string() + ".json");
  if (fs::is_regular_file(out, ec) && fs::is_regular_file(sidecar, ec)) return out;
  fs::create_directories(dir, ec);
  if (ec) throw std::invalid_argument("model " + program.string() + ": cannot create " + dir.string() + ": " + ec.message());
  const std::string python = venv_python();
  const fs::path script = model_dir() / "pt2_to_torchscript.py";
  if (!fs::is_regular_file(script, ec))
    throw std::invalid_argument("model " + program.string() + ": " + script.string() +
                                " is missing; build the target mlusim_models (or set MLUSIM_MODEL_DIR)");
  const fs::path log = dir / "convert.log";
  const std::string command = shell_quote(python) + " " + shell_quote(script.string()) + " " +
                              shell_quote(absolute.string()) + " " + shell_quote(out.string()) + " " +
                              shell_quote(sidecar.string()) + " >" + shell_quote(log.string()) + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream in(log);
    std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    fs::remove(out, ec);
    throw std::invalid_argument("model " + program.string() + ": converting the torch.export program with " + python +
                                " failed: " + (message.empty() ? "no output (is it the project venv's python?)" : message));
  }
  return out;
}

}  // namespace

ModelSpec resolve_model(const std::string& name_or_path, const std::vector<std::string>& input_shapes) {
  ModelSpec spec;
  const auto names = builtin_model_names();
  if (std::find(names.begin(), names.end(), name_or_path) != names.end()) {
    spec.name = name_or_path;
    spec.file = model_dir() / (name_or_path + ".pt");
    std::error_code ec;
    if (!fs::is_regular_file(spec.file, ec))
      throw std::invalid_argument("built-in model " + name_or_path + ": " + spec.file.string() +
                                  " is missing; build the target mlusim_models (or set MLUSIM_MODEL_DIR)");
  } else {
    spec.file = name_or_path;
    std::error_code ec;
    if (!fs::is_regular_file(spec.file, ec)) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("model '" + name_or_path + "' is neither a built-in model (" + known +
                                  ") nor a TorchScript (.pt) or torch.export (.pt2) file");
    }
    spec.name = spec.file.stem().string();
    if (spec.file.extension() == ".pt2") spec.file = convert_exported_program(spec.file);
  }
  fs::path sidecar = spec.file;
  sidecar.replace_extension(".json");
  read_model_sidecar(sidecar, spec);
  if (!input_shapes.empty()) {
    spec.inputs.clear();
    for (const std::string& s : input_shapes) spec.inputs.push_back(parse_input_shape(s));
  }
  if (spec.inputs.empty())
    throw std::invalid_argument("model " + spec.file.string() +
                                ": its input shapes are unknown; give --input-shape (e.g. --input-shape B,3,224,224)");
  return spec;
}

}  // namespace mlusim::cli
