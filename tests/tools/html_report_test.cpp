// The HTML run report (tools/mlusim/html_report.h): escaping, the numbers it derives (roofline
// intensity and throughput, % of peak and of bound), the cap on timeline bars, the trace's tracks
// and counters, and a message for every section without data.
#include "html_report.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mlusim::report {
namespace {

using nlohmann::json;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// A run on `tiny`: fp32 conv (2,359,296 MACs, 80 KiB minimum, 30.72 µs), fp16 mm (64^3 MACs,
// 24 KiB, 2.048 µs) and an add without MACs. Peaks: fp32 128 GMAC/s, fp16 512 GMAC/s, 64 GB/s.
json sample_run() {
  json ops = json::array();
  ops.push_back({{"name", "aten::convolution"},
                 {"calls", 2},
                 {"libmlu_ops", 2},
                 {"kernels", 2},
                 {"cycles", 30720},
                 {"share", 0.9},
                 {"time_ns", 30720.0},
                 {"macs", 2359296},
                 {"kernel_macs_by_dtype", {{"fp32", 2359296}}},
                 {"min_dram_bytes", 81920},
                 {"dram_bytes", 98304},
                 {"roofline_bound_ns", 18432.0},
                 {"peak_macs_per_s", 1.28e11}});
  ops.push_back({{"name", "aten::mm"},
                 {"calls", 1},
                 {"libmlu_ops", 1},
                 {"kernels", 1},
                 {"cycles", 2048},
                 {"share", 0.06},
                 {"time_ns", 2048.0},
                 {"macs", 262144},
                 {"kernel_macs_by_dtype", {{"fp16", 262144}}},
                 {"min_dram_bytes", 24576},
                 {"dram_bytes", 24576},
                 {"roofline_bound_ns", 512.0},
                 {"peak_macs_per_s", 5.12e11}});
  ops.push_back({{"name", "aten::add.Tensor"},
                 {"calls", 3},
                 {"libmlu_ops", 3},
                 {"kernels", 3},
                 {"cycles", 1024},
                 {"share", 0.04},
                 {"time_ns", 1024.0},
                 {"macs", 0},
                 {"kernel_macs_by_dtype", json::object()},
                 {"min_dram_bytes", 49152},
                 {"dram_bytes", 49152},
                 {"roofline_bound_ns", 768.0},
                 {"peak_macs_per_s", 0}});
  json report = {
      {"elapsed_ns", 40000.0},
      {"kernel_launches", 6},
      {"ops", ops},
      {"kernels", json::array({{{"name", "conv_gemm"},
                                {"launches", 2},
                                {"cycles", 30720},
                                {"share", 0.9},
                                {"time_ns", 30720.0},
                                {"macs", 2359296},
                                {"vector_elements", 0},
                                {"faulted", 0}}})},
      {"engines",
       {{"TFU", {{"busy_ns", 198656.0}, {"utilisation", 0.6208}, {"intrinsics", 96}, {"cycles", 198656}}},
        {"VFU", {{"busy_ns", 0.0}, {"utilisation", 0.0}, {"intrinsics", 0}, {"cycles", 0}}}}},
      {"memory_traffic", {{"GDRAM", {{"read_bytes", 131072}, {"write_bytes", 65536}}}}},
      {"allocator", {{"allocated_bytes.all.current", 114688}, {"allocated_bytes.all.peak", 147456}, {"num_ooms", 0}}},
      {"driver_memory", {{"allocated_bytes", 2097152}}},
      {"cpu_fallback", {{"aten::nonzero", 2}}},
      {"dram_peak_bytes_per_s", 6.4e10}};
  return {{"mlusim_run", 1},
          {"model", "net"},
          {"config", "tiny"},
          {"batch", 1},
          {"dtype", "float32"},
          {"mode", "inference"},
          {"simulated_ns", 40000.0},
          {"cycles", 40000},
          {"host_seconds", 0.5},
          {"trace", nullptr},
          {"peaks",
           {{"dram_bytes_per_s", 6.4e10}, {"macs_per_s", {{"fp32", 1.28e11}, {"fp16", 5.12e11}, {"int8", 2.048e12}}}}},
          {"report", report}};
}

json meta(const std::string& name, int tid, const json& args) {
  return {{"name", name}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", args}};
}
json slice(const std::string& name, const std::string& cat, int tid, double ts, double dur,
           const json& args = json::object()) {
  return {{"name", name}, {"cat", cat}, {"ph", "X"},  {"pid", 1},
          {"tid", tid},   {"ts", ts},   {"dur", dur}, {"args", args}};
}
json counter(const std::string& name, double ts, const json& args) {
  return {{"name", name}, {"ph", "C"}, {"pid", 1}, {"tid", 3}, {"ts", ts}, {"args", args}};
}

TEST(HtmlEscape, ReplacesMarkupCharacters) {
  EXPECT_EQ(html_escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("µs · plain"), "µs · plain");
}

TEST(HtmlReport, RejectsJsonThatIsNotARunReport) {
  EXPECT_THROW(check_run_report(json::array()), RunReportError);
  EXPECT_THROW(check_run_report(json{{"elapsed_ns", 1.0}, {"ops", json::array()}}), RunReportError);
  try {
    build_html_report(json{{"config", "tiny"}}, nullptr);
    FAIL() << "no exception";
  } catch (const RunReportError& e) {
    EXPECT_NE(std::string(e.what()).find("mlusim_run"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_run_report(json{{"mlusim_run", 1}}));
}

TEST(HtmlReport, EveryTextFromTheInputsIsEscaped) {
  json run = sample_run();
  run["model"] = "<b>bold</b>";
  run["report"]["ops"][0]["name"] = "<script>alert(1)</script>";
  run["report"]["kernels"][0]["name"] = "k\"'&<>";
  run["report"]["cpu_fallback"] = {{"<img src=x onerror=alert(2)>", 1}};
  json trace = {
      {"traceEvents",
       {meta("process_name", 0, {{"name", "<i>mlu0</i>"}}), meta("thread_name", 1, {{"name", "</text><svg onload=x>"}}),
        slice("</title><script>alert(3)</script>", "op", 1, 0, 1, {{"op", "<u>"}}),
        counter("<memory> (bytes)", 0, {{"bytes", 1}})}}};
  const std::string html = build_html_report(run, &trace);
  EXPECT_EQ(count(html, "<script"), 2u) << "only the page's own two scripts";
  EXPECT_EQ(html.find("<b>bold"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_EQ(html.find("<i>mlu0"), std::string::npos);
  EXPECT_EQ(html.find("<u>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("k&quot;&#39;&amp;&lt;&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;/title&gt;&lt;script&gt;alert(3)"), std::string::npos);
}

// The run's files are links (mlusim run --profile adds torch.profiler's trace); a path with a
// scheme stays text, so a run report cannot plant a javascript: link.
TEST(HtmlReport, LinksTheRunsFilesAndShowsHostSyncs) {
  json run = sample_run();
  run["profile"] = "/tmp/prof/mlp-tiny.pt.trace.json";
  run["report"]["host_syncs"] = 12;
  run["report"]["host_sync_wait_ns"] = 3.1e6;
  HtmlReportOptions opt;
  opt.trace_label = "traces/mlp-tiny.json";
  opt.run_label = "javascript:alert(1)";
  const std::string html = build_html_report(run, nullptr, opt);
  EXPECT_NE(html.find("<a href=\"file:///tmp/prof/mlp-tiny.pt.trace.json\">/tmp/prof/mlp-tiny.pt.trace.json</a>"),
            std::string::npos);
  EXPECT_NE(html.find("<a href=\"traces/mlp-tiny.json\">"), std::string::npos);
  EXPECT_EQ(html.find("href=\"javascript:"), std::string::npos);
  EXPECT_NE(html.find("<dd>javascript:alert(1)</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dt>host syncs</dt><dd>12 blocking calls, 3.1 ms host wait</dd>"), std::string::npos);
}

TEST(HtmlReport, RooflineAndOpTableDeriveIntensityThroughputAndEfficiency) {
  const std::string html = build_html_report(sample_run(), nullptr);
  // conv: 2 x 2,359,296 / 81,920 = 57.6 FLOP/byte; 2 x 2,359,296 / 30.72 µs = 153.6 GFLOP/s,
  // 60 % of the fp32 peak (128 GMAC/s) and 18.432 / 30.72 = 60 % of its roofline bound.
  EXPECT_NE(html.find("aten::convolution (fp32)\nintensity 57.6 FLOP/byte\nachieved 153.60 GFLOP/s"),
            std::string::npos);
  EXPECT_NE(html.find("60.0 % of peak, 60.0 % of the roofline bound"), std::string::npos);
  // mm: 2 x 64^3 / 24 KiB = 21.3 FLOP/byte; 256 GFLOP/s = 25 % of 512 GMAC/s; bound 0.512 / 2.048.
  EXPECT_NE(html.find("aten::mm (fp16)\nintensity 21.3 FLOP/byte\nachieved 256.00 GFLOP/s"), std::string::npos);
  EXPECT_NE(html.find("25.0 % of peak, 25.0 % of the roofline bound"), std::string::npos);
  EXPECT_EQ(count(html, "<circle class=\"op\""), 2u) << "the add has no MACs: no intensity";
  EXPECT_NE(html.find("1 ops without MACs or DRAM bytes (no intensity) are not plotted: aten::add.Tensor"),
            std::string::npos);
  // Roofs: fp32 256 GFLOP/s and fp16 1.02 TFLOP/s drawn; int8 used by no op, only named.
  EXPECT_NE(html.find("fp32 roof: 256.00 GFLOP/s, ridge at 4 FLOP/byte"), std::string::npos);
  EXPECT_NE(html.find("fp16 roof: 1.02 TFLOP/s, ridge at 16 FLOP/byte"), std::string::npos);
  EXPECT_EQ(html.find("int8 roof"), std::string::npos);
  EXPECT_NE(html.find("not drawn): int8 4.10 TFLOP/s"), std::string::npos);
  // Op table: cycles grouped, share, % of peak and of bound as sortable values.
  EXPECT_NE(html.find("<td class=\"num\" data-v=\"30720\">30,720</td>"), std::string::npos);
  EXPECT_NE(html.find("data-v=\"0.59999999999999998\">60.0 %</td>"), std::string::npos);
  // Engines: bar width = utilisation x 520 px.
  EXPECT_NE(html.find("width=\"322.82\" height=\"18\"><title>TFU: 62.1 % utilised"), std::string::npos);
}

TEST(HtmlReport, SectionsWithoutDataSaySo) {
  const std::string html = build_html_report(json{{"mlusim_run", 1}, {"trace", nullptr}}, nullptr);
  for (const char* message :
       {"No trace: the run recorded none.",
        "The report has no ops (no ATen op ran kernels on the device), so there is nothing to plot.",
        "The report has no engine statistics.", "No ATen op ran kernels on the device", "No kernels ran on the device.",
        "The report has no memory traffic.", "The report has no caching-allocator statistics.",
        "No op fell back to the CPU", "The run report has no &quot;report&quot; object"})
    EXPECT_NE(html.find(message), std::string::npos) << message;
  EXPECT_EQ(count(html, "No trace: the run recorded none."), 3u) << "the warnings, the timeline and memory sections";

  const json empty_trace = {{"traceEvents", json::array({meta("process_name", 0, {{"name", "mlu0"}})})}};
  const std::string page = build_html_report(sample_run(), &empty_trace);
  EXPECT_NE(page.find("The trace has no slices"), std::string::npos);
  EXPECT_NE(page.find("The trace has no counter events"), std::string::npos);

  const json not_a_trace = {{"events", json::array()}};
  EXPECT_NE(build_html_report(sample_run(), &not_a_trace)
                .find("The trace could not be used: the trace has no &quot;traceEvents&quot; array"),
            std::string::npos);
}

// mlusim run --compile: eager -> compiled per metric with the ratio, the generated kernels; --fuse:
// unfused -> fused and the patterns. Runs without either have neither section nor nav link.
TEST(HtmlReport, CompiledAndFusedRunsShowBeforeAndAfter) {
  json run = sample_run();
  run["compile"] = {
      {"backend", "inductor"},
      {"compile_seconds", 12.5},
      {"compared", "first output"},
      {"max_abs_diff", 2.5e-7},
      {"totals", {{"cycles", {{"eager", 40000}, {"compiled", 30000}}}, {"dram_bytes", {{"eager", 2048}, {"compiled", 1024}}}}},
      {"patterns", {{"linear_act", 2}, {"generated_kernels", 1}, {"generated_launches", {{"program", 3}, {"eager", 1}}}}},
      {"graphs", json::array({{{"name", "<k0>"}, {"origins", {"aten.add", "aten.mul"}}, {"removed", {"buf1", "buf2"}},
                               {"launches", {{"program", 3}, {"eager", 1}}}}})}};
  std::string html = build_html_report(run, nullptr);
  EXPECT_NE(html.find("<a href=\"#compile\">torch.compile</a>"), std::string::npos);
  EXPECT_NE(html.find("<h2>torch.compile: eager → compiled</h2>"), std::string::npos);
  EXPECT_NE(html.find("backend inductor"), std::string::npos);
  EXPECT_NE(html.find("12.5 s of host time"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\" data-v=\"0.75\">0.75</td>"), std::string::npos) << "cycles 30000 / 40000";
  EXPECT_NE(html.find("<td class=\"num\" data-v=\"0.5\">0.5</td>"), std::string::npos) << "bytes 1024 / 2048";
  EXPECT_NE(html.find("GEMM/conv epilogue fusions: linear_act 2. Generated kernels: 1; their device launches per call: "
                      "eager 1, program 3."),
            std::string::npos);
  EXPECT_NE(html.find("<td>&lt;k0&gt;</td><td>aten.add, aten.mul</td>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"fusion\""), std::string::npos);

  run.erase("compile");
  run["fusion"] = {{"totals", {{"kernel launches", {{"unfused", 10}, {"fused", 4}}}}},
                   {"patterns", {{"linear_act", {{"matches", 2}, {"kernels", 2}, {"cycles", 900}, {"min_dram_bytes", 4096}}}}}};
  html = build_html_report(run, nullptr);
  EXPECT_NE(html.find("<h2>Fusion: unfused → fused</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\" data-v=\"0.40000000000000002\">0.4</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>linear_act</td><td class=\"num\" data-v=\"2\">2</td>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"compile\""), std::string::npos);
  EXPECT_EQ(build_html_report(sample_run(), nullptr).find("href=\"#fusion\""), std::string::npos);
}

TEST(HtmlReport, TimelineHasOneLanePerTrackNamedByMetadataInSortOrder) {
  json events = json::array({meta("process_name", 0, {{"name", "mlu0 (tiny)"}}),
                             meta("thread_name", 1, {{"name", "host link"}}),
                             meta("thread_sort_index", 1, {{"sort_index", 2000}}),
                             meta("thread_name", 2, {{"name", "queue 0"}}),
                             meta("thread_sort_index", 2, {{"sort_index", 1000}}),
                             slice("memcpy HtoD", "copy", 1, 0, 2, {{"bytes", 4096}, {"start_ps", 0}}),
                             slice("aten::mm", "op", 2, 2, 4),
                             slice("matmul", "kernel", 2, 2.5, 3, {{"cycles", 3000}, {"op", "aten::mm"}}),
                             {{"name", "sync"}, {"ph", "B"}, {"pid", 1}, {"tid", 2}, {"ts", 7}},
                             {{"name", "sync"}, {"ph", "E"}, {"pid", 1}, {"tid", 2}, {"ts", 8}},
                             {{"name", "stray end"}, {"ph", "E"}, {"pid", 1}, {"tid", 2}, {"ts", 9}}});
  const json trace = {{"traceEvents", events}};
  const std::string html = build_html_report(sample_run(), &trace);
  const auto queue = html.find(">queue 0</text>"), link = html.find(">host link</text>");
  ASSERT_NE(queue, std::string::npos);
  ASSERT_NE(link, std::string::npos);
  EXPECT_LT(queue, link) << "thread_sort_index puts queue 0 first";
  EXPECT_NE(html.find(">mlu0 (tiny)</text>"), std::string::npos);
  // Hover titles: name, category, start, duration, args (start_ps left out: it repeats the start).
  EXPECT_NE(html.find("<title>matmul\nkernel · start 2.5 µs · duration 3 µs\ncycles: 3000\nop: aten::mm</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>memcpy HtoD\ncopy · start 0 ns · duration 2 µs\nbytes: 4096</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>sync\nstart 7 µs · duration 1 µs</title>"), std::string::npos) << "B/E pair";
  EXPECT_NE(html.find("1 events without a time or without a matching begin/end were left out."), std::string::npos);
  // The kernel nests in its op: one row (13 px) lower. Time axis: 0..8 µs (the last slice's end)
  // over 1080 px from x = 260, so 135 px per µs.
  const std::string op_bar = "<rect x=\"530\" y=\"";
  const std::string kernel_bar = "<rect x=\"597.5\" y=\"";
  const auto op_at = html.find(op_bar), kernel_at = html.find(kernel_bar);
  ASSERT_NE(op_at, std::string::npos);
  ASSERT_NE(kernel_at, std::string::npos);
  const double op_y = std::stod(html.substr(op_at + op_bar.size())),
               kernel_y = std::stod(html.substr(kernel_at + kernel_bar.size()));
  EXPECT_DOUBLE_EQ(kernel_y - op_y, 13);
}

TEST(HtmlReport, LargeTracesDrawTheLongestSlicesAndMergeTheRest) {
  json events = json::array({meta("thread_name", 1, {{"name", "TFU"}})});
  for (int i = 1; i <= 100; ++i) events.push_back(slice("s" + std::to_string(i), "intrinsic", 1, i * 10.0, i * 0.05));
  const json trace = {{"traceEvents", events}};
  HtmlReportOptions options;
  options.max_bars = 10;
  const std::string html = build_html_report(sample_run(), &trace, options);
  EXPECT_EQ(count(html, "class=\"c0\""), 10u + 1u) << "10 bars and the legend swatch";
  for (int i = 91; i <= 100; ++i) EXPECT_NE(html.find("<title>s" + std::to_string(i) + "\n"), std::string::npos) << i;
  EXPECT_EQ(html.find("<title>s90\n"), std::string::npos);
  EXPECT_NE(
      html.find("The trace has 100 slices: the 10 longest are drawn one by one; the other 90 (each at most 4.5 µs)"),
      std::string::npos);
  EXPECT_NE(html.find("TFU: 90 short slices (each at most 4.5 µs) merged, busy 204.8 µs in all"), std::string::npos)
      << "0.05 + 0.10 + ... + 4.5 µs = 204.75 µs";
  EXPECT_NE(html.find("<path class=\"merged\""), std::string::npos);
}

TEST(HtmlReport, CountersBecomeStepPlotsByUnit) {
  const json trace = {
      {"traceEvents",
       {counter("memory reserved (bytes)", 0, {{"bytes", 2097152}}),
        counter("torch allocated (bytes)", 0, {{"bytes", 16384}}),
        counter("torch allocated (bytes)", 4, {{"bytes", 49152}}),
        counter("torch allocated (bytes)", 8, {{"bytes", 32768}}), counter("DRAM bandwidth (GB/s)", 2, {{"GB/s", 8.0}}),
        counter("DRAM bandwidth (GB/s)", 6, {{"GB/s", 0.0}})}}};
  const std::string html = build_html_report(sample_run(), &trace);
  EXPECT_NE(html.find("<title>torch allocated (bytes): bytes (peak 48.00 KiB, 3 events)</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>memory reserved (bytes): bytes (peak 2.00 MiB, 1 events)</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>DRAM bandwidth (GB/s): GB/s (peak 8 GB/s, 2 events)</title>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Memory (bytes)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<h3>DRAM bandwidth (GB/s)</h3>"), std::string::npos);
  EXPECT_NE(html.find("peak 64 GB/s</text>"), std::string::npos) << "the run's peak DRAM bandwidth as a reference line";
  // Steps: 0..8 µs over 1080 px from x = 260; the allocated series holds 16 KiB until 4 µs.
  EXPECT_NE(html.find("d=\"M260 "), std::string::npos);
  EXPECT_NE(html.find("H800V"), std::string::npos);
}

TEST(HtmlReport, BareArrayTracesAreAccepted) {
  const json trace = json::array({slice("k", "kernel", 1, 0, 1)});
  const std::string html = build_html_report(sample_run(), &trace);
  EXPECT_NE(html.find("<title>k\nkernel"), std::string::npos);
  EXPECT_NE(html.find(">track 1</text>"), std::string::npos) << "unnamed tracks get their tid";
}

TEST(HtmlReport, StreamedTracesGiveTheSamePageAsParsedOnes) {
  json events = json::array({meta("process_name", 0, {{"name", "mlu0"}}), slice("a", "op", 1, 0, 4, {{"cycles", 4000}}),
                             slice("b", "kernel", 1, 1, 2), counter("torch allocated (bytes)", 0.5, {{"bytes", 1024}}),
                             meta("thread_name", 1, {{"name", "queue 0"}})});  // metadata after the track's events
  for (const json& trace : {json{{"traceEvents", events}, {"otherData", {{"config", "tiny"}}}}, events}) {
    std::istringstream stream(trace.dump());
    EXPECT_EQ(build_html_report(sample_run(), stream), build_html_report(sample_run(), &trace));
  }
  std::istringstream no_events(R"({"otherData": {"traceEvents": []}})");
  EXPECT_NE(build_html_report(sample_run(), no_events).find("The trace could not be used"), std::string::npos);
  std::istringstream broken(R"({"traceEvents": [{"ph": "X", )");
  EXPECT_THROW(build_html_report(sample_run(), broken), json::parse_error);
}

// ---- inputs report_reader_fuzz found (tests/fuzz/report_reader_fuzz.cpp) ----------------------------
// Each hung the page builder (or, for the first, converted a NaN to an integer) before the fix; a
// regression would hang again, so each page is built under a deadline that aborts the program.

std::string page_within_deadline(const json& run, const json* trace, const HtmlReportOptions& options = {}) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string html;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      html = build_html_report(run, trace, options);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; })) {
      std::fprintf(stderr, "build_html_report did not return within 30 s: the page builder hangs again\n");
      std::abort();
    }
  }
  worker.join();
  if (error) std::rethrow_exception(error);
  return html;
}

// Slices that end past the largest double (ts 1e308 + dur 1e308): the time window is infinite, and a
// merged slice's pixel column was NaN, converted to an integer (undefined behaviour; UBSan aborts).
TEST(HtmlReportFuzzRegressions, SlicesEndingBeyondTheDoubleRange) {
  json events = json::array();
  for (int i = 0; i < 20; ++i) events.push_back(slice("k" + std::to_string(i), "kernel", 1, 1e308, 1e308));
  const json trace = {{"traceEvents", events}};
  HtmlReportOptions options;
  options.max_bars = 16;
  const std::string html = page_within_deadline(sample_run(), &trace, options);
  EXPECT_NE(html.find("the other 4 (each at most"), std::string::npos) << "4 slices merged";
}

// The time axis stepped k = ceil(t0 / step), k + 1, ... until k * step > t1: where k + 1 == k (a window
// of 16 µs at 10^17 µs; or one instant at 10^300 µs, whose 1 µs window is lost in rounding) it never
// got there.
TEST(HtmlReportFuzzRegressions, TimeAxesFarFromZero) {
  for (const double ts : {1e17, 1e300, -1e300}) {
    SCOPED_TRACE(ts);
    const json trace = {{"traceEvents", json::array({slice("far", "kernel", 1, ts, 16)})}};
    const std::string html = page_within_deadline(sample_run(), &trace);
    EXPECT_NE(html.find("<title>far\nkernel"), std::string::npos);
  }
}

// A counter value near the double maximum: the axis top (value x 1.05, rounded up to a step) was
// infinite and the tick loop v += step never passed it.
TEST(HtmlReportFuzzRegressions, CounterValuesNearTheDoubleMaximum) {
  const json trace = {{"traceEvents", json::array({counter("x", 1, {{"v", 1.7e308}}), counter("x", 2, {{"v", 1}}),
                                                   counter("mem", 1, {{"bytes", 1.7e308}})})}};
  const std::string html = page_within_deadline(sample_run(), &trace);
  EXPECT_NE(html.find("<h3>Memory (bytes)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Other counters</h3>"), std::string::npos);
}

// The roofline's log axes ran from floor(log10(min)) to ceil(log10(max)) in steps of 1: an intensity or
// FLOP/s of 0 or infinity as a double (1e300 MACs over 1e-300 bytes, 1e-300 MACs over 1e300 bytes,
// 1e300 MACs in 1e-300 ns) or an infinite peak (2 x 1.7e308 MAC/s) made the range endless. Such ops
// are listed as out of range instead; such peaks are left out.
TEST(HtmlReportFuzzRegressions, RooflineValuesOutOfTheDoubleRange) {
  const auto op = [](const std::string& name, double macs, double bytes, double ns) {
    return json{{"name", name}, {"calls", 1}, {"macs", macs}, {"min_dram_bytes", bytes}, {"time_ns", ns}};
  };
  json run = sample_run();
  run["report"]["ops"].push_back(op("huge_intensity", 1e300, 1e-300, 1));
  run["report"]["ops"].push_back(op("zero_intensity", 1e-300, 1e300, 1));
  run["report"]["ops"].push_back(op("huge_flops", 1e300, 1, 1e-300));
  run["peaks"]["macs_per_s"]["int8"] = 1.7e308;
  std::string html = page_within_deadline(run, nullptr);
  EXPECT_NE(html.find("3 ops whose intensity or FLOP/s is out of range (0 or infinite as a double) are not plotted: "
                      "huge_intensity, zero_intensity, huge_flops"),
            std::string::npos);
  EXPECT_NE(html.find("aten::convolution (fp32)"), std::string::npos) << "the other ops are still plotted";

  json only_bad = sample_run();
  only_bad["report"]["ops"] = json::array({op("huge_flops", 1e300, 1, 1e-300)});
  only_bad["peaks"]["dram_bytes_per_s"] = 1e-300;  // ridge points of 10^320 FLOP/byte: infinite
  html = page_within_deadline(only_bad, nullptr);
  EXPECT_NE(html.find("No op has an arithmetic intensity and a FLOP/s that a log scale can show"), std::string::npos);

  // A finite peak near DBL_MAX (2 x 0.7e308 FLOP/s): the axis' factor-2 margin, xmax * 2, overflowed to
  // infinity (found by report_reader_fuzz); the margin is now added in log space.
  json near_max = sample_run();
  near_max["peaks"]["macs_per_s"]["fp32"] = 0.7e308;
  html = page_within_deadline(near_max, nullptr);
  EXPECT_NE(html.find("fp32 peak"), std::string::npos);
}

}  // namespace
}  // namespace mlusim::report
