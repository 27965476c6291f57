// The GEMM engine: one kernel that computes C = alpha * X x Y (+ bias) + beta * C for every batch,
// on all clusters, following a GemmPlan (gemm_plan.h). Used by matmul and by the convolutions
// (whose Y is an im2col gather).
//
// Per cluster (one UNION1 group): the memory core stages the shared operand panels of depth step
// s + 1 (X) and s + 2 (Y) into SRAM while the compute cores work on step s; a cluster barrier
// ends each step. Per core and step: for each strip of ms rows, prefetch the next X strip and a
// slice of the next step's Y block (so DMA and TFU overlap and every sync_io waits only for small
// copies), multiply on the TFU into the fp32 accumulator, and in the last step of a tile run the
// epilogue on the strip (alpha, bias, beta x C, the fused per-row affine and activation, cast) and
// store it asynchronously: fused stages never send the accumulator through DRAM.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gemm/gemm_plan.h"
#include "common/channel_affine.h"
#include "gemm/operands.h"
#include "mlusim/mlu/activation.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::gemm {

// Where the result goes and what the epilogue does.
struct OutputSpec {
  sim::DType dtype = sim::DType::kFloat32;      // C's dtype (fp32 or fp16)
  std::uint64_t base = 0;                       // GDRAM address of C
  BatchIndexer batch;                           // C's batch offsets
  std::int64_t row_stride = 0, col_stride = 1;  // elements
  // Columns in segments (a convolution's pixels of consecutive images): column c is at
  // (c / col_segment) * col_segment_stride + (c % col_segment) * col_stride. 0: one segment.
  std::size_t col_segment = 0;
  std::int64_t col_segment_stride = 0;
  float alpha = 1.0f, beta = 0.0f;  // beta != 0: C is read (beta == 0 ignores NaN/inf in C, as torch)
  // The matrix beta multiplies when it is not C (a residual R, C only written): R's element
  // (b, r, c) at residual_base + (residual_batch.offset(b) + r * residual_row_stride +
  // c * residual_col_stride) elements of C's dtype (strides may be 0: broadcast). Not with
  // col_segment (convolution outputs).
  bool residual = false;
  std::uint64_t residual_base = 0;
  BatchIndexer residual_batch;
  std::int64_t residual_row_stride = 0, residual_col_stride = 1;
  bool bias = false;
  bool bias_per_row = false;     // bias indexed by row instead of column
  std::uint64_t bias_base = 0;   // bias element i of batch b at bias_base +
  std::int64_t bias_stride = 1;  //   (bias_batch.offset(b) + i * bias_stride) elements (C's dtype)
  BatchIndexer bias_batch;
  // Fused output stage, after bias and beta x C (in this order, all fp32 on chip): the per-row
  // channel affine (common/channel_affine.h; row r of batch b is channel affine_batch.offset(b) + r),
  // folded by the epilogue from the channel tensors, then the activation v = act(v). Both only
  // where the epilogue writes C (not split-K partials). With affine_cols the channels are C's
  // columns instead (column c is channel c: the direct NHWC convolution, prepare_col_affine).
  ChannelAffine affine;
  BatchIndexer affine_batch;
  bool affine_cols = false;
  Activation act = Activation::kNone;
  // Split-K: the engine writes raw fp32 sums of part p, batch b to
  // partial_base + (((p * batches + b) * rows + r) * cols + c) * 4 instead (epilogue in splitk_reduce.h).
  bool partial = false;
  std::uint64_t partial_base = 0;
  std::size_t batches = 0, rows = 0, cols = 0;
};

struct EngineJob {
  GemmProblem problem;
  GemmPlan plan;
  OutputSpec out;
  std::shared_ptr<const RowOperand> x;
  std::shared_ptr<const ColOperand> y;
};

// The kernel body (every task of the UNION1 launch runs it).
void engine_kernel(const EngineJob& job);

// Enqueues the engine for `job` (and, for split-K plans, the reduction that applies the epilogue
// into `final_out`, reading the partial sums from `workspace`). Returns the number of kernels.
Status run_engine(Handle& h, const std::string& name, std::shared_ptr<EngineJob> job, void* workspace,
                  std::size_t workspace_bytes, std::uint32_t* kernels);

// Bytes of split-K workspace a plan needs.
std::size_t splitk_workspace_bytes(const GemmProblem& p, const GemmPlan& plan);

}  // namespace mlusim::mlu::gemm
