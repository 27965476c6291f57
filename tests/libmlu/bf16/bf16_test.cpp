// libmlu in bf16 on the mlu590 preset (the one with bf16 arithmetic): casts, elementwise,
// reductions, softmax, layer norm and matmul run as real kernels on the simulated cores and
// are checked against host references that round fp32/double results to bf16 by their own rule;
// matmul runs on the bf16 TFU array and is counted under bf16. On mlu370-x4 (no bf16) every
// bf16 op but a same-dtype copy answers kNotSupported naming the op and the preset.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

using sim::bfloat16;

float widen(bfloat16 v) {
  std::uint16_t b;
  std::memcpy(&b, static_cast<const void*>(&v), 2);
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Reference rounding of a finite value to bf16: the nearer of the two bf16 neighbours (8
// significant bits at x's binade), ties to the even one.
float ref_round(double x) {
  if (x == 0.0 || !std::isfinite(x)) return static_cast<float>(x);
  int e;
  std::frexp(std::fabs(x), &e);
  const double step = std::ldexp(1.0, std::max(e - 8, -133));
  const double lo = std::floor(std::fabs(x) / step) * step, hi = lo + step;
  const double dl = std::fabs(x) - lo, dh = hi - std::fabs(x);
  const double r = dl < dh ? lo : dh < dl ? hi : (std::fmod(lo / step, 2.0) == 0.0 ? lo : hi);
  return static_cast<float>(std::copysign(r, x));
}

std::vector<bfloat16> bf16_of(const std::vector<float>& f) {
  std::vector<bfloat16> b(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) b[i] = bfloat16(ref_round(f[i]));  // exact: already a bf16 value
  return b;
}

class Bf16Ops : public MluTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(mlusimLoadConfig("mlu590"), cnrtSuccess);
    ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  }
  static constexpr DType kBf16 = DType::kBFloat16;
};

TEST_F(Bf16Ops, CastsRoundToNearestEvenAndWidenExactly) {
  // Halfway cases of bf16 (1 + 2^-8: to 1.0; 1 + 3 x 2^-8: to 1 + 2^-6), random values, a tail.
  std::vector<float> f = random<float>(1000, 11, -300.0f, 300.0f);
  f[0] = 1.0f + 0x1p-8f, f[1] = 1.0f + 3 * 0x1p-8f, f[2] = -0.0f, f[3] = 1e-39f;
  const TensorDesc d32 = desc(DType::kFloat32, {1000}), d16 = desc(kBf16, {1000});
  void* p32 = to_device(f);
  void* pb = dalloc(2000);
  ASSERT_EQ(cast(&h(), d32, p32, d16, pb), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> b = from_device<bfloat16>(pb, 1000);
  for (std::size_t i = 0; i < f.size(); ++i) ASSERT_EQ(widen(b[i]), ref_round(f[i])) << i << ": " << f[i];
  EXPECT_EQ(widen(b[0]), 1.0f);
  EXPECT_EQ(widen(b[1]), 1.0f + 0x1p-6f);
  void* back = dalloc(4000);
  ASSERT_EQ(cast(&h(), d16, pb, d32, back), Status::kSuccess) << last_error_detail();
  const std::vector<float> w = from_device<float>(back, 1000);
  for (std::size_t i = 0; i < f.size(); ++i) ASSERT_EQ(w[i], widen(b[i])) << i;
  // fp16 -> bf16 through fp32 (a strided view on the way: every other element).
  const std::vector<sim::half> hv = random<sim::half>(64, 12, -4.0f, 4.0f);
  void* ph = to_device(hv);
  void* pb2 = dalloc(64);
  ASSERT_EQ(copy_strided(&h(), desc(DType::kFloat16, {32}, {2}), ph, desc(kBf16, {32}), pb2), Status::kSuccess)
      << last_error_detail();
  const std::vector<bfloat16> b2 = from_device<bfloat16>(pb2, 32);
  for (std::size_t i = 0; i < 32; ++i) ASSERT_EQ(widen(b2[i]), ref_round(static_cast<float>(hv[2 * i]))) << i;
}

TEST_F(Bf16Ops, ElementwiseComputesInFp32AndRoundsOnce) {
  const std::vector<bfloat16> a = bf16_of(random<float>(6 * 50, 21, -4.0f, 4.0f));
  const std::vector<bfloat16> b = bf16_of(random<float>(50, 22, 0.5f, 2.0f));  // broadcast over rows
  void* pa = to_device(a);
  void* pb = to_device(b);
  void* py = dalloc(a.size() * 2);
  const TensorDesc da = desc(kBf16, {6, 50}), db = desc(kBf16, {50});
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, da, pa, db, pb, da, py, 0.5), Status::kSuccess) << last_error_detail();
  std::vector<bfloat16> y = from_device<bfloat16>(py, a.size());
  for (std::size_t i = 0; i < a.size(); ++i)  // a + alpha * b: alpha x b exact, one fp32 add, one rounding
    ASSERT_EQ(widen(y[i]), ref_round(widen(a[i]) + 0.5f * widen(b[i % 50]))) << i;
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, da, pa, db, pb, da, py), Status::kSuccess) << last_error_detail();
  y = from_device<bfloat16>(py, a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(widen(y[i]), ref_round(double(widen(a[i])) * widen(b[i % 50]))) << i;
  ASSERT_EQ(unary(&h(), UnaryOp::kExp, da, pa, da, py), Status::kSuccess) << last_error_detail();
  y = from_device<bfloat16>(py, a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {  // fp32 exp is within an fp32 ulp: at most one bf16 ulp apart
    const double r = std::exp(double(widen(a[i])));
    ASSERT_NEAR(widen(y[i]), r, r * 0x1p-8) << i;
  }
  // bf16 with fp32 promotes to fp32 (torch); bf16 with fp16 to fp32 as well.
  EXPECT_EQ(promote_types(kBf16, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(promote_types(kBf16, DType::kFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(kBf16, DType::kInt32), kBf16);
}

TEST_F(Bf16Ops, ReductionsSoftmaxAndLayerNormAccumulateInFp32) {
  const std::int64_t rows = 5, n = 600;
  const std::vector<bfloat16> x = bf16_of(random<float>(rows * n, 31, 0.0f, 2.0f));
  void* px = to_device(x);
  const TensorDesc dx = desc(kBf16, {rows, n}), dr = desc(kBf16, {rows});
  void* py = dalloc(rows * 2);
  std::size_t ws = 0;
  ASSERT_EQ(get_reduce_workspace_size(&h(), dx, {1}, &ws), Status::kSuccess);
  void* pws = ws ? dalloc(ws) : nullptr;
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, dx, px, {1}, false, dr, py, pws, ws), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> s = from_device<bfloat16>(py, rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += widen(x[r * n + i]);
    EXPECT_NEAR(widen(s[r]), sum, sum * 0x1p-8) << r;  // ~600: a bf16 accumulator would be off by tens
  }
  void* pso = dalloc(rows * n * 2);
  ASSERT_EQ(softmax_forward(&h(), SoftmaxMode::kSoftmax, 1, dx, px, dx, pso), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> sm = from_device<bfloat16>(pso, rows * n);
  for (std::int64_t r = 0; r < rows; ++r) {
    double mx = -1e30, z = 0;
    for (std::int64_t i = 0; i < n; ++i) mx = std::max<double>(mx, widen(x[r * n + i]));
    for (std::int64_t i = 0; i < n; ++i) z += std::exp(widen(x[r * n + i]) - mx);
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(widen(x[r * n + i]) - mx) / z;
      ASSERT_NEAR(widen(sm[r * n + i]), ref, ref * 0x1p-7) << r << "," << i;
    }
  }
  void* pln = dalloc(rows * n * 2);
  ASSERT_EQ(layer_norm_forward(&h(), 1, 1e-5, dx, px, nullptr, nullptr, nullptr, nullptr, dx, pln, nullptr, nullptr,
                               nullptr, nullptr),
            Status::kSuccess)
      << last_error_detail();
  const std::vector<bfloat16> ln = from_device<bfloat16>(pln, rows * n);
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < n; ++i) mean += widen(x[r * n + i]);
    mean /= double(n);
    for (std::int64_t i = 0; i < n; ++i) var += std::pow(widen(x[r * n + i]) - mean, 2);
    const double rstd = 1.0 / std::sqrt(var / double(n) + 1e-5);
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = (widen(x[r * n + i]) - mean) * rstd;
      ASSERT_NEAR(widen(ln[r * n + i]), ref, std::fabs(ref) * 0x1p-7 + 1e-3) << r << "," << i;
    }
  }
}

TEST_F(Bf16Ops, MatmulRunsOnTheBf16ArrayWithFp32Accumulation) {
  const std::int64_t m = 40, k = 200, n = 24;
  const std::vector<bfloat16> a = bf16_of(random<float>(m * k, 41)), b = bf16_of(random<float>(n * k, 42));
  const std::vector<bfloat16> bias = bf16_of(random<float>(n, 43));
  void* pa = to_device(a);
  void* pb = to_device(b);
  void* pbias = to_device(bias);
  void* pc = dalloc(m * n * 2);
  MatmulParams prm;
  prm.trans_b = true;  // B stored [N,K], as nn.Linear's weight
  const TensorDesc da = desc(kBf16, {m, k}), db = desc(kBf16, {n, k}), dbias = desc(kBf16, {n}), dc = desc(kBf16, {m, n});
  std::size_t ws = 0;
  ASSERT_EQ(get_matmul_workspace_size(&h(), prm, da, db, &dbias, dc, &ws), Status::kSuccess) << last_error_detail();
  void* pws = ws ? dalloc(ws) : nullptr;
  ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
  ASSERT_EQ(matmul(&h(), prm, da, pa, db, pb, &dbias, pbias, dc, pc, pws, ws), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> c = from_device<bfloat16>(pc, m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double ref = widen(bias[j]), mag = std::fabs(ref);
      for (std::int64_t p = 0; p < k; ++p) {
        const double prod = double(widen(a[i * k + p])) * widen(b[j * k + p]);
        ref += prod;
        mag += std::fabs(prod);
      }
      // fp32 accumulation (1e-5 of the magnitude) plus one bf16 rounding (2^-8 relative).
      ASSERT_NEAR(widen(c[i * n + j]), ref, std::fabs(ref) * 0x1p-8 + 1e-5 * mag + 1e-6) << i << "," << j;
    }
  // The multiplies ran as bf16 (the bf16 TFU array): none under fp32 or fp16.
  std::size_t count = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &count), cnrtSuccess);
  std::uint64_t bf16_macs = 0, other = 0;
  for (std::size_t r = 0; r < count; ++r) {
    mlusimKernelRecord_t rec;
    ASSERT_EQ(mlusimGetKernelRecord(0, r, &rec), cnrtSuccess);
    bf16_macs += rec.macs_by_dtype[static_cast<int>(kBf16)];
    other += rec.macs_by_dtype[static_cast<int>(DType::kFloat32)] + rec.macs_by_dtype[static_cast<int>(DType::kFloat16)];
  }
  EXPECT_EQ(bf16_macs, static_cast<std::uint64_t>(m * n * k));
  EXPECT_EQ(other, 0u);
}

// The bf16 numbers come out of the simulated memories: a flipped bit in the matmul's first DMA
// (an operand load) changes C.
TEST_F(Bf16Ops, BitFlipInTheMatmulChangesTheResult) {
  const std::int64_t m = 16, k = 64, n = 16;
  const std::vector<bfloat16> a = bf16_of(random<float>(m * k, 61)), b = bf16_of(random<float>(k * n, 62));
  void* pa = to_device(a);
  void* pb = to_device(b);
  void* pc = dalloc(m * n * 2);
  const TensorDesc da = desc(kBf16, {m, k}), db = desc(kBf16, {k, n}), dc = desc(kBf16, {m, n});
  MatmulParams prm;
  std::vector<float> clean, flipped;
  for (bool flip : {false, true}) {
    if (flip) {
      ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
    }
    ASSERT_EQ(matmul(&h(), prm, da, pa, db, pb, nullptr, nullptr, dc, pc, nullptr, 0), Status::kSuccess)
        << last_error_detail();
    std::vector<float>& out = flip ? flipped : clean;
    for (bfloat16 v : from_device<bfloat16>(pc, m * n)) out.push_back(widen(v));
  }
  EXPECT_NE(clean, flipped);
}

// MLU370 has no bf16 arithmetic: the ops refuse up front, naming op and preset; storage and
// same-dtype copies still work.
TEST_F(Bf16Ops, Mlu370RejectsBf16ComputeNamingOpAndPreset) {
  Handle::destroy(handle_);
  ASSERT_EQ(mlusimLoadConfig("mlu370-x4"), cnrtSuccess);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  const std::vector<bfloat16> a = bf16_of(random<float>(64, 51));
  void* pa = to_device(a);
  void* py = dalloc(128);
  const TensorDesc d = desc(kBf16, {8, 8});
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, d, pa, d, pa, d, py), Status::kNotSupported);
  EXPECT_EQ(std::string(last_error_detail()),
            "add: a is bf16, which config 'mlu370-x4' does not compute (vfu.bf16 is false: this chip has no bf16 "
            "arithmetic; the MLU500 class, preset mlu590, has it)");
  MatmulParams prm;
  EXPECT_EQ(matmul(&h(), prm, d, pa, d, pa, nullptr, nullptr, d, py, nullptr, 0), Status::kNotSupported);
  EXPECT_NE(std::string(last_error_detail()).find("matmul: a is bf16, which config 'mlu370-x4'"), std::string::npos)
      << last_error_detail();
  void* p32 = dalloc(256);
  EXPECT_EQ(cast(&h(), d, pa, desc(DType::kFloat32, {8, 8}), p32), Status::kNotSupported);
  EXPECT_NE(std::string(last_error_detail()).find("cast: src is bf16"), std::string::npos) << last_error_detail();
  EXPECT_EQ(softmax_forward(&h(), SoftmaxMode::kSoftmax, 1, d, pa, d, py), Status::kNotSupported);
  // A transposing same-dtype copy streams bytes through NRAM: allowed.
  ASSERT_EQ(copy_strided(&h(), desc(kBf16, {8, 8}, {1, 8}), pa, d, py), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> t = from_device<bfloat16>(py, 64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) ASSERT_EQ(widen(t[i * 8 + j]), widen(a[j * 8 + i]));
}


// ---- convolution, batch norm, pooling, nll loss and dropout in bf16 ----------------------------
// Each computes in fp32 on chip and rounds once to bf16 on store (as the fp16 paths do): checked
// against naive double references over the same bf16 inputs, within one bf16 rounding (2^-8
// relative) plus the fp32 accumulation's error.

// A 4-d activation: logical NCHW values, stored NCHW or channels_last (NCHW dims, NHWC strides).
struct Act {
  std::int64_t n, c, h, w;
  bool cl;
  std::vector<float> v;  // logical NCHW order, bf16 values
  std::int64_t at(std::int64_t i, std::int64_t j, std::int64_t y, std::int64_t x) const {
    return ((i * c + j) * h + y) * w + x;
  }
  std::vector<std::int64_t> strides() const {
    return cl ? std::vector<std::int64_t>{h * w * c, 1, w * c, c} : std::vector<std::int64_t>{c * h * w, h * w, w, 1};
  }
  std::int64_t phys(std::int64_t i) const {  // physical offset of logical index i
    const std::int64_t x = i % w, y = i / w % h, j = i / (w * h) % c, b = i / (w * h * c);
    const std::vector<std::int64_t> s = strides();
    return b * s[0] + j * s[1] + y * s[2] + x * s[3];
  }
  std::vector<bfloat16> stored() const {
    std::vector<bfloat16> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[phys(static_cast<std::int64_t>(i))] = bfloat16(v[i]);
    return out;
  }
  std::vector<float> logical(const std::vector<bfloat16>& s) const {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = widen(s[phys(static_cast<std::int64_t>(i))]);
    return out;
  }
  TensorDesc d(DType t) const {
    TensorDesc out;
    EXPECT_EQ(out.set(t, {n, c, h, w}, strides()), Status::kSuccess);
    return out;
  }
};

Act act(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, bool cl, unsigned seed, float lo = -1.0f,
        float hi = 1.0f) {
  Act a{n, c, h, w, cl, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (std::int64_t i = 0; i < n * c * h * w; ++i) a.v.push_back(ref_round(dist(rng)));
  return a;
}

// |got - ref| within one bf16 rounding of ref plus fp32 accumulation over `mag` (sum of |terms|).
void expect_bf16_near(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                      const char* what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], ref[i], std::fabs(ref[i]) * 0x1p-8 + 1e-5 * mag[i] + 1e-6) << what << " at " << i;
}

struct ConvCase {
  const char* name;
  std::int64_t n, c, h, w, oc, k;
  ConvParams p;
  bool cl;
};

TEST_F(Bf16Ops, ConvolutionForwardAndBackwardMatchNaiveLoops) {
  auto prm = [](int pad, int stride, int groups) {
    ConvParams p;
    p.pad_h = p.pad_w = pad, p.stride_h = p.stride_w = stride, p.groups = groups;
    return p;
  };
  // NCHW: implicit GEMMs; channels_last: the direct kernels (stride 1 and 2); depthwise: the VFU.
  const ConvCase cases[] = {{"nchw", 2, 5, 7, 6, 6, 3, prm(1, 1, 1), false},
                            {"channels_last", 2, 8, 6, 6, 8, 3, prm(1, 1, 1), true},
                            {"channels_last_s2", 1, 6, 7, 7, 5, 3, prm(1, 2, 1), true},
                            {"depthwise", 2, 4, 6, 5, 4, 3, prm(1, 1, 4), false}};
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const std::int64_t cg = k.c / k.p.groups, og = k.oc / k.p.groups;
    const std::int64_t oh = (k.h + 2 * k.p.pad_h - k.k) / k.p.stride_h + 1, ow = (k.w + 2 * k.p.pad_w - k.k) / k.p.stride_w + 1;
    const Act x = act(k.n, k.c, k.h, k.w, k.cl, 71), w = act(k.oc, cg, k.k, k.k, k.cl, 72);
    const Act dy = act(k.n, k.oc, oh, ow, k.cl, 73);
    const TensorDesc xd = x.d(kBf16), wd = w.d(kBf16), yd = dy.d(kBf16);
    void* px = to_device(x.stored());
    void* pw = to_device(w.stored());
    void* pdy = to_device(dy.stored());
    void* py = dalloc(dy.v.size() * 2);
    void* pdx = dalloc(x.v.size() * 2);
    void* pdw = dalloc(w.v.size() * 2);
    std::size_t ws = 0, ws2 = 0;
    ASSERT_EQ(get_conv2d_forward_workspace_size(&h(), k.p, xd, wd, yd, &ws), Status::kSuccess) << last_error_detail();
    ASSERT_EQ(get_conv2d_backward_data_workspace_size(&h(), k.p, yd, wd, xd, &ws2), Status::kSuccess);
    ws = std::max(ws, ws2);
    ASSERT_EQ(get_conv2d_backward_weight_workspace_size(&h(), k.p, xd, yd, wd, &ws2), Status::kSuccess);
    ws = std::max(ws, ws2);
    void* pws = ws ? dalloc(ws) : nullptr;
    ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
    ASSERT_EQ(conv2d_forward(&h(), k.p, xd, px, wd, pw, nullptr, nullptr, yd, py, pws, ws), Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(conv2d_backward_data(&h(), k.p, yd, pdy, wd, pw, nullptr, nullptr, xd, pdx, pws, ws), Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(conv2d_backward_weight(&h(), k.p, xd, px, yd, pdy, wd, pdw, pws, ws), Status::kSuccess)
        << last_error_detail();
    const std::vector<float> y = dy.logical(from_device<bfloat16>(py, dy.v.size()));
    const std::vector<float> dx = x.logical(from_device<bfloat16>(pdx, x.v.size()));
    const std::vector<float> dw = w.logical(from_device<bfloat16>(pdw, w.v.size()));
    std::vector<double> ry(y.size()), my(y.size()), rdx(dx.size()), mdx(dx.size()), rdw(dw.size()), mdw(dw.size());
    for (std::int64_t b = 0; b < k.n; ++b)
      for (std::int64_t o = 0; o < k.oc; ++o)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox)
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t ky = 0; ky < k.k; ++ky)
                for (std::int64_t kx = 0; kx < k.k; ++kx) {
                  const std::int64_t iy = oy * k.p.stride_h - k.p.pad_h + ky, ix = ox * k.p.stride_w - k.p.pad_w + kx;
                  if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                  const std::int64_t xi = x.at(b, o / og * cg + ci, iy, ix), wi = w.at(o, ci, ky, kx);
                  const std::int64_t yi = dy.at(b, o, oy, ox);
                  const double xv = x.v[xi], wv = w.v[wi], gv = dy.v[yi];
                  ry[yi] += xv * wv, my[yi] += std::fabs(xv * wv);
                  rdx[xi] += gv * wv, mdx[xi] += std::fabs(gv * wv);
                  rdw[wi] += gv * xv, mdw[wi] += std::fabs(gv * xv);
                }
    expect_bf16_near(y, ry, my, "forward");
    expect_bf16_near(dx, rdx, mdx, "backward-data");
    expect_bf16_near(dw, rdw, mdw, "backward-weight");
    // Dense convolutions multiply on the bf16 TFU array (depthwise ones on the VFU, in fp32).
    std::size_t count = 0;
    ASSERT_EQ(mlusimGetKernelRecordCount(0, &count), cnrtSuccess);
    std::uint64_t bf16_macs = 0;
    for (std::size_t r = 0; r < count; ++r) {
      mlusimKernelRecord_t rec;
      ASSERT_EQ(mlusimGetKernelRecord(0, r, &rec), cnrtSuccess);
      bf16_macs += rec.macs_by_dtype[static_cast<int>(kBf16)];
    }
    if (k.p.groups == 1) {
      EXPECT_GE(bf16_macs, static_cast<std::uint64_t>(3 * k.n * k.oc * oh * ow * cg * k.k * k.k));
    }
  }
}

TEST_F(Bf16Ops, BatchNormTrainingInferenceAndBackwardMatchNaiveSums) {
  for (bool cl : {false, true}) {
    SCOPED_TRACE(cl ? "channels_last" : "nchw");
    const std::int64_t n = 3, c = 4, hw = 25, m = n * hw;
    const Act x = act(n, c, 5, 5, cl, 81, -2.0f, 3.0f), g = act(n, c, 5, 5, cl, 82);
    const std::vector<float> wt = {0.5f, 1.0f, -1.5f, 2.0f}, bs = {0.25f, -0.5f, 1.0f, 0.0f};
    std::vector<float> rmean(c, 0.0f), rvar(c, 1.0f);
    const TensorDesc xd = x.d(kBf16), cd = desc(DType::kFloat32, {c});  // fp32 parameters, as torch's bf16 BN
    void* px = to_device(x.stored());
    void* pg = to_device(g.stored());
    void* pwt = to_device(wt);
    void* pbs = to_device(bs);
    void* prm = to_device(rmean);
    void* prv = to_device(rvar);
    void* py = dalloc(x.v.size() * 2);
    void* pyi = dalloc(x.v.size() * 2);
    void* pdx = dalloc(x.v.size() * 2);
    void* psm = dalloc(c * 4);
    void* psi = dalloc(c * 4);
    void* pdw = dalloc(c * 4);
    void* pdb = dalloc(c * 4);
    ASSERT_EQ(batch_norm_forward_training(&h(), 0.1, 1e-5, xd, px, &cd, pwt, &cd, pbs, &cd, prm, &cd, prv, xd, py, &cd,
                                          psm, &cd, psi, nullptr, 0),
              Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(batch_norm_backward(&h(), true, 1e-5, xd, pg, xd, px, &cd, pwt, cd, psm, cd, psi, &xd, pdx, &cd, pdw, &cd,
                                  pdb, nullptr, 0),
              Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(batch_norm_forward_inference(&h(), 1e-5, xd, px, &cd, pwt, &cd, pbs, cd, prm, cd, prv, xd, pyi),
              Status::kSuccess)
        << last_error_detail();
    const std::vector<float> y = x.logical(from_device<bfloat16>(py, x.v.size()));
    const std::vector<float> yi = x.logical(from_device<bfloat16>(pyi, x.v.size()));
    const std::vector<float> dx = x.logical(from_device<bfloat16>(pdx, x.v.size()));
    const std::vector<float> run_mean = from_device<float>(prm, c), run_var = from_device<float>(prv, c);
    const std::vector<float> dw = from_device<float>(pdw, c), db = from_device<float>(pdb, c);
    for (std::int64_t j = 0; j < c; ++j) {
      double mean = 0, var = 0, sg = 0, sgx = 0;
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < hw; ++i) mean += x.v[x.at(b, j, 0, i)];
      mean /= double(m);
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < hw; ++i) var += std::pow(x.v[x.at(b, j, 0, i)] - mean, 2);
      var /= double(m);
      const double invstd = 1.0 / std::sqrt(var + 1e-5);
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < hw; ++i) {
          const std::int64_t e = x.at(b, j, 0, i);
          sg += g.v[e], sgx += g.v[e] * (x.v[e] - mean) * invstd;
        }
      EXPECT_NEAR(run_mean[j], 0.1 * mean, 1e-5) << j;  // fp32 statistics of the bf16 values
      EXPECT_NEAR(run_var[j], 0.9 + 0.1 * var * m / (m - 1), 1e-5) << j;
      EXPECT_NEAR(db[j], sg, 1e-4 * m) << j;
      EXPECT_NEAR(dw[j], sgx, 1e-4 * m) << j;
      const double ri = 1.0 / std::sqrt(run_var[j] + 1e-5);
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < hw; ++i) {
          const std::int64_t e = x.at(b, j, 0, i);
          const double xhat = (x.v[e] - mean) * invstd;
          const double ry = xhat * wt[j] + bs[j];
          ASSERT_NEAR(y[e], ry, std::fabs(ry) * 0x1p-8 + 1e-4) << j << "," << e;
          const double ryi = (x.v[e] - run_mean[j]) * ri * wt[j] + bs[j];
          ASSERT_NEAR(yi[e], ryi, std::fabs(ryi) * 0x1p-8 + 1e-4) << j << "," << e;
          const double rdx = (g.v[e] - sg / m - xhat * sgx / m) * invstd * wt[j];
          ASSERT_NEAR(dx[e], rdx, std::fabs(rdx) * 0x1p-8 + 1e-3) << j << "," << e;
        }
    }
  }
}

TEST_F(Bf16Ops, PoolingForwardAndBackwardMatchNaiveWindows) {
  const Act x = act(2, 3, 7, 6, false, 91, -3.0f, 3.0f);
  Pool2dParams p;
  p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1;
  std::int64_t oh = 0, ow = 0;
  ASSERT_EQ(pool2d_output_size(p, x.h, x.w, &oh, &ow), Status::kSuccess);
  const Act g = act(2, 3, oh, ow, false, 92);
  const TensorDesc xd = x.d(kBf16), yd = g.d(kBf16), id = desc(DType::kInt64, {2, 3, oh, ow});
  void* px = to_device(x.stored());
  void* pg = to_device(g.stored());
  void* pmax = dalloc(g.v.size() * 2);
  void* pavg = dalloc(g.v.size() * 2);
  void* pidx = dalloc(g.v.size() * 8);
  void* pdmax = dalloc(x.v.size() * 2);
  void* pdavg = dalloc(x.v.size() * 2);
  ASSERT_EQ(max_pool2d_forward(&h(), p, xd, px, yd, pmax, &id, pidx), Status::kSuccess) << last_error_detail();
  ASSERT_EQ(max_pool2d_backward(&h(), p, yd, pg, id, pidx, xd, pdmax), Status::kSuccess) << last_error_detail();
  ASSERT_EQ(avg_pool2d_forward(&h(), p, xd, px, yd, pavg), Status::kSuccess) << last_error_detail();
  ASSERT_EQ(avg_pool2d_backward(&h(), p, yd, pg, xd, pdavg), Status::kSuccess) << last_error_detail();
  const std::vector<float> ymax = g.logical(from_device<bfloat16>(pmax, g.v.size()));
  const std::vector<float> yavg = g.logical(from_device<bfloat16>(pavg, g.v.size()));
  const std::vector<std::int64_t> idx = from_device<std::int64_t>(pidx, g.v.size());
  const std::vector<float> dmax = x.logical(from_device<bfloat16>(pdmax, x.v.size()));
  const std::vector<float> davg = x.logical(from_device<bfloat16>(pdavg, x.v.size()));
  std::vector<double> rdmax(x.v.size()), rdavg(x.v.size()), mdavg(x.v.size());
  for (std::int64_t pl = 0; pl < 6; ++pl)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const std::int64_t o = (pl * oh + oy) * ow + ox;
        double mx = -1e30, sum = 0;
        std::int64_t arg = -1;
        for (std::int64_t ky = 0; ky < 3; ++ky)
          for (std::int64_t kx = 0; kx < 3; ++kx) {
            const std::int64_t iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
            if (iy < 0 || iy >= x.h || ix < 0 || ix >= x.w) continue;
            const float v = x.v[(pl * x.h + iy) * x.w + ix];
            sum += v;
            if (v > mx) mx = v, arg = iy * x.w + ix;
          }
        // The padded window counts 9 (count_include_pad) unless it overhangs the padded input.
        const std::int64_t y0 = oy * 2 - 1, x0 = ox * 2 - 1;
        const double cnt = double(std::min<std::int64_t>(y0 + 3, x.h + 1) - y0) * double(std::min<std::int64_t>(x0 + 3, x.w + 1) - x0);
        ASSERT_EQ(ymax[o], mx) << o;  // a max is exact in any format
        ASSERT_EQ(idx[o], arg) << o;
        ASSERT_NEAR(yavg[o], sum / cnt, std::fabs(sum / cnt) * 0x1p-8 + 1e-6) << o;
        rdmax[pl * x.h * x.w + arg] += g.v[o];
        for (std::int64_t ky = 0; ky < 3; ++ky)
          for (std::int64_t kx = 0; kx < 3; ++kx) {
            const std::int64_t iy = y0 + ky, ix = x0 + kx;
            if (iy < 0 || iy >= x.h || ix < 0 || ix >= x.w) continue;
            rdavg[(pl * x.h + iy) * x.w + ix] += g.v[o] / cnt;
            mdavg[(pl * x.h + iy) * x.w + ix] += std::fabs(g.v[o] / cnt);
          }
      }
  expect_bf16_near(dmax, rdmax, std::vector<double>(x.v.size(), 0.0), "max backward");
  expect_bf16_near(davg, rdavg, mdavg, "avg backward");
}

TEST_F(Bf16Ops, NllLossForwardAndBackwardMatchTheDefinition) {
  const std::int64_t n = 9, c = 7;
  std::vector<float> logp;
  for (float f : random<float>(n * c, 101, -4.0f, 0.0f)) logp.push_back(ref_round(f));
  std::vector<std::int64_t> target(n);
  for (std::int64_t i = 0; i < n; ++i) target[i] = (i * 3) % c;
  target[4] = -100;  // ignored
  void* pin = to_device(bf16_of(logp));
  void* pt = to_device(target);
  const TensorDesc ind = desc(kBf16, {n, c}), td = desc(DType::kInt64, {n}), sd = desc(kBf16, {});
  std::size_t ws = 0;
  ASSERT_EQ(get_nll_loss_workspace_size(&h(), ind, LossReduction::kMean, &ws), Status::kSuccess) << last_error_detail();
  void* pws = ws ? dalloc(ws) : nullptr;
  void* pout = dalloc(2);
  void* ptw = dalloc(2);
  void* pgo = to_device(bf16_of({2.0f}));
  void* pgi = dalloc(n * c * 2);
  ASSERT_EQ(nll_loss_forward(&h(), LossReduction::kMean, -100, ind, pin, td, pt, nullptr, nullptr, pws, ws, sd, pout,
                             sd, ptw),
            Status::kSuccess)
      << last_error_detail();
  ASSERT_EQ(nll_loss_backward(&h(), LossReduction::kMean, -100, sd, pgo, td, pt, nullptr, nullptr, sd, ptw, ind, pgi),
            Status::kSuccess)
      << last_error_detail();
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (target[i] >= 0) sum -= logp[i * c + target[i]];
  const float out = widen(from_device<bfloat16>(pout, 1)[0]);
  EXPECT_EQ(widen(from_device<bfloat16>(ptw, 1)[0]), 8.0f);
  EXPECT_NEAR(out, sum / 8, std::fabs(sum / 8) * 0x1p-8);
  const std::vector<bfloat16> gi = from_device<bfloat16>(pgi, n * c);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < c; ++j)
      ASSERT_EQ(widen(gi[i * c + j]), target[i] == j ? -0.25f : 0.0f) << i << "," << j;  // -2 / 8, exact
}

TEST_F(Bf16Ops, DropoutScalesKeptValuesAndRoundsOnce) {
  const std::int64_t n = 2000;
  const std::vector<float> xf = [&] {
    std::vector<float> v;
    for (float f : random<float>(n, 111, -2.0f, 2.0f)) v.push_back(ref_round(f));
    return v;
  }();
  void* px = to_device(bf16_of(xf));
  void* py = dalloc(n * 2);
  void* pm = dalloc(n);
  void* pdx = dalloc(n * 2);
  const TensorDesc d = desc(kBf16, {n}), md = desc(DType::kBool, {n});
  ASSERT_EQ(dropout_forward(&h(), 0.3, d, px, d, py, md, pm), Status::kSuccess) << last_error_detail();
  ASSERT_EQ(dropout_backward(&h(), 1.0 / 0.7, d, px, md, pm, d, pdx), Status::kSuccess) << last_error_detail();
  const std::vector<bfloat16> y = from_device<bfloat16>(py, n), dx = from_device<bfloat16>(pdx, n);
  const std::vector<std::uint8_t> mask = from_device<std::uint8_t>(pm, n);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    // x * (1 / 0.7) in fp32, one rounding to bf16.
    const float want = mask[i] ? ref_round(double(xf[i] * static_cast<float>(1.0 / 0.7))) : 0.0f;
    ASSERT_NEAR(widen(y[i]), want, std::fabs(want) * 0x1p-8) << i;
    ASSERT_EQ(widen(dx[i]), widen(y[i])) << i;  // the same product, the same rounding
  }
  EXPECT_NEAR(double(kept) / n, 0.7, 0.05);
}

// On mlu370-x4 each of these families refuses bf16 up front, naming the op and the preset.
TEST_F(Bf16Ops, Mlu370RejectsBf16ConvNormPoolLossAndDropout) {
  Handle::destroy(handle_);
  ASSERT_EQ(mlusimLoadConfig("mlu370-x4"), cnrtSuccess);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  void* p = dalloc(4096);
  const TensorDesc x = desc(kBf16, {1, 2, 4, 4}), c32 = desc(DType::kFloat32, {2});
  auto refused = [&](Status st, const std::string& op, const std::string& arg) {
    EXPECT_EQ(st, Status::kNotSupported) << op;
    EXPECT_EQ(std::string(last_error_detail()).rfind(op + ": " + arg + " is bf16, which config 'mlu370-x4' does not compute", 0), 0u)
        << last_error_detail();
  };
  ConvParams cp;
  refused(conv2d_forward(&h(), cp, x, p, desc(kBf16, {2, 2, 1, 1}), p, nullptr, nullptr, x, p, p, 4096),
          "conv2d_forward", "x");
  refused(batch_norm_forward_training(&h(), 0.1, 1e-5, x, p, &c32, p, &c32, p, nullptr, nullptr, nullptr, nullptr, x,
                                      p, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
          "batch_norm_forward_training", "x");
  Pool2dParams pp;
  pp.kernel_h = pp.kernel_w = pp.stride_h = pp.stride_w = 2;
  refused(avg_pool2d_forward(&h(), pp, x, p, desc(kBf16, {1, 2, 2, 2}), p), "avg_pool2d_forward", "x");
  refused(nll_loss_forward(&h(), LossReduction::kSum, -100, desc(kBf16, {2, 3}), p, desc(DType::kInt64, {2}), p,
                           nullptr, nullptr, p, 4096, desc(kBf16, {}), p, desc(kBf16, {}), p),
          "nll_loss_forward", "input");
  refused(dropout_forward(&h(), 0.5, x, p, x, p, desc(DType::kBool, {1, 2, 4, 4}), p), "dropout_forward", "x");
}

}  // namespace
}  // namespace mlusim::mlu::testing
