// attention_forward / attention_backward against a naive fp64 reference (scores, softmax and
// products computed in full), on odd shapes that are no multiple of any tile: causal (L < S and
// L > S), additive and boolean masks (full and broadcast), strided inputs, fully masked rows,
// fp16; the TFU work they issue, the GDRAM bytes (no score matrix) and the error paths.
#include <cfloat>
#include <limits>

#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

struct Shape {
  std::int64_t B, H, L, S, D, Dv;
};

// Host tensors in fp64 and the expected results.
struct Case {
  Shape s;
  double scale = 0.25;
  bool causal = false;
  std::vector<double> q, k, v, bias;  // bias: [B, H, L, S] after broadcasting (empty: none)
  std::vector<double> o, lse, dq, dk, dv, d_o;
};

std::size_t idx(const Shape& s, std::int64_t b, std::int64_t h, std::int64_t r, std::int64_t c, std::int64_t cols,
                std::int64_t rows) {
  return static_cast<std::size_t>(((b * s.H + h) * rows + r) * cols + c);
}

// The reference: P = softmax(scale Q K^T + bias) per row (rows with every key masked give P = 0,
// as torch's _safe_softmax), O = P V; and the gradients for d_o.
void reference(Case& c) {
  const Shape& s = c.s;
  const double inf = std::numeric_limits<double>::infinity();
  c.o.assign(static_cast<std::size_t>(s.B * s.H * s.L * s.Dv), 0);
  c.lse.assign(static_cast<std::size_t>(s.B * s.H * s.L), 0);
  c.dq.assign(c.q.size(), 0), c.dk.assign(c.k.size(), 0), c.dv.assign(c.v.size(), 0);
  for (std::int64_t b = 0; b < s.B; ++b)
    for (std::int64_t h = 0; h < s.H; ++h)
      for (std::int64_t r = 0; r < s.L; ++r) {
        std::vector<double> p(static_cast<std::size_t>(s.S));
        double mx = -inf;
        for (std::int64_t j = 0; j < s.S; ++j) {
          double x = 0;
          for (std::int64_t d = 0; d < s.D; ++d) x += c.q[idx(s, b, h, r, d, s.D, s.L)] * c.k[idx(s, b, h, j, d, s.D, s.S)];
          x *= c.scale;
          if (!c.bias.empty()) x += c.bias[idx(s, b, h, r, j, s.S, s.L)];
          if (c.causal && j > r) x = -inf;
          p[static_cast<std::size_t>(j)] = x, mx = std::max(mx, x);
        }
        double sum = 0;
        for (auto& x : p) x = mx == -inf ? 0 : std::exp(x - mx), sum += x;
        for (auto& x : p) x = sum > 0 ? x / sum : 0;
        c.lse[idx(s, b, h, 0, r, s.L, 1)] = mx == -inf ? -inf : mx + std::log(sum);
        for (std::int64_t e = 0; e < s.Dv; ++e) {
          double acc = 0;
          for (std::int64_t j = 0; j < s.S; ++j) acc += p[static_cast<std::size_t>(j)] * c.v[idx(s, b, h, j, e, s.Dv, s.S)];
          c.o[idx(s, b, h, r, e, s.Dv, s.L)] = acc;
        }
        if (c.d_o.empty()) continue;
        // dP = dO V^T, dS = P (dP - sum(P dP)), dQ = scale dS K, dK += scale dS^T Q, dV += P^T dO.
        std::vector<double> dp(static_cast<std::size_t>(s.S));
        double dot = 0;
        for (std::int64_t j = 0; j < s.S; ++j) {
          double x = 0;
          for (std::int64_t e = 0; e < s.Dv; ++e) x += c.d_o[idx(s, b, h, r, e, s.Dv, s.L)] * c.v[idx(s, b, h, j, e, s.Dv, s.S)];
          dp[static_cast<std::size_t>(j)] = x, dot += x * p[static_cast<std::size_t>(j)];
        }
        for (std::int64_t j = 0; j < s.S; ++j) {
          const double pj = p[static_cast<std::size_t>(j)], ds = pj * (dp[static_cast<std::size_t>(j)] - dot);
          for (std::int64_t d = 0; d < s.D; ++d) {
            c.dq[idx(s, b, h, r, d, s.D, s.L)] += c.scale * ds * c.k[idx(s, b, h, j, d, s.D, s.S)];
            c.dk[idx(s, b, h, j, d, s.D, s.S)] += c.scale * ds * c.q[idx(s, b, h, r, d, s.D, s.L)];
          }
          for (std::int64_t e = 0; e < s.Dv; ++e)
            c.dv[idx(s, b, h, j, e, s.Dv, s.S)] += pj * c.d_o[idx(s, b, h, r, e, s.Dv, s.L)];
        }
      }
}

std::vector<double> randoms(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<T>(static_cast<float>(v[i]));
  return out;
}
// The values a narrower dtype actually holds (so the reference sees the same inputs).
template <class T>
void round_to(std::vector<double>& v) {
  for (auto& x : v) x = as_double(static_cast<T>(static_cast<float>(x)));
}

class AttentionTest : public MluTest {
 protected:
  // Runs forward (and backward when c.d_o is set) on the device with T-typed q/k/v/o; the mask,
  // if any, is given as `mask` (its own desc and host bytes). Checks everything against c.
  template <class T>
  void run(Case& c, DType dt, const TensorDesc* mask, const void* mask_ptr, double tol, bool q_transposed = false) {
    const Shape& s = c.s;
    round_to<T>(c.q), round_to<T>(c.k), round_to<T>(c.v);
    if (!c.d_o.empty()) round_to<T>(c.d_o);
    reference(c);
    const TensorDesc kd = desc(dt, {s.B, s.H, s.S, s.D}), vd = desc(dt, {s.B, s.H, s.S, s.Dv});
    const TensorDesc od = desc(dt, {s.B, s.H, s.L, s.Dv}), ld = desc(DType::kFloat32, {s.B, s.H, s.L});
    // q as SDPA gets it from a [B, L, H, D] projection: transposed(1, 2), not contiguous.
    std::vector<double> qhost = c.q;
    TensorDesc qd = desc(dt, {s.B, s.H, s.L, s.D});
    if (q_transposed) {
      for (std::int64_t b = 0; b < s.B; ++b)
        for (std::int64_t h = 0; h < s.H; ++h)
          for (std::int64_t r = 0; r < s.L; ++r)
            for (std::int64_t d = 0; d < s.D; ++d)
              qhost[static_cast<std::size_t>(((b * s.L + r) * s.H + h) * s.D + d)] = c.q[idx(s, b, h, r, d, s.D, s.L)];
      qd = desc(dt, {s.B, s.H, s.L, s.D}, {s.L * s.H * s.D, s.D, s.H * s.D, 1});
    }
    void* qp = to_device(as<T>(qhost));
    void* kp = to_device(as<T>(c.k));
    void* vp = to_device(as<T>(c.v));
    void* op = dalloc(c.o.size() * sizeof(T));
    void* lp = dalloc(c.lse.size() * 4);
    AttentionParams p;
    p.scale = c.scale, p.causal = c.causal;
    ASSERT_EQ(attention_forward(handle_, p, qd, qp, kd, kp, vd, vp, mask, mask_ptr, od, op, &ld, lp), Status::kSuccess)
        << last_error_detail();
    expect_close(from_device<T>(op, c.o.size()), c.o, tol, tol, "o");
    std::vector<double> lse_want = c.lse;
    for (auto& x : lse_want) x = std::isinf(x) ? -FLT_MAX : x;
    expect_close(from_device<float>(lp, c.lse.size()), lse_want, tol, tol, "lse");
    if (c.d_o.empty()) return;
    void* dop = to_device(as<T>(c.d_o));
    void* dqp = dalloc(c.q.size() * sizeof(T));
    void* dkp = dalloc(c.k.size() * sizeof(T));
    void* dvp = dalloc(c.v.size() * sizeof(T));
    std::size_t ws = 0;
    ASSERT_EQ(get_attention_backward_workspace_size(handle_, qd, &ws), Status::kSuccess);
    void* wp = dalloc(ws);
    const TensorDesc dqd = desc(dt, {s.B, s.H, s.L, s.D});
    ASSERT_EQ(attention_backward(handle_, p, qd, qp, kd, kp, vd, vp, mask, mask_ptr, od, op, od, dop, ld, lp, dqd, dqp,
                                 kd, dkp, vd, dvp, wp, ws),
              Status::kSuccess)
        << last_error_detail();
    expect_close(from_device<T>(dqp, c.dq.size()), c.dq, tol, tol, "dq");
    expect_close(from_device<T>(dkp, c.dk.size()), c.dk, tol, tol, "dk");
    expect_close(from_device<T>(dvp, c.dv.size()), c.dv, tol, tol, "dv");
  }

  Case make(Shape s, unsigned seed, bool grads) {
    Case c;
    c.s = s;
    c.q = randoms(static_cast<std::size_t>(s.B * s.H * s.L * s.D), seed);
    c.k = randoms(static_cast<std::size_t>(s.B * s.H * s.S * s.D), seed + 1);
    c.v = randoms(static_cast<std::size_t>(s.B * s.H * s.S * s.Dv), seed + 2);
    if (grads) c.d_o = randoms(static_cast<std::size_t>(s.B * s.H * s.L * s.Dv), seed + 3);
    c.scale = 1.0 / std::sqrt(static_cast<double>(s.D));
    return c;
  }
};

TEST_F(AttentionTest, PlainAndStridedFp32WithGradients) {
  Case c = make({2, 3, 37, 29, 16, 24}, 1, true);
  run<float>(c, DType::kFloat32, nullptr, nullptr, 2e-4, /*q_transposed=*/true);
}

// Many work items of a single key block each: every step opens an item, so the next item's
// copies are in flight while this one computes.
TEST_F(AttentionTest, ShortKeysManyItemsWithGradients) {
  Case c = make({4, 8, 20, 6, 8, 8}, 13, true);
  run<float>(c, DType::kFloat32, nullptr, nullptr, 2e-4);
}

TEST_F(AttentionTest, CausalBothWaysWithGradients) {
  for (Shape s : {Shape{1, 2, 45, 23, 8, 8}, Shape{1, 2, 23, 45, 8, 8}, Shape{1, 1, 70, 70, 12, 8}}) {
    Case c = make(s, 7, true);
    c.causal = true;
    run<float>(c, DType::kFloat32, nullptr, nullptr, 2e-4);
  }
}

TEST_F(AttentionTest, AdditiveFullMaskWithGradients) {
  Case c = make({2, 2, 33, 41, 8, 8}, 11, true);
  std::vector<double> mask = randoms(static_cast<std::size_t>(2 * 2 * 33 * 41), 5);
  for (auto& x : mask) x *= 3;
  c.bias = mask;
  const TensorDesc md = desc(DType::kFloat32, {2, 2, 33, 41});
  void* mp = to_device(as<float>(mask));
  run<float>(c, DType::kFloat32, &md, mp, 2e-4);
}

TEST_F(AttentionTest, BooleanMasksBroadcastAndFullyMaskedRows) {
  // [B, 1, 1, S] padding mask (row broadcast): the last 5 keys of batch 1 masked.
  {
    Case c = make({2, 2, 19, 27, 8, 8}, 21, true);
    std::vector<std::uint8_t> keep(2 * 27, 1);
    for (int j = 22; j < 27; ++j) keep[static_cast<std::size_t>(27 + j)] = 0;
    c.bias.assign(static_cast<std::size_t>(2 * 2 * 19 * 27), 0);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t r = 0; r < 19; ++r)
          for (std::int64_t j = 0; j < 27; ++j)
            c.bias[idx(c.s, b, h, r, j, 27, 19)] = keep[static_cast<std::size_t>(b * 27 + j)] ? 0 : -INFINITY;
    const TensorDesc md = desc(DType::kBool, {2, 1, 1, 27});
    void* mp = to_device(keep);
    run<float>(c, DType::kFloat32, &md, mp, 2e-4);
  }
  // A full [L, S] bool mask with query row 3 masked everywhere: O and its gradients are 0 there.
  {
    Case c = make({1, 2, 21, 17, 8, 8}, 31, true);
    std::vector<std::uint8_t> keep(21 * 17);
    std::mt19937 rng(3);
    for (auto& x : keep) x = rng() % 3 != 0;
    for (int j = 0; j < 17; ++j) keep[static_cast<std::size_t>(3 * 17 + j)] = 0;
    c.bias.assign(static_cast<std::size_t>(2 * 21 * 17), 0);
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t r = 0; r < 21; ++r)
        for (std::int64_t j = 0; j < 17; ++j)
          c.bias[idx(c.s, 0, h, r, j, 17, 21)] = keep[static_cast<std::size_t>(r * 17 + j)] ? 0 : -INFINITY;
    const TensorDesc md = desc(DType::kBool, {21, 17});
    void* mp = to_device(keep);
    run<float>(c, DType::kFloat32, &md, mp, 2e-4);
  }
}

TEST_F(AttentionTest, Fp16CausalWithGradients) {
  Case c = make({1, 2, 40, 40, 16, 16}, 41, true);
  c.causal = true;
  run<half>(c, DType::kFloat16, nullptr, nullptr, 2e-2);
}

// Large fp16 scores with a scale that is no power of two (head_dim 8: 1/sqrt(8)) and an additive
// fp16 mask: the scale multiplies the fp32 score tiles (Q x scale rounded to fp16 would move each
// score by up to |s| 2^-11, 0.05 at the scores here, a 5% error in its weight), and the mask is
// divided by it first. Scores reach ~80, as OpInfo's fp16 samples (values in [-9, 9]) make them.
TEST_F(AttentionTest, Fp16LargeScoresWithUnroundedScaleAndMask) {
  Case c = make({2, 2, 19, 35, 8, 8}, 61, true);
  for (auto& x : c.q) x *= 6;
  for (auto& x : c.k) x *= 6;
  std::vector<double> mask = randoms(static_cast<std::size_t>(19 * 35), 9);
  for (auto& x : mask) x *= 4;
  round_to<half>(mask);
  c.bias.assign(static_cast<std::size_t>(2 * 2 * 19 * 35), 0);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t r = 0; r < 19; ++r)
        for (std::int64_t j = 0; j < 35; ++j)
          c.bias[idx(c.s, b, h, r, j, 35, 19)] = mask[static_cast<std::size_t>(r * 35 + j)];
  const TensorDesc md = desc(DType::kFloat16, {19, 35});
  void* mp = to_device(as<half>(mask));
  run<half>(c, DType::kFloat16, &md, mp, 4e-3);
}

// bf16 on the preset that computes it (mlu590: the TFU's bf16 array, the VFU's bf16 casts).
class AttentionBf16Test : public AttentionTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(mlusimLoadConfig("mlu590"), cnrtSuccess);
    ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  }
};

TEST_F(AttentionBf16Test, CausalWithGradients) {
  Case c = make({1, 2, 33, 20, 16, 16}, 51, true);
  c.causal = true;
  run<sim::bfloat16>(c, DType::kBFloat16, nullptr, nullptr, 3e-2);
}

// The TFU work the forward issues is exactly the two products over the visible blocks, and the
// GDRAM traffic is that of Q and O once and K and V once per query block (at most ceil(L / 16)
// times: no tiling has fewer than 16 rows), never the L x S scores: with head_dim 4 that bound is
// about half the score matrix, so writing it even once would exceed it.
TEST_F(AttentionTest, IssuesTheProductsAndMovesNoScoreMatrix) {
  const std::int64_t L = 512, S = 512, D = 4;
  const TensorDesc qd = desc(DType::kFloat32, {1, 1, L, D});
  void* qp = to_device(as<float>(randoms(static_cast<std::size_t>(L * D), 1)));
  void* kp = to_device(as<float>(randoms(static_cast<std::size_t>(S * D), 2)));
  void* vp = to_device(as<float>(randoms(static_cast<std::size_t>(S * D), 3)));
  void* op = dalloc(static_cast<std::size_t>(L * D) * 4);
  AttentionParams p;
  p.scale = 0.3;
  std::size_t before = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &before), cnrtSuccess);
  const DeviceCost cost = device_cost(h(), [&] {
    ASSERT_EQ(attention_forward(handle_, p, qd, qp, qd, kp, qd, vp, nullptr, nullptr, qd, op, nullptr, nullptr),
              Status::kSuccess);
  });
  EXPECT_EQ(cost.kernels, 1u) << cost.names;
  mlusimKernelRecord_t r{};
  ASSERT_EQ(mlusimGetKernelRecord(0, before, &r), cnrtSuccess);
  EXPECT_EQ(r.macs, static_cast<std::uint64_t>(L * S * (D + D)));
  const auto tensor = static_cast<std::uint64_t>(L * D) * 4, scores = static_cast<std::uint64_t>(L * S) * 4;
  const std::uint64_t bound = 2 * tensor + 2 * tensor * static_cast<std::uint64_t>((L + 15) / 16);
  ASSERT_LT(bound, scores);
  EXPECT_LE(cost.gdram_bytes, bound) << "attention moved " << cost.gdram_bytes << " GDRAM bytes";
  EXPECT_GE(cost.gdram_bytes, 4 * tensor);
  // Causal: key blocks wholly above the diagonal are skipped (at least the lower triangle runs).
  p.causal = true;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &before), cnrtSuccess);
  device_cost(h(), [&] {
    ASSERT_EQ(attention_forward(handle_, p, qd, qp, qd, kp, qd, vp, nullptr, nullptr, qd, op, nullptr, nullptr),
              Status::kSuccess);
  });
  ASSERT_EQ(mlusimGetKernelRecord(0, before, &r), cnrtSuccess);
  EXPECT_LT(r.macs, static_cast<std::uint64_t>(L * S * (D + D)));
  EXPECT_GE(r.macs, static_cast<std::uint64_t>(L * (L + 1) / 2 * (D + D)));
}

// A bit flipped in any of the kernels' DMAs (Q, K, V, dO, O, lse loads; O, lse, dQ stores) shows
// in the results: they come out of the simulated memories. The injector flips the lowest bit of a
// copy's middle byte; with odd rows x head_dim every tile's middle byte is the third of a float
// (mantissa bit 16, a 2^-7 change), which no rounding hides.
TEST_F(AttentionTest, AFlippedDmaBitChangesTheResult) {
  const TensorDesc d = desc(DType::kFloat32, {1, 2, 23, 7}), ld = desc(DType::kFloat32, {1, 2, 23});
  void* qp = to_device(as<float>(randoms(322, 1)));
  void* kp = to_device(as<float>(randoms(322, 2)));
  void* vp = to_device(as<float>(randoms(322, 3)));
  void* dop = to_device(as<float>(randoms(322, 4)));
  void* op = dalloc(322 * 4);
  void* lp = dalloc(46 * 4);
  void* dqp = dalloc(322 * 4);
  void* dkp = dalloc(322 * 4);
  void* dvp = dalloc(322 * 4);
  void* wp = dalloc(46 * 4);
  AttentionParams p;
  p.scale = 0.35;
  const auto run_all = [&] {
    EXPECT_EQ(attention_forward(handle_, p, d, qp, d, kp, d, vp, nullptr, nullptr, d, op, &ld, lp), Status::kSuccess);
    EXPECT_EQ(attention_backward(handle_, p, d, qp, d, kp, d, vp, nullptr, nullptr, d, op, d, dop, ld, lp, d, dqp, d,
                                 dkp, d, dvp, wp, 46 * 4),
              Status::kSuccess);
    std::vector<float> all = from_device<float>(op, 322);
    for (void* g : {lp, dqp, dkp, dvp}) {
      const std::vector<float> part = from_device<float>(g, g == lp ? 46 : 322);
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  };
  const std::vector<float> clean = run_all();
  for (unsigned long long nth : {1ull, 2ull, 3ull, 4ull, 5ull, 6ull, 7ull, 8ull, 9ull, 10ull, 11ull, 12ull}) {
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, nth), cnrtSuccess);
    EXPECT_NE(run_all(), clean) << "DMA " << nth << " was flipped but the results are clean";
  }
  EXPECT_EQ(run_all(), clean) << "disarmed after one flip";
}

TEST_F(AttentionTest, ErrorsNameTheArgument) {
  const TensorDesc q = desc(DType::kFloat32, {1, 2, 8, 16}), k = desc(DType::kFloat32, {1, 2, 9, 16});
  const TensorDesc v = desc(DType::kFloat32, {1, 2, 9, 16}), o = desc(DType::kFloat32, {1, 2, 8, 16});
  void* buf = dalloc(1 << 16);
  AttentionParams p;
  p.scale = 0.25;
  const auto fwd = [&](const TensorDesc& qd, const TensorDesc& kd, const TensorDesc& vd, const TensorDesc& od,
                       const TensorDesc* m = nullptr) {
    return attention_forward(handle_, p, qd, buf, kd, buf, vd, buf, m, m ? buf : nullptr, od, buf, nullptr, nullptr);
  };
  EXPECT_EQ(fwd(q, desc(DType::kFloat32, {1, 2, 9, 8}), v, o), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("k fp32[1,2,9,8]"), std::string::npos) << last_error_detail();
  EXPECT_EQ(fwd(q, k, desc(DType::kFloat32, {1, 2, 7, 16}), o), Status::kBadParam);
  EXPECT_EQ(fwd(q, k, v, desc(DType::kFloat32, {1, 2, 8, 15})), Status::kBadParam);
  EXPECT_EQ(fwd(desc(DType::kFloat32, {2, 8, 16}), k, v, o), Status::kBadParam);
  EXPECT_EQ(fwd(desc(DType::kInt32, {1, 2, 8, 16}), k, v, o), Status::kNotSupported);
  EXPECT_NE(last_error_detail().find("supported: fp32, fp16, bf16"), std::string::npos) << last_error_detail();
  EXPECT_EQ(fwd(q, desc(DType::kFloat16, {1, 2, 9, 16}), v, o), Status::kBadParam);
  const TensorDesc bad_mask = desc(DType::kFloat32, {3, 9});
  EXPECT_EQ(fwd(q, k, v, o, &bad_mask), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("does not broadcast"), std::string::npos) << last_error_detail();
  const TensorDesc mask = desc(DType::kBool, {8, 9});
  p.causal = true;
  EXPECT_EQ(fwd(q, k, v, o, &mask), Status::kBadParam);
  p.causal = false;
  p.scale = std::numeric_limits<double>::infinity();
  EXPECT_EQ(fwd(q, k, v, o), Status::kBadParam);
  p.scale = 0.25;
  // bf16 on a config without bf16 arithmetic (tiny extends mlu370-x4).
  const TensorDesc qb = desc(DType::kBFloat16, {1, 2, 8, 16});
  EXPECT_EQ(fwd(qb, desc(DType::kBFloat16, {1, 2, 9, 16}), desc(DType::kBFloat16, {1, 2, 9, 16}),
                desc(DType::kBFloat16, {1, 2, 8, 16})),
            Status::kNotSupported);
  // A head_dim whose smallest tile does not fit tiny's 64 KiB of NRAM.
  const TensorDesc qh = desc(DType::kFloat32, {1, 1, 8, 4096}), vh = desc(DType::kFloat32, {1, 1, 8, 4096});
  EXPECT_EQ(attention_forward(handle_, p, qh, buf, qh, buf, vh, buf, nullptr, nullptr, qh, buf, nullptr, nullptr),
            Status::kNotSupported);
  EXPECT_NE(last_error_detail().find("core.nram_bytes"), std::string::npos) << last_error_detail();
  // Backward: a too small workspace, a wrong lse.
  const TensorDesc lse = desc(DType::kFloat32, {1, 2, 8});
  EXPECT_EQ(attention_backward(handle_, p, q, buf, k, buf, v, buf, nullptr, nullptr, o, buf, o, buf, lse, buf, q, buf,
                               k, buf, v, buf, buf, 4),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("workspace"), std::string::npos) << last_error_detail();
  EXPECT_EQ(attention_backward(handle_, p, q, buf, k, buf, v, buf, nullptr, nullptr, o, buf, o, buf,
                               desc(DType::kFloat32, {1, 2, 9}), buf, q, buf, k, buf, v, buf, buf, 1 << 12),
            Status::kBadParam);
  EXPECT_EQ(get_attention_backward_workspace_size(nullptr, q, nullptr), Status::kNotInitialized);
}

}  // namespace
}  // namespace mlusim::mlu::testing
