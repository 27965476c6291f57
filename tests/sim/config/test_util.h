// Shared helpers of the config tests: expecting a ConfigError and writing scratch YAML files.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "mlusim/sim/config.h"

namespace mlusim::sim::testing {

// Runs `fn` and checks it throws ConfigError for `file` (exact) and `key` (exact), with a reason
// containing `reason_part`, and that what() is "<file>: <key>: <reason>".
inline void ExpectConfigError(const std::function<void()>& fn, const std::string& file, const std::string& key,
                              const std::string& reason_part) {
  try {
    fn();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.key(), key) << e.what();
    const std::string prefix = key.empty() ? file + ": " : file + ": " + key + ": ";
    EXPECT_THAT(e.what(), ::testing::StartsWith(prefix));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(reason_part));
    return;
  }
  ADD_FAILURE() << "expected ConfigError for " << file << ": " << key << ": ..." << reason_part;
}

// A fresh directory under the system temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mlusim_config_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes `text` to <dir>/<name> (creating sub-folders) and returns the path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Absolute path of a shipped preset.
inline std::string preset_path(const std::string& name) { return (config_dir() / (name + ".yaml")).string(); }

}  // namespace mlusim::sim::testing
