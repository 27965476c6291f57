// Subcommands of the mlusim program. Each registers its options on the CLI11 app and returns
// the function that runs it (exit code 0 on success).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace mlusim::cli {

using Command = std::function<int()>;

Command add_demo_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_tfu_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_validate_command(CLI::App& app);  // needs libmlu (links the driver)
#ifdef MLUSIM_CLI_WITH_TORCH
Command add_run_command(CLI::App& app);      // needs the PyTorch bridge
Command add_compare_command(CLI::App& app);
Command add_compare_precision_command(CLI::App& app);  // runs python -m torch_mlu.compare_precision
#endif

}  // namespace mlusim::cli
