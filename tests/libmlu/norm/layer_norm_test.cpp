// layer_norm forward and backward against a naive double-precision reference.
#include "mlusim/mlu/norm.h"

#include <functional>
#include <limits>

#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

struct LnRef {
  std::vector<double> y, mean, rstd, dx, dw, db;
};

// rows x n row-major values.
LnRef ref_layer_norm(const std::vector<float>& x, const std::vector<float>* w, const std::vector<float>* b,
                     const std::vector<float>& dy, std::int64_t rows, std::int64_t n, double eps) {
  LnRef r;
  r.y.resize(x.size()), r.dx.resize(x.size()), r.mean.resize(rows), r.rstd.resize(rows);
  r.dw.assign(n, 0), r.db.assign(n, 0);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xr = &x[i * n];
    double m = 0, v = 0;
    for (std::int64_t j = 0; j < n; ++j) m += xr[j];
    m /= n;
    for (std::int64_t j = 0; j < n; ++j) v += (xr[j] - m) * (xr[j] - m);
    v /= n;
    const double rs = 1 / std::sqrt(v + eps);
    r.mean[i] = m, r.rstd[i] = rs;
    double a = 0, bb = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double xh = (xr[j] - m) * rs, wj = w ? (*w)[j] : 1, bj = b ? (*b)[j] : 0;
      r.y[i * n + j] = xh * wj + bj;
      const double g = dy[i * n + j] * wj;
      a += g, bb += g * xh;
      r.dw[j] += dy[i * n + j] * xh, r.db[j] += dy[i * n + j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const double xh = (xr[j] - m) * rs, g = dy[i * n + j] * (w ? (*w)[j] : 1);
      r.dx[i * n + j] = rs * (g - a / n - xh * bb / n);
    }
  }
  return r;
}

struct Case {
  Dims dims;
  int normalized_ndim = 1;
  bool weight = true, bias = true;
  DType type = DType::kFloat32;
  Dims x_strides = {};
  float offset = 0;  // added to x: a large mean tests the centred variance
};

class LayerNormTest : public MluTest {
 protected:
  void* upload(DType t, const std::vector<float>& v, const Dims& d, const Dims& s) {
    return t == DType::kFloat32 ? to_device(to_storage<float>(v, d, s)) : to_device(to_storage<sim::half>(v, d, s));
  }
  std::vector<float> download(DType t, const void* p, const Dims& d, const Dims& s) {
    const std::size_t n = storage_elems(d, s);
    return t == DType::kFloat32 ? from_storage(from_device<float>(p, n), d, s)
                                : from_storage(from_device<sim::half>(p, n), d, s);
  }
  static std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

  void run(const Case& c, bool backward) {
    const Dims xs = c.x_strides.empty() ? contiguous_strides(c.dims) : c.x_strides;
    const Dims nd(c.dims.end() - c.normalized_ndim, c.dims.end()),
        lead(c.dims.begin(), c.dims.end() - c.normalized_ndim);
    const std::int64_t n = numel(nd), rows = numel(lead);
    const bool half = c.type == DType::kFloat16;
    std::vector<float> x = random<float>(numel(c.dims), 21, -2, 2), w = random<float>(n, 22, 0.5f, 1.5f),
                       b = random<float>(n, 23), dy = random<float>(numel(c.dims), 24);
    for (float& v : x) v += c.offset;
    if (half) x = round_half(x), w = round_half(w), b = round_half(b), dy = round_half(dy);
    const double eps = 1e-5;
    const LnRef ref = ref_layer_norm(x, c.weight ? &w : nullptr, c.bias ? &b : nullptr, dy, rows, n, eps);
    const TensorDesc xd = desc(c.type, c.dims, xs), wd = desc(c.type, nd), sd = desc(DType::kFloat32, lead);
    void* xp = upload(c.type, x, c.dims, xs);
    void* wp = upload(c.type, w, nd, contiguous_strides(nd));
    void* bp = upload(c.type, b, nd, contiguous_strides(nd));
    void* yp = dalloc(numel(c.dims) * 4);
    void* mp = dalloc(rows * 4);
    void* rp = dalloc(rows * 4);
    const TensorDesc yd = desc(c.type, c.dims);
    ASSERT_EQ(layer_norm_forward(handle_, c.normalized_ndim, eps, xd, xp, c.weight ? &wd : nullptr, wp,
                                 c.bias ? &wd : nullptr, bp, yd, yp, &sd, mp, &sd, rp),
              Status::kSuccess)
        << last_error_detail();
    const double tol = half ? 1e-2 : 2e-5;
    expect_close(download(c.type, yp, c.dims, contiguous_strides(c.dims)), ref.y, tol, tol, "y");
    expect_close(from_device<float>(mp, rows), ref.mean, 1e-5 + (half ? 0 : 1e-6 * std::abs(c.offset)), 1e-5, "mean");
    expect_close(from_device<float>(rp, rows), ref.rstd, 1e-5, 1e-4, "rstd");
    if (!backward) return;

    // Backward from the reference statistics (what the forward saved).
    std::vector<float> mean(ref.mean.begin(), ref.mean.end()), rstd(ref.rstd.begin(), ref.rstd.end());
    void* mean_p = to_device(mean);
    void* rstd_p = to_device(rstd);
    void* dyp = upload(c.type, dy, c.dims, xs);
    void* dxp = dalloc(numel(c.dims) * 4);
    void* dwp = dalloc(n * 4);
    void* dbp = dalloc(n * 4);
    std::size_t ws = 0;
    ASSERT_EQ(get_layer_norm_backward_workspace_size(handle_, c.normalized_ndim, xd, true, true, &ws),
              Status::kSuccess);
    void* wsp = dalloc(ws);
    const TensorDesc gd = desc(c.type, c.dims, xs), dxd = desc(c.type, c.dims), dwd = desc(DType::kFloat32, nd);
    ASSERT_EQ(layer_norm_backward(handle_, c.normalized_ndim, gd, dyp, xd, xp, sd, mean_p, sd, rstd_p,
                                  c.weight ? &wd : nullptr, wp, wsp, ws, &dxd, dxp, &dwd, dwp, &dwd, dbp),
              Status::kSuccess)
        << last_error_detail();
    const double btol = half ? 2e-2 : 1e-4;
    expect_close(download(c.type, dxp, c.dims, contiguous_strides(c.dims)), ref.dx, btol, btol, "dx");
    expect_close(from_device<float>(dwp, n), ref.dw, btol * 4, btol, "dweight");
    expect_close(from_device<float>(dbp, n), ref.db, btol * 4, btol, "dbias");
  }
};

TEST_F(LayerNormTest, ForwardOddShapes) {
  run({{7, 33}}, false);
  run({{2, 3, 5, 6}, 2, false, false}, false);
  run({{1, 1}, 1, true, false}, false);
  run({{5, 3, 4}, 3}, false);  // normalized over every dim: one row
  run({{9, 40}, 1, true, true, DType::kFloat32, {}, 1000.0f}, false);
}

TEST_F(LayerNormTest, HalfPrecision) { run({{6, 48}, 1, true, true, DType::kFloat16}, true); }

TEST_F(LayerNormTest, NonContiguousInput) {
  run({{12, 10}, 1, true, true, DType::kFloat32, layout_strides({12, 10}, {1, 0})}, true);
  run({{3, 4, 5}, 2, true, false, DType::kFloat32, layout_strides({3, 4, 5}, {0, 2, 1}, 2)}, true);
}

TEST_F(LayerNormTest, RowsLargerThanNramUseMultiplePasses) {
  run({{3, 5000}}, true);  // 20 KB rows: four of them do not fit tiny's 64 KiB NRAM
  run({{2, 2, 3000}, 1, false, true, DType::kFloat16}, true);
}

TEST_F(LayerNormTest, Backward) {
  run({{7, 33}}, true);
  run({{2, 3, 5, 6}, 2, false, false}, true);
  run({{300, 8}}, true);  // many rows: several tasks' partial sums
}

TEST_F(LayerNormTest, BackwardSubsetsOfOutputs) {
  const Dims d{5, 12};
  const std::vector<float> x = random<float>(60, 1), dy = random<float>(60, 2);
  const LnRef ref = ref_layer_norm(x, nullptr, nullptr, dy, 5, 12, 1e-5);
  void* xp = to_device(x);
  void* dyp = to_device(dy);
  void* mp = to_device(std::vector<float>(ref.mean.begin(), ref.mean.end()));
  void* rp = to_device(std::vector<float>(ref.rstd.begin(), ref.rstd.end()));
  void* out = dalloc(60 * 4);
  const TensorDesc xd = desc(DType::kFloat32, d), sd = desc(DType::kFloat32, {5, 1}), wd = desc(DType::kFloat32, {12});
  // dbias only (no workspace needed for dx alone; dbias needs one).
  std::size_t ws = 0;
  ASSERT_EQ(get_layer_norm_backward_workspace_size(handle_, 1, xd, false, true, &ws), Status::kSuccess);
  EXPECT_EQ(ws, std::size_t(h().total_cores()) * 12 * 4);
  void* wsp = dalloc(ws);
  ASSERT_EQ(layer_norm_backward(handle_, 1, xd, dyp, xd, xp, sd, mp, sd, rp, nullptr, nullptr, wsp, ws, nullptr,
                                nullptr, nullptr, nullptr, &wd, out),
            Status::kSuccess)
      << last_error_detail();
  expect_close(from_device<float>(out, 12), ref.db, 1e-5, 1e-5, "dbias");
  ASSERT_EQ(layer_norm_backward(handle_, 1, xd, dyp, xd, xp, sd, mp, sd, rp, nullptr, nullptr, nullptr, 0, &xd, out,
                                nullptr, nullptr, nullptr, nullptr),
            Status::kSuccess)
      << last_error_detail();
  expect_close(from_device<float>(out, 60), ref.dx, 1e-5, 1e-4, "dx");
}

TEST_F(LayerNormTest, EmptyTensors) {
  const TensorDesc e = desc(DType::kFloat32, {0, 8});
  EXPECT_EQ(layer_norm_forward(handle_, 1, 1e-5, e, nullptr, nullptr, nullptr, nullptr, nullptr, e, nullptr, nullptr,
                               nullptr, nullptr, nullptr),
            Status::kSuccess);
  const TensorDesc s = desc(DType::kFloat32, {0, 1});
  EXPECT_EQ(layer_norm_backward(handle_, 1, e, nullptr, e, nullptr, s, nullptr, s, nullptr, nullptr, nullptr, nullptr,
                                0, &e, nullptr, nullptr, nullptr, nullptr, nullptr),
            Status::kSuccess);
}

TEST_F(LayerNormTest, BadArguments) {
  void* p = dalloc(4096);
  const TensorDesc x = desc(DType::kFloat32, {4, 8}), w = desc(DType::kFloat32, {8}), s = desc(DType::kFloat32, {4});
  auto fwd = [&](int k, const TensorDesc* wd, const TensorDesc* sd, const TensorDesc& y) {
    return layer_norm_forward(handle_, k, 1e-5, x, p, wd, p, nullptr, nullptr, y, p, sd, p, nullptr, nullptr);
  };
  EXPECT_EQ(layer_norm_forward(nullptr, 1, 1e-5, x, p, nullptr, nullptr, nullptr, nullptr, x, p, nullptr, nullptr,
                               nullptr, nullptr),
            Status::kNotInitialized);
  EXPECT_EQ(fwd(0, nullptr, nullptr, x), Status::kBadParam);
  EXPECT_EQ(fwd(3, nullptr, nullptr, x), Status::kBadParam);
  const TensorDesc w7 = desc(DType::kFloat32, {7});
  EXPECT_EQ(fwd(1, &w7, nullptr, x), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("weight"), std::string::npos);
  const TensorDesc s5 = desc(DType::kFloat32, {5});
  EXPECT_EQ(fwd(1, nullptr, &s5, x), Status::kBadParam);
  const TensorDesc s_strided = desc(DType::kFloat32, {4}, {2});
  EXPECT_EQ(fwd(1, nullptr, &s_strided, x), Status::kBadParam);
  EXPECT_EQ(fwd(1, nullptr, nullptr, desc(DType::kFloat32, {4, 9})), Status::kBadParam);
  EXPECT_EQ(fwd(1, nullptr, nullptr, desc(DType::kInt32, {4, 8})), Status::kNotSupported);
  // eps may be any finite value, negative included, as torch's (NaN where var + eps < 0).
  EXPECT_EQ(layer_norm_forward(handle_, 1, std::numeric_limits<double>::infinity(), x, p, nullptr, nullptr, nullptr,
                               nullptr, x, p, nullptr, nullptr, nullptr, nullptr),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("eps must be finite"), std::string::npos);
  // Backward: a workspace too small for dweight.
  EXPECT_EQ(layer_norm_backward(handle_, 1, x, p, x, p, s, p, s, p, nullptr, nullptr, p, 16, nullptr, nullptr, &w, p,
                                nullptr, nullptr),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("workspace"), std::string::npos);
}

TEST_F(LayerNormTest, ResultsComeFromSimulatedMemory) {
  const Dims d{8, 64};
  // Inputs near 1000 with a small spread: a flipped lowest mantissa bit (6e-5) is a visible
  // fraction of the standard deviation.
  void* xp = to_device(random<float>(numel(d), 3, 1000, 1001));
  void* yp = dalloc(numel(d) * 4);
  const TensorDesc xd = desc(DType::kFloat32, d);
  auto run = [&] {
    EXPECT_EQ(layer_norm_forward(handle_, 1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, xd, yp, nullptr, nullptr,
                                 nullptr, nullptr),
              Status::kSuccess);
    return from_device<float>(yp, numel(d));
  };
  const std::vector<float> clean = run();
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  EXPECT_NE(run(), clean) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
