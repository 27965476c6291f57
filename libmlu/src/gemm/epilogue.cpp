#include "gemm/epilogue.h"

#include "common/activation.h"
#include "common/int_math.h"

namespace mlusim::mlu::gemm {

using namespace mlusim::dev;
using sim::DType;
using sim::VecBinaryOp;

namespace {

// Where a matrix of the output's geometry lives: C itself, or the residual read in its place.
struct Place {
  std::uint64_t base;
  const BatchIndexer* batch;
  std::int64_t row_stride, col_stride;
};
Place c_place(const OutputSpec& o) { return {o.base, &o.batch, o.row_stride, o.col_stride}; }
Place old_place(const OutputSpec& o) {
  return o.residual ? Place{o.residual_base, &o.residual_batch, o.residual_row_stride, o.residual_col_stride}
                    : c_place(o);
}

Addr c_addr(const OutputSpec& o, const Place& m, std::size_t b, std::size_t r, std::size_t c) {
  const std::int64_t es = i64(sim::dtype_size(o.dtype));
  const std::int64_t col = o.col_segment
                               ? i64(c / o.col_segment) * o.col_segment_stride + i64(c % o.col_segment) * m.col_stride
                               : i64(c) * m.col_stride;
  const std::int64_t off = m.batch->offset(b) + i64(r) * m.row_stride + col;
  return Addr{Space::kGdram, m.base + static_cast<std::uint64_t>(off * es)};
}

// C's [nr, len] block at (r0, c) <-> the NRAM block's columns [c - c0, c - c0 + len) (row pitch nc),
// for every run of columns [c, c + len) within one segment of [c0, c0 + nc).
template <class Fn>
void for_each_run(const OutputSpec& o, std::size_t c0, std::size_t nc, Fn&& fn) {
  for (std::size_t c = c0; c < c0 + nc;) {
    const std::size_t end = o.col_segment ? std::min(c0 + nc, (c / o.col_segment + 1) * o.col_segment) : c0 + nc;
    fn(c, end - c);
    c = end;
  }
}

// Copy shape between C's [nr, len] block and an NRAM block of row pitch `pitch` elements
// (element-sized segments when C's columns are not contiguous). to_c: NRAM -> C.
CopyShape c_shape(const OutputSpec& o, const Place& m, std::size_t nr, std::size_t len, std::size_t pitch, bool to_c) {
  const std::int64_t es = i64(sim::dtype_size(o.dtype));
  CopyShape s;
  if ((m.col_stride == 1 || len == 1) && (m.row_stride == i64(len) || nr == 1) && pitch == len)
    s = CopyShape{nr * len * static_cast<std::size_t>(es)};
  else if (m.col_stride == 1 || len == 1)
    s = CopyShape{len * static_cast<std::size_t>(es), nr, m.row_stride * es, i64(pitch) * es};
  else
    s = CopyShape{static_cast<std::size_t>(es), len, m.col_stride * es, es, nr, m.row_stride * es, i64(pitch) * es};
  if (!to_c) std::swap(s.dst_stride1, s.src_stride1), std::swap(s.dst_stride2, s.src_stride2);
  return s;
}

}  // namespace

void load_c_old(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc,
                const EpilogueBuffers& bufs) {
  const std::int64_t es = i64(sim::dtype_size(o.dtype));
  const Place m = old_place(o);
  for_each_run(o, c0, nc, [&](std::size_t c, std::size_t len) {
    memcpy_strided_async(bufs.c_old.offset(i64(c - c0) * es), c_addr(o, m, b, r0, c),
                         c_shape(o, m, nr, len, nc, false), Dir::kGdram2Nram);
  });
}

static void load_bias_run(const OutputSpec& o, std::size_t b, std::size_t i0, std::size_t n, Addr dst, bool async) {
  const std::int64_t es = i64(sim::dtype_size(o.dtype));
  const std::int64_t off = o.bias_batch.offset(b) + i64(i0) * o.bias_stride;
  const Addr src{Space::kGdram, o.bias_base + static_cast<std::uint64_t>(off * es)};
  const CopyShape shape =
      o.bias_stride == 1 ? CopyShape{n * es} : CopyShape{static_cast<std::size_t>(es), n, es, o.bias_stride * es};
  if (async)
    memcpy_strided_async(dst, src, shape, Dir::kGdram2Nram);
  else
    memcpy_strided(dst, src, shape, Dir::kGdram2Nram);
}

// Row 0 of an fp32 [rows, n] NRAM tile copied to the other rows (a zero source stride).
static void broadcast_row(Addr tile, std::size_t n, std::size_t rows) {
  if (rows > 1)
    memcpy_strided(tile.offset(i64(n) * 4), tile, CopyShape{n * 4, rows - 1, i64(n) * 4, 0}, Dir::kNram2Nram);
}

void prepare_col_bias(const OutputSpec& o, std::size_t b, std::size_t c0, std::size_t nc, std::size_t tile_rows,
                      const EpilogueBuffers& bufs) {
  load_bias_run(o, b, c0, nc, bufs.bias_raw, /*async=*/false);
  if (o.dtype == DType::kFloat32)
    memcpy(bufs.bias32, bufs.bias_raw, nc * 4, Dir::kNram2Nram);
  else
    vec_cast(DType::kFloat32, bufs.bias32, o.dtype, bufs.bias_raw, nc);
  broadcast_row(bufs.bias32, nc, tile_rows);  // one vector add per strip later
}

void prepare_col_affine(const OutputSpec& o, std::size_t c0, std::size_t nc, std::size_t tile_rows,
                        const EpilogueBuffers& bufs) {
  load_affine_async(o.affine, c0, nc, bufs.affine);
  sync_io();
  fold_affine(o.affine, nc, bufs.affine);
  memcpy(bufs.scale_tile, bufs.affine.scale, nc * 4, Dir::kNram2Nram);
  memcpy(bufs.shift_tile, bufs.affine.shift, nc * 4, Dir::kNram2Nram);
  broadcast_row(bufs.scale_tile, nc, tile_rows);
  broadcast_row(bufs.shift_tile, nc, tile_rows);
}

void load_row_bias(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, const EpilogueBuffers& bufs) {
  load_bias_run(o, b, r0, nr, bufs.bias_raw, /*async=*/true);
}

void load_row_affine(const OutputSpec& o, std::size_t b, std::size_t r0, std::size_t nr, const EpilogueBuffers& bufs) {
  load_affine_async(o.affine, static_cast<std::size_t>(o.affine_batch.offset(b)) + r0, nr, bufs.affine);
}

void finish_block(const OutputSpec& o, Addr acc, std::size_t b, std::size_t r0, std::size_t nr, std::size_t c0,
                  std::size_t nc, const EpilogueBuffers& bufs) {
  const Addr src = finish_values(o, acc, nr, nc, bufs);
  const std::int64_t es = i64(sim::dtype_size(o.dtype));
  const Place m = c_place(o);
  for_each_run(o, c0, nc, [&](std::size_t c, std::size_t len) {
    memcpy_strided_async(c_addr(o, m, b, r0, c), src.offset(i64(c - c0) * es), c_shape(o, m, nr, len, nc, true),
                         Dir::kNram2Gdram);
  });
}

Addr finish_values(const OutputSpec& o, Addr acc, std::size_t nr, std::size_t nc, const EpilogueBuffers& bufs) {
  const std::size_t n = nr * nc;
  if (o.alpha != 1.0f) vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, acc, acc, o.alpha, n);
  if (o.bias && !o.bias_per_row) vec_binary(VecBinaryOp::kAdd, DType::kFloat32, acc, acc, bufs.bias32, n);
  if (o.bias && o.bias_per_row) {
    Addr bias32 = bufs.bias_raw;
    if (o.dtype != DType::kFloat32) {
      vec_cast(DType::kFloat32, bufs.bias32, o.dtype, bufs.bias_raw, nr);
      bias32 = bufs.bias32;
    }
    for (std::size_t r = 0; r < nr; ++r) {
      const float v = load(sim::Nram<float>(bias32.value) + i64(r));
      vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, acc.offset(i64(r * nc) * 4), acc.offset(i64(r * nc) * 4), v,
                        nc);
    }
  }
  if (o.beta != 0.0f) {
    Addr old = bufs.c_old;
    if (o.dtype != DType::kFloat32) {
      vec_cast(DType::kFloat32, bufs.c_old32, o.dtype, bufs.c_old, n);
      old = bufs.c_old32;
    }
    if (o.beta != 1.0f) vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, old, old, o.beta, n);
    vec_binary(VecBinaryOp::kAdd, DType::kFloat32, acc, acc, old, n);
  }
  if (o.affine.enabled && o.affine_cols) {
    vec_binary(VecBinaryOp::kMul, DType::kFloat32, acc, acc, bufs.scale_tile, n);
    vec_binary(VecBinaryOp::kAdd, DType::kFloat32, acc, acc, bufs.shift_tile, n);
  } else if (o.affine.enabled) {
    fold_affine(o.affine, nr, bufs.affine);
    apply_row_affine(bufs.affine, acc, nr, nc);
  }
  apply_activation(o.act, acc, bufs.act_tmp, n);
  if (o.dtype == DType::kFloat32) return acc;
  vec_cast(o.dtype, bufs.out_stage, DType::kFloat32, acc, n);
  return bufs.out_stage;
}

}  // namespace mlusim::mlu::gemm
