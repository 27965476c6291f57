// The direct convolution: the TFU's conv2d intrinsic on NHWC tiles, weights resident in WRAM, no
// im2col anywhere (neither in DRAM nor gathered by DMA per window).
//
// Applies when the input and output are channels-innermost (NHWC strides: channel stride 1, an
// output image's pixels evenly spaced) and the weights are [OC, KH, KW, C] with channel stride 1
// (torch's channels_last OIHW), groups == 1, and the TFU has an array for the dtype. The other
// layouts keep the implicit-GEMM path (conv_forward.cpp), whose operands are channel-major.
//
// Work: the output is cut into tiles of `rh` whole output rows of one image (or, at stride 1, of
// `ni` whole images whose padded inputs are stacked; the rows between two images are computed and
// dropped), M = tile rows x OW pixels being the intrinsic's GEMM rows, by chunks of `nco` output
// channels (its GEMM columns); the depth runs over KH x KW taps and Cin chunks of `cc` channels
// (K = KH x KW x cc per intrinsic, accumulated over the chunks in an fp32 tile). With one Cin
// chunk a chunk of output channels may instead run as pieces of `ps` channels, one intrinsic,
// WRAM slot and output block each. A "job" is one output-channel chunk over a contiguous range of
// pixel tiles; jobs go round-robin to clusters (UNION1), and a cluster's compute cores split the
// job's pixel tiles. Per job the memory core stages the chunk's weights into SRAM once, so the
// cluster reads them from DRAM once: in groups of Cin chunks ([nco, KH, KW, group channels],
// 3-level copies; a group is the fewest chunks whose runs spread over the DRAM channels) or piece
// by piece (whole weight rows); depth-major weights (w_k_major) unit by unit as [KH, KW, unit
// channels, unit outputs], one 3-level copy per kernel row. Each core copies the unit (Cin chunk or piece) it needs into WRAM,
// where it stays for the job when all units fit (else two slots reloaded every step). Per step
// (tile, unit) a core prefetches the next step's input tile [in_h, Wp, cc] from DRAM into the other
// NRAM slot (one segment of cc channels per pixel, or one per row when cc == C) while the TFU runs
// the current intrinsic; pieces share their tile's input, loaded as soon as the tile two before
// it has left the slot, so during all of the previous tile's intrinsics; rows outside the image are zero-filled
// on the VFU, the left/right padding columns are zeroed once per slot. A tile's finished block is
// stored asynchronously, straight from the intrinsic's output when nothing is added (fp32, or one
// Cin chunk), else through the GEMM epilogue (gemm/epilogue.h: column bias, activation, rounding).
// With `split_last` a core's last intrinsic runs in two parts, its tile's images (else rows)
// halved, so that the first part's epilogue and store overlap the second part's intrinsic.
//
// SRAM protocol (barriers counted the same on every participant): per job the memory core stages
// group g, then passes a barrier; a core passes barrier g just before issuing its first copy out
// of group g (group 0 before its first intrinsic), so a group is in SRAM before any core copies
// it; a last barrier at the end of each job frees the SRAM for the next. With `split0` group 0 is
// staged in two halves of its output channels, a barrier after each: the cores copy the first
// half into WRAM while the second stages. A core's first two tiles
// run unit by unit (tile 0 and 1 on unit 0, then on unit 1, ...), so the wait for group g + 1 and
// its WRAM copy overlap an intrinsic instead of preceding the next one.
//
// Cost model of the plan (the planner's estimate; the simulation gives the real time): per core
// (the busiest: its contiguous share of a job's tiles, an image's last band of OH mod rh rows at
// its own cost), its tiles' steps, each the longest of the intrinsic's TFU cycles (tfu_timing.h
// via DeviceModel::conv_cycles; a phased step's intrinsics run back to back on one input tile, all
// but the first chained: conv_chained_cycles), its input DMA (IO-DMA rate, or the core's share of
// DRAM when every core loads, slowed by how unevenly the runs fall on the DRAM channels and
// divided among the chunks reading the same tile when the L2 serves them (below), or its share of
// the NoC/L2 stage) and its WRAM copy when not resident. Resident weights arrive unit by unit
// during the core's first two tiles (each later unit copied to WRAM, each later staging group
// staged, while the TFU runs on the units before it), so their TFU steps on all but the last unit
// take at least the longer of (units - 1) WRAM copies and (groups - 1) stagings. Plus the first
// unit's staging and copy (every cluster of the launch staging at once: the device's when the
// plan has a budget of clusters) and the last tile's store (the plan's cores storing at once: the
// convolutions on the other clusters of a launch end at other times); split0 when stage(half) +
// max(stage(half), copy(half)) + copy(half) beats stage + copy, decided for the chosen tiling
// alone (tilings compared on whole groups), and only for a compute-bound plan whose cores have two
// tiles or one staging group (else the first intrinsic waits for group 1's staging anyway); split_last when min(half the last tile's
// epilogue and store, the second part's intrinsic) beats the extra intrinsic's cycles (the two
// parts' minus the whole's: one more fill and drain, and their M folds). GDRAM reads = weights x
// (jobs per chunk) + input (with the halo rows; runs of cc < C channels a pixel in whole DMA
// bursts, here and in the tile's DMA) x (chunks); every byte crosses the NoC/L2 stage. DRAM bytes
// = those reads + output, except that
// on a chip with an L2 model (l2.cache) and all jobs in one round the input counts once: the
// chunks' jobs over the same pixels run at the same time on different clusters and the L2 serves
// the input tiles after the first read. Estimate = the largest of the compute, the DRAM bytes
// over the DRAM bandwidth and the GDRAM reads over the NoC bandwidth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
  std::size_t ps = 0;   // output channels per intrinsic (< nco: pieces, each its own WRAM slot; cc == C)
  std::size_t cc = 0;   // input channels per intrinsic (divides C)
  std::size_t gp = 1;   // jobs (pixel-tile ranges) per output-channel chunk
  std::size_t gq = 1;   // Cin chunks per weight-staging copy (divides qc)
  // Group 0 staged, and copied to WRAM, in two halves of its output channels (a barrier after
  // each; not with pieces), the cores copying the first half while the memory core stages the
  // second.
  bool split0 = false;
  // A core's last intrinsic runs in two parts (its tile's images, else rows, halved; not with
  // pieces), the first part's epilogue and store overlapping the second part's intrinsic.
  bool split_last = false;
  std::size_t q = 0, qc = 0, tb = 0, jobs = 0, clusters = 0;  // derived: chunks, Cin chunks, bands, jobs, clusters used
  double est_cycles = 0, est_dram_bytes = 0;
  std::string str() const;
};

// The convolution the kernel computes: input NHWC (channel stride 1), weights [OC, KH, KW, C]
// (channel stride 1, taps evenly spaced) or any tap layout with output-channel stride 1 (w_k_major), output through the GEMM epilogue's OutputSpec as, per
// image (batch index), a [OH * OW, OC] matrix.
struct DirectConv {
  sim::DType dtype = sim::DType::kFloat32;
  std::size_t n = 0, h = 0, w = 0, c = 0, oc = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  std::size_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::uint64_t x_base = 0;
  std::int64_t xs_n = 0, xs_h = 0, xs_w = 0;  // elements
  // Weight (o, c, ky, kx) at w_base + o ws_o + c ws_c + ky ws_kh + kx ws_kw elements (a negative
  // stride walks a kernel backwards: mirrored taps). Staged into WRAM as the intrinsic's
  // [OC, KH, KW, C] (ws_c == 1, taps evenly spaced: ws_kh == KW x ws_kw), or with w_k_major as
  // its depth-major [KH, KW, C, OC] (ConvParams::weights_k_major; ws_o == 1, any tap strides):
  // a backward-data pass reads the forward weights as they are, no transposed copy.
  std::uint64_t w_base = 0;
  std::int64_t ws_o = 0, ws_c = 1, ws_kh = 0, ws_kw = 0;
  bool w_k_major = false;
  std::int64_t ws_tap() const { return kw > 1 ? ws_kw : ws_kh; }  // between consecutive taps (not k-major)
  gemm::OutputSpec out;
  // Elements between two output rows of an image; 0: OW x out.row_stride (the rows of the [OH x OW,
  // OC] matrix follow each other). A phase of a strided backward-data writes every stride-th row.
  std::int64_t out_row_pitch = 0;
  // Several convolutions of one input, each tile's input loaded once for all of them (the phases
  // of a strided backward-data): empty for one convolution (kh x kw taps at w_base, output at
  // out.base). Each phase is a stride-1 convolution of the input padded by its own pad_h / pad_w
  // with a kernel of its own (depth-major: w_k_major), writing its oh x ow pixels at out.base +
  // out_off with the description's pixel stride (out.row_stride) and row pitch. unite_phases()
  // sets the description's window to the union of theirs (kh x kw at pad_h, pad_w; oh x ow the
  // largest; stride and dilation 1) and each phase's row_off / col_off in it. A phase's intrinsic
  // reads whole rows of the input tile (in_w = the tile's width Wp), so it computes Wp - kw + 1
  // columns per row, of which its ow first are kept.
  struct Phase {
    std::size_t kh = 1, kw = 1, oh = 0, ow = 0;
    std::int64_t pad_h = 0, pad_w = 0;
    std::int64_t w_off = 0;             // elements from w_base to its kernel's first tap
    std::int64_t ws_kh = 0, ws_kw = 0;  // its tap strides (elements)
    std::int64_t out_off = 0;           // elements from out.base to its pixel (0, 0)
    std::size_t row_off = 0, col_off = 0;  // derived (unite_phases)
  };
  std::vector<Phase> phases;
};

// Sets c's window from c.phases (see DirectConv::phases). Every phase needs pad_h, pad_w >= 0.
void unite_phases(DirectConv& c);

// Whether the direct kernel takes this forward convolution (layouts, groups, dtype, output stage).
bool direct_forward_applies(const Handle& h, const ConvShape& s, const View4& x, const View4& w, const View4& y,
                            const OutputStage& stage);

// Whether the direct kernel takes this backward-data convolution: dx = the stride-1 convolution
// of dy (padded by dilation x (kernel - 1) - pad) with the weights' roles of C and OC swapped and
// their taps mirrored, which the kernel stages depth-major straight from w (DirectConv::w_k_major).
// At stride s > 1 (dilation 1) dx splits into s_h x s_w phases (rows ry + s_h a, columns
// rx + s_w b); phase (ry, rx) is the stride-1 convolution of dy with the sub-kernel of the taps
// ky = ry + pad_h (mod s_h), kx likewise (backward_data_phases()), written with row pitch s_h
// rows and pixel stride s_w, so no zero-interleaved dy and no per-window gather. A phase no tap
// reaches (kernel < stride: a 1x1 / 2 downsample has three of four) is the bias, or zero.
// Needs groups 1, every phase with taps at a padding >= 0 (stride 1: pad <= dilation x
// (kernel - 1)), dy/dx channels-innermost, weights with channel stride 1, a TFU for the dtype.
bool direct_backward_data_applies(const Handle& h, const ConvShape& s, const View4& dy, const View4& w,
                                  const View4& dx);

// One phase of a strided backward-data (stride 1: the one phase, ry = rx = 0, all taps): output
// rows ry + stride_h x a (a < out_h), columns rx + stride_w x b (b < out_w); taps ky = k0y +
// stride_h x m (m < taps_h), mirrored in the sub-kernel; the stride-1 convolution's padding.
// taps_h x taps_w == 0: no tap reaches the phase (k0 and the paddings are then 0).
struct DataPhase {
  std::size_t ry = 0, rx = 0, out_h = 0, out_w = 0, k0y = 0, k0x = 0, taps_h = 0, taps_w = 0;
  std::int64_t pad_h = 0, pad_w = 0;
};
// The phases with outputs (empty list: dilation with stride, or a phase with taps at a negative
// padding).
std::vector<DataPhase> backward_data_phases(const ConvShape& s);

// The best plan for `conv` (rh == 0 when nothing fits the on-chip memories); conv.out's bias and
// activation decide the epilogue's buffers, not its addresses. max_clusters > 0: on at most that
// many clusters (the others running other convolutions of the same launch, which the DMA
// estimates count as loading DRAM at the same time).
DirectPlan plan_direct(const Handle& h, const DirectConv& conv, std::size_t max_clusters = 0);

// Enqueues the kernel (one UNION1 launch over the clusters the plan uses). Returns the kernels launched.
Status launch_direct(Handle& h, const std::string& name, const DirectConv& conv, const DirectPlan& plan,
                     std::uint32_t* kernels);

// Several independent convolutions in one UNION1 launch, each on its plan's clusters (consecutive
// blocks, at most the device's clusters in all): the phases of a strided backward-data run at the
// same time instead of one launch each (each launch pays its weight staging, pipeline fill and
// last store with cores idle).
Status launch_direct_concurrent(Handle& h, const std::string& name, const std::vector<DirectConv>& convs,
                                const std::vector<DirectPlan>& plans, std::uint32_t* kernels);

}  // namespace mlusim::mlu::conv
