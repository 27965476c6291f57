// max_pool2d_backward on channels-last tensors: see max_pool_nhwc.h.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "pool/max_pool_nhwc.h"
#include "pool/pool_band.h"
#include "pool/pool_geometry.h"
#include "softmax/pipeline.h"

namespace mlusim::mlu::nn::pool {
namespace {

using dev::CopyShape;
using dev::Dir;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;

constexpr DType kF32 = DType::kFloat32;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The tiling: dx rows per band (rh), channels per block (cb, a divisor of C); a tile is (image,
// band, channel block). Per band, the outputs whose windows reach its rows and the padded rows the
// accumulator spans (both bounded over all bands at plan time: out_max, acc_max).
struct Tiling {
  std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  PoolAxis ah, aw;
  std::int64_t rh = 1, cb = 1, wp = 0, out_max = 0, acc_max = 0;
  std::int64_t bands() const { return (h + rh - 1) / rh; }
  std::int64_t blocks() const { return c / cb; }
  std::int64_t tiles() const { return n * bands() * blocks(); }
  struct Band {
    std::int64_t h0, rows;  // dx rows [h0, h0 + rows)
    std::int64_t o0, outs;  // outputs [o0, o0 + outs) reach them (outs may be 0)
    std::int64_t y0, acc;   // the accumulator's padded rows [y0, y0 + acc)
  };
  Band band(std::int64_t b) const {
    Band r{};
    r.h0 = b * rh, r.rows = std::min(rh, h - r.h0);
    const std::int64_t top = r.h0 + ah.p, bottom = top + r.rows - 1;  // padded rows
    r.o0 = std::max<std::int64_t>(0, floor_div(top - (ah.k - 1) * ah.d + ah.s - 1, ah.s));
    const std::int64_t o1 = std::min(oh, floor_div(bottom, ah.s) + 1);
    r.outs = std::max<std::int64_t>(0, o1 - r.o0);
    r.y0 = r.outs > 0 ? std::min(top, r.o0 * ah.s) : top;
    const std::int64_t end = r.outs > 0 ? std::max(bottom + 1, (o1 - 1) * ah.s + (ah.k - 1) * ah.d + 1) : bottom + 1;
    r.acc = end - r.y0;
    return r;
  }
  void bound_bands() {
    out_max = acc_max = 0;
    for (std::int64_t b = 0; b < bands(); ++b) {
      const Band r = band(b);
      out_max = std::max(out_max, r.outs), acc_max = std::max(acc_max, r.acc);
    }
  }
};

// NRAM bytes of a tiling (the kernel allocates exactly these).
std::size_t footprint(const Tiling& t, std::size_t es_dy, std::size_t es_ix, std::size_t es_dx) {
  const auto out = static_cast<std::size_t>(std::max<std::int64_t>(1, t.out_max * t.ow * t.cb));
  const auto acc = static_cast<std::size_t>(t.acc_max * t.wp * t.cb);
  const auto dx = static_cast<std::size_t>(t.rh * t.w * t.cb);
  const auto pattern = static_cast<std::size_t>(std::max(t.cb, t.out_max * t.ow));
  return 3 * (up128(out * es_dy) + up128(out * es_ix) + up128(dx * es_dx)) +  // dy, indices, dx rows
         up128(acc * 4) + 5 * up128(out * 4) +                                // acc; dy32, delta, base, take, tap
         (es_dx != 4 ? up128(dx * 4) : 0) +                                   // fp32 dx rows
         2 * up128(pattern * 4);                                              // ones, the scalar pattern
}

struct Args {
  Tiling t;
  Nhwc dy, ix, dx;
};

void kernel(const Args& a) {
  const Tiling& t = a.t;
  const std::size_t es_dy = sim::dtype_size(a.dy.dtype), es_ix = sim::dtype_size(a.ix.dtype),
                    es_dx = sim::dtype_size(a.dx.dtype);
  const auto out_n = static_cast<std::size_t>(std::max<std::int64_t>(1, t.out_max * t.ow * t.cb));
  const auto acc_n = static_cast<std::size_t>(t.acc_max * t.wp * t.cb);
  const auto dx_n = static_cast<std::size_t>(t.rh * t.w * t.cb);
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr gy[kPipelineBuffers], gi[kPipelineBuffers], gx[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k)
    gy[k] = alloc(out_n * es_dy), gi[k] = alloc(out_n * es_ix), gx[k] = alloc(dx_n * es_dx);
  const Addr acc = alloc(acc_n * 4);
  const Addr dy32 = alloc(out_n * 4), delta = alloc(out_n * 4), base = alloc(out_n * 4), take = alloc(out_n * 4),
             tap = alloc(out_n * 4);
  const std::size_t pattern_n = static_cast<std::size_t>(std::max(t.cb, t.out_max * t.ow));
  const Addr ones = alloc(pattern_n * 4), pattern = alloc(pattern_n * 4);
  const Addr dx32 = es_dx != 4 ? alloc(dx_n * 4) : Addr{};
  dev::vec_fill(kF32, ones, 1.0, static_cast<std::size_t>(t.cb));
  // Window origins relative to the band's first output row o0: (i * sh) * W + j * sw - pw; the
  // band adds (o0 * sh - ph) * W.
  if (t.out_max > 0)
    pixel_pattern(base, pattern, ones, t.out_max, t.ow, t.cb,
                  [&](std::int64_t i, std::int64_t j) { return i * t.ah.s * t.w + j * t.aw.s - t.aw.p; });

  struct Tile {
    std::int64_t n, c0;
    Tiling::Band b;
  };
  auto tile_of = [&](std::size_t s, std::size_t first) {
    const std::int64_t k = static_cast<std::int64_t>(first + s);
    const std::int64_t blk = k % t.blocks(), band = k / t.blocks() % t.bands(), n = k / t.blocks() / t.bands();
    return Tile{n, blk * t.cb, t.band(band)};
  };
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  const std::int64_t pitch = t.wp * t.cb;  // accumulator row, elements
  run_pipelined(
      range.second - range.first,
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        if (tl.b.outs == 0) return;
        copy_nhwc_rows_async(a.dy, tl.n, tl.b.o0, tl.b.outs, t.ow, tl.c0, t.cb, t.c, gy[k], Dir::kGdram2Nram);
        copy_nhwc_rows_async(a.ix, tl.n, tl.b.o0, tl.b.outs, t.ow, tl.c0, t.cb, t.c, gi[k], Dir::kGdram2Nram);
      },
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        const Tiling::Band& b = tl.b;
        dev::vec_fill(kF32, acc, 0.0, static_cast<std::size_t>(b.acc * pitch));
        if (b.outs > 0) {
          const auto n = static_cast<std::size_t>(b.outs * t.ow * t.cb);
          if (a.dy.dtype == kF32)
            dev::vec_unary(VecUnaryOp::kCopy, kF32, dy32, gy[k], n);
          else
            dev::vec_cast(kF32, dy32, a.dy.dtype, gy[k], n);
          dev::vec_cast(kF32, delta, a.ix.dtype, gi[k], n);
          dev::vec_binary(VecBinaryOp::kSub, kF32, delta, delta, base, n);
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, delta, delta,
                                 -double((b.o0 * t.ah.s - t.ah.p) * t.w), n);
          // The accumulator pixels of tap (kh, kw) for every output of the band: rows sh apart,
          // pixels sw x cb apart.
          auto tap_shape = [&](bool to_acc) {
            CopyShape c{static_cast<std::size_t>(t.cb) * 4, static_cast<std::size_t>(t.ow), t.cb * 4,
                        t.aw.s * t.cb * 4, static_cast<std::size_t>(b.outs), t.ow * t.cb * 4, t.ah.s * pitch * 4};
            if (to_acc) std::swap(c.dst_stride1, c.src_stride1), std::swap(c.dst_stride2, c.src_stride2);
            return c;
          };
          for (std::int64_t kh = 0; kh < t.ah.k; ++kh)
            for (std::int64_t kw = 0; kw < t.aw.k; ++kw) {
              dev::vec_binary_scalar(VecBinaryOp::kEq, kF32, take, delta, double(kh * t.ah.d * t.w + kw * t.aw.d), n);
              dev::vec_binary(VecBinaryOp::kMul, kF32, take, take, dy32, n);
              const Addr at = acc.offset(((b.o0 * t.ah.s - b.y0 + kh * t.ah.d) * pitch + kw * t.aw.d * t.cb) * 4);
              dev::memcpy_strided(tap, at, tap_shape(false), Dir::kNram2Nram);
              dev::vec_binary(VecBinaryOp::kAdd, kF32, tap, tap, take, n);
              dev::memcpy_strided(at, tap, tap_shape(true), Dir::kNram2Nram);
            }
        }
        // The owned rows' in-bounds columns, dense [rows, W, cb], in dx's dtype.
        const Addr src = acc.offset(((b.h0 + t.ah.p - b.y0) * pitch + t.aw.p * t.cb) * 4);
        const auto nx = static_cast<std::size_t>(b.rows * t.w * t.cb);
        const Addr dense = es_dx == 4 ? gx[k] : dx32;
        dev::memcpy_strided(dense, src,
                            CopyShape{static_cast<std::size_t>(t.w * t.cb) * 4, static_cast<std::size_t>(b.rows),
                                      t.w * t.cb * 4, pitch * 4},
                            Dir::kNram2Nram);
        if (es_dx != 4) dev::vec_cast(a.dx.dtype, gx[k], kF32, dense, nx);
      },
      [&](std::size_t s, int k) {
        const Tile tl = tile_of(s, range.first);
        copy_nhwc_rows_async(a.dx, tl.n, tl.b.h0, tl.b.rows, t.w, tl.c0, t.cb, t.c, gx[k], Dir::kNram2Gdram);
      });
}

// plan_nhwc_blocks over (cb, dx rows per band).
bool plan(Tiling* t, const Handle& h, std::size_t es_dy, std::size_t es_ix, std::size_t es_dx) {
  const std::int64_t target = static_cast<std::int64_t>(h.total_cores()) * kPoolTilesPerCore;
  const auto [cb, rh] = plan_nhwc_blocks(t->c, t->h, es_dx, target, [&](std::int64_t b, std::int64_t rows) {
    Tiling c = *t;
    c.cb = b, c.rh = rows;
    c.bound_bands();
    return footprint(c, es_dy, es_ix, es_dx) > h.nram_bytes() ? 0 : c.tiles();
  });
  t->cb = cb, t->rh = rh;
  t->bound_bands();
  return cb > 0;
}

}  // namespace

Status max_pool_nhwc_backward(Handle& h, const char* op, const Pool2dParams& p, const TensorDesc& dy,
                              const void* dy_ptr, const TensorDesc& indices, const void* indices_ptr,
                              const TensorDesc& dx, void* dx_ptr, std::int64_t oh, std::int64_t ow) {
  Args a;
  a.dy = nhwc(dy, dy_ptr), a.ix = nhwc(indices, indices_ptr), a.dx = nhwc(dx, dx_ptr);
  Tiling& t = a.t;
  t.n = dx.dim(0), t.c = dx.dim(1), t.h = dx.dim(2), t.w = dx.dim(3), t.oh = oh, t.ow = ow;
  t.ah = {t.h, oh, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h};
  t.aw = {t.w, ow, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w};
  t.wp = std::max(t.aw.p + t.w, t.aw.padded_span(ow));  // as the forward
  MLU_CHECK(plan(&t, h, sim::dtype_size(dy.dtype()), sim::dtype_size(indices.dtype()), sim::dtype_size(dx.dtype())),
            Status::kNotSupported, std::string(op) + ": NRAM too small for one row of " + dx.str());
  return launch(h, op, [a] { kernel(a); }, block_dim(h, static_cast<std::uint64_t>(t.tiles())), cnrtFuncTypeBlock);
}

}  // namespace mlusim::mlu::nn::pool
