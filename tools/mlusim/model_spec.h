// What `mlusim run` / `compare` know about a model before torch is involved: which file, its
// input shapes (from the sidecar <model>.json or --input-shape), its loss and vocabulary. Torch-free,
// so the option parser can be fuzzed and tested without the PyTorch layer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mlusim::cli {

// Largest size accepted for one input dimension (--input-shape, sidecar "inputs"): a 32-bit
// extent, as torch's own kernels index. The batch is -1 until --batch fills it in.
constexpr std::int64_t kMaxInputDim = 2147483647;

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

// "B,3,224,224" -> {-1, 3, 224, 224}: comma-separated sizes in 1..kMaxInputDim, "B", "b" or -1
// for the batch. Throws std::invalid_argument naming the bad item.
std::vector<std::int64_t> parse_input_shape(const std::string& text);

// Reads a model sidecar (JSON: "inputs" list of shapes, optional "loss" mse|cross_entropy,
// "classes", "vocab", "description") into `spec`. Returns false when the file does not exist;
// throws std::invalid_argument naming the file and the field when it is not a valid sidecar.
bool read_model_sidecar(const std::filesystem::path& json_path, ModelSpec& spec);

// A built-in name or a TorchScript file (.pt, or a torch.export .pt2 converted once by the venv's
// python); `input_shapes` (parse_input_shape) replace the sidecar's inputs and are required for
// files without one. Throws std::invalid_argument naming what to fix.
ModelSpec resolve_model(const std::string& name_or_path, const std::vector<std::string>& input_shapes);

}  // namespace mlusim::cli
