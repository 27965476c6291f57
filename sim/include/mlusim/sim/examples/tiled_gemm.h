// Example kernel: a tiled, double-buffered GEMM written against the device API.
//
// C[M,N] = A[M,K] x B[K,N], row-major in GDRAM, fp32 or fp16 (fp32 accumulation). It is the
// simulator's demo and a reference for kernel writers: tiles are sized from the core's real NRAM
// and WRAM capacity, A tiles go GDRAM->NRAM and B tiles GDRAM->WRAM with strided 2D copies, the
// next K-step is prefetched with memcpy_async while the TFU works on the current one, and each
// task (BLOCK launch) owns the output tiles taskId, taskId + taskDim, ... Where the config's TFU
// has no array for the dtype (MLU270: fp16/fp32), B tiles stay in NRAM and the VFU multiplies.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::examples {

struct GemmArgs {
  std::uint64_t a = 0, b = 0, c = 0;  // GDRAM device addresses
  std::size_t m = 0, k = 0, n = 0;
  sim::DType dtype = sim::DType::kFloat32;  // fp32 or fp16 (inputs and output)
};

struct GemmTiling {
  std::size_t tile_m = 0, tile_k = 0, tile_n = 0;
};

// Largest power-of-two tiles (tile_m = tile_n, tile_k) whose buffers fit: NRAM holds 2 A tiles,
// the fp32 accumulator and (fp16) the output staging tile; WRAM holds 2 B tiles (NRAM instead,
// when b_in_nram: the VFU path).
inline GemmTiling plan_gemm_tiles(std::size_t nram_bytes, std::size_t wram_bytes, std::size_t elem, std::size_t m,
                                  std::size_t k, std::size_t n, bool b_in_nram = false) {
  auto pow2_at_least = [](std::size_t v) {
    std::size_t p = 1;
    while (p < v) p <<= 1;
    return p;
  };
  const std::size_t align = 128;
  auto up = [&](std::size_t b) { return (b + align - 1) / align * align; };
  for (std::size_t t = std::min<std::size_t>(512, pow2_at_least(std::max(m, n))); t >= 1; t >>= 1) {
    const std::size_t tm = std::min(t, m), tn = std::min(t, n);
    for (std::size_t tk = std::min<std::size_t>(1024, pow2_at_least(k)); tk >= 1; tk >>= 1) {
      const std::size_t kk = std::min(tk, k);
      const std::size_t b_tiles = 2 * up(kk * tn * elem);
      const std::size_t nram = 2 * up(tm * kk * elem) + up(tm * tn * 4) + (elem == 4 ? 0 : up(tm * tn * elem)) +
                               (b_in_nram ? b_tiles : 0);
      const std::size_t wram = b_in_nram ? 0 : b_tiles;
      if (nram <= nram_bytes && wram <= wram_bytes && (kk >= std::min<std::size_t>(k, 32) || t == 1))
        return {tm, kk, tn};
      if (tk == 1) break;
    }
    if (t == 1) break;
  }
  return {1, 1, 1};
}

// The kernel body (launch it BLOCK with any dim; tasks stride over the output tiles).
inline void tiled_gemm_kernel(const GemmArgs& g) {
  using namespace mlusim::dev;
  const std::size_t es = sim::dtype_size(g.dtype);
  const bool on_tfu = tfu_supports(g.dtype);
  const Space b_space = on_tfu ? Space::kWram : Space::kNram;
  const GemmTiling tl = plan_gemm_tiles(capacity(Space::kNram), capacity(Space::kWram), es, g.m, g.k, g.n, !on_tfu);
  const std::size_t tiles_m = (g.m + tl.tile_m - 1) / tl.tile_m, tiles_n = (g.n + tl.tile_n - 1) / tl.tile_n;
  const std::size_t k_steps = (g.k + tl.tile_k - 1) / tl.tile_k;

  const Addr a_buf[2] = {alloc(Space::kNram, tl.tile_m * tl.tile_k * es), alloc(Space::kNram, tl.tile_m * tl.tile_k * es)};
  const Addr b_buf[2] = {alloc(b_space, tl.tile_k * tl.tile_n * es), alloc(b_space, tl.tile_k * tl.tile_n * es)};
  const Addr acc = alloc(Space::kNram, tl.tile_m * tl.tile_n * 4);
  const Addr out = es == 4 ? acc : alloc(Space::kNram, tl.tile_m * tl.tile_n * es);

  for (std::size_t tile = task_id(); tile < tiles_m * tiles_n; tile += task_dim()) {
    const std::size_t m0 = tile / tiles_n * tl.tile_m, n0 = tile % tiles_n * tl.tile_n;
    const std::size_t mc = std::min(tl.tile_m, g.m - m0), nc = std::min(tl.tile_n, g.n - n0);
    // A[m0:m0+mc, k0:k0+kc] -> NRAM [mc, kc]; B[k0:k0+kc, n0:n0+nc] -> WRAM [kc, nc].
    auto load_step = [&](std::size_t step, int buf) {
      const std::size_t k0 = step * tl.tile_k, kc = std::min(tl.tile_k, g.k - k0);
      CopyShape a_shape{kc * es, mc, static_cast<std::int64_t>(kc * es), static_cast<std::int64_t>(g.k * es)};
      memcpy_strided_async(a_buf[buf], Addr{Space::kGdram, g.a + (m0 * g.k + k0) * es}, a_shape, Dir::kGdram2Nram);
      CopyShape b_shape{nc * es, kc, static_cast<std::int64_t>(nc * es), static_cast<std::int64_t>(g.n * es)};
      memcpy_strided_async(b_buf[buf], Addr{Space::kGdram, g.b + (k0 * g.n + n0) * es}, b_shape,
                           on_tfu ? Dir::kGdram2Wram : Dir::kGdram2Nram);
    };
    load_step(0, 0);
    for (std::size_t step = 0; step < k_steps; ++step) {
      const int cur = static_cast<int>(step % 2);
      sync_io();                                           // this step's tiles have landed
      if (step + 1 < k_steps) load_step(step + 1, 1 - cur);  // prefetch the next while the TFU works
      const std::size_t kc = std::min(tl.tile_k, g.k - step * tl.tile_k);
      const sim::DType acc_t = sim::DType::kFloat32;
      if (on_tfu)
        matmul(g.dtype, acc_t, acc, a_buf[cur], b_buf[cur], mc, kc, nc, /*b_transposed=*/false, /*accumulate=*/step > 0);
      else
        vec_matmul(g.dtype, acc_t, acc, a_buf[cur], b_buf[cur], mc, kc, nc, false, step > 0);
    }
    if (es != 4) vec_cast(g.dtype, out, sim::DType::kFloat32, acc, mc * nc);
    CopyShape c_shape{nc * es, mc, static_cast<std::int64_t>(g.n * es), static_cast<std::int64_t>(nc * es)};
    memcpy_strided(Addr{Space::kGdram, g.c + (m0 * g.n + n0) * es}, out, c_shape, Dir::kNram2Gdram);
  }
}

}  // namespace mlusim::examples
