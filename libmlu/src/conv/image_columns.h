// The im2col operand of the GEMM engine: columns of image patches gathered by DMA, never
// materialised in GDRAM. Column row (c, t) holds, for each output pixel p = (y, x), channel c of
// the source at tap t = (i, j): source row y * stride_y + i * step_y + off_y, source column
// x * stride_x + j * step_x + off_x, and zero outside the source (padding).
//   forward:        source x, steps = dilation, offsets = -padding, rows ordered (c, t);
//   backward data:  source dy (zero-interleaved when strided), stride 1, steps = -dilation,
//                   offsets = +padding (the taps mirrored), rows ordered (t, c);
//   backward weight: source x as forward, but the column rows are the GEMM's columns and the
//                   pixels (of every image in turn) its depth.
// The memory core stages the source window a cluster tile needs (its channels, the source rows
// under its pixels, whole source rows) in SRAM; each core then gathers its block from there:
// per tap, a 3-level copy covers all its channels and the output rows whose pixels are whole,
// the partial first/last rows get their own copies, and padding is written from a zero buffer
// (source stride 0). Strided x (stride_x > 1) gathers element by element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm/operands.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::conv {

struct Taps {
  std::size_t kh = 1, kw = 1;
  std::int64_t stride_y = 1, stride_x = 1;  // > 0
  std::int64_t step_y = 1, step_x = 1;      // dilation, negative for mirrored taps
  std::int64_t off_y = 0, off_x = 0;
  std::size_t count() const { return kh * kw; }
};

// The gathered tensor: element (n, c, r, q) at base + n*n_stride + c*c_stride + r*row_stride +
// q*col_stride (elements), rows x cols per plane. With phases = s > 1 the source is split by
// column phase (deinterleave.h): column q lives in phase plane q % s at column q / s, the phase
// planes phase_stride apart and `cols` columns wide; taps.stride_x must then equal s.
struct SourceImage {
  std::uint64_t base = 0;
  sim::DType dtype = sim::DType::kFloat32;
  std::size_t rows = 0, cols = 0;
  std::int64_t n_stride = 0, c_stride = 0, row_stride = 0, col_stride = 1;
  std::size_t phases = 1;
  std::int64_t phase_stride = 0;
};

// Pixels are numbered across images: pixel n * out_h * out_w + y * out_w + x.
enum class ColumnsRole {
  kDepthIsPatch,   // GEMM depth = column rows, GEMM columns = pixels (all images); batch = group
  kDepthIsPixels,  // GEMM columns = column rows, depth = pixels (steps stay in one image); batch = group
};
enum class RowOrder { kChannelMajor /* row = c * taps + t */, kTapMajor /* row = t * channels + c */ };

struct ColumnsGeometry {
  ColumnsRole role = ColumnsRole::kDepthIsPatch;
  RowOrder order = RowOrder::kChannelMajor;
  Taps taps;
  SourceImage src;
  std::size_t channels = 0;  // per group
  std::size_t groups = 1;    // group g reads source channels [g * channels, (g + 1) * channels)
  std::size_t out_h = 0, out_w = 0;
  // kTapMajor only: the GEMM's depth steps never cross a tap (GemmProblem::k_segment = channels),
  // so a step stages just its own channels' window rather than every channel's.
  bool steps_within_tap = false;
  std::size_t pixels() const { return out_h * out_w; }
};

class ImageColumns final : public gemm::ColOperand {
 public:
  explicit ImageColumns(const ColumnsGeometry& g) : g_(g), es_(sim::dtype_size(g.src.dtype)) {}
  bool n_major() const override { return g_.role == ColumnsRole::kDepthIsPixels; }
  std::size_t stage_bytes(std::size_t nc, std::size_t kc) const override;
  double gdram_bytes(std::size_t nc, std::size_t kc, std::size_t elem_bytes) const override;
  double load_bytes(std::size_t nc, std::size_t kc, std::size_t elem_bytes, std::size_t burst) const override;
  std::size_t zero_bytes(std::size_t, std::size_t) const override { return g_.out_w * es_; }
  std::string plan_key() const override;
  void stage(dev::Addr sram, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
             std::size_t piece, std::size_t pieces) const override;
  void load(dev::Addr dst, std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc,
            std::size_t piece, std::size_t pieces, const gemm::StagedPanel* staged,
            const gemm::LoadScratch& scratch) const override;

 private:
  // What a block (or a cluster tile) covers: group, column rows, pixels.
  struct Block {
    std::size_t group = 0;
    std::size_t row0 = 0, rows = 0;  // column rows
    std::size_t pix0 = 0, pix = 0;   // pixels
    std::size_t pitch = 0;           // elements between column rows in the destination
  };
  Block block(std::size_t b, std::size_t c0, std::size_t nc, std::size_t k0, std::size_t kc) const;
  struct Range {
    std::size_t lo = 0, hi = 0;
    std::size_t size() const { return hi > lo ? hi - lo : 0; }
  };
  Range channels_of(std::size_t row0, std::size_t rows) const;  // channels (within the group) of column rows
  // Source rows under pixels [pix0, pix0 + pix) that lie in image n.
  Range source_rows_of(std::size_t n, std::size_t pix0, std::size_t pix) const;
  // Where each image's window starts in a staged panel of block `blk`, in elements.
  std::size_t panel_offset(const Block& blk, const Range& ch, std::size_t n) const;
  struct Window;  // where one image's source is read from: the staged panel or GDRAM
  void gather_image(dev::Addr dst, const Block& blk, std::size_t row_a, std::size_t row_b, std::size_t n,
                    const Window& w, const gemm::LoadScratch& scratch) const;
  void gather_tap(dev::Addr dst_row, std::int64_t dst_channel_stride, std::size_t nch, std::size_t c_first,
                  std::size_t tap, std::size_t p0, std::size_t p1, std::size_t dst_p0, const Window& w,
                  const gemm::LoadScratch& scratch) const;

  ColumnsGeometry g_;
  std::size_t es_;
};

}  // namespace mlusim::mlu::conv
