// Loading configs: preset lookup, `extends:` merging, overrides, and validation errors that name
// the file, the key and the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/test_util.h"
#include "mlusim/sim/config.h"

namespace mlusim::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ExpectConfigError;
using testing::preset_path;
using testing::ScratchDir;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

// A document extending the tiny preset with `body` appended, parsed as "bad.yaml".
HardwareConfig parse_on_tiny(const std::string& body, const std::vector<ConfigOverride>& overrides = {}) {
  return parse_config("extends: tiny\n" + body, "bad.yaml", overrides);
}

void ExpectTinyError(const std::string& body, const std::string& key, const std::string& reason_part) {
  SCOPED_TRACE(body);
  ExpectConfigError([&] { parse_on_tiny(body); }, "bad.yaml", key, reason_part);
}

// The full mlu370-x4 preset as YAML text with one key removed.
std::string preset_without(const std::string& key) {
  YAML::Node root = YAML::LoadFile(preset_path("mlu370-x4"));
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos) {
    root.remove(key);
  } else {
    YAML::Node section = root[key.substr(0, dot)];
    section.remove(key.substr(dot + 1));
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

// Sets an environment variable for the lifetime of the object.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// ---------------------------------------------------------------- preset lookup

TEST(ConfigPaths, ResolvesPresetNamesAndPaths) {
  EXPECT_EQ(resolve_config_path("tiny"), config_dir() / "tiny.yaml");
  EXPECT_EQ(resolve_config_path(preset_path("mlu270")), std::filesystem::path(preset_path("mlu270")));
}

TEST(ConfigPaths, UnknownPresetListsAvailableOnes) {
  try {
    load_config("mlu999");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "mlu999");
    EXPECT_EQ(e.key(), "");
    EXPECT_THAT(e.what(), HasSubstr("unknown preset"));
    EXPECT_THAT(e.what(), HasSubstr("mlu270, mlu370-x4, "));  // sorted; other presets in between
    EXPECT_THAT(e.what(), HasSubstr("tiny, tpu-v3"));
  }
}

TEST(ConfigPaths, MissingFileIsNamed) {
  ExpectConfigError([] { load_config("/nonexistent/dir/chip.yaml"); }, "/nonexistent/dir/chip.yaml", "",
                    "no such config file");
  // A bare name ending in .yaml is a path (relative to the working directory), not a preset.
  ExpectConfigError([] { load_config("nonexistent.yaml"); }, "nonexistent.yaml", "", "no such config file");
}

TEST(ConfigPaths, ConfigDirFollowsEnvironment) {
  ScratchDir dir;
  dir.write("mine.yaml", "extends: " + preset_path("tiny") + "\nname: mine\n");
  EnvGuard env("MLUSIM_CONFIG_DIR", dir.path().string());
  EXPECT_EQ(config_dir(), dir.path());
  EXPECT_EQ(load_config("mine").name, "mine");
  ExpectConfigError([] { load_config("tiny"); }, "tiny", "", "available in " );
}

// ---------------------------------------------------------------- extends

TEST(ConfigExtends, PresetNameMergesMapsDeeply) {
  const HardwareConfig c = parse_config("extends: tiny\nname: t2\ndram:\n  bandwidth_gbps: 100\n", "t2.yaml");
  EXPECT_EQ(c.name, "t2");
  EXPECT_EQ(c.source_file, "t2.yaml");
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 100.0);  // set here
  EXPECT_EQ(c.dram_channels, 4u);                   // same map, kept from tiny
  EXPECT_EQ(c.dram_bytes, 64 * MiB);                // same map, kept from tiny
  EXPECT_EQ(c.vfu_width_bytes, 128u);               // from mlu370-x4, two levels down
}

TEST(ConfigExtends, RelativePathsFollowTheIncludingFileAndLaterWins) {
  ScratchDir dir;
  dir.write("base/mid.yaml", "extends: " + preset_path("tiny") + "\nname: mid\ndram:\n  latency_ns: 7\n");
  const auto child = dir.write("sub/child.yaml", "extends: ../base/mid.yaml\nname: child\nvfu:\n  width_bytes: 64\n");
  const HardwareConfig c = load_config(child.string());
  EXPECT_EQ(c.name, "child");                  // child over mid
  EXPECT_DOUBLE_EQ(c.dram_latency_ns, 7.0);    // mid over tiny
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 64.0);  // tiny over mlu370-x4
  EXPECT_EQ(c.vfu_width_bytes, 64u);           // child over mlu370-x4
  EXPECT_EQ(c.source_file, child.string());
}

TEST(ConfigExtends, ErrorsNameTheFileHoldingTheValue) {
  ScratchDir dir;
  const auto base = dir.write("base.yaml", "extends: " + preset_path("tiny") + "\ndram:\n  bandwidth_gbps: 0\n");
  const auto child = dir.write("child.yaml", "extends: base.yaml\nname: child\n");
  ExpectConfigError([&] { load_config(child.string()); }, base.string(), "dram.bandwidth_gbps",
                    "must be between 0.001 and 1000000 GB/s (1 MB/s to 1 PB/s keeps every transfer within 64-bit picosecond time), got 0 GB/s (line 3)");
  // A later file that sets the key replaces the bad value.
  const auto fixed = dir.write("fixed.yaml", "extends: base.yaml\ndram:\n  bandwidth_gbps: 10\n");
  EXPECT_DOUBLE_EQ(load_config(fixed.string()).dram_bandwidth_gbps, 10.0);
}

TEST(ConfigExtends, CycleIsRejected) {
  ScratchDir dir;
  const auto a = dir.write("a.yaml", "extends: b.yaml\nname: a\n");
  const auto b = dir.write("b.yaml", "extends: a.yaml\nname: b\n");
  ExpectConfigError([&] { load_config(a.string()); }, b.string(), "extends",
                    "extends cycle: " + a.string() + " -> " + b.string() + " -> " + a.string());
}

TEST(ConfigExtends, SelfExtendIsACycle) {
  ScratchDir dir;
  const auto self = dir.write("self.yaml", "name: self\nextends: ./self.yaml\n");
  ExpectConfigError([&] { load_config(self.string()); }, self.string(), "extends", "extends cycle");
}

TEST(ConfigExtends, MissingTargetIsRejected) {
  ScratchDir dir;
  const auto child = dir.write("child.yaml", "extends: nothere.yaml\n");
  ExpectConfigError([&] { load_config(child.string()); }, child.string(), "extends",
                    "no such file: " + (dir.path() / "nothere.yaml").string() + " (line 1)");
  ExpectConfigError([] { parse_config("extends: mlu999\n", "x.yaml"); }, "x.yaml", "extends",
                    "unknown preset \"mlu999\"");
  ExpectConfigError([] { parse_config("extends: [tiny, mlu270]\n", "x.yaml"); }, "x.yaml", "extends",
                    "expected a preset name or a path");
}

// ---------------------------------------------------------------- overrides

TEST(ConfigOverrides, ApplyAfterMergingWithTheKeysType) {
  const HardwareConfig c = load_config("tiny", {{"dram.bandwidth_gbps", "200"},
                                                {"core.nram_bytes", "128KiB"},
                                                {"tfu.dataflow", "weight_stationary"},
                                                {"tfu.fold_overlap", "false"},
                                                {"tfu.fp32.cols", "8"},
                                                {"name", "custom"},
                                                {"topology.clusters", "3"},
                                                {"topology.clusters", "4"}});  // later wins
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 200.0);
  EXPECT_EQ(c.nram_bytes, 128 * KiB);
  EXPECT_EQ(c.tfu_dataflow, Dataflow::kWeightStationary);
  EXPECT_FALSE(c.tfu_fold_overlap);
  EXPECT_EQ(c.tfu_fp32.cols, 8u);
  EXPECT_EQ(c.tfu_fp32.rows, 4u);
  EXPECT_EQ(c.name, "custom");
  EXPECT_EQ(c.clusters, 4u);
  EXPECT_EQ(c.dram_channels, 4u);  // untouched keys keep the preset's values
}

TEST(ConfigOverrides, UnknownKeyIsRejectedWithSuggestion) {
  ExpectConfigError([] { load_config("tiny", {{"dram.bandwith_gbps", "1"}}); }, "override", "dram.bandwith_gbps",
                    "unknown key; did you mean \"dram.bandwidth_gbps\"?");
  ExpectConfigError([] { load_config("tiny", {{"extends", "mlu270"}}); }, "override", "extends", "unknown key");
}

TEST(ConfigOverrides, BadValueIsRejected) {
  ExpectConfigError([] { load_config("tiny", {{"dram.bandwidth_gbps", "fast"}}); }, "override",
                    "dram.bandwidth_gbps", "expected a number, got \"fast\"");
  ExpectConfigError([] { load_config("tiny", {{"topology.clusters", "-1"}}); }, "override", "topology.clusters",
                    "must not be negative");
  ExpectConfigError([] { load_config("tiny", {{"dram.bandwidth_gbps", "0"}}); }, "override",
                    "dram.bandwidth_gbps", "must be between 0.001 and 1000000 GB/s");
  ExpectConfigError([] { load_config("tiny", {{"core.nram_bytes", "64KB"}}); }, "override", "core.nram_bytes",
                    "binary");
  ExpectConfigError([] { load_config("tiny", {{"tfu.fold_overlap", "maybe"}}); }, "override",
                    "tfu.fold_overlap", "expected true or false");
}

TEST(ConfigOverrides, CanSupplyAMissingKey) {
  const std::string text = preset_without("dram.latency_ns");
  EXPECT_DOUBLE_EQ(parse_config(text, "edited.yaml", {{"dram.latency_ns", "42"}}).dram_latency_ns, 42.0);
}

TEST(ConfigOverrides, ParsesKeyEqualsValue) {
  EXPECT_EQ(parse_config_override("dram.bandwidth_gbps=200"), ConfigOverride("dram.bandwidth_gbps", "200"));
  EXPECT_EQ(parse_config_override("name=a=b"), ConfigOverride("name", "a=b"));
  ExpectConfigError([] { parse_config_override("dram.bandwidth_gbps"); }, "override", "dram.bandwidth_gbps",
                    "expected key=value");
  ExpectConfigError([] { parse_config_override("=5"); }, "override", "=5", "expected key=value");
}

// ---------------------------------------------------------------- key-level validation

TEST(ConfigValidation, UnknownKeyWithSuggestionAndLine) {
  ExpectTinyError("dram:\n  bandwith_gbps: 5\n", "dram.bandwith_gbps",
                  "unknown key; did you mean \"dram.bandwidth_gbps\"? (line 3)");
  ExpectTinyError("nram_bytes: 1\n", "nram_bytes", "did you mean \"core.nram_bytes\"?");
  ExpectTinyError("dram:\n  io_bandwidth_gbps: 5\n", "dram.io_bandwidth_gbps",
                  "did you mean \"dma.io_bandwidth_gbps\"?");
  try {
    parse_on_tiny("frobnicate: 1\n");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "frobnicate");
    EXPECT_THAT(e.what(), Not(HasSubstr("did you mean")));
  }
}

TEST(ConfigValidation, MissingKey) {
  ExpectConfigError([] { parse_config(preset_without("dram.latency_ns"), "edited.yaml"); }, "edited.yaml",
                    "dram.latency_ns", "missing required key");
  ExpectConfigError([] { parse_config(preset_without("name"), "edited.yaml"); }, "edited.yaml", "name",
                    "missing required key");
  ExpectConfigError([] { parse_config("name: bare\n", "bare.yaml"); }, "bare.yaml", "devices",
                    "also missing: topology.clusters, topology.cores_per_cluster, clock.core_mhz, clock.mem_mhz, "
                    "core.nram_bytes, core.wram_bytes, cluster.sram_bytes, cluster.sram_bandwidth_gbps and 34 more");
  // The full preset text itself is complete.
  EXPECT_EQ(parse_config(preset_without("no_such_key"), "edited.yaml").name, "mlu370-x4");
}

TEST(ConfigValidation, WrongTypes) {
  ExpectTinyError("dram:\n  bandwidth_gbps: fast\n", "dram.bandwidth_gbps", "expected a number, got \"fast\"");
  ExpectTinyError("dram:\n  bandwidth_gbps:\n    a: 1\n", "dram.bandwidth_gbps", "expected a number, got a map");
  ExpectTinyError("dram:\n  latency_ns:\n", "dram.latency_ns", "has no value");
  ExpectTinyError("topology:\n  clusters: -2\n", "topology.clusters", "must not be negative");
  ExpectTinyError("dram:\n  channels: 1.5\n", "dram.channels", "expected an unsigned integer, got \"1.5\"");
  ExpectTinyError("core:\n  nram_bytes: lots\n", "core.nram_bytes", "expected a byte size");
  ExpectTinyError("core:\n  nram_bytes: -64KiB\n", "core.nram_bytes", "non-negative");
  ExpectTinyError("name: [a, b]\n", "name", "expected a string, got a list");
  ExpectTinyError("tfu: 3\n", "tfu", "is a section: expected a map of fp32.rows");
  ExpectTinyError("tfu:\n  fold_overlap: 1\n", "tfu.fold_overlap", "expected true or false");
}

// The L2 hit/miss model needs whole sets: size = sets x ways x line, and a line size that is a
// power of two. The error names the key that broke the rule.
TEST(ConfigValidation, L2CacheGeometry) {
  ExpectTinyError("l2:\n  size_bytes: 100000\n", "l2.size_bytes",
                  "with l2.cache on, l2.size_bytes (100000 B) must be a nonzero multiple of l2.line_bytes x l2.ways");
  ExpectTinyError("l2:\n  size_bytes: 0\n", "l2.size_bytes", "must be a nonzero multiple");
  ExpectTinyError("l2:\n  line_bytes: 96\n", "l2.line_bytes", "must be a power of two");
  ExpectTinyError("l2:\n  ways: 0\n", "l2.ways", "must be between 1 and 64");
  // Without the cache the size is only reported: any size, 0 included.
  EXPECT_EQ(parse_on_tiny("l2:\n  cache: false\n  size_bytes: 100000\n").l2_bytes, 100000u);
  const HardwareConfig c = parse_on_tiny("l2:\n  ways: 4\n  line_bytes: 128\n");
  EXPECT_TRUE(c.l2_cache);
  EXPECT_EQ(c.l2_ways, 4u);
  EXPECT_EQ(c.l2_line_bytes, 128u);
}

TEST(ConfigValidation, SizeStringsAreAccepted) {
  const HardwareConfig c = parse_on_tiny("core:\n  nram_bytes: 65536\n  wram_bytes: 1.5 MiB\n"
                                         "cluster:\n  sram_bytes: \"4GiB\"\n");
  EXPECT_EQ(c.nram_bytes, 64 * KiB);
  EXPECT_EQ(c.wram_bytes, 1536 * KiB);
  EXPECT_EQ(c.sram_bytes, 4 * GiB);  // exactly the on-chip address space: allowed
}

TEST(ConfigValidation, ZeroOrNegativeRates) {
  ExpectTinyError("dram:\n  bandwidth_gbps: 0\n", "dram.bandwidth_gbps", "must be between 0.001 and 1000000 GB/s");
  ExpectTinyError("dram:\n  bandwidth_gbps: 0\n", "dram.bandwidth_gbps", "got 0 GB/s");
  ExpectTinyError("dma:\n  move_bandwidth_gbps: -5\n", "dma.move_bandwidth_gbps", "got -5 GB/s");
  ExpectTinyError("clock:\n  core_mhz: 0\n", "clock.core_mhz", "must be between 1 and 100000 MHz");
  ExpectTinyError("host_link:\n  bandwidth_gbps: 0\n", "host_link.bandwidth_gbps", "must be between 0.001");
  ExpectTinyError("dram:\n  latency_ns: -1\n", "dram.latency_ns", "must be between 0 and 1000000000 ns");
  ExpectTinyError("dram:\n  channels: 0\n", "dram.channels", "must be between 1 and 1024 channels, got 0");
  // 0 GB/s MLU-Link means "no link" and is valid.
  EXPECT_DOUBLE_EQ(parse_on_tiny("mlu_link:\n  bandwidth_gbps: 0\n").mlu_link_bandwidth_gbps, 0.0);
}

TEST(ConfigValidation, OnChipMemoriesWithinAddressSpace) {
  for (const char* key : {"core.nram_bytes", "core.wram_bytes", "cluster.sram_bytes"}) {
    SCOPED_TRACE(key);
    ExpectConfigError([&] { load_config("tiny", {{key, "5GiB"}}); }, "override", key,
                      "must be between 1 B and 4 GiB (the on-chip address space is 32 bits), got 5 GiB");
    ExpectConfigError([&] { load_config("tiny", {{key, "4294967297"}}); }, "override", key, "between 1 B and 4 GiB");
    ExpectConfigError([&] { load_config("tiny", {{key, "0"}}); }, "override", key, "got 0 B");
  }
  ExpectTinyError("core:\n  nram_bytes: 5GiB\n", "core.nram_bytes", "4 GiB");
}

TEST(ConfigValidation, DramGeometry) {
  ExpectTinyError("dram:\n  interleave_bytes: 384\n", "dram.interleave_bytes", "must be a power of two, got 384 B");
  ExpectTinyError("dram:\n  interleave_bytes: 0\n", "dram.interleave_bytes", "power of two");
  // 64 MiB is not a multiple of 3 channels x 256 B; the key this file changed is blamed.
  ExpectTinyError("dram:\n  channels: 3\n", "dram.channels",
                  "dram.capacity_bytes (64 MiB) must be a multiple of dram.interleave_bytes x dram.channels = "
                  "256 B x 3 (line 3)");
  ExpectTinyError("dram:\n  capacity_bytes: 1048832\n", "dram.capacity_bytes",  // 1 MiB + 256 B
                  "dram.capacity_bytes (1048832 B) must be a multiple of dram.interleave_bytes x dram.channels = "
                  "256 B x 4");
  ExpectConfigError([] { load_config("tiny", {{"dram.interleave_bytes", "1GiB"}}); }, "override",
                    "dram.interleave_bytes", "must be a multiple");
  ExpectTinyError("dram:\n  capacity_bytes: 512KiB\n", "dram.capacity_bytes", "must be between 1 MiB and 1 TiB");
  ExpectTinyError("dram:\n  capacity_bytes: 512KiB\n", "dram.capacity_bytes", "got 512 KiB");
  EXPECT_EQ(parse_on_tiny("dram:\n  capacity_bytes: 1MiB\n").dram_bytes, 1 * MiB);
}

TEST(ConfigValidation, TfuArrays) {
  ExpectTinyError("tfu:\n  fp16:\n    cols: 0\n", "tfu.fp16.cols",
                  "tfu.fp16.rows = 8 but tfu.fp16.cols = 0: set both to 0 (dtype unsupported by the TFU) or both above 0");
  ExpectTinyError("tfu:\n  int8:\n    rows: 0\n", "tfu.int8.rows", "tfu.int8.rows = 0 but tfu.int8.cols = 16");
  ExpectTinyError("tfu:\n  fp32:\n    rows: 1\n    cols: 1\n", "tfu.fp32.rows", "1 x 1 is not a systolic array");
  ExpectTinyError("tfu:\n  dataflow: row_stationary\n", "tfu.dataflow",
                  "expected output_stationary or weight_stationary, got \"row_stationary\"");
  const HardwareConfig c = parse_on_tiny("tfu:\n  fp32:\n    rows: 0\n    cols: 0\n");
  EXPECT_FALSE(c.tfu_array(DType::kFloat32).supported());
  EXPECT_TRUE(c.tfu_array(DType::kFloat16).supported());
}

// tfu.intrinsic_overlap: default false; true needs fold_overlap (the key set last is blamed).
TEST(ConfigValidation, TfuIntrinsicOverlap) {
  EXPECT_FALSE(load_config("tiny").tfu_intrinsic_overlap);
  ExpectTinyError("tfu:\n  intrinsic_overlap: true\n", "tfu.intrinsic_overlap",
                  "tfu.intrinsic_overlap is true but tfu.fold_overlap is false");
  ExpectConfigError([] { load_config("mlu370-x4", {{"tfu.fold_overlap", "false"}}); }, "override",
                    "tfu.fold_overlap", "need fold_overlap: true");
  ExpectTinyError("tfu:\n  intrinsic_overlap: yes please\n", "tfu.intrinsic_overlap", "expected true or false");
  const HardwareConfig c = parse_on_tiny("tfu:\n  fold_overlap: true\n  intrinsic_overlap: true\n");
  EXPECT_TRUE(c.tfu_intrinsic_overlap);
}

// tfu.arrays: identical arrays per core, one key for every dtype; default 1 when no file sets it.
TEST(ConfigValidation, TfuArrayCount) {
  const HardwareConfig preset = load_config("tiny");  // no preset file before tpu-v3 sets the key
  EXPECT_EQ(preset.tfu_fp32.count, 1u);
  EXPECT_EQ(preset.tfu_fp16.count, 1u);
  EXPECT_EQ(preset.tfu_int8.count, 1u);
  const HardwareConfig two = parse_on_tiny("tfu:\n  arrays: 2\n");
  EXPECT_EQ(two.tfu_fp32.count, 2u);
  EXPECT_EQ(two.tfu_fp16.count, 2u);
  EXPECT_EQ(two.tfu_int8.count, 2u);
  EXPECT_EQ(two.tfu_fp16.macs_per_cycle(), 8u * 8u * 2u);
  EXPECT_EQ(two.tfu_fp32.rows, 4u);  // the shape is untouched
  EXPECT_EQ(load_config("tiny", {{"tfu.arrays", "4"}}).tfu_int8.count, 4u);
  // An unsupported dtype stays unsupported whatever the count.
  const HardwareConfig no_fp32 = parse_on_tiny("tfu:\n  arrays: 2\n  fp32:\n    rows: 0\n    cols: 0\n");
  EXPECT_FALSE(no_fp32.tfu_array(DType::kFloat32).supported());
  EXPECT_EQ(no_fp32.tfu_array(DType::kFloat32).macs_per_cycle(), 0u);
  ExpectTinyError("tfu:\n  arrays: 0\n", "tfu.arrays",
                  "must be between 1 and 64 arrays (real cores have 1 to 4 tensor arrays; 64 leaves room for "
                  "what-if studies), got 0 arrays (line 3)");
  ExpectTinyError("tfu:\n  arrays: 65\n", "tfu.arrays", "got 65 arrays");
  ExpectTinyError("tfu:\n  arrays: 1.5\n", "tfu.arrays", "expected an unsigned integer, got \"1.5\"");
  ExpectTinyError("tfu:\n  arrays: two\n", "tfu.arrays", "expected an unsigned integer");
  ExpectConfigError([] { load_config("tiny", {{"tfu.arrays", "-2"}}); }, "override", "tfu.arrays",
                    "must not be negative");
  ExpectConfigError([] { load_config("tiny", {{"tfu.array", "2"}}); }, "override", "tfu.array",
                    "did you mean \"tfu.arrays\"?");
}

// A key with a schema default (only tfu.arrays so far) may be left out of a complete config; the
// default comes in below every file, and the other keys stay required.
TEST(ConfigValidation, DefaultedKeysMayBeOmitted) {
  const std::string text = preset_without("tfu.arrays");  // mlu370-x4.yaml does not set it anyway
  EXPECT_EQ(parse_config(text, "edited.yaml").tfu_fp16.count, 1u);
  EXPECT_EQ(parse_config(text, "edited.yaml", {{"tfu.arrays", "3"}}).tfu_fp16.count, 3u);
  ExpectConfigError([] { parse_config(preset_without("tfu.dataflow"), "edited.yaml"); }, "edited.yaml",
                    "tfu.dataflow", "missing required key");
}

TEST(ConfigValidation, TopologyBounds) {
  ExpectTinyError("devices: 0\n", "devices", "must be between 1 and 16 chips");
  ExpectTinyError("devices: 17\n", "devices", "got 17 chips");
  EXPECT_EQ(parse_on_tiny("devices: 16\n").device_count, 16u);
  ExpectTinyError("topology:\n  clusters: 0\n", "topology.clusters", "must be between 1");
  ExpectTinyError("topology:\n  cores_per_cluster: 0\n", "topology.cores_per_cluster", "between 1 and 16");
  ExpectTinyError("topology:\n  cores_per_cluster: 17\n", "topology.cores_per_cluster", "between 1 and 16");
  EXPECT_EQ(parse_on_tiny("topology:\n  cores_per_cluster: 1\n").total_cores(), 2u);
}

TEST(ConfigValidation, OtherImpossibleValues) {
  ExpectTinyError("host_link:\n  pageable_bandwidth_gbps: 20\n", "host_link.pageable_bandwidth_gbps",
                  "host_link.pageable_bandwidth_gbps (20 GB/s) must not exceed host_link.bandwidth_gbps (16 GB/s)");
  ExpectConfigError([] { load_config("tiny", {{"host_link.bandwidth_gbps", "4"}}); }, "override",
                    "host_link.bandwidth_gbps", "must not exceed");
  ExpectTinyError("vfu:\n  width_bytes: 96\n", "vfu.width_bytes", "power of two");
  ExpectTinyError("vfu:\n  width_bytes: 2\n", "vfu.width_bytes", "must be between 4 B and 64 KiB");
  ExpectTinyError("dma:\n  burst_bytes: 48\n", "dma.burst_bytes", "power of two");
  ExpectTinyError("dma:\n  burst_bytes: 8GiB\n", "dma.burst_bytes", "must be between 1 B and 1 MiB, got 8 GiB");
  ExpectTinyError("scalar:\n  onchip_access_cycles: 0\n", "scalar.onchip_access_cycles",
                  "must be between 1 and 1000000 cycles");
  // Per-core IO-DMA above DRAM bandwidth is unusual but allowed.
  EXPECT_DOUBLE_EQ(parse_on_tiny("dma:\n  io_bandwidth_gbps: 100\n").io_dma_bandwidth_gbps, 100.0);
}

// ---------------------------------------------------------------- document-level errors

TEST(ConfigSyntax, YamlSyntaxErrorNamesFileAndLine) {
  ScratchDir dir;
  const auto file = dir.write("broken.yaml", "name: broken\ndram:\n  channels: [4\n  latency_ns: 3\n");
  try {
    load_config(file.string());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), file.string());
    EXPECT_THAT(e.what(), ::testing::StartsWith(file.string() + ": YAML syntax error at line "));
  }
  ExpectConfigError([] { parse_config("name: x\n  bad: : indent\n", "text.yaml"); }, "text.yaml", "",
                    "YAML syntax error at line 2");
}

TEST(ConfigSyntax, DocumentShape) {
  ExpectConfigError([] { parse_config("", "e.yaml"); }, "e.yaml", "", "empty document");
  ExpectConfigError([] { parse_config("- a\n- b\n", "l.yaml"); }, "l.yaml", "", "top level must be a map");
  ExpectConfigError([] { parse_config("name: a\n---\nname: b\n", "m.yaml"); }, "m.yaml", "",
                    "more than one YAML document");
  ExpectTinyError("dram:\n  channels: 4\n  channels: 8\n", "dram.channels", "duplicate key (line 4)");
  ExpectTinyError("dram.channels: 4\n", "dram.channels", "write nested maps");
}

}  // namespace
// Every number that feeds simulated time is bounded so that 64-bit picoseconds cannot overflow
// (schema.cpp; configs/README.md). Regressions of two accepted-but-broken values: 1e300 ns of DRAM
// latency wrapped the picosecond conversion (24 us reported), a 1e-30 MHz clock gave 0-cycle
// kernels lasting microseconds.
TEST(ConfigValidation, TimeQuantitiesAreBounded) {
  ExpectConfigError([] { load_config("tiny", {{"dram.latency_ns", "1e300"}}); }, "override", "dram.latency_ns",
                    "must be between 0 and 1000000000 ns (at most 1 s, so a day of simulated time holds at least "
                    "86400 of them), got 1e+300 ns");
  ExpectConfigError([] { load_config("tiny", {{"dram.latency_ns", "1e15"}}); }, "override", "dram.latency_ns",
                    "got 1e+15 ns");
  ExpectConfigError([] { load_config("tiny", {{"clock.core_mhz", "1e-30"}}); }, "override", "clock.core_mhz",
                    "must be between 1 and 100000 MHz (1 MHz to 100 GHz keeps a cycle between 10 ps and 1 us of "
                    "64-bit picosecond time), got 1e-30 MHz");
  ExpectConfigError([] { load_config("tiny", {{"clock.mem_mhz", "1e9"}}); }, "override", "clock.mem_mhz",
                    "between 1 and 100000 MHz");
  ExpectConfigError([] { load_config("tiny", {{"dram.capacity_bytes", "2TiB"}}); }, "override",
                    "dram.capacity_bytes", "must be between 1 MiB and 1 TiB");
  ExpectConfigError([] { load_config("tiny", {{"host.api_call_ns", "1e10"}}); }, "override", "host.api_call_ns",
                    "between 0 and 1000000000 ns");
  ExpectConfigError([] { load_config("tiny", {{"dma.io_latency_cycles", "1000000001"}}); }, "override",
                    "dma.io_latency_cycles", "between 0 and 1000000000 cycles");
  ExpectConfigError([] { load_config("tiny", {{"tfu.fp16.rows", "4097"}}); }, "override", "tfu.fp16.rows",
                    "between 0 and 4096 PEs");
  ExpectConfigError([] { load_config("tiny", {{"mlu_link.bandwidth_gbps", "0.0001"}}); }, "override",
                    "mlu_link.bandwidth_gbps", "must be 0 or between 0.001 and 1000000 GB/s");
  // The extremes are accepted.
  const HardwareConfig slow = load_config("tiny", {{"clock.core_mhz", "1"}, {"dram.bandwidth_gbps", "0.001"},
                                                   {"dram.latency_ns", "1e9"}, {"dram.capacity_bytes", "1TiB"}});
  EXPECT_DOUBLE_EQ(slow.core_clock_mhz, 1.0);
  EXPECT_EQ(slow.dram_bytes, 1024 * GiB);
  EXPECT_DOUBLE_EQ(load_config("tiny", {{"clock.core_mhz", "100000"}}).core_clock_mhz, 100000.0);
}

// Found by config_loader_fuzz: a NUL in a key cut the message short; a name too long for the file
// system threw std::filesystem_error instead of ConfigError.
TEST(ConfigErrors, ControlBytesAndOverlongNamesGiveWholeMessages) {
  try {
    load_config("tiny", {{std::string("dram.ba\0x", 9), "1"}});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("override: dram.ba\\x00x: unknown key"), std::string::npos) << e.what();
  }
  const std::string long_name(300, 'x');
  ExpectConfigError([&] { load_config(long_name); }, long_name, "", "unknown preset");
  ExpectConfigError([&] { load_config("/tmp/" + long_name + ".yaml"); }, "/tmp/" + long_name + ".yaml", "",
                    "no such config file");
}

}  // namespace mlusim::sim
