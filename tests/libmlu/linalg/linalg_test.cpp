// linalg (lu_factor, lu_permutation, triangular_solve, cholesky) against naive double loops:
// LAPACK's getf2 with isamax's first maximum, substitution, Cholesky-Banachiewicz. Batches,
// rectangular LU, singular matrices (info), no pivoting, wide right-hand sides in column chunks,
// the refusals, and the VFU work being independent of values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

using Mat = std::vector<double>;

// In-place getf2 on a row-major m x n double matrix; returns 1-based pivots and info.
std::pair<std::vector<std::int32_t>, std::int32_t> naive_getrf(Mat& a, std::int64_t m, std::int64_t n, bool pivot) {
  const std::int64_t p = std::min(m, n);
  std::vector<std::int32_t> piv(static_cast<std::size_t>(p));
  std::int32_t info = 0;
  for (std::int64_t k = 0; k < p; ++k) {
    std::int64_t best = k;
    if (pivot)
      for (std::int64_t i = k + 1; i < m; ++i)
        if (std::fabs(a[i * n + k]) > std::fabs(a[best * n + k])) best = i;
    piv[k] = static_cast<std::int32_t>(best + 1);
    for (std::int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[best * n + j]);
    const double d = a[k * n + k];
    if (d == 0.0) {
      if (info == 0) info = static_cast<std::int32_t>(k + 1);
      if (pivot) continue;
    }
    for (std::int64_t i = k + 1; i < m; ++i) {
      a[i * n + k] /= d;
      for (std::int64_t j = k + 1; j < n; ++j) a[i * n + j] -= a[i * n + k] * a[k * n + j];
    }
  }
  return {piv, info};
}

class LinalgTest : public MluTest {
 protected:
  void TearDown() override {
    mlusimSetTimingOnly(0);
    MluTest::TearDown();
  }

  struct Lu {
    std::vector<float> lu;
    std::vector<std::int32_t> pivots, info;
  };
  Lu lu(const std::vector<float>& a, std::int64_t batch, std::int64_t m, std::int64_t n, bool pivot = true) {
    const std::int64_t p = std::min(m, n);
    void* ad = to_device(a);
    void* lud = dalloc(a.size() * 4);
    void* pd = dalloc(static_cast<std::size_t>(batch * p) * 4);
    void* id = dalloc(static_cast<std::size_t>(batch) * 4);
    EXPECT_EQ(lu_factor(&h(), desc(DType::kFloat32, {batch, m, n}), ad, pivot, desc(DType::kFloat32, {batch, m, n}),
                        lud, desc(DType::kInt32, {batch, p}), pd, desc(DType::kInt32, {batch}), id),
              Status::kSuccess)
        << last_error_detail();
    return {from_device<float>(lud, a.size()), from_device<std::int32_t>(pd, static_cast<std::size_t>(batch * p)),
            from_device<std::int32_t>(id, static_cast<std::size_t>(batch))};
  }

  // Checks device LU against naive getf2 on the same fp32 input, matrix by matrix.
  void expect_lu_matches(const std::vector<float>& a, std::int64_t batch, std::int64_t m, std::int64_t n,
                         bool pivot = true) {
    const Lu got = lu(a, batch, m, n, pivot);
    const std::int64_t p = std::min(m, n);
    for (std::int64_t b = 0; b < batch; ++b) {
      Mat ref(a.begin() + b * m * n, a.begin() + (b + 1) * m * n);
      const auto [piv, info] = naive_getrf(ref, m, n, pivot);
      EXPECT_EQ(got.info[b], info) << "matrix " << b;
      for (std::int64_t k = 0; k < p; ++k) ASSERT_EQ(got.pivots[b * p + k], piv[k]) << "matrix " << b << " k " << k;
      for (std::int64_t i = 0; i < m * n; ++i)
        EXPECT_NEAR(got.lu[b * m * n + i], ref[i], 2e-5 * (1 + std::fabs(ref[i]))) << "matrix " << b << " at " << i;
    }
  }

  std::vector<float> solve(const std::vector<float>& a, const std::vector<float>& b, std::int64_t batch, std::int64_t n,
                           std::int64_t k, Triangle t, bool unit) {
    void* ad = to_device(a);
    void* bd = to_device(b);
    void* xd = dalloc(b.size() * 4);
    EXPECT_EQ(triangular_solve(&h(), desc(DType::kFloat32, {batch, n, n}), ad, t, unit,
                               desc(DType::kFloat32, {batch, n, k}), bd, desc(DType::kFloat32, {batch, n, k}), xd),
              Status::kSuccess)
        << last_error_detail();
    return from_device<float>(xd, b.size());
  }
};

TEST_F(LinalgTest, LuFactorMatchesGetf2OnSquareAndRectangularBatches) {
  expect_lu_matches(random<float>(3 * 6 * 6, 1), 3, 6, 6);
  expect_lu_matches(random<float>(2 * 5 * 7, 2), 2, 5, 7);
  expect_lu_matches(random<float>(2 * 7 * 4, 3), 2, 7, 4);
  expect_lu_matches(random<float>(9 * 3 * 3, 4), 9, 3, 3);  // more matrices than cores
  expect_lu_matches(random<float>(1 * 1 * 1, 5), 1, 1, 1);
}

TEST_F(LinalgTest, LuFactorOfSingularMatricesSetsInfoAndFinishes) {
  // A zero first column (info 1, nothing to divide), then a rank-one 2 x 2 (U[1, 1] exactly 0).
  std::vector<float> a = random<float>(4 * 4, 6);
  for (int i = 0; i < 4; ++i) a[i * 4] = 0.0f;
  expect_lu_matches(a, 1, 4, 4);
  const Lu got = lu({1, 2, 2, 4}, 1, 2, 2);
  EXPECT_EQ(got.pivots, (std::vector<std::int32_t>{2, 2}));
  EXPECT_EQ(got.info[0], 2);
  EXPECT_EQ(got.lu, (std::vector<float>{2, 4, 0.5f, 0}));
}

TEST_F(LinalgTest, LuFactorWithoutPivotingKeepsRowOrder) {
  std::vector<float> a = random<float>(2 * 5 * 5, 7);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 5; ++i) a[b * 25 + i * 6] += 4.0f;  // diagonally dominant: pivots stay away from 0
  expect_lu_matches(a, 2, 5, 5, /*pivot=*/false);
  const Lu got = lu(a, 2, 5, 5, false);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(got.pivots[k], k % 5 + 1);
}

TEST_F(LinalgTest, LuPermutationAppliesTheInterchangesInOrder) {
  const std::vector<std::int32_t> piv = {3, 3, 3, 2, 4, 4};  // two batches of p = 3, m = 4
  void* pd = to_device(piv);
  void* out = dalloc(2 * 4 * 8);
  ASSERT_EQ(lu_permutation(&h(), desc(DType::kInt32, {2, 3}), pd, 4, desc(DType::kInt64, {2, 4}), out),
            Status::kSuccess)
      << last_error_detail();
  // [0,1,2,3] swap(0,2) -> [2,1,0,3] swap(1,2) -> [2,0,1,3] swap(2,2); [0,1,2,3] swap(0,1) ->
  // [1,0,2,3] swap(1,3) -> [1,3,2,0] swap(2,3) -> [1,3,0,2].
  EXPECT_EQ(from_device<std::int64_t>(out, 8), (std::vector<std::int64_t>{2, 0, 1, 3, 1, 3, 0, 2}));
  const std::vector<std::int32_t> bad = {5};
  void* bd = to_device(bad);
  ASSERT_EQ(lu_permutation(&h(), desc(DType::kInt32, {1, 1}), bd, 4, desc(DType::kInt64, {1, 4}), out),
            Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
}

TEST_F(LinalgTest, TriangularSolveMatchesSubstitutionAndReadsOneTriangle) {
  const std::int64_t batch = 2, n = 6;
  for (const Triangle t : {Triangle::kLower, Triangle::kUpper})
    for (const bool unit : {false, true})
      for (const std::int64_t k : {std::int64_t{1}, std::int64_t{5}, std::int64_t{3000}}) {  // 3000: column chunks
        std::vector<float> a = random<float>(batch * n * n, 8), b = random<float>(batch * n * k, 9);
        for (std::int64_t m = 0; m < batch; ++m)
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              float& v = a[m * n * n + i * n + j];
              const bool other = t == Triangle::kLower ? j > i : j < i;
              if (other || (unit && i == j)) v = std::numeric_limits<float>::quiet_NaN();  // never read
              if (i == j && !unit) v += v > 0 ? 2.0f : -2.0f;
            }
        const auto x = solve(a, b, batch, n, k, t, unit);
        for (std::int64_t m = 0; m < batch; ++m)
          for (std::int64_t c = 0; c < k; ++c) {
            std::vector<double> ref(n);
            for (std::int64_t s = 0; s < n; ++s) {
              const std::int64_t i = t == Triangle::kLower ? s : n - 1 - s;
              double acc = b[m * n * k + i * k + c];
              for (std::int64_t j = 0; j < n; ++j) {
                const bool used = t == Triangle::kLower ? j < i : j > i;
                if (used) acc -= static_cast<double>(a[m * n * n + i * n + j]) * ref[j];
              }
              ref[i] = unit ? acc : acc / a[m * n * n + i * n + i];
            }
            for (std::int64_t i = 0; i < n; ++i)
              ASSERT_NEAR(x[m * n * k + i * k + c], ref[i], 1e-5 * (1 + std::fabs(ref[i])))
                  << (t == Triangle::kLower ? "lower" : "upper") << " unit " << unit << " k " << k << " m " << m
                  << " col " << c << " row " << i;
          }
      }
}

TEST_F(LinalgTest, CholeskyMatchesBanachiewiczAndFlagsTheFirstBadMinor) {
  const std::int64_t batch = 3, n = 7;
  std::vector<float> a(batch * n * n);
  const auto m = random<float>(batch * n * n, 10);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = i == j ? 0.5 : 0.0;
        for (std::int64_t q = 0; q < n; ++q) s += m[b * n * n + i * n + q] * m[b * n * n + j * n + q];
        a[b * n * n + i * n + j] = static_cast<float>(s);
      }
  // The strict upper triangle is never read; matrix 2 loses definiteness at column 4.
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i + 1; j < n; ++j) a[b * n * n + i * n + j] = 1e30f;
  a[2 * n * n + 3 * n + 3] = -100.0f;
  void* ad = to_device(a);
  void* ld = dalloc(a.size() * 4);
  void* id = dalloc(batch * 4);
  ASSERT_EQ(cholesky(&h(), desc(DType::kFloat32, {batch, n, n}), ad, desc(DType::kFloat32, {batch, n, n}), ld,
                     desc(DType::kInt32, {batch}), id),
            Status::kSuccess)
      << last_error_detail();
  const auto l = from_device<float>(ld, a.size());
  EXPECT_EQ(from_device<std::int32_t>(id, batch), (std::vector<std::int32_t>{0, 0, 4}));
  for (std::int64_t b = 0; b < 2; ++b) {
    std::vector<double> ref(n * n, 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = j; i < n; ++i) {
        double s = a[b * n * n + i * n + j];
        for (std::int64_t q = 0; q < j; ++q) s -= ref[i * n + q] * ref[j * n + q];
        ref[i * n + j] = i == j ? std::sqrt(s) : s / ref[j * n + j];
      }
    for (std::int64_t i = 0; i < n * n; ++i)
      EXPECT_NEAR(l[b * n * n + i], ref[i], 2e-5 * (1 + std::fabs(ref[i]))) << "matrix " << b << " at " << i;
  }
}

// LAPACK geqr2 in double on a row-major m x n matrix: R above, v below the diagonal, tau.
std::vector<double> naive_geqrf(Mat& a, std::int64_t m, std::int64_t n) {
  const std::int64_t p = std::min(m, n);
  std::vector<double> tau(static_cast<std::size_t>(p), 0.0);
  for (std::int64_t k = 0; k < p; ++k) {
    const double alpha = a[k * n + k];
    double s = 0;
    for (std::int64_t i = k + 1; i < m; ++i) s += a[i * n + k] * a[i * n + k];
    if (s == 0) continue;
    const double beta = -std::copysign(std::sqrt(alpha * alpha + s), alpha);
    tau[k] = (beta - alpha) / beta;
    std::vector<double> v(static_cast<std::size_t>(m - k), 1.0);
    for (std::int64_t i = k + 1; i < m; ++i) v[i - k] = a[i * n + k] / (alpha - beta);
    for (std::int64_t j = k + 1; j < n; ++j) {
      double w = 0;
      for (std::int64_t i = k; i < m; ++i) w += v[i - k] * a[i * n + j];
      for (std::int64_t i = k; i < m; ++i) a[i * n + j] -= tau[k] * v[i - k] * w;
    }
    a[k * n + k] = beta;
    for (std::int64_t i = k + 1; i < m; ++i) a[i * n + k] = v[i - k];
  }
  return tau;
}

TEST_F(LinalgTest, QrFactorMatchesGeqr2AndHouseholderProductRebuildsQ) {
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{6, 4}, {4, 6}, {5, 5}}) {
    const std::int64_t batch = 2, p = std::min(m, n);
    std::vector<float> a = random<float>(batch * m * n, 20 + static_cast<unsigned>(m));
    a[0 * n + 0] = 0.0f;
    for (std::int64_t i = 1; i < m; ++i) a[i * n + 0] = 0.0f;  // matrix 0's first column is zero: tau 0
    void* ad = to_device(a);
    void* qd = dalloc(a.size() * 4);
    void* td = dalloc(static_cast<std::size_t>(batch * p) * 4);
    ASSERT_EQ(qr_factor(&h(), desc(DType::kFloat32, {batch, m, n}), ad, desc(DType::kFloat32, {batch, m, n}), qd,
                        desc(DType::kFloat32, {batch, p}), td),
              Status::kSuccess)
        << last_error_detail();
    const auto qr = from_device<float>(qd, a.size());
    const auto tau = from_device<float>(td, static_cast<std::size_t>(batch * p));
    for (std::int64_t b = 0; b < batch; ++b) {
      Mat ref(a.begin() + b * m * n, a.begin() + (b + 1) * m * n);
      const auto rt = naive_geqrf(ref, m, n);
      for (std::int64_t k = 0; k < p; ++k) EXPECT_NEAR(tau[b * p + k], rt[k], 2e-5) << m << "x" << n << " b " << b;
      for (std::int64_t i = 0; i < m * n; ++i)
        EXPECT_NEAR(qr[b * m * n + i], ref[i], 3e-5 * (1 + std::fabs(ref[i]))) << m << "x" << n << " b " << b << " at " << i;
    }
    if (m < n) continue;
    // Q's first n columns: orthonormal, and Q R = A.
    void* out = dalloc(a.size() * 4);
    ASSERT_EQ(householder_product(&h(), desc(DType::kFloat32, {batch, m, n}), qd, desc(DType::kFloat32, {batch, p}), td,
                                  desc(DType::kFloat32, {batch, m, n}), out),
              Status::kSuccess)
        << last_error_detail();
    const auto q = from_device<float>(out, a.size());
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (std::int64_t t = 0; t <= j; ++t) s += double(q[b * m * n + i * n + t]) * qr[b * m * n + t * n + j];
          EXPECT_NEAR(s, a[b * m * n + i * n + j], 3e-5) << "QR = A at " << b << "," << i << "," << j;
        }
  }
}

// H = I - 2 v v^T / |v|^2 (orthogonal, symmetric) from a seed, n x n row-major in double.
Mat reflector(std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = d(rng);
  double vv = 0;
  for (double x : v) vv += x * x;
  Mat h(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) h[i * n + j] = (i == j ? 1.0 : 0.0) - 2 * v[i] * v[j] / vv;
  return h;
}

TEST_F(LinalgTest, JacobiFindsKnownEigenvaluesAndSingularValues) {
  // A = H diag(lambda) H: eigenvalues lambda (a repeated one, a negative one, one near zero).
  const std::int64_t n = 6;
  const std::vector<double> lambda = {3.0, -2.0, 0.5, 0.5, 1e-3, 7.25};
  const Mat hh = reflector(n, 30);
  std::vector<float> a(n * n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < n; ++q) s += hh[i * n + q] * lambda[q] * hh[j * n + q];
      a[i * n + j] = static_cast<float>(s);
    }
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];  // exactly symmetric
  void* ad = to_device(a);
  void* wd = dalloc(n * 4);
  ASSERT_EQ(symmetric_eigenvalues(&h(), desc(DType::kFloat32, {1, n, n}), ad, desc(DType::kFloat32, {1, n}), wd),
            Status::kSuccess)
      << last_error_detail();
  auto w = from_device<float>(wd, n);
  std::sort(w.begin(), w.end());
  auto want = lambda;
  std::sort(want.begin(), want.end());
  for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(w[i], want[i], 2e-5 * 7.25) << "eigenvalue " << i;

  // A = H1[:, :k]... a 4 x 7 matrix U diag(sigma) V^T (U, V from reflectors): sigma back.
  const std::int64_t k = 4, l = 7;
  const std::vector<double> sigma = {5.0, 1.0, 1.0, 0.01};
  const Mat u = reflector(k, 31), v = reflector(l, 32);
  std::vector<float> m(k * l);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < l; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < k; ++q) s += u[i * k + q] * sigma[q] * v[j * l + q];
      m[i * l + j] = static_cast<float>(s);
    }
  void* md = to_device(m);
  void* sd = dalloc(k * 4);
  ASSERT_EQ(singular_values(&h(), desc(DType::kFloat32, {k, l}), md, desc(DType::kFloat32, {k}), sd), Status::kSuccess)
      << last_error_detail();
  auto sv = from_device<float>(sd, k);
  std::sort(sv.begin(), sv.end(), std::greater<>());
  for (std::int64_t i = 0; i < k; ++i) EXPECT_NEAR(sv[i], sigma[i], 2e-5 * 5.0) << "singular value " << i;
  EXPECT_EQ(jacobi_sweeps(6), 11);
  EXPECT_EQ(singular_values(&h(), desc(DType::kFloat32, {l, k}), md, desc(DType::kFloat32, {l}), sd), Status::kBadParam);
}

TEST_F(LinalgTest, JacobiVectorsReconstructTheMatrixAndAreOrthonormal) {
  // Symmetric A (random, batch 2): v's rows are unit eigenvectors, A v_i = w_i v_i, V orthogonal.
  const std::int64_t n = 7, batch = 2;
  std::mt19937 rng(41);
  std::normal_distribution<float> nd;
  std::vector<float> a(batch * n * n);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j <= i; ++j) a[b * n * n + i * n + j] = a[b * n * n + j * n + i] = nd(rng);
  void* ad = to_device(a);
  void* wd = dalloc(batch * n * 4);
  void* vd = dalloc(batch * n * n * 4);
  ASSERT_EQ(symmetric_eigen(&h(), desc(DType::kFloat32, {batch, n, n}), ad, desc(DType::kFloat32, {batch, n}), wd,
                            desc(DType::kFloat32, {batch, n, n}), vd),
            Status::kSuccess)
      << last_error_detail();
  const auto w = from_device<float>(wd, batch * n);
  const auto v = from_device<float>(vd, batch * n * n);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t r = 0; r < n; ++r) {  // (A v_i)[r] = w_i v_i[r]
        double av = 0;
        for (std::int64_t c = 0; c < n; ++c) av += double(a[b * n * n + r * n + c]) * v[b * n * n + i * n + c];
        EXPECT_NEAR(av, double(w[b * n + i]) * v[b * n * n + i * n + r], 2e-5 * 10) << b << " " << i << " " << r;
      }
      for (std::int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < n; ++c) dot += double(v[b * n * n + i * n + c]) * v[b * n * n + j * n + c];
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-5) << b << " " << i << " " << j;
      }
    }
  // One-sided on a 3 x 5 matrix: a = qt^T rotated, qt orthogonal, rotated's rows orthogonal with
  // norms s.
  const std::int64_t k = 3, l = 5;
  std::vector<float> m(k * l);
  for (auto& x : m) x = nd(rng);
  void* md = to_device(m);
  void* sd = dalloc(k * 4);
  void* qd = dalloc(k * k * 4);
  void* rd = dalloc(k * l * 4);
  ASSERT_EQ(singular_value_rotation(&h(), desc(DType::kFloat32, {k, l}), md, desc(DType::kFloat32, {k}), sd,
                                    desc(DType::kFloat32, {k, k}), qd, desc(DType::kFloat32, {k, l}), rd),
            Status::kSuccess)
      << last_error_detail();
  const auto sv = from_device<float>(sd, k), qt = from_device<float>(qd, k * k), rot = from_device<float>(rd, k * l);
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = 0; j < l; ++j) {
      double rebuilt = 0;
      for (std::int64_t q = 0; q < k; ++q) rebuilt += double(qt[q * k + i]) * rot[q * l + j];
      EXPECT_NEAR(rebuilt, m[i * l + j], 1e-5 * 10) << i << " " << j;
    }
    for (std::int64_t j = 0; j < k; ++j) {
      double qq = 0, rr = 0;
      for (std::int64_t c = 0; c < k; ++c) qq += double(qt[i * k + c]) * qt[j * k + c];
      for (std::int64_t c = 0; c < l; ++c) rr += double(rot[i * l + c]) * rot[j * l + c];
      EXPECT_NEAR(qq, i == j ? 1.0 : 0.0, 1e-5);
      EXPECT_NEAR(rr, i == j ? double(sv[i]) * sv[i] : 0.0, 1e-4) << i << " " << j;
    }
  }
  // The vectors' outputs are checked like the values: a wrong shape is refused.
  EXPECT_EQ(singular_value_rotation(&h(), desc(DType::kFloat32, {k, l}), md, desc(DType::kFloat32, {k}), sd,
                                    desc(DType::kFloat32, {k, l}), qd, desc(DType::kFloat32, {k, l}), rd),
            Status::kBadParam);
  EXPECT_EQ(symmetric_eigen(&h(), desc(DType::kFloat32, {batch, n, n}), ad, desc(DType::kFloat32, {batch, n}), wd,
                            desc(DType::kFloat32, {batch, n}), vd),
            Status::kBadParam);
}

TEST_F(LinalgTest, RefusesWhatItCannotDo) {
  const std::int64_t big = linalg_max_square_size(&h()) + 1;
  ASSERT_GT(big, 8);
  void* p = dalloc(static_cast<std::size_t>(big * big) * 4);
  void* q = dalloc(static_cast<std::size_t>(big) * 4);
  const TensorDesc sq = desc(DType::kFloat32, {big, big}), info = desc(DType::kInt32, {});
  EXPECT_EQ(cholesky(&h(), sq, p, sq, p, info, q), Status::kNotSupported);
  EXPECT_NE(last_error_detail().find("does not fit"), std::string::npos) << last_error_detail();
  const std::int64_t huge = 2 * big;  // LU keeps one copy of the matrix (Cholesky two)
  const TensorDesc sq2 = desc(DType::kFloat32, {huge, huge});
  EXPECT_EQ(lu_factor(&h(), sq2, p, true, sq2, p, desc(DType::kInt32, {huge}), q, info, q), Status::kNotSupported);
  EXPECT_EQ(qr_factor(&h(), sq2, p, sq2, p, desc(DType::kFloat32, {huge}), q), Status::kNotSupported);
  const TensorDesc half = desc(DType::kFloat16, {4, 4});
  EXPECT_EQ(cholesky(&h(), half, p, half, p, info, q), Status::kNotSupported);
  const TensorDesc rect = desc(DType::kFloat32, {4, 5});
  EXPECT_EQ(cholesky(&h(), rect, p, rect, p, info, q), Status::kBadParam);
  EXPECT_EQ(lu_factor(&h(), rect, p, true, rect, p, desc(DType::kInt64, {4}), q, info, q), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("pivots"), std::string::npos) << last_error_detail();
  const TensorDesc a = desc(DType::kFloat32, {2, 3, 3}), b = desc(DType::kFloat32, {1, 3, 2});
  EXPECT_EQ(triangular_solve(&h(), a, p, Triangle::kLower, false, b, p, b, p), Status::kBadParam);
}

TEST_F(LinalgTest, AFlippedDmaBitChangesTheResults) {
  // Results come out of the simulated memories: a flipped bit in the matrix's load changes them.
  // (Later DMAs include the NRAM column gathers of the pivot search, whose flipped low bits may
  // legitimately pick the same pivot.)
  const std::int64_t n = 5;
  const auto a = random<float>(n * n, 13);
  const Lu clean = lu(a, 1, n, n);
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  const Lu hit = lu(a, 1, n, n);
  EXPECT_NE(hit.lu, clean.lu);
}

TEST_F(LinalgTest, VfuWorkFollowsThePlanAndNotTheValues) {
  const std::int64_t n = 6;
  auto run = [&](const std::vector<float>& a) {
    EXPECT_EQ(mlusimResetStats(0), cnrtSuccess);
    lu(a, 1, n, n);
    mlusimDeviceStats_t s{};
    EXPECT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
    return std::pair{s.engine_intrinsics[1], s.engine_cycles[1]};
  };
  const auto dense = run(random<float>(n * n, 11));
  // iota (fill + 3 doublings for 6 rows); per step 6 search intrinsics, and below the last step
  // the division, negation, u's zero fill and the rank-1 vec_matmul.
  EXPECT_EQ(dense.first, 4u + 6u * n + 4u * (n - 1)) << "VFU intrinsics";
  EXPECT_EQ(run(std::vector<float>(n * n, 0.0f)), dense) << "a zero matrix (info 1) does the same work";
  ASSERT_EQ(mlusimSetTimingOnly(1), cnrtSuccess);
  EXPECT_EQ(run(random<float>(n * n, 12)), dense) << "timing-only mode";
}

}  // namespace
}  // namespace mlusim::mlu::testing
