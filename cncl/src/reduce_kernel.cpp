#include "reduce_kernel.h"

#include <algorithm>

#include <mlusim_ext.h>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::cncl {

namespace {

constexpr std::size_t kGranule = 64;  // elements: tiles and task runs are multiples of this

void reduce_task(sim::DType dtype, sim::VecBinaryOp op, std::uint64_t dst, std::uint64_t src, std::size_t count) {
  using dev::Dir;
  const std::size_t es = sim::dtype_size(dtype);
  const std::size_t granules = (count + kGranule - 1) / kGranule;
  const std::size_t tasks = dev::task_dim(), t = dev::task_id();
  const std::size_t g0 = granules * t / tasks, g1 = granules * (t + 1) / tasks;
  const std::size_t begin = std::min(count, g0 * kGranule), end = std::min(count, g1 * kGranule);
  if (begin >= end) return;
  const std::size_t tile = std::max<std::size_t>(kGranule, dev::capacity(sim::Space::kNram) / (4 * es) / kGranule * kGranule);
  const std::size_t tile_bytes = tile * es;
  sim::Addr acc[2] = {dev::alloc(sim::Space::kNram, tile_bytes), dev::alloc(sim::Space::kNram, tile_bytes)};
  sim::Addr in[2] = {dev::alloc(sim::Space::kNram, tile_bytes), dev::alloc(sim::Space::kNram, tile_bytes)};
  const auto gd = [](std::uint64_t a) { return sim::Addr{sim::Space::kGdram, a}; };
  const auto load = [&](std::size_t at, int stage) {
    const std::size_t n = std::min(tile, end - at);
    dev::memcpy_async(acc[stage], gd(dst + at * es), n * es, Dir::kGdram2Nram);
    dev::memcpy_async(in[stage], gd(src + at * es), n * es, Dir::kGdram2Nram);
  };
  load(begin, 0);
  int stage = 0;
  for (std::size_t at = begin; at < end; at += tile, stage ^= 1) {
    dev::sync_io();  // this tile's loads, and the previous tile's store (from the other stage)
    if (at + tile < end) load(at + tile, stage ^ 1);
    const std::size_t n = std::min(tile, end - at);
    dev::vec_binary(op, dtype, acc[stage], acc[stage], in[stage], n);
    dev::memcpy_async(gd(dst + at * es), acc[stage], n * es, Dir::kNram2Gdram);
  }
  dev::sync_io();
}

}  // namespace

cnrtRet_t launch_reduce(cnrtQueue_t queue, std::uint32_t compute_cores, sim::DType dtype, sim::VecBinaryOp op,
                        std::uint64_t dst, std::uint64_t src, std::size_t count) {
  const std::size_t granules = (count + kGranule - 1) / kGranule;
  const auto tasks = static_cast<unsigned>(std::clamp<std::size_t>(granules, 1, compute_cores));
  return driver::invoke_kernel_body(
      "cncl_reduce", [=] { reduce_task(dtype, op, dst, src, count); }, cnrtDim3_t{tasks, 1, 1}, cnrtFuncTypeBlock,
      queue);
}

}  // namespace mlusim::cncl
