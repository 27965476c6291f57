// matmul with MatmulParams::activation and linear_act against a naive reference and against the
// unfused sequence matmul -> unary: odd sizes, fp32/fp16, transposes, a transposed output (the
// engine's C^T form: per-row bias), beta, split depth, empty depth, batched and merged leading
// dims, 1-d input; fewer kernels and GDRAM bytes than the sequence; bad arguments.
#include <string>

#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

struct GemmCase {
  const char* name;
  std::int64_t m, k, n;
  DType dtype = DType::kFloat32;
  Activation act = Activation::kGelu;
  bool trans_a = false, trans_b = false;
  bool c_transposed = false;  // C given as a [M, N] view with strides {1, M}
  bool bias = true;
  float alpha = 1.0f, beta = 0.0f;
};

void PrintTo(const GemmCase& g, std::ostream* os) { *os << g.name; }

UnaryOp unary_of(Activation a) {
  switch (a) {
    case Activation::kRelu:
      return UnaryOp::kRelu;
    case Activation::kGelu:
      return UnaryOp::kGelu;
    case Activation::kGeluTanh:
      return UnaryOp::kGeluTanh;
    case Activation::kSilu:
      return UnaryOp::kSilu;
    case Activation::kSigmoid:
      return UnaryOp::kSigmoid;
    default:
      return UnaryOp::kTanh;
  }
}

class LinearActTest : public MluTest {
 protected:
  void* upload(DType t, const std::vector<float>& v) {
    if (t == DType::kFloat16) return to_device(std::vector<half>(v.begin(), v.end()));
    return to_device(v);
  }
  std::vector<double> download(DType t, const void* p, std::size_t n) {
    std::vector<double> out(n);
    if (t == DType::kFloat16) {
      const std::vector<half> v = from_device<half>(p, n);
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(v[i]);
    } else {
      const std::vector<float> v = from_device<float>(p, n);
      for (std::size_t i = 0; i < n; ++i) out[i] = v[i];
    }
    return out;
  }
  static std::vector<float> rounded(DType t, std::vector<float> v) {
    if (t == DType::kFloat16)
      for (float& x : v) x = static_cast<float>(half(x));
    return v;
  }
  // Applies the activation (or clamp for relu6) to c in place, as the unfused sequence would.
  void activate(Activation act, const TensorDesc& c, void* p) {
    if (act == Activation::kNone) return;
    if (act == Activation::kRelu6) {
      ASSERT_EQ(clamp(handle_, c, p, 0.0, 6.0, c, p), Status::kSuccess);
      return;
    }
    ASSERT_EQ(unary(handle_, unary_of(act), c, p, c, p), Status::kSuccess);
  }

  void run(const GemmCase& g);
};

void LinearActTest::run(const GemmCase& g) {
  SCOPED_TRACE(g.name);
  const auto M = static_cast<std::size_t>(g.m), K = static_cast<std::size_t>(g.k), N = static_cast<std::size_t>(g.n);
  const std::vector<float> a = rounded(g.dtype, random<float>(M * K, 11));
  const std::vector<float> b = rounded(g.dtype, random<float>(K * N, 12, -0.5f, 0.5f));
  const std::vector<float> bias = rounded(g.dtype, random<float>(N, 13));
  const std::vector<float> c0 = rounded(g.dtype, random<float>(M * N, 14));
  // Storage: A [M, K] (or [K, M] with trans_a), B [K, N] (or [N, K]), C row-major or column-major.
  auto A = [&](std::size_t m, std::size_t k) { return double(a[g.trans_a ? k * M + m : m * K + k]); };
  auto B = [&](std::size_t k, std::size_t n) { return double(b[g.trans_b ? n * K + k : k * N + n]); };
  auto cidx = [&](std::size_t m, std::size_t n) { return g.c_transposed ? n * M + m : m * N + n; };
  std::vector<double> want(M * N);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = 0;
      for (std::size_t k = 0; k < K; ++k) acc += A(m, k) * B(k, n);
      double v = g.alpha * acc + (g.bias ? bias[n] : 0.0) + g.beta * c0[cidx(m, n)];
      want[cidx(m, n)] = ref_activation(g.act, v);
    }
  const TensorDesc da = g.trans_a ? desc(g.dtype, {g.k, g.m}) : desc(g.dtype, {g.m, g.k});
  const TensorDesc db = g.trans_b ? desc(g.dtype, {g.n, g.k}) : desc(g.dtype, {g.k, g.n});
  const TensorDesc dc = g.c_transposed ? desc(g.dtype, {g.m, g.n}, {1, g.m}) : desc(g.dtype, {g.m, g.n});
  const TensorDesc dbias = desc(g.dtype, {g.n});
  void* pa = upload(g.dtype, a);
  void* pb = upload(g.dtype, b);
  void* pbias = upload(g.dtype, bias);
  void* pc = upload(g.dtype, c0);
  void* pc2 = upload(g.dtype, c0);
  MatmulParams prm;
  prm.trans_a = g.trans_a, prm.trans_b = g.trans_b, prm.alpha = g.alpha, prm.beta = g.beta, prm.activation = g.act;
  std::size_t ws = 0;
  ASSERT_EQ(get_matmul_workspace_size(handle_, prm, da, db, g.bias ? &dbias : nullptr, dc, &ws), Status::kSuccess)
      << last_error_detail();
  void* wsp = ws ? dalloc(ws) : nullptr;
  h().clear_ops();
  const DeviceCost fused = device_cost(h(), [&] {
    ASSERT_EQ(matmul(handle_, prm, da, pa, db, pb, g.bias ? &dbias : nullptr, pbias, dc, pc, wsp, ws), Status::kSuccess)
        << last_error_detail();
  });
  const bool h16 = g.dtype == DType::kFloat16;
  const std::vector<double> got = download(g.dtype, pc, M * N);
  expect_close(got, want, h16 ? 1e-2 : 1e-4, h16 ? 1e-2 : 1e-4,
               std::string("fused vs reference, kernels ") + fused.names);
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops().back().name, g.act == Activation::kNone ? "matmul" : "fused_matmul_act");
  EXPECT_EQ(h().ops().back().macs, g.m * g.n * g.k);
  EXPECT_EQ(h().ops().back().kernels, fused.kernels);

  MatmulParams plain = prm;
  plain.activation = Activation::kNone;
  std::size_t ws2 = 0;
  ASSERT_EQ(get_matmul_workspace_size(handle_, plain, da, db, g.bias ? &dbias : nullptr, dc, &ws2), Status::kSuccess);
  void* wsp2 = ws2 ? dalloc(ws2) : nullptr;
  const DeviceCost unfused = device_cost(h(), [&] {
    ASSERT_EQ(matmul(handle_, plain, da, pa, db, pb, g.bias ? &dbias : nullptr, pbias, dc, pc2, wsp2, ws2),
              Status::kSuccess);
    activate(g.act, dc, pc2);
  });
  const std::vector<double> seq = download(g.dtype, pc2, M * N);
  expect_close(got, seq, h16 ? 4e-3 : 1e-5, h16 ? 4e-3 : 1e-5, "fused vs unfused");
  if (g.act == Activation::kNone) return;
  EXPECT_LT(fused.kernels, unfused.kernels) << fused.names << "| " << unfused.names;
  EXPECT_LT(fused.gdram_bytes, unfused.gdram_bytes) << fused.names << "| " << unfused.names;
}

class MatmulActCases : public LinearActTest, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(MatmulActCases, MatchesReferenceAndUnfusedSequence) { run(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulActCases,
    ::testing::Values(
        GemmCase{"odd", 37, 53, 29}, GemmCase{"odd_fp16_silu", 37, 53, 29, DType::kFloat16, Activation::kSilu},
        GemmCase{"trans_b_gelu_tanh", 20, 33, 45, DType::kFloat32, Activation::kGeluTanh, false, true},
        GemmCase{"trans_a_relu6", 24, 17, 19, DType::kFloat32, Activation::kRelu6, true},
        // C given transposed: the engine computes C^T (bias per row) and applies act.
        GemmCase{"transposed_output", 19, 40, 33, DType::kFloat32, Activation::kSigmoid, false, false, true},
        GemmCase{"alpha_beta_fp16", 16, 24, 40, DType::kFloat16, Activation::kTanh, false, false, false, true, 0.5f,
                 0.75f},
        // Deep and small: the depth may be split over clusters (epilogue in the reduction).
        GemmCase{"split_depth", 8, 2048, 8, DType::kFloat32, Activation::kRelu},
        GemmCase{"empty_depth", 5, 0, 7, DType::kFloat32, Activation::kSilu, false, false, false, true, 1.0f, 1.0f},
        GemmCase{"no_activation", 9, 10, 11, DType::kFloat32, Activation::kNone}),
    [](const ::testing::TestParamInfo<GemmCase>& info) { return std::string(info.param.name); });

// linear_act: y [..., N] = act(x [..., K] w[N, K]^T + b), against the reference and matmul + unary.
TEST_F(LinearActTest, LinearMergedBatchedAndVector) {
  const std::int64_t K = 40, N = 24;
  const std::vector<float> x = rounded(DType::kFloat16, random<float>(2 * 3 * K, 21));
  const std::vector<float> w = rounded(DType::kFloat16, random<float>(N * K, 22, -0.5f, 0.5f));
  const std::vector<float> b = rounded(DType::kFloat16, random<float>(N, 23));
  void* px = upload(DType::kFloat16, x);
  void* pw = upload(DType::kFloat16, w);
  void* pb = upload(DType::kFloat16, b);
  const TensorDesc wd = desc(DType::kFloat16, {N, K}), bd = desc(DType::kFloat16, {N});
  struct View {
    const char* name;
    std::vector<std::int64_t> dims, strides;  // of x (y: x's leading dims + N, contiguous)
  };
  // Contiguous [2, 3, K] (one GEMM of 6 rows); a permuted view of [3, 2, K] storage (batched);
  // a 1-d row.
  const View views[] = {
      {"merged", {2, 3, K}, {3 * K, K, 1}}, {"batched", {2, 3, K}, {K, 2 * K, 1}}, {"vector", {K}, {1}}};
  for (const View& v : views) {
    SCOPED_TRACE(v.name);
    std::vector<std::int64_t> ydims(v.dims.begin(), v.dims.end() - 1);
    ydims.push_back(N);
    std::int64_t rows = 1;
    for (std::size_t i = 0; i + 1 < v.dims.size(); ++i) rows *= v.dims[i];
    const TensorDesc xd = desc(DType::kFloat16, v.dims, v.strides), yd = desc(DType::kFloat16, ydims);
    std::vector<double> want(static_cast<std::size_t>(rows * N));
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t off = 0, rest = r;  // x offset of row r (row-major over the leading dims)
      for (int d = static_cast<int>(v.dims.size()) - 2; d >= 0; --d)
        off += rest % v.dims[d] * v.strides[d], rest /= v.dims[d];
      for (std::int64_t n = 0; n < N; ++n) {
        double acc = b[static_cast<std::size_t>(n)];
        for (std::int64_t k = 0; k < K; ++k)
          acc += double(x[static_cast<std::size_t>(off + k)]) * w[static_cast<std::size_t>(n * K + k)];
        want[static_cast<std::size_t>(r * N + n)] = ref_activation(Activation::kGelu, acc);
      }
    }
    void* py = dalloc(static_cast<std::size_t>(rows * N) * 2);
    std::size_t ws = 0;
    ASSERT_EQ(get_linear_act_workspace_size(handle_, Activation::kGelu, xd, wd, &bd, yd, &ws), Status::kSuccess)
        << last_error_detail();
    void* wsp = ws ? dalloc(ws) : nullptr;
    h().clear_ops();
    const DeviceCost c = device_cost(h(), [&] {
      ASSERT_EQ(linear_act(handle_, Activation::kGelu, xd, px, wd, pw, &bd, pb, yd, py, wsp, ws), Status::kSuccess)
          << last_error_detail();
    });
    expect_close(download(DType::kFloat16, py, want.size()), want, 1e-2, 1e-2, v.name);
    ASSERT_EQ(h().ops().size(), 1u);
    EXPECT_EQ(h().ops().back().name, "fused_linear_act");
    EXPECT_EQ(h().ops().back().macs, static_cast<std::uint64_t>(rows * N * K));
    EXPECT_EQ(h().ops().back().kernels, c.kernels);
    EXPECT_EQ(c.kernels, 1u) << c.names;
  }
}

TEST_F(LinearActTest, BadArguments) {
  const TensorDesc x = desc(DType::kFloat32, {4, 8}), w = desc(DType::kFloat32, {6, 8});
  const TensorDesc y = desc(DType::kFloat32, {4, 6});
  void* p = dalloc(1024);
  auto expect_bad = [&](Status s, const std::string& needle) {
    EXPECT_EQ(s, Status::kBadParam);
    EXPECT_NE(last_error_detail().find(needle), std::string::npos) << last_error_detail();
  };
  expect_bad(linear_act(handle_, static_cast<Activation>(77), x, p, w, p, nullptr, nullptr, y, p, nullptr, 0),
             "activation");
  expect_bad(linear_act(handle_, Activation::kRelu, x, p, desc(DType::kFloat32, {6, 7}), p, nullptr, nullptr, y, p,
                        nullptr, 0),
             "fused_linear_act: w");
  expect_bad(linear_act(handle_, Activation::kRelu, x, p, w, p, nullptr, nullptr, desc(DType::kFloat32, {4, 5}), p,
                        nullptr, 0),
             "fused_linear_act: y");
  expect_bad(linear_act(handle_, Activation::kRelu, x, p, desc(DType::kFloat32, {6, 8, 1}), p, nullptr, nullptr, y, p,
                        nullptr, 0),
             "2-d");
  const TensorDesc bad_bias = desc(DType::kFloat32, {5});
  expect_bad(linear_act(handle_, Activation::kRelu, x, p, w, p, &bad_bias, p, y, p, nullptr, 0), "bias");
  MatmulParams prm;
  prm.activation = static_cast<Activation>(200);
  expect_bad(matmul(handle_, prm, x, p, desc(DType::kFloat32, {8, 6}), p, nullptr, nullptr, y, p, nullptr, 0),
             "unknown activation");
  EXPECT_TRUE(h().ops().empty());
}

}  // namespace
}  // namespace mlusim::mlu::testing
