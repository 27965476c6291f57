// Residual connections fused into their neighbours: linear_residual / matmul with
// MatmulParams::residual (the add in the GEMM epilogue) and add_layer_norm_forward /
// rms_norm_forward (the add in the norm's kernel; RMS norm also alone), against naive references in double and
// against the unfused sequences (matmul -> add, add -> layer norm): one kernel, fewer GDRAM bytes
// (exactly the bytes the op records for the norm), bad arguments named.
#include <cmath>
#include <string>

#include "fused/fused_test_util.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/norm.h"

namespace mlusim::mlu::testing {
namespace {

class ResidualTest : public MluTest {
 protected:
  void expect_bad(Status s, const std::string& needle) {
    EXPECT_NE(s, Status::kSuccess);
    EXPECT_NE(last_error_detail().find(needle), std::string::npos) << last_error_detail();
  }
};

// y = x w^T + b + r for [rows, K] x, [N, K] w: double reference.
std::vector<double> linear_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                               const std::vector<float>& r, std::int64_t rows, std::int64_t k, std::int64_t n,
                               std::int64_t r_row_stride, Activation act) {
  std::vector<double> y(static_cast<std::size_t>(rows * n));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = b[static_cast<std::size_t>(j)] + r[static_cast<std::size_t>(i * r_row_stride + j)];
      for (std::int64_t q = 0; q < k; ++q)
        acc += double(x[static_cast<std::size_t>(i * k + q)]) * w[static_cast<std::size_t>(j * k + q)];
      y[static_cast<std::size_t>(i * n + j)] = ref_activation(act, acc);
    }
  return y;
}

TEST_F(ResidualTest, LinearResidualMatchesReferenceInOneKernelWithFewerBytes) {
  const std::int64_t B = 2, S = 37, K = 96, N = 72, rows = B * S;
  const auto x = random<float>(static_cast<std::size_t>(rows * K), 1);
  const auto w = random<float>(static_cast<std::size_t>(N * K), 2, -0.3f, 0.3f);
  const auto b = random<float>(static_cast<std::size_t>(N), 3);
  const auto r = random<float>(static_cast<std::size_t>(rows * N), 4);
  void *px = to_device(x), *pw = to_device(w), *pb = to_device(b), *pr = to_device(r);
  void* py = dalloc(static_cast<std::size_t>(rows * N) * 4);
  const TensorDesc xd = desc(DType::kFloat32, {B, S, K}), wd = desc(DType::kFloat32, {N, K});
  const TensorDesc bd = desc(DType::kFloat32, {N}), yd = desc(DType::kFloat32, {B, S, N});
  struct Case {
    const char* name;
    TensorDesc r;
    std::int64_t r_row_stride;  // of the [rows, N] reference
    Activation act;
  };
  // A contiguous residual; a residual row broadcast over the sequence (stride 0), with an
  // activation applied after the add.
  const Case cases[] = {{"residual", desc(DType::kFloat32, {B, S, N}), N, Activation::kNone},
                        {"broadcast", desc(DType::kFloat32, {B, S, N}, {0, 0, 1}), 0, Activation::kRelu}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::size_t ws = 0;
    ASSERT_EQ(get_linear_residual_workspace_size(handle_, c.act, xd, wd, &bd, c.r, yd, &ws), Status::kSuccess)
        << last_error_detail();
    void* wsp = ws ? dalloc(ws) : nullptr;
    h().clear_ops();
    const DeviceCost fused = device_cost(h(), [&] {
      ASSERT_EQ(linear_residual(handle_, c.act, xd, px, wd, pw, &bd, pb, c.r, pr, yd, py, wsp, ws), Status::kSuccess)
          << last_error_detail();
    });
    expect_close(from_device<float>(py, static_cast<std::size_t>(rows * N)),
                 linear_ref(x, w, b, r, rows, K, N, c.r_row_stride, c.act), 1e-4, 1e-4, c.name);
    ASSERT_EQ(h().ops().size(), 1u);
    EXPECT_EQ(h().ops().back().name, "fused_linear_residual");
    EXPECT_EQ(h().ops().back().macs, static_cast<std::uint64_t>(rows * N * K));
    EXPECT_EQ(fused.kernels, 1u) << fused.names;
    if (c.act != Activation::kNone) continue;
    // The unfused sequence: linear (bias in the epilogue), then an elementwise add.
    void* pt = dalloc(static_cast<std::size_t>(rows * N) * 4);
    const DeviceCost unfused = device_cost(h(), [&] {
      ASSERT_EQ(linear_act(handle_, Activation::kNone, xd, px, wd, pw, &bd, pb, yd, pt, wsp, ws), Status::kSuccess);
      ASSERT_EQ(binary(handle_, BinaryOp::kAdd, yd, pt, c.r, pr, yd, pt), Status::kSuccess) << last_error_detail();
    });
    EXPECT_EQ(unfused.kernels, 2u) << unfused.names;
    // The add's read of the GEMM output and its second write are gone (2 x rows x N x 4 bytes; the
    // two GEMMs' operand re-reads may differ a little with their tilings).
    EXPECT_LE(fused.gdram_bytes + static_cast<std::uint64_t>(rows * N) * 4, unfused.gdram_bytes);
    EXPECT_LT(fused.span_ns, unfused.span_ns);
  }
}

// matmul's own residual, in the engine's transposed form (C given as a column-major view, so the
// residual is read through the transposed view too) and with the depth split over clusters (the
// split-K reduction applies the epilogue).
TEST_F(ResidualTest, MatmulResidualTransposedOutputAndSplitDepth) {
  struct Case {
    const char* name;
    std::int64_t m, k, n;
    bool c_transposed;
  };
  for (const Case& c : {Case{"transposed_c", 33, 40, 29, true}, Case{"deep", 8, 8192, 16, false}}) {
    SCOPED_TRACE(c.name);
    const auto a = random<float>(static_cast<std::size_t>(c.m * c.k), 11);
    const auto bm = random<float>(static_cast<std::size_t>(c.k * c.n), 12, -0.2f, 0.2f);
    const auto r = random<float>(static_cast<std::size_t>(c.m * c.n), 13);
    void *pa = to_device(a), *pbm = to_device(bm), *pr = to_device(r);
    void* pc = dalloc(static_cast<std::size_t>(c.m * c.n) * 4);
    const TensorDesc ad = desc(DType::kFloat32, {c.m, c.k}), bd = desc(DType::kFloat32, {c.k, c.n});
    const TensorDesc cd = c.c_transposed ? desc(DType::kFloat32, {c.m, c.n}, {1, c.m}) : desc(DType::kFloat32, {c.m, c.n});
    const TensorDesc rd = desc(DType::kFloat32, {c.m, c.n});
    MatmulParams p;
    p.alpha = 0.5f;
    p.beta = 2.0f;
    p.residual = &rd;
    p.residual_ptr = pr;
    std::size_t ws = 0;
    ASSERT_EQ(get_matmul_workspace_size(handle_, p, ad, bd, nullptr, cd, &ws), Status::kSuccess) << last_error_detail();
    void* wsp = ws ? dalloc(ws) : nullptr;
    h().clear_ops();
    const DeviceCost cost = device_cost(h(), [&] {
      ASSERT_EQ(matmul(handle_, p, ad, pa, bd, pbm, nullptr, nullptr, cd, pc, wsp, ws), Status::kSuccess)
          << last_error_detail();
    });
    const std::vector<float> got = from_device<float>(pc, static_cast<std::size_t>(c.m * c.n));
    std::vector<float> y(got.size());  // back to row-major [M, N]
    std::vector<double> want(got.size());
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (std::int64_t q = 0; q < c.k; ++q)
          acc += double(a[static_cast<std::size_t>(i * c.k + q)]) * bm[static_cast<std::size_t>(q * c.n + j)];
        want[static_cast<std::size_t>(i * c.n + j)] = 0.5 * acc + 2.0 * r[static_cast<std::size_t>(i * c.n + j)];
        y[static_cast<std::size_t>(i * c.n + j)] =
            got[static_cast<std::size_t>(c.c_transposed ? j * c.m + i : i * c.n + j)];
      }
    expect_close(y, want, 1e-4, 1e-4, c.name);
    ASSERT_EQ(h().ops().size(), 1u);
    EXPECT_EQ(h().ops().back().name, "fused_matmul_residual");
    // The deep case splits the depth: the engine writes partial sums and the split-K reduction
    // applies the epilogue (residual included) in its own kernel.
    if (!c.c_transposed) {
      EXPECT_NE(cost.names.find("fused_matmul_residual_reduce"), std::string::npos) << cost.names;
    }
  }
}

// Reference: s = x + r; layer norm (rms = false) or RMS norm of s per row of n, in double.
void norm_ref(const std::vector<float>& x, const std::vector<float>& r, const std::vector<float>& w,
              const std::vector<float>& b, std::int64_t rows, std::int64_t n, double eps, bool rms,
              std::vector<double>* sum, std::vector<double>* y, std::vector<double>* rstd) {
  sum->assign(x.size(), 0), y->assign(x.size(), 0), rstd->assign(static_cast<std::size_t>(rows), 0);
  for (std::int64_t i = 0; i < rows; ++i) {
    double mean = 0, sq = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * n + j);
      (*sum)[e] = double(x[e]) + r[e];
      mean += (*sum)[e];
    }
    mean = rms ? 0.0 : mean / static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const double c = (*sum)[static_cast<std::size_t>(i * n + j)] - mean;
      sq += c * c;
    }
    const double rs = 1 / std::sqrt(sq / static_cast<double>(n) + eps);
    (*rstd)[static_cast<std::size_t>(i)] = rs;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * n + j);
      (*y)[e] = ((*sum)[e] - mean) * rs * w[static_cast<std::size_t>(j)] + (rms ? 0.0 : b[static_cast<std::size_t>(j)]);
    }
  }
}

TEST_F(ResidualTest, AddLayerNormAndAddRmsNormMatchReferenceInOneKernel) {
  const std::int64_t rows = 50, n = 200;
  const std::size_t count = static_cast<std::size_t>(rows * n);
  const double eps = 1e-5;
  // Rows far from 0 (offset 3): the mean's refinement matters.
  const auto x = random<float>(count, 21, 2.0f, 4.0f), r = random<float>(count, 22);
  const auto w = random<float>(static_cast<std::size_t>(n), 23), b = random<float>(static_cast<std::size_t>(n), 24);
  void *px = to_device(x), *pr = to_device(r), *pw = to_device(w), *pb = to_device(b);
  void *py = dalloc(count * 4), *ps = dalloc(count * 4), *pm = dalloc(rows * 4), *prs = dalloc(rows * 4);
  const TensorDesc xd = desc(DType::kFloat32, {rows, n}), wd = desc(DType::kFloat32, {n});
  const TensorDesc md = desc(DType::kFloat32, {rows, 1});
  for (const bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms" : "layer");
    std::vector<double> sum, y, rstd;
    norm_ref(x, r, w, b, rows, n, eps, rms, &sum, &y, &rstd);
    h().clear_ops();
    const DeviceCost fused = device_cost(h(), [&] {
      const Status s = rms ? rms_norm_forward(handle_, 1, eps, xd, px, &xd, pr, &wd, pw, &xd, ps, xd, py, &md, prs)
                           : add_layer_norm_forward(handle_, 1, eps, xd, px, xd, pr, &wd, pw, &wd, pb, &xd, ps, xd,
                                                    py, &md, pm, &md, prs);
      ASSERT_EQ(s, Status::kSuccess) << last_error_detail();
    });
    expect_close(from_device<float>(ps, count), sum, 1e-6, 1e-6, "sum");
    expect_close(from_device<float>(py, count), y, 2e-5, 2e-5, "y");
    expect_close(from_device<float>(prs, static_cast<std::size_t>(rows)), rstd, 1e-6, 1e-5, "rstd");
    ASSERT_EQ(h().ops().size(), 1u);
    EXPECT_EQ(h().ops().back().name, rms ? "fused_add_rms_norm" : "fused_add_layer_norm");
    EXPECT_EQ(fused.kernels, 1u) << fused.names;
    // Each tensor crosses DRAM exactly once (x, r read; sum, y written; w, b per task; stats):
    // the op's recorded bytes, plus the weight/bias re-read by each task beyond the first.
    const std::uint64_t once = (4 * count + static_cast<std::uint64_t>(rows) * (rms ? 1 : 2)) * 4;
    EXPECT_GE(fused.gdram_bytes, once);
    EXPECT_LE(fused.gdram_bytes, once + 2 * static_cast<std::uint64_t>(n) * 4 * h().total_cores());
    if (rms) continue;
    // The unfused sequence: add, then layer_norm_forward of the sum (reads it back).
    const DeviceCost unfused = device_cost(h(), [&] {
      ASSERT_EQ(binary(handle_, BinaryOp::kAdd, xd, px, xd, pr, xd, ps), Status::kSuccess);
      ASSERT_EQ(layer_norm_forward(handle_, 1, eps, xd, ps, &wd, pw, &wd, pb, xd, py, &md, pm, &md, prs),
                Status::kSuccess);
    });
    EXPECT_EQ(unfused.kernels, 2u);
    // The sum's read-back is gone (up to the weight and bias reads, per task of each tiling).
    EXPECT_NEAR(static_cast<double>(unfused.gdram_bytes) - static_cast<double>(fused.gdram_bytes),
                static_cast<double>(count * 4), 2.0 * n * 4 * h().total_cores());
    EXPECT_LT(fused.span_ns, unfused.span_ns);
  }
  // RMS norm without a residual: y = x * rsqrt(mean(x^2) + eps) * w, recorded as "rms_norm".
  std::vector<double> sum, y, rstd;
  norm_ref(x, std::vector<float>(count, 0.0f), w, b, rows, n, eps, true, &sum, &y, &rstd);
  h().clear_ops();
  ASSERT_EQ(rms_norm_forward(handle_, 1, eps, xd, px, nullptr, nullptr, &wd, pw, nullptr, nullptr, xd, py, nullptr,
                             nullptr),
            Status::kSuccess)
      << last_error_detail();
  expect_close(from_device<float>(py, count), y, 2e-5, 2e-5, "rms alone");
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops().back().name, "rms_norm");
}

TEST_F(ResidualTest, Fp16AddLayerNormNormalizesTheRoundedSum) {
  const std::int64_t rows = 8, n = 64;
  const std::size_t count = static_cast<std::size_t>(rows * n);
  std::vector<float> x = random<float>(count, 31), r = random<float>(count, 32);
  for (auto* v : {&x, &r})
    for (float& e : *v) e = static_cast<float>(half(e));
  const std::vector<float> w(static_cast<std::size_t>(n), 1.0f), b(static_cast<std::size_t>(n), 0.0f);
  void* px = to_device(std::vector<half>(x.begin(), x.end()));
  void* pr = to_device(std::vector<half>(r.begin(), r.end()));
  void *py = dalloc(count * 2), *ps = dalloc(count * 2);
  const TensorDesc xd = desc(DType::kFloat16, {rows, n});
  ASSERT_EQ(add_layer_norm_forward(handle_, 1, 1e-5, xd, px, xd, pr, nullptr, nullptr, nullptr, nullptr, &xd, ps, xd,
                                   py, nullptr, nullptr, nullptr, nullptr),
            Status::kSuccess)
      << last_error_detail();
  // The reference normalizes the fp16-rounded sum, as eager's add then layer_norm does.
  std::vector<float> s16(count);
  for (std::size_t e = 0; e < count; ++e) s16[e] = static_cast<float>(half(x[e] + r[e]));
  std::vector<double> sum, y, rstd;
  norm_ref(s16, std::vector<float>(count, 0.0f), w, b, rows, n, 1e-5, false, &sum, &y, &rstd);
  expect_close(from_device<half>(ps, count), sum, 0, 0, "sum");
  expect_close(from_device<half>(py, count), y, 2e-3, 2e-3, "y");
}

TEST_F(ResidualTest, BadArguments) {
  const TensorDesc x = desc(DType::kFloat32, {4, 8}), w = desc(DType::kFloat32, {6, 8});
  const TensorDesc y = desc(DType::kFloat32, {4, 6});
  void* p = dalloc(4096);
  expect_bad(linear_residual(handle_, Activation::kNone, x, p, w, p, nullptr, nullptr, desc(DType::kFloat32, {4, 5}), p,
                             y, p, nullptr, 0),
             "fused_linear_residual: residual");
  expect_bad(linear_residual(handle_, Activation::kNone, x, p, w, p, nullptr, nullptr, desc(DType::kFloat16, {4, 6}), p,
                             y, p, nullptr, 0),
             "dtype of y");
  MatmulParams prm;
  const TensorDesc rd = desc(DType::kFloat32, {4, 6});
  prm.residual = &rd;
  prm.residual_ptr = p;
  expect_bad(matmul(handle_, prm, x, p, desc(DType::kFloat32, {8, 6}), p, nullptr, nullptr, y, p, nullptr, 0),
             "beta is 0");
  const TensorDesc n1 = desc(DType::kFloat32, {4, 8}), n2 = desc(DType::kFloat32, {4, 7});
  expect_bad(add_layer_norm_forward(handle_, 1, 1e-5, n1, p, n2, p, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, n1, p, nullptr, nullptr, nullptr, nullptr),
             "fused_add_layer_norm");
  const TensorDesc h16 = desc(DType::kFloat16, {4, 8});
  expect_bad(rms_norm_forward(handle_, 1, 1e-5, n1, p, &h16, p, nullptr, nullptr, nullptr, nullptr, n1, p, nullptr,
                                  nullptr),
             "share one dtype");
  const TensorDesc bad_w = desc(DType::kFloat32, {7});
  expect_bad(rms_norm_forward(handle_, 1, 1e-5, n1, p, &n1, p, &bad_w, p, nullptr, nullptr, n1, p, nullptr,
                                  nullptr),
             "weight");
  expect_bad(rms_norm_forward(handle_, 1, 1e-5, n1, p, nullptr, nullptr, nullptr, nullptr, &n1, p, n1, p, nullptr,
                             nullptr),
             "sum output needs a residual");
  // A row too long for one pass is refused with its size named.
  const std::int64_t huge = 1 << 20;
  const TensorDesc big = desc(DType::kFloat32, {1, huge});
  void* pbig = dalloc(static_cast<std::size_t>(huge) * 4);
  const Status s = rms_norm_forward(handle_, 1, 1e-5, big, pbig, &big, pbig, nullptr, nullptr, nullptr, nullptr,
                                        big, pbig, nullptr, nullptr);
  EXPECT_EQ(s, Status::kNotSupported);
  EXPECT_NE(last_error_detail().find("1048576 elements"), std::string::npos) << last_error_detail();
}

}  // namespace
}  // namespace mlusim::mlu::testing
