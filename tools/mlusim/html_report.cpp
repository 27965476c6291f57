// The HTML page of a model run (html_report.h). Pure C++ over nlohmann::json: the plots are SVG
// written here; the inline script only adds zoom/pan to the time plots and sortable tables, and
// records its own errors into the page (body[data-js-errors]) for the browser test.
//
// Units, throughout: trace times in microseconds (the trace's `ts`/`dur`), report times in
// nanoseconds, bytes as bytes, rates per second. Every plot says its units on its axes.
#include "html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <istream>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mlusim::report {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- JSON access that never throws: a missing key or a wrong type reads as "no value" -----------

const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

double as_num(const json& v) { return v.is_number() ? v.get<double>() : kNaN; }
double num(const json& j, const char* key) { return as_num(member(j, key)); }
double num0(const json& j, const char* key) {
  const double v = num(j, key);
  return std::isfinite(v) ? v : 0.0;
}

// A scalar as text: strings as they are, numbers and the rest as JSON; null as "".
std::string as_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}
std::string text(const json& j, const char* key) { return as_text(member(j, key)); }

// ---- number formatting ----------------------------------------------------------------------------

std::string printf_str(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// `v` with `digits` significant digits, no exponent for everyday magnitudes ("0.25", "1.5e+12").
std::string sig(double v, int digits = 3) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// An SVG coordinate: two decimals at most, trailing zeros dropped (keeps big plots small).
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = printf_str("%.2f", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// An integer count with thousands separators: 1234567 -> "1,234,567".
std::string grouped(double v) {
  if (!std::isfinite(v)) return "-";
  std::string digits = printf_str("%.0f", std::fabs(v));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// Bytes in binary units: "512 B", "1.50 KiB", "2.00 MiB".
std::string human_bytes(double b) {
  if (!std::isfinite(b)) return "-";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = b;
  while (std::fabs(v) >= 1024 && u < 5) v /= 1024, ++u;
  return u == 0 ? printf_str("%.0f B", v) : printf_str("%.2f ", v) + kUnits[u];
}

// A duration given in nanoseconds, in the unit that reads best: "850 ns", "12.3 µs", "4.56 ms".
std::string human_ns(double ns) {
  if (!std::isfinite(ns)) return "-";
  const double a = std::fabs(ns);
  if (a < 1e3) return sig(ns, 3) + " ns";
  if (a < 1e6) return sig(ns / 1e3, 4) + " µs";
  if (a < 1e9) return sig(ns / 1e6, 4) + " ms";
  return sig(ns / 1e9, 4) + " s";
}

// A rate or count with an SI prefix: si(1.5e12, "FLOP/s") = "1.50 TFLOP/s".
std::string si(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double x = v;
  while (std::fabs(x) >= 1000 && p < 6) x /= 1000, ++p;
  return printf_str(p == 0 ? "%.3g " : "%.2f ", x) + kPrefixes[p] + unit;
}

// A power of ten with an SI prefix, for log-axis ticks: 1e9 -> "1 G", 1e13 -> "10 T".
std::string decade_label(double v) {
  static const char* const kPrefixes[] = {"", " k", " M", " G", " T", " P", " E"};
  int p = 0;
  while (v >= 1000 * (1 - 1e-9) && p < 6) v /= 1000, ++p;
  return printf_str("%.3g", v) + kPrefixes[p];
}

// A fraction as a percentage: 0.1234 -> "12.3 %".
std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return printf_str(fraction < 0.001 && fraction > 0 ? "%.3f %%" : "%.1f %%", fraction * 100);
}

// The "nice" tick step (1, 2 or 5 x 10^k) that cuts `span` into about `ticks` intervals.
double nice_step(double span, int ticks) {
  if (!(span > 0)) return 1;
  const double raw = span / ticks;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return mag * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
}

// A time-axis label for `us` microseconds, in the unit that suits the tick step: about ten steps
// span the axis, so a 0.5 µs step reads "2.5 µs" (same rules as the JS).
std::string time_tick_label(double us, double step_us) {
  const char* unit = "µs";
  double scale = 1;
  if (step_us >= 1e5) unit = "s", scale = 1e-6;
  else if (step_us >= 1e2)
    unit = "ms", scale = 1e-3;
  else if (step_us < 0.1)
    unit = "ns", scale = 1e3;
  const double step = step_us * scale;
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, us * scale, unit);
  return buf;
}

// ---- HTML building blocks ---------------------------------------------------------------------

std::string esc(std::string_view s) { return html_escape(s); }

// Text shortened to `max` characters (UTF-8 safe: never cuts inside a multi-byte sequence).
std::string shorten(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

std::string empty_note(const std::string& message) { return "<p class=\"empty\">" + esc(message) + "</p>\n"; }
std::string note(const std::string& message) { return "<p class=\"note\">" + esc(message) + "</p>\n"; }

// One table cell: `html` is already escaped; `sort` is the value a click on the header sorts by
// (NaN: sort by the text).
struct Cell {
  std::string html;
  double sort = kNaN;
};
Cell text_cell(const std::string& s) { return {esc(s)}; }
Cell num_cell(const std::string& shown, double v, const std::string& tip = "") {
  Cell c{tip.empty() ? esc(shown) : "<span title=\"" + esc(tip) + "\">" + esc(shown) + "</span>", v};
  if (!std::isfinite(v)) c.sort = -1;  // "-" sorts below every value
  return c;
}
Cell bytes_cell(double b) { return num_cell(human_bytes(b), b, grouped(b) + " bytes"); }
Cell count_cell(double v) { return num_cell(grouped(v), v); }
Cell percent_cell(double fraction) { return num_cell(percent(fraction), fraction); }
// A share of a total, with a bar behind the number (width = share).
Cell share_cell(double fraction) {
  const double w = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) * 100 : 0;
  return {"<span class=\"share\" style=\"background-size:" + px(w) + "% 100%\">" + esc(percent(fraction)) + "</span>",
          fraction};
}

struct Column {
  Column(std::string t, bool n = false, std::string tip_text = "")
      : title(std::move(t)), numeric(n), tip(std::move(tip_text)) {}
  std::string title;
  bool numeric;
  std::string tip;  // header tooltip: what the column means, its unit
};

std::string table(const std::vector<Column>& columns, const std::vector<std::vector<Cell>>& rows) {
  std::string o = "<div class=\"table-wrap\"><table class=\"sortable\"><thead><tr>";
  for (const Column& c : columns) {
    o += "<th";
    if (c.numeric) o += " class=\"num\"";
    if (!c.tip.empty()) o += " title=\"" + esc(c.tip) + "\"";
    o += ">" + esc(c.title) + "</th>";
  }
  o += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    o += "<tr>";
    for (std::size_t i = 0; i < row.size() && i < columns.size(); ++i) {
      o += columns[i].numeric ? "<td class=\"num\"" : "<td";
      if (std::isfinite(row[i].sort)) o += " data-v=\"" + sig(row[i].sort, 17) + "\"";
      o += ">" + row[i].html + "</td>";
    }
    o += "</tr>\n";
  }
  return o + "</tbody></table></div>\n";
}

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return "<section id=\"" + esc(id) + "\"><h2>" + esc(title) + "</h2>\n" + body + "</section>\n";
}

// Colours of series (counters, dtypes) and of trace categories; CSS classes c0..c9 use the same.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr std::size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

// ---- the run header -------------------------------------------------------------------------------

std::string header_section(const json& run, const HtmlReportOptions& opt) {
  const json& rep = member(run, "report");
  struct Item {
    std::string key, value, href;  // href: the value links there (a file the run wrote)
  };
  std::vector<Item> items;
  auto add = [&](const std::string& k, const std::string& v) { items.push_back({k, v.empty() ? "-" : v, ""}); };
  // A file the run wrote, linked: an absolute path as file://, a relative one as is. Anything with
  // a scheme (a ':' before any '/', e.g. "javascript:") stays plain text.
  auto add_file = [&](const std::string& k, const std::string& path) {
    if (path.empty()) return add(k, "none");
    const std::size_t colon = path.find(':'), slash = path.find('/');
    const bool has_scheme = colon != std::string::npos && (slash == std::string::npos || colon < slash);
    items.push_back({k, path, has_scheme ? "" : (path.front() == '/' ? "file://" : "") + path});
  };
  add("model", text(run, "model"));
  if (!text(run, "description").empty()) add("description", text(run, "description"));
  if (member(run, "inputs").is_array()) {
    // Input shapes, e.g. "1×3×224×224".
    std::string shapes;
    for (const json& shape : member(run, "inputs")) {
      std::string one;
      if (shape.is_array())
        for (const json& d : shape) one += (one.empty() ? "" : "×") + as_text(d);
      shapes += (shapes.empty() ? "" : ", ") + (one.empty() ? "scalar" : one);
    }
    add("inputs", shapes);
  }
  add("config", text(run, "config"));
  add("batch", text(run, "batch"));
  add("dtype", text(run, "dtype"));
  add("mode", text(run, "mode"));
  add("iterations", text(run, "iterations"));
  if (member(run, "timing_only").is_boolean())
    add("arithmetic", member(run, "timing_only").get<bool>() ? "timing only (no floating-point work)" : "functional");
  const double sim_ns = num(run, "simulated_ns");
  add("simulated time", human_ns(sim_ns));
  if (num(run, "iterations") > 1) add("simulated time per iteration", human_ns(sim_ns / num(run, "iterations")));
  add("cycles", grouped(num(run, "cycles")) +
                    (num(run, "core_clock_mhz") > 0 ? " at " + sig(num(run, "core_clock_mhz"), 4) + " MHz" : ""));
  const double host_s = num(run, "host_seconds");
  add("host time", std::isfinite(host_s) ? sig(host_s, 4) + " s" : "-");
  if (std::isfinite(sim_ns) && host_s > 0) {
    const double speed = sim_ns / 1e3 / host_s;  // simulated µs per host second
    add("simulation speed", (speed >= 1000 ? grouped(speed) : sig(speed, 3)) + " simulated µs per host second");
  }
  add("kernel launches", grouped(num(rep, "kernel_launches")));
  const double faulted = num(rep, "faulted_kernels");
  if (faulted > 0) add("faulted kernels", grouped(faulted));
  const json& peaks = member(run, "peaks");
  add("peak DRAM bandwidth", si(num(peaks, "dram_bytes_per_s"), "B/s"));
  std::string macs;
  if (member(peaks, "macs_per_s").is_object())
    for (const auto& [dtype, v] : member(peaks, "macs_per_s").items())
      if (as_num(v) > 0) macs += (macs.empty() ? "" : ", ") + dtype + " " + si(as_num(v), "MAC/s");
  add("peak compute", macs);
  // Blocking calls: the first thing to look for when the device idles (torch.profiler shows each).
  if (member(rep, "host_syncs").is_number())
    add("host syncs", grouped(num(rep, "host_syncs")) + " blocking calls, " + human_ns(num(rep, "host_sync_wait_ns")) +
                          " host wait");
  add_file("run report", opt.run_label);
  add_file("trace", opt.trace_label);
  add_file("torch.profiler trace", text(run, "profile"));

  std::string o = "<dl class=\"run\">";
  for (const Item& i : items) {
    const std::string value = i.href.empty() ? esc(i.value) : "<a href=\"" + esc(i.href) + "\">" + esc(i.value) + "</a>";
    o += "<div><dt>" + esc(i.key) + "</dt><dd>" + value + "</dd></div>";
  }
  return section("run", "Run", o + "</dl>\n");
}

// ---- the trace, read into tracks, slices and counter series ---------------------------------------

// One slice, kept compact (a big trace has millions): names interned, args as JSON text without
// the start/duration repeats, parsed again only for the slices drawn.
struct Slice {
  double start = 0, dur = 0;  // µs
  std::size_t lane = 0;
  int depth = 0;  // nesting depth on its track (0 = outermost)
  bool instant = false;
  std::uint32_t name = 0, cat = 0;  // indices into TraceModel::strings
  std::string args;                 // the event's args as JSON text ("" when it has none)
};

struct Lane {
  std::string pid, tid;  // as written in the trace (numbers or strings)
  std::string process, thread;
  double process_order = 0, thread_order = 0;
  int rows = 1;
};

struct Series {
  std::string pid, counter, key;                  // one series of one counter event name
  std::vector<std::pair<double, double>> points;  // (µs, value), in time order
};

struct TraceModel {
  std::vector<Lane> lanes;  // in display order
  std::vector<Slice> slices;
  std::vector<Series> series;
  std::vector<std::string> strings;  // slice names and categories
  double t0 = 0, t1 = 0;             // µs: the span of all slices and counter points
  std::size_t skipped = 0;           // events that could not be placed (no ts, unmatched B/E)
  std::string error;                 // non-empty: the trace could not be used at all
};

constexpr int kMaxRowsPerLane = 6;  // deeper nesting is drawn in the last row

// Reads trace events one at a time (add), then orders tracks and nests slices (finish).
class TraceReader {
 public:
  void add(const json& e) {
    const std::string ph = text(e, "ph");
    if (ph == "M") return add_metadata(e);
    const double ts = num(e, "ts");
    if (ph.empty()) return;
    if (!std::isfinite(ts)) {
      ++m_.skipped;
      return;
    }
    if (ph == "X" || ph == "i" || ph == "I") {
      const double dur = num(e, "dur");
      m_.slices.push_back(make_slice(e, ts, ph == "X" && dur > 0 ? dur : 0, ph != "X"));
    } else if (ph == "B") {
      open_[text(e, "pid") + kSep + text(e, "tid")].push_back(make_slice(e, ts, 0, false));
    } else if (ph == "E") {
      auto& stack = open_[text(e, "pid") + kSep + text(e, "tid")];
      if (stack.empty()) {
        ++m_.skipped;
        return;
      }
      Slice s = std::move(stack.back());
      stack.pop_back();
      s.dur = std::max(0.0, ts - s.start);
      m_.slices.push_back(std::move(s));
    } else if (ph == "C") {
      add_counter(e, ts);
    }
  }

  TraceModel finish() {
    for (const auto& [key, stack] : open_) m_.skipped += stack.size();
    name_lanes();
    order_lanes();
    nest_slices();
    for (Series& s : m_.series)
      std::stable_sort(s.points.begin(), s.points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    time_span();
    return std::move(m_);
  }

 private:
  static constexpr char kSep = '\x1f';  // joins pid and tid into one key

  std::uint32_t intern(const std::string& s) {
    const auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    m_.strings.push_back(s);
    return ids_[s] = static_cast<std::uint32_t>(m_.strings.size() - 1);
  }

  std::size_t lane_of(const json& e) {
    const std::string pid = text(e, "pid"), tid = text(e, "tid"), key = pid + kSep + tid;
    const auto it = lane_index_.find(key);
    if (it != lane_index_.end()) return it->second;
    Lane l;
    l.pid = pid, l.tid = tid;
    const double p = as_num(member(e, "pid")), t = as_num(member(e, "tid"));
    l.process_order = std::isfinite(p) ? p : 0;  // replaced by sort indices in name_lanes()
    l.thread_order = std::isfinite(t) ? t : 0;
    m_.lanes.push_back(l);
    return lane_index_[key] = m_.lanes.size() - 1;
  }

  Slice make_slice(const json& e, double ts, double dur, bool instant) {
    Slice s;
    s.start = ts, s.dur = dur, s.instant = instant;
    s.lane = lane_of(e);
    s.name = intern(text(e, "name"));
    s.cat = intern(text(e, "cat"));
    const json& args = member(e, "args");
    if (args.is_object() && !args.empty()) {
      json kept = args;
      for (const char* k : {"start_ps", "dur_ps", "ts_ps"}) kept.erase(k);  // repeat start and duration
      if (!kept.empty()) s.args = kept.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    return s;
  }

  void add_metadata(const json& e) {
    const std::string pid = text(e, "pid"), key = pid + kSep + text(e, "tid"), name = text(e, "name");
    const json& args = member(e, "args");
    if (name == "process_name") process_names_[pid] = text(args, "name");
    else if (name == "thread_name")
      thread_names_[key] = text(args, "name");
    else if (name == "process_sort_index" && std::isfinite(num(args, "sort_index")))
      process_sort_[pid] = num(args, "sort_index");
    else if (name == "thread_sort_index" && std::isfinite(num(args, "sort_index")))
      thread_sort_[key] = num(args, "sort_index");
  }

  // Every numeric arg of a counter event is one series ("bytes", "GB/s", ...).
  void add_counter(const json& e, double ts) {
    const json& args = member(e, "args");
    if (!args.is_object()) return;
    for (const auto& [key, v] : args.items()) {
      if (!v.is_number()) continue;
      const std::string id = text(e, "pid") + kSep + text(e, "name") + kSep + key;
      auto it = series_index_.find(id);
      if (it == series_index_.end()) {
        m_.series.push_back({text(e, "pid"), text(e, "name"), key, {}});
        it = series_index_.emplace(id, m_.series.size() - 1).first;
      }
      m_.series[it->second].points.emplace_back(ts, v.get<double>());
    }
  }

  // Names and sort indices from the metadata (which may come after the track's events).
  void name_lanes() {
    for (Lane& l : m_.lanes) {
      const std::string key = l.pid + kSep + l.tid;
      l.process = process_names_.count(l.pid) ? process_names_[l.pid] : "process " + l.pid;
      l.thread = thread_names_.count(key) ? thread_names_[key] : "track " + l.tid;
      if (process_sort_.count(l.pid)) l.process_order = process_sort_[l.pid];
      if (thread_sort_.count(key)) l.thread_order = thread_sort_[key];
    }
  }

  // Display order: processes, then tracks, by their sort indices (pid/tid when there are none).
  void order_lanes() {
    std::vector<std::size_t> order(m_.lanes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Lane &x = m_.lanes[a], &y = m_.lanes[b];
      if (x.process_order != y.process_order) return x.process_order < y.process_order;
      if (x.pid != y.pid) return x.pid < y.pid;
      return x.thread_order < y.thread_order;
    });
    std::vector<std::size_t> new_index(order.size());
    std::vector<Lane> sorted;
    for (std::size_t i = 0; i < order.size(); ++i) new_index[order[i]] = i, sorted.push_back(m_.lanes[order[i]]);
    m_.lanes = std::move(sorted);
    for (Slice& s : m_.slices) s.lane = new_index[s.lane];
  }

  // Nesting depth per track: slices sorted by start (longer first), a stack of open end times.
  void nest_slices() {
    std::vector<std::vector<std::size_t>> by_lane(m_.lanes.size());
    for (std::size_t i = 0; i < m_.slices.size(); ++i) by_lane[m_.slices[i].lane].push_back(i);
    for (std::size_t l = 0; l < by_lane.size(); ++l) {
      auto& idx = by_lane[l];
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        if (m_.slices[a].start != m_.slices[b].start) return m_.slices[a].start < m_.slices[b].start;
        return m_.slices[a].dur > m_.slices[b].dur;
      });
      std::vector<double> ends;
      for (std::size_t i : idx) {
        Slice& s = m_.slices[i];
        while (!ends.empty() && ends.back() <= s.start + 1e-9) ends.pop_back();
        s.depth = std::min(static_cast<int>(ends.size()), kMaxRowsPerLane - 1);
        if (!s.instant) ends.push_back(s.start + s.dur);
        m_.lanes[l].rows = std::max(m_.lanes[l].rows, s.depth + 1);
      }
    }
  }

  void time_span() {
    bool any = false;
    auto extend = [&](double a, double b) {
      m_.t0 = any ? std::min(m_.t0, a) : a;
      m_.t1 = any ? std::max(m_.t1, b) : b;
      any = true;
    };
    for (const Slice& s : m_.slices) extend(s.start, s.start + s.dur);
    for (const Series& s : m_.series)
      if (!s.points.empty()) extend(s.points.front().first, s.points.back().first);
    if (!(m_.t1 > m_.t0)) m_.t1 = m_.t0 + 1;  // one instant only: a 1 µs window
  }

  TraceModel m_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::map<std::string, std::string> process_names_, thread_names_;
  std::map<std::string, double> process_sort_, thread_sort_;
  std::unordered_map<std::string, std::size_t> lane_index_;
  std::map<std::string, std::vector<Slice>> open_;  // B events waiting for their E, per track
  std::unordered_map<std::string, std::size_t> series_index_;
};

// A parsed trace: {"traceEvents": [...]} or a bare array of events.
TraceModel read_trace(const json& trace) {
  const json& events = trace.is_array() ? trace : member(trace, "traceEvents");
  if (!events.is_array()) {
    TraceModel m;
    m.error = "the trace has no \"traceEvents\" array";
    return m;
  }
  TraceReader reader;
  for (const json& e : events) reader.add(e);
  return reader.finish();
}

// A trace read as it is parsed: each event of the traceEvents array (or of a bare array) is
// handed to the reader and dropped, so memory follows the slices kept, not the file's DOM.
// Throws json::parse_error when the text is not valid JSON.
TraceModel read_trace(std::istream& in) {
  TraceReader reader;
  bool top_is_array = false, in_events = false, saw_events = false;
  std::string top_key;  // the member of the top-level object being parsed
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (depth == 0 && event == E::array_start) top_is_array = in_events = saw_events = true;
    if (depth == 1 && event == E::key) top_key = parsed.is_string() ? parsed.get<std::string>() : "";
    if (depth == 1 && !top_is_array && top_key == "traceEvents") {
      if (event == E::array_start) in_events = saw_events = true;
      if (event == E::array_end) in_events = false;
    }
    const int event_depth = top_is_array ? 1 : 2;
    if (in_events && depth == event_depth && event == E::object_end) {
      reader.add(parsed);
      return false;  // drop it from the DOM
    }
    return true;
  };
  const json rest = json::parse(in, callback);  // the trace without its events (otherData)
  if (!saw_events) {
    TraceModel m;
    m.error = "the trace has no \"traceEvents\" array";
    return m;
  }
  return reader.finish();
}

// ---- shared geometry of the time plots (timeline and counters line up) -----------------------

constexpr double kPlotX = 260;       // px: left edge of the time axis (track names left of it)
constexpr double kPlotWidth = 1080;  // px: width of the time axis
constexpr double kAxisHeight = 26;   // px: tick labels above the plot

// x of time `us` on the full (unzoomed) time axis of `m`.
double time_x(const TraceModel& m, double us) { return kPlotX + (us - m.t0) / (m.t1 - m.t0) * kPlotWidth; }

// Ticks and labels of a time axis over [t0, t1] µs, from y = top to y = bottom (grid lines).
std::string time_axis(double t0, double t1, double top, double bottom) {
  std::string o;
  const double step = nice_step(t1 - t0, 10);
  const double first = std::ceil(t0 / step);
  if (!std::isfinite(first) || !(step > 0) || !std::isfinite(step)) return o;
  // About ten ticks. The count is capped, and ticks stop where k + 1 == k: beyond 2^53 steps from 0
  // (e.g. a window of 16 µs at 10^17 µs) the steps are no longer distinct doubles.
  for (int i = 0; i < 50; ++i) {
    const double k = first + i;
    if (i > 0 && k == first + (i - 1)) break;
    const double t = k * step, x = kPlotX + (t - t0) / (t1 - t0) * kPlotWidth;
    if (!(t <= t1 + step * 1e-9)) break;
    o += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(top) + "\" y2=\"" + px(bottom) + "\"/>";
    o += "<text x=\"" + px(x) + "\" y=\"" + px(top - 6) + "\">" + esc(time_tick_label(t, step)) + "</text>";
  }
  return o;
}

// The opening tag of a zoomable time plot: the script reads the full window from these.
std::string time_svg_open(const TraceModel& m, double height, const std::string& cls, const std::string& label) {
  return "<svg class=\"" + cls + " timeplot\" width=\"" + px(kPlotX + kPlotWidth + 40) + "\" height=\"" + px(height) +
         "\" data-x0=\"" + px(kPlotX) + "\" data-w=\"" + px(kPlotWidth) + "\" data-t0=\"" + sig(m.t0, 17) +
         "\" data-t1=\"" + sig(m.t1, 17) + "\" role=\"img\" aria-label=\"" + esc(label) + "\">";
}

// Tooltip text of one slice: name, category, start and duration, then its args (cycles, op, ...).
std::string slice_tooltip(const TraceModel& m, const Slice& s) {
  const std::string& cat = m.strings[s.cat];
  std::string t = m.strings[s.name] + "\n" + (cat.empty() ? "" : cat + " · ") + "start " + human_ns(s.start * 1e3);
  if (!s.instant) t += " · duration " + human_ns(s.dur * 1e3);
  const json args = s.args.empty() ? json() : json::parse(s.args, nullptr, false);
  if (args.is_object()) {
    int shown = 0;
    for (const auto& [k, v] : args.items()) {
      if (++shown > 12) {
        t += "\n…";
        break;
      }
      t += "\n" + k + ": " + shorten(as_text(v), 160);
    }
  }
  return t;
}

// The slices not drawn one by one, as one grey band per track row: per pixel column of the full
// time axis, the fraction of that column's time they keep the row busy, shown as opacity (4
// levels, drawn as one path per level). O(1) per slice, O(pixel columns) per row.
std::string merged_bars(const TraceModel& m, const std::vector<char>& individual, const std::vector<double>& lane_y,
                        double row_height, double merged_below) {
  const auto columns = static_cast<std::size_t>(kPlotWidth);
  const double column_us = (m.t1 - m.t0) / kPlotWidth;
  struct Row {
    std::vector<double> partial;     // busy column-fractions of slices that start or end in the column
    std::vector<double> delta;       // +1 / -1 where runs of fully covered columns begin / end
    std::vector<std::size_t> count;  // slices starting in the column
  };
  std::map<std::pair<std::size_t, int>, Row> rows;
  for (std::size_t i = 0; i < m.slices.size(); ++i) {
    if (individual[i]) continue;
    const Slice& s = m.slices[i];
    Row& r = rows[{s.lane, s.depth}];
    if (r.partial.empty()) r.partial.resize(columns + 1), r.delta.resize(columns + 2), r.count.resize(columns + 1);
    // Times beyond the double range make the window infinite: such a slice's x is NaN, taken as 0.
    const auto column = [&](double us) {
      const double x = (us - m.t0) / column_us;
      return std::isnan(x) ? 0.0 : std::clamp(x, 0.0, kPlotWidth);
    };
    const double x0 = column(s.start);
    const double x1 = std::max(x0, column(s.start + s.dur));
    const auto c0 = static_cast<std::size_t>(x0), c1 = static_cast<std::size_t>(x1);
    ++r.count[std::min(c0, columns - 1)];
    if (c0 == c1) {
      r.partial[c0] += x1 - x0;
    } else {
      r.partial[c0] += c0 + 1 - x0;
      r.partial[c1] += x1 - c1;
      r.delta[c0 + 1] += 1;
      r.delta[c1] -= 1;
    }
  }
  // One path per row and busy level (a rect per run of columns at that level), titled per row:
  // a few hundred bytes per row however many slices were merged.
  constexpr int kLevels = 4;  // busy (0, 25 %], (25, 50 %], (50, 75 %], (75, 100 %]
  std::string o;
  for (const auto& [key, r] : rows) {
    const double top = lane_y[key.first] + key.second * row_height + 1, h = row_height - 2;
    std::vector<int> level(columns);
    std::size_t count = 0;
    double covered = 0, total = 0;
    for (std::size_t c = 0; c < columns; ++c) {
      covered += r.delta[c];
      const double busy = std::min(1.0, r.partial[c] + covered);
      level[c] = r.count[c] || busy > 0 ? std::max(1, static_cast<int>(std::ceil(busy * kLevels))) : 0;
      count += r.count[c];
      total += busy * column_us;
    }
    std::string paths[kLevels + 1];
    for (std::size_t c = 0; c < columns;) {
      std::size_t end = c + 1;
      while (end < columns && level[end] == level[c]) ++end;
      if (level[c])
        paths[level[c]] += "M" + px(kPlotX + c) + " " + px(top) + "h" + px(double(end - c)) + "v" + px(h) + "h-" +
                           px(double(end - c)) + "z";
      c = end;
    }
    const Lane& lane = m.lanes[key.first];
    const std::string tip = lane.thread + ": " + grouped(double(count)) + " short slices (each at most " +
                            human_ns(merged_below * 1e3) + ") merged, busy " + human_ns(total * 1e3) +
                            " in all; darker = busier (quarters of each pixel column's time)";
    for (int lv = 1; lv <= kLevels; ++lv)
      if (!paths[lv].empty())
        o += "<path class=\"merged\" fill-opacity=\"" + px(0.2 + 0.8 * lv / kLevels) + "\" d=\"" + paths[lv] +
             "\"><title>" + esc(tip) + "</title></path>\n";
  }
  return o;
}

// ---- plot 1: the timeline --------------------------------------------------------------------------

std::string timeline_section(const TraceModel& m, const HtmlReportOptions& opt) {
  const std::string title = "Timeline";
  std::size_t drawable = m.slices.size();
  if (drawable == 0)
    return section("timeline", title,
                   empty_note("The trace has no slices (no \"X\", \"B\"/\"E\" or instant events) to draw."));

  // Which slices are drawn one by one: all, or the max_bars longest.
  std::vector<char> individual(m.slices.size(), 1);
  double merged_below = 0;  // µs: merged slices are at most this long
  std::size_t merged = 0;
  const std::size_t cap = std::max<std::size_t>(opt.max_bars, 1);
  if (drawable > cap) {
    std::vector<std::size_t> idx(m.slices.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::nth_element(idx.begin(), idx.begin() + cap, idx.end(),
                     [&](std::size_t a, std::size_t b) { return m.slices[a].dur > m.slices[b].dur; });
    for (std::size_t i = cap; i < idx.size(); ++i) {
      individual[idx[i]] = 0;
      merged_below = std::max(merged_below, m.slices[idx[i]].dur);
      ++merged;
    }
  }

  // Rows: a process header, then each track's rows (one per nesting depth).
  constexpr double kRow = 13, kLaneGap = 4, kProcessRow = 18;
  std::vector<double> lane_y(m.lanes.size());
  std::string labels, stripes;
  double y = kAxisHeight + 4;
  for (std::size_t l = 0; l < m.lanes.size(); ++l) {
    const Lane& lane = m.lanes[l];
    if (l == 0 || lane.pid != m.lanes[l - 1].pid) {
      labels += "<text class=\"proc\" x=\"4\" y=\"" + px(y + 13) + "\">" + esc(shorten(lane.process, 40)) + "</text>";
      y += kProcessRow;
    }
    lane_y[l] = y;
    const double h = lane.rows * kRow;
    stripes += "<rect class=\"lane" + std::string(l % 2 ? " odd" : "") + "\" x=\"0\" y=\"" + px(y - kLaneGap / 2) +
               "\" width=\"" + px(kPlotX + kPlotWidth) + "\" height=\"" + px(h + kLaneGap) + "\"/>";
    labels += "<text x=\"14\" y=\"" + px(y + 10) + "\"><title>" + esc(lane.process + " / " + lane.thread) + "</title>" +
              esc(shorten(lane.thread, 36)) + "</text>";
    y += h + kLaneGap;
  }
  const double height = y + 6;

  // Categories -> colour classes c0..c9 (in order of first appearance), shown in a legend.
  std::map<std::string, std::size_t> cat_class;
  std::vector<std::string> cats;
  for (const Slice& s : m.slices) {
    const std::string& cat = m.strings[s.cat];
    if (!cat_class.count(cat)) cat_class[cat] = cats.size() % kPaletteSize, cats.push_back(cat);
  }

  // Merged slices first (underneath, scaled as a whole when zooming), then the individual bars.
  std::string bars = "<g class=\"zoom\">" + merged_bars(m, individual, lane_y, kRow, merged_below) + "</g>\n";
  for (std::size_t i = 0; i < m.slices.size(); ++i) {
    if (!individual[i]) continue;
    const Slice& s = m.slices[i];
    const double x = time_x(m, s.start), w = s.dur / (m.t1 - m.t0) * kPlotWidth;
    const double top = lane_y[s.lane] + s.depth * kRow;
    // Bars narrower than 1 px are drawn 1 px wide; data-w keeps the true width for zooming.
    const double shown = s.instant ? 1.5 : std::max(w, 1.0);
    bars += "<rect x=\"" + px(s.instant ? x - 0.75 : x) + "\" y=\"" + px(top + 1) + "\" width=\"" + px(shown) +
            "\" height=\"" + px(kRow - 2) + "\" class=\"c" + std::to_string(cat_class[m.strings[s.cat]]) +
            (s.instant ? " inst" : "") + "\"" + (shown != w && !s.instant ? " data-w=\"" + px(w) + "\"" : "") +
            "><title>" + esc(slice_tooltip(m, s)) + "</title></rect>\n";
  }

  std::string o;
  o += "<p class=\"hint\">One row per track of the trace (each engine, queue, link); nested slices stack below their "
       "parent. Hover a bar for its name, duration and args (cycles, bytes, op, ...). Scroll over the plot to zoom, "
       "drag to pan, double-click to reset.</p>\n";
  if (merged)
    o += note("The trace has " + grouped(double(drawable)) + " slices: the " + grouped(double(cap)) +
              " longest are drawn one by one; the other " + grouped(double(merged)) + " (each at most " +
              human_ns(merged_below * 1e3) +
              ") are merged into grey bands per track row whose darkness is the "
              "share of time they keep the row busy (per pixel column of the full view).");
  if (m.skipped)
    o += note(grouped(double(m.skipped)) + " events without a time or without a matching begin/end were left out.");
  o += "<div class=\"legend\">";
  for (const std::string& c : cats)
    o += "<span><i class=\"c" + std::to_string(cat_class[c]) + "\"></i>" + esc(c.empty() ? "(no category)" : c) +
         "</span>";
  if (merged) o += "<span><i class=\"merged\"></i>merged short slices</span>";
  o += "</div>\n<div class=\"plot-wrap\">" + time_svg_open(m, height, "timeline", "timeline of the trace's tracks");
  o += "<defs><clipPath id=\"tl-clip\"><rect x=\"" + px(kPlotX) + "\" y=\"0\" width=\"" + px(kPlotWidth) +
       "\" height=\"" + px(height) + "\"/></clipPath></defs>";
  o += "<g class=\"stripes\">" + stripes + "</g><g class=\"axis\" data-top=\"" + px(kAxisHeight) + "\" data-bottom=\"" +
       px(height) + "\">" + time_axis(m.t0, m.t1, kAxisHeight, height) + "</g>";
  o += "<g class=\"labels\">" + labels + "</g><g class=\"bars\" clip-path=\"url(#tl-clip)\">\n" + bars +
       "</g></svg></div>\n";
  return section("timeline", title, o);
}

// Peak DRAM bandwidth in bytes/s: the run's peaks, else the cycle report's (0: unknown).
double dram_peak_bytes_per_s(const json& run) {
  const double bw = num(member(run, "peaks"), "dram_bytes_per_s");
  if (bw > 0) return bw;
  const double rep = num(member(run, "report"), "dram_peak_bytes_per_s");
  return rep > 0 ? rep : 0;
}

// ---- plot 2: the roofline --------------------------------------------------------------------------

// The dtype of an op's MACs: the one with the most kernel MACs, else the run's dtype.
std::string op_dtype(const json& op, const json& run) {
  std::string best;
  double most = 0;
  const json& by = member(op, "kernel_macs_by_dtype");
  if (by.is_object())
    for (const auto& [d, v] : by.items())
      if (as_num(v) > most) most = as_num(v), best = d;
  if (!best.empty()) return best;
  const std::string d = text(run, "dtype");
  if (d == "float32" || d == "float") return "fp32";
  if (d == "float16" || d == "half") return "fp16";
  return d.empty() ? "fp32" : d;
}

std::string roofline_section(const json& run) {
  const std::string title = "Roofline (per op)";
  const json& rep = member(run, "report");
  const json& ops = member(rep, "ops");
  const json& peaks = member(run, "peaks");
  // Roofs: DRAM bytes/s (slope) and peak FLOP/s (= 2 x MAC/s) per dtype.
  const double bw = dram_peak_bytes_per_s(run);
  std::map<std::string, double> peak_flops;
  // Every value that sets the log axes must be a positive finite number: log10 of 0 or infinity
  // would make the decade loops below endless.
  const auto plottable = [](double v) { return v > 0 && std::isfinite(v); };
  if (member(peaks, "macs_per_s").is_object())
    for (const auto& [d, v] : member(peaks, "macs_per_s").items())
      if (plottable(2 * as_num(v))) peak_flops[d] = 2 * as_num(v);

  struct Point {
    std::string name, dtype;
    double ai, flops, time_ns, share, peak_frac, bound_frac, calls;
  };
  std::vector<Point> points;
  std::vector<std::string> left_out, out_of_range;
  if (ops.is_array())
    for (const json& op : ops) {
      const double macs = num0(op, "macs"), bytes = num0(op, "min_dram_bytes"), t = num0(op, "time_ns");
      if (macs <= 0 || bytes <= 0 || t <= 0) {
        left_out.push_back(text(op, "name"));
        continue;
      }
      const std::string dtype = op_dtype(op, run);
      const double flops = 2 * macs / (t * 1e-9), peak = num(op, "peak_macs_per_s");
      if (!plottable(2 * macs / bytes) || !plottable(flops)) {  // e.g. 1e300 MACs in 1e-300 ns
        out_of_range.push_back(text(op, "name"));
        continue;
      }
      if (!peak_flops.count(dtype) && plottable(2 * peak)) peak_flops[dtype] = 2 * peak;  // no run peaks: the op's own
      const double bound = num(op, "roofline_bound_ns");
      points.push_back({text(op, "name"), dtype, 2 * macs / bytes, flops, t, num(op, "share"),
                        peak > 0 ? macs / (t * 1e-9) / peak : kNaN, bound > 0 ? bound / t : kNaN, num(op, "calls")});
    }
  if (points.empty() && !out_of_range.empty())
    return section("roofline", title,
                   empty_note("No op has an arithmetic intensity and a FLOP/s that a log scale can show (a positive "
                              "finite number of FLOP/byte and FLOP/s)."));
  if (points.empty())
    return section(
        "roofline", title,
        empty_note(ops.is_array() && !ops.empty()
                       ? "No op has both MACs and minimum DRAM bytes (only elementwise or copy ops ran), so "
                         "no op has an arithmetic intensity to plot."
                       : "The report has no ops (no ATen op ran kernels on the device), so there is nothing to plot."));

  // Roofs drawn: the dtypes the plotted ops used; the other peaks are named below the plot.
  std::map<std::string, double> others;
  for (auto it = peak_flops.begin(); it != peak_flops.end();) {
    const bool used = std::any_of(points.begin(), points.end(), [&](const Point& p) { return p.dtype == it->first; });
    if (used) {
      ++it;
    } else {
      others.insert(*it);
      it = peak_flops.erase(it);
    }
  }

  // Axes: whole decades around the points and the ridge points (log10 scale both ways).
  double xmin = points[0].ai, xmax = xmin, ymin = points[0].flops, ymax = ymin;
  for (const Point& p : points) {
    xmin = std::min(xmin, p.ai), xmax = std::max(xmax, p.ai);
    ymin = std::min(ymin, p.flops), ymax = std::max(ymax, p.flops);
  }
  for (const auto& [d, f] : peak_flops) {
    ymax = std::max(ymax, f);
    if (bw > 0 && plottable(f / bw)) xmin = std::min(xmin, f / bw), xmax = std::max(xmax, f / bw);
  }
  // A factor of 2 of margin, taken in log space: xmax * 2 overflows to infinity near DBL_MAX (and
  // xmin / 2 underflows to 0 below DBL_TRUE_MIN), which would make the decade loops endless.
  const double margin = std::log10(2.0);
  const double lx0 = std::floor(std::log10(xmin) - margin), lx1 = std::max(lx0 + 1, std::ceil(std::log10(xmax) + margin));
  const double ly0 = std::floor(std::log10(ymin) - margin), ly1 = std::max(ly0 + 1, std::ceil(std::log10(ymax) + margin));
  constexpr double kL = 80, kT = 16, kW = 640, kH = 400, kRight = 190, kB = 46;
  auto X = [&](double ai) { return kL + (std::log10(ai) - lx0) / (lx1 - lx0) * kW; };
  auto Y = [&](double f) { return kT + kH - (std::log10(f) - ly0) / (ly1 - ly0) * kH; };

  std::string o = "<svg class=\"chart roofline\" width=\"" + px(kL + kW + kRight) + "\" height=\"" + px(kT + kH + kB) +
                  "\" role=\"img\" aria-label=\"roofline\"><defs><clipPath id=\"rf-clip\"><rect x=\"" + px(kL) +
                  "\" y=\"" + px(kT) + "\" width=\"" + px(kW) + "\" height=\"" + px(kH) + "\"/></clipPath></defs>";
  o += "<g class=\"axis\">";
  for (double k = lx0; k <= lx1 + 1e-9; ++k) {
    const double x = X(std::pow(10, k));
    o += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(kT) + "\" y2=\"" + px(kT + kH) + "\"/>";
    o += "<text x=\"" + px(x) + "\" y=\"" + px(kT + kH + 16) + "\">" +
         esc(k >= 0 ? grouped(std::pow(10, k)) : sig(std::pow(10, k), 3)) + "</text>";
  }
  for (double k = ly0; k <= ly1 + 1e-9; ++k) {
    const double yy = Y(std::pow(10, k));
    o += "<line x1=\"" + px(kL) + "\" x2=\"" + px(kL + kW) + "\" y1=\"" + px(yy) + "\" y2=\"" + px(yy) + "\"/>";
    o += "<text class=\"y\" x=\"" + px(kL - 6) + "\" y=\"" + px(yy + 4) + "\">" + esc(decade_label(std::pow(10, k))) +
         "</text>";
  }
  o += "<text x=\"" + px(kL + kW / 2) + "\" y=\"" + px(kT + kH + 36) +
       "\">arithmetic intensity = 2 × MACs / minimum DRAM bytes (FLOP/byte, log scale)</text>";
  o += "<text transform=\"translate(16," + px(kT + kH / 2) +
       ") rotate(-90)\">achieved FLOP/s = 2 × MACs / time (log scale)</text>";
  o += "</g><g clip-path=\"url(#rf-clip)\">";
  // Roofs: y = min(peak FLOP/s, intensity x bandwidth), one per dtype.
  std::map<std::string, std::size_t> dtype_colour;
  for (const auto& [d, f] : peak_flops) dtype_colour[d] = dtype_colour.size() % kPaletteSize;
  const double ax0 = std::pow(10, lx0), ax1 = std::pow(10, lx1);
  for (const auto& [d, f] : peak_flops) {
    std::string pts;
    if (bw > 0 && ax0 * bw < f) pts = px(X(ax0)) + "," + px(Y(ax0 * bw)) + " " + px(X(f / bw)) + "," + px(Y(f)) + " ";
    else
      pts = px(X(ax0)) + "," + px(Y(f)) + " ";
    pts += px(X(ax1)) + "," + px(Y(f));
    o += "<polyline class=\"roof\" stroke=\"" + std::string(kPalette[dtype_colour[d]]) + "\" points=\"" + pts +
         "\"><title>" +
         esc(d + " roof: " + si(f, "FLOP/s") + (bw > 0 ? ", ridge at " + sig(f / bw, 3) + " FLOP/byte" : "")) +
         "</title></polyline>";
  }
  if (peak_flops.empty() && bw > 0)
    o += "<line class=\"roof\" stroke=\"#555\" x1=\"" + px(X(ax0)) + "\" y1=\"" + px(Y(ax0 * bw)) + "\" x2=\"" +
         px(X(ax1)) + "\" y2=\"" + px(Y(ax1 * bw)) + "\"/>";
  bool slope_labelled = false;
  if (bw > 0) {
    // The slope's label, along it, a tenth of the way in from the left (where it is below every roof).
    const double lx = std::pow(10, lx0 + (lx1 - lx0) * 0.1);
    const double angle = -std::atan((kH / (ly1 - ly0)) / (kW / (lx1 - lx0))) * 180 / 3.14159265358979323846;  // degrees
    slope_labelled = Y(lx * bw) > kT + 10 && Y(lx * bw) < kT + kH;
    if (slope_labelled)
      o += "<text class=\"slope\" transform=\"translate(" + px(X(lx)) + "," + px(Y(lx * bw) - 5) + ") rotate(" +
           px(angle) + ")\">" + esc("DRAM " + si(bw, "B/s")) + "</text>";
  }
  // Points: area ~ share of cycles; the 8 ops that took longest are labelled.
  std::vector<std::size_t> by_time(points.size());
  for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](std::size_t a, std::size_t b) { return points[a].time_ns > points[b].time_ns; });
  std::string labels;
  for (std::size_t rank = 0; rank < by_time.size(); ++rank) {
    const Point& p = points[by_time[rank]];
    const double r = 3 + 9 * std::sqrt(std::isfinite(p.share) ? std::clamp(p.share, 0.0, 1.0) : 0.0);
    const std::string colour = dtype_colour.count(p.dtype) ? kPalette[dtype_colour[p.dtype]] : "#555";
    o += "<circle class=\"op\" cx=\"" + px(X(p.ai)) + "\" cy=\"" + px(Y(p.flops)) + "\" r=\"" + px(r) + "\" fill=\"" +
         colour + "\"><title>" +
         esc(p.name + " (" + p.dtype + ")\nintensity " + sig(p.ai, 3) + " FLOP/byte\nachieved " +
             si(p.flops, "FLOP/s") + "\ntime " + human_ns(p.time_ns) + " in " + grouped(p.calls) + " calls, " +
             percent(p.share) + " of kernel cycles\n" + percent(p.peak_frac) + " of peak, " + percent(p.bound_frac) +
             " of the roofline bound") +
         "</title></circle>";
    if (rank < 8)
      labels += "<text x=\"" + px(X(p.ai) + r + 2) + "\" y=\"" + px(Y(p.flops) - 2) + "\">" + esc(shorten(p.name, 28)) +
                "</text>";
  }
  o += "</g><g class=\"point-labels\">" + labels + "</g>";
  // Roof labels right of the plot, highest roof first, never overlapping.
  std::vector<std::pair<double, std::string>> roofs;
  for (const auto& [d, f] : peak_flops) roofs.emplace_back(f, d);
  std::sort(roofs.rbegin(), roofs.rend());
  double ly = kT + 8;
  o += "<g class=\"roof-labels\">";
  for (const auto& [f, d] : roofs) {
    ly = std::max(ly, Y(f) + 4);
    o += "<text x=\"" + px(kL + kW + 8) + "\" y=\"" + px(ly) + "\" fill=\"" + kPalette[dtype_colour[d]] + "\">" +
         esc(d + " peak " + si(f, "FLOP/s")) + "</text>";
    ly += 14;
  }
  if (bw > 0 && !slope_labelled)
    o += "<text x=\"" + px(kL + kW + 8) + "\" y=\"" + px(std::max(ly, kT + kH)) + "\">" + esc("DRAM " + si(bw, "B/s")) +
         "</text>";
  o += "</g></svg>";

  std::string body =
      "<p class=\"hint\">One point per op (area ∝ its share of kernel cycles, colour = dtype of its MACs). Roofs: peak "
      "FLOP/s = 2 × peak MAC/s per dtype, and the DRAM slope = intensity × DRAM bandwidth. An op's roofline bound is "
      "the roof above it; the distance down to the point is what the op loses.</p>\n<div class=\"plot-wrap\">" +
      o + "</div>\n";
  if (!others.empty()) {
    std::string names;
    for (const auto& [d, f] : others) names += (names.empty() ? "" : ", ") + d + " " + si(f, "FLOP/s");
    body += "<p class=\"hint\">" + esc("Peaks of dtypes no plotted op used (not drawn): " + names + ".") + "</p>\n";
  }
  const auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", " : "") + names[i];
    return names.size() > 20 ? out + ", …" : out;
  };
  if (!left_out.empty())
    body += note(grouped(double(left_out.size())) +
                 " ops without MACs or DRAM bytes (no intensity) are not plotted: " + list(left_out));
  if (!out_of_range.empty())
    body += note(grouped(double(out_of_range.size())) +
                 " ops whose intensity or FLOP/s is out of range (0 or infinite as a double) are not plotted: " +
                 list(out_of_range));
  return section("roofline", title, body);
}

// ---- plot 3: engine utilisation --------------------------------------------------------------------

std::string engines_section(const json& run) {
  const std::string title = "Engine utilisation";
  const json& engines = member(member(run, "report"), "engines");
  if (!engines.is_object() || engines.empty())
    return section("engines", title, empty_note("The report has no engine statistics."));
  // Known engines in pipeline order, then any others alphabetically.
  std::vector<std::string> names;
  for (const char* n : {"scalar", "Scalar", "VFU", "TFU", "IO-DMA", "Move-DMA", "MemCore-DMA"})
    if (engines.contains(n)) names.push_back(n);
  for (const auto& [n, v] : engines.items())
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);

  constexpr double kL = 110, kBarW = 520, kRow = 24, kT = 22;
  const double height = kT + names.size() * kRow + 8;
  std::string o = "<svg class=\"chart engines\" width=\"" + px(kL + kBarW + 380) + "\" height=\"" + px(height) +
                  "\" role=\"img\" aria-label=\"engine utilisation\"><g class=\"axis\">";
  for (int p = 0; p <= 100; p += 25) {
    const double x = kL + kBarW * p / 100.0;
    o += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(kT - 4) + "\" y2=\"" + px(height - 6) + "\"/>";
    o += "<text x=\"" + px(x) + "\" y=\"" + px(kT - 8) + "\">" + std::to_string(p) + " %</text>";
  }
  o += "</g>";
  bool any_busy = false;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const json& e = engines[names[i]];
    const double u = num0(e, "utilisation"), busy = num0(e, "busy_ns");
    any_busy = any_busy || busy > 0;
    const double y = kT + i * kRow;
    const std::string tip = names[i] + ": " + percent(u) + " utilised, busy " + human_ns(busy) +
                            " (summed over instances), " + grouped(num0(e, "intrinsics")) + " intrinsics, " +
                            grouped(num0(e, "cycles")) + " cycles";
    o += "<text class=\"name\" x=\"" + px(kL - 8) + "\" y=\"" + px(y + 15) + "\">" + esc(names[i]) + "</text>";
    o += "<rect class=\"track\" x=\"" + px(kL) + "\" y=\"" + px(y + 3) + "\" width=\"" + px(kBarW) + "\" height=\"" +
         px(kRow - 6) + "\"/>";
    o += "<rect class=\"bar c" + std::to_string(i % kPaletteSize) + "\" x=\"" + px(kL) + "\" y=\"" + px(y + 3) +
         "\" width=\"" + px(kBarW * std::clamp(u, 0.0, 1.0)) + "\" height=\"" + px(kRow - 6) + "\"><title>" + esc(tip) +
         "</title></rect>";
    o += "<text class=\"value\" x=\"" + px(kL + kBarW + 8) + "\" y=\"" + px(y + 15) + "\">" +
         esc(percent(u) + " · busy " + human_ns(busy) + " · " + grouped(num0(e, "intrinsics")) + " intrinsics") +
         "</text>";
  }
  o += "</svg>";
  std::string body =
      "<p class=\"hint\">Utilisation = busy time / (engine instances × simulated time); busy time is summed "
      "over all instances (every core's TFU, VFU, ...).</p>\n<div class=\"plot-wrap\">" +
      o + "</div>\n";
  if (!any_busy) body += note("No engine was busy: no kernels ran on the device.");
  return section("engines", title, body);
}

// ---- plot 4: memory and bandwidth over time ---------------------------------------------------------

// What a counter series measures: "bytes", "GB/s" or "" (anything else).
std::string series_unit(const Series& s) {
  const std::string both = s.counter + " " + s.key;
  if (both.find("GB/s") != std::string::npos) return "GB/s";
  if (both.find("bytes") != std::string::npos || both.find("memory") != std::string::npos) return "bytes";
  return "";
}

// A step plot of counter series that share a unit, on the timeline's time axis. Values hold
// until the counter's next event; the last value holds to the end of the trace. `reference` > 0
// draws a dashed line at that value (the peak DRAM bandwidth, in GB/s).
std::string counter_chart(const TraceModel& m, const std::vector<const Series*>& series, const std::string& unit,
                          const std::string& clip_id, double reference = 0) {
  constexpr double kH = 170, kT = kAxisHeight + 4;
  double vmax = 0;
  for (const Series* s : series)
    for (const auto& p : s->points) vmax = std::max(vmax, p.second);
  if (unit == "GB/s" && reference > 0) vmax = std::max(vmax, reference);
  if (!(vmax > 0)) vmax = 1;
  // Bytes tick in the binary unit of the largest value (0.5 MiB, 1 MiB, ...), others in 1-2-5 steps.
  double scale = 1;
  std::string scale_name;
  if (unit == "bytes") {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (vmax / scale >= 1024 && u < 4) scale *= 1024, ++u;
    scale_name = kUnits[u];
  }
  double step = nice_step(vmax / scale, 4) * scale;
  double top_value = std::ceil(vmax * 1.05 / step) * step;
  // Values near the double maximum: the rounded-up top (or the step) would be infinite.
  if (!std::isfinite(step) || !std::isfinite(top_value)) step = top_value = vmax;
  auto Y = [&](double v) { return kT + kH - v / top_value * kH; };
  auto tick = [&](double v) {
    return unit == "bytes" ? sig(v / scale, 4) + " " + scale_name : unit == "GB/s" ? sig(v, 4) + " GB/s" : sig(v, 4);
  };
  auto label = [&](double v) {
    return unit == "bytes" ? human_bytes(v) : unit == "GB/s" ? sig(v, 4) + " GB/s" : sig(v, 4);
  };

  const double height = kT + kH + 12;
  std::string o =
      time_svg_open(m, height, "counters", "counters in " + (unit.empty() ? "values" : unit) + " over time");
  o += "<defs><clipPath id=\"" + clip_id + "\"><rect x=\"" + px(kPlotX) + "\" y=\"0\" width=\"" + px(kPlotWidth) +
       "\" height=\"" + px(height) + "\"/></clipPath></defs>";
  o += "<g class=\"axis\" data-top=\"" + px(kAxisHeight) + "\" data-bottom=\"" + px(kT + kH) + "\">" +
       time_axis(m.t0, m.t1, kAxisHeight, kT + kH) + "</g><g class=\"axis\">";
  for (int i = 0; i <= 20; ++i) {  // about five ticks; the cap keeps v += step from ever stalling
    const double v = i * step;
    if (!(v <= top_value + step * 1e-9)) break;
    o += "<line x1=\"" + px(kPlotX) + "\" x2=\"" + px(kPlotX + kPlotWidth) + "\" y1=\"" + px(Y(v)) + "\" y2=\"" +
         px(Y(v)) + "\"/><text class=\"y\" x=\"" + px(kPlotX - 6) + "\" y=\"" + px(Y(v) + 4) + "\">" + esc(tick(v)) +
         "</text>";
  }
  if (unit == "GB/s" && reference > 0)
    o += "<line class=\"peak\" x1=\"" + px(kPlotX) + "\" x2=\"" + px(kPlotX + kPlotWidth) + "\" y1=\"" +
         px(Y(reference)) + "\" y2=\"" + px(Y(reference)) + "\"><title>" +
         esc("peak DRAM bandwidth " + sig(reference, 4) + " GB/s") + "</title></line><text class=\"peak\" x=\"" +
         px(kPlotX + kPlotWidth) + "\" y=\"" + px(Y(reference) - 4) + "\">" +
         esc("peak " + sig(reference, 4) + " GB/s") + "</text>";
  o += "</g><g clip-path=\"url(#" + clip_id + ")\"><g class=\"zoom\">";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& pts = series[i]->points;
    if (pts.empty()) continue;
    // Path: H to the next event's x, V to its value. Past 2 points per pixel column, each column
    // keeps its min, max and last value (the envelope stays exact, the path stays small).
    std::string d = "M" + px(time_x(m, pts[0].first)) + " " + px(Y(pts[0].second));
    double peak = pts[0].second;
    const bool decimate = pts.size() > 2 * static_cast<std::size_t>(kPlotWidth);
    for (std::size_t k = 1; k < pts.size();) {
      const double x = time_x(m, pts[k].first);
      if (!decimate) {
        d += "H" + px(x) + "V" + px(Y(pts[k].second));
        peak = std::max(peak, pts[k].second);
        ++k;
        continue;
      }
      const double column = std::floor(x);
      double lo = pts[k].second, hi = lo, last = lo;
      for (; k < pts.size() && std::floor(time_x(m, pts[k].first)) == column; ++k)
        lo = std::min(lo, pts[k].second), hi = std::max(hi, pts[k].second), last = pts[k].second;
      peak = std::max(peak, hi);
      d += "H" + px(x) + "V" + px(Y(hi)) + "V" + px(Y(lo)) + "V" + px(Y(last));
    }
    d += "H" + px(kPlotX + kPlotWidth);
    const std::string name = series[i]->counter + (series[i]->key.empty() ? "" : ": " + series[i]->key);
    o += "<path class=\"series\" stroke=\"" + std::string(kPalette[i % kPaletteSize]) + "\" d=\"" + d + "\"><title>" +
         esc(name + " (peak " + label(peak) + ", " + grouped(double(pts.size())) + " events)") + "</title></path>";
  }
  o += "</g></g></svg>";
  std::string legend = "<div class=\"legend\">";
  for (std::size_t i = 0; i < series.size(); ++i) {
    double peak = 0;
    for (const auto& p : series[i]->points) peak = std::max(peak, p.second);
    legend += "<span><i style=\"background:" + std::string(kPalette[i % kPaletteSize]) + "\"></i>" +
              esc(series[i]->counter + (series[i]->key.empty() ? "" : ": " + series[i]->key) + " (peak " + label(peak) +
                  ")") +
              "</span>";
  }
  return legend + "</div>\n<div class=\"plot-wrap\">" + o + "</div>\n";
}

std::string memory_section(const TraceModel& m, const json& run) {
  const std::string title = "Memory and DRAM bandwidth over time";
  std::map<std::string, std::vector<const Series*>> by_unit;
  for (const Series& s : m.series)
    if (!s.points.empty()) by_unit[series_unit(s)].push_back(&s);
  if (by_unit.empty())
    return section("memory", title, empty_note("The trace has no counter events (memory or DRAM bandwidth)."));
  std::string o =
      "<p class=\"hint\">The trace's counters on the timeline's time axis (they zoom with it). Allocator "
      "counters are stamped with the host clock, engine counters with the device clock.</p>\n";
  if (by_unit.count("bytes"))
    o += "<h3>Memory (bytes)</h3>\n" + counter_chart(m, by_unit["bytes"], "bytes", "mem-clip-bytes");
  else
    o += empty_note("The trace has no memory counters (\"memory reserved (bytes)\", \"torch allocated (bytes)\").");
  if (by_unit.count("GB/s"))
    o += "<h3>DRAM bandwidth (GB/s)</h3>\n" +
         counter_chart(m, by_unit["GB/s"], "GB/s", "mem-clip-bw", dram_peak_bytes_per_s(run) / 1e9);
  else
    o += empty_note("The trace has no DRAM bandwidth counter.");
  if (by_unit.count("")) o += "<h3>Other counters</h3>\n" + counter_chart(m, by_unit[""], "", "mem-clip-other");
  return section("memory", title, o);
}

std::string no_trace_section(const std::string& id, const std::string& title, const std::string& why) {
  return section(id, title, empty_note("No trace: " + why));
}

// ---- tables -------------------------------------------------------------------------------------------

std::string ops_section(const json& run) {
  const std::string title = "Ops";
  const json& ops = member(member(run, "report"), "ops");
  if (!ops.is_array() || ops.empty())
    return section("ops", title, empty_note("No ATen op ran kernels on the device (the report's op table is empty)."));
  std::vector<std::vector<Cell>> rows;
  for (const json& op : ops) {
    const double macs = num0(op, "macs"), t = num(op, "time_ns"), peak = num(op, "peak_macs_per_s"),
                 bound = num(op, "roofline_bound_ns");
    const double flops = t > 0 ? 2 * macs / (t * 1e-9) : kNaN;
    rows.push_back({text_cell(text(op, "name")), count_cell(num(op, "calls")), count_cell(num(op, "libmlu_ops")),
                    count_cell(num(op, "kernels")), count_cell(num(op, "cycles")), share_cell(num(op, "share")),
                    num_cell(human_ns(t), t), count_cell(macs), bytes_cell(num(op, "min_dram_bytes")),
                    bytes_cell(num(op, "dram_bytes")),
                    num_cell(macs > 0 ? si(flops, "FLOP/s") : "-", macs > 0 ? flops : kNaN),
                    percent_cell(peak > 0 && t > 0 && macs > 0 ? macs / (t * 1e-9) / peak : kNaN),
                    percent_cell(bound > 0 && t > 0 ? bound / t : kNaN)});
  }
  return section("ops", title,
                 "<p class=\"hint\">ATen ops that ran kernels, by cycles. Click a column to sort.</p>\n" +
                     table({{"op"},
                            {"calls", true},
                            {"libmlu ops", true, "libmlu calls the op made"},
                            {"kernels", true, "kernel launches"},
                            {"cycles", true, "device cycles of its kernels"},
                            {"share", true, "share of all kernel cycles"},
                            {"time", true, "simulated time of its kernels"},
                            {"MACs", true, "multiply-accumulates the op asked for"},
                            {"min DRAM", true, "bytes the op must move at least (inputs + outputs)"},
                            {"DRAM bytes", true, "bytes its kernels actually moved to and from DRAM"},
                            {"achieved", true, "2 × MACs / time"},
                            {"% of peak", true, "achieved MAC/s / peak MAC/s of its dtype"},
                            {"% of bound", true,
                             "roofline bound time / time: 100 % = as fast as its MACs and minimum bytes allow"}},
                           rows));
}

std::string kernels_section(const json& run) {
  const std::string title = "Kernels";
  const json& kernels = member(member(run, "report"), "kernels");
  if (!kernels.is_array() || kernels.empty())
    return section("kernels", title, empty_note("No kernels ran on the device."));
  constexpr std::size_t kMaxRows = 1000;
  std::vector<std::vector<Cell>> rows;
  for (const json& k : kernels) {
    if (rows.size() == kMaxRows) break;
    rows.push_back({text_cell(text(k, "name")), count_cell(num(k, "launches")), count_cell(num(k, "cycles")),
                    share_cell(num(k, "share")), num_cell(human_ns(num(k, "time_ns")), num(k, "time_ns")),
                    count_cell(num(k, "macs")), count_cell(num(k, "vector_elements")), count_cell(num(k, "faulted"))});
  }
  std::string body = table({{"kernel"},
                            {"launches", true},
                            {"cycles", true},
                            {"share", true, "share of all kernel cycles"},
                            {"time", true, "simulated time"},
                            {"MACs", true},
                            {"vector elements", true, "elements the VFU processed"},
                            {"faulted", true, "launches that faulted"}},
                           rows);
  if (kernels.size() > kMaxRows)
    body += note("Only the first " + grouped(double(kMaxRows)) + " of " + grouped(double(kernels.size())) +
                 " kernels are listed.");
  return section("kernels", title, body);
}

std::string traffic_section(const json& run) {
  const std::string title = "Memory traffic per level";
  const json& traffic = member(member(run, "report"), "memory_traffic");
  if (!traffic.is_object() || traffic.empty())
    return section("traffic", title, empty_note("The report has no memory traffic."));
  std::vector<std::string> levels;
  for (const char* l : {"host", "GDRAM", "SRAM", "NRAM", "WRAM"})
    if (traffic.contains(l)) levels.push_back(l);
  for (const auto& [l, v] : traffic.items())
    if (std::find(levels.begin(), levels.end(), l) == levels.end()) levels.push_back(l);
  std::vector<std::vector<Cell>> rows;
  for (const std::string& l : levels) {
    if (l == "L2") {  // GDRAM reads the L2 served (l2.cache), already counted in GDRAM's reads
      const double hits = num0(traffic[l], "hit_bytes");
      if (hits > 0) rows.push_back({text_cell("L2 hits (of GDRAM reads)"), bytes_cell(hits), bytes_cell(0), bytes_cell(hits)});
      continue;
    }
    if (l == "DRAM") {  // what crossed the DRAM channels (the GDRAM traffic the L2 did not serve)
      const double bytes = num0(traffic[l], "bytes");
      rows.push_back({text_cell("DRAM channels (reads + writes)"), text_cell(""), text_cell(""), bytes_cell(bytes)});
      continue;
    }
    const double r = num0(traffic[l], "read_bytes"), w = num0(traffic[l], "write_bytes");
    rows.push_back({text_cell(l), bytes_cell(r), bytes_cell(w), bytes_cell(r + w)});
  }
  return section("traffic", title, table({{"level"}, {"read", true}, {"written", true}, {"total", true}}, rows));
}

std::string allocator_section(const json& run) {
  const std::string title = "Allocator";
  const json& rep = member(run, "report");
  const json& stats = member(rep, "allocator");
  std::string body;
  // torch.cuda.memory_stats keys "<stat>.<pool>.<field>" as rows (stat, pool) x field columns;
  // the rest (counters such as num_alloc_retries) as a key/value table.
  static const char* const kFields[] = {"current", "peak", "allocated", "freed"};
  // Rows ordered: the byte statistics first, then counts; pool "all" before the per-pool rows.
  auto rank = [](const std::string& stat, const std::string& pool) {
    static const char* const kStats[] = {"allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes",
                                         "requested_bytes", "allocation",     "segment",      "active",
                                         "inactive_split"};
    int r = 100;
    for (int i = 0; i < 9; ++i)
      if (stat == kStats[i]) r = i;
    return std::make_tuple(r, stat, pool == "all" ? 0 : 1, pool);
  };
  auto by_rank = [&](const std::pair<std::string, std::string>& a, const std::pair<std::string, std::string>& b) {
    return rank(a.first, a.second) < rank(b.first, b.second);
  };
  std::map<std::pair<std::string, std::string>, std::map<std::string, double>, decltype(by_rank)> grid(by_rank);
  std::vector<std::pair<std::string, double>> flat;
  if (stats.is_object())
    for (const auto& [key, v] : stats.items()) {
      const auto a = key.find('.'), b = key.rfind('.');
      if (a != std::string::npos && b != a)
        grid[{key.substr(0, a), key.substr(a + 1, b - a - 1)}][key.substr(b + 1)] = as_num(v);
      else
        flat.emplace_back(key, as_num(v));
    }
  if (grid.empty() && flat.empty()) body += empty_note("The report has no caching-allocator statistics.");
  if (!grid.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const auto& [stat_pool, fields] : grid) {
      const bool bytes = stat_pool.first.find("bytes") != std::string::npos;
      std::vector<Cell> row = {text_cell(stat_pool.first), text_cell(stat_pool.second)};
      for (const char* f : kFields) {
        const auto it = fields.find(f);
        const double v = it == fields.end() ? kNaN : it->second;
        row.push_back(bytes ? bytes_cell(v) : count_cell(v));
      }
      rows.push_back(row);
    }
    body += "<p class=\"hint\">The caching allocator's statistics (the keys of torch.cuda.memory_stats).</p>\n" +
            table({{"statistic"},
                   {"pool"},
                   {"current", true},
                   {"peak", true},
                   {"allocated", true, "total ever allocated"},
                   {"freed", true, "total ever freed"}},
                  rows);
  }
  if (!flat.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const auto& [k, v] : flat) rows.push_back({text_cell(k), count_cell(v)});
    body += table({{"counter"}, {"value", true}}, rows);
  }
  const json& driver = member(rep, "driver_memory");
  if (driver.is_object() && !driver.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const auto& [k, v] : driver.items())
      rows.push_back(
          {text_cell(k), k.find("bytes") != std::string::npos ? bytes_cell(as_num(v)) : count_cell(as_num(v))});
    body += "<h3>Driver memory (cnrtMalloc)</h3>\n" + table({{"statistic"}, {"value", true}}, rows);
  }
  return section("allocator", title, body);
}

std::string fallback_section(const json& run) {
  const std::string title = "CPU-fallback ops";
  const json& fb = member(member(run, "report"), "cpu_fallback");
  if (!fb.is_object() || fb.empty())
    return section("fallback", title,
                   empty_note("No op fell back to the CPU: everything the model ran was simulated."));
  std::vector<std::pair<std::string, double>> items;
  for (const auto& [op, calls] : fb.items()) items.emplace_back(op, std::isfinite(as_num(calls)) ? as_num(calls) : 0.0);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::vector<Cell>> rows;
  for (const auto& [op, calls] : items) rows.push_back({text_cell(op), count_cell(calls)});
  return section(
      "fallback", title,
      "<p class=\"hint warn\">These ops ran on the host CPU, outside the simulation: their time is not in the "
      "simulated time, and their inputs and outputs were copied between host and device.</p>\n" +
          table({{"op"}, {"calls", true}}, rows));
}

// ---- graph rewrites: torch.compile (run --compile) and TorchScript fusion (run --fuse) --------------

// The run against its baseline, one row per metric: `totals` is {metric: {before_key: v, after_key: v}}
// (compile_run's keys cycles, simulated_ns, dram_bytes, kernel_launches; --fuse's are already labels).
std::string rewrite_totals_table(const json& totals, const char* before_key, const char* after_key,
                                 const std::string& before_title, const std::string& after_title) {
  static const std::map<std::string, std::string> labels = {{"cycles", "kernel cycles"},
                                                            {"simulated_ns", "simulated time"},
                                                            {"dram_bytes", "DRAM bytes"},
                                                            {"kernel_launches", "kernel launches"}};
  std::vector<std::vector<Cell>> rows;
  if (totals.is_object())
    for (const auto& item : totals.items()) {
      const std::string metric = item.key();  // (a lambda may not capture a structured binding in C++17)
      const json& v = item.value();
      const double before = num(v, before_key), after = num(v, after_key);
      const auto cell = [&](double x) {
        if (metric.find("bytes") != std::string::npos) return bytes_cell(x);
        if (metric == "simulated_ns") return num_cell(human_ns(x), x);
        return count_cell(x);
      };
      const double ratio = before > 0 ? after / before : kNaN;
      const auto label = labels.find(metric);
      rows.push_back({text_cell(label != labels.end() ? label->second : metric), cell(before), cell(after),
                      num_cell(std::isfinite(ratio) ? sig(ratio, 3) : "-", ratio)});
    }
  return table({{"metric"}, {before_title, true}, {after_title, true}, {"ratio", true, "after / before"}}, rows);
}

// {kind: launches} -> "eager 3, program 12" (zero counts left out).
std::string counts_text(const json& counts) {
  std::string o;
  if (counts.is_object())
    for (const auto& [k, v] : counts.items())
      if (as_num(v) != 0) o += (o.empty() ? "" : ", ") + k + " " + as_text(v);
  return o.empty() ? "-" : o;
}

std::string compile_section(const json& run) {
  const json& c = member(run, "compile");
  const std::string backend = text(c, "backend");
  std::string body =
      "<p class=\"hint\">The same model run eagerly and through torch.compile (backend " + esc(backend) +
      "), same weights and inputs; the compile itself ran in an untimed iteration (" +
      esc(sig(num(c, "compile_seconds"), 3)) + " s of host time). Max |compiled - eager| of the " +
      esc(text(c, "compared")) + ": " + esc(sig(num(c, "max_abs_diff"), 3)) + ".</p>\n";
  body += rewrite_totals_table(member(c, "totals"), "eager", "compiled", "eager", "compiled");
  const json& patterns = member(c, "patterns");
  const json& graphs = member(c, "graphs");
  std::vector<std::vector<Cell>> rows;
  if (backend == "inductor") {
    std::string epilogues;
    if (patterns.is_object())
      for (const auto& [k, v] : patterns.items())
        if (k != "generated_kernels" && k != "generated_launches" && as_num(v) != 0) epilogues += (epilogues.empty() ? "" : ", ") + k + " " + as_text(v);
    body += "<p>" + esc("GEMM/conv epilogue fusions: " + (epilogues.empty() ? std::string("none") : epilogues) +
                        ". Generated kernels: " + text(patterns, "generated_kernels") +
                        "; their device launches per call: " + counts_text(member(patterns, "generated_launches"))) +
            ".</p>\n";
    if (graphs.is_array())
      for (const json& k : graphs) {
        std::string origins;
        if (member(k, "origins").is_array())
          for (const json& o : member(k, "origins")) origins += (origins.empty() ? "" : ", ") + as_text(o);
        const double kept = member(k, "removed").is_array() ? double(member(k, "removed").size()) : kNaN;
        rows.push_back({text_cell(text(k, "name")), text_cell(shorten(origins, 160)), count_cell(kept),
                        text_cell(counts_text(member(k, "launches")))});
      }
    body += rows.empty() ? empty_note("Inductor generated no kernels: every node ran as an extern call (GEMM, "
                                      "convolution, their fused epilogues, ops kept whole).")
                         : table({{"generated kernel"}, {"ATen ops it computes"},
                                  {"buffers kept inside", true, "never allocated"}, {"device launches per call"}},
                                 rows);
  } else if (graphs.is_array()) {
    int i = 0;
    for (const json& g : graphs)
      rows.push_back({count_cell(i++), text_cell(text(g, "mode")), count_cell(num(g, "nodes")),
                      text_cell(counts_text(member(g, "fusion_matches")))});
    body += table({{"graph", true}, {"mode"}, {"captured calls", true}, {"fusions"}}, rows);
  }
  return section("compile", "torch.compile: eager → compiled", body);
}

std::string fusion_section(const json& run) {
  const json& f = member(run, "fusion");
  std::string body = "<p class=\"hint\">The same model run with its TorchScript graph unfused and fused "
                     "(mlusim run --fuse), same weights and inputs.</p>\n";
  body += rewrite_totals_table(member(f, "totals"), "unfused", "fused", "unfused", "fused");
  std::vector<std::vector<Cell>> rows;
  if (member(f, "patterns").is_object())
    for (const auto& [pattern, p] : member(f, "patterns").items())
      rows.push_back({text_cell(pattern), count_cell(num(p, "matches")), count_cell(num(p, "kernels")),
                      count_cell(num(p, "cycles")), bytes_cell(num(p, "min_dram_bytes"))});
  body += table({{"pattern"}, {"fused nodes", true}, {"kernels", true}, {"cycles", true}, {"min DRAM bytes", true}},
                rows);
  return section("fusion", "Fusion: unfused → fused", body);
}

// ---- page frame ------------------------------------------------------------------------------------

// Records script errors into the page before anything else runs (the browser test reads them).
const char* const kErrorScript = R"JS(
window.mlusimErrors = [];
(function () {
  var shown = 0;
  function show() {
    if (!document.body) return;
    document.body.setAttribute('data-js-errors', String(window.mlusimErrors.length));
    var box = document.getElementById('js-errors');
    if (!box) return;
    box.hidden = false;
    for (; shown < window.mlusimErrors.length; ++shown) {
      var li = document.createElement('li');
      li.textContent = window.mlusimErrors[shown];
      box.querySelector('ul').appendChild(li);
    }
  }
  window.addEventListener('error', function (e) {
    var where = e && e.lineno ? ' (line ' + e.lineno + ')' : '';
    window.mlusimErrors.push((e && e.message ? e.message : String(e)) + where);
    show();
  });
  document.addEventListener('DOMContentLoaded', function () { if (window.mlusimErrors.length) show(); });
})();
)JS";

// Zoom/pan of the time plots (all share one window) and sortable tables; marks the page rendered.
const char* const kMainScript = R"JS(
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var plots = Array.prototype.slice.call(document.querySelectorAll('svg.timeplot'));
  function tickLabel(us, step) {
    var unit = 'µs', scale = 1;
    if (step >= 1e5) { unit = 's'; scale = 1e-6; } else if (step >= 1e2) { unit = 'ms'; scale = 1e-3; }
    else if (step < 0.1) { unit = 'ns'; scale = 1e3; }
    var s = step * scale, dec = s >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(s) - 1e-9));
    return (us * scale).toFixed(dec) + ' ' + unit;
  }
  function niceStep(span, n) {
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), r = raw / mag;
    return mag * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
  }
  var views = plots.map(function (svg) {
    var v = { svg: svg, x0: +svg.dataset.x0, w: +svg.dataset.w, t0: +svg.dataset.t0, t1: +svg.dataset.t1,
              axis: svg.querySelector('g.axis[data-top]'), zoom: svg.querySelector('g.zoom'), bars: [] };
    svg.querySelectorAll('g.bars rect').forEach(function (r) {
      var w = r.hasAttribute('data-w') ? +r.getAttribute('data-w') : +r.getAttribute('width');
      v.bars.push([r, +r.getAttribute('x'), w, r.classList.contains('inst')]);
    });
    return v;
  });
  if (!views.length) return;
  var T0 = views[0].t0, T1 = views[0].t1, a = T0, b = T1;
  function redraw() {
    views.forEach(function (v) {
      var k = (v.t1 - v.t0) / (b - a), shift = (a - v.t0) / (v.t1 - v.t0) * v.w;
      v.bars.forEach(function (e) {
        var x = v.x0 + (e[1] - v.x0 - shift) * k;
        if (e[3]) { e[0].setAttribute('x', (x + 0.75 * (k - 1)).toFixed(2)); return; }
        e[0].setAttribute('x', x.toFixed(2));
        e[0].setAttribute('width', Math.max(e[2] * k, 1).toFixed(2));
      });
      if (v.zoom) {
        v.zoom.setAttribute('transform', 'translate(' + (v.x0 - v.x0 * k - shift * k) + ',0) scale(' + k + ',1)');
      }
      if (v.axis) {
        var top = +v.axis.dataset.top, bottom = +v.axis.dataset.bottom, step = niceStep(b - a, 10);
        while (v.axis.firstChild) v.axis.removeChild(v.axis.firstChild);
        for (var k = Math.ceil(a / step); k * step <= b + step * 1e-9; ++k) {
          var t = k * step, x = v.x0 + (t - a) / (b - a) * v.w;
          var line = document.createElementNS(NS, 'line');
          line.setAttribute('x1', x); line.setAttribute('x2', x);
          line.setAttribute('y1', top); line.setAttribute('y2', bottom);
          var text = document.createElementNS(NS, 'text');
          text.setAttribute('x', x); text.setAttribute('y', top - 6); text.textContent = tickLabel(t, step);
          v.axis.appendChild(line); v.axis.appendChild(text);
        }
      }
    });
  }
  function timeAt(v, evt) {
    var box = v.svg.getBoundingClientRect();
    var f = Math.min(1, Math.max(0, (evt.clientX - box.left - v.x0) / v.w));
    return a + f * (b - a);
  }
  views.forEach(function (v) {
    v.svg.addEventListener('wheel', function (evt) {
      evt.preventDefault();
      var t = timeAt(v, evt), f = evt.deltaY < 0 ? 0.8 : 1.25;
      var span = Math.min(T1 - T0, Math.max((b - a) * f, (T1 - T0) * 1e-7));  // zoom in to 1e-7 of the trace
      a = t - (t - a) / (b - a) * span; b = a + span;
      if (a < T0) { b += T0 - a; a = T0; } if (b > T1) { a -= b - T1; b = T1; }
      redraw();
    }, { passive: false });
    var drag = null;
    v.svg.addEventListener('mousedown', function (evt) { drag = { x: evt.clientX, a: a, b: b }; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (evt) {
      if (!drag) return;
      var dt = (evt.clientX - drag.x) / v.w * (drag.b - drag.a), span = drag.b - drag.a;
      a = Math.min(T1 - span, Math.max(T0, drag.a - dt)); b = a + span;
      redraw();
    });
    v.svg.addEventListener('dblclick', function () { a = T0; b = T1; redraw(); });
  });
})();
(function () {
  'use strict';
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, col) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'desc' ? 1 : -1;
        table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-dir'); });
        th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
        rows.sort(function (r1, r2) {
          var c1 = r1.cells[col], c2 = r2.cells[col];
          if (c1.hasAttribute('data-v') && c2.hasAttribute('data-v')) {
            return dir * (c1.getAttribute('data-v') - c2.getAttribute('data-v'));
          }
          return dir * c1.textContent.localeCompare(c2.textContent);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
document.body.setAttribute('data-rendered', 'ok');
)JS";

const char* const kStyle = R"CSS(
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #222; }
body { background: #fff; }
header { background: #24303f; color: #fff; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header p { margin: 2px 0 0; color: #c8d2de; }
nav { position: sticky; top: 0; background: #f4f6f8; border-bottom: 1px solid #dde2e8; padding: 6px 24px; z-index: 1; }
nav a { margin-right: 16px; color: #24303f; text-decoration: none; }
nav a:hover { text-decoration: underline; }
main { padding: 0 24px 24px; }
section { margin-top: 22px; }
h2 { font-size: 17px; border-bottom: 1px solid #dde2e8; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.hint { color: #555; margin: 4px 0 8px; max-width: 1100px; }
.hint.warn { color: #8a4b00; }
.note { background: #fff8e1; border-left: 3px solid #f0b400; padding: 4px 10px; max-width: 1100px; }
.empty { color: #666; font-style: italic; background: #f6f7f9; padding: 10px 14px; max-width: 1100px; }
.warnings { background: #fff3f0; border-left: 3px solid #d9480f; padding: 6px 12px; margin-top: 16px; }
#js-errors { background: #ffe3e3; border-left: 3px solid #c92a2a; padding: 6px 12px; }
dl.run { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 6px 18px; margin: 0; }
dl.run div { border-bottom: 1px dotted #dde2e8; padding: 2px 0; }
dt { color: #666; font-size: 12px; } dd { margin: 0; font-weight: 500; word-break: break-all; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e6e9ee; text-align: left; white-space: nowrap; }
th { background: #f4f6f8; cursor: pointer; user-select: none; position: relative; }
th[data-dir=asc]::after { content: " ▲"; } th[data-dir=desc]::after { content: " ▼"; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafbfc; } tbody tr:hover { background: #eef4ff; }
.share { display: inline-block; min-width: 64px; background-repeat: no-repeat; }
.share { background-image: linear-gradient(#cfe0f5, #cfe0f5); }
.plot-wrap { overflow-x: auto; }
svg text { font-size: 11px; fill: #333; }
svg .axis line { stroke: #e3e6ea; stroke-width: 1; }
svg .axis text { text-anchor: middle; fill: #666; }
svg .axis text.y { text-anchor: end; }
svg .labels text { fill: #333; } svg .labels text.proc { font-weight: 600; font-size: 12px; }
svg .lane { fill: #fff; } svg .lane.odd { fill: #f6f8fa; }
svg.timeline { cursor: grab; }
svg .bars rect { stroke: none; } svg .bars rect:hover { stroke: #000; stroke-width: 1; }
svg .merged { fill: #56606b; } .legend i.merged { background: #8a939d; }
svg .roof { fill: none; stroke-width: 2; }
svg circle.op { fill-opacity: 0.75; stroke: #222; stroke-width: 0.6; }
svg circle.op:hover { fill-opacity: 1; stroke-width: 1.5; }
svg text.slope { fill: #555; text-anchor: start; }
svg .point-labels text { font-size: 10px; fill: #333; }
svg .engines .name, svg text.name { text-anchor: end; }
svg rect.track { fill: #eef0f3; }
svg line.peak { stroke: #c92a2a; stroke-dasharray: 5 4; stroke-width: 1; }
svg text.peak { fill: #c92a2a; text-anchor: end; }
svg path.series { fill: none; stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.legend { margin: 4px 0; font-size: 12px; }
.legend span { margin-right: 14px; white-space: nowrap; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
footer { color: #888; font-size: 12px; padding: 12px 24px; border-top: 1px solid #eee; }
)CSS";

// CSS classes c0..c9: one palette colour each (SVG fill and legend swatches).
std::string palette_css() {
  std::string o;
  for (std::size_t i = 0; i < kPaletteSize; ++i)
    o += ".c" + std::to_string(i) + "{fill:" + kPalette[i] + ";background:" + kPalette[i] + "}";
  return o + "\n";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

void check_run_report(const json& run) {
  if (!run.is_object())
    throw RunReportError(
        "the JSON is not an object, so it is not an mlusim run report (write one with `mlusim run --report FILE`)");
  if (!run.contains("mlusim_run"))
    throw RunReportError(
        "the JSON has no \"mlusim_run\" key, so it is not an mlusim run report (write one with "
        "`mlusim run --report FILE`; a cycle report of `mlusim demo --report` or torch_mlu.cycle_report "
        "is not a run report)");
}

namespace {

// The page; `model` null: no trace (opt.trace_note says why).
std::string build_page(const json& run, const TraceModel* model, const HtmlReportOptions& opt) {
  check_run_report(run);
  std::vector<std::string> warnings;
  if (as_num(member(run, "mlusim_run")) > 1)
    warnings.push_back("The run report has format version " + text(run, "mlusim_run") +
                       "; this mlusim reads version 1, so some fields may be missing from the page.");
  if (!member(run, "report").is_object())
    warnings.push_back(
        "The run report has no \"report\" object: the op, kernel, engine and memory sections are empty.");

  std::string no_trace = opt.trace_note.empty() ? "the run recorded none." : opt.trace_note;
  if (model && !model->error.empty()) {
    no_trace = model->error + ".";
    warnings.push_back("The trace could not be used: " + model->error + ".");
  } else if (!model) {
    warnings.push_back("No trace: " + no_trace + " The timeline and the memory-over-time plots are left out.");
  }
  const bool have_trace = model && model->error.empty();

  const std::string model_name = text(run, "model").empty() ? "run" : text(run, "model");
  const std::string subtitle = text(run, "config") + " · batch " + text(run, "batch") + " · " + text(run, "dtype") +
                               " · " + text(run, "mode") + " · " + human_ns(num(run, "simulated_ns")) + " simulated";

  std::string o;
  o.reserve(1 << 20);
  o += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" "
       "content=\"width=device-width\">\n<title>" +
       esc("mlusim report: " + model_name + " on " + text(run, "config")) + "</title>\n<script>" + kErrorScript +
       "</script>\n<style>" + kStyle + palette_css() + "</style></head>\n<body data-rendered=\"no\">\n";
  o += "<header><h1>" + esc("mlusim report: " + model_name) + "</h1><p>" + esc(subtitle) + "</p></header>\n";
  o += "<nav><a href=\"#run\">run</a><a href=\"#timeline\">timeline</a><a href=\"#roofline\">roofline</a>"
       "<a href=\"#engines\">engines</a><a href=\"#memory\">memory</a><a href=\"#ops\">ops</a><a "
       "href=\"#kernels\">kernels</a>"
       "<a href=\"#traffic\">traffic</a><a href=\"#allocator\">allocator</a><a href=\"#fallback\">CPU "
       "fallback</a>";
  const bool compiled = member(run, "compile").is_object(), fused = member(run, "fusion").is_object();
  if (compiled) o += "<a href=\"#compile\">torch.compile</a>";
  if (fused) o += "<a href=\"#fusion\">fusion</a>";
  o += "</nav>\n<main>\n";
  o += "<div id=\"js-errors\" hidden><strong>Script errors (the plots may be incomplete):</strong><ul></ul></div>\n";
  if (!warnings.empty()) {
    o += "<div class=\"warnings\">";
    for (const std::string& w : warnings) o += "<p>" + esc(w) + "</p>";
    o += "</div>\n";
  }
  o += header_section(run, opt);
  if (compiled) o += compile_section(run);
  if (fused) o += fusion_section(run);
  o += have_trace ? timeline_section(*model, opt) : no_trace_section("timeline", "Timeline", no_trace);
  o += roofline_section(run);
  o += engines_section(run);
  o += have_trace ? memory_section(*model, run)
                  : no_trace_section("memory", "Memory and DRAM bandwidth over time", no_trace);
  o += ops_section(run);
  o += kernels_section(run);
  o += traffic_section(run);
  o += allocator_section(run);
  o += fallback_section(run);
  o += "</main>\n<footer>" +
       esc("Generated by " + opt.generator + " from " + (opt.run_label.empty() ? "a run report" : opt.run_label) +
           (opt.trace_label.empty() ? "" : " and " + opt.trace_label) + ". Self-contained: no network access needed.") +
       "</footer>\n<script>" + kMainScript + "</script>\n</body></html>\n";
  return o;
}

}  // namespace

std::string build_html_report(const json& run, const json* trace, const HtmlReportOptions& options) {
  check_run_report(run);
  if (!trace) return build_page(run, nullptr, options);
  const TraceModel model = read_trace(*trace);
  return build_page(run, &model, options);
}

std::string build_html_report(const json& run, std::istream& trace, const HtmlReportOptions& options) {
  check_run_report(run);
  const TraceModel model = read_trace(trace);
  return build_page(run, &model, options);
}

}  // namespace mlusim::report
