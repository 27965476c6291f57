// The HTML page of a model run: one self-contained file (inline SVG plots, a little inline CSS and
// JavaScript; no CDN, no network) built from the run's JSON report (`mlusim run --report`) and,
// when there is one, its Chrome trace-event JSON (traces/README.md).
//
// Sections: run header; timeline of the trace's tracks; per-op roofline; engine utilisation;
// memory and DRAM bandwidth over time (the trace's counters); tables of ops, kernels, memory
// traffic per level, allocator statistics and CPU-fallback ops. Every text that comes from the
// inputs is HTML-escaped; a section without data says so instead of drawing an empty plot.
#pragma once

#include <cstddef>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mlusim::report {

// The input is not something the page can be built from (the message says what to fix).
class RunReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HtmlReportOptions {
  // Timeline slices drawn one by one. When a trace has more, the longest `max_bars` are drawn
  // and the shorter ones are merged per track row and pixel column into grey "merged" bars.
  std::size_t max_bars = 5000;
  std::string run_label;             // how the page names the run report (its path)
  std::string trace_label;           // how the page names the trace (its path), when there is one
  std::string trace_note;            // why there is no trace (shown in place of the trace plots)
  std::string generator = "mlusim";  // "mlusim <version>", shown in the footer
};

// Throws RunReportError unless `run` is a JSON object with an "mlusim_run" key.
void check_run_report(const nlohmann::json& run);

// The whole page. `trace` may be null (no trace: the trace-based plots say why, from
// options.trace_note). A trace is either {"traceEvents": [...]} or a bare array of events.
// Throws RunReportError when check_run_report does.
std::string build_html_report(const nlohmann::json& run, const nlohmann::json* trace,
                              const HtmlReportOptions& options = {});

// The same with the trace read from `trace` while it is parsed: each event is kept in a compact
// form and its JSON dropped, so a trace of millions of events needs a fraction of its DOM's
// memory. Throws nlohmann::json::parse_error when the trace is not valid JSON, and
// nlohmann::json::out_of_range (406) for a number too large for a double (e.g. 1e999), as
// nlohmann::json::parse does.
std::string build_html_report(const nlohmann::json& run, std::istream& trace, const HtmlReportOptions& options = {});

// `text` with & < > " ' replaced by entities: safe in element content and in quoted attributes.
std::string html_escape(std::string_view text);

}  // namespace mlusim::report
