// The examples' kernels: each task streams its share of the vectors through NRAM in tiles sized
// from the core's real NRAM capacity (so they run on every preset).
#include <algorithm>
#include <cstdint>

#include "example_kernels.h"
#include "mlusim/sim/kernel_api.h"

namespace {

using namespace mlusim::dev;
namespace sim = mlusim::sim;

struct Share {
  std::size_t begin = 0, end = 0;
};

// This task's contiguous share of n elements.
Share share(std::size_t n) {
  const std::size_t per = (n + task_dim() - 1) / task_dim();
  const std::size_t begin = std::min(n, per * task_id());
  return {begin, std::min(n, begin + per)};
}

// Elements per NRAM tile when `buffers` float tiles must fit (multiple of 32 lanes).
std::size_t tile_elements(std::size_t buffers) {
  const std::size_t fit = capacity(Space::kNram) / (buffers * sizeof(float));
  return std::max<std::size_t>(32, std::min<std::size_t>(16384, fit / 32 * 32));
}

}  // namespace

MLUSIM_KERNEL(vector_add, (const float* a, const float* b, float* c, int n)) {
  if (is_memory_core()) return;
  const Share s = share(static_cast<std::size_t>(n));
  const std::size_t tile = tile_elements(2);
  auto ta = nram_alloc<float>(tile);
  auto tb = nram_alloc<float>(tile);
  for (std::size_t i = s.begin; i < s.end; i += tile) {
    const std::size_t m = std::min(tile, s.end - i);
    const auto off = static_cast<std::int64_t>(i);
    memcpy_async(ta, Gdram<float>(a) + off, m * sizeof(float), Dir::kGdram2Nram);
    memcpy_async(tb, Gdram<float>(b) + off, m * sizeof(float), Dir::kGdram2Nram);
    sync_io();
    vec_binary(sim::VecBinaryOp::kAdd, DType::kFloat32, ta, ta, tb, m);
    memcpy(Gdram<float>(c) + off, ta, m * sizeof(float), Dir::kNram2Gdram);
  }
}

MLUSIM_KERNEL(scale_offset, (const float* x, float* y, float scale, float offset, int n)) {
  if (is_memory_core()) return;
  const Share s = share(static_cast<std::size_t>(n));
  const std::size_t tile = tile_elements(1);
  auto t = nram_alloc<float>(tile);
  for (std::size_t i = s.begin; i < s.end; i += tile) {
    const std::size_t m = std::min(tile, s.end - i);
    const auto off = static_cast<std::int64_t>(i);
    memcpy(t, Gdram<float>(x) + off, m * sizeof(float), Dir::kGdram2Nram);
    vec_binary_scalar(sim::VecBinaryOp::kMul, DType::kFloat32, t, t, scale, m);
    vec_binary_scalar(sim::VecBinaryOp::kAdd, DType::kFloat32, t, t, offset, m);
    memcpy(Gdram<float>(y) + off, t, m * sizeof(float), Dir::kNram2Gdram);
  }
}
