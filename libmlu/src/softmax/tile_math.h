// Row and column reductions and broadcasts on dense fp32 NRAM tiles, each one VFU intrinsic (or a
// short sequence) so that a tile of many short rows costs a few passes, not one intrinsic per row.
//
// Broadcasts ride on the VFU matmul with K = 1: dst[r, j] (+)= v[r] * 1 (or 1 * v[j]) costs
// rows x ceil(n / lanes) cycles, one pass over the tile, and with accumulate it fuses the
// broadcast into an add (x - max in one pass). A product by exactly 1 is exact, including for
// inf and NaN. Column sums are the same matmul with M = 1: ones[1, rows] x tile[rows, n].
#pragma once

#include <algorithm>
#include <cstddef>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::nn::tile {

using sim::Addr;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;
constexpr sim::DType kF32 = sim::DType::kFloat32;

inline Addr at(Addr base, std::size_t elements) { return base.offset(static_cast<std::int64_t>(elements * 4)); }

// dst[r, j] (+)= v[r] for a [rows, n] tile; `ones` holds >= n ones.
inline void broadcast_rows(Addr dst, Addr v, Addr ones, std::size_t rows, std::size_t n, bool accumulate) {
  dev::vec_matmul(kF32, kF32, dst, v, ones, rows, 1, n, false, accumulate);
}

// dst[r, j] (+)= v[j] for a [rows, n] tile; `ones` holds >= rows ones.
inline void broadcast_cols(Addr dst, Addr ones, Addr v, std::size_t rows, std::size_t n, bool accumulate) {
  dev::vec_matmul(kF32, kF32, dst, ones, v, rows, 1, n, false, accumulate);
}

// dst[j] (+)= sum over r of t[r, j]; `ones` holds >= rows ones.
inline void sum_cols(Addr dst, Addr ones, Addr t, std::size_t rows, std::size_t n, bool accumulate) {
  dev::vec_matmul(kF32, kF32, dst, ones, t, 1, rows, n, false, accumulate);
}

// dst[j] = max over r of t[r, j]: a halving tree of elementwise maxima, about one pass in total.
// scratch holds >= (rows / 2) * n floats; t is left unchanged. NaN propagates as in vec max.
inline void max_cols(Addr dst, Addr t, Addr scratch, std::size_t rows, std::size_t n) {
  if (rows == 1) {
    dev::vec_unary(VecUnaryOp::kCopy, kF32, dst, t, n);
    return;
  }
  std::size_t h = rows / 2;
  dev::vec_binary(VecBinaryOp::kMax, kF32, scratch, t, at(t, h * n), h * n);
  if (rows % 2) dev::vec_binary(VecBinaryOp::kMax, kF32, scratch, scratch, at(t, 2 * h * n), n);
  while (h > 1) {
    const std::size_t half = h / 2;
    dev::vec_binary(VecBinaryOp::kMax, kF32, scratch, scratch, at(scratch, half * n), half * n);
    if (h % 2) dev::vec_binary(VecBinaryOp::kMax, kF32, scratch, scratch, at(scratch, 2 * half * n), n);
    h = half;
  }
  dev::vec_unary(VecUnaryOp::kCopy, kF32, dst, scratch, n);
}

// A tile [ob, nr, ic]: ob independent blocks, each reduced over its nr rows; ic = 1 means the
// reduced elements are contiguous (row mode), ic > 1 means they are strided columns.
struct Shape {
  std::size_t ob = 1, nr = 1, ic = 1;
  std::size_t count() const { return ob * nr * ic; }
  std::size_t stats() const { return ob * ic; }
};

// stats[o, i] = max over r of t[o, r, i].
inline void reduce_max(const Shape& s, Addr stats, Addr t, Addr scratch) {
  if (s.ic == 1) {
    dev::vec_reduce(VecReduceOp::kMax, kF32, stats, t, s.ob, s.nr);
    return;
  }
  for (std::size_t o = 0; o < s.ob; ++o) max_cols(at(stats, o * s.ic), at(t, o * s.nr * s.ic), scratch, s.nr, s.ic);
}

// stats[o, i] = sum over r of t[o, r, i] (or of its squares). ones holds >= nr ones.
inline void reduce_sum(const Shape& s, Addr stats, Addr t, Addr ones, Addr scratch, bool squares = false) {
  if (s.ic == 1) {
    dev::vec_reduce(squares ? VecReduceOp::kSumSquares : VecReduceOp::kSum, kF32, stats, t, s.ob, s.nr);
    return;
  }
  Addr src = t;
  if (squares) {
    dev::vec_unary(VecUnaryOp::kSquare, kF32, scratch, t, s.count());
    src = scratch;
  }
  for (std::size_t o = 0; o < s.ob; ++o)
    sum_cols(at(stats, o * s.ic), ones, at(src, o * s.nr * s.ic), s.nr, s.ic, false);
}

// t[o, r, i] (+)= stats[o, i]. ones holds >= nr ones.
inline void broadcast(const Shape& s, Addr t, Addr stats, Addr ones, bool accumulate) {
  if (s.ic == 1) {
    broadcast_rows(t, stats, ones, s.ob, s.nr, accumulate);
    return;
  }
  for (std::size_t o = 0; o < s.ob; ++o)
    broadcast_cols(at(t, o * s.nr * s.ic), ones, at(stats, o * s.ic), s.nr, s.ic, accumulate);
}

}  // namespace mlusim::mlu::nn::tile
