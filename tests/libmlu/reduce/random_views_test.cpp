// Randomised sweep: sums, amax and max-with-indices over random shapes, random reduced-dim sets,
// permuted/sliced x, keepdim on and off, against naive references.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

Dims permuted_strides(const Dims& dims, std::mt19937& rng) {
  std::vector<std::size_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  Dims strides(dims.size());
  std::int64_t running = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::int64_t step = rng() % 5 == 0 ? 2 : 1;
    strides[*it] = running * step;
    running *= dims[*it] * step;
  }
  return strides;
}

class RandomReduceTest : public MluTest {};

TEST_F(RandomReduceTest, SumsAndMaximaOverRandomDimSets) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t nd = 1 + rng() % 4;
    Dims dims(nd);
    for (auto& d : dims) d = 1 + static_cast<std::int64_t>(rng() % 11);
    const Dims strides = permuted_strides(dims, rng);
    std::vector<int> rdims;
    std::vector<bool> reduced(nd, false);
    for (std::size_t i = 0; i < nd; ++i)
      if (rng() % 2) rdims.push_back(static_cast<int>(i)), reduced[i] = true;
    if (rdims.empty()) std::fill(reduced.begin(), reduced.end(), true);
    const bool keepdim = rng() % 2;
    Dims od;
    for (std::size_t i = 0; i < nd; ++i)
      if (!reduced[i]) od.push_back(dims[i]);
      else if (keepdim) od.push_back(1);
    // Integer-valued floats: sums are exact whatever the order.
    std::vector<float> xv(static_cast<std::size_t>(span(dims, strides)));
    for (auto& v : xv) v = static_cast<float>(static_cast<int>(rng() % 21) - 10);
    const TensorDesc xd = desc(DType::kFloat32, dims, strides), yd = desc(DType::kFloat32, od);
    void* x = to_device(xv);
    void* s = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    void* m = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    std::size_t ws_bytes = 0;
    ASSERT_EQ(get_reduce_workspace_size(&h(), xd, rdims, &ws_bytes), Status::kSuccess);
    void* ws = ws_bytes ? dalloc(ws_bytes) : nullptr;
    ASSERT_EQ(reduce(&h(), ReduceOp::kSum, xd, x, rdims, keepdim, yd, s, ws, ws_bytes), Status::kSuccess)
        << "trial " << trial << ": " << last_error_detail();
    ASSERT_EQ(reduce(&h(), ReduceOp::kAmax, xd, x, rdims, keepdim, yd, m, ws, ws_bytes), Status::kSuccess);
    const auto gs = from_device<float>(s, static_cast<std::size_t>(numel(od)));
    const auto gm = from_device<float>(m, static_cast<std::size_t>(numel(od)));
    std::vector<double> ws_sum(gs.size(), 0.0), ws_max(gs.size(), -1e30);
    for_each_index(dims, [&](const Dims& idx) {
      std::int64_t k = 0;
      for (std::size_t i = 0; i < nd; ++i)
        if (!reduced[i]) k = k * dims[i] + idx[i];
      const double v = xv[static_cast<std::size_t>(offset(idx, dims, strides))];
      ws_sum[static_cast<std::size_t>(k)] += v;
      ws_max[static_cast<std::size_t>(k)] = std::max(ws_max[static_cast<std::size_t>(k)], v);
    });
    for (std::size_t k = 0; k < gs.size(); ++k) {
      ASSERT_EQ(gs[k], ws_sum[k]) << "trial " << trial << " output " << k;
      ASSERT_EQ(gm[k], ws_max[k]) << "trial " << trial << " output " << k;
    }
  }
}

TEST_F(RandomReduceTest, MinWithIndicesOverRandomDims) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t nd = 1 + rng() % 4;
    Dims dims(nd);
    for (auto& d : dims) d = 1 + static_cast<std::int64_t>(rng() % 13);
    const Dims strides = permuted_strides(dims, rng);
    const int dim = static_cast<int>(rng() % nd);
    Dims od = dims;
    od.erase(od.begin() + dim);
    std::vector<float> xv(static_cast<std::size_t>(span(dims, strides)));
    for (auto& v : xv) v = static_cast<float>(rng() % 4);  // many ties
    const TensorDesc xd = desc(DType::kFloat32, dims, strides);
    void* x = to_device(xv);
    void* v = dalloc(static_cast<std::size_t>(numel(od)) * 4 + 4);
    void* i = dalloc(static_cast<std::size_t>(numel(od)) * 8 + 8);
    std::size_t ws_bytes = 0;
    ASSERT_EQ(get_reduce_workspace_size(&h(), xd, {dim}, &ws_bytes), Status::kSuccess);
    void* ws = ws_bytes ? dalloc(ws_bytes) : nullptr;
    ASSERT_EQ(reduce_with_indices(&h(), Extreme::kMin, xd, x, dim, false, desc(DType::kFloat32, od), v,
                                  desc(DType::kInt64, od), i, ws, ws_bytes),
              Status::kSuccess)
        << "trial " << trial << ": " << last_error_detail();
    const auto gi = from_device<std::int64_t>(i, static_cast<std::size_t>(numel(od)));
    for_each_index(od, [&](const Dims& o) {
      Dims idx = o;
      idx.insert(idx.begin() + dim, 0);
      std::int64_t best = 0;
      for (std::int64_t j = 0; j < dims[static_cast<std::size_t>(dim)]; ++j) {
        idx[static_cast<std::size_t>(dim)] = j;
        Dims bi = idx;
        bi[static_cast<std::size_t>(dim)] = best;
        if (xv[static_cast<std::size_t>(offset(idx, dims, strides))] < xv[static_cast<std::size_t>(offset(bi, dims, strides))])
          best = j;
      }
      ASSERT_EQ(gi[static_cast<std::size_t>(offset(o, od, contiguous_strides(od)))], best) << "trial " << trial;
    });
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
