// The two operand roles of the GEMM engine (gemm_engine.h) and how a kernel fetches them.
//
// The engine computes, per batch b, C[rows, cols] = X[rows, depth] x Y[depth, cols] on the TFU:
//  - X ("row operand") goes to NRAM in strips of dense [strip rows, kc] row-major blocks
//    (the TFU's A operand must be k-contiguous);
//  - Y ("column operand") goes to WRAM (NRAM on the VFU path) as a dense block, either [kc, nc]
//    (k-major) or [nc, kc] (n-major: the TFU's b_transposed form).
// A plain GEMM reads both from strided GDRAM matrices (matrix_operands.h); a convolution's Y is an
// im2col gather built by DMA from the input image (conv/col_operand.h). Every call only issues
// asynchronous copies on the calling core; the engine decides when to sync.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::gemm {

// Offset (in elements) of batch b of an operand: b is decomposed over `dims` (outermost first)
// and each index multiplies its stride (0 = broadcast).
struct BatchIndexer {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  std::int64_t offset(std::size_t b) const;
};

class RowOperand {
 public:
  virtual ~RowOperand() = default;
  // Rows [r0, r0 + nr) x depth [k0, k0 + kc) of batch b into `dst` (NRAM, or SRAM when a memory
  // core stages a cluster's panel) as a dense [nr, kc] block.
  virtual void load(dev::Addr dst, std::size_t b, std::size_t r0, std::size_t nr, std::size_t k0,
                    std::size_t kc) const = 0;
};

// Where a core's column-operand block may come from besides GDRAM: the cluster's staged copy.
struct StagedPanel {
  dev::Addr sram;      // what stage() wrote for the cluster tile
  std::size_t c0 = 0;  // the cluster tile's first column
  std::size_t nc = 0;  // the cluster tile's column count
};

// On-chip scratch the engine prepares for the column operand.
struct LoadScratch {
  dev::Addr zeros;  // NRAM buffer of zero bytes (padding source), or none
  std::size_t zero_bytes = 0;
};

class ColOperand {
 public:
  virtual ~ColOperand() = default;
  // True when blocks are stored [nc, kc] (matmul b_transposed), false for [kc, nc].
  virtual bool n_major() const = 0;
  // SRAM bytes stage() writes for a cluster tile of `nc` columns and depth `kc`.
  virtual std::size_t stage_bytes(std::size_t nc, std::size_t kc) const = 0;
  // GDRAM bytes stage() (or the cores' direct loads) read for such a tile: the planner's DRAM
  // estimate. A matrix reads its block once; an im2col gather reads the smaller input window.
  virtual double gdram_bytes(std::size_t nc, std::size_t kc, std::size_t elem_bytes) const {
    return static_cast<double>(nc) * static_cast<double>(kc) * static_cast<double>(elem_bytes);
  }
  // DMA bytes (bursts included) one core's load() of a [nc, kc] block moves, for the planner's
  // DMA and SRAM-port estimates. A matrix moves its rows; a gather moves short runs, each rounded
  // up to whole bursts.
  virtual double load_bytes(std::size_t nc, std::size_t kc, std::size_t elem_bytes, std::size_t burst) const {
    const std::size_t inner = n_major() ? kc : nc, outer = n_major() ? nc : kc;
    return static_cast<double>(outer) * static_cast<double>((inner * elem_bytes + burst - 1) / burst * burst);
  }
  // Everything about the operand the planner's answers depend on (its layout and geometry, not its
  // addresses): part of the plan cache's key.
  virtual std::string plan_key() const = 0;
  // NRAM zero bytes load() needs as a padding source (0 if none).
  virtual std::size_t zero_bytes(std::size_t nc, std::size_t kc) const {
    (void)nc, (void)kc;
    return 0;
  }
  // Memory core: part `piece` of `pieces` of what the cluster's cores need for batch b, columns
  // [c0, c0 + nc), depth [k0, k0 + kc), into SRAM at `sram` (issuing every part stages it all).
  virtual void stage(dev::Addr sram, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                     std::size_t piece, std::size_t pieces) const = 0;
  // Compute core: part `piece` of `pieces` of the block (batch b, columns [c0, c0 + nc), depth
  // [k0, k0 + kc)) into `dst` in the block layout. The parts split the block's outer dimension,
  // so issuing all of them loads the whole block. Reads `staged` when given, else GDRAM.
  virtual void load(dev::Addr dst, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                    std::size_t piece, std::size_t pieces, const StagedPanel* staged,
                    const LoadScratch& scratch) const = 0;
};

// Splits `total` items, in whole units of `unit`, over `parts` parts as evenly as possible;
// part `index` gets [begin, begin + size).
struct Span {
  std::size_t begin = 0, size = 0;
};
Span split_units(std::size_t total, std::size_t parts, std::size_t unit, std::size_t index);

}  // namespace mlusim::mlu::gemm
