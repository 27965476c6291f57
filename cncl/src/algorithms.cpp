#include "algorithms.h"

#include <algorithm>
#include <cmath>

#include "dtypes.h"

namespace mlusim::cncl {

namespace {

struct Span {
  std::size_t begin = 0, size = 0;
};
Span chunk(std::size_t count, int parts, int k) {
  const auto n = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(k);
  const std::size_t b = i * count / n, e = (i + 1) * count / n;
  return {b, e - b};
}
int mod(int a, int n) { return ((a % n) + n) % n; }
std::size_t max_chunk(std::size_t count, int parts) { return (count + static_cast<std::size_t>(parts) - 1) / static_cast<std::size_t>(parts); }
int log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

// Ring reduce-scatter on work buffers `w` (byte addresses of each rank's n chunks of `count`
// elements), each chunk cut into `slices` pieces that pipeline: rank r's send lane forwards piece
// j of step s as soon as its lane 0 has reduced piece j of step s-1, while lane 0 reduces the
// next piece. Piece (s, j) is item i = s * slices + j; it lands in the receiver's scratch slot
// i % (2 * slices) (`slots` + slot * slot_bytes), free again once the receiver reduced item
// i - 2 * slices. `ready[r]`: the step after which rank r's W holds its input. Returns per rank
// the reduction steps, by item.
std::vector<std::vector<std::size_t>> ring_reduce_scatter(Plan& p, std::size_t count, const std::vector<std::uint64_t>& w,
                                                          const std::vector<std::uint64_t>& slots, std::size_t slot_bytes,
                                                          std::size_t slices, const std::vector<std::size_t>& ready) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes(), nslots = 2 * slices;
  std::vector<std::vector<std::size_t>> reduced(static_cast<std::size_t>(n));  // [rank][item]
  for (int s = 0; s + 1 < n; ++s) {
    for (std::size_t j = 0; j < slices; ++j) {
      const std::size_t item = static_cast<std::size_t>(s) * slices + j;
      std::vector<std::size_t> copies(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        const int to = mod(r + 1, n);
        const Span c = chunk(count, n, mod(r - s - 1, n));
        const Span piece = chunk(c.size, static_cast<int>(slices), static_cast<int>(j));
        const std::uint64_t slot = slots[static_cast<std::size_t>(to)] + (item % nslots) * slot_bytes;
        std::vector<std::size_t> deps;
        // The piece was reduced by this rank at step s-1 (or is its input at step 0).
        deps.push_back(s == 0 ? ready[static_cast<std::size_t>(r)] : reduced[static_cast<std::size_t>(r)][item - slices]);
        if (item >= nslots) deps.push_back(reduced[static_cast<std::size_t>(to)][item - nslots]);  // slot free
        copies[static_cast<std::size_t>(r)] =
            p.copy(r, to, slot, w[static_cast<std::size_t>(r)] + (c.begin + piece.begin) * e, piece.size, deps);
      }
      for (int r = 0; r < n; ++r) {
        const int to = mod(r + 1, n);
        const Span c = chunk(count, n, mod(r - s - 1, n));
        const Span piece = chunk(c.size, static_cast<int>(slices), static_cast<int>(j));
        const std::uint64_t slot = slots[static_cast<std::size_t>(to)] + (item % nslots) * slot_bytes;
        reduced[static_cast<std::size_t>(to)].push_back(p.reduce(to, w[static_cast<std::size_t>(to)] + (c.begin + piece.begin) * e,
                                                                 slot, piece.size, {copies[static_cast<std::size_t>(r)]}));
      }
    }
  }
  return reduced;
}

// Ring all-gather of chunk r from every rank r into every rank's `w`. `own[r]`: the step after
// which rank r's chunk r is final. A rank's first send into r+1 waits for r+1's earlier work on
// both lanes (`busy[r+1]` steps), so no chunk r+1 still reads or reduces is overwritten.
void ring_all_gather(Plan& p, std::size_t count, const std::vector<std::uint64_t>& w, const std::vector<std::size_t>& own,
                     const std::vector<std::vector<std::size_t>>& busy) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes();
  std::vector<std::size_t> prev(static_cast<std::size_t>(n));  // copy of the previous step, by sender
  for (int s = 0; s + 1 < n; ++s) {
    std::vector<std::size_t> now(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const int to = mod(r + 1, n);
      const Span c = chunk(count, n, mod(r - s, n));
      std::vector<std::size_t> deps = busy[static_cast<std::size_t>(to)];
      deps.push_back(s == 0 ? own[static_cast<std::size_t>(r)] : prev[static_cast<std::size_t>(mod(r - 1, n))]);
      const std::uint64_t off = c.begin * e;
      now[static_cast<std::size_t>(r)] =
          p.copy(r, to, w[static_cast<std::size_t>(to)] + off, w[static_cast<std::size_t>(r)] + off, c.size, deps);
    }
    prev = now;
  }
}

// Pieces per ring chunk: enough that a reduction overlaps the next piece's copy, each piece at
// least kMinPieceBytes so per-kernel costs stay small, at most kMaxPieces.
constexpr std::size_t kMinPieceBytes = 64 * 1024, kMaxPieces = 8;
std::size_t ring_slices(std::size_t chunk_bytes) {
  return std::clamp<std::size_t>(chunk_bytes / kMinPieceBytes, 1, kMaxPieces);
}

std::vector<std::size_t> lane0_tails(const Plan& p) {
  std::vector<std::size_t> t;
  for (int r = 0; r < p.ranks(); ++r) t.push_back(p.last_on(r));
  return t;
}

void all_reduce_ring(Plan& p, const Collective& c, const std::vector<std::uint64_t>& scratch) {
  const int n = p.ranks();
  std::vector<std::uint64_t> w(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const RankBuffers& b = c.buffers[static_cast<std::size_t>(r)];
    w[static_cast<std::size_t>(r)] = b.recv;
    if (b.send != b.recv) p.copy(r, r, b.recv, b.send, c.count);
  }
  const std::size_t chunk_bytes = max_chunk(c.count, n) * p.elem_bytes();
  const std::size_t slices = ring_slices(chunk_bytes);
  const std::size_t slot_bytes = (max_chunk(c.count, n) + slices - 1) / slices * p.elem_bytes();
  ring_reduce_scatter(p, c.count, w, scratch, slot_bytes, slices, lane0_tails(p));
  std::vector<std::vector<std::size_t>> busy;
  for (int r = 0; r < n; ++r) busy.push_back({p.last_on(r), p.last_sent(r)});
  ring_all_gather(p, c.count, w, lane0_tails(p), busy);
  p.algorithm = "ring";
}

void all_reduce_tree(Plan& p, const Collective& c, const std::vector<std::uint64_t>& scratch) {
  const int n = p.ranks();
  const std::size_t bytes = c.count * p.elem_bytes();
  for (int r = 0; r < n; ++r) {
    const RankBuffers& b = c.buffers[static_cast<std::size_t>(r)];
    if (b.send != b.recv) p.copy(r, r, b.recv, b.send, c.count);
  }
  std::vector<std::size_t> up(static_cast<std::size_t>(n));
  for (int r = n - 1; r >= 1; --r) {  // leaves first: a rank sends after its children's reductions
    const int parent = (r - 1) / 2;
    const std::uint64_t slot = scratch[static_cast<std::size_t>(parent)] + static_cast<std::uint64_t>((r - 1) % 2) * bytes;
    // After this rank's init copy and its children's reductions (lane 0 so far).
    const std::size_t cp = p.copy(r, parent, slot, c.buffers[static_cast<std::size_t>(r)].recv, c.count, {p.last_on(r)});
    up[static_cast<std::size_t>(r)] = cp;
    p.reduce(parent, c.buffers[static_cast<std::size_t>(parent)].recv, slot, c.count, {cp});
  }
  std::vector<std::size_t> down(static_cast<std::size_t>(n));
  for (int r = 1; r < n; ++r) {
    const int parent = (r - 1) / 2;
    std::vector<std::size_t> deps{up[static_cast<std::size_t>(r)]};  // r has sent its buffer up
    // The parent's result: its last reduction (the root) or the copy that brought it down.
    deps.push_back(parent > 0 ? down[static_cast<std::size_t>(parent)] : p.last_on(0));
    down[static_cast<std::size_t>(r)] = p.copy(parent, r, c.buffers[static_cast<std::size_t>(r)].recv,
                                               c.buffers[static_cast<std::size_t>(parent)].recv, c.count, deps);
  }
  p.algorithm = "tree";
}

void broadcast_chain(Plan& p, const Collective& c) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes();
  const RankBuffers& rb = c.buffers[static_cast<std::size_t>(c.root)];
  if (rb.send != rb.recv) p.copy(c.root, c.root, rb.recv, rb.send, c.count);
  // arrived[h]: the copy that brought the current slice to hop h.
  for (int s = 0; s < n; ++s) {
    const Span sl = chunk(c.count, n, s);
    std::size_t arrived = 0;
    for (int h = 1; h < n; ++h) {
      const int from = mod(c.root + h - 1, n), to = mod(c.root + h, n);
      std::vector<std::size_t> deps{h > 1 ? arrived : p.last_on(c.root)};
      const std::uint64_t off = sl.begin * e;
      arrived = p.copy(from, to, c.buffers[static_cast<std::size_t>(to)].recv + off,
                       c.buffers[static_cast<std::size_t>(from)].recv + off, sl.size, deps);
    }
  }
  p.algorithm = "chain";
}

void reduce_chain(Plan& p, const Collective& c, const std::vector<std::uint64_t>& scratch) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes(), slot_bytes = max_chunk(c.count, n) * e;
  // acc[r]: where rank r accumulates (the root's recvbuff; scratch after two slots elsewhere).
  std::vector<std::uint64_t> acc(static_cast<std::size_t>(n)), slots(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const RankBuffers& b = c.buffers[static_cast<std::size_t>(r)];
    slots[static_cast<std::size_t>(r)] = scratch[static_cast<std::size_t>(r)];
    acc[static_cast<std::size_t>(r)] = r == c.root ? b.recv : scratch[static_cast<std::size_t>(r)] + 2 * slot_bytes;
    if (acc[static_cast<std::size_t>(r)] != b.send) p.copy(r, r, acc[static_cast<std::size_t>(r)], b.send, c.count);
  }
  const std::vector<std::size_t> init = lane0_tails(p);
  // Hop h sends from rank root+h to root+h-1; slices flow h = n-1 .. 1.
  std::vector<std::vector<std::size_t>> reduced(static_cast<std::size_t>(n));  // [rank][slice]
  for (int s = 0; s < n; ++s) {
    const Span sl = chunk(c.count, n, s);
    for (int h = n - 1; h >= 1; --h) {
      const int from = mod(c.root + h, n), to = mod(c.root + h - 1, n);
      const std::uint64_t slot = slots[static_cast<std::size_t>(to)] + static_cast<std::uint64_t>(s % 2) * slot_bytes;
      std::vector<std::size_t> deps;
      if (s >= 2) deps.push_back(reduced[static_cast<std::size_t>(to)][static_cast<std::size_t>(s - 2)]);
      // The slice as this rank has reduced it (the chain's far end: its input).
      deps.push_back(h == n - 1 ? init[static_cast<std::size_t>(from)] : reduced[static_cast<std::size_t>(from)].back());
      const std::uint64_t off = sl.begin * e;
      const std::size_t cp = p.copy(from, to, slot, acc[static_cast<std::size_t>(from)] + off, sl.size, deps);
      reduced[static_cast<std::size_t>(to)].push_back(p.reduce(to, acc[static_cast<std::size_t>(to)] + off, slot, sl.size, {cp}));
    }
  }
  p.algorithm = "chain";
}

void all_gather_ring(Plan& p, const Collective& c) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes();
  std::vector<std::uint64_t> w(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const RankBuffers& b = c.buffers[static_cast<std::size_t>(r)];
    w[static_cast<std::size_t>(r)] = b.recv;
    const std::uint64_t mine = b.recv + static_cast<std::uint64_t>(r) * c.count * e;
    if (b.send != mine) p.copy(r, r, mine, b.send, c.count);
  }
  std::vector<std::vector<std::size_t>> busy;
  for (int r = 0; r < n; ++r) busy.push_back({p.last_on(r)});
  ring_all_gather(p, c.count * static_cast<std::size_t>(n), w, lane0_tails(p), busy);
  p.algorithm = "ring";
}

void reduce_scatter_ring(Plan& p, const Collective& c, const std::vector<std::uint64_t>& scratch) {
  const int n = p.ranks();
  const std::size_t e = p.elem_bytes(), total = c.count * static_cast<std::size_t>(n);
  const std::size_t slices = ring_slices(c.count * e), slot_bytes = (c.count + slices - 1) / slices * e;
  // Scratch: 2 x slices slots, then the work copy W of the whole input.
  std::vector<std::uint64_t> w(static_cast<std::size_t>(n)), slots(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    slots[static_cast<std::size_t>(r)] = scratch[static_cast<std::size_t>(r)];
    w[static_cast<std::size_t>(r)] = scratch[static_cast<std::size_t>(r)] + 2 * slices * slot_bytes;
    p.copy(r, r, w[static_cast<std::size_t>(r)], c.buffers[static_cast<std::size_t>(r)].send, total);
  }
  ring_reduce_scatter(p, total, w, slots, slot_bytes, slices, lane0_tails(p));
  for (int r = 0; r < n; ++r)
    p.copy(r, r, c.buffers[static_cast<std::size_t>(r)].recv,
           w[static_cast<std::size_t>(r)] + static_cast<std::uint64_t>(r) * c.count * e, c.count);
  p.algorithm = "ring";
}

void all_to_all(Plan& p, const Collective& c) {
  const int n = p.ranks();
  const std::size_t block = c.count * p.elem_bytes();
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      p.copy(r, j, c.buffers[static_cast<std::size_t>(j)].recv + static_cast<std::uint64_t>(r) * block,
             c.buffers[static_cast<std::size_t>(r)].send + static_cast<std::uint64_t>(j) * block, c.count);
  p.algorithm = "direct";
}

}  // namespace

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "cnclAllReduce";
    case CollectiveKind::kBroadcast: return "cnclBroadcast";
    case CollectiveKind::kReduce: return "cnclReduce";
    case CollectiveKind::kAllGather: return "cnclAllGather";
    case CollectiveKind::kReduceScatter: return "cnclReduceScatter";
    case CollectiveKind::kAlltoAll: return "cnclAlltoAll";
  }
  return "collective";
}

bool is_reduction(CollectiveKind k) {
  return k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduce || k == CollectiveKind::kReduceScatter;
}

bool ring_faster(int ranks, double bytes, const LinkModel& link) {
  const double per_byte_ns = 1.0 / link.bandwidth_gbps;  // GB/s = bytes per ns
  const double ring = 2.0 * (ranks - 1) * (link.latency_ns + bytes / ranks * per_byte_ns);
  const double tree = 2.0 * log2_ceil(ranks) * (link.latency_ns + bytes * per_byte_ns);
  return ring < tree;
}

std::size_t scratch_bytes(const Collective& c, int ranks, const LinkModel& link) {
  const std::size_t e = dtype_bytes(c.dtype), n = static_cast<std::size_t>(ranks);
  if (ranks == 1) return 0;
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      if (ring_faster(ranks, static_cast<double>(c.count * e), link)) {
        const std::size_t slices = ring_slices(max_chunk(c.count, ranks) * e);
        return 2 * slices * ((max_chunk(c.count, ranks) + slices - 1) / slices * e);
      }
      return 2 * c.count * e;
    case CollectiveKind::kReduce: return 2 * max_chunk(c.count, ranks) * e + c.count * e;
    case CollectiveKind::kReduceScatter: {
      const std::size_t slices = ring_slices(c.count * e);
      return 2 * slices * ((c.count + slices - 1) / slices * e) + n * c.count * e;
    }
    default: return 0;
  }
}

Plan build_plan(const Collective& c, const std::vector<std::uint64_t>& scratch, const LinkModel& link) {
  const int n = static_cast<int>(c.buffers.size());
  Plan p(n, dtype_bytes(c.dtype));
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      if (n == 1 || ring_faster(n, static_cast<double>(c.count * p.elem_bytes()), link))
        all_reduce_ring(p, c, scratch);
      else
        all_reduce_tree(p, c, scratch);
      break;
    case CollectiveKind::kBroadcast: broadcast_chain(p, c); break;
    case CollectiveKind::kReduce: reduce_chain(p, c, scratch); break;
    case CollectiveKind::kAllGather: all_gather_ring(p, c); break;
    case CollectiveKind::kReduceScatter: reduce_scatter_ring(p, c, scratch); break;
    case CollectiveKind::kAlltoAll: all_to_all(p, c); break;
  }
  p.finish();
  return p;
}

Plan build_send_recv(int ranks, int from, int to, std::uint64_t src, std::uint64_t dst, std::size_t bytes) {
  Plan p(ranks, 1);
  p.copy(from, to, dst, src, bytes);
  p.algorithm = "p2p";
  p.finish();
  return p;
}

}  // namespace mlusim::cncl
