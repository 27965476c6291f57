// The direct backward-weight convolution: dW[o, ky, kx, c] = sum over images and output pixels p
// of dY[n, p, o] x X[n, window(p, ky, kx), c], on NHWC tiles with the sums kept on chip; no im2col
// and no per-window DMA gather from DRAM.
//
// Applies when x and dy are channels-innermost (channel stride 1; dy's pixels evenly spaced in an
// image), dw is [OC, KH, KW, C] with channel stride 1 and evenly spaced taps (torch's
// channels_last OIHW), groups == 1, the TFU has an array for the dtype and at least as many input
// channels as array columns, and the convolution has windows (not 1x1 at stride 1, which is one
// GEMM over the pixels and stays with the GEMM engine). Any stride, padding, dilation.
//
// Work: dW is cut into blocks of `ocb` output x `cb` input channels (all taps). A block's pixels
// (the output pixels of all images, as tiles of `rh` whole output rows of one image, or of `ni`
// whole images) are split into `s` parts; a job = (block, part) runs on one compute core, the s
// parts of a block on s cores of one cluster. Per tile a core
//   - loads the input tile [in_h, Wp, cb] (zero rows/columns where the window leaves the image)
//     and dY's [P, ocb] (P = the tile's output pixels) into NRAM by IO-DMA, each into the slot
//     of the tile's parity (the next tile's load fills the other during this tile's matmuls);
//   - per group of `tg` taps (the last group: the taps left): copies each tap's window X_t[P, cb]
//     into WRAM, the group's windows side by side as B[P, g x cb] (one on-chip strided copy NRAM
//     -> WRAM per tap: a run of OW x cb per output row at stride 1 with one tap a group, else a
//     run of cb per pixel) and accumulates acc[group][ocb, g x cb] (fp32, NRAM) += dY^T[ocb, P] x
//     B on the TFU: M = ocb (array rows), K = P (streamed), N = g x cb (array columns), dY [P, ocb]
//     being dY^T stored depth-major (dev::matmul_a_k_major: no transpose pass). A group of
//     taps fills the array's column folds where one tap's cb would leave most of the last fold idle
//     (cb = 64 on 46 columns: 70% of two folds; two taps, N = 128: 93% of three).
// The next group's window copies and the next tile's loads (x and dY, spread over the tile's
// groups, one piece per group) run while the TFU computes; the core syncs once per group. With
// `half_first` a job's first tile runs as two (its images halved, else its rows), so only half a
// tile loads before the first matmul, every core loading at once. With `resident` (s == 1) a
// job's last two tiles both stay on chip and their steps go group by group, (tile T - 2, g),
// (tile T - 1, g): group g's sums are final after its second step and stored (rounded into a
// store buffer) in two halves during the next group's two steps, so the dW stores, at DRAM pace
// when every core stores, spread over two tiles instead of crowding the last one. With
// `shared` input tiles the memory core stages tile t + 1 in SRAM (double-buffered; one cluster
// barrier per tile, passed at the first group of tile t) and the cores copy it into NRAM from
// there. With s == 1 a group's sums are final once the last tile's matmul of that group is done:
// the core rounds them to the dtype and stores them while the next group's matmul runs (all cores
// end a round together, so a store after the compute would find every core writing dW at once).
// A core with s > 1 copies each group's partial sums to SRAM once they are final (the last tile's
// matmul of that group done), during the next group's matmul; after a cluster barrier each of the
// s cores adds the others' partials for 1/s of the block's rows (VFU) and stores them, rounded to
// the dtype.
//
// Cost model of the plan (the planner's estimate; the simulation gives the real time), per core
// and round of jobs (jobs / cores rounds):
//   tile   = sum over groups of max(mm(ocb, P, g x cb), the next group's
//     copies g' x copy_t + move latency (+ the piece's SRAM -> NRAM copy when shared: the core's
//     one Move-DMA engine carries both), the group's piece of the next tile's load); with one
//     group the copies follow the load (shared: and at least the memory core's staging)
//     mm = DeviceModel::matmul_cycles (tfu_timing.h), copy_t = P x cb x es / move rate (per pixel
//     runs: a latency per image, each run in whole DMA bursts), load = the tile's x (its runs of
//     cb channels rounded up to DMA bursts) and dY bytes, in groups - 1 pieces, at the IO-DMA rate, or
//     the core's share of DRAM for the bytes the L2 does not serve, or its share of the NoC/L2
//     stage; with all jobs in one round on a chip with an L2 model, the blocks reading the same
//     tile at the same time (x: those of the same input channels; dY: of the same output
//     channels) read it from DRAM once;
//   round  = first load + tiles per part x tile + (s > 1: the reduction, w_last + sum over the
//     groups but the last of max(0, w_g - the next group's mm) + acc x cores x (s - 1) / s bytes
//     over the SRAM rate + the VFU adds, w_g = a group's acc x cores bytes over the SRAM rate:
//     each group's partial sums go to SRAM during the next group's matmul, the last group's
//     after it) + stores, where store = the
//     block's dW bytes at the IO-DMA rate or the core's share of DRAM (every core stores at once)
//     and stores = store / s, or (s == 1, groups stored early) store_g + (groups - 1) x max(0,
//     store_g - mm_g), store_g = store x tg / taps: a group's store overlaps the next group's
//     matmul;
//   GDRAM reads = (OC / ocb) x X (with halo rows; / cores per cluster when shared) + (C / cb) x dY;
//   DRAM bytes = those reads, or (L2, one round) X + dY once, + dW; estimate = the largest of
//     rounds x round, DRAM bytes / DRAM rate and GDRAM reads / NoC rate. Shared: `load` is the
//     longest of the core's dY load, its SRAM -> NRAM copy (the SRAM port shared by the cluster)
//     and the memory core's staging (its DMA rate, its cluster's share of DRAM or of the NoC).
//   resident, for the chosen tiling alone, when first load + (tiles - 2) x tile +
//     max(mm, the last tile's load) + window copies + the pair's other steps'
//     max(mm, copies, half a group's store) + casts + the last group's store beats the
//     tile-major round (its early stores counted with their VFU casts, which the tilings'
//     comparison leaves out);
//   half_first is decided for the chosen tiling alone (the tilings are compared with whole first
//     tiles; comparing them with halves picked tilings that ran slower, ResNet-50 l3_3x3s2_256:
//     37.4 us against 36.0): on when first load(1/2) + tile(1/2, next 1/2) + tile(1/2, next 1)
//     beats first load(1) + tile(1, next 1), tile(f, next fn) = the tile formula above for f x P
//     pixels carrying the loads of a next tile of fn x P (first load and loads scaled alike).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "conv/conv_shape.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::conv {

// The gradient the kernel computes. Element strides.
struct WeightGradConv {
  sim::DType dtype = sim::DType::kFloat32;
  std::size_t n = 0, h = 0, w = 0, c = 0, oc = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  std::size_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::uint64_t x_base = 0, dy_base = 0, dw_base = 0;
  std::int64_t xs_n = 0, xs_h = 0, xs_w = 0;  // x: image, row, pixel (channel stride 1)
  std::int64_t ys_n = 0, ys_w = 0;            // dy: image, pixel (rows are OW pixels apart)
  std::int64_t ws_o = 0, ws_t = 0;            // dw: output channel, tap (channel stride 1)
};

struct WeightGradPlan {
  std::size_t ocb = 0;  // output channels per block (matmul M); 0: no plan
  std::size_t cb = 0;   // input channels per block
  std::size_t tg = 1;   // taps per matmul: a group of tg taps' windows side by side, N = tg x cb (the last group: the taps left)
  std::size_t s = 1;    // pixel parts per block (cores of one cluster; divides cores per cluster)
  std::size_t rh = 0;   // output rows per tile
  std::size_t ni = 1;   // images per tile (> 1: rh = OH)
  // s == 1 only: a cluster's cores take consecutive output-channel blocks of the same input
  // channels (nob a multiple of the cores per cluster), so they need the same input tiles: the
  // memory core stages each tile in SRAM once and the cores copy it from there (input read from
  // DRAM nob / cores times instead of nob times).
  bool shared = false;
  // Each job's first tile runs as two halves (its images, else its rows), so the loads before the
  // first matmul are half a tile's and the second half's load overlaps the first half's matmuls.
  bool half_first = false;
  // s == 1: each job's last two tiles kept on chip and run group by group, each group's sums
  // stored while the next group runs (WeightGradRun::last_pair); not with half_first.
  bool resident = false;
  std::size_t nob = 0, ncb = 0, tb = 0, tiles = 0, jobs = 0, rounds = 0, clusters = 0;  // derived
  double est_cycles = 0, est_dram_bytes = 0;
  std::string str() const;
};

// The kernel's description of a backward-weight convolution, when it applies (see the header).
bool direct_backward_weight_applies(const Handle& h, const ConvShape& s, const View4& x, const View4& dy,
                                    const View4& dw);
WeightGradConv weight_grad_conv(const ConvShape& s, const View4& x, const View4& dy, const View4& dw);

// The best plan (ocb == 0 when nothing fits the on-chip memories).
WeightGradPlan plan_weight_grad(const Handle& h, const WeightGradConv& conv);

// Enqueues the kernel (one UNION1 launch). Returns the kernels launched.
Status launch_weight_grad(Handle& h, const std::string& name, const WeightGradConv& conv, const WeightGradPlan& plan,
                          std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
