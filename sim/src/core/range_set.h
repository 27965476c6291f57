// The address ranges a core's in-flight async copies read or write, for hazard checks: many
// inserts between two sync_io (a strided copy adds one range per segment), queries before every
// intrinsic, cleared as a whole at sync_io. Inserts append; the first query after them sorts and
// merges once (O(n log n)), then each query is a binary search. An interval map with per-copy
// sets (the first implementation) cost a third of the host time of whole-model runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace mlusim::sim {

class RangeSet {
 public:
  // [lo, hi); empty ranges are ignored.
  void add(std::uint64_t lo, std::uint64_t hi) {
    if (lo >= hi) return;
    ranges_.emplace_back(lo, hi);
    normalized_ = false;
  }
  // Whether [lo, hi) shares an address with any added range.
  bool overlaps(std::uint64_t lo, std::uint64_t hi) {
    if (lo >= hi || ranges_.empty()) return false;
    normalize();
    // Disjoint and sorted: ends are increasing too. The first range ending after lo is the only
    // candidate that can start before hi.
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                               [](std::uint64_t v, const std::pair<std::uint64_t, std::uint64_t>& r) { return v < r.second; });
    return it != ranges_.end() && it->first < hi;
  }
  void clear() {
    ranges_.clear();
    normalized_ = true;
  }
  bool empty() const { return ranges_.empty(); }

 private:
  void normalize() {
    if (normalized_) return;
    std::sort(ranges_.begin(), ranges_.end());
    std::size_t out = 0;
    for (std::size_t i = 1; i < ranges_.size(); ++i) {
      if (ranges_[i].first <= ranges_[out].second) {
        ranges_[out].second = std::max(ranges_[out].second, ranges_[i].second);
      } else {
        ranges_[++out] = ranges_[i];
      }
    }
    ranges_.resize(out + 1);
    normalized_ = true;
  }

  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
  bool normalized_ = true;
};

}  // namespace mlusim::sim
