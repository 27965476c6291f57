// Reductions against a naive host reference: row and column layouts, several reduced dims,
// non-contiguous x, keepdim, the two-phase split, fp16 and integral dtypes, empty reductions,
// bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

// For every output (kept dims in logical order), the reduced elements in logical order.
std::vector<std::vector<double>> groups(const std::vector<double>& x, const Dims& dims, const Dims& strides,
                                        const std::vector<bool>& reduced) {
  Dims kept_dims;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (!reduced[i]) kept_dims.push_back(dims[i]);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(numel(kept_dims)));
  for_each_index(dims, [&](const Dims& idx) {
    std::int64_t k = 0;
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (!reduced[i]) k = k * dims[i] + idx[i];
    out[static_cast<std::size_t>(k)].push_back(x[static_cast<std::size_t>(offset(idx, dims, strides))]);
  });
  return out;
}

std::vector<bool> mask_of(std::size_t ndim, const std::vector<int>& dims) {
  std::vector<bool> m(ndim, dims.empty());
  for (int d : dims) m[static_cast<std::size_t>(d < 0 ? d + static_cast<int>(ndim) : d)] = true;
  return m;
}

Dims out_dims(const Dims& dims, const std::vector<bool>& reduced, bool keepdim) {
  Dims o;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (!reduced[i]) o.push_back(dims[i]);
    else if (keepdim) o.push_back(1);
  }
  return o;
}

class ReduceTest : public MluTest {
 protected:
  void* workspace(const TensorDesc& x, const std::vector<int>& dims, std::size_t* bytes) {
    EXPECT_EQ(get_reduce_workspace_size(&h(), x, dims, bytes), Status::kSuccess);
    return *bytes ? dalloc(*bytes) : nullptr;
  }

  // fp32 reduction of a random view; f maps each group to the expected value.
  template <class F>
  void check(ReduceOp op, const Dims& dims, const Dims& strides, const std::vector<int>& rdims, bool keepdim, F f,
             unsigned seed, double tol = 1e-5, float lo = -1.0f, float hi = 1.0f) {
    const auto xv = random<float>(static_cast<std::size_t>(span(dims, strides)), seed, lo, hi);
    const std::vector<double> xd(xv.begin(), xv.end());
    const auto m = mask_of(dims.size(), rdims);
    const Dims od = out_dims(dims, m, keepdim);
    const TensorDesc xdsc = desc(DType::kFloat32, dims, strides);
    void* x = to_device(xv);
    void* y = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    std::size_t ws_bytes = 0;
    void* ws = workspace(xdsc, rdims, &ws_bytes);
    ASSERT_EQ(reduce(&h(), op, xdsc, x, rdims, keepdim, desc(DType::kFloat32, od), y, ws, ws_bytes), Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(y, static_cast<std::size_t>(numel(od)));
    const auto g = groups(xd, dims, strides, m);
    ASSERT_EQ(got.size(), g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double want = f(g[i]);
      ASSERT_NEAR(got[i], want, tol * std::max(1.0, std::fabs(want))) << "output " << i;
    }
  }
};

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double prod_of(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}

TEST_F(ReduceTest, SumRowAndColumnLayouts) {
  const Dims d = {37, 53};
  check(ReduceOp::kSum, d, contiguous_strides(d), {1}, false, sum_of, 1);   // row mode
  check(ReduceOp::kSum, d, contiguous_strides(d), {0}, false, sum_of, 2);   // column mode
  check(ReduceOp::kSum, d, contiguous_strides(d), {-1}, true, sum_of, 3);
  const Dims d3 = {5, 7, 9};
  check(ReduceOp::kSum, d3, contiguous_strides(d3), {1}, false, sum_of, 4);     // middle dim
  check(ReduceOp::kSum, d3, contiguous_strides(d3), {0, 2}, true, sum_of, 5);   // outer + inner
  check(ReduceOp::kSum, d3, contiguous_strides(d3), {}, false, sum_of, 6);      // everything
}

TEST_F(ReduceTest, NonContiguousInput) {
  check(ReduceOp::kSum, {19, 23}, {1, 19}, {1}, false, sum_of, 7);                 // transposed
  check(ReduceOp::kSum, {19, 23}, {1, 19}, {0}, false, sum_of, 8);
  check(ReduceOp::kAmax, {4, 6, 5}, {60, 2, 12}, {1, 2}, false, max_of, 9);        // permuted, sliced
  check(ReduceOp::kSum, {8, 9}, {0, 1}, {0}, false, sum_of, 10);                   // expanded
}

TEST_F(ReduceTest, MeanProdAmaxAmin) {
  const Dims d = {11, 30};
  check(ReduceOp::kMean, d, contiguous_strides(d), {1}, false,
        [](const std::vector<double>& v) { return sum_of(v) / static_cast<double>(v.size()); }, 11);
  check(ReduceOp::kProd, d, contiguous_strides(d), {1}, false, prod_of, 12, 1e-4, 0.8f, 1.2f);
  check(ReduceOp::kProd, d, contiguous_strides(d), {0}, false, prod_of, 13, 1e-4, 0.8f, 1.2f);
  check(ReduceOp::kAmax, d, contiguous_strides(d), {0}, false, max_of, 14);
  check(ReduceOp::kAmin, d, contiguous_strides(d), {1}, false, min_of, 15);
}

TEST_F(ReduceTest, LargeReductionSplitsAcrossCores) {
  h().clear_ops();
  check(ReduceOp::kSum, {1, 40000}, {40000, 1}, {}, false, sum_of, 16, 1e-4);
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops()[0].kernels, 2u) << "per-core partials, then a combine kernel";
  check(ReduceOp::kAmax, {40000, 3}, {3, 1}, {0}, false, max_of, 17);
  check(ReduceOp::kMean, {3, 20000}, {20000, 1}, {1}, true,
        [](const std::vector<double>& v) { return sum_of(v) / static_cast<double>(v.size()); }, 18);
}

TEST_F(ReduceTest, ManyOutputsUseEveryCoreWithoutSplit) {
  h().clear_ops();
  check(ReduceOp::kSum, {512, 300}, {300, 1}, {1}, false, sum_of, 19);
  EXPECT_EQ(h().ops().back().kernels, 1u);
}

TEST_F(ReduceTest, HalfAccumulatesInFloat) {
  const std::int64_t n = 3000;
  std::vector<half> xv(n, half(0.1f));
  void* x = to_device(xv);
  void* y = dalloc(2);
  const TensorDesc xd = desc(DType::kFloat16, {n});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {}, &ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, xd, x, {}, false, desc(DType::kFloat16, {}), y, ws, ws_bytes), Status::kSuccess);
  // 3000 x fp16(0.1) = 300.04 in fp32; an fp16 accumulator would stall near 256.
  EXPECT_EQ(from_device<half>(y, 1)[0], half(3000.0f * static_cast<float>(half(0.1f))));
}

TEST_F(ReduceTest, IntegralSumsGiveInt64) {
  const std::vector<std::int32_t> xv = {1, -2, 3, 4, 5, 6};
  void* x = to_device(xv);
  void* y = dalloc(32);
  const TensorDesc xd = desc(DType::kInt32, {2, 3});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {1}, &ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, xd, x, {1}, false, desc(DType::kInt64, {2}), y, ws, ws_bytes), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 2), (std::vector<std::int64_t>{2, 15}));
  const std::vector<std::uint8_t> bv = {1, 0, 1, 1, 1, 0};
  void* b = to_device(bv);
  const TensorDesc bd = desc(DType::kBool, {2, 3});
  ws = workspace(bd, {0}, &ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, bd, b, {0}, false, desc(DType::kInt64, {3}), y, ws, ws_bytes), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 3), (std::vector<std::int64_t>{2, 1, 1}));
  ASSERT_EQ(reduce(&h(), ReduceOp::kAmax, xd, x, {0}, false, desc(DType::kInt32, {3}), y, ws, ws_bytes), Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(y, 3), (std::vector<std::int32_t>{4, 5, 6}));
}

TEST_F(ReduceTest, NanPropagatesThroughAmax) {
  std::vector<float> xv = {1, 2, NAN, 4, 5, 6};
  void* x = to_device(xv);
  void* y = dalloc(16);
  const TensorDesc xd = desc(DType::kFloat32, {2, 3});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {1}, &ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kAmax, xd, x, {1}, false, desc(DType::kFloat32, {2}), y, ws, ws_bytes), Status::kSuccess);
  const auto got = from_device<float>(y, 2);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 6.0f);
}

TEST_F(ReduceTest, EmptyReductions) {
  const TensorDesc xd = desc(DType::kFloat32, {0, 4});
  void* y = dalloc(16);
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {0}, &ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, xd, nullptr, {0}, false, desc(DType::kFloat32, {4}), y, ws, ws_bytes),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{0, 0, 0, 0}));
  ASSERT_EQ(reduce(&h(), ReduceOp::kProd, xd, nullptr, {0}, false, desc(DType::kFloat32, {4}), y, ws, ws_bytes),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{1, 1, 1, 1}));
  ASSERT_EQ(reduce(&h(), ReduceOp::kMean, xd, nullptr, {0}, false, desc(DType::kFloat32, {4}), y, ws, ws_bytes),
            Status::kSuccess);
  EXPECT_TRUE(std::isnan(from_device<float>(y, 4)[2]));
  EXPECT_EQ(reduce(&h(), ReduceOp::kAmax, xd, nullptr, {0}, false, desc(DType::kFloat32, {4}), y, ws, ws_bytes),
            Status::kBadParam);
  // Reducing a non-empty dim of an empty tensor gives an empty result.
  EXPECT_EQ(reduce(&h(), ReduceOp::kAmax, xd, nullptr, {1}, false, desc(DType::kFloat32, {0}), nullptr, ws, ws_bytes),
            Status::kSuccess);
}

TEST_F(ReduceTest, BadArguments) {
  void* p = dalloc(4096);
  const TensorDesc xd = desc(DType::kFloat32, {4, 5});
  const TensorDesc y4 = desc(DType::kFloat32, {4});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {1}, &ws_bytes);
  EXPECT_EQ(reduce(nullptr, ReduceOp::kSum, xd, p, {1}, false, y4, p, ws, ws_bytes), Status::kNotInitialized);
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xd, p, {2}, false, y4, p, ws, ws_bytes), Status::kBadParam);
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xd, p, {1, -1}, false, y4, p, ws, ws_bytes), Status::kBadParam);
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xd, p, {1}, true, y4, p, ws, ws_bytes), Status::kBadParam)
      << "keepdim needs [4, 1]";
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xd, p, {1}, false, y4, p, nullptr, 0), ws_bytes ? Status::kBadParam : Status::kSuccess);
  EXPECT_EQ(reduce(&h(), ReduceOp::kMean, desc(DType::kInt32, {4, 5}), p, {1}, false, y4, p, ws, ws_bytes),
            Status::kBadParam);
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xd, p, {1}, false, desc(DType::kInt32, {4}), p, ws, ws_bytes), Status::kBadParam);
  EXPECT_EQ(reduce(&h(), ReduceOp::kSum, desc(DType::kFloat64, {4, 5}), p, {1}, false, y4, p, ws, ws_bytes),
            Status::kNotSupported);
}

// ---- max/min with indices, argmax ----------------------------------------------------------------

class IndexReduceTest : public ReduceTest {
 protected:
  // Expected (value, first index) of each group with torch's NaN rule.
  static std::pair<double, std::int64_t> extreme(const std::vector<double>& v, bool is_max) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < v.size(); ++i) {
      if (std::isnan(v[best])) break;
      if (std::isnan(v[i]) || (is_max ? v[i] > v[best] : v[i] < v[best])) best = i;
    }
    return {v[best], static_cast<std::int64_t>(best)};
  }

  void check_dim(Extreme which, const Dims& dims, const Dims& strides, int dim, const std::vector<float>& xv) {
    const std::vector<double> xd(xv.begin(), xv.end());
    const auto m = mask_of(dims.size(), {dim});
    const Dims od = out_dims(dims, m, false);
    const TensorDesc xdsc = desc(DType::kFloat32, dims, strides);
    void* x = to_device(xv);
    void* v = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    void* i = dalloc(static_cast<std::size_t>(numel(od)) * 8);
    std::size_t ws_bytes = 0;
    void* ws = workspace(xdsc, {dim}, &ws_bytes);
    ASSERT_EQ(reduce_with_indices(&h(), which, xdsc, x, dim, false, desc(DType::kFloat32, od), v,
                                  desc(DType::kInt64, od), i, ws, ws_bytes),
              Status::kSuccess)
        << last_error_detail();
    const auto gv = from_device<float>(v, static_cast<std::size_t>(numel(od)));
    const auto gi = from_device<std::int64_t>(i, static_cast<std::size_t>(numel(od)));
    const auto g = groups(xd, dims, strides, m);
    for (std::size_t k = 0; k < g.size(); ++k) {
      const auto [want_v, want_i] = extreme(g[k], which == Extreme::kMax);
      ASSERT_EQ(gi[k], want_i) << "output " << k;
      if (std::isnan(want_v)) ASSERT_TRUE(std::isnan(gv[k]));
      else ASSERT_EQ(gv[k], static_cast<float>(want_v));
    }
  }

  // Values from a small set so ties are frequent.
  static std::vector<float> tied(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(rng() % 5);
    return v;
  }
};

TEST_F(IndexReduceTest, FirstIndexOfTiesInRowAndColumnLayouts) {
  check_dim(Extreme::kMax, {23, 31}, {31, 1}, 1, tied(23 * 31, 1));
  check_dim(Extreme::kMax, {23, 31}, {31, 1}, 0, tied(23 * 31, 2));
  check_dim(Extreme::kMin, {4, 9, 7}, {63, 7, 1}, 1, tied(4 * 9 * 7, 3));
  check_dim(Extreme::kMin, {9, 13}, {1, 9}, 1, tied(9 * 13, 4));  // transposed
}

TEST_F(IndexReduceTest, NanIsTheExtreme) {
  std::vector<float> x = tied(6 * 8, 5);
  x[8 + 3] = NAN;   // row 1, col 3
  x[8 + 6] = NAN;   // row 1, col 6
  x[40 + 2] = NAN;  // row 5, col 2
  check_dim(Extreme::kMax, {6, 8}, {8, 1}, 1, x);
  check_dim(Extreme::kMin, {6, 8}, {8, 1}, 0, x);
}

TEST_F(IndexReduceTest, SplitReductionKeepsTheFirstIndex) {
  check_dim(Extreme::kMax, {2, 30000}, {30000, 1}, 1, tied(60000, 6));
  check_dim(Extreme::kMin, {30000, 2}, {2, 1}, 0, tied(60000, 7));
}

TEST_F(IndexReduceTest, ArgmaxFlattenedAndKeepdim) {
  const std::vector<float> xv = tied(7 * 11, 8);
  void* x = to_device(xv);
  void* i = dalloc(64);
  // Transposed view: flattened index in logical (row-major) order, through a contiguous copy.
  const TensorDesc xt = desc(DType::kFloat32, {11, 7}, {1, 11});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xt, {}, &ws_bytes);
  ASSERT_EQ(arg_reduce(&h(), Extreme::kMax, xt, x, std::nullopt, false, desc(DType::kInt64, {}), i, ws, ws_bytes),
            Status::kSuccess)
      << last_error_detail();
  std::vector<double> logical;
  for (int r = 0; r < 11; ++r)
    for (int c = 0; c < 7; ++c) logical.push_back(xv[static_cast<std::size_t>(c * 11 + r)]);
  EXPECT_EQ(from_device<std::int64_t>(i, 1)[0], extreme(logical, true).second);
  // argmin along dim 0 with keepdim, int32 indices.
  const TensorDesc xc = desc(DType::kFloat32, {7, 11});
  ws = workspace(xc, {0}, &ws_bytes);
  ASSERT_EQ(arg_reduce(&h(), Extreme::kMin, xc, x, 0, true, desc(DType::kInt32, {1, 11}), i, ws, ws_bytes),
            Status::kSuccess);
  const auto got = from_device<std::int32_t>(i, 11);
  for (int c = 0; c < 11; ++c) {
    std::vector<double> col;
    for (int r = 0; r < 7; ++r) col.push_back(xv[static_cast<std::size_t>(r * 11 + c)]);
    EXPECT_EQ(got[static_cast<std::size_t>(c)], extreme(col, false).second) << c;
  }
}

TEST_F(IndexReduceTest, IntegralValuesAndBadArguments) {
  const std::vector<std::int64_t> xv = {5, 9, 9, -1, 3, 9};
  void* x = to_device(xv);
  void* v = dalloc(64);
  void* i = dalloc(64);
  const TensorDesc xd = desc(DType::kInt64, {2, 3});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {1}, &ws_bytes);
  ASSERT_EQ(reduce_with_indices(&h(), Extreme::kMax, xd, x, 1, false, desc(DType::kInt64, {2}), v,
                                desc(DType::kInt64, {2}), i, ws, ws_bytes),
            Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(v, 2), (std::vector<std::int64_t>{9, 9}));
  EXPECT_EQ(from_device<std::int64_t>(i, 2), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(reduce_with_indices(&h(), Extreme::kMax, xd, x, 1, false, desc(DType::kFloat32, {2}), v,
                                desc(DType::kInt64, {2}), i, ws, ws_bytes),
            Status::kBadParam)
      << "values must have x's dtype";
  EXPECT_EQ(arg_reduce(&h(), Extreme::kMax, xd, x, 1, false, desc(DType::kFloat32, {2}), i, ws, ws_bytes),
            Status::kNotSupported)
      << "indices are int64 or int32";
  EXPECT_EQ(arg_reduce(&h(), Extreme::kMax, desc(DType::kFloat32, {3, 0}), nullptr, 1, false, desc(DType::kInt64, {3}),
                       i, ws, ws_bytes),
            Status::kBadParam)
      << "argmax of an empty dim";
}

// ---- var / std / norm ------------------------------------------------------------------------------

double var_of(const std::vector<double>& v, double correction) {
  const double mean = sum_of(v) / static_cast<double>(v.size());
  double m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
  return m2 / std::max(0.0, static_cast<double>(v.size()) - correction);
}

class VarNormTest : public ReduceTest {
 protected:
  void check_var(const Dims& dims, const Dims& strides, const std::vector<int>& rdims, double correction, bool take_sqrt,
                 bool with_mean, unsigned seed) {
    const auto xv = random<float>(static_cast<std::size_t>(span(dims, strides)), seed, 1.0f, 3.0f);
    const std::vector<double> xd(xv.begin(), xv.end());
    const auto m = mask_of(dims.size(), rdims);
    const Dims od = out_dims(dims, m, true);
    const TensorDesc xdsc = desc(DType::kFloat32, dims, strides), od_desc = desc(DType::kFloat32, od);
    void* x = to_device(xv);
    void* y = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    void* mean = dalloc(static_cast<std::size_t>(numel(od)) * 4);
    std::size_t ws_bytes = 0;
    void* ws = workspace(xdsc, rdims, &ws_bytes);
    ASSERT_EQ(var(&h(), xdsc, x, rdims, correction, true, take_sqrt, od_desc, y, with_mean ? &od_desc : nullptr,
                  with_mean ? mean : nullptr, ws, ws_bytes),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(y, static_cast<std::size_t>(numel(od)));
    const auto got_mean = from_device<float>(mean, static_cast<std::size_t>(numel(od)));
    const auto g = groups(xd, dims, strides, m);
    for (std::size_t k = 0; k < g.size(); ++k) {
      const double v = var_of(g[k], correction), want = take_sqrt ? std::sqrt(v) : v;
      ASSERT_NEAR(got[k], want, 1e-5 * std::max(1.0, want)) << k;
      if (with_mean) {
        ASSERT_NEAR(got_mean[k], sum_of(g[k]) / static_cast<double>(g[k].size()), 1e-5) << k;
      }
    }
  }

  void check_norm(double p, const Dims& dims, const std::vector<int>& rdims, unsigned seed) {
    const auto xv = random<float>(static_cast<std::size_t>(numel(dims)), seed);
    const std::vector<double> xd(xv.begin(), xv.end());
    const auto m = mask_of(dims.size(), rdims);
    const Dims od = out_dims(dims, m, false);
    const TensorDesc xdsc = desc(DType::kFloat32, dims);
    void* x = to_device(xv);
    void* y = dalloc(static_cast<std::size_t>(numel(od)) * 4 + 4);
    std::size_t ws_bytes = 0;
    void* ws = workspace(xdsc, rdims, &ws_bytes);
    ASSERT_EQ(norm(&h(), xdsc, x, p, rdims, false, desc(DType::kFloat32, od), y, ws, ws_bytes), Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(y, static_cast<std::size_t>(numel(od)));
    const auto g = groups(xd, dims, contiguous_strides(dims), m);
    for (std::size_t k = 0; k < g.size(); ++k) {
      double want = 0;
      if (std::isinf(p)) {
        want = std::fabs(g[k][0]);
        for (double v : g[k]) want = p > 0 ? std::max(want, std::fabs(v)) : std::min(want, std::fabs(v));
      } else if (p == 0) {
        for (double v : g[k]) want += v != 0;
      } else {
        for (double v : g[k]) want += std::pow(std::fabs(v), p);
        want = std::pow(want, 1.0 / p);
      }
      ASSERT_NEAR(got[k], want, 1e-5 * std::max(1.0, want)) << "p=" << p << " output " << k;
    }
  }
};

TEST_F(VarNormTest, VarianceAndStdWithCorrection) {
  const Dims d = {9, 40};
  check_var(d, contiguous_strides(d), {1}, 1.0, false, false, 1);
  check_var(d, contiguous_strides(d), {0}, 0.0, true, true, 2);
  check_var(d, contiguous_strides(d), {}, 2.5, false, true, 3);
  check_var({6, 5, 4}, {1, 6, 30}, {0, 2}, 1.0, true, false, 4);  // permuted x
}

TEST_F(VarNormTest, VarianceOfLargeTensorSplitsAcrossCores) {
  check_var({1, 30000}, {30000, 1}, {1}, 1.0, false, true, 5);
}

TEST_F(VarNormTest, SingleElementVarianceIsNan) {
  const std::vector<float> xv = {3.0f};
  void* x = to_device(xv);
  void* y = dalloc(4);
  const TensorDesc xd = desc(DType::kFloat32, {1});
  std::size_t ws_bytes = 0;
  void* ws = workspace(xd, {}, &ws_bytes);
  ASSERT_EQ(var(&h(), xd, x, {}, 1.0, false, false, desc(DType::kFloat32, {}), y, nullptr, nullptr, ws, ws_bytes),
            Status::kSuccess);
  EXPECT_TRUE(std::isnan(from_device<float>(y, 1)[0]));
}

TEST_F(VarNormTest, NormsOfEveryOrder) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {2.0, 1.0, 0.0, 3.0, 0.5, inf, -inf}) {
    check_norm(p, {7, 33}, {1}, 10);
    check_norm(p, {7, 33}, {0}, 11);
  }
  check_norm(2.0, {3, 20000}, {}, 12);
}

TEST_F(VarNormTest, IntegralInputIsRejected) {
  void* p = dalloc(64);
  std::size_t ws_bytes = 0;
  const TensorDesc xd = desc(DType::kInt32, {4});
  void* ws = workspace(xd, {}, &ws_bytes);
  EXPECT_EQ(var(&h(), xd, p, {}, 1.0, false, false, desc(DType::kFloat32, {}), p, nullptr, nullptr, ws, ws_bytes),
            Status::kBadParam);
  EXPECT_EQ(norm(&h(), xd, p, 2.0, {}, false, desc(DType::kFloat32, {}), p, ws, ws_bytes), Status::kBadParam);
}

}  // namespace
}  // namespace mlusim::mlu::testing
