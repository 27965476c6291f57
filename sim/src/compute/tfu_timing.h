// TFU (tensor unit) cost model: cycles of a GEMM or a convolution on one or several identical R x C
// systolic arrays.
//
// Pure arithmetic on shapes: no SystemC, no data. The simulated core asks for the cost of one
// matmul/conv intrinsic, occupies its TFU for `cycles`, and reports `folds`/`utilisation` in its
// statistics. The arithmetic itself lives in compute/tensor_math.h.
//
// ------------------------------------------------------------------------------------------------
// Mapping (as SCALE-Sim v2, scalesim/topology_utils.py calc_spatio_temporal_params):
//   GEMM C[M,N] = A[M,K] x B[K,N]
//   output-stationary (OS): Sr = M (array rows), Sc = N (array cols), T = K (streamed)
//   weight-stationary (WS): Sr = K (array rows), Sc = N (array cols), T = M (streamed)
//   folds = ceil(Sr / R) * ceil(Sc / C)
// A partial fold (Sr or Sc not a multiple of R or C) is charged like a full one: SCALE-Sim pads
// its operand tiles with null requests (-1) up to R rows / C cols before adding gaps and skew.
//
// Fold overlap OFF (the reference semantics: every fold pays fill and drain):
//   OS: cycles = folds * (K + R + C - 2) - 1
//   WS: cycles = folds * (M + 2R + C - 2) - 1
//
// Derivation from SCALE-Sim v2 (github scalesim-project/scale-sim-v2; read at commits aabd619e
// and 0b80b279 of scalesim/compute/systolic_compute_os.py, a47e96e6 and 11a84139 of
// systolic_compute_ws.py, 7ea0466f and 1eea742c of scalesim/memory/double_buffered_scratchpad_mem.py;
// the shapes below are identical in all of them):
//   skew_matrix(X) of an r x c matrix returns (r + c - 1) x c rows.
//   OS, create_ofmap_demand_mat(), per fold: the output tile padded to R x C, flipped, prefixed by
//     `inter_fold_gap_prefix = self.T - 1` null rows -> (T - 1 + R) rows, then skewed -> + C - 1:
//     T + R + C - 2 rows. (create_ifmap_demand_mat: T rows + `arr_col - 1` suffix, skewed over R
//     cols -> T + C - 1 + R - 1; create_filter_demand_mat: T + `arr_row - 1`, skewed over C cols:
//     the same count, as the asserts in create_demand_matrices() require.)
//   WS, create_filter_demand_mat(), per fold: the R x C weight tile (padded) plus
//     `inter_fold_gap_suffix = arr_row + arr_col + T - 2` null rows -> T + 2R + C - 2 rows, not
//     skewed. (ifmap: `arr_row` prefix + T + `arr_col - 1` suffix, skewed over R cols -> same;
//     ofmap: `2*arr_row - 1` prefix + T, skewed over C cols -> same.)
//   Folds are concatenated with no further gap: the demand matrices have L = folds * per_fold rows.
//   double_buffered_scratchpad.service_memory_requests() serves demand row i at cycle
//     `i + self.stall_cycles` and reports `self.total_cycles = int(ofmap_serviced_cycles[-1][0])`,
//     i.e. the 0-based cycle of the last row: L - 1 + stalls. With no memory stalls (the reported
//     "Stall Cycles" = 0; in general Total - Stall) the compute cycles are exactly L - 1.
// Cross-checks against published SCALE-Sim v2 output:
//   - scalesim-project/SCALE-Sim issue #125: 4x4 array, OS, topology test_valid_4.csv (ifmap 1x4,
//     filter 1x1, 4 channels, 4 filters: M = K = N = 4) -> "Compute cycles: 9" = 1*(4+4+4-2) - 1.
//   - scalesim-project/SCALE-Sim issue #4: 32x32 array, WS, AlexNet conv1 (227x227x3, 11x11,
//     96 filters, stride 4: M = 55*55 = 3025, K = 363, N = 96): the progress bar runs over 112284
//     demand rows = 12*3 folds * (3025 + 64 + 32 - 2), and Total - Stall = 138802 - 26519 = 112283.
// Degenerate corner: SCALE-Sim's "-1" makes a 1x1 OS array report folds*K - 1 < M*K*N, one cycle
// below the MAC roofline; every array with R + C >= 3 respects it. Configs should not use 1x1.
//
// Fold overlap ON (consecutive folds pipeline; our extension, SCALE-Sim has no such mode):
//   The skew fill and the final drain are paid once; consecutive folds start one "fold interval"
//   apart, the interval being limited by whichever edge port the fold occupies longest:
//   OS: operands stream for K cycles per fold, and the R stationary outputs of each column leave
//       through the bottom edge in R cycles (outputs shift into shadow registers so the next fold
//       accumulates meanwhile): interval = max(K, R).
//       cycles = (K + R + C - 2) + (folds - 1) * max(K, R) - 1
//   WS: the next fold's R weight rows load into shadow registers (R cycles on the weight port)
//       while the current fold streams its M input rows: interval = max(M, R).
//       cycles = (M + 2R + C - 2) + (folds - 1) * max(M, R) - 1
//   With one fold both modes agree, and overlap never costs more than no overlap.
//
// Several identical arrays (`tfu.arrays` = A >= 1, TfuArray::count; TPU v3: 2 MXUs per core):
//   The intrinsic's F folds are dealt out over the A arrays, which run at the same time; each
//   array runs its share back to back with the single-array schedule above, so the intrinsic
//   lasts as long as the busiest array. Two ways to deal them, the cheaper one counts:
//   (a) whole folds: the busiest holds F_A = ceil(F / A) folds:
//     overlap OFF: cycles = F_A * per_fold(T) - 1    (per_fold(T): OS T + R + C - 2, WS T + 2R + C - 2)
//     overlap ON:  cycles = per_fold(T) + (F_A - 1) * max(T, R) - 1
//   (b) when A does not divide F: floor(F / A) whole folds each, and the L = F mod A leftover
//       folds split along their streamed rows, every array holding each leftover fold's tile and
//       streaming T_A = ceil(T / A) of its rows (two MXUs given the same weight tile, half of
//       the LHS rows each):
//     overlap OFF: cycles = floor(F / A) * per_fold(T) + L * per_fold(T_A) - 1
//     overlap ON:  cycles = per_fold(first) + the other folds' intervals max(T, R) or
//                  max(T_A, R) - 1, first = a whole fold when there is one
//   Without (b) an odd fold count on two arrays leaves one idle for a whole fold: a 3x3 conv
//   with 128 input and output channels is K = 1152 = 9 folds of 128 rows, 5 on one MXU and 4 on
//   the other, 90% at best, where the TPU runs that layer at 93% of its peak (fidelity.md).
//   A = 1 gives F_A = F and no leftover: the formulas above, SCALE-Sim v2's count, unchanged.
//   Why folds first: a fold is the unit an array holds (WS: one R x C weight tile; OS: one R x C
//   output tile), so independent folds need no communication between arrays. Folds that cover
//   different K ranges of the same outputs, and the shares of a split OS fold (K is its streamed
//   dimension), leave partial sums in two arrays' accumulators; adding them is assumed free (it
//   happens while results drain, as TPU's vector unit pops and adds MXU results in parallel with
//   the MXUs). A split WS fold's shares are different output rows: nothing to add.
//   folds (reported) stays the total; utilisation = macs / (cycles x R x C x A).
//
// Back-to-back intrinsics (fold overlap ON only; the core applies it, sim/src/core/core.cpp):
//   folds of consecutive intrinsics pipeline like the folds of one: the next intrinsic's first
//   fold enters the array one fold interval after the last fold of the previous one entered,
//   while that fold still drains, instead of after it has drained. The previous intrinsic's
//   drain = per_fold(T_last) - max(T_last, R) - 1 cycles (OS: R + C - 3, WS: 2R + C - 3 once
//   T_last >= R; T_last: the streamed rows of the busiest array's last fold; the - 1 is the
//   count's, so that two intrinsics of f folds chained cost one of 2 f folds and a chain never
//   beats the roofline) are then hidden:
//     cycles charged = cycles - min(drain_prev, cycles by which its operands were ready before
//                                   the previous intrinsic ended)
//   Only when the core issues it the moment the previous one ends (no stall between them: a
//   queued instruction), and not when it reads (as A or B) what the previous one wrote.
//   Accumulating into the previous one's C does not stall: sums are added on the output side
//   as they drain (Gemmini's accumulator memory, the TPU's accumulators), fold i of the next
//   intrinsic draining after fold i of the previous. Grounds: the TPUv1 paper (Jouppi et al.,
//   ISCA 2017, section 2) gives a matrix multiply instruction of B input rows B pipelined
//   cycles, its microarchitecture built to keep the matrix unit busy across instructions; an
//   array that drained between instructions would pay R + C - 3 more per instruction. The
//   intrinsics must run on the same array (dtype); a change of array breaks the chain.
//   fold overlap OFF: drain = 0, every intrinsic pays its fill and drain (SCALE-Sim).
//
// Roofline: cycles >= ceil(Sr/R)*ceil(Sc/C)*T / A - 1 >= M*K*N / (R*C*A) - 1 in every mode, and
// >= M*K*N / (R*C*A) whenever R + C >= 3 (see above).
//
// Convolution maps to GEMM as SCALE-Sim does (operand_matrix.py / topology_utils.py): one output
// pixel per GEMM row, M = OH * OW, K = KH * KW * Cin, N = Cout. The caller passes OH and OW, so
// stride, dilation and padding only enter through them.
//
// Depth folded tap by tap (`tfu.conv_depth_per_tap`, default off = SCALE-Sim's im2col depth above):
//   an array fed straight from a channels-innermost tile, with no im2col, streams for each output
//   pixel one tap's Cin channels at a time: a streamed row is one pixel's channel vector at one
//   tap's offset, so one fold's K range never spans two taps. Weight-stationary, where K is the
//   array-row dimension, the row folds are then counted per tap:
//     WS: folds = KH * KW * ceil(Cin / R) * ceil(Cout / C)   (im2col: ceil(KH * KW * Cin / R) * ...)
//   i.e. the GEMM formulas above with K' = KH * KW * R * ceil(Cin / R) (macs stay M * K * N). It
//   changes nothing when Cin is a multiple of R or the kernel is 1 x 1; a 3 x 3 conv with 64 input
//   channels on 128 rows takes 9 half-used row folds instead of 5 (4.5 rounded up). Output-
//   stationary streams K: consecutive taps continue the same accumulation, so OS is unchanged.
//   Evidence that the TPU v3 maps convolutions so: PyTorchSim's conv templates (the simulator the
//   issue's TPU v3 comparison comes from; PSAL-POSTECH/PyTorchSim, PyTorchSimFrontend/mlir/
//   mlir_conv_template.py and mlir_conv_sb_template.py) issue one matmul per kernel position
//   with the depth a tile of input channels on the vector lanes, and Cloud TPU's performance
//   guide has XLA pad convolution feature dimensions to multiples of 128 at a per-core batch
//   that is a multiple of 8 but under 128 (docs/fidelity.md).
// ------------------------------------------------------------------------------------------------
#pragma once

#include <cstdint>

#include "mlusim/sim/config.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::sim::compute {

// Cost of one TFU operation.
struct TfuCost {
  std::uint64_t cycles = 0;     // TFU core-clock cycles (formulas above); 0 for an empty GEMM
  std::uint64_t folds = 0;      // ceil(Sr/R) * ceil(Sc/C), over all arrays together
  std::uint64_t macs = 0;       // M * K * N multiply-accumulates
  // Fold overlap on: cycles at the end of the operation during which the array already accepts
  // the next intrinsic's operands (its last fold draining), which a back-to-back intrinsic hides
  // (header, "Back-to-back intrinsics"). 0 with fold overlap off.
  std::uint64_t drain = 0;
  double utilisation = 0.0;     // macs / (cycles * R * C * arrays), in [0, 1]; 0 when cycles == 0
};

// GEMM C[M,N] = A[M,K] x B[K,N] on `array` (array.count identical arrays; must be supported:
// rows, cols, count > 0, else std::invalid_argument). Any of m, k, n == 0 is an empty operation:
// all fields 0.
TfuCost tfu_gemm_cycles(const TfuArray& array, Dataflow dataflow, bool fold_overlap,
                        std::uint64_t m, std::uint64_t k, std::uint64_t n);

// Same, with the array, dataflow and overlap taken from `cfg` for input dtype `in_t` (fp32, fp16,
// bf16 or int8). Throws std::invalid_argument naming the dtype when the TFU has no array for it.
TfuCost tfu_gemm_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t m, std::uint64_t k,
                        std::uint64_t n);

// Convolution producing an OH x OW x Cout output from KH x KW x Cin windows:
// tfu_gemm_cycles(M = OH*OW, K = KH*KW*Cin, N = Cout).
// depth_per_tap: the per-tap fold count above (weight-stationary only).
TfuCost tfu_conv_cycles(const TfuArray& array, Dataflow dataflow, bool fold_overlap, bool depth_per_tap,
                        std::uint64_t oh, std::uint64_t ow, std::uint64_t kh, std::uint64_t kw,
                        std::uint64_t cin, std::uint64_t cout);
TfuCost tfu_conv_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t oh, std::uint64_t ow,
                        std::uint64_t kh, std::uint64_t kw, std::uint64_t cin, std::uint64_t cout);

// The array the TFU uses for input dtype `t`: {0,0} when the config gives none or `t` is not a
// TFU dtype (only fp32, fp16, bf16, int8 can be). Reads the HardwareConfig fields directly.
TfuArray tfu_array_for(const HardwareConfig& cfg, DType t);

}  // namespace mlusim::sim::compute
