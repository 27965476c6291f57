// `mlusim report RUN.json`: the HTML page of a model run (html_report.h) from its JSON report and
// its trace. The trace is --trace, else the run's "trace" field (relative to the run JSON's
// folder). A trace the run names but that is gone gives a page without the trace plots and a
// warning; a file given on the command line must be readable.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "numeric_options.h"
#include "html_report.h"

namespace mlusim::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string run;
  std::string trace;
  std::string output;
  std::size_t max_bars = 5000;
};

// A failure the user fixes by changing the arguments or the files (printed, exit status 1).
struct UsageError {
  std::string message;
};

std::ifstream open_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError{what + std::string(" '") + path + "' does not exist"};
  if (fs::is_directory(path, ec)) throw UsageError{what + std::string(" '") + path + "' is a folder, not a JSON file"};
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) throw UsageError{"cannot read " + std::string(what) + " '" + path + "'"};
  return in;
}

// A parse error, or a number beyond the double range (json::out_of_range 406: "1e999").
UsageError not_json(const std::string& path, const char* what, const nlohmann::json::exception& e) {
  return UsageError{std::string(what) + " '" + path + "' is not valid JSON (" + e.what() + ")"};
}

// RUN.json -> RUN.html (any other name gets ".html" appended).
std::string default_output(const std::string& run) {
  fs::path p(run);
  if (p.extension() == ".json") p.replace_extension(".html");
  else
    p += ".html";
  return p.string();
}

int run_report(const ReportOptions& o) {
  nlohmann::json run;
  try {
    std::ifstream in = open_file(o.run, "run report");
    run = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw not_json(o.run, "run report", e);
  }
  try {
    report::check_run_report(run);
  } catch (const report::RunReportError& e) {
    throw UsageError{"'" + o.run + "': " + e.what()};
  }

  report::HtmlReportOptions page;
  page.max_bars = o.max_bars;
  page.run_label = o.run;
  page.generator = "mlusim " MLUSIM_VERSION;
  std::string html;
  if (!o.trace.empty()) {
    // Named on the command line: it must be there and be JSON.
    std::ifstream in = open_file(o.trace, "trace");
    page.trace_label = o.trace;
    try {
      html = report::build_html_report(run, in, page);
    } catch (const nlohmann::json::exception& e) {
      throw not_json(o.trace, "trace", e);
    }
  } else if (run.contains("trace") && run["trace"].is_string() && !run["trace"].get<std::string>().empty()) {
    // Named by the run: relative to the run report's folder. Missing or broken: a page without it.
    fs::path path = run["trace"].get<std::string>();
    if (path.is_relative()) path = fs::path(o.run).parent_path() / path;
    try {
      std::ifstream in = open_file(path.string(), "trace");
      page.trace_label = path.string();
      try {
        html = report::build_html_report(run, in, page);
      } catch (const nlohmann::json::exception& e) {
        throw not_json(path.string(), "trace", e);
      }
    } catch (const UsageError& e) {
      page.trace_label.clear();
      page.trace_note = "the run's " + e.message + ".";
      std::fprintf(stderr, "mlusim report: warning: the run's %s; the page has no timeline or memory plots\n",
                   e.message.c_str());
      html = report::build_html_report(run, nullptr, page);
    }
  } else {
    page.trace_note =
        "the run recorded none (its \"trace\" is null). Pass --trace FILE, or run the model with a trace.";
    std::fprintf(stderr, "mlusim report: warning: the run names no trace; the page has no timeline or memory plots\n");
    html = report::build_html_report(run, nullptr, page);
  }

  const std::string out = o.output.empty() ? default_output(o.run) : o.output;
  std::error_code ec;
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << html;
  file.close();
  if (!file) throw UsageError{"cannot write '" + out + "'"};
  std::printf("report: %s (%.1f KiB)\n", out.c_str(), double(html.size()) / 1024);
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "turn a model run's JSON report (mlusim run --report) and its trace into one self-contained HTML page");
  cmd->add_option("run", o->run, "the run report (JSON written by `mlusim run --report`)")->required();
  cmd->add_option("--trace", o->trace,
                  "the run's Chrome trace JSON (default: the run's \"trace\" field, relative to the run report)");
  cmd->add_option("-o,--output", o->output, "the HTML file to write (default: RUN with .html instead of .json)");
  cmd->add_option("--max-bars", o->max_bars, "timeline slices drawn one by one; shorter ones are merged")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  return [o] {
    try {
      return run_report(*o);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "mlusim report: %s\n", e.message.c_str());
      return 1;
    }
  };
}

}  // namespace mlusim::cli
