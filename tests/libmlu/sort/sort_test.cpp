// sort against std::stable_sort with torch's order (NaN largest, -0.0 == 0.0, ties in input
// order also when descending): packed short rows, rows longer than a core's chunk (the GDRAM merge
// stages; the tiny preset's chunk is 1024 elements), every dtype, and the argument checks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class SortTest : public MluTest {
 protected:
  template <class T> struct Result {
    std::vector<T> values;
    std::vector<std::int64_t> indices;
  };

  template <class T> Result<T> run(DType dt, std::int64_t rows, std::int64_t n, const std::vector<T>& v, bool descending) {
    const TensorDesc xd = desc(dt, {rows, n}), id = desc(DType::kInt64, {rows, n});
    void* x = to_device(v);
    void* values = dalloc(v.size() * sizeof(T));
    void* indices = dalloc(v.size() * 8);
    const std::size_t ws_bytes = sort_workspace_bytes(&h(), xd);
    void* ws = ws_bytes ? dalloc(ws_bytes) : nullptr;
    EXPECT_EQ(sort(&h(), xd, x, descending, xd, values, id, indices, ws, ws_bytes), Status::kSuccess)
        << last_error_detail();
    return {from_device<T>(values, v.size()), from_device<std::int64_t>(indices, v.size())};
  }

  // Per row: the stable order of positions, as torch.sort(stable=True) gives it.
  template <class T, class Key>
  static std::vector<std::int64_t> reference(std::int64_t rows, std::int64_t n, const std::vector<T>& v, bool descending,
                                             Key key) {
    std::vector<std::int64_t> out;
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
      std::iota(idx.begin(), idx.end(), 0);
      auto at = [&](std::int64_t i) { return key(v[static_cast<std::size_t>(r * n + i)]); };
      std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) {
        const double x = at(a), y = at(b);
        if (descending) return std::isnan(y) ? false : std::isnan(x) ? true : x > y;
        return std::isnan(x) ? false : std::isnan(y) ? true : x < y;
      });
      out.insert(out.end(), idx.begin(), idx.end());
    }
    return out;
  }

  template <class T, class Key>
  void check(DType dt, std::int64_t rows, std::int64_t n, const std::vector<T>& v, Key key) {
    for (bool descending : {false, true}) {
      const Result<T> got = run(dt, rows, n, v, descending);
      const std::vector<std::int64_t> want = reference(rows, n, v, descending, key);
      ASSERT_EQ(got.indices, want) << "descending " << descending;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double g = key(got.values[i]), w = key(v[static_cast<std::size_t>(i / n * n + want[i])]);
        ASSERT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << "element " << i << ": " << g << " vs " << w;
      }
    }
  }

  static std::vector<float> floats(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(count);
    const float special[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), -0.0f, 0.0f};
    for (auto& x : v) {
      const unsigned r = rng() % 16;
      x = r < 6 ? special[r] : static_cast<float>(static_cast<int>(rng() % 41) - 20) * 0.25f;  // many ties
    }
    return v;
  }
};

float as_float(float x) { return x; }

TEST_F(SortTest, Float32PackedRowsNanInfSignedZeroTiesStable) {
  for (std::int64_t n : {1, 2, 5, 37, 64}) {
    const std::int64_t rows = 9;
    check(DType::kFloat32, rows, n, floats(static_cast<std::size_t>(rows * n), static_cast<unsigned>(n)), as_float);
  }
}

TEST_F(SortTest, RowsLongerThanAChunkMergeThroughGdram) {
  // 3000 -> P 4096 = 4 chunks: chunk sorts, two merge sizes with GDRAM stages; a partial last chunk.
  check(DType::kFloat32, 2, 3000, floats(6000, 7), as_float);
}

TEST_F(SortTest, Float16Int32Int64Int8Bool) {
  std::mt19937 rng(3);
  std::vector<sim::half> h(4 * 50);
  for (auto& x : h) x = sim::half(static_cast<float>(static_cast<int>(rng() % 31) - 15) / 8.0f);
  h[7] = sim::half(std::numeric_limits<float>::quiet_NaN());
  check(DType::kFloat16, 4, 50, h, [](sim::half x) { return static_cast<double>(static_cast<float>(x)); });
  std::vector<std::int32_t> i32(3 * 40);
  for (auto& x : i32) x = static_cast<std::int32_t>(rng() % 9) - 4;
  i32[0] = std::numeric_limits<std::int32_t>::max(), i32[1] = std::numeric_limits<std::int32_t>::min();
  check(DType::kInt32, 3, 40, i32, [](std::int32_t x) { return static_cast<double>(x); });
  std::vector<std::int64_t> i64(2 * 33);
  for (auto& x : i64) x = static_cast<std::int64_t>(rng() % 1000) - 500;
  check(DType::kInt64, 2, 33, i64, [](std::int64_t x) { return static_cast<double>(x); });
  std::vector<std::int8_t> i8(17);
  for (auto& x : i8) x = static_cast<std::int8_t>(static_cast<int>(rng() % 200) - 100);
  check(DType::kInt8, 1, 17, i8, [](std::int8_t x) { return static_cast<double>(x); });
  std::vector<std::uint8_t> b(12);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng() % 2);
  check(DType::kBool, 1, 12, b, [](std::uint8_t x) { return static_cast<double>(x); });
}

TEST_F(SortTest, BadArguments) {
  const TensorDesc x = desc(DType::kFloat32, {4, 6}), idx = desc(DType::kInt64, {4, 6});
  void* p = dalloc(4 * 6 * 8);
  EXPECT_EQ(sort(&h(), desc(DType::kFloat32, {4, 6}, {1, 4}), p, false, x, p, idx, p, nullptr, 0), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("contiguous"), std::string::npos);
  EXPECT_EQ(sort(&h(), x, p, false, x, p, desc(DType::kInt32, {4, 6}), p, nullptr, 0), Status::kBadParam);
  EXPECT_EQ(sort(&h(), x, p, false, desc(DType::kFloat16, {4, 6}), p, idx, p, nullptr, 0), Status::kBadParam);
  EXPECT_EQ(sort(&h(), desc(DType::kFloat64, {4, 6}), p, false, desc(DType::kFloat64, {4, 6}), p, idx, p, nullptr, 0),
            Status::kNotSupported);
  const TensorDesc long_x = desc(DType::kFloat32, {1, 5000}), long_i = desc(DType::kInt64, {1, 5000});
  ASSERT_GT(sort_workspace_bytes(&h(), long_x), 0u);
  EXPECT_EQ(sort(&h(), long_x, p, false, long_x, p, long_i, p, nullptr, 0), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("sort_workspace_bytes"), std::string::npos);
  // Empty: nothing launched.
  const TensorDesc empty = desc(DType::kFloat32, {0, 3});
  EXPECT_EQ(sort(&h(), empty, nullptr, false, empty, nullptr, desc(DType::kInt64, {0, 3}), nullptr, nullptr, 0),
            Status::kSuccess);
}

}  // namespace
}  // namespace mlusim::mlu::testing
