// nonzero (count launch, host offsets, fill launch) against a naive host scan: every dtype's
// notion of nonzero (NaN and -0.0 in floats, int64 values beyond 32 bits), parts with and without
// nonzeros, the row-major order of multi-indices; and the argument checks.
#include <cstdint>
#include <limits>
#include <random>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class NonzeroTest : public MluTest {
 protected:
  // Runs both launches on x (dims `dims`, host values `v`) and returns y [count, ndim] row-major.
  template <class T> std::vector<std::int64_t> run(DType dt, const std::vector<std::int64_t>& dims, const std::vector<T>& v) {
    const TensorDesc xd = desc(dt, dims);
    void* x = to_device(v);
    const std::int64_t parts = nonzero_parts(&h(), xd);
    EXPECT_GE(parts, 1);
    void* counts = dalloc(static_cast<std::size_t>(parts) * 8);
    EXPECT_EQ(nonzero_count(&h(), xd, x, counts), Status::kSuccess) << last_error_detail();
    const auto c = from_device<std::int64_t>(counts, static_cast<std::size_t>(parts));
    std::vector<std::int64_t> offsets;
    std::int64_t total = 0;
    for (std::int64_t n : c) {
      offsets.push_back(total);
      total += n;
    }
    const auto ndim = static_cast<std::int64_t>(dims.size());
    void* y = dalloc(static_cast<std::size_t>(std::max<std::int64_t>(total * ndim, 1)) * 8);
    EXPECT_EQ(nonzero_fill(&h(), xd, x, offsets, desc(DType::kInt64, {total, ndim}), y), Status::kSuccess)
        << last_error_detail();
    return from_device<std::int64_t>(y, static_cast<std::size_t>(total * ndim));
  }

  // The reference: row-major scan, multi-index by repeated division.
  template <class T, class NonZero>
  static std::vector<std::int64_t> reference(const std::vector<std::int64_t>& dims, const std::vector<T>& v, NonZero nz) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!nz(v[i])) continue;
      std::vector<std::int64_t> idx(dims.size());
      auto flat = static_cast<std::int64_t>(i);
      for (std::size_t d = dims.size(); d-- > 0;) {
        idx[d] = flat % dims[d];
        flat /= dims[d];
      }
      out.insert(out.end(), idx.begin(), idx.end());
    }
    return out;
  }
};

TEST_F(NonzeroTest, Float32MultiDimMatchesTheScan) {
  const std::vector<std::int64_t> dims{7, 33, 41};  // more elements than one chunk per part
  std::mt19937 rng(5);
  std::vector<float> v(7 * 33 * 41);
  for (auto& x : v) x = (rng() % 3 == 0) ? static_cast<float>(rng() % 100) - 50.0f : 0.0f;
  v[3] = std::numeric_limits<float>::quiet_NaN();
  v[4] = -0.0f;
  EXPECT_EQ(run(DType::kFloat32, dims, v), reference(dims, v, [](float x) { return x != 0.0f || x != x; }));
}

TEST_F(NonzeroTest, Int64BeyondThirtyTwoBitsIsNonzero) {
  const std::vector<std::int64_t> dims{5, 4};
  std::vector<std::int64_t> v(20, 0);
  v[1] = std::int64_t{1} << 40;  // low half zero
  v[7] = -1;
  v[19] = 3;
  EXPECT_EQ(run(DType::kInt64, dims, v), (std::vector<std::int64_t>{0, 1, 1, 3, 4, 3}));
}

TEST_F(NonzeroTest, BoolAndInt32AndSparseParts) {
  // One nonzero near the end: most parts count 0 and write nothing.
  std::vector<std::uint8_t> mask(5000, 0);
  mask[4998] = 1;
  EXPECT_EQ(run(DType::kBool, {5000}, mask), (std::vector<std::int64_t>{4998}));
  std::vector<std::int32_t> ints{0, 2, 0, -7, 0, 0};
  EXPECT_EQ(run(DType::kInt32, {2, 3}, ints), (std::vector<std::int64_t>{0, 1, 1, 0}));
}

TEST_F(NonzeroTest, BadArgumentsNameTheProblem) {
  void* x = to_device(std::vector<float>(6, 1.0f));
  void* y = dalloc(6 * 2 * 8);
  const TensorDesc xd = desc(DType::kFloat32, {2, 3});
  EXPECT_EQ(nonzero_count(&h(), desc(DType::kFloat32, {3, 2}, {1, 3}), x, y), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("must be contiguous"), std::string::npos) << last_error_detail();
  EXPECT_EQ(nonzero_count(&h(), desc(DType::kFloat64, {3}), x, y), Status::kNotSupported);
  EXPECT_EQ(nonzero_count(&h(), xd, x, nullptr), Status::kBadParam);
  const std::int64_t parts = nonzero_parts(&h(), xd);
  const std::vector<std::int64_t> offsets(static_cast<std::size_t>(parts), 0);
  EXPECT_EQ(nonzero_fill(&h(), xd, x, {}, desc(DType::kInt64, {6, 2}), y), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("offsets for"), std::string::npos) << last_error_detail();
  EXPECT_EQ(nonzero_fill(&h(), xd, x, offsets, desc(DType::kInt32, {6, 2}), y), Status::kBadParam);
  EXPECT_EQ(nonzero_fill(&h(), xd, x, offsets, desc(DType::kInt64, {6, 3}), y), Status::kBadParam);
  std::vector<std::int64_t> falling(static_cast<std::size_t>(parts), 0);
  if (parts > 1) {
    falling[0] = 5;
    EXPECT_EQ(nonzero_fill(&h(), xd, x, falling, desc(DType::kInt64, {6, 2}), y), Status::kBadParam);
    EXPECT_NE(last_error_detail().find("running count"), std::string::npos) << last_error_detail();
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
