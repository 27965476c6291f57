// Timeline traces in Chrome trace-event JSON (opens in Perfetto and chrome://tracing).
//
// The format, the track naming convention and what each level records are specified in
// traces/README.md. In short: one process per simulated device, one track (a trace "thread") per
// engine / queue / link, "X" complete events for things that take time, "i" instants, "C"
// counters, and process/thread name metadata so viewers label everything.
//
// Time: events carry simulated picoseconds; "ts" and "dur" are written in microseconds as the
// exact decimal of ps / 1e6 (1234567 ps -> 1.234567), and complete/instant events also carry the
// picoseconds as integers in their args ("start_ps"/"dur_ps", "ts_ps") for tools that need
// more than a double's precision.
//
// Storage is compact (a vector of small records, interned names, one arena for serialised args);
// dump()/write() stream the JSON out. Output is deterministic byte for byte: the same sequence of
// calls on a fresh writer gives the same bytes.
//
// Not thread-safe, by design: the simulation thread owns the writer and is the only caller.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "mlusim/sim/sim_time.h"

namespace mlusim::sim {

// Ordered: a writer at level L records everything of level <= L.
enum class TraceLevel {
  kOff,
  kOps,         // ops, kernels, per-core tasks, copies, allocator, counters (default; whole models)
  kIntrinsics,  // + per-engine intrinsics and on-chip DMAs (opt-in; for one kernel)
};

// "off", "ops", "intrinsics"; and back (nullopt for anything else).
std::string_view trace_level_name(TraceLevel level);
std::optional<TraceLevel> trace_level_from_name(std::string_view name);

class TraceWriter {
 public:
  TraceWriter();
  ~TraceWriter();
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Drops all recorded events and starts recording at `level` (kOff = record nothing).
  // Declared processes and tracks, their ids, and set_metadata() entries are kept, so ids that
  // callers cached stay valid across traces.
  void begin(TraceLevel level);
  // Stops recording; recorded events are kept until the next begin() or clear().
  void end();
  // Drops recorded events; the recording level is unchanged.
  void clear();

  // The level being recorded now (kOff when not recording, e.g. after end()).
  TraceLevel level() const;
  // True when recording and `l` is detailed enough to be recorded: l != kOff && l <= level().
  bool records(TraceLevel l) const;
  // True between begin(l != kOff) and end().
  bool recording() const;

  // Declares process `pid` (one per simulated device; use pids >= 1). Returns pid. Redeclaring
  // renames it. Its process_name / process_sort_index (= pid) metadata is written once per trace,
  // if the trace has events in that process. May be called while not recording.
  int process(int pid, std::string_view name);
  // Returns the tid of the track named `name` in process `pid`: tids are 1, 2, 3, ... per pid in
  // first-use order and stay stable for the writer's lifetime. Its thread_name /
  // thread_sort_index (tid * 1000, so tracks show in declaration order) metadata is written once
  // per trace, if the trace has events on that track. May be called while not recording.
  int track(int pid, std::string_view name);

  // The recording calls below do nothing unless recording(); callers check records(level) to
  // pick the detail level. `args`, when given, must be a JSON object (else std::invalid_argument);
  // the keys "start_ps", "dur_ps" and "ts_ps" are reserved for the writer.

  // "X" complete event on a track: [start, start + duration).
  void complete(int pid, int tid, std::string_view name, std::string_view category, Picos start,
                Picos duration, const nlohmann::json* args = nullptr);
  // The same, for tracks whose events may overlap without nesting (a DMA engine or link carrying
  // several transfers at once). Viewers require the slices of one track to nest (Perfetto drops
  // the others), so an event that would overlap one already on the track goes to an overflow
  // track "<track name> #2", "#3", ... (created on demand, sorted right below the track).
  // Do not use it where nesting is meant (an op and its kernels): parents would be moved away.
  void complete_concurrent(int pid, int tid, std::string_view name, std::string_view category,
                           Picos start, Picos duration, const nlohmann::json* args = nullptr);
  // "i" instant event (thread scope) on a track.
  void instant(int pid, int tid, std::string_view name, std::string_view category, Picos at,
               const nlohmann::json* args = nullptr);
  // "C" counter event in a process. `series` is an object of numbers, e.g. {"GB/s": 12.5}; each
  // key is one series of the counter `name` (std::invalid_argument otherwise).
  void counter(int pid, std::string_view name, Picos at, const nlohmann::json& series);

  // Recorded "X"/"i"/"C" events since begin()/clear() (metadata events are not counted).
  std::size_t event_count() const;

  // Key/value pairs written to "otherData" (e.g. "config", "mlusim_version"), sorted by key.
  // "trace_level" is added by the writer. Kept across begin().
  void set_metadata(std::string key, std::string value);

  // {"displayTimeUnit":"ns","traceEvents":[...],"otherData":{...}}, one event per line.
  std::string dump() const;
  void dump(std::ostream& out) const;
  // Writes dump() to `file`, creating missing parent directories. Throws std::runtime_error
  // naming the path when it cannot.
  void write(const std::filesystem::path& file) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Microseconds text for a picosecond count: the exact decimal of ps / 1e6 with no trailing
// zeros ("1.234567", "1.5", "2", "0"). Exposed for tests and report writers.
std::string picos_to_us_text(Picos ps);

}  // namespace mlusim::sim
