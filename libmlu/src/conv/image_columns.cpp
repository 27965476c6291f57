#include "conv/image_columns.h"

#include <algorithm>

#include "common/copy_shape.h"
#include "common/int_math.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;
using gemm::Span;
using gemm::split_units;

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

Dir direction(Space to, Space from) {
  if (to == Space::kWram)
    return from == Space::kSram ? Dir::kSram2Wram : from == Space::kGdram ? Dir::kGdram2Wram : Dir::kNram2Wram;
  return from == Space::kSram ? Dir::kSram2Nram : from == Space::kGdram ? Dir::kGdram2Nram : Dir::kNram2Nram;
}

}  // namespace

// One image's source: element (c, r, q) (c within the group) at base + ((c - c_lo) * c_stride +
// (r - r_lo) * row_stride + q * col_stride) elements; rows outside [0, rows) are padding.
struct ImageColumns::Window {
  Addr base;
  std::size_t c_lo = 0, r_lo = 0;
  std::int64_t c_stride = 0, row_stride = 0, col_stride = 1, phase_stride = 0;
  Addr at(std::size_t es, std::size_t c, std::int64_t r, std::int64_t q) const {
    const std::int64_t off = i64(c - c_lo) * c_stride + (r - i64(r_lo)) * row_stride + q * col_stride;
    return base.offset(off * i64(es));
  }
};

ImageColumns::Block ImageColumns::block(std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0,
                                        std::size_t kc) const {
  Block blk;
  blk.group = b;
  if (g_.role == ColumnsRole::kDepthIsPatch)
    blk.row0 = k0, blk.rows = kc, blk.pix0 = c0, blk.pix = nc, blk.pitch = nc;
  else
    blk.row0 = c0, blk.rows = nc, blk.pix0 = k0, blk.pix = kc, blk.pitch = kc;
  return blk;
}

ImageColumns::Range ImageColumns::channels_of(std::size_t row0, std::size_t rows) const {
  const std::size_t t = g_.taps.count(), last = row0 + rows - 1;
  if (rows == 0) return {};
  if (g_.order == RowOrder::kChannelMajor) return {row0 / t, last / t + 1};
  if (row0 / g_.channels == last / g_.channels) return {row0 % g_.channels, last % g_.channels + 1};
  return {0, g_.channels};
}

ImageColumns::Range ImageColumns::source_rows_of(std::size_t n, std::size_t pix0, std::size_t pix) const {
  const std::size_t plane = g_.pixels();
  const std::size_t a = std::max(pix0, n * plane), b = std::min(pix0 + pix, (n + 1) * plane);
  if (b <= a) return {};
  const std::int64_t y0 = i64((a - n * plane) / g_.out_w), y1 = i64((b - 1 - n * plane) / g_.out_w);
  const std::int64_t reach = i64(g_.taps.kh - 1) * g_.taps.step_y;
  const std::int64_t lo = y0 * g_.taps.stride_y + std::min<std::int64_t>(0, reach) + g_.taps.off_y;
  const std::int64_t hi = y1 * g_.taps.stride_y + std::max<std::int64_t>(0, reach) + g_.taps.off_y + 1;
  const std::int64_t rows = i64(g_.src.rows);
  return {static_cast<std::size_t>(std::clamp<std::int64_t>(lo, 0, rows)),
          static_cast<std::size_t>(std::clamp<std::int64_t>(hi, 0, rows))};
}

std::size_t ImageColumns::panel_offset(const Block& blk, const Range& ch, std::size_t n) const {
  std::size_t off = 0;
  for (std::size_t m = blk.pix0 / g_.pixels(); m < n; ++m)
    off += ch.size() * source_rows_of(m, blk.pix0, blk.pix).size();
  return off * g_.src.cols * g_.src.phases;
}

std::size_t ImageColumns::stage_bytes(std::size_t nc, std::size_t kc) const {
  const std::size_t rows = g_.role == ColumnsRole::kDepthIsPatch ? kc : nc;
  const std::size_t pix = g_.role == ColumnsRole::kDepthIsPatch ? nc : kc;
  const std::size_t t = g_.taps.count();
  // The channels channels_of() can return for a step of `rows` column rows.
  std::size_t ch = g_.channels;
  if (g_.order == RowOrder::kChannelMajor)
    ch = std::min(g_.channels, (rows + t - 1) / t + 1);
  else if (g_.steps_within_tap)
    ch = std::min(g_.channels, rows);
  // Images a pixel run can touch, and the source rows under it: never more than every row of
  // each image, nor more than its output rows (two partial ones per image) times the stride
  // plus the taps' reach.
  const std::size_t images = pix / g_.pixels() + 2;
  const std::size_t reach = (g_.taps.kh - 1) * static_cast<std::size_t>(std::abs(g_.taps.step_y)) + 1;
  const std::size_t out_rows = pix / g_.out_w + 2 * images;
  const std::size_t src_rows =
      std::min(images * g_.src.rows, out_rows * static_cast<std::size_t>(g_.taps.stride_y) + images * reach);
  return ch * src_rows * g_.src.cols * g_.src.phases * es_;
}

double ImageColumns::gdram_bytes(std::size_t nc, std::size_t kc, std::size_t) const {
  // The window a typical tile stages: its channels, and source rows ~ output rows x stride.
  const std::size_t rows = g_.role == ColumnsRole::kDepthIsPatch ? kc : nc;
  const std::size_t pix = g_.role == ColumnsRole::kDepthIsPatch ? nc : kc;
  double ch = static_cast<double>(g_.channels);
  if (g_.order == RowOrder::kChannelMajor)
    ch = std::min(ch, static_cast<double>(rows) / static_cast<double>(g_.taps.count()));
  else if (g_.steps_within_tap)
    ch = std::min(ch, static_cast<double>(rows));
  const double out_rows = static_cast<double>(pix) / static_cast<double>(g_.out_w);
  const double reach = static_cast<double>((g_.taps.kh - 1) * static_cast<std::size_t>(std::abs(g_.taps.step_y)));
  const double src_rows = std::min(
      static_cast<double>(g_.src.rows) * std::max(1.0, static_cast<double>(pix) / static_cast<double>(g_.pixels())),
      out_rows * static_cast<double>(g_.taps.stride_y) + reach);
  return ch * src_rows * static_cast<double>(g_.src.cols * g_.src.phases * es_);
}

std::string ImageColumns::plan_key() const {
  const Taps& t = g_.taps;
  std::string k = "columns";
  for (std::int64_t v : {std::int64_t(g_.role), std::int64_t(g_.order), i64(t.kh), i64(t.kw), t.stride_y, t.stride_x,
                         t.step_y, t.step_x, t.off_y, t.off_x, i64(g_.src.rows), i64(g_.src.cols), i64(g_.src.phases),
                         i64(es_), i64(g_.channels), i64(g_.groups), i64(g_.out_h), i64(g_.out_w),
                         i64(g_.steps_within_tap)})
    k += " " + std::to_string(v);
  return k;
}

double ImageColumns::load_bytes(std::size_t nc, std::size_t kc, std::size_t, std::size_t burst) const {
  // Each column row is gathered in runs of at most one output row (out_w pixels), or single
  // elements when x is strided without a phase split; each run is rounded up to whole bursts.
  const std::size_t rows = g_.role == ColumnsRole::kDepthIsPatch ? kc : nc;
  const std::size_t pix = g_.role == ColumnsRole::kDepthIsPatch ? nc : kc;
  const bool elements = g_.taps.stride_x > 1 && g_.src.phases == 1;
  const std::size_t run = elements ? 1 : std::min(pix, g_.out_w);
  const std::size_t runs = elements ? pix : (pix + run - 1) / run + 1;
  return static_cast<double>(rows) * static_cast<double>(runs) *
         static_cast<double>((run * es_ + burst - 1) / burst * burst);
}

void ImageColumns::stage(Addr sram, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                         std::size_t piece, std::size_t pieces) const {
  const Block blk = block(b, c0, nc, k0, kc);
  const Range ch = channels_of(blk.row0, blk.rows);
  const Span part = split_units(ch.size(), pieces, 1, piece);
  if (part.size == 0) return;
  const std::size_t plane = g_.pixels();
  for (std::size_t n = blk.pix0 / plane; n * plane < blk.pix0 + blk.pix; ++n) {
    const Range rows = source_rows_of(n, blk.pix0, blk.pix);
    if (rows.size() == 0) continue;
    const std::size_t c_first = b * g_.channels + ch.lo + part.begin;
    const std::int64_t src_off =
        i64(n) * g_.src.n_stride + i64(c_first) * g_.src.c_stride + i64(rows.lo) * g_.src.row_stride;
    const Addr src{Space::kGdram, g_.src.base + static_cast<std::uint64_t>(src_off * i64(es_))};
    const std::size_t row_bytes = g_.src.cols * es_, block_bytes = rows.size() * row_bytes;
    const std::size_t channel_bytes = block_bytes * g_.src.phases;
    const Addr dst =
        sram.offset(i64((panel_offset(blk, ch, n) + part.begin * rows.size() * g_.src.cols * g_.src.phases) * es_));
    if (g_.src.phases > 1) {  // dense phase planes: one run per (channel, phase)
      memcpy_strided_async(
          dst, src,
          coalesce(CopyShape{block_bytes, g_.src.phases, i64(block_bytes), g_.src.phase_stride * i64(es_), part.size,
                             i64(channel_bytes), g_.src.c_stride * i64(es_)}),
          Dir::kGdram2Sram);
    } else if (g_.src.col_stride == 1 && g_.src.row_stride == i64(g_.src.cols)) {
      memcpy_strided_async(dst, src,
                           coalesce(CopyShape{block_bytes, part.size, i64(block_bytes), g_.src.c_stride * i64(es_)}),
                           Dir::kGdram2Sram);
    } else if (g_.src.col_stride == 1) {
      memcpy_strided_async(dst, src,
                           coalesce(CopyShape{row_bytes, rows.size(), i64(row_bytes), g_.src.row_stride * i64(es_),
                                              part.size, i64(block_bytes), g_.src.c_stride * i64(es_)}),
                           Dir::kGdram2Sram);
    } else {
      for (std::size_t c = 0; c < part.size; ++c)
        memcpy_strided_async(dst.offset(i64(c * block_bytes)), src.offset(i64(c) * g_.src.c_stride * i64(es_)),
                             coalesce(CopyShape{es_, g_.src.cols, i64(es_), g_.src.col_stride * i64(es_), rows.size(),
                                                i64(row_bytes), g_.src.row_stride * i64(es_)}),
                             Dir::kGdram2Sram);
    }
  }
}

void ImageColumns::load(Addr dst, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
                        std::size_t piece, std::size_t pieces, const gemm::StagedPanel* staged,
                        const gemm::LoadScratch& scratch) const {
  const Block blk = block(b, c0, nc, k0, kc);
  const Span part = split_units(blk.rows, pieces, 1, piece);
  if (part.size == 0) return;
  const std::size_t plane = g_.pixels();
  // The staged panel belongs to the cluster tile, which may start before this core's block.
  const Block cluster = staged ? block(b, staged->c0, staged->nc, k0, kc) : blk;
  const Range ch = channels_of(cluster.row0, cluster.rows);
  for (std::size_t n = blk.pix0 / plane; n * plane < blk.pix0 + blk.pix; ++n) {
    Window w;
    if (staged) {
      const Range rows = source_rows_of(n, cluster.pix0, cluster.pix);
      w.base = staged->sram.offset(i64(panel_offset(cluster, ch, n) * es_));
      w.c_lo = ch.lo;
      w.r_lo = rows.lo;
      w.row_stride = i64(g_.src.cols);
      w.phase_stride = i64(rows.size() * g_.src.cols);
      w.c_stride = w.phase_stride * i64(g_.src.phases);
    } else {
      const std::int64_t off = i64(n) * g_.src.n_stride + i64(b * g_.channels) * g_.src.c_stride;
      w.base = Addr{Space::kGdram, g_.src.base + static_cast<std::uint64_t>(off * i64(es_))};
      w.c_stride = g_.src.c_stride;
      w.row_stride = g_.src.row_stride;
      w.col_stride = g_.src.col_stride;
      w.phase_stride = g_.src.phase_stride;
    }
    gather_image(dst, blk, part.begin, part.begin + part.size, n, w, scratch);
  }
}

void ImageColumns::gather_image(Addr dst, const Block& blk, std::size_t row_a, std::size_t row_b, std::size_t n,
                                const Window& w, const gemm::LoadScratch& scratch) const {
  const std::size_t plane = g_.pixels(), taps = g_.taps.count(), ch = g_.channels;
  const std::size_t p0 = std::max(blk.pix0, n * plane), p1 = std::min(blk.pix0 + blk.pix, (n + 1) * plane);
  const std::size_t a = blk.row0 + row_a, b = blk.row0 + row_b;  // absolute column rows [a, b)
  for (std::size_t t = 0; t < taps; ++t) {
    std::size_t c_lo = 0, c_hi = 0, row_of_lo = 0, row_step = 0;
    if (g_.order == RowOrder::kChannelMajor) {  // row = c * taps + t
      c_lo = a > t ? (a - t + taps - 1) / taps : 0;
      c_hi = std::min(ch, b > t ? (b - t + taps - 1) / taps : 0);
      row_of_lo = c_lo * taps + t, row_step = taps;
    } else {  // row = t * channels + c
      if (t * ch >= b || (t + 1) * ch <= a) continue;
      c_lo = a > t * ch ? a - t * ch : 0;
      c_hi = std::min(ch, b - t * ch);
      row_of_lo = t * ch + c_lo, row_step = 1;
    }
    if (c_hi <= c_lo) continue;
    const Addr dst_row = dst.offset(i64((row_of_lo - blk.row0) * blk.pitch * es_));
    gather_tap(dst_row, i64(row_step * blk.pitch * es_), c_hi - c_lo, c_lo, t, p0 - n * plane, p1 - n * plane,
               p0 - blk.pix0, w, scratch);
  }
}

// Column row of tap `tap` for channels [c_first, c_first + nch) and the image's pixels [p0, p1),
// written at dst_row + (p - p0 + dst_p0) elements (next channel: dst_channel_stride bytes on).
void ImageColumns::gather_tap(Addr dst_row, std::int64_t dst_channel_stride, std::size_t nch, std::size_t c_first,
                              std::size_t tap, std::size_t p0, std::size_t p1, std::size_t dst_p0, const Window& w,
                              const gemm::LoadScratch& scratch) const {
  const Taps& k = g_.taps;
  const std::int64_t es = i64(es_), wo = i64(g_.out_w);
  const std::int64_t ti = i64(tap / k.kw), tj = i64(tap % k.kw);
  const std::int64_t r_base = ti * k.step_y + k.off_y;
  // Column of output x: x * stride_x + q_base, or with phase planes x + q_base in plane `phase`.
  const std::int64_t phases = i64(g_.src.phases), stride_x = phases > 1 ? 1 : k.stride_x;
  std::int64_t q_base = tj * k.step_x + k.off_x, phase = 0;
  if (phases > 1) phase = q_base - floor_div(q_base, phases) * phases, q_base = floor_div(q_base, phases);
  // Output rows y whose source row lies in [0, rows), output columns x whose source column does.
  const std::int64_t y_valid_lo = ceil_div(-r_base, k.stride_y);
  const std::int64_t y_valid_hi = floor_div(i64(g_.src.rows) - 1 - r_base, k.stride_y) + 1;
  const std::int64_t x_valid_lo = ceil_div(-q_base, stride_x);
  const std::int64_t x_valid_hi = floor_div(i64(g_.src.cols) - 1 - q_base, stride_x) + 1;
  const std::int64_t phase_bytes = phase * w.phase_stride * es;
  const Dir zero_dir = direction(dst_row.space, Space::kNram);
  const Dir data_dir = direction(dst_row.space, w.base.space);
  auto dst_at = [&](std::int64_t y, std::int64_t x) {
    return dst_row.offset((y * wo + x - i64(p0) + i64(dst_p0)) * es);
  };
  auto zeros = [&](std::int64_t ya, std::int64_t yb, std::int64_t xa, std::int64_t xb) {
    if (yb <= ya || xb <= xa) return;
    memcpy_strided_async(dst_at(ya, xa), scratch.zeros,
                         coalesce(CopyShape{static_cast<std::size_t>((xb - xa) * es), static_cast<std::size_t>(yb - ya),
                                            wo * es, 0, nch, dst_channel_stride, 0}),
                         zero_dir);
  };
  auto rows = [&](std::int64_t ya, std::int64_t yb, std::int64_t xa, std::int64_t xb) {
    const std::int64_t vya = std::max(ya, y_valid_lo), vyb = std::min(yb, y_valid_hi);
    if (vyb <= vya) return zeros(ya, yb, xa, xb);
    zeros(ya, vya, xa, xb);
    zeros(vyb, yb, xa, xb);
    const std::int64_t vxa = std::max(xa, x_valid_lo), vxb = std::min(xb, x_valid_hi);
    if (vxb <= vxa) return zeros(vya, vyb, xa, xb);
    zeros(vya, vyb, xa, vxa);
    zeros(vya, vyb, vxb, xb);
    const std::size_t nx = static_cast<std::size_t>(vxb - vxa), ny = static_cast<std::size_t>(vyb - vya);
    const std::int64_t src_c = w.c_stride * es;
    if (stride_x == 1 && w.col_stride == 1) {
      const Addr src = w.at(es_, c_first, vya * k.stride_y + r_base, vxa + q_base).offset(phase_bytes);
      memcpy_strided_async(
          dst_at(vya, vxa), src,
          coalesce(CopyShape{nx * es_, ny, wo * es, k.stride_y * w.row_stride * es, nch, dst_channel_stride, src_c}),
          data_dir);
      return;
    }
    for (std::int64_t y = vya; y < vyb; ++y) {  // strided columns: one element per segment
      const Addr src = w.at(es_, c_first, y * k.stride_y + r_base, vxa * stride_x + q_base).offset(phase_bytes);
      memcpy_strided_async(
          dst_at(y, vxa), src,
          coalesce(CopyShape{es_, nx, es, stride_x * w.col_stride * es, nch, dst_channel_stride, src_c}), data_dir);
    }
  };
  const std::int64_t y0 = i64(p0) / wo, y1 = i64(p1 - 1) / wo;
  const std::int64_t x0 = i64(p0) % wo, x1 = i64(p1 - 1) % wo + 1;
  if (y0 == y1) return rows(y0, y0 + 1, x0, x1);
  std::int64_t mid_a = y0, mid_b = y1 + 1;
  if (x0 != 0) rows(y0, y0 + 1, x0, wo), mid_a = y0 + 1;
  if (x1 != wo) rows(y1, y1 + 1, 0, x1), mid_b = y1;
  if (mid_b > mid_a) rows(mid_a, mid_b, 0, wo);
}

}  // namespace mlusim::mlu::conv
