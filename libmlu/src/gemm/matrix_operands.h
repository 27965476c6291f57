// GEMM engine operands read from strided matrices in GDRAM.
#pragma once

#include <cstdint>

#include "gemm/operands.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::gemm {

// X[r, k] at base + (batch.offset(b) + r * row_stride + k) elements: rows must be k-contiguous.
// With a depth segment S > 0, depth k = s * S + j reads element j of segment s at
// s * segment_stride + j (e.g. a convolution's output gradient summed over images); the engine's
// steps never cross segments.
class MatrixRows final : public RowOperand {
 public:
  MatrixRows(std::uint64_t base, sim::DType dtype, std::int64_t row_stride, BatchIndexer batch,
             std::size_t depth_segment = 0, std::int64_t segment_stride = 0)
      : base_(base),
        es_(sim::dtype_size(dtype)),
        row_stride_(row_stride),
        batch_(std::move(batch)),
        segment_(depth_segment),
        segment_stride_(segment_stride) {}
  void load(dev::Addr dst, std::size_t b, std::size_t r0, std::size_t nr, std::size_t k0,
            std::size_t kc) const override;

 private:
  std::uint64_t base_;
  std::size_t es_;
  std::int64_t row_stride_;
  BatchIndexer batch_;
  std::size_t segment_;
  std::int64_t segment_stride_;
};

// Y[k, n] at base + (batch.offset(b) + k * k_stride + n * n_stride) elements, with n_stride == 1
// (blocks are loaded k-major) or k_stride == 1 (n-major).
class MatrixCols final : public ColOperand {
 public:
  MatrixCols(std::uint64_t base, sim::DType dtype, std::int64_t k_stride, std::int64_t n_stride, BatchIndexer batch)
      : base_(base),
        es_(sim::dtype_size(dtype)),
        k_stride_(k_stride),
        n_stride_(n_stride),
        n_major_(n_stride != 1),
        batch_(std::move(batch)) {}
  bool n_major() const override { return n_major_; }
  std::size_t stage_bytes(std::size_t nc, std::size_t kc) const override { return nc * kc * es_; }
  std::string plan_key() const override { return "matrix " + std::to_string(es_) + (n_major_ ? " n" : " k"); }
  void stage(dev::Addr sram, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
             std::size_t piece, std::size_t pieces) const override;
  void load(dev::Addr dst, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
            std::size_t piece, std::size_t pieces, const StagedPanel* staged,
            const LoadScratch& scratch) const override;

 private:
  dev::Addr at(std::size_t b, std::size_t k, std::size_t n) const;
  std::uint64_t base_;
  std::size_t es_;
  std::int64_t k_stride_, n_stride_;
  bool n_major_;
  BatchIndexer batch_;
};

}  // namespace mlusim::mlu::gemm
