// Tiling of the GEMM engine: the core grid of a cluster, each core's output tile, strip and depth
// step, which operands go through SRAM, how much of the accumulator lives in SRAM, whether depth
// is split over clusters, and which cluster computes which tile.
//
// The engine (gemm_engine.h) runs one UNION1 task group per cluster. A cluster owns a tile of C
// of (pr x mt) rows by (pc x nt) columns; its cores form a pr x pc grid and each accumulates an
// mt x nt fp32 tile over the whole depth. Per depth step (kc deep) a core walks its tile in strips
// of ms rows: each strip is one TFU intrinsic [ms, kc] x [kc, nt] with X's strip in NRAM and the
// step's Y block in WRAM. Where several cores share an operand (X when pc > 1, Y when pr > 1) the
// memory core stages it in SRAM once (GDRAM -> SRAM) and each core copies its part (SRAM ->
// NRAM/WRAM), so DRAM traffic is paid once per cluster tile instead of once per core:
//   X goes through a ring of `ring` strip slots, one slot per strip iteration (a cluster barrier
//   ends each iteration), so staging X needs only a few strips of SRAM whatever the tile height;
//   Y goes through two panels per depth step (the next step's block is copied into WRAM during the
//   current step, so the memory core stages a panel two steps ahead).
// The first `a_strips` strips of a core's accumulator stay in NRAM; the rest (b strips) live in
// SRAM and stream through three NRAM slots (loaded one iteration before their intrinsic, stored
// back right after it). That lets a core tile be taller than NRAM alone allows, so each Y block
// in WRAM serves more rows and DRAM traffic per MAC falls.
//
// Why these shapes: a TFU intrinsic costs folds x (K + R + C - 2) cycles (output-stationary,
// tfu_timing.h) for folds = ceil(M/R) x ceil(N/C), so K per intrinsic must be large (kc >= 512
// keeps the fill/drain below 15% on a 32x46 array) and M, N whole multiples of R and C. A strip
// is R rows (one fold row) on an output-stationary array, or 2R / 4R where an R-row intrinsic
// is shorter than the latency of the copy that brings the next strip (each iteration waits for
// its successor's copies, gemm_engine.h; a GPU-like preset's ~500-cycle DRAM latency). DRAM
// traffic per MAC is es x (1/rows + 1/cols) of the cluster tile, so the tile must be as large as
// the accumulator space allows. The planner enumerates candidates that fit NRAM/WRAM/SRAM and
// picks the least estimated time: a 4-norm of the compute makespan (greedy longest-first schedule
// over clusters, per-iteration DMA/SRAM limits) and total DRAM bytes / bandwidth. For the chosen
// tiling, schedule_plan then also weighs cutting tiles so the last wave is balanced: halving them
// greedily, or cutting the tile list into one contiguous run per cluster (gemm_plan.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm/device_model.h"
#include "gemm/operands.h"
#include "mlusim/mlu/activation.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::gemm {

struct GemmProblem {
  std::size_t batch = 1, rows = 0, cols = 0, depth = 0;
  std::size_t k_granule = 1;              // depth steps start and end at multiples of this (conv: KH x KW)
  std::size_t k_segment = 0;              // steps never cross a multiple of this (0: no limit)
  sim::DType in = sim::DType::kFloat32;   // X and Y
  sim::DType out = sim::DType::kFloat32;  // C
  bool beta = false;                      // the epilogue reads C
  bool bias = false, bias_per_row = false;
  bool affine = false;                           // fused per-row channel affine (OutputSpec::affine)
  Activation act = Activation::kNone;            // fused activation (OutputSpec::act)
  bool y_must_stage = false;  // Y is a gather that must come from SRAM (conv im2col)
  bool allow_split_k = true;  // depth may be split over clusters (needs a workspace)
};

struct TileTask {
  std::size_t batch = 0;
  std::size_t r0 = 0, nr = 0;          // cluster tile rows
  std::size_t c0 = 0, nc = 0;          // cluster tile columns
  std::size_t k_begin = 0, k_end = 0;  // depth range of this tile (split-K part)
  std::size_t part = 0;                // split-K part index
};

struct GemmPlan {
  unsigned pr = 1, pc = 1;                 // core grid of a cluster (pr x pc = cores per cluster)
  std::size_t ms = 0;                      // rows per matmul intrinsic (strip); 0 = no plan
  std::size_t mt = 1, nt = 1;              // largest core tile
  std::size_t a_strips = 1;                // strips of the core tile accumulated in NRAM (the rest in SRAM)
  std::size_t kc = 1;                      // largest depth step
  std::size_t row_unit = 1, col_unit = 1;  // core tiles split in whole TFU folds
  bool x_staged = false, y_staged = false;
  std::size_t ring = 5;  // X ring slots (see the engine's memory-core loop)
  bool on_tfu = true;
  std::size_t ksplit = 1;
  std::vector<std::vector<TileTask>> schedule;  // per cluster, in execution order
  double est_cycles = 0;
  double est_dram_bytes = 0;
  std::size_t strips() const { return (mt + ms - 1) / ms; }
  std::size_t b_strips() const { return strips() > a_strips ? strips() - a_strips : 0; }
  std::string str() const;  // one line for logs and the bench
};

// On-chip buffer sizes (bytes, each rounded to 128) of a plan; the kernel allocates exactly these.
struct EngineBuffers {
  std::size_t acc = 0, b_slot = 0, b_slots = 0, xbuf = 0, ybuf = 0, out_stage = 0, c_old = 0, c_old32 = 0, bias_raw = 0,
              bias32 = 0, affine = 0, act_tmp = 0, zeros = 0;
  bool ybuf_in_nram = false;
  std::size_t x_ring_slot = 0, x_ring = 0;  // SRAM: X ring slot bytes and count
  std::size_t y_panel = 0, y_panels = 0;    // SRAM: Y panel bytes and count
  std::size_t home = 0, homes = 0;          // SRAM: one core's streamed accumulator strips, per core
  std::size_t nram() const;
  std::size_t wram() const;
  std::size_t sram() const;
};
EngineBuffers engine_buffers(const GemmProblem& p, const GemmPlan& plan, const ColOperand& y, bool partial_out,
                             std::size_t cores_per_cluster);

// The best plan for `p` on `d` (ms == 0 when nothing fits the on-chip memories).
GemmPlan plan_gemm(const GemmProblem& p, const DeviceModel& d, const ColOperand& y);

// Fills plan->schedule (and the estimates) for a plan whose tiling fields are set.
void schedule_plan(const GemmProblem& p, const DeviceModel& d, const ColOperand& y, GemmPlan* plan);

// The depth steps of one tile: [k_begin, k_end) cut at multiples of k_segment, each piece cut
// into equal steps of at most kc, in whole granules. `ramp` (a cluster's first tile) splits the
// first step into a third and the rest: nothing overlaps the loads of the very first step, so a
// short one starts the TFU early, and its intrinsics last long enough to hide the next loads.
struct DepthStep {
  std::size_t k0 = 0, kc = 0;
};
std::vector<DepthStep> depth_steps(const GemmProblem& p, std::size_t kc, std::size_t k_begin, std::size_t k_end,
                                   bool ramp = false);

}  // namespace mlusim::mlu::gemm
