// `mlusim compare-precision MODEL [options]`: layer-by-layer precision of a model on the simulated
// device against the CPU in float64 (torch_mlu.compare, issue 12). The comparison hooks every
// module of an eager PyTorch model, so it runs in the project venv's Python: this command runs
// `python -m torch_mlu.compare_precision MODEL [options]` with the build tree's torch_mlu first on
// PYTHONPATH, passes every option through, and returns its exit status (0; 1 with --check when a
// layer is flagged; 2 for bad usage). The options are that module's: --mode, --input-shape,
// --num-classes, --config, --set, --threshold, --json, --html, --check, ... (see --help of
// `python -m torch_mlu.compare_precision`).
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "python_module.h"

namespace mlusim::cli {

Command add_compare_precision_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "compare-precision",
      "compare a model's layers on the device against the CPU in float64, forward and backward (torch_mlu.compare; "
      "options after MODEL go to python -m torch_mlu.compare_precision)");
  sub->allow_extras();
  sub->positionals_at_end(false);
  auto model = std::make_shared<std::string>();
  sub->add_option("model", *model, "torchvision builder name (shufflenet_v2_x0_5, resnet18, ...), FILE.py:FUNC or "
                                    "package.module:FUNC")
      ->required();
  return [sub, model]() -> int {
    std::vector<std::string> args{*model};
    for (const std::string& extra : sub->remaining()) args.push_back(extra);
    return run_python_module("mlusim compare-precision", "torch_mlu.compare_precision", args);
  };
}

}  // namespace mlusim::cli
