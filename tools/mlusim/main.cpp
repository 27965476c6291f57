// mlusim: run work on a simulated MLU and see where the cycles go.
#include <cstdio>
#include <exception>

#include "commands.h"
#include "mlusim/sim/config.h"

int main(int argc, char** argv) {
  CLI::App app{"mlusim " MLUSIM_VERSION ": a cycle-approximate MLU simulator"};
  app.set_version_flag("--version", "mlusim " MLUSIM_VERSION);
  app.require_subcommand(1);
  const mlusim::cli::Command demo = mlusim::cli::add_demo_command(app);
  const mlusim::cli::Command info = mlusim::cli::add_info_command(app);
  const mlusim::cli::Command tfu = mlusim::cli::add_tfu_command(app);
  const mlusim::cli::Command report = mlusim::cli::add_report_command(app);
  const mlusim::cli::Command validate = mlusim::cli::add_validate_command(app);
#ifdef MLUSIM_CLI_WITH_TORCH
  const mlusim::cli::Command run = mlusim::cli::add_run_command(app);
  const mlusim::cli::Command compare = mlusim::cli::add_compare_command(app);
  const mlusim::cli::Command compare_precision = mlusim::cli::add_compare_precision_command(app);
#endif
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("demo")) return demo();
    if (app.got_subcommand("info")) return info();
    if (app.got_subcommand("tfu")) return tfu();
    if (app.got_subcommand("report")) return report();
    if (app.got_subcommand("validate")) return validate();
#ifdef MLUSIM_CLI_WITH_TORCH
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("compare")) return compare();
    if (app.got_subcommand("compare-precision")) return compare_precision();
#endif
  } catch (const mlusim::sim::ConfigError& e) {
    std::fprintf(stderr, "mlusim: invalid config: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlusim: %s\n", e.what());
    return 1;
  }
  return 1;
}
