// L2: the chip's last-level cache between the clusters and DRAM, as a tag store (no data: GDRAM's
// backing bytes are always current, so the cache only decides which bytes a DMA takes from DRAM).
//
// Scope. A set-associative cache of `l2.size_bytes` in lines of `l2.line_bytes`, `l2.ways` ways,
// least-recently-used replacement; line i of the address space maps to set (i mod sets), or with
// `l2.set_hash` to set digit_sum_rotation(i, sets) (config.h): real caches hash address bits into
// the set index, else a copy whose runs are a power-of-two stride apart (the filter rows of a
// weight block, 1 KiB apart) uses a fraction of the sets and evicts what it just brought in.
// What a kernel's DMA does with it (core/dma_path.cpp):
//   * a GDRAM read looks every line it covers up: hit bytes come from the L2 (the NoC/L2 stage
//     only); a missing line is fetched whole from the DRAM channels (a read that covers part of
//     a line over-fetches the rest); both kinds of line become most recently used (a miss
//     allocates the line, evicting its set's least recently used one);
//   * a GDRAM write allocates its lines too (write-allocate) and still carries all its bytes to
//     DRAM (write-through: write-back traffic is not deferred to eviction time), so a kernel that
//     reads what the kernel before it wrote hits while it is resident.
//   * host-link copies and memsets bypass the L2 and invalidate the lines they write.
// Approximations: a line is resident from the moment the DMA that brings it is issued, so two
// cores reading one line at about the same time move its bytes out of DRAM once (what a real L2's
// miss merging does) and the second read is timed as a hit; no bank conflicts, no sectored lines
// (a line is fetched all or nothing), no coherence traffic with peer chips (a peer copy that lands
// here does not invalidate).
//
// Invariants: sets x ways x line_bytes == size_bytes (config validation); a line is in at most
// one way of its set. Deterministic: the state depends only on the order of accesses.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace mlusim::sim {

class L2Cache {
 public:
  // size_bytes == 0: no cache (every read misses, nothing is stored). set_hash: the hashed set
  // index (see above).
  L2Cache(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways, bool set_hash);

  bool enabled() const { return sets_ > 0; }

  struct ReadResult {
    std::uint64_t hit_bytes = 0;   // bytes of the range in resident lines
    std::uint64_t fill_bytes = 0;  // whole missing lines fetched from DRAM (>= the range's missing bytes)
  };
  // Looks up [addr, addr + bytes) for a read, allocating the lines that miss. Calls
  // miss(run_addr, run_bytes) for every maximal run of missing whole lines, in address order.
  // Without a cache: one call with the range itself (no lines), fill_bytes = bytes.
  ReadResult read(std::uint64_t addr, std::uint64_t bytes, const std::function<void(std::uint64_t, std::uint64_t)>& miss);
  // Allocates the lines of [addr, addr + bytes) (a kernel's DMA write).
  void write(std::uint64_t addr, std::uint64_t bytes);
  // Drops the lines of [addr, addr + bytes) (written behind the cache's back: host copies).
  void invalidate(std::uint64_t addr, std::uint64_t bytes);
  // Drops every line.
  void clear();

 private:
  // The first slot (index into tags_) of line's set.
  std::uint64_t set_base(std::uint64_t line) const;
  // The slot (index into tags_) holding line `line`, or -1 when it is not resident.
  std::int64_t find(std::uint64_t line) const;
  // Makes `line` resident and most recently used; returns true when it already was.
  bool touch(std::uint64_t line);

  std::uint64_t line_bytes_;
  std::uint32_t ways_;
  std::uint64_t sets_;
  bool set_hash_;
  std::uint64_t clock_ = 0;                // LRU stamp source
  std::vector<std::uint64_t> tags_;        // [set x ways]: line number + 1 (0 = empty)
  std::vector<std::uint64_t> last_use_;    // [set x ways]: clock_ at the last touch
};

}  // namespace mlusim::sim
