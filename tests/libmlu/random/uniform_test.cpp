// random_uniform: every value against the documented Philox map (an independent reference), its
// independence from layout and tiling, the sequence advancing between calls, fp16 output, the
// distribution's mean, bad arguments, and results coming out of the simulated memories.
#include "mlusim/mlu/random.h"

#include <cmath>
#include <numeric>

#include "random/philox_reference.h"
#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

// The documented values: u = (word >> 8) 2^-24, y = u (hi - lo) + lo, each step rounded to fp32.
std::vector<float> ref_uniform(std::uint64_t seed, std::uint64_t first_block, std::int64_t n, double lo, double hi) {
  std::vector<float> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const float u = static_cast<float>(philox_word(seed, first_block, i) >> 8) / 16777216.0f;
    const float scaled = u * static_cast<float>(hi - lo);
    y[static_cast<std::size_t>(i)] = scaled + static_cast<float>(lo);
  }
  return y;
}

class UniformTest : public MluTest {
 protected:
  // Fills y (dims d, strides ys, dtype t) and returns its values in row-major logical order.
  std::vector<float> run(const Dims& d, double lo, double hi, DType t = DType::kFloat32, Dims ys = {}) {
    if (ys.empty()) ys = contiguous_strides(d);
    const std::size_t elems = storage_elems(d, ys);
    void* yp = dalloc(elems * 4);
    EXPECT_EQ(random_uniform(handle_, lo, hi, desc(t, d, ys), yp), Status::kSuccess) << last_error_detail();
    if (t == DType::kFloat32) return from_storage(from_device<float>(yp, elems), d, ys);
    return from_storage(from_device<sim::half>(yp, elems), d, ys);
  }
};

TEST_F(UniformTest, ValuesAreTheDocumentedPhiloxMap) {
  const Dims d{7, 33};
  h().set_seed(0x1234567890abcdefull);
  const std::vector<float> y = run(d, -2.0, 3.0);
  EXPECT_EQ(y, ref_uniform(0x1234567890abcdefull, 0, numel(d), -2.0, 3.0));
  for (float v : y) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LT(v, 3.0f);
  }
  // The next call continues the sequence: 231 elements reserved 232 numbers = 58 blocks.
  EXPECT_EQ(run(d, 0.0, 1.0), ref_uniform(0x1234567890abcdefull, 58, numel(d), 0.0, 1.0));
}

TEST_F(UniformTest, SameSeedSameValuesWhateverTheLayoutOrTiling) {
  const Dims d{40, 130};
  h().set_seed(99);
  const std::vector<float> a = run(d, 0.0, 1.0);
  h().set_seed(99);
  const std::vector<float> b = run(d, 0.0, 1.0, DType::kFloat32, layout_strides(d, {1, 0}));  // transposed storage
  EXPECT_EQ(a, b);
  h().set_seed(99);
  EXPECT_EQ(run(d, 0.0, 1.0, DType::kFloat16), round_half(a));
  // Half the NRAM: other tiles, same values.
  const char* overrides[] = {"core.nram_bytes=16KiB"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", overrides, 1), cnrtSuccess);
  allocations_.clear();
  Handle::destroy(handle_);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  h().set_seed(99);
  EXPECT_EQ(run(d, 0.0, 1.0), a);
}

TEST_F(UniformTest, MeanAndRangeOfManyDraws) {
  const Dims d{100000};
  h().set_seed(5);
  const std::vector<float> y = run(d, 1.0, 3.0);
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / double(y.size());
  EXPECT_NEAR(mean, 2.0, 0.01);  // std of the mean: (2 / sqrt(12)) / sqrt(1e5) = 0.0018
  EXPECT_GE(*std::min_element(y.begin(), y.end()), 1.0f);
  EXPECT_LT(*std::max_element(y.begin(), y.end()), 3.0f);
}

TEST_F(UniformTest, EmptyAndBadArguments) {
  EXPECT_EQ(random_uniform(handle_, 0, 1, desc(DType::kFloat32, {0, 3}), nullptr), Status::kSuccess);
  void* p = dalloc(256);
  const TensorDesc y = desc(DType::kFloat32, {4, 4});
  EXPECT_EQ(random_uniform(nullptr, 0, 1, y, p), Status::kNotInitialized);
  EXPECT_EQ(random_uniform(handle_, 1, 0, y, p), Status::kBadParam);
  EXPECT_EQ(random_uniform(handle_, 0, INFINITY, y, p), Status::kBadParam);
  EXPECT_EQ(random_uniform(handle_, NAN, 1, y, p), Status::kBadParam);
  EXPECT_EQ(random_uniform(handle_, 0, 1, desc(DType::kInt32, {4, 4}), p), Status::kNotSupported);
  EXPECT_EQ(random_uniform(handle_, 0, 1, desc(DType::kFloat32, {4, 4}, {0, 1}), p), Status::kBadParam);
  EXPECT_EQ(random_uniform(handle_, 0, 1, y, nullptr), Status::kBadParam);
}

TEST_F(UniformTest, ResultsComeFromSimulatedMemory) {
  const Dims d{8, 64};
  h().set_seed(3);
  const std::vector<float> clean = run(d, 0.0, 1.0);
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  h().set_seed(3);
  const std::vector<float> flipped = run(d, 0.0, 1.0);
  EXPECT_NE(clean, flipped) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
