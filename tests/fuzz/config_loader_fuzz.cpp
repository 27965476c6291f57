// Fuzz target: the hardware config loader, mlusim::sim::parse_config (sim/include/mlusim/sim/config.h)
// with `--set key=value` overrides (parse_config_override).
//
// Input: YAML text, optionally followed by a line "#--set" and then one override per line:
//
//   extends: tiny
//   dram:
//     channels: 8
//   #--set
//   dram.bandwidth_gbps=200
//
// Each override line goes through parse_config_override (a malformed line is a ConfigError and is
// dropped); the YAML and the good overrides go to parse_config("...", "fuzz.yaml", overrides).
// `extends:` is resolved against $MLUSIM_CONFIG_DIR, set to the source tree's configs/ unless the
// caller set it, so the presets can be extended (and cycles, missing files and so on reached).
//
// Expected outcomes: a HardwareConfig, or mlusim::sim::ConfigError whose what() is
// "<file>: <key>: <reason>" ("<file>: <reason>" when the key is empty).
// Findings: any other exception, a crash, a hang (libFuzzer -timeout), a sanitizer report, a
// ConfigError whose what() does not start with its file() and key() (control bytes as \xNN) or
// holds a raw control byte, or a config that passed
// validation but breaks a rule the loader promises to check (checked below: positive counts and
// rates, DRAM capacity a whole number of interleave stripes, TFU rows and cols both zero or both
// above zero, pageable host bandwidth <= pinned).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "mlusim/sim/config.h"

namespace {

using mlusim::sim::ConfigError;
using mlusim::sim::ConfigOverride;
using mlusim::sim::HardwareConfig;
using mlusim::sim::TfuArray;

constexpr const char kSeparator[] = "\n#--set\n";

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "config_loader_fuzz: FINDING: %s\n", what.c_str());
  std::abort();
}

// ConfigError's contract: what() is "<file>: <key>: <reason>" with control bytes other than
// newlines written as \xNN (a NUL would cut it short), so it is one readable string.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

void check_error(const ConfigError& e) {
  const std::string what = e.what();
  const std::string prefix =
      e.key().empty() ? printable(e.file()) + ": " : printable(e.file()) + ": " + printable(e.key()) + ": ";
  if (what.compare(0, prefix.size(), prefix) != 0)
    finding("ConfigError's what() '" + what + "' does not start with '" + prefix + "'");
  if (what.size() == prefix.size()) finding("ConfigError without a reason: '" + what + "'");
  for (const char c : what)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f)
      finding("ConfigError's what() holds a control byte: '" + printable(what) + "'");
}

void check_config(const HardwareConfig& c) {
  if (c.name.empty()) finding("config without a name");
  if (c.device_count < 1 || c.device_count > 16) finding("devices out of range: " + std::to_string(c.device_count));
  if (c.clusters == 0 || c.cores_per_cluster == 0) finding("no cores");
  if (c.dram_channels == 0 || c.dram_interleave_bytes == 0 ||
      c.dram_bytes % (c.dram_interleave_bytes * c.dram_channels) != 0)
    finding("dram.capacity_bytes " + std::to_string(c.dram_bytes) + " is not a multiple of " +
            std::to_string(c.dram_interleave_bytes) + " x " + std::to_string(c.dram_channels));
  for (const double rate : {c.core_clock_mhz, c.mem_clock_mhz, c.sram_bandwidth_gbps, c.dram_bandwidth_gbps,
                            c.noc_bandwidth_gbps, c.io_dma_bandwidth_gbps, c.move_dma_bandwidth_gbps,
                            c.memcore_dma_bandwidth_gbps, c.host_link_bandwidth_gbps, c.host_link_pageable_gbps})
    if (!(rate > 0) || !std::isfinite(rate)) finding("a clock or bandwidth is not a positive finite number");
  for (const double v : {c.dram_latency_ns, c.host_link_latency_ns, c.mlu_link_bandwidth_gbps, c.mlu_link_latency_ns,
                         c.launch_overhead_ns, c.api_call_ns})
    if (!(v >= 0) || !std::isfinite(v)) finding("a latency or cost is negative or not finite");
  if (c.host_link_pageable_gbps > c.host_link_bandwidth_gbps) finding("pageable host bandwidth above pinned");
  for (const TfuArray& a : {c.tfu_fp32, c.tfu_fp16, c.tfu_int8})
    if ((a.rows == 0) != (a.cols == 0) || (a.rows == 1 && a.cols == 1)) finding("TFU array rows/cols inconsistent");
  for (const TfuArray& a : {c.tfu_fp32, c.tfu_fp16, c.tfu_int8})
    if (a.count < 1 || a.count > 64 || a.count != c.tfu_fp32.count)
      finding("tfu.arrays outside 1..64 or not the same for every dtype");
  if (c.vfu_width_bytes < 4 || (c.vfu_width_bytes & (c.vfu_width_bytes - 1)) != 0) finding("vfu.width_bytes");
  if (c.dma_burst_bytes == 0 || (c.dma_burst_bytes & (c.dma_burst_bytes - 1)) != 0) finding("dma.burst_bytes");
  if (c.source_file != "fuzz.yaml") finding("source_file is '" + c.source_file + "', not the origin");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("MLUSIM_CONFIG_DIR", MLUSIM_FUZZ_CONFIG_DIR, /*overwrite=*/0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string yaml = input;
  std::vector<ConfigOverride> overrides;
  if (const std::size_t at = input.find(kSeparator); at != std::string::npos) {
    yaml = input.substr(0, at + 1);
    std::size_t begin = at + sizeof kSeparator - 1;
    while (begin <= input.size()) {
      std::size_t end = input.find('\n', begin);
      if (end == std::string::npos) end = input.size();
      const std::string line = input.substr(begin, end - begin);
      if (!line.empty()) {
        try {
          overrides.push_back(mlusim::sim::parse_config_override(line));
        } catch (const ConfigError& e) {
          check_error(e);
          if (e.file() != "override") finding("a bad override names file '" + e.file() + "', not \"override\"");
        }
      }
      begin = end + 1;
    }
  }
  try {
    check_config(mlusim::sim::parse_config(yaml, "fuzz.yaml", overrides));
  } catch (const ConfigError& e) {
    check_error(e);
  }
  // Anything else propagates: libFuzzer reports an uncaught exception as a crash (abort).
  return 0;
}
