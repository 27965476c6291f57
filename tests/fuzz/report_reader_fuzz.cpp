// Fuzz target: the reader behind `mlusim report` (tools/mlusim/report_command.cpp): the run report
// parsed with nlohmann::json::parse, report::check_run_report, and the HTML page of
// report::build_html_report (tools/mlusim/html_report.h) without a trace, with a parsed trace, and
// with the trace streamed from an std::istream (the form `mlusim report` uses for trace files).
//
// Input: the run report's JSON text, optionally followed by a NUL byte and the trace's JSON text
// (JSON text never holds a raw NUL, so the first one splits the two).
//
// Expected outcomes: a page; nlohmann::json::parse_error or json::out_of_range (a number too large
// for a double, e.g. 1e999) from parsing the run report or the trace; report::RunReportError
// (not an object with "mlusim_run").
// Findings: any other exception (e.g. an nlohmann type_error from the page builder reading a field
// of an unexpected type), a crash, a hang, a sanitizer report, and pages that break what
// html_report.h promises:
//   - the parsed and the streamed trace give the same page;
//   - the page is valid UTF-8 (the inputs are: nlohmann rejects anything else);
//   - no text from the inputs becomes markup: the page has exactly the page's own <script> tags.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "html_report.h"

namespace {

using nlohmann::json;
namespace report = mlusim::report;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "report_reader_fuzz: FINDING: %s\n", what.c_str());
  std::abort();
}

// Occurrences of `what` (lower case ASCII) in `text`, ignoring ASCII case.
std::size_t count_nocase(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + what.size() <= text.size(); ++i) {
    std::size_t k = 0;
    while (k < what.size()) {
      char c = text[i + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != what[k]) break;
      ++k;
    }
    if (k == what.size()) ++n;
  }
  return n;
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

std::size_t g_scripts = 0;  // <script tags of a page, set by LLVMFuzzerInitialize

void check_page(const std::string& page, const char* how) {
  if (page.rfind("<!DOCTYPE html>", 0) != 0) finding(std::string(how) + ": the page does not start with <!DOCTYPE html>");
  if (!valid_utf8(page)) finding(std::string(how) + ": the page is not valid UTF-8");
  if (count_nocase(page, "<script") != g_scripts)
    finding(std::string(how) + ": the page has " + std::to_string(count_nocase(page, "<script")) +
            " <script tags, not the page's own " + std::to_string(g_scripts));
}

report::HtmlReportOptions options() {
  report::HtmlReportOptions o;
  o.max_bars = 16;  // small, so that a few slices already take the merged-bars path
  o.run_label = "run.json";
  o.trace_label = "run.trace.json";
  o.generator = "mlusim fuzz";
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string page = report::build_html_report(json{{"mlusim_run", 1}}, nullptr);
  g_scripts = count_nocase(page, "<script");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string run_text = input.substr(0, nul);
  const bool has_trace = nul != std::string::npos;
  const std::string trace_text = has_trace ? input.substr(nul + 1) : std::string();

  json run;
  try {
    run = json::parse(run_text);
  } catch (const json::parse_error&) {
    return 0;
  } catch (const json::out_of_range&) {
    return 0;
  }
  try {
    report::check_run_report(run);
  } catch (const report::RunReportError&) {
    // build_html_report must refuse it the same way.
    try {
      (void)report::build_html_report(run, nullptr);
    } catch (const report::RunReportError&) {
      return 0;
    }
    finding("build_html_report accepted a run report that check_run_report rejects");
  }

  report::HtmlReportOptions no_trace = options();
  no_trace.trace_label.clear();
  no_trace.trace_note = "fuzz input without a trace <b>&amp;</b>";
  check_page(report::build_html_report(run, nullptr, no_trace), "no trace");
  if (!has_trace) return 0;

  // The trace as `mlusim report` reads a file: streamed.
  std::string streamed;
  bool stream_parsed = true;
  try {
    std::istringstream in(trace_text);
    streamed = report::build_html_report(run, in, options());
  } catch (const json::parse_error&) {
    stream_parsed = false;
  } catch (const json::out_of_range&) {
    stream_parsed = false;
  }
  if (stream_parsed) check_page(streamed, "streamed trace");

  // The same trace parsed first.
  json trace;
  try {
    trace = json::parse(trace_text);
  } catch (const json::parse_error&) {
    if (stream_parsed) finding("the streamed trace parsed but json::parse rejects it");
    return 0;
  } catch (const json::out_of_range&) {
    if (stream_parsed) finding("the streamed trace parsed but json::parse rejects it");
    return 0;
  }
  if (!stream_parsed) finding("json::parse accepts the trace but the streamed reader rejects it");
  const std::string parsed = report::build_html_report(run, &trace, options());
  check_page(parsed, "parsed trace");
  if (parsed != streamed) {
    std::size_t at = 0;
    while (at < parsed.size() && at < streamed.size() && parsed[at] == streamed[at]) ++at;
    const std::size_t from = at > 80 ? at - 80 : 0;
    finding("the parsed and the streamed trace give different pages; from byte " + std::to_string(from) +
            ":\nparsed:   " + parsed.substr(from, 240) + "\nstreamed: " + streamed.substr(from, 240));
  }
  return 0;
}
