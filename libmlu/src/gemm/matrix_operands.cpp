#include "common/int_math.h"
#include "gemm/matrix_operands.h"

namespace mlusim::mlu::gemm {

using namespace mlusim::dev;

namespace {

// `n` rows of `seg` contiguous bytes, `src_stride` apart, into a dense block.
CopyShape rows_shape(std::size_t seg, std::size_t n, std::int64_t src_stride) {
  if (src_stride == i64(seg) || n == 1) return CopyShape{seg * n};
  return CopyShape{seg, n, i64(seg), src_stride};
}
}  // namespace

void MatrixRows::load(Addr dst, std::size_t b, std::size_t r0, std::size_t nr, std::size_t k0, std::size_t kc) const {
  const std::int64_t depth = segment_ ? i64(k0 / segment_) * segment_stride_ + i64(k0 % segment_) : i64(k0);
  const std::int64_t off = batch_.offset(b) + i64(r0) * row_stride_ + depth;
  const Addr src{Space::kGdram, base_ + static_cast<std::uint64_t>(off * i64(es_))};
  const Dir dir = dst.space == Space::kSram ? Dir::kGdram2Sram : Dir::kGdram2Nram;
  memcpy_strided_async(dst, src, rows_shape(kc * es_, nr, row_stride_ * i64(es_)), dir);
}

Addr MatrixCols::at(std::size_t b, std::size_t k, std::size_t n) const {
  const std::int64_t off = batch_.offset(b) + i64(k) * k_stride_ + i64(n) * n_stride_;
  return Addr{Space::kGdram, base_ + static_cast<std::uint64_t>(off * i64(es_))};
}

void MatrixCols::stage(Addr sram, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                       std::size_t piece, std::size_t pieces) const {
  // The panel is the dense block itself: [nc, kc] or [kc, nc]; parts split its outer dimension.
  const std::size_t outer = n_major_ ? nc : kc, inner = n_major_ ? kc : nc;
  const Span part = split_units(outer, pieces, 1, piece);
  if (part.size == 0) return;
  const Addr to = sram.offset(i64(part.begin * inner * es_));
  if (n_major_)
    memcpy_strided_async(to, at(b, k0, c0 + part.begin), rows_shape(kc * es_, part.size, n_stride_ * i64(es_)),
                         Dir::kGdram2Sram);
  else
    memcpy_strided_async(to, at(b, k0 + part.begin, c0), rows_shape(nc * es_, part.size, k_stride_ * i64(es_)),
                         Dir::kGdram2Sram);
}

void MatrixCols::load(Addr dst, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                      std::size_t piece, std::size_t pieces, const StagedPanel* staged, const LoadScratch&) const {
  // A block is [outer, inner] = [nc, kc] (n-major) or [kc, nc] (k-major); pieces split `outer`.
  const std::size_t outer = n_major_ ? nc : kc, inner = n_major_ ? kc : nc;
  const Span part = split_units(outer, pieces, 1, piece);
  if (part.size == 0) return;
  const Addr to = dst.offset(i64(part.begin * inner * es_));
  const bool to_wram = dst.space == Space::kWram;
  if (staged) {
    // The cluster's panel: [staged->nc, kc] (n-major) or [kc, staged->nc] (k-major), dense.
    const Dir dir = to_wram ? Dir::kSram2Wram : Dir::kSram2Nram;
    if (n_major_) {
      const Addr from = staged->sram.offset(i64((c0 - staged->c0 + part.begin) * kc * es_));
      memcpy_async(to, from, part.size * kc * es_, dir);
    } else {
      const Addr from = staged->sram.offset(i64((part.begin * staged->nc + c0 - staged->c0) * es_));
      memcpy_strided_async(to, from, rows_shape(nc * es_, part.size, i64(staged->nc * es_)), dir);
    }
    return;
  }
  const Dir dir = to_wram ? Dir::kGdram2Wram : Dir::kGdram2Nram;
  if (n_major_)
    memcpy_strided_async(to, at(b, k0, c0 + part.begin), rows_shape(kc * es_, part.size, n_stride_ * i64(es_)), dir);
  else
    memcpy_strided_async(to, at(b, k0 + part.begin, c0), rows_shape(nc * es_, part.size, k_stride_ * i64(es_)), dir);
}

}  // namespace mlusim::mlu::gemm
