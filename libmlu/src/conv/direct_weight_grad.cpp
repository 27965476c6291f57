#include "conv/direct_weight_grad.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "gemm/operands.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;
using gemm::Span;
using gemm::split_units;

namespace {

// What planner and kernel derive alike from the convolution (the forward's input-tile geometry).
struct Geometry {
  std::size_t taps = 1, es = 4;
  std::size_t wp = 0;     // input tile width: (OW - 1) * stride + dilated kernel width
  std::size_t count = 0;  // input columns copied into a tile row, from tile column pad_w on
  explicit Geometry(const WeightGradConv& c) {
    taps = c.kh * c.kw;
    es = sim::dtype_size(c.dtype);
    wp = (c.ow - 1) * c.stride_w + c.dil_w * (c.kw - 1) + 1;
    const std::int64_t room = i64(wp) - c.pad_w;
    count = room > 0 ? std::min<std::size_t>(c.w, static_cast<std::size_t>(room)) : 0;
  }
  std::size_t in_h(const WeightGradConv& c, std::size_t rows) const {
    return (rows - 1) * c.stride_h + c.dil_h * (c.kh - 1) + 1;
  }
  // Input rows of one image's block in a tile (a tile of ni > 1 images holds whole images).
  std::size_t block_rows(const WeightGradConv& c, std::size_t rh, std::size_t ni) const {
    return in_h(c, ni > 1 ? c.oh : rh);
  }
};

// On-chip bytes of one compute core's buffers for a plan.
struct CoreBuffers {
  std::size_t acc = 0, dy = 0, xslot = 0, sbuf = 0;  // NRAM (dy and xslot twice)
  std::size_t xt = 0;                               // WRAM (twice)
  std::size_t nram() const { return acc + 2 * dy + 2 * xslot + sbuf; }
  std::size_t wram() const { return 2 * xt; }
};
// resident (WeightGradPlan::resident): a group's sums in the dtype too.
CoreBuffers core_buffers(const WeightGradConv& c, const Geometry& g, std::size_t ocb, std::size_t cb, std::size_t tg,
                         std::size_t rh, std::size_t ni, bool resident = false) {
  CoreBuffers b;
  if (resident && g.es != 4) b.sbuf = up128(ocb * tg * cb * g.es);  // fp32 sums are stored as they are
  const std::size_t p = ni * rh * c.ow;
  b.acc = up128(g.taps * ocb * cb * 4);
  b.dy = up128(p * ocb * g.es);
  b.xslot = up128(std::max(ni * g.block_rows(c, rh, ni) * g.wp * cb * g.es, cb * 4));  // also reduction scratch
  b.xt = up128(p * tg * cb * g.es);
  return b;
}

// Whether a job of `on` output channels stores each tap group's sums ([on, width]: width = taps in
// the group x input channels) as soon as they are final (WeightGradRun::accumulate): no reduction
// over cores (s == 1), and one group's sums, cast to the dtype (es bytes), fit an input slot of
// `xslot` bytes, the cast's scratch.
bool stores_groups_early(std::size_t s, std::size_t on, std::size_t width, std::size_t es, std::size_t xslot) {
  return s == 1 && on * width * es <= xslot;
}

// Calls f(i, a, e) for each image i of a tile of `ni` images of `per` units each (rows, pixels)
// that piece `piece` of `pieces` reaches (the tile's units split evenly, in order), [a, e) being
// the piece's units in image i, counted from the image's first.
template <class F>
void for_each_image_part(std::size_t ni, std::size_t per, std::size_t piece, std::size_t pieces, F&& f) {
  const Span mine = split_units(ni * per, pieces, 1, piece);
  for (std::size_t i = 0; i < ni; ++i) {
    const std::size_t a = std::max(mine.begin, i * per), e = std::min(mine.begin + mine.size, (i + 1) * per);
    if (a < e) f(i, a - i * per, e - i * per);
  }
}

// Bytes of one SRAM slot of a shared input tile: [ni][block rows][W][cb].
std::size_t sram_slot_bytes(const WeightGradConv& c, const Geometry& g, std::size_t cb, std::size_t rh,
                            std::size_t ni) {
  return up128(ni * g.block_rows(c, rh, ni) * c.w * cb * g.es);
}

// ---- the kernel ----

class WeightGradRun {
 public:
  WeightGradRun(const WeightGradConv& c, const WeightGradPlan& p) : c_(c), p_(p), g_(c) {}

  void run() {
    const CoreBuffers b = core_buffers(c_, g_, p_.ocb, p_.cb, p_.tg, p_.rh, p_.ni, p_.resident);
    // SRAM first, in the same order on every participant: the cores' partial sums (s > 1).
    if (p_.s > 1) parts_ = alloc(Space::kSram, core_dim() * b.acc);
    if (p_.shared)
      for (Addr& a : xsram_) a = alloc(Space::kSram, sram_slot_bytes(c_, g_, p_.cb, p_.rh, p_.ni));
    const std::size_t cores = p_.clusters * core_dim();
    if (is_memory_core()) {  // stages shared input tiles; takes part in the reduction barriers
      const std::size_t first = (task_id() / core_dim()) * core_dim();
      for (std::size_t r = 0; r < p_.rounds; ++r) {
        if (p_.s > 1) sync_cluster(), sync_cluster();
        if (!p_.shared || r * cores + first >= p_.jobs) continue;
        const Job j = job(r * cores + first);
        const std::vector<Tile> tiles = job_tiles(j);
        for (std::size_t t = 0; t < tiles.size(); ++t) {
          stage_x(j, tiles[t], xsram_[t % 2]);
          sync_io();
          sync_cluster();  // tile t is in SRAM; every core is done copying tile t - 1
        }
        sync_cluster();  // the cores are done with the job's SRAM
      }
      return;
    }
    acc_ = alloc(Space::kNram, b.acc);
    for (Addr& a : dy_) a = alloc(Space::kNram, b.dy);
    if (b.sbuf) sbuf_ = alloc(Space::kNram, b.sbuf);
    for (Addr& a : xs_) a = alloc(Space::kNram, b.xslot);
    for (Addr& a : xt_) a = alloc(Space::kWram, b.xt);
    xslot_ = b.xslot, acc_bytes_ = b.acc;
    const std::size_t core = (task_id() / core_dim()) * core_dim() + core_id();
    for (std::size_t r = 0; r < p_.rounds; ++r) {
      const std::size_t k = r * cores + core;
      Job j;
      bool stored = false;
      if (k < p_.jobs) {
        j = job(k);
        stored = accumulate(j);  // s == 1: stored to dW; s > 1: copied to SRAM
        if (p_.shared) sync_cluster();  // done with the job's SRAM
      }
      if (p_.s == 1) {
        if (k < p_.jobs && !stored) store_rows(j, acc_, 0, g_.taps * j.on, true);
        sync_io();
        continue;
      }
      if (k < p_.jobs && !stored) memcpy_async(own_part(), acc_, g_.taps * j.on * j.cn * 4, Dir::kNram2Sram);
      sync_io();
      sync_cluster();  // every core's partial sums are in SRAM
      if (k < p_.jobs) reduce_and_store(j);
      sync_io();
      sync_cluster();  // done reading SRAM
    }
  }

 private:
  struct Job {
    std::size_t o0 = 0, on = 0, c0 = 0, cn = 0, part = 0;
    Span tiles;
  };
  Job job(std::size_t k) const {
    Job j;
    const std::size_t b = k / p_.s;
    j.part = k % p_.s;
    // Shared input tiles: consecutive blocks (a cluster's cores) differ in output channels only.
    const std::size_t ob = p_.shared ? b % p_.nob : b / p_.ncb, cbi = p_.shared ? b / p_.nob : b % p_.ncb;
    j.o0 = ob * p_.ocb, j.on = std::min(p_.ocb, c_.oc - j.o0);
    j.c0 = cbi * p_.cb, j.cn = std::min(p_.cb, c_.c - j.c0);
    j.tiles = split_units(p_.tiles, p_.s, 1, j.part);
    return j;
  }

  // Tile t: images [n, n + ni), output rows [oy0, oy0 + rows) of each.
  struct Tile {
    std::size_t n = 0, ni = 1, oy0 = 0, rows = 0;
    std::size_t pixels(const WeightGradConv& c) const { return ni * rows * c.ow; }
  };
  Tile tile(std::size_t t) const {
    Tile r;
    r.n = (t / p_.tb) * p_.ni;
    r.ni = std::min(p_.ni, c_.n - r.n);
    r.oy0 = (t % p_.tb) * p_.rh;
    r.rows = std::min(p_.rh, c_.oh - r.oy0);
    return r;
  }
  // A job's tiles in order, the first cut in two halves (its images, else its rows) so that the
  // loads before the first matmul are half a tile's; the second half loads during the first.
  std::vector<Tile> job_tiles(const Job& j) const {
    std::vector<Tile> v;
    for (std::size_t t = 0; t < j.tiles.size; ++t) v.push_back(tile(j.tiles.begin + t));
    if (!p_.half_first || v.empty() || (v[0].ni == 1 && v[0].rows == 1)) return v;
    Tile a = v[0], b = v[0];
    if (a.ni > 1)
      a.ni /= 2, b.n = a.n + a.ni, b.ni -= a.ni;
    else
      a.rows /= 2, b.oy0 += a.rows, b.rows -= a.rows;
    v[0] = a;
    v.insert(v.begin() + 1, b);
    return v;
  }

  // Piece `piece` of `pieces` of tile t's input rows (channels [c0, c0 + cn)) into an NRAM slot
  // laid out [ni][block rows][Wp][cn]; rows outside the image are zero-filled.
  // With `shared`, the rows come from the memory core's SRAM copy of the tile (stage_x).
  void load_x(const Job& j, const Tile& t, Addr slot, std::size_t piece, std::size_t pieces,
              const Addr* staged = nullptr) const {
    const std::size_t bh = g_.in_h(c_, t.rows), row_bytes = g_.wp * j.cn * g_.es;
    // Image i's block rows [a, e) of the piece.
    for_each_image_part(t.ni, bh, piece, pieces, [&](std::size_t i, std::size_t a, std::size_t e) {
      const std::int64_t iy0 = i64(t.oy0 * c_.stride_h) - c_.pad_h;  // input row of block row 0
      const std::int64_t lo = std::clamp<std::int64_t>(-iy0, i64(a), i64(e));
      const std::int64_t hi = std::clamp<std::int64_t>(i64(c_.h) - iy0, lo, i64(e));
      const Addr blk = slot.offset(i64(i * bh) * i64(row_bytes));
      if (lo > i64(a))
        vec_fill(c_.dtype, blk.offset(i64(a) * i64(row_bytes)), 0.0, static_cast<std::size_t>(lo - i64(a)) * g_.wp * j.cn);
      if (hi < i64(e))
        vec_fill(c_.dtype, blk.offset(hi * i64(row_bytes)), 0.0, static_cast<std::size_t>(i64(e) - hi) * g_.wp * j.cn);
      if (hi == lo || g_.count == 0) return;
      const std::size_t rows = static_cast<std::size_t>(hi - lo);
      const Addr dst = blk.offset(lo * i64(row_bytes) + c_.pad_w * i64(j.cn * g_.es));
      if (staged) {  // SRAM rows [i][block row][W][cn]
        const std::size_t sram_row = c_.w * j.cn * g_.es;
        memcpy_strided_async(dst, staged->offset(i64((i * bh + static_cast<std::size_t>(lo)) * sram_row)),
                             CopyShape{g_.count * j.cn * g_.es, rows, i64(row_bytes), i64(sram_row)}, Dir::kSram2Nram);
        return;
      }
      const std::int64_t src_el = i64(t.n + i) * c_.xs_n + (iy0 + lo) * c_.xs_h + i64(j.c0);
      const Addr src{Space::kGdram, c_.x_base + static_cast<std::uint64_t>(src_el * i64(g_.es))};
      const std::size_t run = j.cn * g_.es;
      CopyShape s;
      if (c_.xs_w == i64(j.cn) || g_.count == 1)
        s = CopyShape{g_.count * run, rows, i64(row_bytes), c_.xs_h * i64(g_.es)};
      else
        s = CopyShape{run, g_.count, i64(run), c_.xs_w * i64(g_.es), rows, i64(row_bytes), c_.xs_h * i64(g_.es)};
      memcpy_strided_async(dst, src, s, Dir::kGdram2Nram);
    });
  }

  // Memory core: tile t's input rows inside the image (channels [c0, c0 + cn)) into an SRAM slot
  // laid out [ni][block rows][W][cn].
  void stage_x(const Job& j, const Tile& t, Addr slot) const {
    const std::size_t bh = g_.in_h(c_, t.rows), sram_row = c_.w * j.cn * g_.es, run = j.cn * g_.es;
    if (g_.count == 0) return;
    for (std::size_t i = 0; i < t.ni; ++i) {
      const std::int64_t iy0 = i64(t.oy0 * c_.stride_h) - c_.pad_h;
      const std::int64_t lo = std::clamp<std::int64_t>(-iy0, 0, i64(bh));
      const std::int64_t hi = std::clamp<std::int64_t>(i64(c_.h) - iy0, lo, i64(bh));
      if (hi == lo) continue;
      const std::size_t rows = static_cast<std::size_t>(hi - lo);
      const Addr dst = slot.offset(i64((i * bh + static_cast<std::size_t>(lo)) * sram_row));
      const std::int64_t src_el = i64(t.n + i) * c_.xs_n + (iy0 + lo) * c_.xs_h + i64(j.c0);
      const Addr src{Space::kGdram, c_.x_base + static_cast<std::uint64_t>(src_el * i64(g_.es))};
      CopyShape s;
      if (c_.xs_w == i64(j.cn) || g_.count == 1)
        s = CopyShape{g_.count * run, rows, i64(sram_row), c_.xs_h * i64(g_.es)};
      else
        s = CopyShape{run, g_.count, i64(run), c_.xs_w * i64(g_.es), rows, i64(sram_row), c_.xs_h * i64(g_.es)};
      memcpy_strided_async(dst, src, s, Dir::kGdram2Sram);
    }
  }

  // Piece `piece` of `pieces` of tile t's dY (its pixels in order), channels [o0, o0 + on), into
  // the NRAM slot `dy` as [P][on] (P = the tile's pixels in order): the matmul's A = dY^T[on, P]
  // stored depth-major.
  void load_dy(const Job& j, const Tile& t, std::size_t piece, std::size_t pieces, Addr dy) const {
    const std::size_t px = t.rows * c_.ow, run = j.on * g_.es;
    // Image i's pixels [a, e) of the piece.
    for_each_image_part(t.ni, px, piece, pieces, [&](std::size_t i, std::size_t a, std::size_t e) {
      const std::int64_t src_el = i64(t.n + i) * c_.ys_n + i64(t.oy0 * c_.ow + a) * c_.ys_w + i64(j.o0);
      const Addr src{Space::kGdram, c_.dy_base + static_cast<std::uint64_t>(src_el * i64(g_.es))};
      const CopyShape s = c_.ys_w == i64(j.on) ? CopyShape{(e - a) * run, 1, 0, 0}
                                               : CopyShape{run, e - a, i64(run), c_.ys_w * i64(g_.es)};
      memcpy_strided_async(dy.offset(i64((i * px + a) * run)), src, s, Dir::kGdram2Nram);
    });
  }

  std::size_t groups() const { return ceil_div(g_.taps, p_.tg); }
  // Tap group grp's fp32 sums in the accumulator: [on, group taps x cn] after the groups before it.
  Addr group_sums(const Job& j, std::size_t grp) const { return acc_.offset(i64(grp * p_.tg * j.on * j.cn * 4)); }
  std::size_t group_taps(std::size_t grp) const { return std::min(p_.tg, g_.taps - grp * p_.tg); }

  // Tap group `grp`'s windows of tile t side by side, [P][group taps][cn] (the matmul's B, N =
  // group taps x cn), from the NRAM input tile into a WRAM slot.
  void copy_group(const Job& j, const Tile& t, Addr slot, std::size_t grp, Addr dst) const {
    const std::size_t gs = group_taps(grp);
    for (std::size_t k = 0; k < gs; ++k) copy_tap(j, t, slot, grp * p_.tg + k, gs, dst.offset(i64(k * j.cn * g_.es)));
  }

  // Tap (ky, kx)'s window of tile t, X_t[P][cn], into WRAM at `dst`, pixels `gs` x cn elements apart.
  void copy_tap(const Job& j, const Tile& t, Addr slot, std::size_t tap, std::size_t gs, Addr dst) const {
    const std::size_t ky = tap / c_.kw, kx = tap % c_.kw, bh = g_.in_h(c_, t.rows);
    const std::size_t pix = j.cn * g_.es, row_bytes = g_.wp * pix, out_row = c_.ow * pix * gs;
    const Addr src = slot.offset(i64((ky * c_.dil_h * g_.wp + kx * c_.dil_w) * pix));
    if (c_.stride_w == 1 && gs == 1) {  // a run of OW pixels per output row
      memcpy_strided_async(dst, src,
                           CopyShape{out_row, t.rows, i64(out_row), i64(c_.stride_h * row_bytes), t.ni,
                                     i64(t.rows * out_row), i64(bh * row_bytes)},
                           Dir::kNram2Wram);
      return;
    }
    for (std::size_t i = 0; i < t.ni; ++i)  // a run of cn per pixel
      memcpy_strided_async(dst.offset(i64(i * t.rows * out_row)), src.offset(i64(i * bh * row_bytes)),
                           CopyShape{pix, c_.ow, i64(gs * pix), i64(c_.stride_w * pix), t.rows, i64(out_row),
                                     i64(c_.stride_h * row_bytes)},
                           Dir::kNram2Wram);
  }

  // acc[group][on, group taps x cn] = sum over the job's tiles of dY^T x [X_tap ...] (the group's
  // windows side by side; dY [P, on] is the matmul's A stored depth-major). Tile i's dY is in
  // dy_[i % 2]. Steps (tile, group) in order; the next step's window copies, and (one
  // piece per group but the last) the next tile's loads, run during the current step's matmul;
  // one sync per step. A group's sums are final once the last tile's matmul of that group is done:
  // without a reduction (s == 1) each is stored to dW (cast in the input slot the last tile leaves
  // free), with one (s > 1) copied to this core's partial sums in SRAM, while the next group's
  // matmul runs, so only the last group's store or copy follows the compute. Returns whether the
  // sums left this way (stored, or copied to SRAM).
  bool accumulate(const Job& j) {
    if (j.tiles.size == 0) {
      vec_fill(DType::kFloat32, acc_, 0.0, g_.taps * j.on * j.cn);
      return false;
    }
    const bool early = stores_groups_early(p_.s, j.on, p_.tg * j.cn, g_.es, xslot_);
    const std::size_t groups = this->groups(), pieces = std::max<std::size_t>(1, groups - 1);
    const std::vector<Tile> tiles = job_tiles(j);
    const bool pair = p_.resident && p_.s == 1 && tiles.size() >= 2;
    Tile t = tiles[0];
    zero_padding(j, 0);
    if (p_.shared) sync_cluster();  // tile 0 is in SRAM
    load_x(j, t, xs_[0], 0, 1, p_.shared ? &xsram_[0] : nullptr);
    load_dy(j, t, 0, 1, dy_[0]);
    if (tiles.size() > 1) zero_padding(j, 1);  // while tile 0 loads
    sync_io();
    copy_group(j, t, xs_[0], 0, xt_[0]);
    sync_io();
    std::size_t step = 0;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      if (pair && i + 2 == tiles.size()) return last_pair(j, tiles, i, step);
      const bool more = i + 1 < tiles.size();
      const Tile nt = more ? tiles[i + 1] : Tile{};
      const Addr xs = xs_[i % 2], xs_next = xs_[(i + 1) % 2];
      const std::size_t px = t.pixels(c_);
      if (more && p_.shared) sync_cluster();  // tile i + 1 is in SRAM (and tile i copied out by all)
      const Addr* staged = p_.shared ? &xsram_[(i + 1) % 2] : nullptr;
      for (std::size_t grp = 0; grp < groups; ++grp, ++step) {
        if (more && grp < pieces)
          load_x(j, nt, xs_next, grp, pieces, staged), load_dy(j, nt, grp, pieces, dy_[(i + 1) % 2]);
        if (grp + 1 < groups) {
          copy_group(j, t, xs, grp + 1, xt_[(step + 1) % 2]);
        } else if (more) {
          if (groups == 1) sync_io();  // the next tile's input was issued in this very step
          copy_group(j, nt, xs_next, 0, xt_[(step + 1) % 2]);
        }
        if (early && !more && grp > 0) store_group_async(j, grp - 1, group_sums(j, grp - 1), (i + 1) % 2);
        if (p_.s > 1 && !more && grp > 0) send_group(j, grp - 1);
        matmul_a_k_major(c_.dtype, DType::kFloat32, group_sums(j, grp), dy_[i % 2], xt_[step % 2], j.on, px,
                         group_taps(grp) * j.cn, false, i > 0);
        sync_io();
      }
      t = nt;
    }
    if (early) store_rows(j, group_sums(j, groups - 1), (groups - 1) * p_.tg * j.on, g_.taps * j.on, true);
    if (p_.s > 1) send_group(j, groups - 1);
    return early || p_.s > 1;
  }

  // This core's partial sums in SRAM (s > 1), laid out as the accumulator.
  Addr own_part() const { return parts_.offset(i64(core_id() * acc_bytes_)); }
  // Tap group grp's final sums to this core's partial sums in SRAM (asynchronous).
  void send_group(const Job& j, std::size_t grp) const {
    const std::int64_t at = i64(grp * p_.tg * j.on * j.cn * 4);
    memcpy_async(own_part().offset(at), group_sums(j, grp), group_taps(grp) * j.on * j.cn * 4, Dir::kNram2Sram);
  }

  // resident: the job's last two tiles, i and i + 1, both kept on chip (x in the two input slots,
  // dY in the two dY slots), run group by group, steps (tile i, g), (tile i + 1, g): group g's sums are
  // final after its second step, rounded into the store buffer at the next group's first step
  // and stored in two halves over that group's two steps, so the stores spread over both tiles
  // instead of following the last one. On entry tile i is loaded (input and dY in slots
  // i % 2) and its first group's windows are in xt_[step0 % 2]; tile i + 1 loads during the first
  // step. Returns true (the sums are stored).
  bool last_pair(const Job& j, const std::vector<Tile>& tiles, std::size_t i, std::size_t step0) {
    const std::size_t groups = this->groups(), steps = 2 * groups;
    const Tile* t[2] = {&tiles[i], &tiles[i + 1]};
    const Addr xs[2] = {xs_[i % 2], xs_[(i + 1) % 2]}, dy[2] = {dy_[i % 2], dy_[(i + 1) % 2]};
    if (p_.shared) sync_cluster();  // tile i + 1 is in SRAM
    load_x(j, *t[1], xs[1], 0, 1, p_.shared ? &xsram_[(i + 1) % 2] : nullptr);  // during the first step
    load_dy(j, *t[1], 0, 1, dy[1]);
    for (std::size_t k = 0; k < steps; ++k) {
      const std::size_t grp = k / 2, ti = k % 2;
      if (k == 1) {  // tile i + 1 has landed (step 0's sync): its first windows
        copy_group(j, *t[1], xs[1], 0, xt_[(step0 + 1) % 2]);
        sync_io();
      }
      if (k >= 1 && k + 1 < steps)  // the next step's windows: (i + 1, g) or (i, g + 1)
        copy_group(j, *t[(k + 1) % 2], xs[(k + 1) % 2], (k + 1) / 2, xt_[(step0 + k + 1) % 2]);
      if (grp > 0) store_half(j, grp - 1, ti, group_sums(j, grp - 1));
      matmul_a_k_major(c_.dtype, DType::kFloat32, group_sums(j, grp), dy[ti], xt_[(step0 + k) % 2], j.on,
                       t[ti]->pixels(c_), group_taps(grp) * j.cn, false, i > 0 || ti > 0);
      sync_io();
    }
    store_half(j, groups - 1, 0, group_sums(j, groups - 1));
    store_half(j, groups - 1, 1, group_sums(j, groups - 1));
    return true;
  }

  // Half h of tap group grp's sums (fp32 at `sums`) to dW: rounded into the store buffer with the
  // first half (fp16), stored from there, or straight from the sums (fp32).
  void store_half(const Job& j, std::size_t grp, std::size_t h, Addr sums) {
    const std::size_t base = grp * p_.tg * j.on, n = group_taps(grp) * j.on;
    const std::size_t r0 = base + (h ? n / 2 : 0), r1 = base + (h ? n : n / 2);
    if (c_.dtype == DType::kFloat32) return store_rows(j, sums.offset(i64((r0 - base) * j.cn * 4)), r0, r1, false);
    if (h == 0) vec_cast(c_.dtype, sbuf_, DType::kFloat32, sums, n * j.cn);
    store_rows(j, sbuf_.offset(i64((r0 - base) * j.cn * g_.es)), r0, r1, false);
  }

  // The padding columns are never written by a load: input slot i is zeroed whole for the job's
  // layout (cn channels a pixel) unless it still is from an earlier job (not used as scratch since).
  void zero_padding(const Job& j, std::size_t i) {
    if (zeroed_cn_[i] == j.cn) return;
    vec_fill(c_.dtype, xs_[i], 0.0, xslot_ / g_.es);
    zeroed_cn_[i] = j.cn;
  }

  // Input slot i as scratch: its padding columns are no longer zero.
  Addr scratch(std::size_t i) {
    zeroed_cn_[i] = 0;
    return xs_[i];
  }

  // Tap group `grp`'s [on, group taps x cn] sums at `sums` to dW without waiting (cast into input
  // slot `slot` unless fp32); the caller syncs before it reuses the slot.
  void store_group_async(const Job& j, std::size_t grp, Addr sums, std::size_t slot) {
    const std::size_t n = group_taps(grp) * j.on;  // rows of cn
    Addr src = sums;
    if (c_.dtype != DType::kFloat32) {
      src = scratch(slot);
      vec_cast(c_.dtype, src, DType::kFloat32, sums, n * j.cn);
    }
    store_rows(j, src, grp * p_.tg * j.on, grp * p_.tg * j.on + n, false);
  }

  // Stores rows [r0, r1) of the job's sums, taps x on rows of cn in the accumulator's order: per
  // tap group (tg x on rows each, the last group's gs x on), per output channel o, its gs taps,
  // i.e. row grp x tg x on + o x gs + k is dW[o0 + o, grp x tg + k, c0 .. c0 + cn); found at `src`
  // (row r0 first), in the dtype when `from_acc` is false.
  void store_rows(const Job& j, Addr src, std::size_t r0, std::size_t r1, bool from_acc) {
    if (from_acc && c_.dtype != DType::kFloat32) {
      const std::size_t chunk = std::max<std::size_t>(1, xslot_ / (j.cn * 4));
      for (std::size_t r = r0; r < r1; r += chunk) {
        const std::size_t n = std::min(chunk, r1 - r);
        vec_cast(c_.dtype, scratch(0), DType::kFloat32, src.offset(i64((r - r0) * j.cn * 4)), n * j.cn);
        store_rows(j, xs_[0], r, r + n, false);
        sync_io();  // the scratch is reused
      }
      return;
    }
    const std::size_t run = j.cn * g_.es;
    const std::int64_t tap_pitch = c_.ws_t * i64(g_.es);
    for (std::size_t r = r0; r < r1;) {
      const std::size_t grp = r / (p_.tg * j.on), gs = group_taps(grp), in = r - grp * p_.tg * j.on;
      const std::size_t o = in / gs, k = in % gs;
      auto at = [&](std::size_t oo, std::size_t kk) {
        const std::int64_t el = i64(j.o0 + oo) * c_.ws_o + i64(grp * p_.tg + kk) * c_.ws_t + i64(j.c0);
        return Addr{Space::kGdram, c_.dw_base + static_cast<std::uint64_t>(el * i64(g_.es))};
      };
      const Addr from = src.offset(i64((r - r0) * run));
      if (k > 0 || r1 - r < gs) {  // part of one output channel's taps
        const std::size_t n = std::min(gs - k, r1 - r);
        memcpy_strided_async(at(o, k), from, CopyShape{run, n, tap_pitch, i64(run)}, Dir::kNram2Gdram);
        r += n;
        continue;
      }
      const std::size_t no = std::min((r1 - r) / gs, j.on - o);  // whole output channels
      const CopyShape shape = tap_pitch == i64(run) ? CopyShape{gs * run, no, c_.ws_o * i64(g_.es), i64(gs * run)}
                                                    : CopyShape{run, gs, tap_pitch, i64(run), no, c_.ws_o * i64(g_.es),
                                                                i64(gs * run)};
      memcpy_strided_async(at(o, 0), from, shape, Dir::kNram2Gdram);
      r += no * gs;
    }
  }

  // This core's 1/s of the block's rows: the other parts' sums added from SRAM, then stored.
  void reduce_and_store(const Job& j) {
    const Span rows = split_units(g_.taps * j.on, p_.s, 1, j.part);
    if (rows.size == 0) return;
    const std::size_t row = j.cn * 4, chunk = std::max<std::size_t>(1, xslot_ / row);
    const Addr mine = acc_.offset(i64(rows.begin * row));
    const std::size_t first = core_id() - j.part;  // the group's first core in this cluster
    for (std::size_t q = 0; q < p_.s; ++q) {
      if (q == j.part) continue;
      const Addr other = parts_.offset(i64((first + q) * acc_bytes_));
      for (std::size_t r = 0; r < rows.size; r += chunk) {
        const std::size_t n = std::min(chunk, rows.size - r);
        dev::memcpy(scratch(1), other.offset(i64((rows.begin + r) * row)), n * row, Dir::kSram2Nram);
        vec_binary(sim::VecBinaryOp::kAdd, DType::kFloat32, mine.offset(i64(r * row)), mine.offset(i64(r * row)),
                   xs_[1], n * j.cn);
      }
    }
    store_rows(j, mine, rows.begin, rows.begin + rows.size, true);
  }

  const WeightGradConv& c_;
  const WeightGradPlan& p_;
  const Geometry g_;
  Addr parts_, xsram_[2], acc_, dy_[2], xs_[2], xt_[2];
  Addr sbuf_;  // resident: a group's sums in the dtype
  std::size_t zeroed_cn_[2] = {0, 0};  // per input slot: the cn whose padding columns it holds zeroed (0: none)
  std::size_t xslot_ = 0, acc_bytes_ = 0;
};

}  // namespace

std::string WeightGradPlan::str() const {
  return "weight_grad ocb=" + std::to_string(ocb) + " cb=" + std::to_string(cb) + " tg=" + std::to_string(tg) +
         " s=" + std::to_string(s) + (shared ? " shared" : "") + (half_first ? " half_first" : "") +
         (resident ? " resident" : "") +
         " rh=" + std::to_string(rh) + " ni=" + std::to_string(ni) + " jobs=" + std::to_string(jobs) +
         " rounds=" + std::to_string(rounds) + " clusters=" + std::to_string(clusters) +
         " est_cycles=" + std::to_string(static_cast<std::uint64_t>(est_cycles)) +
         " est_dram_bytes=" + std::to_string(static_cast<std::uint64_t>(est_dram_bytes));
}

bool direct_backward_weight_applies(const Handle& h, const ConvShape& s, const View4& x, const View4& dy,
                                    const View4& dw) {
  if (s.groups != 1 || s.c == 0 || s.oc == 0) return false;
  // A 1x1 stride-1 convolution has no windows: it is one GEMM over the NHWC pixels, which the
  // GEMM engine runs without gathers. Fewer input channels than array columns (conv1's 3) leave
  // most columns of every fold idle (N = cb <= C), where the GEMM path puts C x taps on them.
  if (s.taps() == 1 && s.p.stride_h == 1 && s.p.stride_w == 1) return false;
  const gemm::DeviceModel d = gemm::device_model(h, s.dtype);
  if (!d.on_tfu() || s.c < d.tfu_cols) return false;
  const bool x_nhwc = x.strides[1] == 1 || s.c == 1;
  const bool dy_nhwc =
      (dy.strides[1] == 1 || s.oc == 1) && (s.oh == 1 || s.ow == 1 || dy.strides[2] == i64(s.ow) * dy.strides[3]);
  const bool dw_ohwi =
      (dw.strides[1] == 1 || s.c == 1) && (s.kh == 1 || s.kw == 1 || dw.strides[2] == i64(s.kw) * dw.strides[3]);
  return x_nhwc && dy_nhwc && dw_ohwi;
}

WeightGradConv weight_grad_conv(const ConvShape& s, const View4& x, const View4& dy, const View4& dw) {
  WeightGradConv d;
  d.dtype = s.dtype;
  d.n = s.n, d.h = s.h, d.w = s.w, d.c = s.c, d.oc = s.oc, d.kh = s.kh, d.kw = s.kw, d.oh = s.oh, d.ow = s.ow;
  d.stride_h = static_cast<std::size_t>(s.p.stride_h), d.stride_w = static_cast<std::size_t>(s.p.stride_w);
  d.dil_h = static_cast<std::size_t>(s.p.dilation_h), d.dil_w = static_cast<std::size_t>(s.p.dilation_w);
  d.pad_h = s.p.pad_h, d.pad_w = s.p.pad_w;
  d.xs_n = x.strides[0], d.xs_h = x.strides[2], d.xs_w = x.strides[3];
  d.ys_n = dy.strides[0], d.ys_w = s.ow > 1 ? dy.strides[3] : dy.strides[2];
  d.ws_o = dw.strides[0], d.ws_t = s.kw > 1 ? dw.strides[3] : dw.strides[2];
  return d;
}

WeightGradPlan plan_weight_grad(const Handle& h, const WeightGradConv& c) {
  const gemm::DeviceModel d = gemm::device_model(h, c.dtype);
  WeightGradPlan best;
  if (!d.on_tfu() || c.n * c.oh * c.ow * c.oc * c.c == 0) return best;
  const Geometry g(c);
  const std::size_t cores = d.cores_per_cluster, all = cores * d.clusters;
  const double es = static_cast<double>(g.es);
  const double x_bytes = static_cast<double>(c.n * c.h * c.w * c.c) * es;
  const double dy_bytes = static_cast<double>(c.n * c.oh * c.ow * c.oc) * es;
  const double dw_bytes = static_cast<double>(c.oc * g.taps * c.c) * es;
  auto chunks = [](std::size_t total) {  // total cut into q equal chunks, q up to 32
    std::vector<std::size_t> v;
    for (std::size_t q = 1; q <= 32 && q <= total; ++q) v.push_back(ceil_div(total, q));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  for (std::size_t ocb : chunks(c.oc))
    for (std::size_t cb : chunks(c.c))
    for (std::size_t tg = 1; tg <= g.taps; ++tg) {
      // Wider groups fill the array's column folds better, up to a few folds (a bounded search).
      if (tg > 1 && tg * cb > 6 * d.tfu_cols) break;
      const std::size_t nob = ceil_div(c.oc, ocb), ncb = ceil_div(c.c, cb);
      const std::size_t groups = ceil_div(g.taps, tg), last = g.taps - (groups - 1) * tg;  // taps of the last group
      const double acc = static_cast<double>(g.taps * ocb * cb * 4);
      for (std::size_t opt = 1; opt < c.oh + c.n; ++opt) {
        const std::size_t rh = std::min(opt, c.oh), ni = opt > c.oh ? opt - c.oh + 1 : 1;
        const CoreBuffers b = core_buffers(c, g, ocb, cb, tg, rh, ni);
        if (b.nram() > d.nram_bytes || b.wram() > d.wram_bytes) break;
        const std::size_t tb = ni > 1 ? 1 : ceil_div(c.oh, rh), tiles = ceil_div(c.n, ni) * tb;
        const std::size_t p = ni * rh * c.ow;
        // A tile's matmuls: one per tap group, N = the group's taps x cb.
        const double mm_group = static_cast<double>(d.matmul_cycles(ocb, p, tg * cb));
        // A group's window copies: per tap runs of OW x cb a row (stride 1, one tap a group), else
        // of cb a pixel (whole DMA bursts each), one copy per image; the group's copies run at
        // once, sharing the core's Move-DMA rate.
        const bool per_pixel = tg > 1 || c.stride_w != 1;
        const double copy_lat = d.move_latency_cycles * static_cast<double>(per_pixel ? ni : 1);
        const double copy_px = static_cast<double>(per_pixel ? d.whole_bursts(cb * g.es) : cb * g.es) / d.move_dma_bpc;
        const double x_tile = static_cast<double>(ni * g.in_h(c, rh) * g.count * cb) * es;
        // Reading x from DRAM moves whole DMA bursts: a run of cb channels a pixel (cb < C) costs
        // its bytes rounded up to bursts (one run a row when cb == C).
        const double run = static_cast<double>(cb) * es;
        const double x_dram = cb < c.c ? x_tile * static_cast<double>(d.whole_bursts(cb * g.es)) / run : x_tile;
        const double dy_tile = static_cast<double>(p * ocb) * es;
        // A tile's loads of `bytes` at the IO-DMA rate, or the core's share of DRAM for the
        // `dram_bytes` of them the L2 does not serve (all cores load), or its share of the NoC/L2
        // stage every read crosses.
        auto io = [&](double bytes, double dram_bytes) {
          return d.io_latency_cycles + std::max({bytes / d.io_dma_bpc, dram_bytes * static_cast<double>(all) / d.dram_bpc,
                                                 bytes * static_cast<double>(all) / d.noc_bpc});
        };
        // The block's dW (in the dtype), every core storing at the same time: its IO-DMA rate or
        // its share of DRAM.
        const double out_bytes = acc / 4 * es;
        const double store =
            d.io_latency_cycles + std::max(out_bytes / d.io_dma_bpc, out_bytes * static_cast<double>(all) / d.dram_bpc);
        const double halo = std::max(1.0, static_cast<double>(g.in_h(c, rh)) / static_cast<double>(rh * c.stride_h));
        for (std::size_t s = 1; s <= cores && s <= tiles; s *= 2)
          for (int shared = 0; shared < 2; ++shared) {
            if (cores % s != 0) continue;
            if (shared && (s > 1 || cores == 1 || nob % cores != 0 ||
                           2 * sram_slot_bytes(c, g, cb, rh, ni) > d.sram_bytes))
              continue;
            const std::size_t jobs = nob * ncb * s;
            if (s > 1 && cores * b.acc > d.sram_bytes) continue;
            const std::size_t clusters = std::min<std::size_t>(d.clusters, ceil_div(jobs, cores));
            const std::size_t rounds = ceil_div(jobs, clusters * cores);
            // Readers of the same tile at about the same time: the blocks of a cluster's input
            // channels read its x tiles (staged once per cluster when shared), those of its output
            // channels its dY tiles. With all jobs in one round on an L2 chip (l2.cache), the L2
            // serves all but the first read (as the forward planner counts its input).
            const double x_reads = shared ? static_cast<double>(nob / cores) : static_cast<double>(nob);
            const bool l2_shares = d.config.l2_cache && rounds == 1;
            const double x_readers = l2_shares ? x_reads : 1.0, dy_readers = l2_shares ? static_cast<double>(ncb) : 1.0;
            // The next tile's loads, in `pieces` pieces (one per group but the last): x and dY by
            // IO-DMA, or (shared) dY by IO-DMA and x copied from the memory core's SRAM copy by
            // the core's one Move-DMA engine, which also carries the window copies.
            const std::size_t pieces = std::max<std::size_t>(1, groups - 1);
            const double pf = static_cast<double>(pieces);
            const double sram_copy = d.move_latency_cycles + std::max(x_tile / pf / d.move_dma_bpc,
                                                                      x_tile / pf * static_cast<double>(cores + 1) / d.sram_bpc);
            const double stage =
                d.io_latency_cycles + std::max({x_dram / d.memcore_dma_bpc,
                                                x_dram / x_readers * static_cast<double>(clusters) / d.dram_bpc,
                                                x_dram * static_cast<double>(clusters) / d.noc_bpc});
            // Loads of a tile of f x p pixels (f = 1, or 1/2 for the halves of a first tile cut in
            // two), in `pieces` pieces.
            auto load_piece = [&](double f) {
              return shared ? io(f * dy_tile / pf, f * dy_tile / dy_readers / pf)
                            : io(f * (x_dram + dy_tile) / pf, f * (x_dram / x_readers + dy_tile / dy_readers) / pf);
            };
            // The first tile (f of a tile), before any matmul (shared: the cores wait for the
            // memory core's staging, then copy it while their dY loads).
            auto first_load = [&](double f) {
              return shared ? f * stage + std::max(io(f * dy_tile, f * dy_tile / dy_readers), f * sram_copy * pf)
                            : io(f * (x_dram + dy_tile), f * (x_dram / x_readers + dy_tile / dy_readers));
            };
            // A tile of f x p pixels whose steps carry the loads of a next tile of fn x p: per
            // group the longest of its matmul, the next group's window copies
            // (at the last group: the next tile's first; with one group they wait for the loads)
            // and its piece of the next tile's loads; the memory core's staging of the next tile
            // (shared) bounds the whole.
            auto tile_cycles = [&](double f, double fn) {
              const std::size_t pt = std::max<std::size_t>(1, static_cast<std::size_t>(f * static_cast<double>(p)));
              const double mm_g = static_cast<double>(d.matmul_cycles(ocb, pt, tg * cb));
              const double mm_l = static_cast<double>(d.matmul_cycles(ocb, pt, last * cb));
              const double sram_piece = fn * sram_copy;
              double t = 0;
              for (std::size_t gi = 0; gi < groups; ++gi) {
                const std::size_t next = gi + 1 < groups ? (gi + 2 < groups ? tg : last) : tg;
                const double mm = gi + 1 < groups ? mm_g : mm_l;
                const bool loads = gi < pieces;
                const double copies = copy_lat + static_cast<double>(next) * copy_px * static_cast<double>(pt);
                const double move = copies + (shared && loads ? sram_piece : 0.0);
                const double io_step = loads ? load_piece(fn) : 0.0;
                t += groups == 1 ? std::max(mm, std::max(io_step, shared ? sram_piece : 0.0) + copies)
                                 : std::max({mm, move, io_step});
              }
              return shared ? std::max(t, fn * stage) : t;
            };
            const double tile = tile_cycles(1, 1);
            // The part's tiles: whole, or the first cut in halves (WeightGradPlan::half_first).
            const double n_tiles = static_cast<double>(ceil_div(tiles, s));
            const double whole_first = first_load(1) + n_tiles * tile;
            const double half_first = first_load(0.5) + tile_cycles(0.5, 0.5) + tile_cycles(0.5, 1) + (n_tiles - 1) * tile;
            const double reads = x_reads * x_bytes * halo + static_cast<double>(ncb) * dy_bytes;
            const double dram_bytes =
                (l2_shares ? x_bytes * halo + dy_bytes : reads) + dw_bytes;
            // The reduction (s > 1): each group's partial sums go to SRAM (every core of the
            // cluster writing) during the last tile's next group's matmul (the last group's, of
            // `last` taps, for the one before it), the last group's after the compute; then each
            // core reads the others' sums for 1/s of the rows and adds them.
            double red = 0;
            if (s > 1) {
              const double write = acc * static_cast<double>(cores) / d.sram_bpc / static_cast<double>(g.taps);
              const double send = write * static_cast<double>(tg);  // a full group's copy, all cores
              const double mm_last = static_cast<double>(d.matmul_cycles(ocb, p, last * cb));
              for (std::size_t gi = 0; gi + 1 < groups; ++gi)
                red += std::max(0.0, send - (gi + 2 == groups ? mm_last : mm_group));
              red += write * static_cast<double>(last) + acc * static_cast<double>(cores * (s - 1) / s) / d.sram_bpc +
                     static_cast<double>(s - 1) *
                         static_cast<double>(d.vfu_cycles_fp32(static_cast<std::uint64_t>(acc / 4 / static_cast<double>(s))));
            }
            // Groups stored early (stores_groups_early): a group's store overlaps the next group's
            // matmul, so the last tile's steps take the longer of the two and only the last
            // group's store follows the compute.
            const double group_store = store * static_cast<double>(tg) / static_cast<double>(g.taps);
            const bool early = stores_groups_early(s, ocb, tg * cb, g.es, b.xslot);
            const double stores = early ? group_store + static_cast<double>(groups - 1) * std::max(0.0, group_store - mm_group)
                                        : store / static_cast<double>(s);
            // Each group's sums are rounded to the dtype on the VFU first, in series with the TFU:
            // counted where the resident mode is weighed against this one (not in the tilings'
            // comparison, whose choices it moved to slower tilings: l4_down bwd-weight 71 -> 75 us).
            const double cast = g.es == 4 ? 0.0 : static_cast<double>(d.vfu_cycles_fp32(static_cast<std::uint64_t>(ocb * tg * cb)));
            const double stores_cast = stores + (early ? static_cast<double>(groups) * cast : 0.0);
            // The tiling is chosen on whole first tiles; halving them is then decided for it alone.
            const bool halves = (ni > 1 || rh > 1) && half_first < whole_first;
            // resident (s == 1): the part's last two tiles both on chip, run group by group (the
            // others tile by tile, as above); the pair's step 0 carries its second tile's load,
            // step 1 waits for that tile's first windows, and each group's store,
            // in halves, overlaps the next group's two steps; only the last group's follows.
            bool resident = false;
            if (s == 1 && ceil_div(tiles, s) >= 2) {
              const CoreBuffers br = core_buffers(c, g, ocb, cb, tg, rh, ni, true);
              if (br.nram() <= d.nram_bytes && br.wram() <= d.wram_bytes) {
                const double mm_l = static_cast<double>(d.matmul_cycles(ocb, p, last * cb));
                const double copies = copy_lat + static_cast<double>(tg) * copy_px * static_cast<double>(p);
                double res = first_load(1) + (n_tiles - 2) * tile + std::max(mm_group, first_load(1)) + copies;
                for (std::size_t k = 1; k < 2 * groups; ++k)
                  res += std::max({k / 2 + 1 < groups ? mm_group : mm_l, copies, k >= 2 ? group_store / 2 : 0.0}) +
                         (k >= 2 && k % 2 == 0 ? cast : 0.0);
                res += cast + group_store;
                resident = res < (halves ? half_first : whole_first) + stores_cast;
              }
            }
            const double round = whole_first + red + stores;
            const double est =
                std::max({static_cast<double>(rounds) * round, dram_bytes / d.dram_bpc, reads / d.noc_bpc});
            if (best.ocb == 0 || est < best.est_cycles * 0.999 ||
                (est <= best.est_cycles * 1.001 && dram_bytes < best.est_dram_bytes)) {
              best.ocb = ocb, best.cb = cb, best.tg = tg, best.s = s, best.rh = rh, best.ni = ni, best.shared = shared != 0;
              best.half_first = halves && !resident;  // (est stays the whole-first one: the comparison's basis)
              best.resident = resident;
              best.nob = nob, best.ncb = ncb, best.tb = tb, best.tiles = tiles, best.jobs = jobs;
              best.rounds = rounds, best.clusters = clusters, best.est_cycles = est, best.est_dram_bytes = dram_bytes;
            }
          }
      }
    }
  return best;
}

Status launch_weight_grad(Handle& h, const std::string& name, const WeightGradConv& conv, const WeightGradPlan& plan,
                          std::uint32_t* kernels) {
  *kernels = 0;
  MLU_CHECK(plan.ocb > 0, Status::kNotSupported, name + ": no direct weight-gradient tiling fits this device");
  auto job = std::make_shared<const WeightGradConv>(conv);
  auto pl = std::make_shared<const WeightGradPlan>(plan);
  const unsigned cpc = h.cores_per_cluster();
  MLU_RETURN_IF_ERROR(launch(
      h, name, [job, pl] { WeightGradRun(*job, *pl).run(); },
      cnrtDim3_t{static_cast<unsigned>(plan.clusters) * cpc, 1, 1}, cnrtFuncTypeUnion1));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
