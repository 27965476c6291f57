// max_pool2d_forward on channels-last tensors (torch.channels_last: C innermost, a pixel row of
// W x C elements contiguous), one BLOCK kernel over tiles of (image, output-row band, channel
// block), fp32 on the VFU.
//
// The plane kernel (max_pool_forward.cpp) walks H x W planes, so on channels-last strides its DMA
// reads one element per C-strided segment. This kernel keeps the channels as the vector dimension
// instead: a tile's input band [rows, padded W, cb] arrives as whole pixel rows (one segment per
// row when the block is all of C), and each window tap (kh, kw) is one Move-DMA gather of the
// band's [r, OW, cb] candidates (stride sw x cb along W, sh rows along H) followed by torch's update
//   take = (cand > best) | (cand != cand); best = take ? cand : best; index = take ? tap : index
// over the whole block, taps in torch's order (kh outer, kw inner). It starts from tap (0, 0) with
// the window's first in-bounds index, which gives torch's indices exactly (see kernel() of
// max_pool_forward.cpp for why); padding is -inf and never wins. Indices are fp32 (exact below
// 2^24 = H x W) until the cast to int64/int32. Bands are triple-buffered (run_pipelined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/pool.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::nn::pool {

// A 4-d channels-last tensor's address, dtype and [N, C, H, W] strides of n, h, w (elements; c is 1).
struct Nhwc {
  std::uint64_t base = 0;
  sim::DType dtype = sim::DType::kFloat32;
  std::int64_t sn = 0, sh = 0, sw = 0;
};
Nhwc nhwc(const TensorDesc& d, const void* p);

// Issues the asynchronous copy between pixel rows [row0, row0 + rows) x [0, width) x channels
// [c0, c0 + cb) of image n of `v` (c channels in all) and a dense NRAM array [rows][width][cb]:
// dir kGdram2Nram loads it, kNram2Gdram stores it. One segment when the rows are whole and
// contiguous, else one per pixel.
void copy_nhwc_rows_async(const Nhwc& v, std::int64_t n, std::int64_t row0, std::int64_t rows, std::int64_t width,
                          std::int64_t c0, std::int64_t cb, std::int64_t c, sim::Addr nram, dev::Dir dir);

// The NHWC pooling kernels' plan search over (channel block cb, rows per band r): the largest cb (a
// divisor of C; blocks of less than 64 bytes only where no longer one fits), then the largest r
// (<= rows), whose tiling fits NRAM and gives every core about kPoolTilesPerCore tiles; failing
// that, the most tiles. tiles_if_fits(cb, r): the tiling's tile count, 0 when it does not fit
// NRAM. Returns {cb, r}, or {0, 0} when nothing fits.
template <class TilesIfFits>
std::pair<std::int64_t, std::int64_t> plan_nhwc_blocks(std::int64_t c, std::int64_t rows, std::size_t es,
                                                       std::int64_t target, TilesIfFits&& tiles_if_fits) {
  for (const std::int64_t min_block : {std::int64_t{64}, std::int64_t{1}}) {
    std::pair<std::int64_t, std::int64_t> best{0, 0};
    std::int64_t best_tiles = 0;
    for (std::int64_t cb = c; cb >= 1; --cb) {
      if (c % cb != 0 || (cb < c && cb * static_cast<std::int64_t>(es) < min_block)) continue;
      for (std::int64_t r = rows; r >= 1; --r) {
        const std::int64_t tiles = tiles_if_fits(cb, r);
        if (tiles == 0) continue;
        if (tiles >= target) return {cb, r};  // the first that reaches the target
        if (tiles > best_tiles) best = {cb, r}, best_tiles = tiles;
      }
    }
    if (best_tiles > 0) return best;
  }
  return {0, 0};
}

// Whether x, y (and indices) are 4-d with channels innermost (stride 1, C > 1) and pixels C apart.
bool max_pool_nhwc_applies(const TensorDesc& x, const TensorDesc& y, const TensorDesc* indices);

// Launches the kernel (arguments validated by max_pool2d_forward; oh, ow: y's spatial extent).
Status max_pool_nhwc_forward(Handle& h, const char* op, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr,
                             const TensorDesc& y, void* y_ptr, const TensorDesc* indices, void* indices_ptr,
                             std::int64_t oh, std::int64_t ow);

// max_pool2d_backward on channels-last dy, indices and dx (max_pool_nhwc_applies(dx, dy, indices)),
// one BLOCK kernel over tiles of (image, input-row band, channel block), fp32 on the VFU. A tile
// owns dx rows [h0, h0 + rh): it loads the dy and index rows of every window reaching them (a
// halo of outputs shared with the neighbouring bands, computed twice), and per window tap
// (kh, kw), in torch's order,
//   take = (index - window_origin == kh*dh*W + kw*dw);  acc[tap's pixels] += dy * take
// where the tap's pixels of the padded fp32 accumulator [rows, padded W, cb] are one strided
// Move-DMA gather into a dense [outputs, OW, cb] array and one scatter back (a tap reaches each
// accumulator pixel at most once, so gather-add-scatter is exact). Then the owned rows are
// narrowed to dx's dtype and stored as whole pixel rows; rows no window reaches are zeros.
Status max_pool_nhwc_backward(Handle& h, const char* op, const Pool2dParams& p, const TensorDesc& dy,
                              const void* dy_ptr, const TensorDesc& indices, const void* indices_ptr,
                              const TensorDesc& dx, void* dx_ptr, std::int64_t oh, std::int64_t ow);

}  // namespace mlusim::mlu::nn::pool
