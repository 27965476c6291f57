#include "memory/l2_cache.h"

#include <algorithm>
#include <cassert>

#include "mlusim/sim/config.h"

namespace mlusim::sim {

L2Cache::L2Cache(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways, bool set_hash)
    : line_bytes_(line_bytes),
      ways_(ways),
      sets_(size_bytes == 0 ? 0 : size_bytes / (std::uint64_t{line_bytes} * ways)),
      set_hash_(set_hash) {
  assert(size_bytes == 0 || sets_ * line_bytes_ * ways_ == size_bytes);
  tags_.assign(sets_ * ways_, 0);
  last_use_.assign(sets_ * ways_, 0);
}

std::uint64_t L2Cache::set_base(std::uint64_t line) const {
  return (set_hash_ ? digit_sum_rotation(line, sets_) : line % sets_) * ways_;
}

std::int64_t L2Cache::find(std::uint64_t line) const {
  const std::uint64_t base = set_base(line);
  for (std::uint32_t w = 0; w < ways_; ++w)
    if (tags_[base + w] == line + 1) return static_cast<std::int64_t>(base + w);
  return -1;
}

bool L2Cache::touch(std::uint64_t line) {
  const std::uint64_t base = set_base(line);
  std::uint32_t victim = 0;
  for (std::uint32_t w = 0; w < ways_; ++w) {
    if (tags_[base + w] == line + 1) {
      last_use_[base + w] = ++clock_;
      return true;
    }
    // Empty ways (stamp 0) are taken first; then the least recently used.
    if (last_use_[base + w] < last_use_[base + victim]) victim = w;
  }
  tags_[base + victim] = line + 1;
  last_use_[base + victim] = ++clock_;
  return false;
}

L2Cache::ReadResult L2Cache::read(std::uint64_t addr, std::uint64_t bytes,
                                  const std::function<void(std::uint64_t, std::uint64_t)>& miss) {
  ReadResult r;
  if (bytes == 0) return r;
  if (!enabled()) {
    miss(addr, bytes);
    r.fill_bytes = bytes;
    return r;
  }
  const std::uint64_t end = addr + bytes;
  std::uint64_t run_start = 0, run_bytes = 0;  // the current run of missing whole lines
  for (std::uint64_t line = addr / line_bytes_; line * line_bytes_ < end; ++line) {
    if (touch(line)) {
      r.hit_bytes += std::min(end, (line + 1) * line_bytes_) - std::max(addr, line * line_bytes_);
      if (run_bytes > 0) miss(run_start, run_bytes);
      run_bytes = 0;
    } else {
      if (run_bytes == 0) run_start = line * line_bytes_;
      run_bytes += line_bytes_;
      r.fill_bytes += line_bytes_;
    }
  }
  if (run_bytes > 0) miss(run_start, run_bytes);
  return r;
}

void L2Cache::write(std::uint64_t addr, std::uint64_t bytes) {
  if (!enabled() || bytes == 0) return;
  for (std::uint64_t line = addr / line_bytes_; line * line_bytes_ < addr + bytes; ++line) touch(line);
}

void L2Cache::invalidate(std::uint64_t addr, std::uint64_t bytes) {
  if (!enabled() || bytes == 0) return;
  const std::uint64_t first = addr / line_bytes_, last = (addr + bytes - 1) / line_bytes_;
  if (last - first >= tags_.size()) {  // a range larger than the cache: sweep the tag store once
    for (std::size_t slot = 0; slot < tags_.size(); ++slot)
      if (tags_[slot] != 0 && tags_[slot] - 1 >= first && tags_[slot] - 1 <= last) tags_[slot] = last_use_[slot] = 0;
    return;
  }
  for (std::uint64_t line = first; line <= last; ++line)
    if (const std::int64_t slot = find(line); slot >= 0) tags_[slot] = last_use_[slot] = 0;
}

void L2Cache::clear() {
  std::fill(tags_.begin(), tags_.end(), 0);
  std::fill(last_use_.begin(), last_use_.end(), 0);
}

}  // namespace mlusim::sim
