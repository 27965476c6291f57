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
#include <string>

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

}  // namespace
}  // namespace mlusim::mlu::testing
