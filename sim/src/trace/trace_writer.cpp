// Chrome trace-event writer: compact in-memory event records, streamed out as JSON on dump.
#include "mlusim/sim/trace.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlusim::sim {

namespace {

// JSON string literal (quotes included) for arbitrary text; invalid UTF-8 becomes U+FFFD rather
// than throwing, since names may come from user kernels.
std::string json_quote(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dump_compact(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// Exact decimal of ps / 1e6: integer part, then up to six fraction digits without trailing zeros.
void append_us(std::string& out, Picos ps) {
  append_uint(out, ps / 1000000u);
  std::uint64_t frac = ps % 1000000u;
  if (frac == 0) return;
  char digits[6];
  for (int i = 5; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int len = 6;
  while (digits[len - 1] == '0') --len;
  out.push_back('.');
  out.append(digits, static_cast<std::size_t>(len));
}

// Thread sort index of track tid = tid * kLanesPerTrack, so that the overflow lanes of a track
// (complete_concurrent) sort right below it.
constexpr int kLanesPerTrack = 1000;

}  // namespace

std::string_view trace_level_name(TraceLevel level) {
  switch (level) {
    case TraceLevel::kOff: return "off";
    case TraceLevel::kOps: return "ops";
    case TraceLevel::kIntrinsics: return "intrinsics";
  }
  return "off";
}

std::optional<TraceLevel> trace_level_from_name(std::string_view name) {
  for (TraceLevel l : {TraceLevel::kOff, TraceLevel::kOps, TraceLevel::kIntrinsics}) {
    if (trace_level_name(l) == name) return l;
  }
  return std::nullopt;
}

std::string picos_to_us_text(Picos ps) {
  std::string s;
  append_us(s, ps);
  return s;
}

struct TraceWriter::Impl {
  // One recorded event: 48 bytes. Strings are interned; args live in one arena as serialised
  // JSON object members without the enclosing braces (e.g. `"bytes":4096,"op":"add"`).
  struct Event {
    Picos ts;
    Picos dur;
    std::uint64_t args_off;
    std::uint32_t args_len;
    std::uint32_t name;  // intern id
    std::uint32_t cat;   // intern id (unused for counters)
    std::int32_t pid;
    std::int32_t tid;
    char ph;  // 'X', 'i', 'C'
  };

  struct Process {
    std::string name;
  };
  struct TrackSet {
    std::map<std::string, int, std::less<>> by_name;
    std::vector<std::string> names;  // index tid - 1
    std::vector<std::int64_t> sort_index;  // index tid - 1
  };
  // Lanes of a track used with complete_concurrent(): lane 0 is the track itself, lane k > 0 the
  // overflow track "<name> #<k+1>". max_end is per trace (reset by begin/clear); tids are kept.
  struct Lanes {
    std::vector<int> tids;
    std::vector<Picos> max_end;
  };

  TraceLevel level = TraceLevel::kOff;           // recording now
  TraceLevel recorded_level = TraceLevel::kOff;  // level of the last begin(), for otherData

  std::vector<Event> events;
  std::string args_arena;

  // Interned strings: raw text (stable storage in a deque, keys are views into it) -> id; the
  // quoted JSON form is what dump() writes.
  std::deque<std::string> intern_raw;
  std::unordered_map<std::string_view, std::uint32_t> intern_ids;
  std::vector<std::string> intern_quoted;

  std::map<int, Process> processes;
  std::map<int, TrackSet> tracks;
  std::map<std::pair<int, int>, Lanes> lanes;
  std::map<std::string, std::string> other_data;

  std::uint32_t intern(std::string_view text) {
    auto it = intern_ids.find(text);
    if (it != intern_ids.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(intern_quoted.size());
    const std::string& stored = intern_raw.emplace_back(text);
    intern_ids.emplace(std::string_view(stored), id);
    intern_quoted.push_back(json_quote(text));
    return id;
  }

  // Serialises a user args object into the arena; returns {offset, length} of the members.
  std::pair<std::uint64_t, std::uint32_t> store_args(const nlohmann::json* args, bool counter) {
    const std::uint64_t off = args_arena.size();
    if (args == nullptr || args->is_null()) return {off, 0};
    if (!args->is_object()) {
      throw std::invalid_argument(counter ? "trace counter series must be a JSON object of numbers"
                                          : "trace event args must be a JSON object");
    }
    if (args->empty()) return {off, 0};
    if (counter) {
      for (const auto& [key, value] : args->items()) {
        if (!value.is_number()) {
          throw std::invalid_argument("trace counter series '" + key + "' is not a number");
        }
      }
    } else {
      for (const char* reserved : {"start_ps", "dur_ps", "ts_ps"}) {
        if (args->contains(reserved)) {
          throw std::invalid_argument(std::string("trace event args may not use the reserved key '") +
                                      reserved + "'");
        }
      }
    }
    const std::string text = dump_compact(*args);  // "{...}"
    args_arena.append(text, 1, text.size() - 2);
    return {off, static_cast<std::uint32_t>(text.size() - 2)};
  }

  void record(char ph, int pid, int tid, std::string_view name, std::string_view cat, Picos ts,
              Picos dur, const nlohmann::json* args) {
    if (level == TraceLevel::kOff) return;
    const auto [off, len] = store_args(args, ph == 'C');
    Event e{};
    e.ts = ts;
    e.dur = dur;
    e.args_off = off;
    e.args_len = len;
    e.name = intern(name);
    e.cat = ph == 'C' ? 0 : intern(cat);
    e.pid = pid;
    e.tid = tid;
    e.ph = ph;
    events.push_back(e);
  }

  void write_metadata(std::string& buf, std::string_view what, int pid, int tid,
                      std::string_view arg_key, const std::string& arg_value_json) const {
    buf += "{\"name\":\"";
    buf += what;
    buf += "\",\"ph\":\"M\",\"pid\":";
    append_int(buf, pid);
    buf += ",\"tid\":";
    append_int(buf, tid);
    buf += ",\"args\":{\"";
    buf += arg_key;
    buf += "\":";
    buf += arg_value_json;
    buf += "}}";
  }

  void write_event(std::string& buf, const Event& e) const {
    buf += "{\"name\":";
    buf += intern_quoted[e.name];
    if (e.ph != 'C') {
      buf += ",\"cat\":";
      buf += intern_quoted[e.cat];
    }
    buf += ",\"ph\":\"";
    buf.push_back(e.ph);
    buf += "\",\"pid\":";
    append_int(buf, e.pid);
    if (e.ph != 'C') {
      buf += ",\"tid\":";
      append_int(buf, e.tid);
    }
    buf += ",\"ts\":";
    append_us(buf, e.ts);
    if (e.ph == 'X') {
      buf += ",\"dur\":";
      append_us(buf, e.dur);
    } else if (e.ph == 'i') {
      buf += ",\"s\":\"t\"";
    }
    buf += ",\"args\":{";
    bool need_comma = false;
    if (e.ph == 'X') {
      buf += "\"start_ps\":";
      append_uint(buf, e.ts);
      buf += ",\"dur_ps\":";
      append_uint(buf, e.dur);
      need_comma = true;
    } else if (e.ph == 'i') {
      buf += "\"ts_ps\":";
      append_uint(buf, e.ts);
      need_comma = true;
    }
    if (e.args_len != 0) {
      if (need_comma) buf.push_back(',');
      buf.append(args_arena, e.args_off, e.args_len);
    }
    buf += "}}";
  }

  void dump(std::ostream& out) const {
    constexpr std::size_t kFlushAt = 1 << 20;
    std::string buf;
    buf.reserve(kFlushAt + 4096);
    auto flush_if_full = [&] {
      if (buf.size() >= kFlushAt) {
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        buf.clear();
      }
    };
    bool first = true;
    auto next_line = [&] {
      buf += first ? "\n" : ",\n";
      first = false;
    };

    buf += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";

    // Metadata first, for the processes and tracks this trace has events in, in id order.
    std::set<int> used_pids;
    std::set<std::pair<int, int>> used_tracks;
    {
      int last_pid = 0, last_tid = 0;
      bool have_last = false;
      for (const Event& e : events) {
        if (e.ph == 'C') {
          used_pids.insert(e.pid);
          continue;
        }
        if (have_last && e.pid == last_pid && e.tid == last_tid) continue;
        used_pids.insert(e.pid);
        used_tracks.emplace(e.pid, e.tid);
        last_pid = e.pid;
        last_tid = e.tid;
        have_last = true;
      }
    }
    for (int pid : used_pids) {
      auto p = processes.find(pid);
      if (p == processes.end()) continue;
      next_line();
      write_metadata(buf, "process_name", pid, 0, "name", json_quote(p->second.name));
      next_line();
      std::string index;
      append_int(index, pid);
      write_metadata(buf, "process_sort_index", pid, 0, "sort_index", index);
    }
    for (const auto& [pid, tid] : used_tracks) {
      auto t = tracks.find(pid);
      if (t == tracks.end() || tid < 1 || static_cast<std::size_t>(tid) > t->second.names.size()) continue;
      next_line();
      write_metadata(buf, "thread_name", pid, tid, "name", json_quote(t->second.names[tid - 1]));
      next_line();
      std::string index;
      append_int(index, t->second.sort_index[tid - 1]);
      write_metadata(buf, "thread_sort_index", pid, tid, "sort_index", index);
    }

    for (const Event& e : events) {
      next_line();
      write_event(buf, e);
      flush_if_full();
    }

    buf += "\n],\"otherData\":{";
    std::map<std::string, std::string> other = other_data;
    other["trace_level"] = std::string(trace_level_name(recorded_level));
    bool first_other = true;
    for (const auto& [key, value] : other) {
      if (!first_other) buf.push_back(',');
      first_other = false;
      buf += json_quote(key);
      buf.push_back(':');
      buf += json_quote(value);
    }
    buf += "}}\n";
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  }
};

TraceWriter::TraceWriter() : impl_(std::make_unique<Impl>()) {}
TraceWriter::~TraceWriter() = default;
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;

void TraceWriter::begin(TraceLevel level) {
  clear();
  impl_->level = level;
  impl_->recorded_level = level;
}

void TraceWriter::end() { impl_->level = TraceLevel::kOff; }

void TraceWriter::clear() {
  // Release the memory too: a finished whole-model trace can be hundreds of MB.
  std::vector<Impl::Event>().swap(impl_->events);
  std::string().swap(impl_->args_arena);
  for (auto& [key, lanes] : impl_->lanes) std::fill(lanes.max_end.begin(), lanes.max_end.end(), Picos{0});
}

TraceLevel TraceWriter::level() const { return impl_->level; }

bool TraceWriter::records(TraceLevel l) const {
  return l != TraceLevel::kOff && impl_->level != TraceLevel::kOff &&
         static_cast<int>(l) <= static_cast<int>(impl_->level);
}

bool TraceWriter::recording() const { return impl_->level != TraceLevel::kOff; }

int TraceWriter::process(int pid, std::string_view name) {
  impl_->processes[pid].name = std::string(name);
  return pid;
}

int TraceWriter::track(int pid, std::string_view name) {
  Impl::TrackSet& set = impl_->tracks[pid];
  auto it = set.by_name.find(name);
  if (it != set.by_name.end()) return it->second;
  set.names.emplace_back(name);
  const int tid = static_cast<int>(set.names.size());
  set.sort_index.push_back(static_cast<std::int64_t>(tid) * kLanesPerTrack);
  set.by_name.emplace(std::string(name), tid);
  return tid;
}

void TraceWriter::complete_concurrent(int pid, int tid, std::string_view name, std::string_view category,
                                      Picos start, Picos duration, const nlohmann::json* args) {
  if (impl_->level == TraceLevel::kOff) return;
  Impl::Lanes& lanes = impl_->lanes[{pid, tid}];
  if (lanes.tids.empty()) {
    lanes.tids.push_back(tid);
    lanes.max_end.push_back(0);
  }
  // First lane whose events all end by `start`: the new slice cannot overlap any of them, in
  // whatever order events arrive.
  std::size_t lane = 0;
  while (lane < lanes.tids.size() && start < lanes.max_end[lane]) ++lane;
  if (lane == lanes.tids.size()) {
    Impl::TrackSet& set = impl_->tracks[pid];
    std::string base = (tid >= 1 && static_cast<std::size_t>(tid) <= set.names.size())
                           ? set.names[static_cast<std::size_t>(tid) - 1]
                           : "track " + std::to_string(tid);
    const int lane_tid = track(pid, base + " #" + std::to_string(lane + 1));
    // Sort right below the base track (while the base has fewer than kLanesPerTrack lanes).
    if (lane < static_cast<std::size_t>(kLanesPerTrack)) {
      impl_->tracks[pid].sort_index[static_cast<std::size_t>(lane_tid) - 1] =
          static_cast<std::int64_t>(tid) * kLanesPerTrack + static_cast<std::int64_t>(lane);
    }
    lanes.tids.push_back(lane_tid);
    lanes.max_end.push_back(0);
  }
  impl_->record('X', pid, lanes.tids[lane], name, category, start, duration, args);
  lanes.max_end[lane] = std::max(lanes.max_end[lane], start + duration);
}

void TraceWriter::complete(int pid, int tid, std::string_view name, std::string_view category, Picos start,
                           Picos duration, const nlohmann::json* args) {
  impl_->record('X', pid, tid, name, category, start, duration, args);
}

void TraceWriter::instant(int pid, int tid, std::string_view name, std::string_view category, Picos at,
                          const nlohmann::json* args) {
  impl_->record('i', pid, tid, name, category, at, 0, args);
}

void TraceWriter::counter(int pid, std::string_view name, Picos at, const nlohmann::json& series) {
  if (impl_->level == TraceLevel::kOff) return;
  if (!series.is_object() || series.empty()) {
    throw std::invalid_argument("trace counter '" + std::string(name) +
                                "' needs a non-empty JSON object of numbers as its series");
  }
  impl_->record('C', pid, 0, name, {}, at, 0, &series);
}

std::size_t TraceWriter::event_count() const { return impl_->events.size(); }

void TraceWriter::set_metadata(std::string key, std::string value) {
  impl_->other_data[std::move(key)] = std::move(value);
}

std::string TraceWriter::dump() const {
  std::ostringstream out;
  impl_->dump(out);
  return out.str();
}

void TraceWriter::dump(std::ostream& out) const { impl_->dump(out); }

void TraceWriter::write(const std::filesystem::path& file) const {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("cannot write trace file '" + file.string() + "': " + why);
  };
  const std::filesystem::path parent = file.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) fail("cannot create directory '" + parent.string() + "': " + ec.message());
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) fail(std::strerror(errno));
  impl_->dump(out);
  out.close();
  if (!out) fail("write failed");
}

}  // namespace mlusim::sim
