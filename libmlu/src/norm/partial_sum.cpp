#include "norm/partial_sum.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu::nn {
namespace {

using sim::Addr;
using sim::Space;

// NRAM: three partial tiles, three output chunks, a running sum, ones.
std::size_t footprint(const tile::Shape& s) {
  return 3 * align128(s.count() * 4) + 4 * align128(s.stats() * 4) + align128(s.nr * 4);
}

struct Job {
  TensorView partial, out;
  ReductionTiling tiling;
};

void sum_job(const Job& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr tiles[kPipelineBuffers], sums[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    tiles[k] = dev::alloc(Space::kNram, ms.count() * 4);
    sums[k] = dev::alloc(Space::kNram, ms.stats() * 4);
  }
  const Addr acc = dev::alloc(Space::kNram, ms.stats() * 4);
  const Addr ones = dev::alloc(Space::kNram, ms.nr * 4);
  dev::vec_fill(tile::kF32, ones, 1.0, ms.nr);
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  auto box = [&](std::size_t s) {
    return t.box(static_cast<std::int64_t>(range.first + s / chunks), static_cast<std::int64_t>(s % chunks));
  };
  run_pipelined((range.second - range.first) * chunks,
                [&](std::size_t s, int k) {
                  const TileBox tb = box(s);
                  load_box_async(a.partial, tb.box, tiles[k]);
                },
                [&](std::size_t s, int k) {
                  const TileBox tb = box(s);
                  const std::size_t chunk = s % chunks, n = tb.shape.stats();
                  tile::reduce_sum(tb.shape, sums[k], tiles[k], ones, tiles[k]);
                  if (chunks == 1) return;
                  // Multi-pass (more partial rows than fit): fold the chunks into `acc`, then hand it to the store.
                  if (chunk == 0)
                    dev::vec_unary(sim::VecUnaryOp::kCopy, tile::kF32, acc, sums[k], n);
                  else
                    dev::vec_binary(sim::VecBinaryOp::kAdd, tile::kF32, acc, acc, sums[k], n);
                  if (chunk + 1 == chunks) dev::vec_unary(sim::VecUnaryOp::kCopy, tile::kF32, sums[k], acc, n);
                },
                [&](std::size_t s, int k) {
                  if (s % chunks + 1 != chunks) return;
                  store_f32_async(a.out, t.stats_box(static_cast<std::int64_t>(range.first + s / chunks)), sums[k],
                                  box(s).shape.stats());
                });
}

}  // namespace

Status launch_partial_sums(Handle& h, const char* name, const std::vector<PartialSum>& sums) {
  std::vector<Job> jobs;
  std::int64_t groups = 1;
  for (const PartialSum& ps : sums) {
    // Views over [rows | out dims]: the partial array is dense, out broadcasts over the rows.
    const TensorDesc& out = *ps.out;
    std::vector<std::int64_t> dims{ps.rows};
    std::vector<int> map{-1};
    for (int i = 0; i < out.ndim(); ++i) dims.push_back(out.dim(i)), map.push_back(i);
    Job job;
    job.out = make_broadcast_view(out, ps.out_ptr, dims, map);
    job.partial = job.out;
    job.partial.base = reinterpret_cast<std::uintptr_t>(ps.partial);
    job.partial.dtype = DType::kFloat32;
    std::int64_t stride = 1;
    for (int i = job.partial.ndim - 1; i >= 0; --i) job.partial.strides[i] = stride, stride *= dims[i];
    const std::vector<int> starts = coalesce_groups({&job.partial, &job.out}, {0, 0, 1, job.partial.ndim});
    // Small tiles: the partial array is small and its columns should spread over all cores.
    const std::int64_t target = std::max<std::int64_t>(ps.rows, ps.rows * out.numel() / (4 * h.total_cores()));
    const auto tiling = plan_reduction(job.partial, starts[1], starts[2], h.nram_bytes() / sums.size(), h.total_cores(),
                                       target, footprint);
    MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(name) + ": NRAM too small for the partial sums");
    job.tiling = *tiling;
    groups = std::max(groups, job.tiling.groups());
    jobs.push_back(job);
  }
  return launch(
      h, name,
      [jobs] {
        for (const Job& j : jobs) sum_job(j);
      },
      block_dim(h, static_cast<std::uint64_t>(groups)), cnrtFuncTypeBlock);
}

}  // namespace mlusim::mlu::nn
