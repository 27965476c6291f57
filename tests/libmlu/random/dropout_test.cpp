// dropout forward/backward: the mask against an independent Philox4x32-10 reference, its
// independence from tiling, seeding, and the scaled outputs.
#include "mlusim/mlu/random.h"

#include <array>

#include "random/philox_reference.h"
#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

// The documented mask: element i keeps when (word[i % 4] of block first + i / 4) >> 8 < (1-p) 2^24.
std::vector<std::uint8_t> ref_mask(std::uint64_t seed, std::uint64_t first_block, std::int64_t n, double p) {
  std::vector<std::uint8_t> m(n);
  const auto threshold = static_cast<std::uint32_t>(std::ceil((1 - p) * 16777216.0));
  for (std::int64_t i = 0; i < n; ++i) m[i] = (philox_word(seed, first_block, i) >> 8) < threshold;
  return m;
}

TEST(PhiloxReference, KnownAnswers) {
  // Random123 kat_vectors for philox4x32_10.
  EXPECT_EQ(philox({0, 0, 0, 0}, {0, 0}),
            (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

class DropoutTest : public MluTest {
 protected:
  struct Result {
    std::vector<float> y;
    std::vector<std::uint8_t> mask;
  };
  // Runs dropout on logical values x laid out with x_strides; y and mask contiguous.
  Result run(const Dims& d, double p, const std::vector<float>& x, DType t = DType::kFloat32, Dims xs = {}) {
    if (xs.empty()) xs = contiguous_strides(d);
    void* xp =
        t == DType::kFloat32 ? to_device(to_storage<float>(x, d, xs)) : to_device(to_storage<sim::half>(x, d, xs));
    void* yp = dalloc(numel(d) * 4);
    void* mp = dalloc(numel(d));
    EXPECT_EQ(dropout_forward(handle_, p, desc(t, d, xs), xp, desc(t, d), yp, desc(DType::kBool, d), mp),
              Status::kSuccess)
        << last_error_detail();
    Result r;
    if (t == DType::kFloat32)
      r.y = from_device<float>(yp, numel(d));
    else
      for (sim::half v : from_device<sim::half>(yp, numel(d))) r.y.push_back(float(v));
    r.mask = from_device<std::uint8_t>(mp, numel(d));
    return r;
  }
};

TEST_F(DropoutTest, MaskIsDocumentedPhiloxAndOutputIsScaled) {
  const Dims d{7, 33};
  const double p = 0.3;
  h().set_seed(0x1234567890abcdefull);
  const std::vector<float> x = random<float>(numel(d), 1);
  const Result r = run(d, p, x);
  EXPECT_EQ(r.mask, ref_mask(0x1234567890abcdefull, 0, numel(d), p));
  std::vector<double> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = r.mask[i] ? double(x[i]) * (float(1 / (1 - p))) : 0.0;
  expect_close(r.y, want, 1e-7, 1e-6, "y");
  // The next call continues the sequence: 231 elements reserved 232 numbers = 58 blocks.
  const Result r2 = run(d, p, x);
  EXPECT_EQ(r2.mask, ref_mask(0x1234567890abcdefull, 58, numel(d), p));
  EXPECT_NE(r2.mask, r.mask);
}

TEST_F(DropoutTest, SameSeedSameMaskWhateverTheLayoutOrTiling) {
  const Dims d{40, 130};
  const std::vector<float> x = random<float>(numel(d), 2);
  h().set_seed(99);
  const Result a = run(d, 0.5, x);
  h().set_seed(99);
  const Result b = run(d, 0.5, x, DType::kFloat16, layout_strides(d, {1, 0}));  // transposed storage, fp16
  EXPECT_EQ(a.mask, b.mask);
  // Half the NRAM: other tiles, same mask.
  const char* overrides[] = {"core.nram_bytes=16KiB"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", overrides, 1), cnrtSuccess);
  allocations_.clear();
  Handle::destroy(handle_);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  h().set_seed(99);
  const Result c = run(d, 0.5, x);
  EXPECT_EQ(a.mask, c.mask);
  EXPECT_EQ(a.y, c.y);
}

TEST_F(DropoutTest, KeepRateMatchesP) {
  const Dims d{100000};
  h().set_seed(5);
  const Result r = run(d, 0.1, std::vector<float>(numel(d), 1.0f));
  const double kept = std::accumulate(r.mask.begin(), r.mask.end(), 0.0) / double(numel(d));
  EXPECT_NEAR(kept, 0.9, 0.005);  // ~5 standard deviations
}

TEST_F(DropoutTest, ZeroAndOneProbability) {
  const Dims d{5, 9};
  std::vector<float> x = random<float>(numel(d), 3);
  x[4] = NAN;
  const Result keep = run(d, 0.0, x);
  EXPECT_EQ(keep.mask, std::vector<std::uint8_t>(numel(d), 1));
  EXPECT_TRUE(std::isnan(keep.y[4]));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i != 4) {
      EXPECT_EQ(keep.y[i], x[i]);
    }
  }
  const Result drop = run(d, 1.0, x);
  EXPECT_EQ(drop.mask, std::vector<std::uint8_t>(numel(d), 0));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i != 4) {
      EXPECT_EQ(drop.y[i], 0.0f);
    }
  }
  EXPECT_TRUE(std::isnan(drop.y[4]));  // x * 0 * 0, as torch
}

TEST_F(DropoutTest, Backward) {
  const Dims d{6, 17};
  const std::vector<float> dy = random<float>(numel(d), 4);
  std::vector<std::uint8_t> mask(numel(d));
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 3 != 0;
  void* dyp = to_device(dy);
  void* mp = to_device(mask);
  void* dxp = dalloc(numel(d) * 2);
  ASSERT_EQ(dropout_backward(handle_, 1.25, desc(DType::kFloat32, d), dyp, desc(DType::kBool, d), mp,
                             desc(DType::kFloat16, d), dxp),
            Status::kSuccess)
      << last_error_detail();
  std::vector<float> got;
  for (sim::half v : from_device<sim::half>(dxp, numel(d))) got.push_back(float(v));
  std::vector<double> want(dy.size());
  for (std::size_t i = 0; i < dy.size(); ++i) want[i] = mask[i] ? round_half(dy[i] * 1.25f) : 0.0;
  expect_close(got, want, 0, 0, "dx");
}

TEST_F(DropoutTest, EmptyAndBadArguments) {
  const TensorDesc e = desc(DType::kFloat32, {0, 3}), em = desc(DType::kBool, {0, 3});
  EXPECT_EQ(dropout_forward(handle_, 0.5, e, nullptr, e, nullptr, em, nullptr), Status::kSuccess);
  EXPECT_EQ(dropout_backward(handle_, 2.0, e, nullptr, em, nullptr, e, nullptr), Status::kSuccess);
  void* p = dalloc(256);
  const TensorDesc x = desc(DType::kFloat32, {4, 4}), m = desc(DType::kBool, {4, 4});
  EXPECT_EQ(dropout_forward(nullptr, 0.5, x, p, x, p, m, p), Status::kNotInitialized);
  EXPECT_EQ(dropout_forward(handle_, -0.1, x, p, x, p, m, p), Status::kBadParam);
  EXPECT_EQ(dropout_forward(handle_, 1.5, x, p, x, p, m, p), Status::kBadParam);
  EXPECT_EQ(dropout_forward(handle_, 0.5, x, p, x, p, x, p), Status::kNotSupported);
  EXPECT_EQ(dropout_forward(handle_, 0.5, x, p, x, p, desc(DType::kBool, {4, 5}), p), Status::kBadParam);
  EXPECT_EQ(dropout_forward(handle_, 0.5, x, p, x, nullptr, m, p), Status::kBadParam);
  EXPECT_EQ(dropout_backward(handle_, INFINITY, x, p, m, p, x, p), Status::kBadParam);
  EXPECT_EQ(dropout_backward(handle_, 2.0, x, p, m, p, desc(DType::kFloat32, {4, 4}, {0, 1}), p), Status::kBadParam);
}

TEST_F(DropoutTest, ResultsComeFromSimulatedMemory) {
  const Dims d{8, 64};
  const std::vector<float> x = random<float>(numel(d), 3);
  // p = 0 keeps every element, so a flipped bit of the input's load must show in y.
  const Result clean = run(d, 0.0, x);
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  const Result flipped = run(d, 0.0, x);
  EXPECT_NE(clean.y, flipped.y) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
