// scan (cumsum, cumprod, cummax, cummin) against naive sequential loops with torch's rules: NaN
// and inf only reach later elements, cummax/cummin take the last of equal values and the last
// NaN. Packed short rows, a row longer than a core's chunk (chunks combined with the carry), fp16,
// integers, and the argument checks.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class ScanTest : public MluTest {
 protected:
  template <class T> struct Result {
    std::vector<T> y;
    std::vector<std::int64_t> indices;
  };

  template <class T>
  Result<T> run(ScanOp op, DType dt, std::int64_t rows, std::int64_t n, const std::vector<T>& v, bool with_indices) {
    const TensorDesc xd = desc(dt, {rows, n}), id = desc(DType::kInt64, {rows, n});
    void* x = to_device(v);
    void* y = dalloc(v.size() * sizeof(T));
    void* idx = dalloc(v.size() * 8);
    EXPECT_EQ(scan(&h(), op, xd, x, xd, y, with_indices ? &id : nullptr, with_indices ? idx : nullptr),
              Status::kSuccess)
        << last_error_detail();
    Result<T> r{from_device<T>(y, v.size()), {}};
    if (with_indices) r.indices = from_device<std::int64_t>(idx, v.size());
    return r;
  }

  // torch's cummax/cummin loop on doubles: (values, indices).
  static std::pair<std::vector<double>, std::vector<std::int64_t>> extreme_reference(
      bool is_max, std::int64_t rows, std::int64_t n, const std::vector<double>& v) {
    std::vector<double> out(v.size());
    std::vector<std::int64_t> idx(v.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double run = v[static_cast<std::size_t>(r * n)];
      std::int64_t at = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        const double x = v[static_cast<std::size_t>(r * n + j)];
        if (std::isnan(x) || (!std::isnan(run) && (is_max ? x >= run : x <= run))) run = x, at = j;
        out[static_cast<std::size_t>(r * n + j)] = run;
        idx[static_cast<std::size_t>(r * n + j)] = at;
      }
    }
    return {out, idx};
  }

  // Sequential sums/products in double, per row.
  static std::vector<double> arith_reference(bool sum, std::int64_t rows, std::int64_t n, const std::vector<double>& v) {
    std::vector<double> out(v.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double acc = sum ? 0.0 : 1.0;
      for (std::int64_t j = 0; j < n; ++j) {
        const double x = v[static_cast<std::size_t>(r * n + j)];
        acc = sum ? acc + x : acc * x;
        out[static_cast<std::size_t>(r * n + j)] = acc;
      }
    }
    return out;
  }

  static std::vector<float> floats_with_specials(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(count);
    for (auto& x : v) {
      const unsigned r = rng() % 40;
      x = r == 0 ? kNaN : r == 1 ? kInf : r == 2 ? -kInf : static_cast<float>(static_cast<int>(rng() % 21) - 10) * 0.5f;
    }
    return v;
  }

  template <class T> static std::vector<double> as_doubles(const std::vector<T>& v) {
    std::vector<double> d;
    for (const T& x : v) d.push_back(static_cast<double>(static_cast<float>(x)));
    return d;
  }
};

void expect_same(double got, double want, std::size_t i, double rel = 0.0) {
  if (std::isnan(want)) {
    ASSERT_TRUE(std::isnan(got)) << "element " << i << ": " << got << ", want NaN";
  } else if (std::isinf(want)) {
    ASSERT_EQ(got, want) << "element " << i;
  } else {
    ASSERT_NEAR(got, want, rel * std::fabs(want) + 1e-6) << "element " << i;
  }
}

TEST_F(ScanTest, CummaxCumminPackedRowsNanInfTiesTakeTheLast) {
  for (std::int64_t n : {1, 2, 7, 33, 100}) {
    const std::int64_t rows = 11;
    const std::vector<float> v = floats_with_specials(static_cast<std::size_t>(rows * n), static_cast<unsigned>(n));
    for (bool is_max : {true, false}) {
      SCOPED_TRACE("n " + std::to_string(n) + (is_max ? " cummax" : " cummin"));
      const Result<float> got = run(is_max ? ScanOp::kMax : ScanOp::kMin, DType::kFloat32, rows, n, v, true);
      const auto [want, want_idx] = extreme_reference(is_max, rows, n, as_doubles(v));
      for (std::size_t i = 0; i < v.size(); ++i) expect_same(got.y[i], want[i], i);
      ASSERT_EQ(got.indices, want_idx);
    }
  }
}

TEST_F(ScanTest, CumsumCumprodPropagateNanAndInfForwardOnly) {
  // The bug of the GEMM scan: an inf multiplied by the triangular matrix's zeros made every
  // earlier position NaN.
  const std::vector<float> v = {1.0f, 2.0f, kInf, 3.0f, -kInf, 1.0f, 4.0f, kNaN, 5.0f, 6.0f};
  const Result<float> s = run(ScanOp::kSum, DType::kFloat32, 2, 5, v, false);
  const std::vector<double> want_s = arith_reference(true, 2, 5, as_doubles(v));
  for (std::size_t i = 0; i < v.size(); ++i) expect_same(s.y[i], want_s[i], i);
  EXPECT_EQ(s.y[1], 3.0f);
  const Result<float> p = run(ScanOp::kProd, DType::kFloat32, 2, 5, v, false);
  const std::vector<double> want_p = arith_reference(false, 2, 5, as_doubles(v));
  for (std::size_t i = 0; i < v.size(); ++i) expect_same(p.y[i], want_p[i], i);
}

TEST_F(ScanTest, RowLongerThanAChunkCarriesAcrossChunks) {
  const std::int64_t C = scan_chunk_elements(&h());
  ASSERT_GT(C, 32);
  const std::int64_t n = 2 * C + 77;  // three chunks, a partial last one
  std::vector<float> v = random<float>(static_cast<std::size_t>(2 * n), 5, -1.0f, 1.0f);
  v[static_cast<std::size_t>(C + 3)] = 7.0f;  // the max of row 0 from the second chunk on
  v[static_cast<std::size_t>(n + 2 * C + 5)] = kNaN;  // row 1: NaN in the last chunk
  const Result<float> mx = run(ScanOp::kMax, DType::kFloat32, 2, n, v, true);
  const auto [want, want_idx] = extreme_reference(true, 2, n, as_doubles(v));
  for (std::size_t i = 0; i < v.size(); ++i) expect_same(mx.y[i], want[i], i);
  ASSERT_EQ(mx.indices, want_idx);
  const Result<float> s = run(ScanOp::kSum, DType::kFloat32, 2, n, v, false);
  const std::vector<double> want_s = arith_reference(true, 2, n, as_doubles(v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(want_s[i])) {
      ASSERT_TRUE(std::isnan(s.y[i])) << i;
    } else {
      ASSERT_NEAR(s.y[i], want_s[i], 2e-5 * (1.0 + static_cast<double>(i % static_cast<std::size_t>(n)))) << i;
    }
  }
}

TEST_F(ScanTest, Float16AccumulatesInFp32AndRoundsEachOutputOnce) {
  // 2048 + 1 + 1 + ...: an fp16 accumulator would stay at 2048 (its ulp there is 2).
  std::vector<sim::half> v(40, sim::half(1.0f));
  v[0] = sim::half(2048.0f);
  const Result<sim::half> s = run(ScanOp::kSum, DType::kFloat16, 1, 40, v, false);
  for (std::size_t j = 0; j < v.size(); ++j)
    ASSERT_EQ(static_cast<float>(s.y[j]), static_cast<float>(sim::half(2048.0f + static_cast<float>(j)))) << j;
  std::vector<sim::half> w = {sim::half(1.5f), sim::half(-2.0f), sim::half(kNaN), sim::half(3.0f)};
  const Result<sim::half> mn = run(ScanOp::kMin, DType::kFloat16, 1, 4, w, true);
  EXPECT_EQ(static_cast<float>(mn.y[1]), -2.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(mn.y[3])));
  EXPECT_EQ(mn.indices, (std::vector<std::int64_t>{0, 1, 2, 2}));
}

TEST_F(ScanTest, IntegersExactlyWithInt64NarrowedToInt32) {
  std::mt19937 rng(9);
  std::vector<std::int64_t> v(3 * 45);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % 11) - 5;
  v[4] = 2000000000;
  for (bool is_max : {true, false}) {
    const Result<std::int64_t> got = run(is_max ? ScanOp::kMax : ScanOp::kMin, DType::kInt64, 3, 45, v, true);
    std::vector<double> d(v.begin(), v.end());
    const auto [want, want_idx] = extreme_reference(is_max, 3, 45, d);
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(static_cast<double>(got.y[i]), want[i]) << i;
    ASSERT_EQ(got.indices, want_idx);
  }
  const Result<std::int64_t> s = run(ScanOp::kSum, DType::kInt64, 3, 45, v, false);
  const std::vector<double> want_s = arith_reference(true, 3, 45, std::vector<double>(v.begin(), v.end()));
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(static_cast<double>(s.y[i]), want_s[i]) << i;
}

TEST_F(ScanTest, BadArguments) {
  const TensorDesc x = desc(DType::kFloat32, {4, 6}), idx = desc(DType::kInt64, {4, 6});
  void* p = dalloc(4 * 6 * 8);
  EXPECT_EQ(scan(&h(), ScanOp::kSum, x, p, x, p, &idx, p), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("cumsum"), std::string::npos);
  EXPECT_EQ(scan(&h(), ScanOp::kMax, desc(DType::kFloat32, {4, 6}, {1, 4}), p, x, p, &idx, p), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("contiguous"), std::string::npos);
  EXPECT_EQ(scan(&h(), ScanOp::kMax, x, p, desc(DType::kFloat16, {4, 6}), p, &idx, p), Status::kBadParam);
  EXPECT_EQ(scan(&h(), ScanOp::kMin, x, p, x, p, &x, p), Status::kBadParam);  // fp32 indices
  const TensorDesc i32 = desc(DType::kInt32, {4, 6});
  EXPECT_EQ(scan(&h(), ScanOp::kProd, i32, p, i32, p, nullptr, nullptr), Status::kNotSupported);
  EXPECT_NE(last_error_detail().find("cumprod"), std::string::npos);
  const TensorDesc f64 = desc(DType::kFloat64, {4, 6});
  EXPECT_EQ(scan(&h(), ScanOp::kMax, f64, p, f64, p, nullptr, nullptr), Status::kNotSupported);
  const TensorDesc empty = desc(DType::kFloat32, {0, 3});
  EXPECT_EQ(scan(&h(), ScanOp::kSum, empty, nullptr, empty, nullptr, nullptr, nullptr), Status::kSuccess);
}

}  // namespace
}  // namespace mlusim::mlu::testing
