// Subcommands whose work is Python (they hook eager modules or call torch.compile) run a module
// of the torch_mlu package in the project venv's python, with the build tree's torch_mlu first on
// PYTHONPATH, and pass its exit status on: `compare-precision` (torch_mlu.compare_precision) and
// `run --compile` (torch_mlu.compile_run).
#pragma once

#include <string>
#include <vector>

namespace mlusim::cli {

// The venv's python: $MLUSIM_PYTHON if set and non-empty, else the one the build used.
std::string venv_python();

// Runs `python -m <module> <args...>` as a child process with stdout/stderr inherited and returns
// its exit status (1 if it died from a signal or could not start; the reason goes to stderr,
// prefixed by `who`, e.g. "mlusim run --compile").
int run_python_module(const std::string& who, const std::string& module, const std::vector<std::string>& args);

}  // namespace mlusim::cli
