// Randomised sweep: binary ops over random shapes (odd sizes, size-1 dims), random dim
// permutations, step slices and broadcasts on every operand, against the naive reference. Covers
// the tile loader's direct, staged (transposed) and broadcast-expansion paths in combination.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

struct RandomView {
  Dims dims, strides;
};

// A view of `dims` stored permuted and with some dims sliced with step 2.
RandomView random_layout(const Dims& dims, std::mt19937& rng) {
  const std::size_t n = dims.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  Dims strides(n);
  std::int64_t running = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::int64_t step = rng() % 4 == 0 ? 2 : 1;
    strides[*it] = running * step;
    running *= dims[*it] * step;
  }
  return {dims, strides};
}

class RandomViewsTest : public MluTest {};

TEST_F(RandomViewsTest, BinaryOverRandomViews) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t nd = 1 + rng() % 5;
    Dims out(nd);
    for (auto& d : out) d = 1 + static_cast<std::int64_t>(rng() % 9);
    // Inputs set dims to 1 at random (broadcast); b may also drop leading dims.
    auto input_dims = [&](bool full) {
      Dims d(out.begin() + static_cast<std::ptrdiff_t>(full || rng() % 2 ? 0 : rng() % nd), out.end());
      for (auto& x : d)
        if (rng() % 4 == 0) x = 1;
      return d;
    };
    const RandomView a = random_layout(input_dims(true), rng), b = random_layout(input_dims(false), rng);
    // The output has the inputs' broadcast shape (both may have broadcast a dim).
    for (std::size_t i = 0; i < nd; ++i) {
      auto size_in = [&](const Dims& d) { return i + d.size() >= nd ? d[i + d.size() - nd] : 1; };
      out[i] = std::max(size_in(a.dims), size_in(b.dims));
    }
    const RandomView y = random_layout(out, rng);
    const auto av = random<float>(static_cast<std::size_t>(span(a.dims, a.strides)), 10 + trial);
    const auto bv = random<float>(static_cast<std::size_t>(span(b.dims, b.strides)), 20 + trial);
    std::vector<float> yv(static_cast<std::size_t>(span(y.dims, y.strides)), 99.0f);
    void* ad = to_device(av);
    void* bd = to_device(bv);
    void* yd = to_device(yv);
    const BinaryOp op = trial % 2 ? BinaryOp::kMul : BinaryOp::kSub;
    ASSERT_EQ(binary(&h(), op, desc(DType::kFloat32, a.dims, a.strides), ad, desc(DType::kFloat32, b.dims, b.strides), bd,
                     desc(DType::kFloat32, y.dims, y.strides), yd),
              Status::kSuccess)
        << "trial " << trial << ": " << last_error_detail();
    const auto got = from_device<float>(yd, yv.size());
    std::vector<float> want = yv;
    for_each_index(out, [&](const Dims& idx) {
      const float x1 = av[static_cast<std::size_t>(offset(idx, a.dims, a.strides))];
      const float x2 = bv[static_cast<std::size_t>(offset(idx, b.dims, b.strides))];
      want[static_cast<std::size_t>(offset(idx, y.dims, y.strides))] = op == BinaryOp::kMul ? x1 * x2 : x1 - x2;
    });
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST_F(RandomViewsTest, CastCopyOverRandomViews) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t nd = 1 + rng() % 4;
    Dims out(nd);
    for (auto& d : out) d = 1 + static_cast<std::int64_t>(rng() % 12);
    const RandomView s = random_layout(out, rng), d = random_layout(out, rng);
    const auto sv = random<float>(static_cast<std::size_t>(span(s.dims, s.strides)), 30 + trial, -50.0f, 50.0f);
    void* sd = to_device(sv);
    void* dd = dalloc(static_cast<std::size_t>(span(d.dims, d.strides)) * 4);
    ASSERT_EQ(copy_strided(&h(), desc(DType::kFloat32, s.dims, s.strides), sd, desc(DType::kInt32, d.dims, d.strides), dd),
              Status::kSuccess)
        << "trial " << trial;
    const auto got = from_device<std::int32_t>(dd, static_cast<std::size_t>(span(d.dims, d.strides)));
    for_each_index(out, [&](const Dims& idx) {
      ASSERT_EQ(got[static_cast<std::size_t>(offset(idx, d.dims, d.strides))],
                static_cast<std::int32_t>(sv[static_cast<std::size_t>(offset(idx, s.dims, s.strides))]))
          << "trial " << trial;
    });
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
