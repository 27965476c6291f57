// The output side of a GEMM block, shared by the engine and the split-K reduction: scale the
// fp32 accumulator by alpha, add the bias and beta x the old C (or the residual R in its place),
// apply the fused per-row affine (scale, shift) and activation, round to C's dtype once, and store
// the block to C (any strides) with an asynchronous copy.
#pragma once

#include <cstddef>

#include "gemm/gemm_engine.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::gemm {

// NRAM buffers (unused ones may be left empty): out_stage [rows x cols] in C's dtype (fp16 only),
// c_old [rows x cols] in C's dtype, c_old32 [rows x cols] fp32 (fp16 only), bias_raw [cols] or
// [rows] in C's dtype, bias32: fp32 [tile rows x cols] bias tile, or [rows] per-row bias;
// affine: the channel affine's scratch for [rows] channels (per-row affine) or [cols] channels
// (OutputSpec::affine_cols); scale_tile, shift_tile: fp32 [tile rows x cols], the column affine
// broadcast down the rows; act_tmp: fp32 [rows x cols] (activations that need it).
struct EpilogueBuffers {
  dev::Addr out_stage, c_old, c_old32, bias_raw, bias32, act_tmp, scale_tile, shift_tile;
  AffineBuffers affine;
};

// Issues the load of C's old [nr, nc] block, or the residual's (OutputSpec::residual), into
// bufs.c_old (beta != 0 only).
void load_c_old(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc,
                const EpilogueBuffers& bufs);
// Column bias: fills bufs.bias32 with `tile_rows` copies of fp32 bias[c0, c0 + nc) of batch b.
// Synchronous.
void prepare_col_bias(const OutputSpec& o, std::size_t b, std::size_t c0, std::size_t nc, std::size_t tile_rows,
                      const EpilogueBuffers& bufs);
// Column affine (OutputSpec::affine_cols): loads and folds channels [c0, c0 + nc) and fills
// bufs.scale_tile and bufs.shift_tile with `tile_rows` copies of their scale and shift, so a block
// is finished with one multiply and one add over it. Synchronous (waits for this core's copies).
void prepare_col_affine(const OutputSpec& o, std::size_t c0, std::size_t nc, std::size_t tile_rows,
                        const EpilogueBuffers& bufs);
// Row bias: issues the load of bias[r0, r0 + nr) of batch b into bufs.bias_raw.
void load_row_bias(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, const EpilogueBuffers& bufs);

// Affine: issues the loads of the channel tensors of rows [r0, r0 + nr) of batch b.
void load_row_affine(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, const EpilogueBuffers& bufs);

// Once the loads above landed: finishes acc [nr, nc] (fp32, dense) in place and issues its store.
void finish_block(const OutputSpec& o, dev::Addr acc, std::size_t b, std::size_t r0, std::size_t nr, std::size_t c0,
                  std::size_t nc, const EpilogueBuffers& bufs);
// finish_block without the store: the same passes over acc [nr, nc] (what they load issued and
// landed), rounded to C's dtype (into bufs.out_stage unless fp32); returns where the result is,
// for a caller whose rows land in a pattern the OutputSpec cannot describe (the direct
// convolution's output rows a pitch apart).
dev::Addr finish_values(const OutputSpec& o, dev::Addr acc, std::size_t nr, std::size_t nc,
                        const EpilogueBuffers& bufs);

}  // namespace mlusim::mlu::gemm
