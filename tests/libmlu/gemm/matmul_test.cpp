// matmul against a naive triple loop: shapes odd and even, transposes by flag and by strides,
// batches with broadcast, alpha/beta/bias, fp32 and fp16, empty tensors, bad arguments, and a DMA
// bit flip that must change the result.
#include <cmath>
#include <numeric>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

using sim::half;

// A host tensor with explicit strides over a flat storage, and its device copy.
template <class T>
struct Strided {
  std::vector<std::int64_t> dims, strides;
  std::vector<T> data;  // storage (span of the strides)
  std::int64_t at(const std::vector<std::int64_t>& idx) const {
    std::int64_t o = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) o += idx[i] * strides[i];
    return o;
  }
};

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * std::max<std::int64_t>(dims[i + 1], 1);
  return s;
}

class MatmulTest : public MluTest {
 protected:
  template <class T>
  static Strided<T> make(std::vector<std::int64_t> dims, std::vector<std::int64_t> strides, unsigned seed) {
    Strided<T> t;
    t.dims = dims;
    t.strides = strides.empty() ? contiguous_strides(dims) : strides;
    std::int64_t span = 1;
    bool empty = false;
    for (std::size_t i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * t.strides[i], empty |= dims[i] == 0;
    t.data = random<T>(empty ? 0 : static_cast<std::size_t>(span), seed);
    return t;
  }

  template <class T>
  TensorDesc desc_of(const Strided<T>& t) {
    return desc(sim::DTypeOf<T>::value, t.dims, t.strides);
  }

  // Runs matmul and compares every element of C with a double-precision reference.
  template <class T>
  void check(const MatmulParams& prm, const Strided<T>& a, const Strided<T>& b, const Strided<T>* bias,
             const Strided<T>& c0, double tol) {
    const TensorDesc da = desc_of(a), db = desc_of(b), dc = desc_of(c0);
    TensorDesc dbias;
    if (bias) dbias = desc_of(*bias);
    void* pa = to_device(a.data);
    void* pb = to_device(b.data);
    void* pc = to_device(c0.data);
    void* pbias = bias ? to_device(bias->data) : nullptr;
    std::size_t ws = 0;
    ASSERT_EQ(get_matmul_workspace_size(&h(), prm, da, db, bias ? &dbias : nullptr, dc, &ws), Status::kSuccess)
        << last_error_detail();
    void* pws = ws ? dalloc(ws) : nullptr;
    ASSERT_EQ(matmul(&h(), prm, da, pa, db, pb, bias ? &dbias : nullptr, pbias, dc, pc, pws, ws), Status::kSuccess)
        << last_error_detail();
    const std::vector<T> got = from_device<T>(pc, c0.data.size());

    const int nc = static_cast<int>(c0.dims.size());
    const std::int64_t M = c0.dims[nc - 2], N = c0.dims[nc - 1];
    const int na = static_cast<int>(a.dims.size()), nb = static_cast<int>(b.dims.size());
    const std::int64_t K = prm.trans_a ? a.dims[na - 2] : a.dims[na - 1];
    std::int64_t batch = 1;
    for (int i = 0; i < nc - 2; ++i) batch *= c0.dims[i];
    std::vector<std::int64_t> cidx(nc);
    for (std::int64_t bt = 0; bt < batch; ++bt) {
      // Batch index of C, and the broadcast indices of A and B.
      std::int64_t rem = bt;
      for (int i = nc - 3; i >= 0; --i) cidx[i] = rem % c0.dims[i], rem /= c0.dims[i];
      auto batch_idx = [&](const std::vector<std::int64_t>& dims) {
        const int n = static_cast<int>(dims.size());
        std::vector<std::int64_t> idx(n, 0);
        for (int i = 0; i < n - 2; ++i) idx[i] = dims[i] == 1 ? 0 : cidx[nc - 2 - (n - 2) + i];
        return idx;
      };
      std::vector<std::int64_t> ai = batch_idx(a.dims), bi = batch_idx(b.dims);
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (std::int64_t k = 0; k < K; ++k) {
            ai[na - 2] = prm.trans_a ? k : m, ai[na - 1] = prm.trans_a ? m : k;
            bi[nb - 2] = prm.trans_b ? n : k, bi[nb - 1] = prm.trans_b ? k : n;
            acc += static_cast<double>(static_cast<float>(a.data[a.at(ai)])) *
                   static_cast<double>(static_cast<float>(b.data[b.at(bi)]));
          }
          cidx[nc - 2] = m, cidx[nc - 1] = n;
          const std::int64_t co = c0.at(cidx);
          double want = prm.alpha * acc;
          if (bias) want += static_cast<float>(bias->data[bias->at({n})]);
          if (prm.beta != 0.0f) want += prm.beta * static_cast<double>(static_cast<float>(c0.data[co]));
          const double g = static_cast<float>(got[co]);
          ASSERT_NEAR(g, want, tol * (1.0 + std::fabs(want)))
              << "batch " << bt << " m " << m << " n " << n << " (M " << M << " N " << N << " K " << K << ")";
        }
    }
  }
};

TEST_F(MatmulTest, Fp32OddShapes) {
  for (auto [m, k, n] : {std::tuple{1, 1, 1}, {7, 13, 5}, {33, 70, 19}, {64, 64, 64}, {50, 3, 90}}) {
    auto a = make<float>({m, k}, {}, 1), b = make<float>({k, n}, {}, 2), c = make<float>({m, n}, {}, 3);
    check<float>({}, a, b, nullptr, c, 1e-5);
  }
}

TEST_F(MatmulTest, Fp16AccumulatesInFp32) {
  auto a = make<half>({37, 300}, {}, 4), b = make<half>({300, 29}, {}, 5), c = make<half>({37, 29}, {}, 6);
  check<half>({}, a, b, nullptr, c, 2e-3);
}

TEST_F(MatmulTest, TransposeFlagsAndStrides) {
  // trans flags
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::int64_t m = 21, k = 35, n = 17;
      auto a = make<float>(ta ? std::vector<std::int64_t>{k, m} : std::vector<std::int64_t>{m, k}, {}, 7);
      auto b = make<float>(tb ? std::vector<std::int64_t>{n, k} : std::vector<std::int64_t>{k, n}, {}, 8);
      auto c = make<float>({m, n}, {}, 9);
      MatmulParams prm;
      prm.trans_a = ta, prm.trans_b = tb;
      check<float>(prm, a, b, nullptr, c, 1e-5);
    }
  // the same transposes given by strides (column-major views), and a padded row stride
  auto at = make<float>({19, 23}, {1, 19}, 10), bt = make<float>({23, 11}, {1, 30}, 11);
  auto c = make<float>({19, 11}, {}, 12);
  check<float>({}, at, bt, nullptr, c, 1e-5);
  auto cs = make<float>({19, 11}, {1, 19}, 13);  // column-major output
  check<float>({}, at, bt, nullptr, cs, 1e-5);
  auto weird = make<float>({19, 23}, {50, 2}, 14);  // no unit stride at all
  check<float>({}, weird, make<float>({23, 11}, {}, 15), nullptr, c, 1e-5);
}

TEST_F(MatmulTest, Fp16TransposedViewIsPackedOnDevice) {
  // dW = dY^T X: both operands have their depth outermost, so A is transposed on the TFU first.
  auto dy = make<half>({40, 24}, {}, 16), x = make<half>({40, 18}, {}, 17);
  auto a = dy;
  a.dims = {24, 40};
  a.strides = {1, 24};
  auto c = make<half>({24, 18}, {}, 18);
  check<half>({}, a, x, nullptr, c, 2e-3);
}

TEST_F(MatmulTest, AlphaBetaBias) {
  MatmulParams prm;
  prm.alpha = 0.5f;
  prm.beta = -1.5f;
  auto a = make<float>({13, 27}, {}, 19), b = make<float>({27, 22}, {}, 20), c = make<float>({13, 22}, {}, 21);
  auto bias = make<float>({22}, {}, 22);
  check<float>(prm, a, b, &bias, c, 1e-5);
  auto hb = make<half>({22}, {3}, 23);  // strided bias, fp16
  check<half>(prm, make<half>({13, 27}, {}, 24), make<half>({27, 22}, {}, 25), &hb, make<half>({13, 22}, {}, 26), 3e-3);
  // transposed output form: bias runs along the engine's rows
  auto cs = make<float>({13, 22}, {1, 13}, 27);
  prm.trans_a = true;
  check<float>(prm, make<float>({27, 13}, {}, 28), make<float>({27, 22}, {1, 27}, 29), &bias, cs, 1e-5);
}

TEST_F(MatmulTest, BatchedWithBroadcast) {
  auto a = make<float>({3, 9, 14}, {}, 30), b = make<float>({3, 14, 10}, {}, 31), c = make<float>({3, 9, 10}, {}, 32);
  check<float>({}, a, b, nullptr, c, 1e-5);
  auto b1 = make<float>({1, 14, 10}, {}, 33);  // broadcast batch of 1
  check<float>({}, a, b1, nullptr, c, 1e-5);
  auto b2 = make<float>({14, 10}, {}, 34);  // missing batch dim
  check<float>({}, a, b2, nullptr, c, 1e-5);
  // 4-d with broadcast in the middle, and strided batches
  auto a4 = make<half>({2, 1, 5, 12}, {}, 35), b4 = make<half>({2, 3, 12, 7}, {600, 200, 7, 1}, 36);
  check<half>({}, a4, b4, nullptr, make<half>({2, 3, 5, 7}, {}, 37), 2e-3);
}

TEST_F(MatmulTest, LargeDepthUsesManySteps) {
  // Deeper than one step on the tiny preset, with an odd remainder.
  auto a = make<float>({20, 1001}, {}, 38), b = make<float>({1001, 12}, {}, 39), c = make<float>({20, 12}, {}, 40);
  check<float>({}, a, b, nullptr, c, 1e-4);
  auto ah = make<half>({70, 900}, {}, 41), bh = make<half>({900, 70}, {}, 42);
  check<half>({}, ah, bh, nullptr, make<half>({70, 70}, {}, 43), 3e-3);
}

TEST_F(MatmulTest, RandomShapesAndLayouts) {
  // Random M, N, K (odd ones included), transposes by flag or by strides, batches with
  // broadcasting, alpha/beta/bias, both dtypes.
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 24; ++iter) {
    const std::int64_t m = pick(1, 70), n = pick(1, 70), k = pick(1, 150), batch = pick(1, 3);
    MatmulParams prm;
    prm.trans_a = pick(0, 1), prm.trans_b = pick(0, 1);
    prm.alpha = pick(0, 1) ? 1.0f : 0.75f;
    prm.beta = pick(0, 2) == 0 ? 0.5f : 0.0f;
    const bool bias = pick(0, 1), fp16 = pick(0, 1), broadcast_b = pick(0, 1);
    auto dims = [&](std::int64_t r, std::int64_t c, bool t, std::int64_t b) {
      std::vector<std::int64_t> d{t ? c : r, t ? r : c};
      if (b > 1) d.insert(d.begin(), b);
      return d;
    };
    const unsigned seed = 100 + static_cast<unsigned>(iter) * 4;
    const auto a_dims = dims(m, k, prm.trans_a, batch), b_dims = dims(k, n, prm.trans_b, broadcast_b ? 1 : batch);
    const auto c_dims = dims(m, n, false, batch);
    SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) + " batch " +
                 std::to_string(batch) + (prm.trans_a ? " ta" : "") + (prm.trans_b ? " tb" : "") +
                 (fp16 ? " fp16" : ""));
    if (fp16) {
      auto bs = make<half>({n}, {}, seed + 3);
      check<half>(prm, make<half>(a_dims, {}, seed), make<half>(b_dims, {}, seed + 1), bias ? &bs : nullptr,
                  make<half>(c_dims, {}, seed + 2), 4e-3);
    } else {
      auto bs = make<float>({n}, {}, seed + 3);
      check<float>(prm, make<float>(a_dims, {}, seed), make<float>(b_dims, {}, seed + 1), bias ? &bs : nullptr,
                   make<float>(c_dims, {}, seed + 2), 1e-4);
    }
  }
}

TEST_F(MatmulTest, EmptyTensors) {
  // Empty output: nothing runs.
  auto a = make<float>({0, 5}, {}, 44), b = make<float>({5, 3}, {}, 45), c = make<float>({0, 3}, {}, 46);
  check<float>({}, a, b, nullptr, c, 0);
  // Empty depth: C = beta x C + bias.
  MatmulParams prm;
  prm.beta = 2.0f;
  auto bias = make<float>({3}, {}, 47);
  check<float>(prm, make<float>({4, 0}, {}, 48), make<float>({0, 3}, {}, 49), &bias, make<float>({4, 3}, {}, 50), 1e-6);
}

TEST_F(MatmulTest, RecordsMacsAndBytes) {
  auto a = make<float>({2, 6, 8}, {}, 51), b = make<float>({8, 5}, {}, 52), c = make<float>({2, 6, 5}, {}, 53);
  h().clear_ops();
  check<float>({}, a, b, nullptr, c, 1e-5);
  ASSERT_FALSE(h().ops().empty());
  const OpRecord& r = h().ops().back();
  EXPECT_EQ(r.name, "matmul");
  EXPECT_EQ(r.macs, 2u * 6 * 5 * 8);
  EXPECT_EQ(r.bytes, (2u * 6 * 8 + 8 * 5 + 2 * 6 * 5) * 4);
  EXPECT_GE(r.kernels, 1u);
}

TEST_F(MatmulTest, BadArguments) {
  const TensorDesc a = desc(DType::kFloat32, {4, 5}), b = desc(DType::kFloat32, {5, 3}),
                   c = desc(DType::kFloat32, {4, 3});
  void* p = dalloc(256);
  auto run = [&](const TensorDesc& x, const TensorDesc& y, const TensorDesc& z, const TensorDesc* bias = nullptr,
                 Handle* handle = nullptr) {
    return matmul(handle ? handle : &h(), {}, x, p, y, p, bias, p, z, p, nullptr, 0);
  };
  EXPECT_EQ(matmul(nullptr, {}, a, p, b, p, nullptr, nullptr, c, p, nullptr, 0), Status::kNotInitialized);
  EXPECT_EQ(run(a, desc(DType::kFloat32, {4, 3}), c), Status::kBadParam);  // K mismatch
  EXPECT_EQ(run(a, b, desc(DType::kFloat32, {4, 4})), Status::kBadParam);  // C shape
  EXPECT_EQ(run(a, desc(DType::kFloat16, {5, 3}), c), Status::kBadParam);  // mixed dtypes
  EXPECT_EQ(run(desc(DType::kInt32, {4, 5}), desc(DType::kInt32, {5, 3}), desc(DType::kInt32, {4, 3})),
            Status::kNotSupported);
  EXPECT_EQ(run(desc(DType::kFloat32, {5}), b, c), Status::kBadParam);  // 1-d
  EXPECT_EQ(run(desc(DType::kFloat32, {2, 4, 5}), desc(DType::kFloat32, {3, 5, 3}), desc(DType::kFloat32, {3, 4, 3})),
            Status::kBadParam);  // batch 2 vs 3
  const TensorDesc bad_bias = desc(DType::kFloat32, {4});
  EXPECT_EQ(run(a, b, c, &bad_bias), Status::kBadParam);
  TensorDesc unset;
  EXPECT_EQ(run(unset, b, c), Status::kBadParam);
  EXPECT_EQ(matmul(&h(), {}, a, nullptr, b, p, nullptr, nullptr, c, p, nullptr, 0), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("matmul"), std::string::npos);
  // A transposed operand needs a workspace.
  MatmulParams prm;
  const TensorDesc at = desc(DType::kFloat32, {4, 5}, {1, 4});
  const TensorDesc bt = desc(DType::kFloat32, {5, 3}, {3, 1});
  std::size_t ws = 0;
  ASSERT_EQ(get_matmul_workspace_size(&h(), prm, at, bt, nullptr, c, &ws), Status::kSuccess);
  if (ws > 0) {
    EXPECT_EQ(matmul(&h(), prm, at, p, bt, p, nullptr, nullptr, c, p, nullptr, 0), Status::kBadParam);
  }
}

TEST_F(MatmulTest, DmaBitFlipChangesTheResult) {
  auto a = make<float>({16, 24}, {}, 54), b = make<float>({24, 16}, {}, 55), c = make<float>({16, 16}, {}, 56);
  const TensorDesc da = desc_of(a), db = desc_of(b), dc = desc_of(c);
  void* pa = to_device(a.data);
  void* pb = to_device(b.data);
  void* pc = to_device(c.data);
  auto run = [&] {
    EXPECT_EQ(matmul(&h(), {}, da, pa, db, pb, nullptr, nullptr, dc, pc, nullptr, 0), Status::kSuccess);
    return from_device<float>(pc, c.data.size());
  };
  const std::vector<float> clean = run();
  // One bit of one DMA: the flipped bit is bit 0 of the copy's middle byte, which may be a low
  // mantissa bit that rounding hides, so several of the op's DMAs are tried in turn; with at
  // least one the result must differ (it would not if the result bypassed the simulated memories).
  int changed = 0;
  for (unsigned long long k = 1; k <= 8; ++k) {
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, k), cnrtSuccess);
    changed += run() != clean;
  }
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 0), cnrtSuccess);
  EXPECT_GT(changed, 0);
  EXPECT_EQ(run(), clean);  // disarmed: the same bits again
}

}  // namespace
}  // namespace mlusim::mlu::testing
