// The direct convolution: the TFU's conv2d intrinsic on NHWC tiles, weights resident in WRAM, no
// im2col anywhere (neither in DRAM nor gathered by DMA per window).
//
// Applies when the input and output are channels-innermost (NHWC strides: channel stride 1, an
// output image's pixels evenly spaced) and the weights are [OC, KH, KW, C] with channel stride 1
// (torch's channels_last OIHW), groups == 1, and the TFU has an array for the dtype. The other
// layouts keep the implicit-GEMM path (conv_forward.cpp), whose operands are channel-major.
//
// Work: the output is cut into tiles of `rh` whole output rows of one image (M = rh x OW pixels,
// the intrinsic's GEMM rows) by chunks of `nco` output channels (its GEMM columns); the depth runs
// over KH x KW taps and Cin chunks of `cc` channels (K = KH x KW x cc per intrinsic, accumulated
// over the chunks in an fp32 tile). A "job" is one output-channel chunk over a contiguous range of
// pixel tiles; jobs go round-robin to clusters (UNION1), and a cluster's compute cores split the
// job's pixel tiles. Per job the memory core stages the chunk's weights into SRAM once, Cin-chunk
// major ([qc][nco][KH][KW][cc], 3-level copies of cc-channel runs), so the cluster reads them from
// DRAM once; each core copies the Cin chunk it needs into WRAM (once per job when qc == 1, else
// per step, double-buffered). Per step (tile, Cin chunk) a core prefetches the next step's input
// tile [in_h, Wp, cc] from DRAM into the other NRAM slot (one segment of cc channels per pixel, or
// one per row when cc == C) while the TFU runs the current intrinsic; rows outside the image are
// zero-filled on the VFU, the left/right padding columns are zeroed once per slot. After a tile's
// last Cin chunk the GEMM epilogue (gemm/epilogue.h: column bias, activation, rounding) finishes the
// [M, nco] block and stores it asynchronously.
//
// SRAM protocol (barriers counted the same on every participant): the memory core stages Cin
// chunks 0 and 1, barrier; then chunk j + 2 before the barrier that the cores pass after their
// first tile's intrinsic j (j < qc - 2), so a chunk is in SRAM before any core copies it; a barrier
// at the end of each job frees the SRAM for the next.
//
// Cost model of the plan (the planner's estimate; the simulation gives the real time): per core,
// steps x max(TFU cycles of the intrinsic (tfu_timing.h via DeviceModel::matmul_cycles), the
// step's input DMA, its WRAM copy); DRAM bytes = weights x (jobs per chunk) + input x (chunks) +
// output, over the DRAM bandwidth; estimate = max of the two plus the first chunk's staging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "conv/conv_forward.h"
#include "conv/conv_shape.h"
#include "gemm/gemm_engine.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::conv {

struct DirectPlan {
  std::size_t rh = 0;   // output rows per tile (0: no plan)
  std::size_t ni = 1;   // images per tile (> 1: whole images stacked, rh = OH, stride 1)
  std::size_t nco = 0;  // output channels per chunk (the intrinsic's N)
  std::size_t cc = 0;   // input channels per intrinsic (divides C)
  std::size_t gp = 1;   // jobs (pixel-tile ranges) per output-channel chunk
  std::size_t gq = 1;   // Cin chunks per weight-staging copy (divides qc)
  std::size_t q = 0, qc = 0, tb = 0, jobs = 0, clusters = 0;  // derived: chunks, Cin chunks, bands, jobs, clusters used
  double est_cycles = 0, est_dram_bytes = 0;
  std::string str() const;
};

// The convolution the kernel computes: input NHWC (channel stride 1), weights [OC, KH, KW, C]
// (channel stride 1, taps evenly spaced), output through the GEMM epilogue's OutputSpec as, per
// image (batch index), a [OH * OW, OC] matrix.
struct DirectConv {
  sim::DType dtype = sim::DType::kFloat32;
  std::size_t n = 0, h = 0, w = 0, c = 0, oc = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  std::size_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::uint64_t x_base = 0;
  std::int64_t xs_n = 0, xs_h = 0, xs_w = 0;  // elements
  std::uint64_t w_base = 0;
  std::int64_t ws_o = 0, ws_t = 0;  // elements between output channels, between taps
  gemm::OutputSpec out;
};

// Whether the direct kernel takes this forward convolution (layouts, groups, dtype, output stage).
bool direct_forward_applies(const Handle& h, const ConvShape& s, const View4& x, const View4& w, const View4& y,
                            const OutputStage& stage);

// Whether the direct kernel takes this backward-data convolution: dx = the stride-1 convolution
// of dy (padded by dilation x (kernel - 1) - pad) with the weights transposed to [C, KH, KW, OC]
// and their taps mirrored (written to the workspace by one transposing copy, gemm/strided_copy.h).
// Needs stride 1, groups 1, pad <= dilation x (kernel - 1), dy/dx channels-innermost, weights
// with channel stride 1, a TFU for the dtype.
bool direct_backward_data_applies(const Handle& h, const ConvShape& s, const View4& dy, const View4& w,
                                  const View4& dx);

// The best plan for `conv` (rh == 0 when nothing fits the on-chip memories); conv.out's bias and
// activation decide the epilogue's buffers, not its addresses.
DirectPlan plan_direct(const Handle& h, const DirectConv& conv);

// Enqueues the kernel (one UNION1 launch over the clusters the plan uses). Returns the kernels launched.
Status launch_direct(Handle& h, const std::string& name, const DirectConv& conv, const DirectPlan& plan,
                     std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
