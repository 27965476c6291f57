// `mlusim compare-precision MODEL [options]`: layer-by-layer precision of a model on the simulated
// device against the CPU in float64 (torch_mlu.compare, issue 12). The comparison hooks every
// module of an eager PyTorch model, so it runs in the project venv's Python: this command runs
// `python -m torch_mlu.compare_precision MODEL [options]` with the build tree's torch_mlu first on
// PYTHONPATH, passes every option through, and returns its exit status (0; 1 with --check when a
// layer is flagged; 2 for bad usage). The options are that module's: --mode, --input-shape,
// --num-classes, --config, --set, --threshold, --json, --html, --check, ... (see --help of
// `python -m torch_mlu.compare_precision`).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"

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
    const char* env = std::getenv("MLUSIM_PYTHON");
    const std::string python = env != nullptr && *env != '\0' ? env : MLUSIM_PYTHON_EXECUTABLE;
    std::vector<std::string> args{python, "-m", "torch_mlu.compare_precision", *model};
    for (const std::string& extra : sub->remaining()) args.push_back(extra);
    std::string path = MLUSIM_TORCH_PYTHONPATH;
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += std::string(":") + old;
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    const pid_t pid = fork();
    if (pid < 0) {
      std::cerr << "mlusim compare-precision: fork failed: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (pid == 0) {
      setenv("PYTHONPATH", path.c_str(), 1);
      execvp(argv[0], argv.data());
      std::cerr << "mlusim compare-precision: cannot run " << python << ": " << std::strerror(errno)
                << " (set MLUSIM_PYTHON to the project venv's python)\n";
      _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  };
}

}  // namespace mlusim::cli
