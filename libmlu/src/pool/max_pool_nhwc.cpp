#include "pool/max_pool_nhwc.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "pool/pool_band.h"
#include "pool/pool_geometry.h"
#include "softmax/pipeline.h"
#include "softmax/tensor_view.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu::nn::pool {
namespace {

using sim::DType;
using dev::CopyShape;
using dev::Dir;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;

constexpr DType kF32 = DType::kFloat32;

// The tiling: output rows per band (r), channels per block (cb, a divisor of C), the band's
// padded width; a tile is (image, band, channel block).
struct Tiling {
  std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  PoolAxis ah, aw;
  std::int64_t r = 1, cb = 1, wp = 0;
  std::int64_t bands() const { return (oh + r - 1) / r; }
  std::int64_t blocks() const { return c / cb; }
  std::int64_t tiles() const { return n * bands() * blocks(); }
  std::int64_t in_rows(std::int64_t rows) const { return ah.padded_span(rows); }
};

// NRAM bytes of a tiling (the kernel allocates exactly these).
std::size_t footprint(const Tiling& t, std::size_t es_x, std::size_t es_y, bool indices) {
  const std::size_t band = static_cast<std::size_t>(t.in_rows(t.r) * t.wp * t.cb);
  const std::size_t out = static_cast<std::size_t>(t.r * t.ow * t.cb);
  std::size_t bytes = 3 * (up128(band * es_x) + up128(out * es_y) + (indices ? up128(out * 8) : 0));
  if (es_x != 4) bytes += up128(band * 4);                      // fp32 band
  bytes += up128(out * 4) * (es_y != 4 ? 4 : 3) + up128(out);  // cand, t1, t2 (+ best), take
  if (indices)
    bytes += up128(out * 4) * 5 + up128(static_cast<std::size_t>(std::max(t.cb, t.r * t.ow)) * 4) * 2;
  return bytes;  // indices: vi, cidx, base, fv, fv_top; ones and the scalar pattern
}

struct Args {
  Tiling t;
  Nhwc x, y, idx;
  bool has_indices = false;
};

void kernel(const Args& a) {
  const Tiling& t = a.t;
  const std::size_t es_x = sim::dtype_size(a.x.dtype), es_y = sim::dtype_size(a.y.dtype);
  const std::size_t band_n = static_cast<std::size_t>(t.in_rows(t.r) * t.wp * t.cb);
  const std::size_t out_n = static_cast<std::size_t>(t.r * t.ow * t.cb);
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr raw[kPipelineBuffers], yo[kPipelineBuffers], io[kPipelineBuffers];
  bool filled[kPipelineBuffers] = {false, false, false};
  for (int k = 0; k < kPipelineBuffers; ++k) {
    raw[k] = alloc(band_n * es_x), yo[k] = alloc(out_n * es_y);
    if (a.has_indices) io[k] = alloc(out_n * 8);
  }
  const Addr band32 = es_x != 4 ? alloc(band_n * 4) : Addr{};
  const Addr cand = alloc(out_n * 4);
  const MaxTakeScratch scratch{alloc(out_n * 4), alloc(out_n * 4), alloc(out_n)};  // t1, t2, take
  const Addr best32 = es_y != 4 ? alloc(out_n * 4) : Addr{};
  Addr vi{}, cidx{}, base{}, fv{}, fv_top{}, ones{}, pattern{};
  const std::size_t pixels = static_cast<std::size_t>(t.r * t.ow), cb = static_cast<std::size_t>(t.cb);
  if (a.has_indices) {
    vi = alloc(out_n * 4), cidx = alloc(out_n * 4), base = alloc(out_n * 4), fv = alloc(out_n * 4);
    fv_top = alloc(out_n * 4);
    ones = alloc(std::max(cb, pixels) * 4), pattern = alloc(std::max(cb, pixels) * 4);
    dev::vec_fill(kF32, ones, 1.0, cb);
  }
  auto pixel_array = [&](Addr dst, auto&& f) { pixel_pattern(dst, pattern, ones, t.r, t.ow, t.cb, f); };
  // Flat input indices relative to the tile's first padded row (oh0 * sh - ph) x W, added at the end.
  if (a.has_indices) {
    pixel_array(base, [&](std::int64_t i, std::int64_t j) { return i * t.ah.s * t.w + j * t.aw.s - t.aw.p; });
    pixel_array(fv, [&](std::int64_t i, std::int64_t j) { return i * t.ah.s * t.w + t.aw.first_valid(j); });
  }
  std::int64_t fv_top_for = -1;  // the band (oh0) fv_top was built for

  struct Tile {
    std::int64_t n, oh0, rows, c0;
  };
  auto tile_of = [&](std::size_t s, std::size_t first) {
    const std::int64_t k = static_cast<std::int64_t>(first + s);
    const std::int64_t blk = k % t.blocks(), band = k / t.blocks() % t.bands(), n = k / t.blocks() / t.bands();
    return Tile{n, band * t.r, std::min(t.r, t.oh - band * t.r), blk * t.cb};
  };
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  const std::int64_t pitch = t.wp * t.cb;  // band row, elements
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        const std::int64_t ih0 = tl.oh0 * t.ah.s - t.ah.p, rows = t.in_rows(tl.rows);
        const std::int64_t v0 = std::max<std::int64_t>(ih0, 0), v1 = std::min(ih0 + rows, t.h);
        // Padding columns are never written by a load; padding rows only where the band reaches them.
        if (!filled[k] || ih0 < 0 || ih0 + rows > t.h) dev::vec_fill(a.x.dtype, raw[k], -INFINITY, band_n);
        filled[k] = true;
        if (v1 <= v0) return;
        const Addr dst = raw[k].offset(((v0 - ih0) * pitch + t.aw.p * t.cb) * static_cast<std::int64_t>(es_x));
        const Addr src{Space::kGdram, a.x.base + static_cast<std::uint64_t>((tl.n * a.x.sn + v0 * a.x.sh + tl.c0) *
                                                                             static_cast<std::int64_t>(es_x))};
        const std::int64_t e = static_cast<std::int64_t>(es_x), nrows = v1 - v0;
        const CopyShape shape =
            t.cb == t.c ? CopyShape{static_cast<std::size_t>(t.w * t.c) * es_x, static_cast<std::size_t>(nrows),
                                         pitch * e, a.x.sh * e}
                        : CopyShape{cb * es_x, static_cast<std::size_t>(t.w), t.cb * e, a.x.sw * e,
                                         static_cast<std::size_t>(nrows), pitch * e, a.x.sh * e};
        dev::memcpy_strided_async(dst, src, shape, Dir::kGdram2Nram);
      },
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        const std::size_t n = static_cast<std::size_t>(tl.rows * t.ow) * cb;
        Addr xb = raw[k];
        if (es_x != 4) {
          dev::vec_cast(kF32, band32, a.x.dtype, raw[k], static_cast<std::size_t>(t.in_rows(tl.rows) * pitch));
          xb = band32;
        }
        const Addr best = es_y == 4 ? yo[k] : best32;
        // Tap (kh, kw)'s candidates of every output pixel of the tile: [rows][OW][cb] from the band.
        auto gather = [&](Addr dst, std::int64_t kh, std::int64_t kw) {
          const Addr src = xb.offset((kh * t.ah.d * pitch + kw * t.aw.d * t.cb) * 4);
          const CopyShape shape =
              t.aw.s == 1 ? CopyShape{static_cast<std::size_t>(t.ow) * cb * 4, static_cast<std::size_t>(tl.rows),
                                           t.ow * t.cb * 4, t.ah.s * pitch * 4}
                          : CopyShape{cb * 4, static_cast<std::size_t>(t.ow), t.cb * 4, t.aw.s * t.cb * 4,
                                           static_cast<std::size_t>(tl.rows), t.ow * t.cb * 4, t.ah.s * pitch * 4};
          dev::memcpy_strided(dst, src, shape, Dir::kNram2Nram);
        };
        gather(best, 0, 0);
        if (a.has_indices) {
          const std::int64_t ih0 = tl.oh0 * t.ah.s - t.ah.p;
          Addr first = fv;
          if (ih0 < 0) {  // windows starting in the top padding: their first in-bounds row differs
            if (fv_top_for != tl.oh0)
              pixel_array(fv_top, [&](std::int64_t i, std::int64_t j) {
                return (t.ah.first_valid(tl.oh0 + i) - ih0) * t.w + t.aw.first_valid(j);
              });
            fv_top_for = tl.oh0;
            first = fv_top;
          }
          dev::vec_unary(VecUnaryOp::kCopy, kF32, vi, first, n);
        }
        for (std::int64_t kh = 0; kh < t.ah.k; ++kh)
          for (std::int64_t kw = kh == 0 ? 1 : 0; kw < t.aw.k; ++kw) {
            gather(cand, kh, kw);
            if (a.has_indices)
              dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, cidx, base, double(kh * t.ah.d * t.w + kw * t.aw.d), n);
            max_pool_take(scratch, n, best, best, cand, a.has_indices, vi, vi, cidx);
          }
        if (es_y != 4) dev::vec_cast(a.y.dtype, yo[k], kF32, best, n);
        if (a.has_indices) {
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, vi, vi, double((tl.oh0 * t.ah.s - t.ah.p) * t.w), n);
          dev::vec_cast(a.idx.dtype, io[k], kF32, vi, n);
        }
      },
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        copy_nhwc_rows_async(a.y, tl.n, tl.oh0, tl.rows, t.ow, tl.c0, t.cb, t.c, yo[k], Dir::kNram2Gdram);
        if (a.has_indices)
          copy_nhwc_rows_async(a.idx, tl.n, tl.oh0, tl.rows, t.ow, tl.c0, t.cb, t.c, io[k], Dir::kNram2Gdram);
      });
}

// plan_nhwc_blocks over (cb, output rows per band).
bool plan(Tiling* t, const Handle& h, std::size_t es_x, std::size_t es_y, bool indices) {
  const std::int64_t target = static_cast<std::int64_t>(h.total_cores()) * kPoolTilesPerCore;
  const auto [cb, r] = plan_nhwc_blocks(t->c, t->oh, es_x, target, [&](std::int64_t b, std::int64_t rows) {
    Tiling c = *t;
    c.cb = b, c.r = rows;
    return footprint(c, es_x, es_y, indices) > h.nram_bytes() ? 0 : c.tiles();
  });
  t->cb = cb, t->r = r;
  return cb > 0;
}

}  // namespace

Nhwc nhwc(const TensorDesc& d, const void* p) {
  const TensorView v = make_view(d, p);
  return {v.base, v.dtype, v.strides[0], v.strides[2], v.strides[3]};
}

void copy_nhwc_rows_async(const Nhwc& v, std::int64_t n, std::int64_t row0, std::int64_t rows, std::int64_t width,
                          std::int64_t c0, std::int64_t cb, std::int64_t c, Addr nram, Dir dir) {
  const auto e = static_cast<std::int64_t>(sim::dtype_size(v.dtype));
  const Addr g{Space::kGdram, v.base + static_cast<std::uint64_t>((n * v.sn + row0 * v.sh + c0) * e)};
  const bool dense = cb == c && v.sh == width * c;
  CopyShape shape = dense ? CopyShape{static_cast<std::size_t>(rows * width * c * e)}
                          : CopyShape{static_cast<std::size_t>(cb * e), static_cast<std::size_t>(width), cb * e,
                                      v.sw * e,  static_cast<std::size_t>(rows), width * cb * e, v.sh * e};
  if (dir == Dir::kGdram2Nram) {
    dev::memcpy_strided_async(nram, g, shape, dir);
    return;
  }
  std::swap(shape.dst_stride1, shape.src_stride1);  // the same shape with source and destination swapped
  std::swap(shape.dst_stride2, shape.src_stride2);
  dev::memcpy_strided_async(g, nram, shape, dir);
}

bool max_pool_nhwc_applies(const TensorDesc& x, const TensorDesc& y, const TensorDesc* indices) {
  auto channels_last = [](const TensorDesc& d) {
    return d.ndim() == 4 && d.dim(1) > 1 && d.stride(1) == 1 && (d.dim(3) == 1 || d.stride(3) == d.dim(1));
  };
  return channels_last(x) && channels_last(y) && (indices == nullptr || channels_last(*indices));
}

Status max_pool_nhwc_forward(Handle& h, const char* op, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr,
                             const TensorDesc& y, void* y_ptr, const TensorDesc* indices, void* indices_ptr,
                             std::int64_t oh, std::int64_t ow) {
  Args a;
  a.has_indices = indices != nullptr;
  a.x = nhwc(x, x_ptr), a.y = nhwc(y, y_ptr);
  if (indices) a.idx = nhwc(*indices, indices_ptr);
  Tiling& t = a.t;
  t.n = x.dim(0), t.c = x.dim(1), t.h = x.dim(2), t.w = x.dim(3), t.oh = oh, t.ow = ow;
  t.ah = {t.h, oh, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h};
  t.aw = {t.w, ow, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w};
  // Padded columns the windows reach: the input after pw padding columns, or further (ceil mode).
  t.wp = std::max(t.aw.p + t.w, t.aw.padded_span(ow));
  MLU_CHECK(plan(&t, h, sim::dtype_size(x.dtype()), sim::dtype_size(y.dtype()), a.has_indices), Status::kNotSupported,
            std::string(op) + ": NRAM too small for one output row of " + x.str());
  return launch(h, op, [a] { kernel(a); }, block_dim(h, static_cast<std::uint64_t>(t.tiles())), cnrtFuncTypeBlock);
}

}  // namespace mlusim::mlu::nn::pool
