// Inputs the config loader fuzzer (tests/fuzz/config_loader_fuzz.cpp) found, kept as tests: each
// used to hang the loader, overflow its stack or let another exception escape; now each is a
// ConfigError. A regression would hang again, so every
// parse runs on its own thread and the test program aborts if one takes more than 30 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "config/test_util.h"
#include "mlusim/sim/config.h"

namespace mlusim::sim {
namespace {

using testing::ExpectConfigError;

// parse_config(text, origin) with a deadline: aborts the whole program if it does not return.
void parse_with_deadline(const std::string& text, const std::string& origin) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      parse_config(text, origin);
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
      std::fprintf(stderr, "parse_config of %s did not return within 30 s: the loader hangs again\n", origin.c_str());
      std::abort();
    }
  }
  worker.join();
  if (error) std::rethrow_exception(error);
}

// A flow indicator at document level that yaml-cpp's parser cannot consume: YAML::LoadAll (which
// the loader used) returned empty documents at that position forever.
TEST(ConfigFuzzRegressions, StrayFlowIndicatorIsASyntaxError) {
  ExpectConfigError([] { parse_with_deadline(",", "comma.yaml"); }, "comma.yaml", "",
                    "YAML syntax error at line 1, column 1: unexpected ','");
  ExpectConfigError([] { parse_with_deadline("[a],", "flow.yaml"); }, "flow.yaml", "",
                    "YAML syntax error at line 1, column 4: unexpected ','");
  ExpectConfigError([] { parse_with_deadline("- x\n,", "list.yaml"); }, "list.yaml", "",
                    "YAML syntax error at line 2, column 1: unexpected ','");
  ExpectConfigError([] { parse_with_deadline("extends: tiny\n...\n,\n", "ended.yaml"); }, "ended.yaml", "",
                    "YAML syntax error at line 3, column 1: unexpected ','");
  // A real second document is still reported as such.
  ExpectConfigError([] { parse_with_deadline("extends: tiny\n---\nname: b\n", "two.yaml"); }, "two.yaml", "",
                    "more than one YAML document (line 2)");
}

// Maps that alias one another eight deep, eight times each: 582 bytes that flattened into 8^8
// (16.7 million) keys, minutes of work and gigabytes of memory.
TEST(ConfigFuzzRegressions, AliasExpansionIsBounded) {
  std::string text = "extends: tiny\nl0: &l0 {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1}\n";
  for (int i = 1; i < 8; ++i) {
    const std::string p = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {a: " + p + ", b: " + p + ", c: " + p + ", d: " + p +
            ", e: " + p + ", f: " + p + ", g: " + p + ", h: " + p + "}\n";
  }
  ExpectConfigError([&] { parse_with_deadline(text, "laughs.yaml"); }, "laughs.yaml", "",
                    "more than 10000 keys and sections");
}

// A map that contains itself through an alias (the fuzzer's mutation of the test above): flattening
// recursed until the stack overflowed. Plain deep nesting is bounded too.
TEST(ConfigFuzzRegressions, SelfContainingMapsAndDeepNesting) {
  ExpectConfigError([] { parse_with_deadline("extends: tiny\nx: &x\n  y: *x\n", "self.yaml"); }, "self.yaml", "x.y",
                    "the map contains itself (through a YAML alias) (line 3)");
  ExpectConfigError([] { parse_with_deadline("extends: tiny\nl1: &l1 {a: *l1, b: 1}\n", "flow_self.yaml"); },
                    "flow_self.yaml", "l1.a", "the map contains itself");
  std::string deep = "extends: tiny\n", indent;
  std::string key;
  for (int i = 0; i < 40; ++i, indent += "  ") {
    deep += indent + "k:\n";
    if (i <= 32) key += (key.empty() ? "k" : ".k");
  }
  deep += indent + "v: 1\n";
  ExpectConfigError([&] { parse_with_deadline(deep, "deep.yaml"); }, "deep.yaml", key, "maps nested more than 32 deep");
}

// `extends:` naming a file whose name is too long for the file system: std::filesystem::
// is_regular_file threw filesystem_error (ENAMETOOLONG), which escaped parse_config.
TEST(ConfigFuzzRegressions, ExtendsNamesTooLongForTheFileSystem) {
  const std::string name(300, 'x');
  ExpectConfigError([&] { parse_with_deadline("extends: " + name + "\n", "long.yaml"); }, "long.yaml", "extends",
                    "unknown preset \"" + name + "\"");
  ExpectConfigError([&] { parse_with_deadline("extends: dir/" + name + ".yaml\n", "long_path.yaml"); }, "long_path.yaml",
                    "extends", "no such file: ");
}

// Aliases that do not multiply still work: one TFU array shape for two dtypes.
TEST(ConfigFuzzRegressions, PlainAliasesStillWork) {
  const HardwareConfig c =
      parse_config("extends: tiny\ntfu:\n  fp16: &array {rows: 8, cols: 16}\n  int8: *array\n", "alias.yaml");
  EXPECT_EQ(c.tfu_int8.rows, 8u);
  EXPECT_EQ(c.tfu_int8.cols, 16u);
  EXPECT_EQ(c.tfu_fp16.cols, 16u);
}

}  // namespace
}  // namespace mlusim::sim
