// The activity records of mlusimActivityEnable/Read: one per completed kernel, copy and memset and
// per blocking host call, while recording is on. Guarded by Runtime::mu.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>

#include "mlusim_ext.h"

namespace mlusim::driver {

class ActivityLog {
 public:
  // At most this many records are kept (~1.2 GB would be 4 Mi x 296 bytes; a resnet50 training
  // step is ~10 k); later ones are counted in dropped().
  static constexpr std::size_t kMaxRecords = std::size_t{1} << 22;

  void enable(bool on) {
    enabled_ = on;
    if (on) {
      records_.clear();
      dropped_ = 0;
    }
  }
  bool enabled() const { return enabled_; }
  std::uint64_t dropped() const { return dropped_; }

  void record(const mlusimActivity_t& a) {
    if (!enabled_) return;
    if (records_.size() >= kMaxRecords) {
      ++dropped_;
      return;
    }
    records_.push_back(a);
  }

  std::size_t drain(mlusimActivity_t* out, std::size_t capacity) {
    std::size_t n = 0;
    while (n < capacity && !records_.empty()) {
      out[n++] = records_.front();
      records_.pop_front();
    }
    return n;
  }

  // Copies `text` into a fixed record field, truncated and NUL-terminated.
  template <std::size_t N>
  static void set_text(char (&field)[N], const std::string& text) {
    const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
    std::memcpy(field, text.data(), n);
    field[n] = '\0';
  }

 private:
  bool enabled_ = false;
  std::deque<mlusimActivity_t> records_;
  std::uint64_t dropped_ = 0;
};

}  // namespace mlusim::driver
