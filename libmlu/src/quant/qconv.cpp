// qconv2d and qlinear (quant.h): the int8 direct convolution.
//
// Work: output tiles of `rh` whole output rows of one image by chunks of `nco` output channels,
// ordered chunk-major and dealt to the tasks (BLOCK, one per core) in contiguous ranges, so a
// task keeps a chunk's weights in WRAM across its tiles when the input channels fit one step.
// A task walks its steps (tile, input-channel step of cc channels): the padded input rows
// [in_rows, W + 2 pad_w, cc] of the next step go to the other of two NRAM slots (filled with x's
// zero point first, the quantized 0.0 of the padding, then the image's rows by one asynchronous
// strided DMA) while the TFU's int8 conv intrinsic accumulates the current step into an int32
// [rh x OW, nco] tile (cycles: tfu_timing.h's formula on the int8 array); the chunk's weights
// [nco, KH, KW, cc] are in WRAM. A tile's last step is requantized on the VFU (quant.h: int32
// zero-point offsets, one cast, one multiply and one add per element with per-channel rows
// broadcast once per chunk, relu as a lower bound, the saturating cast to int8) and stored
// asynchronously into y's [OH x OW, OC] rows.
//
// With all input channels in one step, a plan may instead stage the weights per cluster (UNION1):
// jobs of (chunk, group of its tiles) go round-robin to clusters, the memory core copies a job's
// weights GDRAM -> SRAM once (the next job's while the cores compute), and the cluster's cores
// copy them SRAM -> WRAM and split the job's tiles; DRAM then carries the weights once per job
// instead of once per core.
//
// Tiling (plan_qconv): candidates halve the output channels per chunk (from OC) and the rows per
// tile (from OH); cc is C, halved until the chunk's weights fit WRAM. Each candidate whose NRAM
// buffers fit is costed per core (the busiest task's tiles): TFU cycles of its intrinsics
// (DeviceModel::conv_cycles) against its input DMA (IO-DMA rate), plus its weight loads, its
// VFU requantization passes and its stores, and no less than all tasks' DRAM bytes over the DRAM
// bandwidth (staged plans: per cluster, its jobs' weight copies and its cores' shares of the
// tiles); the cheapest wins.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "mlusim/mlu/quant.h"
#include "mlusim/sim/kernel_api.h"
#include "quant/quant_checks.h"

namespace mlusim::mlu {

using namespace mlusim::dev;
using sim::VecBinaryOp;

namespace {

struct QConvJob {
  std::size_t n = 0, h = 0, w = 0, c = 0, oc = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  std::size_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  std::uint64_t x = 0, wt = 0, y = 0;  // NHWC, [OC, KH, KW, C], NHWC (all dense)
  float x_scale = 1.0f;
  std::int64_t x_zp = 0, y_zp = 0;
  double inv_y = 1.0;  // 1.0 / y_scale in double; the VFU rounds it to fp32
  std::uint64_t w_scales = 0, w_sums = 0, bias = 0;  // 0: none (w_sums: x_zp == 0)
  bool relu = false;
  float y_scale = 1.0f;
  std::size_t out_es = 1;  // y's element size: 1 (int8) or 4 (fp32, dequantize_output)
  // Plan. staged: UNION1, weights staged per cluster in SRAM (see the header comment); jobs =
  // chunks x gp (gp tile groups per chunk), job k on cluster k % clusters.
  std::size_t rh = 0, nco = 0, cc = 0;
  bool staged = false;
  std::size_t gp = 1, clusters = 1;
  std::size_t jobs() const { return chunks() * gp; }
  std::size_t bands() const { return ceil_div(oh, rh); }
  std::size_t chunks() const { return ceil_div(oc, nco); }
  std::size_t tiles() const { return chunks() * n * bands(); }
  std::size_t in_rows(std::size_t rows) const { return (rows - 1) * sh + dh * (kh - 1) + 1; }
  std::size_t wp() const { return w + 2 * pw; }
};

// NRAM / WRAM bytes of a plan (each buffer rounded to 128 bytes, as dev::alloc does).
std::size_t nram_bytes(const QConvJob& j, std::size_t rh, std::size_t nco, std::size_t cc) {
  const std::size_t p = rh * j.ow * nco;
  std::size_t b = 2 * up128(j.in_rows(rh) * j.wp() * cc) + up128(p * 4) /*acc*/ + up128(p * 4) /*scale*/ +
                  up128(p) /*out*/;
  if (j.w_sums) b += up128(p * 4);
  if (j.bias) b += up128(p * 4);
  b += 3 * up128(nco * 4);  // per-chunk vectors
  return b;
}
std::size_t wram_bytes(const QConvJob& j, std::size_t nco, std::size_t cc) { return up128(nco * j.kh * j.kw * cc); }

// The planner's estimate of a tiling's cycles (see the header comment).
double estimate(const QConvJob& j, const gemm::DeviceModel& d, std::size_t cores) {
  const std::size_t tiles = j.tiles(), per = ceil_div(tiles, cores), steps = ceil_div(j.c, j.cc);
  const std::size_t p = j.rh * j.ow, per_chunk = j.n * j.bands();
  const double in_tile = static_cast<double>(j.in_rows(j.rh) * j.w * j.c);
  const double w_chunk = static_cast<double>(j.nco * j.kh * j.kw * j.c);
  const double w_loads = steps == 1 ? static_cast<double>(std::min(j.chunks(), ceil_div(per, per_chunk) + 1))
                                    : static_cast<double>(per);
  const double out_tile = static_cast<double>(p * j.nco * j.out_es);
  const double tfu = static_cast<double>(per * steps) *
                     static_cast<double>(d.conv_cycles(p, j.kh * j.kw, j.cc, j.nco));
  const double in_dma = static_cast<double>(per) * in_tile / d.io_dma_bpc;
  const double passes = 4.0 + (j.w_sums ? 1 : 0) + (j.bias ? 1 : 0) + (j.relu ? 1 : 0);
  const double vfu = static_cast<double>(per) * passes * static_cast<double>(d.vfu_cycles_fp32(p * j.nco));
  const double core = std::max(tfu, in_dma) + vfu + (w_loads * w_chunk + static_cast<double>(per) * out_tile) / d.io_dma_bpc;
  const double dram = (static_cast<double>(tiles) * (in_tile + out_tile) +
                       w_loads * w_chunk * static_cast<double>(std::min(tiles, cores))) / d.dram_bpc;
  return std::max(core, dram);
}

// Staged plans: per cluster, its jobs one after another; per job the memory core's staging of the
// chunk's weights (overlapped with the previous job but the first), each core's SRAM -> WRAM copy
// and its share of the job's tiles.
double estimate_staged(const QConvJob& j, const gemm::DeviceModel& d, std::size_t clusters, std::size_t cpc) {
  const std::size_t per_chunk = j.n * j.bands(), group = ceil_div(per_chunk, j.gp), per = ceil_div(group, cpc);
  const std::size_t jobs = ceil_div(j.jobs(), clusters), p = j.rh * j.ow;
  const double w_chunk = static_cast<double>(j.nco * j.kh * j.kw * j.c);
  const double in_tile = static_cast<double>(j.in_rows(j.rh) * j.w * j.c),
               out_tile = static_cast<double>(p * j.nco * j.out_es);
  const double tfu = static_cast<double>(d.conv_cycles(p, j.kh * j.kw, j.c, j.nco));
  const double passes = 4.0 + (j.w_sums ? 1 : 0) + (j.bias ? 1 : 0) + (j.relu ? 1 : 0);
  const double vfu = passes * static_cast<double>(d.vfu_cycles_fp32(p * j.nco));
  const double job = w_chunk / d.move_dma_bpc +
                     static_cast<double>(per) * (std::max(tfu, in_tile / d.io_dma_bpc) + vfu + out_tile / d.io_dma_bpc);
  const double core = w_chunk / d.memcore_dma_bpc + static_cast<double>(jobs) * std::max(job, w_chunk / d.memcore_dma_bpc);
  const double dram = (static_cast<double>(j.tiles()) * (in_tile + out_tile) + static_cast<double>(j.jobs()) * w_chunk) /
                      d.dram_bpc;
  return std::max(core, dram);
}

bool plan_qconv(QConvJob& j, const Handle& h) {
  const std::size_t nram = h.nram_bytes(), wram = h.wram_bytes(), cores = h.total_cores();
  const gemm::DeviceModel d = gemm::device_model(h, DType::kInt8);
  double best = -1;
  QConvJob cand = j, chosen = j;
  for (std::size_t nco = j.oc;; nco = ceil_div(nco, 2)) {
    std::size_t cc = j.c;
    while (wram_bytes(j, nco, cc) > wram && cc > 16) cc = ceil_div(cc, 2);
    if (wram_bytes(j, nco, cc) <= wram) {
      for (std::size_t rh = j.oh;; rh = ceil_div(rh, 2)) {
        if (nram_bytes(j, rh, nco, cc) <= nram) {
          cand.rh = rh, cand.nco = nco, cand.cc = cc, cand.staged = false, cand.gp = 1;
          const double e = estimate(cand, d, cores);
          if (best < 0 || e < best) best = e, chosen = cand;
          // Staged: all input channels in one step and two chunks of weights fit the SRAM.
          const std::size_t per_chunk = j.n * ceil_div(j.oh, rh);
          if (cc == j.c && 2 * wram_bytes(j, nco, cc) <= h.sram_bytes() && h.cores_per_cluster() > 1)
            for (std::size_t gp = 1; gp <= std::min<std::size_t>(per_chunk, h.clusters()); gp *= 2) {
              cand.staged = true, cand.gp = gp;
              cand.clusters = std::min<std::size_t>(h.clusters(), cand.jobs());
              const double es = estimate_staged(cand, d, h.clusters(), h.cores_per_cluster());
              if (es < best) best = es, chosen = cand;
            }
        }
        if (rh == 1) break;
      }
    }
    if (nco == 1 || nco <= 16) break;
  }
  if (best < 0) return false;
  j = chosen;
  return true;
}

class QConvTask {
 public:
  explicit QConvTask(const QConvJob& j) : j_(j) {
    if (j.staged) {  // the same order on every participant of the cluster: the same offsets
      wsram_[0] = alloc(Space::kSram, j.nco * j.kh * j.kw * j.c);
      wsram_[1] = alloc(Space::kSram, j.nco * j.kh * j.kw * j.c);
    }
    if (is_memory_core()) return;
    const std::size_t p = j.rh * j.ow * j.nco;
    xin_[0] = alloc(Space::kNram, j.in_rows(j.rh) * j.wp() * j.cc);
    xin_[1] = alloc(Space::kNram, j.in_rows(j.rh) * j.wp() * j.cc);
    acc_ = alloc(Space::kNram, p * 4);
    scale_ = alloc(Space::kNram, p * 4);
    out_ = alloc(Space::kNram, p);
    if (j.w_sums) offs_ = alloc(Space::kNram, p * 4);
    if (j.bias) bias_ = alloc(Space::kNram, p * 4);
    vec_[0] = alloc(Space::kNram, j.nco * 4);
    vec_[1] = alloc(Space::kNram, j.nco * 4);
    vec_[2] = alloc(Space::kNram, j.nco * 4);
    wt_ = alloc(Space::kWram, j.nco * j.kh * j.kw * j.cc);
  }

  // Staged plans (UNION1): jobs k = cluster, cluster + clusters, ...; per job two cluster barriers.
  // The memory core stages job k + 1's weights into the other SRAM slot right after barrier A of
  // job k (that slot's readers finished before barrier B of job k - 1), so staging overlaps the
  // cores' work; the cores copy the slot into WRAM after barrier A and compute their share of the
  // job's tiles before barrier B.
  void run_staged() {
    const std::size_t cluster = task_id() / core_dim();
    std::vector<std::size_t> mine;
    for (std::size_t k = cluster; k < j_.jobs(); k += j_.clusters) mine.push_back(k);
    auto chunk_bytes = [&](std::size_t k) { return (std::min(j_.nco, j_.oc - (k / j_.gp) * j_.nco)) * j_.kh * j_.kw * j_.c; };
    auto stage = [&](std::size_t i) {
      const std::size_t k = mine[i], oc0 = (k / j_.gp) * j_.nco;
      memcpy(wsram_[i % 2], Addr{Space::kGdram, j_.wt + oc0 * j_.kh * j_.kw * j_.c}, chunk_bytes(k), Dir::kGdram2Sram);
    };
    if (is_memory_core()) {
      if (!mine.empty()) stage(0);
      for (std::size_t i = 0; i < mine.size(); ++i) {
        sync_cluster();  // A: slot i % 2 holds job i's weights
        if (i + 1 < mine.size()) stage(i + 1);
        sync_cluster();  // B: the cores are done with job i
      }
      return;
    }
    const std::size_t per_chunk = j_.n * j_.bands();
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::size_t k = mine[i], ch = k / j_.gp, g = k % j_.gp;
      sync_cluster();  // A
      memcpy(wt_, wsram_[i % 2], chunk_bytes(k), Dir::kSram2Wram);
      weights_of_ = ch;
      const std::size_t g0 = g * per_chunk / j_.gp, g1 = (g + 1) * per_chunk / j_.gp;
      const std::size_t c0 = g0 + core_id() * (g1 - g0) / core_dim(), c1 = g0 + (core_id() + 1) * (g1 - g0) / core_dim();
      run_tiles(ch * per_chunk + c0, ch * per_chunk + c1);
      sync_cluster();  // B
    }
  }

  void run() {
    if (j_.staged) return run_staged();
    const std::size_t tiles = j_.tiles(), per = ceil_div(tiles, task_dim());
    const std::size_t t0 = std::min(tiles, task_id() * per), t1 = std::min(tiles, t0 + per);
    run_tiles(t0, t1);
  }

 private:
  // Tiles [t0, t1) step by step, the next step's input loading while the current one computes.
  void run_tiles(std::size_t t0, std::size_t t1) {
    const std::size_t steps = ceil_div(j_.c, j_.cc), total = (t1 - t0) * steps;
    if (total == 0) return;
    load_input(step(t0, steps, 0), 0);
    for (std::size_t s = 0; s < total; ++s) {
      const Step st = step(t0, steps, s);
      sync_io();  // this step's input (and the previous tile's store) landed
      if (s + 1 < total) load_input(step(t0, steps, s + 1), (s + 1) % 2);
      compute(st, s % 2);
    }
    sync_io();
  }

  struct Step {
    std::size_t ch = 0, img = 0, band = 0, c0 = 0;
    bool last = false;  // the tile's last input-channel step
  };
  Step step(std::size_t t0, std::size_t steps, std::size_t s) const {
    const std::size_t t = t0 + s / steps, per_chunk = j_.n * j_.bands();
    const std::size_t c0 = (s % steps) * j_.cc;
    return {t / per_chunk, (t % per_chunk) / j_.bands(), t % j_.bands(), c0, s % steps + 1 == steps};
  }
  std::size_t rows_of(const Step& st) const { return std::min(j_.rh, j_.oh - st.band * j_.rh); }

  // The step's padded input rows into slot `slot`: zero-point fill, then one asynchronous copy.
  void load_input(const Step& st, std::size_t slot) {
    const std::size_t cc = std::min(j_.cc, j_.c - st.c0), wp = j_.wp();
    const std::size_t in_rows = j_.in_rows(rows_of(st));
    const std::int64_t ih_first = i64(st.band * j_.rh * j_.sh) - i64(j_.ph);
    const std::int64_t lo = std::max<std::int64_t>(0, ih_first), hi = std::min(i64(j_.h), ih_first + i64(in_rows));
    const bool padded = j_.pw > 0 || lo > ih_first || hi < ih_first + i64(in_rows);
    if (padded) vec_fill(DType::kInt8, xin_[slot], static_cast<double>(j_.x_zp), in_rows * wp * cc);
    if (hi <= lo) return;
    const Addr dst = xin_[slot].offset(((lo - ih_first) * i64(wp) + i64(j_.pw)) * i64(cc));
    const Addr src{Space::kGdram, j_.x + ((st.img * j_.h + static_cast<std::size_t>(lo)) * j_.w) * j_.c + st.c0};
    const std::size_t valid = static_cast<std::size_t>(hi - lo);
    const CopyShape shape = cc == j_.c ? CopyShape{j_.w * cc, valid, i64(wp * cc), i64(j_.w * j_.c)}
                                       : CopyShape{cc, j_.w, i64(cc), i64(j_.c), valid, i64(wp * cc), i64(j_.w * j_.c)};
    memcpy_strided_async(dst, src, shape, Dir::kGdram2Nram);
  }

  // Per-channel rows of chunk `ch` broadcast to the tile's rows (quant.h's requantization):
  // scale m = (x_scale * w_scale) * inv_y, shift c = bias * inv_y + y_zp (fp32), offsets
  // -x_zp * w_sum (int32).
  void prepare_chunk(std::size_t ch, std::size_t oc0, std::size_t nco) {
    if (ch == vectors_of_) return;
    const std::size_t rows = j_.rh * j_.ow;
    auto broadcast = [&](Addr dst, Addr row) {
      if (rows > 1)
        memcpy_strided(dst, row, CopyShape{nco * 4, rows, i64(nco) * 4, 0}, Dir::kNram2Nram);
      else
        memcpy(dst, row, nco * 4, Dir::kNram2Nram);
    };
    memcpy(vec_[0], Addr{Space::kGdram, j_.w_scales + oc0 * 4}, nco * 4, Dir::kGdram2Nram);
    vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, vec_[0], vec_[0], j_.x_scale, nco);
    vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, vec_[0], vec_[0], j_.inv_y, nco);
    broadcast(scale_, vec_[0]);
    if (j_.w_sums) {
      memcpy(vec_[1], Addr{Space::kGdram, j_.w_sums + oc0 * 4}, nco * 4, Dir::kGdram2Nram);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kInt32, vec_[1], vec_[1], static_cast<double>(-j_.x_zp), nco);
      broadcast(offs_, vec_[1]);
    }
    if (j_.bias) {
      memcpy(vec_[2], Addr{Space::kGdram, j_.bias + oc0 * 4}, nco * 4, Dir::kGdram2Nram);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, vec_[2], vec_[2], j_.inv_y, nco);
      vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, vec_[2], vec_[2], static_cast<double>(j_.y_zp), nco);
      broadcast(bias_, vec_[2]);
    }
    // A narrower last chunk has rows of its own pitch: rebuild for the next chunk.
    vectors_of_ = nco == j_.nco ? ch : kNone;
  }

  void compute(const Step& st, std::size_t slot) {
    const std::size_t oc0 = st.ch * j_.nco, nco = std::min(j_.nco, j_.oc - oc0);
    const std::size_t rows = rows_of(st), cc = std::min(j_.cc, j_.c - st.c0);
    // The chunk's weights (kept while the same chunk and all channels are in WRAM).
    if (!(cc == j_.c && weights_of_ == st.ch)) {
      const Addr src{Space::kGdram, j_.wt + oc0 * j_.kh * j_.kw * j_.c + st.c0};
      const std::size_t taps = nco * j_.kh * j_.kw;
      if (cc == j_.c)
        memcpy(wt_, src, taps * cc, Dir::kGdram2Wram);
      else
        memcpy_strided(wt_, src, CopyShape{cc, taps, i64(cc), i64(j_.c)}, Dir::kGdram2Wram);
      weights_of_ = cc == j_.c ? st.ch : kNone;
    }
    dev::ConvParams prm;
    prm.in_h = j_.in_rows(rows), prm.in_w = j_.wp(), prm.in_c = cc, prm.out_c = nco, prm.k_h = j_.kh, prm.k_w = j_.kw;
    prm.stride_h = j_.sh, prm.stride_w = j_.sw, prm.dilation_h = j_.dh, prm.dilation_w = j_.dw;
    conv2d(DType::kInt8, DType::kInt32, acc_, xin_[slot], wt_, prm, st.c0 > 0);
    if (!st.last) return;
    // Requantization (quant.h).
    const std::size_t p = rows * j_.ow, n = p * nco;
    prepare_chunk(st.ch, oc0, nco);
    if (j_.w_sums) vec_binary(VecBinaryOp::kAdd, DType::kInt32, acc_, acc_, offs_, n);
    vec_cast(DType::kFloat32, acc_, DType::kInt32, acc_, n);
    vec_binary(VecBinaryOp::kMul, DType::kFloat32, acc_, acc_, scale_, n);
    if (j_.bias)
      vec_binary(VecBinaryOp::kAdd, DType::kFloat32, acc_, acc_, bias_, n);
    else
      vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, acc_, acc_, static_cast<double>(j_.y_zp), n);
    if (j_.relu) vec_binary_scalar(VecBinaryOp::kMax, DType::kFloat32, acc_, acc_, static_cast<double>(j_.y_zp), n);
    vec_cast(DType::kInt8, out_, DType::kFloat32, acc_, n);  // round half to even, saturating to [-128, 127]
    Addr src = out_;
    if (j_.out_es == 4) {  // dequantize_output: the int8 values back to fp32, in the accumulator
      vec_cast(DType::kFloat32, acc_, DType::kInt8, out_, n);
      vec_binary_scalar(VecBinaryOp::kSub, DType::kFloat32, acc_, acc_, static_cast<double>(j_.y_zp), n);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, acc_, acc_, j_.y_scale, n);
      src = acc_;
    }
    const std::size_t es = j_.out_es;
    const Addr dst{Space::kGdram, j_.y + (((st.img * j_.oh + st.band * j_.rh) * j_.ow) * j_.oc + oc0) * es};
    if (nco == j_.oc)
      memcpy_async(dst, src, n * es, Dir::kNram2Gdram);
    else
      memcpy_strided_async(dst, src, CopyShape{nco * es, p, i64(j_.oc * es), i64(nco * es)}, Dir::kNram2Gdram);
  }

  static constexpr std::size_t kNone = ~std::size_t{0};
  const QConvJob& j_;
  Addr xin_[2], acc_, scale_, out_, offs_, bias_, vec_[3], wt_, wsram_[2];
  std::size_t weights_of_ = kNone, vectors_of_ = kNone;
};

Status check_output(const Int8Output& o, std::int64_t oc, const char* op) {
  MLU_RETURN_IF_ERROR(quant::check_per_tensor(o.x_scale, o.x_zero_point, -128, 127, op, "x"));
  MLU_RETURN_IF_ERROR(quant::check_per_tensor(o.y_scale, o.y_zero_point, -128, 127, op, "y"));
  MLU_RETURN_IF_ERROR(quant::check_channel_vector(o.w_scales, o.w_scales_ptr, DType::kFloat32, oc, op, "w_scales"));
  MLU_CHECK(o.x_zero_point == 0 || o.w_sums != nullptr, Status::kBadParam,
            std::string(op) + ": w_sums (int8_weight_sums of w) is required when x's zero point (" +
                std::to_string(o.x_zero_point) + ") is not 0");
  if (o.x_zero_point != 0)
    MLU_RETURN_IF_ERROR(quant::check_channel_vector(o.w_sums, o.w_sums_ptr, DType::kInt32, oc, op, "w_sums"));
  if (o.bias) MLU_RETURN_IF_ERROR(quant::check_channel_vector(o.bias, o.bias_ptr, DType::kFloat32, oc, op, "bias"));
  return Status::kSuccess;
}

Status launch_qconv(Handle* h, const char* op, QConvJob j, const Int8Output& o) {
  j.x_scale = static_cast<float>(o.x_scale);
  j.x_zp = o.x_zero_point;
  j.y_zp = o.y_zero_point;
  j.inv_y = 1.0 / o.y_scale;
  j.w_scales = reinterpret_cast<std::uintptr_t>(o.w_scales_ptr);
  j.w_sums = o.x_zero_point != 0 ? reinterpret_cast<std::uintptr_t>(o.w_sums_ptr) : 0;
  j.bias = o.bias ? reinterpret_cast<std::uintptr_t>(o.bias_ptr) : 0;
  j.relu = o.relu;
  j.y_scale = static_cast<float>(o.y_scale);
  j.out_es = o.dequantize_output ? 4 : 1;
  const std::uint64_t macs = static_cast<std::uint64_t>(j.n * j.oh * j.ow) * j.oc * j.kh * j.kw * j.c;
  const std::uint64_t bytes = j.n * j.h * j.w * j.c + j.oc * j.kh * j.kw * j.c + j.n * j.oh * j.ow * j.oc * j.out_es +
                              j.oc * (4 + (j.w_sums ? 4 : 0) + (j.bias ? 4 : 0));
  if (j.n * j.oh * j.ow * j.oc == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_CHECK(plan_qconv(j, *h), Status::kNotSupported,
            std::string(op) + ": no tiling fits the on-chip memories (kernel " + std::to_string(j.kh) + "x" +
                std::to_string(j.kw) + ", width " + std::to_string(j.w) + ")");
  const cnrtDim3_t dim = j.staged ? cnrtDim3_t{static_cast<unsigned>(j.clusters * h->cores_per_cluster()), 1, 1}
                                   : block_dim(*h, j.tiles());
  MLU_RETURN_IF_ERROR(launch(*h, op, [j] { QConvTask(j).run(); }, dim, j.staged ? cnrtFuncTypeUnion1 : cnrtFuncTypeBlock));
  record(*h, op, macs, bytes, 1);
  return Status::kSuccess;
}

}  // namespace

Status qconv2d(Handle* h, const ConvParams& p, const Int8Output& o, const TensorDesc& x, const void* x_ptr,
               const TensorDesc& w, const void* w_ptr, const TensorDesc& y, void* y_ptr) {
  constexpr const char* op = "qconv2d";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&w, op, "w"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kInt8}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(w, {DType::kInt8}, op, "w"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {o.dequantize_output ? DType::kFloat32 : DType::kInt8}, op, "y"));
  MLU_RETURN_IF_ERROR(quant::check_int8_tfu(op));
  MLU_CHECK(quant::nhwc_dense(x) && quant::nhwc_dense(w) && quant::nhwc_dense(y), Status::kBadParam,
            std::string(op) + ": x " + x.str() + ", w " + w.str() + " and y " + y.str() +
                " must be 4-d and NHWC-dense (channels_last)");
  MLU_CHECK(p.groups == 1, Status::kNotSupported, std::string(op) + ": groups " + std::to_string(p.groups) + " (only 1)");
  MLU_CHECK(p.pad_h >= 0 && p.pad_w >= 0 && p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 && p.dilation_w > 0,
            Status::kBadParam, std::string(op) + ": padding must be >= 0, stride and dilation > 0");
  QConvJob j;
  j.n = static_cast<std::size_t>(quant::nchw_dim(x, 0)), j.c = static_cast<std::size_t>(quant::nchw_dim(x, 1));
  j.h = static_cast<std::size_t>(quant::nchw_dim(x, 2)), j.w = static_cast<std::size_t>(quant::nchw_dim(x, 3));
  j.oc = static_cast<std::size_t>(quant::nchw_dim(w, 0)), j.kh = static_cast<std::size_t>(quant::nchw_dim(w, 2));
  j.kw = static_cast<std::size_t>(quant::nchw_dim(w, 3));
  j.sh = static_cast<std::size_t>(p.stride_h), j.sw = static_cast<std::size_t>(p.stride_w);
  j.dh = static_cast<std::size_t>(p.dilation_h), j.dw = static_cast<std::size_t>(p.dilation_w);
  j.ph = static_cast<std::size_t>(p.pad_h), j.pw = static_cast<std::size_t>(p.pad_w);
  const std::int64_t eh = i64(j.h + 2 * j.ph) - i64(j.dh * (j.kh - 1) + 1),
                     ew = i64(j.w + 2 * j.pw) - i64(j.dw * (j.kw - 1) + 1);
  MLU_CHECK(quant::nchw_dim(w, 1) == i64(j.c) && j.kh > 0 && j.kw > 0 && eh >= 0 && ew >= 0, Status::kBadParam,
            std::string(op) + ": w " + w.str() + " does not fit x " + x.str() + " (channels, or kernel larger than the padded input)");
  j.oh = static_cast<std::size_t>(eh) / j.sh + 1, j.ow = static_cast<std::size_t>(ew) / j.sw + 1;
  MLU_CHECK(quant::nchw_dim(y, 0) == i64(j.n) && quant::nchw_dim(y, 1) == i64(j.oc) && quant::nchw_dim(y, 2) == i64(j.oh) &&
                quant::nchw_dim(y, 3) == i64(j.ow),
            Status::kBadParam,
            std::string(op) + ": y " + y.str() + " must be [" + std::to_string(j.n) + ", " + std::to_string(j.oc) + ", " +
                std::to_string(j.oh) + ", " + std::to_string(j.ow) + "] (NCHW dims)");
  MLU_RETURN_IF_ERROR(check_output(o, i64(j.oc), op));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(w_ptr, w, op, "w"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  j.x = reinterpret_cast<std::uintptr_t>(x_ptr), j.wt = reinterpret_cast<std::uintptr_t>(w_ptr);
  j.y = reinterpret_cast<std::uintptr_t>(y_ptr);
  return launch_qconv(h, op, j, o);
}

Status qlinear(Handle* h, const Int8Output& o, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
               const void* w_ptr, const TensorDesc& y, void* y_ptr) {
  constexpr const char* op = "qlinear";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&w, op, "w"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kInt8}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(w, {DType::kInt8}, op, "w"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {o.dequantize_output ? DType::kFloat32 : DType::kInt8}, op, "y"));
  MLU_RETURN_IF_ERROR(quant::check_int8_tfu(op));
  MLU_CHECK(x.ndim() == 2 && w.ndim() == 2 && y.ndim() == 2 && x.contiguous() && w.contiguous() && y.contiguous() &&
                w.dim(1) == x.dim(1) && y.dim(0) == x.dim(0) && y.dim(1) == w.dim(0),
            Status::kBadParam,
            std::string(op) + ": expected contiguous x [M, K], w [N, K], y [M, N]; got x " + x.str() + ", w " + w.str() +
                ", y " + y.str());
  MLU_RETURN_IF_ERROR(check_output(o, w.dim(0), op));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(w_ptr, w, op, "w"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  // A 1x1 convolution over one image of M rows, one pixel wide, K channels.
  QConvJob j;
  j.n = 1, j.h = j.oh = static_cast<std::size_t>(x.dim(0)), j.w = j.ow = 1;
  j.c = static_cast<std::size_t>(x.dim(1)), j.oc = static_cast<std::size_t>(w.dim(0));
  j.x = reinterpret_cast<std::uintptr_t>(x_ptr), j.wt = reinterpret_cast<std::uintptr_t>(w_ptr);
  j.y = reinterpret_cast<std::uintptr_t>(y_ptr);
  return launch_qconv(h, op, j, o);
}

}  // namespace mlusim::mlu
