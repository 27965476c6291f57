#include "gemm/gemm_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "common/activation.h"
#include "common/channel_affine.h"
#include "common/int_math.h"

namespace mlusim::mlu::gemm {
namespace {

// Distinct values f(1), f(2), ... (f non-increasing), at most `limit` of them, largest first.
std::vector<std::size_t> divisions(std::size_t total, std::size_t unit, std::size_t cap, std::size_t limit) {
  std::vector<std::size_t> out;
  for (std::size_t parts = 1; parts <= total && out.size() < limit; ++parts) {
    const std::size_t v = round_up(ceil_div(total, parts), unit);
    if (v > cap) continue;
    if (out.empty() || v < out.back()) out.push_back(v);
    if (v <= unit) break;
  }
  return out;
}

struct Device {
  const DeviceModel& d;
  std::size_t es_in, es_out;
};

// Estimated cycles of one cluster tile (its slowest core) and the DRAM bytes it moves.
struct TileCost {
  double cycles = 0, dram = 0;
};

TileCost tile_cost(const GemmProblem& p, const DeviceModel& d, const GemmPlan& plan, const ColOperand& y,
                   std::size_t nr, std::size_t nc, std::size_t k_begin, std::size_t k_end) {
  const std::size_t es = sim::dtype_size(p.in), es_out = sim::dtype_size(p.out);
  const std::size_t rows = split_units(nr, plan.pr, plan.row_unit, 0).size;
  const std::size_t cols = split_units(nc, plan.pc, plan.col_unit, 0).size;
  TileCost t;
  if (rows == 0 || cols == 0) return t;
  const std::size_t strips = ceil_div(rows, plan.ms), last_rows = rows - (strips - 1) * plan.ms;
  const std::size_t a = std::min(strips, plan.a_strips), b = strips - a;
  const std::size_t cores = plan.pr * plan.pc;
  const std::vector<DepthStep> steps = depth_steps(p, plan.kc, k_begin, k_end);
  for (std::size_t si = 0; si < steps.size(); ++si) {
    const DepthStep& s = steps[si];
    const bool streamed_load = si > 0, streamed_store = si + 1 < steps.size();
    // One strip iteration: its intrinsic, and the copies that must land before the next one.
    const double x_bytes = static_cast<double>(plan.ms * s.kc * es);
    const double y_piece = y.load_bytes(cols, s.kc, es, d.burst_bytes) / static_cast<double>(strips);
    const double acc_bytes = static_cast<double>(plan.ms * cols * 4);
    const double ring_bytes = plan.x_staged ? static_cast<double>(plan.pr) * x_bytes : 0.0;
    const double panel_piece = plan.y_staged ? y.gdram_bytes(nc, s.kc, es) / static_cast<double>(strips) : 0.0;
    auto iteration = [&](std::size_t strip_rows, bool streamed) {
      const double compute = static_cast<double>(d.matmul_cycles(strip_rows, s.kc, cols));
      const double acc = streamed ? acc_bytes * ((streamed_load ? 1 : 0) + (streamed_store ? 1 : 0)) : 0.0;
      const double staged = (plan.x_staged ? x_bytes : 0) + (plan.y_staged ? y_piece : 0) + acc;
      const double direct = (plan.x_staged ? 0 : x_bytes) + (plan.y_staged ? 0 : y_piece);
      const double sram = ring_bytes + panel_piece + static_cast<double>(cores) * staged;
      double c = compute;
      c = std::max(c, direct / d.io_dma_bpc + (direct > 0 ? d.io_latency_cycles : 0));
      c = std::max(c, staged / d.move_dma_bpc + (staged > 0 ? d.move_latency_cycles : 0));
      c = std::max(c, sram / d.sram_bpc);
      c = std::max(c, (ring_bytes + panel_piece) / d.memcore_dma_bpc);
      return c;
    };
    const std::size_t full_a = std::min(a, strips - 1), full_b = strips - 1 - full_a;
    t.cycles += static_cast<double>(full_a) * iteration(plan.ms, false) +
                static_cast<double>(full_b) * iteration(plan.ms, true) + iteration(last_rows, b > 0);
    t.dram += (plan.x_staged ? static_cast<double>(nr * s.kc * es) : x_bytes * static_cast<double>(strips * cores)) +
              (plan.y_staged ? y.gdram_bytes(nc, s.kc, es) : static_cast<double>(cols * s.kc * es * cores));
  }
  // Epilogue on the VFU (scale, bias, beta x C, affine, activation, cast) per strip of the last step.
  const double passes = 1.0 + (p.beta ? 3.0 : 0.0) + (p.bias ? 1.0 : 0.0) +
                        activation_passes(p.act, d.config.vfu_transcendental_factor) + 1.0;
  t.cycles += passes * static_cast<double>(d.vfu_cycles_fp32(rows * cols));
  // The channel affine: folded per strip (about ten short passes over its rows), then applied with
  // a multiply and two outer products (each about one pass over the strip).
  if (p.affine)
    t.cycles += static_cast<double>(strips) * 10.0 * static_cast<double>(d.vfu_cycles_fp32(plan.ms)) +
                3.0 * static_cast<double>(d.vfu_cycles_fp32(rows * cols));
  t.dram += static_cast<double>(nr * nc) * (plan.ksplit > 1 ? 4.0 : static_cast<double>(es_out) * (p.beta ? 2.0 : 1.0));
  return t;
}

struct Tile {
  TileTask task;
  double cycles = 0, dram = 0;
};

std::vector<Tile> make_tiles(const GemmProblem& p, const DeviceModel& d, const GemmPlan& plan, const ColOperand& y,
                             double* dram) {
  const std::size_t tile_rows = plan.pr * plan.mt, tile_cols = plan.pc * plan.nt;
  const std::size_t rtiles = ceil_div(p.rows, tile_rows), ctiles = ceil_div(p.cols, tile_cols);
  // Depth parts: whole granules.
  const std::size_t granules = ceil_div(p.depth, p.k_granule);
  std::vector<std::size_t> bounds;
  for (std::size_t i = 0; i <= plan.ksplit; ++i)
    bounds.push_back(std::min(p.depth, granules * i / plan.ksplit * p.k_granule));
  // Costs of the (at most 4) distinct tile shapes per depth part.
  std::vector<Tile> tiles;
  tiles.reserve(p.batch * rtiles * ctiles * plan.ksplit);
  *dram = 0;
  for (std::size_t part = 0; part < plan.ksplit; ++part) {
    const std::size_t kb = bounds[part], ke = bounds[part + 1];
    if (ke <= kb) continue;
    TileCost cost[2][2];
    for (int er = 0; er < 2; ++er)
      for (int ec = 0; ec < 2; ++ec) {
        const std::size_t nr = er ? p.rows - (rtiles - 1) * tile_rows : std::min(tile_rows, p.rows);
        const std::size_t nc = ec ? p.cols - (ctiles - 1) * tile_cols : std::min(tile_cols, p.cols);
        cost[er][ec] = tile_cost(p, d, plan, y, nr, nc, kb, ke);
      }
    for (std::size_t b = 0; b < p.batch; ++b)
      for (std::size_t rt = 0; rt < rtiles; ++rt)
        for (std::size_t ct = 0; ct < ctiles; ++ct) {
          Tile t;
          t.task.batch = b;
          t.task.r0 = rt * tile_rows;
          t.task.nr = std::min(tile_rows, p.rows - t.task.r0);
          t.task.c0 = ct * tile_cols;
          t.task.nc = std::min(tile_cols, p.cols - t.task.c0);
          t.task.k_begin = kb;
          t.task.k_end = ke;
          t.task.part = part;
          const TileCost& c = cost[rt + 1 == rtiles ? 1 : 0][ct + 1 == ctiles ? 1 : 0];
          t.cycles = c.cycles;
          t.dram = c.dram;
          *dram += c.dram;
          tiles.push_back(t);
        }
  }
  return tiles;
}

// Longest-first greedy assignment of tiles to clusters; returns the makespan. With `schedule`,
// also fills each cluster's task list (in tile order, so neighbouring tiles stay together).
double assign(std::vector<Tile>& tiles, std::size_t clusters, std::vector<std::vector<TileTask>>* schedule) {
  std::vector<std::size_t> order(tiles.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tiles[a].cycles > tiles[b].cycles; });
  using Load = std::pair<double, std::size_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> heap;
  for (std::size_t c = 0; c < clusters; ++c) heap.push({0.0, c});
  std::vector<std::vector<std::size_t>> owned(clusters);
  double makespan = 0;
  for (std::size_t i : order) {
    auto [load, c] = heap.top();
    heap.pop();
    load += tiles[i].cycles;
    makespan = std::max(makespan, load);
    owned[c].push_back(i);
    heap.push({load, c});
  }
  if (schedule) {
    schedule->assign(clusters, {});
    for (std::size_t c = 0; c < clusters; ++c) {
      std::sort(owned[c].begin(), owned[c].end());
      for (std::size_t i : owned[c]) (*schedule)[c].push_back(tiles[i].task);
    }
  }
  return makespan;
}

}  // namespace

std::size_t EngineBuffers::nram() const {
  return acc + b_slots * b_slot + 2 * xbuf + (ybuf_in_nram ? 2 * ybuf : 0) + out_stage + c_old + c_old32 + bias_raw +
         bias32 + affine + act_tmp + zeros;
}
std::size_t EngineBuffers::wram() const { return ybuf_in_nram ? 0 : 2 * ybuf; }
std::size_t EngineBuffers::sram() const { return x_ring * x_ring_slot + y_panels * y_panel + homes * home; }

EngineBuffers engine_buffers(const GemmProblem& p, const GemmPlan& plan, const ColOperand& y, bool partial_out,
                             std::size_t cores_per_cluster) {
  const std::size_t es = sim::dtype_size(p.in), es_out = sim::dtype_size(p.out);
  const std::size_t strip_acc = plan.ms * plan.nt * 4;
  const std::size_t a = std::min(plan.a_strips, plan.strips()), b = plan.b_strips();
  EngineBuffers buf;
  buf.acc = up128(a * strip_acc);
  if (b > 0) buf.b_slot = up128(strip_acc), buf.b_slots = 3;
  buf.xbuf = up128(plan.ms * plan.kc * es);
  buf.ybuf = up128(plan.kc * plan.nt * es);
  buf.ybuf_in_nram = !plan.on_tfu;
  if (!partial_out) {
    if (p.out != sim::DType::kFloat32) buf.out_stage = up128(plan.ms * plan.nt * es_out);
    if (p.beta) {
      buf.c_old = up128(plan.ms * plan.nt * es_out);
      if (p.out != sim::DType::kFloat32) buf.c_old32 = up128(plan.ms * plan.nt * 4);
    }
    if (p.bias) {
      const std::size_t n = p.bias_per_row ? plan.ms : plan.nt;
      buf.bias_raw = up128(n * es_out);
      buf.bias32 = up128(plan.ms * (p.bias_per_row ? 1 : plan.nt) * 4);
    }
    if (p.affine) buf.affine = affine_buffer_bytes(plan.ms, plan.nt);
    if (activation_needs_temp(p.act)) buf.act_tmp = up128(plan.ms * plan.nt * 4);
  }
  buf.zeros = up128(y.zero_bytes(plan.nt, plan.kc));
  if (plan.x_staged) buf.x_ring_slot = up128(plan.pr * plan.ms * plan.kc * es), buf.x_ring = plan.ring;
  if (plan.y_staged) buf.y_panel = up128(y.stage_bytes(plan.pc * plan.nt, plan.kc)), buf.y_panels = 2;
  if (b > 0) buf.home = up128(b * strip_acc), buf.homes = cores_per_cluster;
  return buf;
}

std::vector<DepthStep> depth_steps(const GemmProblem& p, std::size_t kc, std::size_t k_begin, std::size_t k_end,
                                   bool ramp) {
  std::vector<DepthStep> steps;
  for (std::size_t k = k_begin; k < k_end;) {
    std::size_t piece_end = k_end;
    if (p.k_segment > 0) piece_end = std::min(k_end, (k / p.k_segment + 1) * p.k_segment);
    const std::size_t len = piece_end - k;
    const std::size_t n = ceil_div(len, kc), granules = ceil_div(len, p.k_granule);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t a = k + granules * i / n * p.k_granule;
      const std::size_t b = std::min(piece_end, k + granules * (i + 1) / n * p.k_granule);
      if (b <= a) continue;
      // The head: a third of the first step, as a step of its own.
      const std::size_t head = (b - a) / p.k_granule / 3 * p.k_granule;
      if (ramp && steps.empty() && b - a >= 256 && head > 0) steps.push_back({a, head});
      const std::size_t from = steps.empty() ? a : std::max(a, steps.back().k0 + steps.back().kc);
      steps.push_back({from, b - from});
    }
    k = piece_end;
  }
  return steps;
}

namespace {

// Everything plan_gemm's answer depends on.
std::string plan_key(const GemmProblem& p, const DeviceModel& d, const ColOperand& y) {
  std::ostringstream k;
  k << p.batch << ' ' << p.rows << ' ' << p.cols << ' ' << p.depth << ' ' << p.k_granule << ' ' << p.k_segment << ' '
    << int(p.in) << ' ' << int(p.out) << ' ' << p.beta << p.bias << p.bias_per_row << p.affine << int(p.act) << ' '
    << p.y_must_stage << p.allow_split_k
    << " | " << d.tfu_rows << ' ' << d.tfu_cols << 'x' << d.config.tfu_array(d.in).count << ' ' << d.weight_stationary
    << d.config.tfu_fold_overlap << ' '
    << d.config.vfu_width_bytes << ' ' << d.config.vfu_startup_cycles << ' ' << d.dram_bpc << ' ' << d.io_dma_bpc << ' '
    << d.move_dma_bpc << ' ' << d.memcore_dma_bpc << ' ' << d.sram_bpc << ' ' << d.io_latency_cycles << ' '
    << d.move_latency_cycles << ' ' << d.burst_bytes << ' ' << d.nram_bytes << ' ' << d.wram_bytes << ' '
    << d.sram_bytes << ' ' << d.clusters << ' ' << d.cores_per_cluster << " | " << y.plan_key();
  return k.str();
}

GemmPlan search_plan(const GemmProblem& p, const DeviceModel& d, const ColOperand& y);

}  // namespace

// Planning searches thousands of candidates (milliseconds); training steps repeat the same
// shapes, so answers are cached (bounded: cleared when full).
GemmPlan plan_gemm(const GemmProblem& p, const DeviceModel& d, const ColOperand& y) {
  static std::mutex mu;
  static std::unordered_map<std::string, GemmPlan> cache;
  const std::string key = plan_key(p, d, y);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto hit = cache.find(key);
    if (hit != cache.end()) return hit->second;
  }
  GemmPlan plan = search_plan(p, d, y);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 4096) cache.clear();
  cache.emplace(key, plan);
  return plan;
}

namespace {

GemmPlan search_plan(const GemmProblem& p, const DeviceModel& d, const ColOperand& y) {
  GemmPlan best;
  best.ms = 0;
  double best_time = 0, best_dram = 0;
  const bool tfu = d.on_tfu();
  const std::size_t es = sim::dtype_size(p.in);
  const std::size_t vfu_lanes = std::max<std::size_t>(1, d.config.vfu_width_bytes / 4);
  const std::size_t row_unit = tfu ? (d.weight_stationary ? 8 : d.tfu_rows) : 1;
  const std::size_t col_unit = tfu ? d.tfu_cols : vfu_lanes;
  // Output-stationary: a strip of exactly R rows is one fold row, the cheapest intrinsic that
  // uses the whole array; 2R and 4R rows where that intrinsic is shorter than the latency of the
  // copy feeding the next strip (checked per candidate below). Weight-stationary streams M, so
  // longer strips amortise its fill.
  std::vector<std::size_t> strip_rows;
  if (tfu && !d.weight_stationary)
    strip_rows = {d.tfu_rows, 2 * d.tfu_rows, 4 * d.tfu_rows};
  else if (tfu)
    strip_rows = {64, 128, 256};
  else
    strip_rows = {32};
  const std::size_t cpc = d.cores_per_cluster;
  const std::size_t k_span = p.k_segment > 0 ? std::min(p.k_segment, p.depth) : p.depth;
  const std::size_t granules = ceil_div(p.depth, p.k_granule);
  std::vector<std::size_t> ksplits{1};
  if (p.allow_split_k)
    for (std::size_t s = 2; s <= d.clusters && s <= granules && p.depth / s >= 128; s *= 2) ksplits.push_back(s);

  for (std::size_t pr = 1; pr <= cpc; ++pr) {
    if (cpc % pr != 0) continue;
    const std::size_t pc = cpc / pr;
    for (std::size_t ksplit : ksplits) {
      const std::size_t part_span = std::min(k_span, round_up(ceil_div(p.depth, ksplit), p.k_granule));
      for (std::size_t kc : divisions(part_span, p.k_granule, part_span, 10)) {
        for (std::size_t ms : strip_rows) {
          GemmPlan plan;
          plan.pr = static_cast<unsigned>(pr);
          plan.pc = static_cast<unsigned>(pc);
          plan.ms = ms;
          plan.kc = kc;
          plan.row_unit = row_unit;
          plan.col_unit = col_unit;
          plan.on_tfu = tfu;
          plan.ksplit = ksplit;
          plan.x_staged = pc > 1;
          plan.y_staged = pr > 1 || p.y_must_stage;
          const std::size_t nt_cap = tfu ? d.wram_bytes / (2 * kc * es) : d.nram_bytes / (4 * kc * es);
          for (std::size_t nt : divisions(p.cols, col_unit * pc, nt_cap * pc, 14)) {
            plan.nt = nt / pc;
            // A taller output-stationary strip only pays where an R-row strip cannot hide the
            // latency of its successor's X copy (the per-strip prefetch, gemm_engine.h): there it
            // amortises the latency over more rows; elsewhere it only lengthens the first load and
            // the last strip's epilogue, which nothing overlaps.
            if (tfu && !d.weight_stationary && ms > d.tfu_rows) {
              const std::uint32_t latency = plan.x_staged ? d.move_latency_cycles : d.io_latency_cycles;
              if (d.matmul_cycles(d.tfu_rows, kc, plan.nt) >= latency) continue;
            }
            plan.mt = ms;
            plan.a_strips = 1;
            const EngineBuffers fixed = engine_buffers(p, plan, y, ksplit > 1, cpc);
            if (fixed.wram() > d.wram_bytes) continue;
            const std::size_t strip_acc = up128(ms * plan.nt * 4);
            const std::size_t without_acc = fixed.nram() - fixed.acc;
            if (without_acc + strip_acc > d.nram_bytes) continue;
            // Strips that fit NRAM alone, and with three streaming slots taken out.
            const std::size_t a_only = (d.nram_bytes - without_acc) / strip_acc;
            const std::size_t a_with_b = a_only >= 4 ? a_only - 3 : 0;
            const std::size_t sram_free = d.sram_bytes > fixed.sram() ? d.sram_bytes - fixed.sram() : 0;
            const std::size_t b_max = a_with_b > 0 ? sram_free / (cpc * strip_acc) : 0;
            const std::size_t strip_cap = std::max(a_only, a_with_b + b_max);
            for (std::size_t mt_cluster : divisions(p.rows, row_unit * pr, strip_cap * ms * pr, 10)) {
              plan.mt = mt_cluster / pr;
              const std::size_t strips = plan.strips();
              plan.a_strips = strips <= a_only ? strips : a_with_b;
              if (plan.a_strips == 0) continue;
              const EngineBuffers buf = engine_buffers(p, plan, y, ksplit > 1, cpc);
              if (buf.nram() > d.nram_bytes || buf.wram() > d.wram_bytes || buf.sram() > d.sram_bytes) continue;
              double dram = 0;
              std::vector<Tile> tiles = make_tiles(p, d, plan, y, &dram);
              const double makespan = assign(tiles, d.clusters, nullptr);
              // Compute and DRAM overlap, but near saturation they interfere (stalls while the
              // other catches up): a 4-norm fits the engine's measured times better than max().
              const double dram_time = dram / d.dram_bpc;
              double time = std::pow(std::pow(makespan, 4.0) + std::pow(dram_time, 4.0), 0.25);
              if (ksplit > 1) {  // partial sums written, re-read and reduced by a second kernel
                const double partial = static_cast<double>(ksplit + 1) * p.batch * p.rows * p.cols * 4;
                time += partial / d.dram_bpc;
              }
              const bool better =
                  best.ms == 0 || time < best_time * 0.999 || (time <= best_time * 1.001 && dram < best_dram);
              if (better) {
                best = plan;
                best_time = time;
                best_dram = dram;
              }
            }
          }
        }
      }
    }
  }
  if (best.ms == 0) return best;
  schedule_plan(p, d, y, &best);
  best.est_cycles = best_time;
  return best;
}

}  // namespace

// Greedy balanced partition: the largest pending tile goes to the least-loaded cluster if that
// keeps it within 1% of the average load; otherwise it is split in two (by rows, else columns)
// and both halves return to the queue. Big tiles stay whole where they fit, so the DRAM cost of
// splitting is paid only where the last round would leave clusters idle.
std::vector<Tile> balanced_split(const GemmProblem& p, const DeviceModel& d, const GemmPlan& plan, const ColOperand& y,
                                 const std::vector<Tile>& tiles, double* dram) {
  double total = 0;
  for (const Tile& t : tiles) total += t.cycles;
  const double target = total / static_cast<double>(d.clusters) * 1.01;
  const std::size_t row_step = plan.row_unit * plan.pr, col_step = plan.col_unit * plan.pc;
  auto by_cost = [](const Tile& a, const Tile& b) { return a.cycles < b.cycles; };
  std::priority_queue<Tile, std::vector<Tile>, decltype(by_cost)> pending(by_cost, tiles);
  std::vector<double> load(d.clusters, 0.0);
  std::vector<Tile> out;
  *dram = 0;
  while (!pending.empty()) {
    const Tile t = pending.top();
    pending.pop();
    const std::size_t c = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    TileTask first = t.task, second = t.task;
    const std::size_t half_rows = round_up((t.task.nr + 1) / 2, row_step);
    const std::size_t half_cols = round_up((t.task.nc + 1) / 2, col_step);
    bool split = load[c] + t.cycles > target;
    if (split && half_rows < t.task.nr) {
      first.nr = half_rows, second.r0 += half_rows, second.nr -= half_rows;
    } else if (split && half_cols < t.task.nc) {
      first.nc = half_cols, second.c0 += half_cols, second.nc -= half_cols;
    } else {
      split = false;
    }
    if (!split) {
      load[c] += t.cycles;
      *dram += t.dram;
      out.push_back(t);
      continue;
    }
    for (const TileTask& half : {first, second}) {
      const TileCost cost = tile_cost(p, d, plan, y, half.nr, half.nc, half.k_begin, half.k_end);
      pending.push(Tile{half, cost.cycles, cost.dram});
    }
  }
  std::sort(out.begin(), out.end(), [](const Tile& a, const Tile& b) {
    return std::tie(a.task.part, a.task.batch, a.task.r0, a.task.c0) <
           std::tie(b.task.part, b.task.batch, b.task.r0, b.task.c0);
  });
  return out;
}

// Contiguous partition: the clusters take consecutive runs of the tile list, each run ending where
// the running estimated cost reaches the next multiple of total / clusters; the tile straddling such
// a boundary is cut there (in whole row steps, or column steps for a tile wider than tall) so both
// clusters get their share. A cut costs one re-read of the tile's smaller panel (a row cut re-reads
// its Y columns, a column cut its X rows) and there are at most clusters - 1 cuts, so the last wave
// is balanced for a fraction of the extra DRAM traffic of balanced_split, whose halvings cut many
// tiles. Example, fp16 4096^3 on mlu370-x4: 16 tiles of 2048 x 552 (the last tile column 232 wide,
// two thirds of the work) leave two of the 8 clusters a third idle in the second wave; cut at 7
// row boundaries, every cluster carries an eighth of the work (+7 Y panels of DRAM traffic, ~+8%).
// Returns each cluster's pieces in execution order (the busy clusters are a prefix): largest
// first. A small piece re-reads a whole Y panel per depth step in a few strip iterations, so its
// loads outpace its intrinsics (DRAM-bound); it goes last rather than first, where every cluster's
// prologue already competes for DRAM (4096^3: 87.0% of TFU peak with the pieces last, 83.4% with
// them first, 84.2% between the whole tiles).
std::vector<std::vector<Tile>> contiguous_split(const GemmProblem& p, const DeviceModel& d, const GemmPlan& plan,
                                                const ColOperand& y, const std::vector<Tile>& tiles) {
  double total = 0;
  for (const Tile& t : tiles) total += t.cycles;
  const double share = total / static_cast<double>(d.clusters);
  const std::size_t row_step = plan.row_unit * plan.pr, col_step = plan.col_unit * plan.pc;
  // The first `units` steps of t (rows or columns), with its cost.
  auto head_of = [&](const TileTask& t, bool by_rows, std::size_t units) {
    TileTask h = t;
    if (by_rows)
      h.nr = std::min(t.nr, units * row_step);
    else
      h.nc = std::min(t.nc, units * col_step);
    const TileCost c = tile_cost(p, d, plan, y, h.nr, h.nc, h.k_begin, h.k_end);
    return Tile{h, c.cycles, c.dram};
  };
  std::vector<std::vector<Tile>> runs(d.clusters);
  std::size_t c = 0;
  double done = 0;  // cost assigned so far (pieces cost a little more than their whole tile)
  auto give = [&](const Tile& t) { runs[c].push_back(t), done += t.cycles; };
  for (const Tile& whole : tiles) {
    Tile t = whole;
    while (true) {
      const double boundary = share * static_cast<double>(c + 1);
      if (c + 1 == d.clusters || done + t.cycles <= boundary) {
        give(t);
        break;
      }
      const bool by_rows = t.task.nc <= t.task.nr;
      const std::size_t units = by_rows ? ceil_div(t.task.nr, row_step) : ceil_div(t.task.nc, col_step);
      // Largest head that stays within the boundary (lo units fit, hi units do not; cost grows
      // with the head), then one unit more if that overshoots by less than lo undershoots.
      std::size_t lo = 0, hi = units;
      while (hi - lo > 1) {
        const std::size_t mid = (lo + hi) / 2;
        (done + head_of(t.task, by_rows, mid).cycles <= boundary ? lo : hi) = mid;
      }
      const double under = boundary - done - (lo > 0 ? head_of(t.task, by_rows, lo).cycles : 0.0);
      const double over = done + head_of(t.task, by_rows, lo + 1).cycles - boundary;
      std::size_t take = over < under ? lo + 1 : lo;
      if (take == 0 && runs[c].empty()) take = 1;  // every cluster but the last gets some work
      if (take >= units) {                          // the whole tile, and cluster c is full
        give(t);
        ++c;
        break;
      }
      if (take > 0) {
        const Tile head = head_of(t.task, by_rows, take);
        give(head);
        TileTask rest = t.task;
        if (by_rows)
          rest.r0 += head.task.nr, rest.nr -= head.task.nr;
        else
          rest.c0 += head.task.nc, rest.nc -= head.task.nc;
        const TileCost rc = tile_cost(p, d, plan, y, rest.nr, rest.nc, rest.k_begin, rest.k_end);
        t = Tile{rest, rc.cycles, rc.dram};
      }
      ++c;  // the rest of t starts the next cluster
    }
  }
  for (std::vector<Tile>& run : runs)
    std::stable_sort(run.begin(), run.end(), [](const Tile& a, const Tile& b) { return a.cycles > b.cycles; });
  return runs;
}

void schedule_plan(const GemmProblem& p, const DeviceModel& d, const ColOperand& y, GemmPlan* plan) {
  // Candidates: the whole tiles and balanced_split's pieces (both assigned longest-first), and the
  // contiguous partition; the least estimated time wins (ties keep the earlier candidate).
  double best = 0, best_makespan = 0, best_dram = 0;
  bool have = false;
  auto consider = [&](double makespan, double dram, std::vector<std::vector<TileTask>>&& schedule) {
    const double time = std::pow(std::pow(makespan, 4.0) + std::pow(dram / d.dram_bpc, 4.0), 0.25);
    if (have && time >= best) return;
    have = true, best = time, best_makespan = makespan, best_dram = dram;
    plan->schedule = std::move(schedule);
  };
  auto consider_longest_first = [&](std::vector<Tile>& tiles, double dram) {
    std::vector<std::vector<TileTask>> schedule;
    const double makespan = assign(tiles, d.clusters, &schedule);
    consider(makespan, dram, std::move(schedule));
  };
  double dram = 0, split_dram = 0;
  std::vector<Tile> tiles = make_tiles(p, d, *plan, y, &dram);
  consider_longest_first(tiles, dram);
  std::vector<Tile> split = balanced_split(p, d, *plan, y, tiles, &split_dram);
  consider_longest_first(split, split_dram);
  {
    double makespan = 0, bytes = 0;
    std::vector<std::vector<TileTask>> schedule(d.clusters);
    const std::vector<std::vector<Tile>> runs = contiguous_split(p, d, *plan, y, tiles);
    for (std::size_t c = 0; c < runs.size(); ++c) {
      double load = 0;
      for (const Tile& t : runs[c]) load += t.cycles, bytes += t.dram, schedule[c].push_back(t.task);
      makespan = std::max(makespan, load);
    }
    consider(makespan, bytes, std::move(schedule));
  }
  plan->est_cycles = std::max(best_makespan, best_dram / d.dram_bpc);
  plan->est_dram_bytes = best_dram;
}

std::string GemmPlan::str() const {
  std::ostringstream s;
  s << "grid " << pr << "x" << pc << " strip " << ms << " core tile " << mt << "x" << nt << " kc " << kc << " ("
    << std::min(a_strips, strips()) << " strips in NRAM, " << b_strips() << " in SRAM)"
    << (x_staged ? " X:SRAM ring " + std::to_string(ring) : " X:direct") << (y_staged ? " Y:SRAM" : " Y:direct")
    << " ksplit " << ksplit << (on_tfu ? " TFU" : " VFU") << " est " << static_cast<std::uint64_t>(est_cycles)
    << " cycles, " << static_cast<std::uint64_t>(est_dram_bytes) << " DRAM bytes";
  return s.str();
}

}  // namespace mlusim::mlu::gemm
