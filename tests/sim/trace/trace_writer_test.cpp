// TraceWriter: Chrome trace-event JSON output, levels, determinism and file output.
#include "mlusim/sim/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlusim::sim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json parse(const TraceWriter& w) { return json::parse(w.dump()); }

// All events of phase `ph` (and, when given, name `name`).
std::vector<json> events_of(const json& trace, const std::string& ph, const std::string& name = {}) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph && (name.empty() || e.at("name") == name)) out.push_back(e);
  }
  return out;
}

// The raw text of the first "key":value in `text` after `from` (value up to , or }).
std::string raw_value(const std::string& text, const std::string& key, std::size_t from = 0) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = text.find(needle, from);
  if (at == std::string::npos) return {};
  const std::size_t start = at + needle.size();
  const std::size_t stop = text.find_first_of(",}", start);
  return text.substr(start, stop - start);
}

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("mlusim_trace_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A small but representative trace: one device, two tracks, all event kinds.
void record_sample(TraceWriter& w) {
  w.set_metadata("config", "tiny");
  w.set_metadata("mlusim_version", "0.1.0");
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0 (tiny)");
  const int q = w.track(pid, "queue 0");
  const int tfu = w.track(pid, "cluster0.core0 TFU");
  json args = {{"cycles", 1234}, {"bytes", 4096}, {"dtype", "fp16"}};
  w.complete(pid, q, "matmul", "kernel", 1000000, 2500000, &args);
  w.complete(pid, tfu, "mma", "intrinsic", 1234567, 7);
  w.instant(pid, q, "notifier", "sync", 3500000);
  w.counter(pid, "DRAM bandwidth (GB/s)", 1000000, {{"GB/s", 12.5}});
  w.end();
}

TEST(TraceTime, ExactDecimalMicroseconds) {
  EXPECT_EQ(picos_to_us_text(0), "0");
  EXPECT_EQ(picos_to_us_text(1), "0.000001");
  EXPECT_EQ(picos_to_us_text(10), "0.00001");
  EXPECT_EQ(picos_to_us_text(999999), "0.999999");
  EXPECT_EQ(picos_to_us_text(1000000), "1");
  EXPECT_EQ(picos_to_us_text(1234567), "1.234567");
  EXPECT_EQ(picos_to_us_text(1500000), "1.5");
  EXPECT_EQ(picos_to_us_text(1000000000120000ull), "1000000000.12");
  EXPECT_EQ(picos_to_us_text(18446744073709551615ull), "18446744073709.551615");
}

TEST(TraceLevelNames, RoundTrip) {
  for (TraceLevel l : {TraceLevel::kOff, TraceLevel::kOps, TraceLevel::kIntrinsics}) {
    EXPECT_EQ(trace_level_from_name(trace_level_name(l)), l);
  }
  EXPECT_EQ(trace_level_name(TraceLevel::kIntrinsics), "intrinsics");
  EXPECT_FALSE(trace_level_from_name("verbose").has_value());
}

TEST(TraceWriter, OutputIsChromeTraceJson) {
  TraceWriter w;
  record_sample(w);
  const json t = parse(w);
  EXPECT_EQ(t.at("displayTimeUnit"), "ns");
  ASSERT_TRUE(t.at("traceEvents").is_array());
  EXPECT_EQ(t.at("otherData").at("config"), "tiny");
  EXPECT_EQ(t.at("otherData").at("mlusim_version"), "0.1.0");
  EXPECT_EQ(t.at("otherData").at("trace_level"), "ops");
  EXPECT_EQ(w.event_count(), 4u);
  // 4 recorded + process_name/sort_index + 2 x thread_name/sort_index.
  EXPECT_EQ(t.at("traceEvents").size(), 4u + 2u + 4u);
  // Top-level key order as specified.
  const std::string text = w.dump();
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  EXPECT_LT(text.find("\"traceEvents\""), text.find("\"otherData\""));
}

TEST(TraceWriter, MetadataNamesProcessesAndTracks) {
  TraceWriter w;
  record_sample(w);
  const json t = parse(w);
  const auto pname = events_of(t, "M", "process_name");
  ASSERT_EQ(pname.size(), 1u);
  EXPECT_EQ(pname[0].at("pid"), 1);
  EXPECT_EQ(pname[0].at("args").at("name"), "mlu0 (tiny)");
  const auto psort = events_of(t, "M", "process_sort_index");
  ASSERT_EQ(psort.size(), 1u);
  EXPECT_EQ(psort[0].at("args").at("sort_index"), 1);

  const auto tnames = events_of(t, "M", "thread_name");
  ASSERT_EQ(tnames.size(), 2u);
  EXPECT_EQ(tnames[0].at("tid"), 1);
  EXPECT_EQ(tnames[0].at("args").at("name"), "queue 0");
  EXPECT_EQ(tnames[1].at("tid"), 2);
  EXPECT_EQ(tnames[1].at("args").at("name"), "cluster0.core0 TFU");
  const auto tsort = events_of(t, "M", "thread_sort_index");
  ASSERT_EQ(tsort.size(), 2u);
  EXPECT_EQ(tsort[0].at("args").at("sort_index"), 1000);
  EXPECT_EQ(tsort[1].at("args").at("sort_index"), 2000);
}

TEST(TraceWriter, MetadataOnlyForTracksWithEventsInThisTrace) {
  TraceWriter w;
  const int pid = w.process(1, "mlu0 (tiny)");
  const int used = w.track(pid, "queue 0");
  w.track(pid, "cluster0.core0 VFU");  // declared, never used
  w.process(2, "mlu1 (tiny)");          // declared, no events
  w.begin(TraceLevel::kOps);
  w.complete(pid, used, "add", "kernel", 0, 10);
  const json t = parse(w);
  EXPECT_EQ(events_of(t, "M", "process_name").size(), 1u);
  const auto tnames = events_of(t, "M", "thread_name");
  ASSERT_EQ(tnames.size(), 1u);
  EXPECT_EQ(tnames[0].at("args").at("name"), "queue 0");
}

TEST(TraceWriter, TrackIdsAreStablePerProcessInFirstUseOrder) {
  TraceWriter w;
  EXPECT_EQ(w.process(3, "mlu2 (x)"), 3);
  EXPECT_EQ(w.track(3, "host link"), 1);
  EXPECT_EQ(w.track(3, "allocator"), 2);
  EXPECT_EQ(w.track(3, "host link"), 1);
  EXPECT_EQ(w.track(4, "allocator"), 1);  // tids are per process
  w.begin(TraceLevel::kOps);              // ids survive begin()
  EXPECT_EQ(w.track(3, "allocator"), 2);
  EXPECT_EQ(w.track(3, "queue 0"), 3);
}

TEST(TraceWriter, CompleteEventFieldsAndArgs) {
  TraceWriter w;
  record_sample(w);
  const json t = parse(w);
  const auto x = events_of(t, "X", "matmul");
  ASSERT_EQ(x.size(), 1u);
  const json& e = x[0];
  EXPECT_EQ(e.at("cat"), "kernel");
  EXPECT_EQ(e.at("pid"), 1);
  EXPECT_EQ(e.at("tid"), 1);
  EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 2.5);
  EXPECT_EQ(e.at("args").at("start_ps").get<std::uint64_t>(), 1000000u);
  EXPECT_EQ(e.at("args").at("dur_ps").get<std::uint64_t>(), 2500000u);
  EXPECT_EQ(e.at("args").at("cycles"), 1234);
  EXPECT_EQ(e.at("args").at("bytes"), 4096);
  EXPECT_EQ(e.at("args").at("dtype"), "fp16");

  const auto mma = events_of(t, "X", "mma");
  ASSERT_EQ(mma.size(), 1u);
  EXPECT_EQ(mma[0].at("args").size(), 2u);  // only the writer's ps args
  EXPECT_EQ(mma[0].at("args").at("dur_ps"), 7);
}

TEST(TraceWriter, TimestampsAreWrittenAsExactDecimals) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0 (tiny)");
  const int tid = w.track(pid, "queue 0");
  w.complete(pid, tid, "a", "op", 1234567, 1);
  w.complete(pid, tid, "b", "op", 2000000, 100);
  w.complete(pid, tid, "c", "op", 300000000000000ull, 1500001);
  const std::string text = w.dump();
  std::size_t a = text.find("\"name\":\"a\"");
  std::size_t b = text.find("\"name\":\"b\"");
  std::size_t c = text.find("\"name\":\"c\"");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(c, std::string::npos);
  EXPECT_EQ(raw_value(text, "ts", a), "1.234567");
  EXPECT_EQ(raw_value(text, "dur", a), "0.000001");
  EXPECT_EQ(raw_value(text, "ts", b), "2");
  EXPECT_EQ(raw_value(text, "dur", b), "0.0001");
  EXPECT_EQ(raw_value(text, "ts", c), "300000000");
  EXPECT_EQ(raw_value(text, "dur", c), "1.500001");
  EXPECT_EQ(raw_value(text, "start_ps", c), "300000000000000");
  // And they parse as the intended numbers.
  const auto x = events_of(json::parse(text), "X", "a");
  EXPECT_DOUBLE_EQ(x.at(0).at("ts").get<double>(), 1.234567);
}

TEST(TraceWriter, InstantEvent) {
  TraceWriter w;
  record_sample(w);
  const auto i = events_of(parse(w), "i", "notifier");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_EQ(i[0].at("s"), "t");
  EXPECT_EQ(i[0].at("cat"), "sync");
  EXPECT_EQ(i[0].at("tid"), 1);
  EXPECT_DOUBLE_EQ(i[0].at("ts").get<double>(), 3.5);
  EXPECT_EQ(i[0].at("args").at("ts_ps"), 3500000);
  EXPECT_FALSE(i[0].contains("dur"));
}

TEST(TraceWriter, CounterFormat) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0 (tiny)");
  w.counter(pid, "DRAM bandwidth (GB/s)", 1000000, {{"GB/s", 12.5}});
  w.counter(pid, "memory allocated (bytes)", 2000000, {{"bytes", 1048576}});
  const json t = parse(w);
  const auto c = events_of(t, "C");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].at("name"), "DRAM bandwidth (GB/s)");
  EXPECT_EQ(c[0].at("pid"), 1);
  EXPECT_DOUBLE_EQ(c[0].at("ts").get<double>(), 1.0);
  // A counter's args are exactly its series: anything else would be drawn as another series.
  EXPECT_EQ(c[0].at("args"), json({{"GB/s", 12.5}}));
  EXPECT_EQ(c[1].at("args"), json({{"bytes", 1048576}}));
  EXPECT_FALSE(c[0].contains("dur"));
  // The process of a counter-only device is still named.
  EXPECT_EQ(events_of(t, "M", "process_name").size(), 1u);
}

TEST(TraceWriter, RejectsMalformedArgs) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0");
  const int tid = w.track(pid, "queue 0");
  const json not_object = 5;
  EXPECT_THROW(w.complete(pid, tid, "x", "op", 0, 1, &not_object), std::invalid_argument);
  const json reserved = {{"start_ps", 1}};
  EXPECT_THROW(w.complete(pid, tid, "x", "op", 0, 1, &reserved), std::invalid_argument);
  EXPECT_THROW(w.counter(pid, "c", 0, json({{"GB/s", "fast"}})), std::invalid_argument);
  EXPECT_THROW(w.counter(pid, "c", 0, json(3.0)), std::invalid_argument);
  EXPECT_THROW(w.counter(pid, "c", 0, json::object()), std::invalid_argument);
  EXPECT_EQ(w.event_count(), 0u);
  const json empty = json::object();
  w.complete(pid, tid, "x", "op", 0, 1, &empty);
  EXPECT_EQ(w.event_count(), 1u);
  EXPECT_NO_THROW(parse(w));
}

TEST(TraceWriter, EscapesNamesAndArgs) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0 \"quoted\"\n");
  const int tid = w.track(pid, "queue\\0");
  json args = {{"note", "tab\there"}};
  w.complete(pid, tid, "weird \"name\"", "cat\x01", 0, 1, &args);
  w.complete(pid, tid, std::string("bad utf8 \xff"), "op", 1, 1);
  const json t = parse(w);
  EXPECT_EQ(events_of(t, "X", "weird \"name\"").at(0).at("args").at("note"), "tab\there");
  EXPECT_EQ(events_of(t, "M", "process_name").at(0).at("args").at("name"), "mlu0 \"quoted\"\n");
  EXPECT_EQ(events_of(t, "M", "thread_name").at(0).at("args").at("name"), "queue\\0");
}

// Slices of one track must nest; complete_concurrent() moves overlapping ones to overflow lanes.
TEST(TraceWriter, ConcurrentEventsGetOverflowLanes) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0 (tiny)");
  const int dma = w.track(pid, "cluster0.core0 IO-DMA");
  const int later = w.track(pid, "cluster0.core0 Move-DMA");
  // Recorded at completion: a [0,100), b [50,120), c [100,130), d [60,200), e [130,140).
  w.complete_concurrent(pid, dma, "a", "dma", 0, 100);
  w.complete_concurrent(pid, dma, "b", "dma", 50, 70);
  w.complete_concurrent(pid, dma, "c", "dma", 100, 30);
  w.complete_concurrent(pid, dma, "d", "dma", 60, 140);
  w.complete_concurrent(pid, dma, "e", "dma", 130, 10);
  const json t = parse(w);
  auto tid_of = [&](const std::string& name) { return events_of(t, "X", name).at(0).at("tid").get<int>(); };
  EXPECT_EQ(tid_of("a"), dma);
  EXPECT_EQ(tid_of("c"), dma);
  EXPECT_EQ(tid_of("e"), dma);
  const int lane2 = tid_of("b");
  const int lane3 = tid_of("d");
  EXPECT_NE(lane2, dma);
  EXPECT_NE(lane3, dma);
  EXPECT_NE(lane2, lane3);
  EXPECT_EQ(w.track(pid, "cluster0.core0 IO-DMA #2"), lane2);
  EXPECT_EQ(w.track(pid, "cluster0.core0 IO-DMA #3"), lane3);
  // Overflow lanes sort right below their track, above the next declared track.
  std::map<int, int> sort;
  for (const json& m : events_of(t, "M", "thread_sort_index")) sort[m.at("tid")] = m.at("args").at("sort_index");
  EXPECT_EQ(sort.at(dma), 1000);
  EXPECT_EQ(sort.at(lane2), 1001);
  EXPECT_EQ(sort.at(lane3), 1002);
  w.complete(pid, later, "x", "dma", 0, 1);
  EXPECT_EQ(events_of(parse(w), "M", "thread_sort_index").size(), 4u);
  EXPECT_GT(later * 1000, 1002);

  // No two slices on one track overlap.
  std::map<int, std::vector<std::pair<double, double>>> by_tid;
  for (const json& e : events_of(parse(w), "X")) {
    const double s = e.at("args").at("start_ps").get<double>();
    by_tid[e.at("tid")].emplace_back(s, s + e.at("args").at("dur_ps").get<double>());
  }
  for (auto& [tid, spans] : by_tid) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << tid;
  }

  // A new trace starts with empty lanes; lane tids stay stable.
  w.begin(TraceLevel::kOps);
  w.complete_concurrent(pid, dma, "f", "dma", 0, 100);
  w.complete_concurrent(pid, dma, "g", "dma", 10, 100);
  const json t2 = parse(w);
  EXPECT_EQ(events_of(t2, "X", "f").at(0).at("tid"), dma);
  EXPECT_EQ(events_of(t2, "X", "g").at(0).at("tid"), lane2);
}

TEST(TraceWriter, LevelFiltering) {
  TraceWriter w;
  EXPECT_EQ(w.level(), TraceLevel::kOff);
  EXPECT_FALSE(w.recording());
  EXPECT_FALSE(w.records(TraceLevel::kOps));

  w.begin(TraceLevel::kOps);
  EXPECT_EQ(w.level(), TraceLevel::kOps);
  EXPECT_TRUE(w.records(TraceLevel::kOps));
  EXPECT_FALSE(w.records(TraceLevel::kIntrinsics));
  EXPECT_FALSE(w.records(TraceLevel::kOff));

  w.begin(TraceLevel::kIntrinsics);
  EXPECT_TRUE(w.records(TraceLevel::kOps));
  EXPECT_TRUE(w.records(TraceLevel::kIntrinsics));

  w.begin(TraceLevel::kOff);
  EXPECT_FALSE(w.recording());
  EXPECT_FALSE(w.records(TraceLevel::kOps));
  const int pid = w.process(1, "mlu0");
  w.complete(pid, w.track(pid, "queue 0"), "x", "op", 0, 1);
  w.counter(pid, "c", 0, {{"v", 1}});
  EXPECT_EQ(w.event_count(), 0u);
}

TEST(TraceWriter, EndStopsRecordingButKeepsEvents) {
  TraceWriter w;
  w.begin(TraceLevel::kIntrinsics);
  const int pid = w.process(1, "mlu0");
  const int tid = w.track(pid, "queue 0");
  w.complete(pid, tid, "x", "op", 0, 1);
  w.end();
  EXPECT_EQ(w.level(), TraceLevel::kOff);
  EXPECT_FALSE(w.records(TraceLevel::kOps));
  w.complete(pid, tid, "y", "op", 1, 1);
  EXPECT_EQ(w.event_count(), 1u);
  const json t = parse(w);
  EXPECT_EQ(events_of(t, "X").size(), 1u);
  EXPECT_EQ(t.at("otherData").at("trace_level"), "intrinsics");
}

TEST(TraceWriter, BeginAndClearDropEvents) {
  TraceWriter w;
  record_sample(w);
  ASSERT_EQ(w.event_count(), 4u);
  w.begin(TraceLevel::kOps);
  EXPECT_EQ(w.event_count(), 0u);
  const json t = parse(w);
  EXPECT_TRUE(t.at("traceEvents").empty());  // no events -> no metadata either
  EXPECT_EQ(t.at("otherData").at("config"), "tiny");

  const int pid = w.process(1, "mlu0 (tiny)");
  w.complete(pid, w.track(pid, "queue 0"), "x", "op", 0, 1);
  EXPECT_EQ(w.event_count(), 1u);
  w.clear();
  EXPECT_EQ(w.event_count(), 0u);
  EXPECT_TRUE(w.recording());  // clear() keeps the level
}

TEST(TraceWriter, DeterministicBytes) {
  TraceWriter a, b;
  record_sample(a);
  record_sample(b);
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(a.dump(), a.dump());
  // A second trace on the same writer after begin() matches a fresh writer's.
  TraceWriter c;
  record_sample(c);
  record_sample(c);
  EXPECT_EQ(c.dump(), a.dump());
}

TEST(TraceWriter, EventsKeepRecordingOrder) {
  TraceWriter w;
  w.begin(TraceLevel::kOps);
  const int pid = w.process(1, "mlu0");
  const int tid = w.track(pid, "queue 0");
  w.complete(pid, tid, "late", "op", 500, 1);
  w.complete(pid, tid, "early", "op", 100, 1);
  const auto x = events_of(parse(w), "X");
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0].at("name"), "late");
  EXPECT_EQ(x[1].at("name"), "early");
}

TEST(TraceWriter, StreamDumpEqualsStringDump) {
  TraceWriter w;
  record_sample(w);
  std::ostringstream out;
  w.dump(out);
  EXPECT_EQ(out.str(), w.dump());
}

TEST(TraceWriter, WriteCreatesNestedDirectories) {
  TempDir dir;
  TraceWriter w;
  record_sample(w);
  const fs::path file = dir.path() / "a" / "b" / "c" / "trace.json";
  w.write(file);
  ASSERT_TRUE(fs::exists(file));
  std::ifstream in(file, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), w.dump());
  // Overwrites an existing file.
  TraceWriter empty;
  empty.write(file);
  EXPECT_EQ(json::parse(std::ifstream(file)).at("traceEvents").size(), 0u);
}

TEST(TraceWriter, WriteFailureThrowsNamingThePath) {
  TempDir dir;
  TraceWriter w;
  record_sample(w);
  // A path below a regular file can never be created, whoever runs the test (root included).
  const fs::path blocker = dir.path() / "not_a_dir";
  std::ofstream(blocker) << "x";
  const fs::path file = blocker / "sub" / "trace.json";
  try {
    w.write(file);
    FAIL() << "write to " << file << " did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  // Writing onto a directory fails too.
  try {
    w.write(dir.path());
    FAIL() << "write to a directory did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos) << e.what();
  }
}

TEST(TraceWriter, ManyEventsStayCompactAndValid) {
  TraceWriter w;
  w.begin(TraceLevel::kIntrinsics);
  const int pid = w.process(1, "mlu0 (tiny)");
  std::vector<int> tids;
  for (int c = 0; c < 4; ++c) tids.push_back(w.track(pid, "cluster0.core" + std::to_string(c) + " VFU"));
  constexpr int kEvents = 50000;
  json args = {{"cycles", 0}};
  for (int i = 0; i < kEvents; ++i) {
    args["cycles"] = i;
    w.complete(pid, tids[i % 4], i % 2 ? "add" : "mul", "intrinsic", static_cast<Picos>(i) * 1000, 999,
               &args);
  }
  EXPECT_EQ(w.event_count(), static_cast<std::size_t>(kEvents));
  const json t = parse(w);
  EXPECT_EQ(t.at("traceEvents").size(), static_cast<std::size_t>(kEvents) + 2 + 8);
  EXPECT_EQ(t.at("traceEvents").back().at("args").at("cycles"), kEvents - 1);
}

TEST(TraceWriter, MoveKeepsState) {
  TraceWriter a;
  record_sample(a);
  const std::string before = a.dump();
  TraceWriter b(std::move(a));
  EXPECT_EQ(b.dump(), before);
  TraceWriter c;
  c = std::move(b);
  EXPECT_EQ(c.dump(), before);
}

}  // namespace
}  // namespace mlusim::sim
