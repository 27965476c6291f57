#include "conv/direct_conv.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "common/activation.h"
#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "gemm/epilogue.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;
using gemm::Span;
using gemm::split_units;

namespace {

// What planner and kernel derive alike from the convolution.
struct Geometry {
  std::size_t taps = 1;
  std::size_t wp = 0;     // input tile width: (OW - 1) * stride + dilated kernel width
  std::size_t count = 0;  // input columns copied into a tile row, from tile column pad_w on
  std::size_t es = 4;
  explicit Geometry(const DirectConv& c) {
    taps = c.kh * c.kw;
    if (!c.phases.empty()) {
      taps = 0;
      for (const DirectConv::Phase& p : c.phases) taps += p.kh * p.kw;
    }
    wp = (c.ow - 1) * c.stride_w + c.dil_w * (c.kw - 1) + 1;
    const std::int64_t room = i64(wp) - c.pad_w;
    count = room > 0 ? std::min<std::size_t>(c.w, static_cast<std::size_t>(room)) : 0;
    es = sim::dtype_size(c.dtype);
  }
  std::size_t in_h(const DirectConv& c, std::size_t rows) const {
    return (rows - 1) * c.stride_h + c.dil_h * (c.kh - 1) + 1;
  }
  // A tile of `ni` > 1 whole images (stride 1 only) stacks their padded inputs `image_pitch` rows
  // apart: image i's rows start at i x pitch + pad_h, and the zero rows between two images serve
  // as the bottom padding of one and the top padding of the next. The pitch is the fewest rows
  // for which no window of one image reaches a row of the other: >= pad_h + H (the next image's
  // top window stays below this one's rows) and >= in_h(OH) - pad_h (this one's bottom window
  // stays above the next one's rows); at most in_h(OH), each image's own padded rows (a
  // negative bottom padding clips the rows no window reaches). 3x3 same-padded 7 x 7 images: 8
  // rows, not 9. The intrinsic's output rows between two images (pitch - OH of them) are computed
  // and dropped.
  std::size_t image_pitch(const DirectConv& c) const {
    const std::int64_t full = i64(in_h(c, c.oh)), h = i64(c.h);
    return static_cast<std::size_t>(std::min(full, std::max({full - c.pad_h, c.pad_h + h, i64(c.oh)})));
  }
  std::size_t tile_in_rows(const DirectConv& c, std::size_t rows, std::size_t ni) const {
    return ni == 1 ? in_h(c, rows) : (ni - 1) * image_pitch(c) + in_h(c, c.oh);
  }
  std::size_t tile_out_rows(const DirectConv& c, std::size_t rows, std::size_t ni) const {
    return ni == 1 ? rows : (ni - 1) * image_pitch(c) + c.oh;
  }
};

// The convolutions a tile runs: the description's phases, or the description itself as one.
struct PhaseRun {
  DirectConv::Phase ph;
  std::size_t cols = 0;  // output columns its intrinsic computes per row: OW, or Wp - kw + 1 (phases)
  std::size_t tap0 = 0;  // taps of the phases before it: its kernel's place in a unit's weights
  std::size_t px0 = 0;   // accumulator pixels of the phases before it in a tile of rh rows
};
// A phase's intrinsic reads whole input-tile rows: Wp - kw + 1 output columns per row.
std::size_t phase_cols(const Geometry& g, const DirectConv::Phase& p) { return g.wp - p.kw + 1; }
std::vector<PhaseRun> phase_runs(const DirectConv& c, const Geometry& g, std::size_t rh) {
  std::vector<PhaseRun> v;
  if (c.phases.empty()) {
    PhaseRun r;
    r.ph.kh = c.kh, r.ph.kw = c.kw, r.ph.oh = c.oh, r.ph.ow = c.ow, r.ph.pad_h = c.pad_h, r.ph.pad_w = c.pad_w;
    r.ph.ws_kh = c.ws_kh, r.ph.ws_kw = c.ws_kw;
    r.cols = c.ow;
    return {r};
  }
  std::size_t taps = 0, px = 0;
  for (const DirectConv::Phase& p : c.phases) {
    PhaseRun r;
    r.ph = p, r.cols = phase_cols(g, p), r.tap0 = taps, r.px0 = px;
    taps += p.kh * p.kw, px += rh * r.cols;
    v.push_back(r);
  }
  return v;
}
// Pixels of the largest block the epilogue finishes at once (rh rows of one image; a phase's
// rows of Wp - kw + 1 columns): the rows of the bias and affine tiles.
std::size_t epilogue_pixels(const DirectConv& c, const Geometry& g, std::size_t rh) {
  return rh * (c.phases.empty() ? c.ow : g.wp);
}
// Accumulator pixels of a tile of rh rows (ni images): all its phases' intrinsic outputs.
std::size_t acc_pixels(const DirectConv& c, const Geometry& g, std::size_t rh, std::size_t ni) {
  if (c.phases.empty()) return g.tile_out_rows(c, rh, ni) * c.ow;
  std::size_t px = 0;
  for (const DirectConv::Phase& p : c.phases) px += rh * phase_cols(g, p);
  return px;
}

// Whether intrinsics write the output dtype directly (fp16 out of a single Cin chunk with nothing
// to add: the TFU rounds its fp32 sums once) instead of an fp32 tile the epilogue finishes.
bool direct_out(const DirectConv& c, std::size_t qc) {
  return (c.dtype == sim::DType::kFloat32 || qc == 1) && !c.out.bias && !c.out.affine.enabled &&
         c.out.act == Activation::kNone && c.out.alpha == 1.0f;
}

// NRAM bytes of one compute core's buffers. WRAM holds all of a chunk's weights (one slot per Cin
// chunk, loaded during the core's first tile) when they fit, else two slots reloaded every step.
struct CoreBuffers {
  std::size_t xslot = 0, wslot = 0, wslots = 1, acc = 0, out_stage = 0, bias_raw = 0, bias32 = 0, act_tmp = 0;
  std::size_t affine = 0, affine_tile = 0;  // the channel affine's scratch, and each of its scale/shift tiles
  bool resident = true;
  std::size_t nram() const {
    return 2 * xslot + 2 * acc + out_stage + bias_raw + bias32 + act_tmp + affine + 2 * affine_tile;
  }
  std::size_t wram() const { return wslots * wslot; }
};
// `ps` < nco (single Cin chunk, output written by the intrinsics): the chunk runs as pieces of ps
// output channels, each its own intrinsic, WRAM slot and accumulator block.
CoreBuffers core_buffers(const DirectConv& c, const Geometry& g, std::size_t rh, std::size_t ni, std::size_t nco,
                         std::size_t cc, std::size_t ps, std::size_t wram_bytes) {
  CoreBuffers b;
  const std::size_t m = std::max(g.tile_out_rows(c, rh, ni) * c.ow, epilogue_pixels(c, g, rh));
  const std::size_t qc = c.c / cc, px = acc_pixels(c, g, rh, ni);
  const std::size_t pieces = ceil_div(nco, ps), units = qc > 1 ? qc : pieces;
  const bool fp32_acc = c.dtype == sim::DType::kFloat32 || !direct_out(c, qc);
  // Phases whose window starts col_off columns in read as many pixels past the tile's last row
  // (into columns they drop).
  std::size_t tail = 0;
  for (const DirectConv::Phase& p : c.phases) tail = std::max(tail, p.col_off);
  b.xslot = up128((g.tile_in_rows(c, rh, ni) * g.wp + tail) * cc * g.es);
  b.wslot = up128(ps * g.taps * cc * g.es);
  b.resident = units * b.wslot <= wram_bytes;
  b.wslots = b.resident ? units : 2;
  b.acc = up128(px * pieces * ps * (fp32_acc ? 4 : g.es));
  if (!direct_out(c, qc) && c.dtype != sim::DType::kFloat32) b.out_stage = up128(px * nco * g.es);
  if (c.out.bias) b.bias_raw = up128(nco * g.es), b.bias32 = up128(m * nco * 4);
  if (c.out.affine.enabled) b.affine = affine_buffer_bytes(nco, 0), b.affine_tile = up128(m * nco * 4);
  if (activation_needs_temp(c.out.act)) b.act_tmp = up128(m * nco * 4);
  return b;
}

// Bytes per DRAM channel of a set of byte ranges, and how unevenly they fall: busiest channel's
// bytes x channels / all bytes (1 = even). The DRAM model interleaves addresses over its channels
// every dram.interleave_bytes (sim::dram_channel_of, hashed or not) and a copy goes at the pace of
// its busiest channel, so the skew is the factor by which the copy is slower than an even one.
class ChannelLoad {
 public:
  explicit ChannelLoad(const sim::HardwareConfig& cfg)
      : cfg_(cfg), gran_(std::max<std::uint64_t>(1, cfg.dram_interleave_bytes)), load_(std::max(1u, cfg.dram_channels)) {}
  void add(std::uint64_t a, std::uint64_t bytes) {
    for (const std::uint64_t end = a + bytes; a < end;) {
      const std::uint64_t next = std::min(end, (a / gran_ + 1) * gran_);
      load_[sim::dram_channel_of(cfg_, a)] += next - a;
      a = next;
    }
  }
  double skew() const {
    std::uint64_t total = 0, busiest = 0;
    for (std::uint64_t v : load_) total += v, busiest = std::max(busiest, v);
    return static_cast<double>(busiest) * static_cast<double>(load_.size()) / static_cast<double>(total);
  }

 private:
  const sim::HardwareConfig& cfg_;
  std::uint64_t gran_;
  std::vector<std::uint64_t> load_;
};

// The skew of a copy of `runs` runs of `run` bytes, `stride` bytes apart (the first 256 runs).
double channel_skew(const sim::HardwareConfig& cfg, std::uint64_t run, std::uint64_t stride, std::size_t runs) {
  if (run == 0 || runs == 0 || cfg.dram_channels <= 1) return 1.0;
  ChannelLoad load(cfg);
  for (std::size_t i = 0; i < std::min<std::size_t>(runs, 256); ++i) load.add(i * stride, run);
  return load.skew();
}

// Cin chunks the memory core stages per copy (a divisor of qc): the fewest whose copy spreads
// over the DRAM channels. A staging copy reads, per output channel and tap, a run of gq x cc
// channels; a copy goes at the pace of its busiest DRAM channel (ChannelLoad), so short runs a
// whole tap apart can all land on a few channels (e.g. 128-byte runs 1 KiB apart on 6 plainly
// interleaved channels of 256 bytes: half of them). Accepted: the busiest channel carries at most
// 1.25x the mean.
std::size_t stage_group(const DirectConv& c, const sim::HardwareConfig& cfg, std::size_t nco, std::size_t cc) {
  const std::size_t qc = c.c / cc, es = sim::dtype_size(c.dtype), taps = c.kh * c.kw;
  for (std::size_t d = 1; d < qc; ++d) {
    if (qc % d != 0) continue;
    ChannelLoad load(cfg);
    for (std::size_t o = 0; o < std::min<std::size_t>(nco, 64); ++o)
      for (std::size_t t = 0; t < taps; ++t)
        load.add(static_cast<std::uint64_t>(i64(o) * c.ws_o + i64(t) * c.ws_tap()) * es, d * cc * es);
    if (load.skew() <= 1.25) return d;
  }
  return qc;
}

std::size_t sram_bytes(const DirectConv& c, const Geometry& g, std::size_t nco) {
  return up128(nco * g.taps * c.c * g.es);
}

// ---- the kernel ----

class DirectRun {
 public:
  DirectRun(const DirectConv& c, const DirectPlan& p)
      : c_(c), p_(p), g_(c), phases_(phase_runs(c, g_, p.rh)), direct_(direct_out(c, p.qc)), gq_(p.gq) {}

  // `cluster`: this participant's cluster among the plan's (0 .. plan.clusters - 1).
  void run(std::size_t cluster) {
    wsram_ = alloc(Space::kSram, sram_bytes(c_, g_, p_.nco));  // same offset on every participant
    for (std::size_t k = cluster; k < p_.jobs; k += p_.clusters) jobs_.push_back(k);
    if (is_memory_core())
      run_memory_core();
    else
      run_compute_core();
  }

 private:
  struct Job {
    std::size_t co0 = 0, nco = 0;  // output channels
    Span tiles;                    // the job's pixel tiles
  };
  Job job(std::size_t k) const {
    Job j;
    j.co0 = (k / p_.gp) * p_.nco;
    j.nco = std::min(p_.nco, c_.oc - j.co0);
    j.tiles = split_units(ceil_div(c_.n, p_.ni) * p_.tb, p_.gp, 1, k % p_.gp);
    return j;
  }
  std::size_t chunk_bytes(const Job& j) const { return j.nco * g_.taps * p_.cc * g_.es; }
  // Output-channel pieces (qc == 1 only): piece u is channels [u * ps, u * ps + piece_n(u)) of the job.
  std::size_t pieces(const Job& j) const { return ceil_div(j.nco, p_.ps); }
  std::size_t piece_n(const Job& j, std::size_t u) const { return std::min(p_.ps, j.nco - u * p_.ps); }
  bool piecewise(const Job& j) const { return p_.qc == 1 && pieces(j) > 1; }
  // Units of a tile: Cin chunks, or output-channel pieces.
  std::size_t units(const Job& j) const { return piecewise(j) ? pieces(j) : p_.qc; }
  std::size_t groups(const Job& j) const { return piecewise(j) ? pieces(j) : p_.qc / gq_; }

  // Memory core: staging group `gi` (gq Cin chunks) of the job's weights into SRAM as a dense
  // [nco, KH, KW, gq x cc] block (depth-major weights: gq == 1, [KH, KW, cc, nco]); of its output
  // channels [o0, o1) only when given (not with pieces).
  void stage(const Job& j, std::size_t gi, std::size_t o0 = 0, std::size_t o1 = SIZE_MAX) const {
    if (piecewise(j)) {  // piece gi: its channels' weights, [piece_n, KH, KW, C] (contiguous when dense)
      const std::size_t run = g_.taps * c_.c * g_.es, n = piece_n(j, gi);
      const Addr dst = wsram_.offset(i64(gi * p_.ps * run));
      if (c_.w_k_major) return stage_k_major(phases_[0].ph, dst, j.co0 + gi * p_.ps, n, 0, c_.c);
      const Addr src{Space::kGdram,
                     c_.w_base + static_cast<std::uint64_t>(i64(j.co0 + gi * p_.ps) * c_.ws_o * i64(g_.es))};
      CopyShape sh;
      if (c_.ws_tap() == i64(c_.c) && c_.ws_o == i64(g_.taps * c_.c))
        sh = CopyShape{n * run};
      else if (c_.ws_tap() == i64(c_.c))
        sh = CopyShape{run, n, i64(run), c_.ws_o * i64(g_.es)};
      else
        sh = CopyShape{c_.c * g_.es, g_.taps, i64(c_.c * g_.es), c_.ws_tap() * i64(g_.es),
                       n,           i64(run), c_.ws_o * i64(g_.es)};
      memcpy_strided_async(dst, src, sh, Dir::kGdram2Sram);
      return;
    }
    const std::size_t wg = gq_ * p_.cc, nn = std::min(o1, j.nco) - o0;
    const Addr block = wsram_.offset(i64(gi * gq_ * chunk_bytes(j)));
    if (c_.w_k_major) {  // each phase's kernel after the taps of the phases before it: [taps][wg][nco]
      for (const PhaseRun& r : phases_)
        stage_k_major(r.ph, block.offset(i64(o0 * g_.es) + i64(r.tap0 * wg * j.nco * g_.es)), j.co0 + o0, nn, gi * wg,
                      wg, j.nco);
      return;
    }
    const Addr dst = block.offset(i64(o0 * g_.taps * wg * g_.es));
    const Addr src{Space::kGdram,
                   c_.w_base + static_cast<std::uint64_t>((i64(j.co0 + o0) * c_.ws_o + i64(gi * wg)) * i64(g_.es))};
    const std::size_t run = wg * g_.es;
    CopyShape s;
    if (c_.ws_tap() == i64(wg) && c_.ws_o == i64(g_.taps * wg))
      s = CopyShape{nn * g_.taps * run};
    else if (c_.ws_tap() == i64(wg))
      s = CopyShape{g_.taps * run, nn, i64(g_.taps * run), c_.ws_o * i64(g_.es)};
    else
      s = CopyShape{run, g_.taps, i64(run), c_.ws_tap() * i64(g_.es), nn, i64(g_.taps * run), c_.ws_o * i64(g_.es)};
    memcpy_strided_async(dst, src, s, Dir::kGdram2Sram);
  }

  // Depth-major staging of kernel `k`'s output channels [n0, n0 + nn) x input channels [k0, k0 +
  // kk) as [KH, KW, kk, nn] at dst, rows `pitch` channels apart (default nn): per kernel row, runs
  // of nn channels (ws_o == 1), kk of them a row apart, KW such blocks a tap apart.
  void stage_k_major(const DirectConv::Phase& k, Addr dst, std::size_t n0, std::size_t nn, std::size_t k0,
                     std::size_t kk, std::size_t pitch = 0) const {
    const std::int64_t es = i64(g_.es), run = i64(nn) * es, row = i64(pitch > 0 ? pitch : nn) * es;
    for (std::size_t ky = 0; ky < k.kh; ++ky) {
      const std::int64_t el = k.w_off + i64(n0) * c_.ws_o + i64(k0) * c_.ws_c + i64(ky) * k.ws_kh;
      const Addr src{Space::kGdram, c_.w_base + static_cast<std::uint64_t>(el * es)};
      memcpy_strided_async(dst.offset(i64(ky * k.kw * kk) * row), src,
                           CopyShape{static_cast<std::size_t>(run), kk, row, c_.ws_c * es, k.kw, i64(kk) * row,
                                     k.ws_kw * es},
                           Dir::kGdram2Sram);
    }
  }

  // Per job: group gi staged, then the barrier the cores pass before they first copy from it
  // (group 0 before their first intrinsic, a later group just before the intrinsic preceding the
  // first step on one of its chunks); a last barrier once every core is done reading the job's SRAM.
  // With split0 group 0 goes in two halves of its output channels, a barrier after each.
  void run_memory_core() {
    for (std::size_t k : jobs_) {
      const Job j = job(k);
      for (std::size_t gi = 0; gi < groups(j); ++gi) {
        if (gi == 0 && split0(j)) {
          stage(j, 0, 0, half0(j));
          sync_io();
          sync_cluster();
          stage(j, 0, half0(j));
        } else {
          stage(j, gi);
        }
        sync_io();
        sync_cluster();
      }
      sync_cluster();
    }
  }
  bool split0(const Job& j) const { return p_.split0 && !piecewise(j) && j.nco > 1; }
  std::size_t half0(const Job& j) const { return j.nco / 2; }

  // Tile t of the output: images [n, n + ni), first output row, rows (all of them when ni > 1).
  struct Tile {
    std::size_t n = 0, ni = 1, oy0 = 0, rows = 0;
    Tile image(std::size_t i) const { return {n + i, 1, oy0, rows}; }
  };
  Tile tile(std::size_t t) const {
    Tile r;
    r.n = (t / p_.tb) * p_.ni;
    r.ni = std::min(p_.ni, c_.n - r.n);
    r.oy0 = (t % p_.tb) * p_.rh;
    r.rows = std::min(p_.rh, c_.oh - r.oy0);
    return r;
  }

  // Unit u's weights from SRAM into a WRAM slot: Cin chunk u from its staging group, or piece u;
  // of a chunk's output channels [o0, o1) only when given.
  void load_w(const Job& j, std::size_t ci, Addr slot, std::size_t o0 = 0, std::size_t o1 = SIZE_MAX) const {
    if (piecewise(j)) {
      const std::size_t run = g_.taps * c_.c * g_.es;
      memcpy_async(slot, wsram_.offset(i64(ci * p_.ps * run)), piece_n(j, ci) * run, Dir::kSram2Wram);
      return;
    }
    const std::size_t gi = ci / gq_, sub = ci % gq_, run = p_.cc * g_.es, wg = gq_ * run;
    const std::size_t nn = std::min(o1, j.nco) - o0;
    const Addr block = wsram_.offset(i64(gi * gq_ * chunk_bytes(j) + sub * run));
    if (c_.w_k_major && nn < j.nco) {  // [KH x KW x cc rows][nco]: a run of nn channels a row
      const std::int64_t row = i64(j.nco * g_.es);
      memcpy_strided_async(slot.offset(i64(o0 * g_.es)), block.offset(i64(o0 * g_.es)),
                           CopyShape{nn * g_.es, g_.taps * p_.cc, row, row}, Dir::kSram2Wram);
    } else if (gq_ == 1 || c_.w_k_major) {  // [nco][KH x KW x cc], or depth-major whole: contiguous
      const std::int64_t at = i64(o0 * g_.taps * run);
      memcpy_async(slot.offset(at), block.offset(at), nn * g_.taps * run, Dir::kSram2Wram);
    } else {
      memcpy_strided_async(slot.offset(i64(o0 * g_.taps * run)), block.offset(i64(o0 * g_.taps * wg)),
                           CopyShape{run, g_.taps, i64(run), i64(wg), nn, i64(g_.taps * run), i64(g_.taps * wg)},
                           Dir::kSram2Wram);
    }
  }

  // Zeroes the rows [a, b) of input slot k that may hold data.
  void zero_rows(std::size_t k, std::size_t a, std::size_t b) {
    const std::size_t row = g_.wp * p_.cc;  // elements
    std::vector<RowSpan> kept;
    for (const RowSpan& d : x_data_[k]) {
      const std::size_t lo = std::max(d.lo, a), hi = std::min(d.hi, b);
      if (lo >= hi) {
        kept.push_back(d);
        continue;
      }
      vec_fill(c_.dtype, x_[k].offset(i64(lo * row * g_.es)), 0.0, (hi - lo) * row);
      if (d.lo < lo) kept.push_back({d.lo, lo});
      if (hi < d.hi) kept.push_back({hi, d.hi});
    }
    x_data_[k] = std::move(kept);
  }

  // Input tile of (tile t, Cin chunk ci) into NRAM slot k from its row `row0` on: [in_h, Wp, cc]
  // per image, zero rows outside the image (filled where a load left data: tiles of the same
  // rows in a slot, e.g. whole images, fill nothing after the first).
  void load_x(const Tile& t, std::size_t ci, std::size_t k, std::size_t row0 = 0) {
    if (t.ni > 1) {
      // Images image_pitch rows apart; the rows they share are zeros in both (see image_pitch).
      for (std::size_t i = 0; i < t.ni; ++i) load_x(t.image(i), ci, k, row0 + i * g_.image_pitch(c_));
      return;
    }
    const std::size_t in_h = g_.in_h(c_, t.rows);
    const std::size_t row_bytes = g_.wp * p_.cc * g_.es;
    const std::int64_t iy0 = i64(t.oy0 * c_.stride_h) - c_.pad_h;
    const std::int64_t lo = std::clamp<std::int64_t>(-iy0, 0, i64(in_h));
    const std::int64_t hi = std::clamp<std::int64_t>(i64(c_.h) - iy0, lo, i64(in_h));
    if (hi == lo || g_.count == 0) {
      zero_rows(k, row0, row0 + in_h);
      return;
    }
    zero_rows(k, row0, row0 + static_cast<std::size_t>(lo));
    zero_rows(k, row0 + static_cast<std::size_t>(hi), row0 + in_h);
    const RowSpan data{row0 + static_cast<std::size_t>(lo), row0 + static_cast<std::size_t>(hi)};
    std::vector<RowSpan>& spans = x_data_[k];
    spans.erase(std::remove_if(spans.begin(), spans.end(),
                               [&](const RowSpan& d) { return d.lo >= data.lo && d.hi <= data.hi; }),
                spans.end());
    spans.push_back(data);
    const std::size_t rows = static_cast<std::size_t>(hi - lo);
    const Addr dst = x_[k].offset(i64(row0) * i64(row_bytes) + lo * i64(row_bytes) + c_.pad_w * i64(p_.cc * g_.es));
    const std::int64_t src_el = i64(t.n) * c_.xs_n + (iy0 + lo) * c_.xs_h + i64(ci * p_.cc);
    const Addr src{Space::kGdram, c_.x_base + static_cast<std::uint64_t>(src_el * i64(g_.es))};
    const std::size_t run = p_.cc * g_.es;
    CopyShape s;
    if (c_.xs_w == i64(p_.cc) || g_.count == 1)
      s = CopyShape{g_.count * run, rows, i64(row_bytes), c_.xs_h * i64(g_.es)};
    else
      s = CopyShape{run, g_.count, i64(run), c_.xs_w * i64(g_.es), rows, i64(row_bytes), c_.xs_h * i64(g_.es)};
    memcpy_strided_async(dst, src, s, Dir::kGdram2Nram);
  }

  // A tile's [rows x OW, n] result for channels [co0, co0 + n), already in the output dtype, to y
  // (asynchronous); of phase r: its rows of r.cols pixels, the first OW of each.
  void store(Addr src, const Tile& t, std::size_t co0, std::size_t n, const PhaseRun& r) const {
    const gemm::OutputSpec& o = c_.out;
    const std::size_t nr = t.rows * c_.ow;
    const std::int64_t off = o.batch.offset(t.n) + r.ph.out_off + i64(t.oy0) * pitch() + i64(co0) * o.col_stride;
    const Addr dst{Space::kGdram, o.base + static_cast<std::uint64_t>(off * i64(g_.es))};
    const std::size_t run = n * g_.es;
    CopyShape s;
    if (!c_.phases.empty())
      s = CopyShape{run, r.ph.ow, o.row_stride * i64(g_.es), i64(run), t.rows, pitch() * i64(g_.es), i64(r.cols * run)};
    else if (pitch() != i64(c_.ow) * o.row_stride && t.rows > 1)  // rows apart: one level per row
      s = CopyShape{run, c_.ow, o.row_stride * i64(g_.es), i64(run), t.rows, pitch() * i64(g_.es), i64(c_.ow * run)};
    else
      s = o.row_stride == i64(n) || nr == 1 ? CopyShape{nr * run}
                                            : CopyShape{run, nr, o.row_stride * i64(g_.es), i64(run)};
    memcpy_strided_async(dst, src, s, Dir::kNram2Gdram);
  }

  std::int64_t pitch() const { return c_.out_row_pitch ? c_.out_row_pitch : i64(c_.ow) * c_.out.row_stride; }
  // Phase r's output rows in tile t (0: none; all of t's without phases).
  std::size_t phase_rows(const PhaseRun& r, const Tile& t) const {
    if (c_.phases.empty()) return t.rows;
    return t.oy0 < r.ph.oh ? std::min(t.rows, r.ph.oh - t.oy0) : 0;
  }

  // The epilogue of output rows [oy0, oy0 + rows) of image n from acc [rows x OW, n_out] (fp32),
  // finished as one block: stored by the epilogue, or (rows a pitch apart, or a phase's rows of
  // r.cols pixels of which the first OW are kept) by one copy of the kept pixels (store()).
  // `tile_row`: the tile row of the block's first row (an image's first row in a tile of stacked
  // images), where its rows round into the staging buffer (after the phases before phase r), so
  // that its store may still be in flight while the next block is finished.
  void finish(Addr acc, std::size_t n, std::size_t oy0, std::size_t rows, std::size_t c_out, std::size_t n_out,
              std::size_t tile_row, const PhaseRun& r) {
    if (c_.phases.empty() && pitch() == i64(c_.ow) * c_.out.row_stride) {
      gemm::EpilogueBuffers e = epi_;
      if (buf_.out_stage) e.out_stage = e.out_stage.offset(i64(tile_row * c_.ow * n_out * g_.es));
      gemm::finish_block(c_.out, acc, n, oy0 * c_.ow, rows * c_.ow, c_out, n_out, e);
      return;
    }
    gemm::EpilogueBuffers e = epi_;
    if (buf_.out_stage) e.out_stage = e.out_stage.offset(i64((r.px0 + tile_row * r.cols) * n_out * g_.es));
    Tile t;
    t.n = n, t.oy0 = oy0, t.rows = rows;
    store(gemm::finish_values(c_.out, acc, rows * r.cols, n_out, e), t, c_out, n_out, r);
  }

  void run_compute_core() {
    buf_ = core_buffers(c_, g_, p_.rh, p_.ni, p_.nco, p_.cc, p_.ps, capacity(Space::kWram));
    for (Addr& a : x_) a = alloc(Space::kNram, buf_.xslot);
    for (Addr& a : acc_) a = alloc(Space::kNram, buf_.acc);
    for (std::size_t i = 0; i < buf_.wslots; ++i) w_.push_back(alloc(Space::kWram, buf_.wslot));
    if (buf_.out_stage) epi_.out_stage = alloc(Space::kNram, buf_.out_stage);
    if (buf_.bias_raw) epi_.bias_raw = alloc(Space::kNram, buf_.bias_raw);
    if (buf_.bias32) epi_.bias32 = alloc(Space::kNram, buf_.bias32);
    if (buf_.act_tmp) epi_.act_tmp = alloc(Space::kNram, buf_.act_tmp);
    if (buf_.affine) {
      epi_.affine = alloc_affine_buffers(p_.nco, 0);
      epi_.scale_tile = alloc(Space::kNram, buf_.affine_tile);
      epi_.shift_tile = alloc(Space::kNram, buf_.affine_tile);
    }
    // The padding columns are never written by a load: zero them (whole slots) once.
    for (Addr a : x_) vec_fill(c_.dtype, a, 0.0, buf_.xslot / g_.es);
    const DType acc_t = direct_ ? c_.dtype : DType::kFloat32;
    for (std::size_t k : jobs_) {
      const Job j = job(k);
      const Span mine = split_units(j.tiles.size, core_dim(), 1, core_id());
      const std::size_t nu = units(j);
      const bool pw = piecewise(j);
      const std::vector<Step> steps = order_steps(mine.size, nu);
      const std::size_t t0 = j.tiles.begin + mine.begin;
      auto wslot = [&](std::size_t ci, std::size_t s) { return w_[buf_.resident ? ci : s % 2]; };
      const std::size_t block_px = epilogue_pixels(c_, g_, p_.rh);
      if (c_.out.bias && !steps.empty()) gemm::prepare_col_bias(c_.out, 0, j.co0, j.nco, block_px, epi_);
      if (c_.out.affine.enabled && !steps.empty()) gemm::prepare_col_affine(c_.out, j.co0, j.nco, block_px, epi_);
      // Input slots: per step (Cin chunks), or per tile (pieces share the tile's input).
      auto xslot = [&](std::size_t s) -> std::size_t { return pw ? steps[s].tile % 2 : s % 2; };
      if (!steps.empty()) load_x(tile(t0), 0, 0);  // while the memory core stages group 0
      sync_cluster();  // group 0 (split0: its first half) is in SRAM
      if (split0(j)) {  // the first half's copy runs while the second half stages
        if (!steps.empty()) load_w(j, 0, wslot(0, 0), 0, half0(j));
        sync_cluster();
      }
      std::size_t staged = 1;  // staging groups known to be in SRAM
      std::vector<bool> in_wram(nu, false);
      if (!steps.empty()) {
        load_w(j, 0, wslot(0, 0), split0(j) ? half0(j) : 0);
        in_wram[0] = true;
        sync_io();
      }
      // Pieces: tile T's input goes to slot T % 2 as soon as the tile before it in that slot
      // (T - 2) has run its last step, so its load overlaps all of tile T - 1's intrinsics.
      std::vector<std::size_t> last_step(pw ? mine.size : 0);
      for (std::size_t s = 0; s < last_step.size() * nu; ++s) last_step[steps[s].tile] = s;
      std::size_t next_x = 1;  // the next tile whose input is not loaded (pieces)
      for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& st = steps[s];
        const Tile t = tile(t0 + st.tile);
        for (; pw && next_x < mine.size && (next_x < 2 || last_step[next_x - 2] < s); ++next_x)
          load_x(tile(t0 + next_x), 0, next_x % 2);
        if (s + 1 < steps.size()) {
          const Step& nx = steps[s + 1];
          if (!pw) load_x(tile(t0 + nx.tile), nx.chunk, xslot(s + 1));
          if (!buf_.resident || !in_wram[nx.chunk]) {
            for (; staged <= (pw ? nx.chunk : nx.chunk / gq_); ++staged) sync_cluster();  // its group is in SRAM
            if (!buf_.resident || !in_wram[nx.chunk]) load_w(j, nx.chunk, wslot(nx.chunk, s + 1));
            in_wram[nx.chunk] = true;
          }
        }
        dev::ConvParams prm;
        // A piece's block of the accumulator: [tile rows x OW, its channels] (the whole chunk's
        // channels without pieces).
        const std::size_t es_acc = sim::dtype_size(acc_t);
        const std::size_t n_out = pw ? piece_n(j, st.chunk) : j.nco, c_out = j.co0 + (pw ? st.chunk * p_.ps : 0);
        const Addr acc = acc_[st.tile % 2].offset(
            pw ? i64(st.chunk * g_.tile_out_rows(c_, p_.rh, p_.ni) * c_.ow * p_.ps * es_acc) : 0);
        prm.in_w = g_.wp, prm.in_c = p_.cc, prm.out_c = n_out;
        prm.stride_h = c_.stride_h, prm.stride_w = c_.stride_w;
        prm.dilation_h = c_.dil_h, prm.dilation_w = c_.dil_w;
        prm.weights_k_major = c_.w_k_major;
        // split_last: the core's last intrinsic runs in two parts (the tile's images, else its rows,
        // halved), so that the first part's epilogue and store overlap the second part's
        // intrinsic: only half of the last tile's output is stored after the compute.
        const std::size_t pitch_rows = g_.image_pitch(c_);
        const std::size_t parts = p_.split_last && s + 1 == steps.size() && !pw && (t.ni > 1 || t.rows > 1) ? 2 : 1;
        for (std::size_t part = 0; part < parts; ++part) {
          Tile sub = t;                  // the part's images and rows
          std::size_t in0 = 0, out0 = 0;  // its first input row in the slot, first output row in acc
          if (parts == 2 && t.ni > 1) {
            const std::size_t a = t.ni / 2;
            sub.n = part ? t.n + a : t.n, sub.ni = part ? t.ni - a : a;
            in0 = out0 = part ? a * pitch_rows : 0;
          } else if (parts == 2) {
            const std::size_t a = t.rows / 2;
            sub.oy0 = part ? t.oy0 + a : t.oy0, sub.rows = part ? t.rows - a : a;
            out0 = part ? a : 0, in0 = out0 * c_.stride_h;
          }
          // Phase r's block of the accumulator: [rows x r.cols, n_out] after the phases before it.
          auto out = [&](const PhaseRun& r) { return acc.offset(i64((r.px0 + out0 * r.cols) * n_out * es_acc)); };
          for (const PhaseRun& r : phases_) {  // one intrinsic per phase, its window of the same input tile
            const std::size_t rows = phase_rows(r, sub);
            if (rows == 0) continue;
            prm.k_h = r.ph.kh, prm.k_w = r.ph.kw;
            prm.in_h = c_.phases.empty() ? g_.tile_in_rows(c_, sub.rows, sub.ni) : rows + r.ph.kh - 1;
            const Addr in = x_[xslot(s)].offset(i64(((in0 + r.ph.row_off) * g_.wp + r.ph.col_off) * p_.cc * g_.es));
            const Addr w = wslot(st.chunk, s).offset(i64(r.tap0 * p_.cc * n_out * g_.es));
            conv2d(c_.dtype, acc_t, out(r), in, w, prm, !pw && st.chunk > 0);
          }
          // The next step's loads; a tile's stores drain during the next tile's steps and are
          // waited for before this tile's epilogue (which rounds into the staging buffer they
          // read; with fp32 or direct output the accumulator they read is written again by the
          // tile after this one). Pieces store every step.
          if (pw) sync_io();
          else sync_loads();
          if (!pw && st.chunk + 1 < p_.qc) continue;
          if (!pw && part == 0) sync_io();
          for (const PhaseRun& r : phases_) {
            const std::int64_t pitch = i64(pitch_rows * r.cols * n_out * es_acc);
            for (std::size_t i = 0; i < sub.ni; ++i) {
              Tile ti = sub.image(i);
              ti.rows = phase_rows(r, ti);
              if (ti.rows == 0) continue;
              const Addr a = out(r).offset(i64(i) * pitch);
              if (direct_)
                store(a, ti, c_out, n_out, r);
              else
                finish(a, ti.n, ti.oy0, ti.rows, c_out, n_out, out0 + i * pitch_rows, r);
            }
          }
        }
      }
      for (; staged < groups(j); ++staged) sync_cluster();
      sync_io();
      sync_cluster();  // done with the job's SRAM
    }
  }

  // The order of a core's (tile, Cin chunk) steps: tile by tile, except that the first two tiles
  // go chunk by chunk (0, 1 on chunk 0, then on chunk 1, ...): the copy of chunk c + 1 then waits
  // for its staging only after the intrinsic that follows it was issued. The two accumulators
  // (acc[tile % 2]) hold both tiles.
  struct Step {
    std::size_t tile = 0, chunk = 0;
  };
  std::vector<Step> order_steps(std::size_t tiles, std::size_t nu) const {
    std::vector<Step> v;
    const std::size_t paired = tiles >= 2 && nu > 1 ? 2 : 0;
    for (std::size_t ci = 0; ci < nu && paired; ++ci)
      for (std::size_t ti = 0; ti < paired; ++ti) v.push_back({ti, ci});
    for (std::size_t ti = paired; ti < tiles; ++ti)
      for (std::size_t ci = 0; ci < nu; ++ci) v.push_back({ti, ci});
    return v;
  }

  const DirectConv& c_;
  const DirectPlan& p_;
  const Geometry g_;
  const std::vector<PhaseRun> phases_;
  CoreBuffers buf_;
  const bool direct_;
  const std::size_t gq_;  // Cin chunks per staging copy
  std::vector<std::size_t> jobs_;
  Addr wsram_, x_[2], acc_[2];
  struct RowSpan {
    std::size_t lo, hi;
  };
  std::vector<RowSpan> x_data_[2];  // rows of each input slot that may hold data (not zeros)
  std::vector<Addr> w_;
  gemm::EpilogueBuffers epi_;
};

}  // namespace

std::string DirectPlan::str() const {
  return "direct rh=" + std::to_string(rh) + " ni=" + std::to_string(ni) + " nco=" + std::to_string(nco) +
         " ps=" + std::to_string(ps) +
         " cc=" + std::to_string(cc) + " gp=" + std::to_string(gp) + " gq=" + std::to_string(gq) +
         (split0 ? " split0" : "") + (split_last ? " split_last" : "") +
         " jobs=" + std::to_string(jobs) + " clusters=" + std::to_string(clusters) +
         " est_cycles=" + std::to_string(static_cast<std::uint64_t>(est_cycles)) +
         " est_dram_bytes=" + std::to_string(static_cast<std::uint64_t>(est_dram_bytes));
}

bool direct_forward_applies(const Handle& h, const ConvShape& s, const View4& x, const View4& w, const View4& y,
                            const OutputStage& stage) {
  if (s.groups != 1 || s.c == 0 || s.oc == 0) return false;
  if (!gemm::device_model(h, s.dtype).on_tfu()) return false;
  const bool x_nhwc = x.strides[1] == 1 || s.c == 1;
  const bool w_ohwi =
      (w.strides[1] == 1 || s.c == 1) && (s.kh == 1 || s.kw == 1 || w.strides[2] == i64(s.kw) * w.strides[3]);
  const bool y_nhwc =
      (y.strides[1] == 1 || s.oc == 1) && (s.oh == 1 || s.ow == 1 || y.strides[2] == i64(s.ow) * y.strides[3]);
  return x_nhwc && w_ohwi && y_nhwc;
}

std::vector<DataPhase> backward_data_phases(const ConvShape& s) {
  std::vector<DataPhase> v;
  const std::size_t sh = static_cast<std::size_t>(s.p.stride_h), sw = static_cast<std::size_t>(s.p.stride_w);
  if (sh == 1 && sw == 1) {
    DataPhase p;
    p.out_h = s.h, p.out_w = s.w, p.taps_h = s.kh, p.taps_w = s.kw;
    p.pad_h = s.p.dilation_h * i64(s.kh - 1) - s.p.pad_h, p.pad_w = s.p.dilation_w * i64(s.kw - 1) - s.p.pad_w;
    if (p.pad_h >= 0 && p.pad_w >= 0) v.push_back(p);
    return v;
  }
  if (s.p.dilation_h != 1 || s.p.dilation_w != 1) return v;
  // Along one dimension, output index r + stride x a takes the taps k = r + pad (mod stride):
  // k0 + stride x m, m < K'; input row oy = a - e0 - m with e0 = (k0 - pad - r) / stride, i.e.
  // with the sub-kernel mirrored (t = K' - 1 - m), the stride-1 convolution padded by e0 + K' - 1.
  struct Dim {
    std::size_t k0, taps, out;
    std::int64_t pad;
  };
  auto dim = [](std::size_t r, std::size_t stride, std::int64_t pad, std::size_t k, std::size_t in) {
    Dim d{};
    const std::int64_t st = i64(stride);
    d.k0 = static_cast<std::size_t>(((i64(r) + pad) % st + st) % st);
    d.taps = d.k0 < k ? (k - d.k0 + stride - 1) / stride : 0;
    d.out = r < in ? (in - r + stride - 1) / stride : 0;
    const std::int64_t e0 = (i64(d.k0) - pad - i64(r)) / st;  // exact: k0 = r + pad (mod stride)
    d.pad = e0 + i64(d.taps) - 1;
    return d;
  };
  for (std::size_t ry = 0; ry < sh; ++ry)
    for (std::size_t rx = 0; rx < sw; ++rx) {
      const Dim y = dim(ry, sh, s.p.pad_h, s.kh, s.h), x = dim(rx, sw, s.p.pad_w, s.kw, s.w);
      if (y.out == 0 || x.out == 0) continue;
      if (y.taps == 0 || x.taps == 0) {  // no tap reaches these outputs: dx there is the bias, or 0
        v.push_back(DataPhase{ry, rx, y.out, x.out, 0, 0, 0, 0, 0, 0});
        continue;
      }
      if (y.pad < 0 || x.pad < 0) return {};
      v.push_back(DataPhase{ry, rx, y.out, x.out, y.k0, x.k0, y.taps, x.taps, y.pad, x.pad});
    }
  return v;
}

void unite_phases(DirectConv& c) {
  // Output row a of a phase reads input rows a - pad_h .. a - pad_h + kh - 1: the union reads from
  // a - max(pad_h) to a + max(kh - 1 - pad_h) (columns alike).
  std::int64_t pad_h = 0, pad_w = 0, below = std::numeric_limits<std::int64_t>::min(), right = below;
  c.oh = c.ow = 0;
  for (const DirectConv::Phase& p : c.phases) {
    pad_h = std::max(pad_h, p.pad_h), pad_w = std::max(pad_w, p.pad_w);
    below = std::max(below, i64(p.kh) - 1 - p.pad_h), right = std::max(right, i64(p.kw) - 1 - p.pad_w);
    c.oh = std::max(c.oh, p.oh), c.ow = std::max(c.ow, p.ow);
  }
  c.pad_h = pad_h, c.pad_w = pad_w;
  c.kh = static_cast<std::size_t>(pad_h + below + 1), c.kw = static_cast<std::size_t>(pad_w + right + 1);
  c.stride_h = c.stride_w = c.dil_h = c.dil_w = 1;
  for (DirectConv::Phase& p : c.phases)
    p.row_off = static_cast<std::size_t>(pad_h - p.pad_h), p.col_off = static_cast<std::size_t>(pad_w - p.pad_w);
}

bool direct_backward_data_applies(const Handle& h, const ConvShape& s, const View4& dy, const View4& w,
                                  const View4& dx) {
  if (s.groups != 1 || s.c == 0 || s.oc == 0) return false;
  if (backward_data_phases(s).empty()) return false;
  if (!gemm::device_model(h, s.dtype).on_tfu()) return false;
  const bool dy_nhwc = dy.strides[1] == 1 || s.oc == 1;
  const bool w_ci = w.strides[1] == 1 || s.c == 1;
  const bool dx_nhwc =
      (dx.strides[1] == 1 || s.c == 1) && (s.h == 1 || s.w == 1 || dx.strides[2] == i64(s.w) * dx.strides[3]);
  return dy_nhwc && w_ci && dx_nhwc;
}

namespace {
// A core's share of a job's pixel tiles in the planner: how many, and how many of them are an
// image's last band.
struct CoreShare {
  std::size_t tiles = 0, lasts = 0;
  bool operator==(const CoreShare& o) const { return tiles == o.tiles && lasts == o.lasts; }
};
}  // namespace

DirectPlan plan_direct(const Handle& h, const DirectConv& c, std::size_t max_clusters) {
  const gemm::DeviceModel d = gemm::device_model(h, c.dtype);
  DirectPlan best;
  if (!d.on_tfu() || c.n * c.oh * c.ow * c.oc * c.c == 0) return best;
  if (c.w_k_major ? c.ws_o != 1 && c.oc > 1 : c.ws_c != 1 && c.c > 1) return best;  // layouts the staging cannot copy
  if (!c.phases.empty() && !c.w_k_major) return best;
  const Geometry g(c);
  const bool phased = !c.phases.empty();
  const std::vector<PhaseRun> runs = phase_runs(c, g, 0);  // its phases, or itself as one
  // Pixels of a tile of `rows` rows (ni images), each phase at most its own rows: the OW kept per
  // row, or (computed) every column its intrinsic writes, which the epilogue's passes run over.
  auto tile_px = [&](std::size_t rows, std::size_t ni, bool computed) {
    double px = 0;
    for (const PhaseRun& r : runs)
      px += static_cast<double>(ni * std::min(rows, r.ph.oh) * (computed ? r.cols : r.ph.ow));
    return px;
  };
  // The plan's clusters, and every core of the device loading DRAM at once (a budget of clusters
  // shares the device with the convolutions on the others).
  const std::size_t cores = d.cores_per_cluster, all_cores = cores * d.clusters;
  const std::size_t clusters = max_clusters > 0 ? std::min<std::size_t>(max_clusters, d.clusters) : d.clusters;
  const double w_bytes = static_cast<double>(c.oc * g.taps * c.c * g.es);
  const double y_bytes = tile_px(c.oh, 1, false) * static_cast<double>(c.n * c.oc * g.es);
  const double x_bytes = static_cast<double>(c.n * c.h * c.w * c.c * g.es);
  // Output-channel chunks: whole TFU columns (the last may be partial), up to all of OC, and OC
  // cut into q equal chunks (q up to 64).
  std::vector<std::size_t> ncos;
  for (std::size_t k = 1;; ++k) {
    const std::size_t v = std::min(c.oc, k * d.tfu_cols);
    ncos.push_back(v);
    if (v == c.oc || ncos.size() >= 64) break;
  }
  for (std::size_t q = 2; q <= 64 && q <= c.oc; ++q) ncos.push_back(ceil_div(c.oc, q));
  std::sort(ncos.begin(), ncos.end());
  ncos.erase(std::unique(ncos.begin(), ncos.end()), ncos.end());
  std::vector<std::size_t> ccs;
  for (std::size_t v = c.c; v >= 1; --v)
    if (c.c % v == 0 && c.c / v <= 64) ccs.push_back(v);
  const double io_rate = d.io_dma_bpc, dram = d.dram_bpc, noc = d.noc_bpc;
  // The distinct (tiles, last bands) shares of the cores with tiles, over the kernel's split of
  // `tiles` (tb bands an image, image-major) into gp jobs and each job's over the cluster's cores:
  // a core's tiles t0 .. t1 - 1 hold t1 / tb - t0 / tb last bands (t mod tb == tb - 1). Cached:
  // the candidates of every output-channel chunk and Cin chunk share them.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::vector<CoreShare>> shares_cache;
  auto core_shares = [&](std::size_t tiles, std::size_t tb, std::size_t gp) -> const std::vector<CoreShare>& {
    auto [it, fresh] = shares_cache.try_emplace({tiles, tb, gp});
    if (!fresh) return it->second;
    for (std::size_t k = 0; k < gp; ++k) {
      const Span jt = split_units(tiles, gp, 1, k);
      for (std::size_t core = 0; core < cores; ++core) {
        const Span ct = split_units(jt.size, cores, 1, core);
        if (ct.size == 0) continue;
        const std::size_t t0 = jt.begin + ct.begin, t1 = t0 + ct.size;
        const CoreShare sh{ct.size, t1 / tb - t0 / tb};
        if (std::find(it->second.begin(), it->second.end(), sh) == it->second.end()) it->second.push_back(sh);
      }
    }
    return it->second;
  };
  for (std::size_t nco : ncos) {
    const std::size_t q = ceil_div(c.oc, nco);
    if (sram_bytes(c, g, nco) > d.sram_bytes) continue;
    for (std::size_t cc : ccs) {
      const std::size_t qc = c.c / cc;
      // Output-channel pieces (single Cin chunk, nothing for the epilogue to add): whole TFU
      // column folds, so a piece's intrinsic wastes no more columns than the chunk's would.
      std::vector<std::size_t> pss{nco};
      if (qc == 1 && direct_out(c, 1) && !phased)
        for (std::size_t v = d.tfu_cols; v < nco; v += d.tfu_cols) pss.push_back(v);
      for (std::size_t ps : pss) {
        const CoreBuffers b1 = core_buffers(c, g, 1, 1, nco, cc, ps, d.wram_bytes);
        if (b1.wram() > d.wram_bytes) continue;
        const bool pw = ps < nco;
        const std::size_t nu = pw ? ceil_div(nco, ps) : qc;  // weight units (WRAM slots when resident)
        const double chunk = static_cast<double>(nco * g.taps * cc * g.es);
        const double unit = pw ? static_cast<double>(ps * g.taps * c.c * g.es) : chunk;  // a unit's weights
        const std::size_t gq = pw || c.w_k_major ? 1 : stage_group(c, d.config, nco, cc);
        // The staging copy's contiguous runs, each moved in whole DMA bursts: a unit's output
        // channels (depth-major), or its wg input channels of a tap (all taps when they follow
        // each other).
        const std::size_t wg = pw ? c.c : gq * cc;
        const std::size_t stage_run =
            c.w_k_major ? (pw ? ps : nco) * g.es : (c.ws_tap() == i64(wg) ? g.taps : 1) * wg * g.es;
        const double stage_eff =
            static_cast<double>(d.whole_bursts(stage_run)) / static_cast<double>(stage_run);
        // SRAM -> WRAM copy of `bytes` of a unit's weights, the cluster's cores sharing the SRAM port.
        auto copy_w = [&](double bytes) {
          return d.move_latency_cycles + std::max(bytes / d.move_dma_bpc, bytes * cores / d.sram_bpc);
        };
        const double w_copy = copy_w(unit);
        const std::size_t seg = (c.xs_w == i64(cc) ? g.count * cc : cc) * g.es;
        const double seg_eff = static_cast<double>(d.whole_bursts(seg));
        // Reading x moves whole DMA bursts: a run of cc < C channels a pixel costs its bytes
        // rounded up to bursts at the DRAM and the NoC too (one run a row when cc == C).
        const double x_burst = seg_eff / static_cast<double>(seg);
        const bool direct = direct_out(c, qc);
        // Input tiles read runs of cc channels a pixel apart (one run per row when cc == C).
        const double x_skew =
            seg == g.count * cc * g.es
                ? 1.0
                : channel_skew(d.config, cc * g.es, static_cast<std::uint64_t>(c.xs_w) * g.es, g.count);
        // Bands of rh rows of one image, then (stride 1) tiles of ni whole images.
        for (std::size_t opt = 1; opt < c.oh + c.n; ++opt) {
          const std::size_t rh = std::min(opt, c.oh), ni = opt > c.oh ? opt - c.oh + 1 : 1;
          if (ni > 1 && (c.stride_h != 1 || phased)) break;
          const CoreBuffers b = core_buffers(c, g, rh, ni, nco, cc, ps, d.wram_bytes);
          if (b.nram() > d.nram_bytes) break;
          const std::size_t tb = ceil_div(c.oh, rh), tiles = ceil_div(c.n, ni) * tb;
          // One input tile's DMA: IO-DMA rate, or the core's share of DRAM when all cores load
          // (`readers` cores reading each tile at the same time, the L2 serving all but the first),
          // or its share of the NoC/L2 stage every read crosses.
          auto x_dma = [&](std::size_t rows, double readers) {
            const double in_rows = static_cast<double>(g.tile_in_rows(c, rows, ni));
            const double segs = in_rows * (seg == g.count * cc * g.es ? 1 : g.count);
            const double bytes = in_rows * static_cast<double>(g.count * cc * g.es) * x_burst;
            return d.io_latency_cycles + std::max({segs * seg_eff / io_rate, bytes * all_cores * x_skew / dram / readers,
                                                   bytes * all_cores / noc});
          };
          // A tile's epilogue: VFU passes over the fp32 tile (bias, affine, activation, rounding), in series
          // with the TFU; its store overlaps the next tile.
          auto epilogue = [&](std::size_t rows) {
            if (direct) return 0.0;
            const double n = tile_px(rows, ni, true) * static_cast<double>(nco);
            const int passes =
                (c.out.bias ? 1 : 0) + (c.out.affine.enabled ? 2 : 0) + (c.out.act != Activation::kNone ? 2 : 0) + 1;
            return passes * static_cast<double>(d.vfu_cycles_fp32(static_cast<std::uint64_t>(n)));
          };
          // A core's store of a tile, `storers` cores storing at once (the last tiles: the plan's
          // cores; the convolutions of the other clusters, if any, end at other times).
          auto store = [&](std::size_t rows, double storers) {
            const double bytes = tile_px(rows, ni, false) * static_cast<double>(nco * g.es);
            return d.io_latency_cycles + std::max(bytes / io_rate, bytes * storers / dram);
          };
          auto tile_cycles = [&](std::size_t rows, double readers) {
            const std::size_t m = g.tile_out_rows(c, rows, ni) * c.ow;
            if (pw) {  // one input tile, then one intrinsic per piece
              double sum = 0;
              for (std::size_t u = 0; u * ps < nco; ++u) {
                const double tfu = static_cast<double>(d.conv_cycles(m, g.taps, cc, std::min(ps, nco - u * ps)));
                sum += std::max({tfu, u == 0 ? x_dma(rows, readers) : 0.0, b.resident ? 0.0 : w_copy});
              }
              return sum;
            }
            // One intrinsic, or one per phase (whole input-tile rows: Wp - kw + 1 columns each),
            // the phases issued back to back on the step's input: all but the first chained.
            double tfu = 0;
            if (!phased) tfu = static_cast<double>(d.conv_cycles(m, g.taps, cc, nco));
            else
              for (std::size_t i = 0; i < runs.size(); ++i) {
                const PhaseRun& r = runs[i];
                const std::size_t px = std::min(rows, r.ph.oh) * r.cols, taps = r.ph.kh * r.ph.kw;
                tfu += static_cast<double>(i == 0 ? d.conv_cycles(px, taps, cc, nco)
                                                  : d.conv_chained_cycles(px, taps, cc, nco));
              }
            const double step = std::max({tfu, x_dma(rows, readers), b.resident ? 0.0 : w_copy});
            return static_cast<double>(qc) * step + epilogue(rows);
          };
          const double full_alone = tile_cycles(rh, 1), full_shared = tile_cycles(rh, static_cast<double>(q));
          // An image's last band holds the rows left over (OH mod rh), at its own cost.
          const std::size_t last_rows = c.oh - (tb - 1) * rh;
          const double last_alone = last_rows < rh ? tile_cycles(last_rows, 1) : full_alone;
          const double last_shared = last_rows < rh ? tile_cycles(last_rows, static_cast<double>(q)) : full_shared;
          // The last intrinsic in two parts (split_last): the first part's epilogue and store,
          // half the tile's, hide behind the second part's intrinsic, for one more intrinsic's
          // fill and drain. Decided on that difference alone.
          bool split_last = false;
          if (!pw && (ni > 1 || rh > 1) && !phased) {
            auto conv_m = [&](std::size_t m) { return static_cast<double>(d.conv_cycles(m, g.taps, cc, nco)); };
            const std::size_t ma = ni > 1 ? g.tile_out_rows(c, rh, ni / 2) : rh / 2;
            const std::size_t mb = ni > 1 ? g.tile_out_rows(c, rh, ni - ni / 2) : rh - rh / 2;
            const double extra = conv_m(ma * c.ow) + conv_m(mb * c.ow) - conv_m(g.tile_out_rows(c, rh, ni) * c.ow);
            split_last = std::min((epilogue(rh) + store(rh, static_cast<double>(clusters * cores))) / 2,
                                  conv_m(mb * c.ow)) > extra;
          }
          for (std::size_t gp = 1; gp <= clusters && gp <= tiles; ++gp) {
            const std::size_t jobs = q * gp, used = std::min(jobs, clusters);
            // All jobs in one round on an L2 chip: the q chunks' jobs over the same pixels read the
            // same input tiles at about the same time, and the L2 serves all but the first read.
            const bool l2_shares_x = d.config.l2_cache && jobs <= clusters;
            const double full = l2_shares_x ? full_shared : full_alone, last = l2_shares_x ? last_shared : last_alone;
            // Before the first intrinsic: chunk 0 staged by the memory core (every cluster's at once)
            // and copied to WRAM, or the first input tile, whichever is later; after the last: its store.
            const double group = pw ? unit : chunk * static_cast<double>(gq);
            // Every cluster of the launch stages at once: the plan's, or (a budget of clusters)
            // the device's, the other convolutions staging theirs.
            const double stagers = static_cast<double>(max_clusters > 0 ? d.clusters : used);
            auto stage = [&](double bytes) {
              return d.io_latency_cycles + stage_eff * std::max(bytes / d.memcore_dma_bpc, bytes * stagers / dram);
            };
            // Resident weights arrive unit by unit during a core's first two tiles (order_steps):
            // unit 0 with staging group 0 before the first intrinsic (below), each later unit
            // copied to WRAM, and each later group staged, while the TFU runs on the units before
            // it, so the steps on units 0 .. nu - 2 take at least the feed of the others.
            const double fed = static_cast<double>(nu - 1);
            const double later_groups = static_cast<double>(nu / gq - 1);
            const double feed = b.resident ? std::max(fed * w_copy, later_groups * stage(group)) : 0.0;
            // The busiest core: its contiguous share of a job's tiles (the kernel's split), the
            // images' last bands among them at their own cost, the TFU steps of its first two
            // tiles no shorter than the weights' feed. (The last tile of a batch not a multiple
            // of ni holds fewer images; counted whole.)
            std::size_t per_core = 0;
            double busy = 0;
            for (const CoreShare& sh : core_shares(tiles, tb, gp)) {
              const double own = static_cast<double>(sh.tiles - sh.lasts) * full + static_cast<double>(sh.lasts) * last;
              const double first_steps = static_cast<double>(std::min<std::size_t>(2, sh.tiles)) *
                                         (full - epilogue(rh)) * fed / static_cast<double>(nu);
              per_core = std::max(per_core, sh.tiles);
              busy = std::max(busy, own + std::max(0.0, feed - first_steps));
            }
            // Group 0 whole, or (split0) in halves: the first half's WRAM copy runs while the
            // second half stages.
            const double whole0 = stage(group) + w_copy;
            const double split0 = stage(group / 2) + std::max(stage(group / 2), copy_w(unit / 2)) + copy_w(unit / 2);
            const bool halves = !pw && nco > 1 && split0 < whole0;
            const double readers = l2_shares_x ? static_cast<double>(q) : 1.0;
            // The tilings are compared with group 0 whole (with halves the comparison picked
            // tilings that ran slower: 69 ResNet-50 convolutions 4074 us against 4058); split0 is
            // then decided for the chosen one alone.
            const double job_cycles =
                std::max(whole0, x_dma(rh, readers)) + busy + store(rh, static_cast<double>(used * cores));
            const double compute = static_cast<double>(ceil_div(jobs, used)) * job_cycles;
            const double halo = static_cast<double>(g.in_h(c, rh)) / static_cast<double>(rh * c.stride_h);
            // The weights stay counted per job: counting them once too (the gp jobs of a chunk
            // stage the same groups at about the same time) made the planner prefer more pixel
            // ranges per chunk, plans that the simulation ran slower (ResNet-50 b8 forward and
            // backward-data, 46 convolutions: 2332 us against 2317 counting the input only).
            const double x_reads = x_bytes * std::max(1.0, halo) * x_burst;
            const double reads = static_cast<double>(gp) * w_bytes + static_cast<double>(q) * x_reads;
            const double dram_bytes =
                (l2_shares_x ? reads - static_cast<double>(q - 1) * x_reads : reads) + y_bytes;
            const double est = std::max({compute, dram_bytes / dram, (reads + y_bytes) / noc});
            if (best.rh == 0 || est < best.est_cycles * 0.999 ||
                (est <= best.est_cycles * 1.001 && dram_bytes < best.est_dram_bytes)) {
              best.rh = rh, best.ni = ni, best.nco = nco, best.ps = ps, best.cc = cc, best.gp = gp;
              best.q = q, best.qc = qc, best.gq = gq, best.tb = tb, best.jobs = jobs, best.clusters = used;
              // Only where the start matters: a plan bound by DRAM or the NoC gains nothing from an
              // earlier first intrinsic and pays the extra barrier's round trip; nor does a core of
              // one tile with several staging groups, whose first intrinsic waits for group 1 to be
              // staged (its second step is on chunk 1).
              best.split0 = halves && compute >= est && (per_core >= 2 || qc / gq == 1);
              best.split_last = split_last;
              best.est_cycles = est, best.est_dram_bytes = dram_bytes;
            }
          }
        }
      }
    }
  }
  return best;
}

namespace {
// What every launch checks of a plan: it exists, and a phased convolution's is one it can run.
Status check_direct_plan(const std::string& name, const DirectConv& conv, const DirectPlan& plan) {
  MLU_CHECK(plan.rh > 0, Status::kNotSupported, name + ": no direct-convolution tiling fits this device");
  MLU_CHECK(conv.phases.empty() || (conv.w_k_major && plan.ni == 1 && plan.ps == plan.nco && !plan.split_last),
            Status::kInternalError,
            name + ": a phased convolution needs depth-major weights and a plan of one image a tile, whole "
                   "output-channel chunks and no split last intrinsic (" + plan.str() + ")");
  return Status::kSuccess;
}
}  // namespace

Status launch_direct(Handle& h, const std::string& name, const DirectConv& conv, const DirectPlan& plan,
                     std::uint32_t* kernels) {
  *kernels = 0;
  MLU_RETURN_IF_ERROR(check_direct_plan(name, conv, plan));
  auto job = std::make_shared<const DirectConv>(conv);
  auto pl = std::make_shared<const DirectPlan>(plan);
  const unsigned cpc = h.cores_per_cluster();
  MLU_RETURN_IF_ERROR(launch(
      h, name,
      [job, pl] { DirectRun(*job, *pl).run(task_id() / core_dim()); },
      cnrtDim3_t{static_cast<unsigned>(plan.clusters) * cpc, 1, 1}, cnrtFuncTypeUnion1));
  *kernels = 1;
  return Status::kSuccess;
}

Status launch_direct_concurrent(Handle& h, const std::string& name, const std::vector<DirectConv>& convs,
                                const std::vector<DirectPlan>& plans, std::uint32_t* kernels) {
  *kernels = 0;
  MLU_CHECK(convs.size() == plans.size() && !convs.empty(), Status::kInternalError,
            name + ": one plan per convolution");
  std::size_t total = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    MLU_RETURN_IF_ERROR(check_direct_plan(name, convs[i], plans[i]));
    total += plans[i].clusters;
  }
  MLU_CHECK(total <= h.clusters(), Status::kInternalError,
            name + ": " + std::to_string(total) + " clusters planned on a device of " + std::to_string(h.clusters()));
  auto jobs = std::make_shared<const std::vector<DirectConv>>(convs);
  auto pls = std::make_shared<const std::vector<DirectPlan>>(plans);
  MLU_RETURN_IF_ERROR(launch(
      h, name,
      [jobs, pls] {
        std::size_t cluster = task_id() / core_dim(), i = 0;
        while (cluster >= (*pls)[i].clusters) cluster -= (*pls)[i++].clusters;  // the convolution of this cluster
        DirectRun((*jobs)[i], (*pls)[i]).run(cluster);
      },
      cnrtDim3_t{static_cast<unsigned>(total * h.cores_per_cluster()), 1, 1}, cnrtFuncTypeUnion1));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
