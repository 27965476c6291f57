// TFU arithmetic against naive reference loops (double / int64 accumulation, no Eigen).
//
// Tolerances: fp32 accumulation may differ from the exact sum by at most 1e-5 * sum|a*b| (plus
// 1e-6); an fp16 output adds one fp16 ulp of the result for the final rounding. int8 -> int32 is
// exact, including two's complement wrap-around of the int32 result.
#include "compute/tensor_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "compute/test_util.h"

namespace mlusim::sim::compute {
namespace {

using testing::half_ulp;
using testing::random_floats;
using testing::random_ints;
using testing::to_half;
using testing::wrap;

template <class T> double as_double(T v) { return static_cast<double>(static_cast<float>(v)); }
template <> double as_double<float>(float v) { return v; }

// Exact (double) reference of C = C0 + A x B and the magnitude sum|a*b| per output.
template <class T>
void ref_matmul(const std::vector<T>& a, const std::vector<T>& b, std::size_t m, std::size_t k,
                std::size_t n, bool b_transposed, const std::vector<double>& c0,
                std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(m * n, 0.0);
  mag.assign(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = c0.empty() ? 0.0 : c0[i * n + j], abs_acc = std::fabs(acc);
      for (std::size_t p = 0; p < k; ++p) {
        const double bv = as_double(b_transposed ? b[j * k + p] : b[p * n + j]);
        const double prod = as_double(a[i * k + p]) * bv;
        acc += prod;
        abs_acc += std::fabs(prod);
      }
      ref[i * n + j] = acc;
      mag[i * n + j] = abs_acc;
    }
}

struct Shape {
  std::size_t m, k, n;
};
const Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {64, 128, 48}, {3, 1, 9}};

TEST(Matmul, Fp32AllLayoutsAndAccumulate) {
  for (const Shape& s : kShapes) {
    for (bool bt : {false, true}) {
      for (bool acc : {false, true}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                     (bt ? " bT" : "") + (acc ? " acc" : ""));
        const auto a = random_floats(s.m * s.k, -1, 1, 10 + s.m);
        const auto b = random_floats(s.k * s.n, -1, 1, 20 + s.n);
        std::vector<float> c = random_floats(s.m * s.n, -1, 1, 30 + s.k);
        std::vector<double> c0;
        if (acc) c0.assign(c.begin(), c.end());
        std::vector<double> ref, mag;
        ref_matmul(a, b, s.m, s.k, s.n, bt, c0, ref, mag);
        matmul(DType::kFloat32, DType::kFloat32, c.data(), a.data(), b.data(), s.m, s.k, s.n, bt, acc);
        for (std::size_t i = 0; i < c.size(); ++i)
          ASSERT_NEAR(c[i], ref[i], 1e-5 * mag[i] + 1e-6) << "element " << i;
      }
    }
  }
}

TEST(Matmul, Fp16InputsAccumulateInFp32) {
  for (const Shape& s : kShapes) {
    for (bool bt : {false, true}) {
      for (bool acc : {false, true}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                     (bt ? " bT" : "") + (acc ? " acc" : ""));
        const auto a = to_half(random_floats(s.m * s.k, -2, 2, 40 + s.m));
        const auto b = to_half(random_floats(s.k * s.n, -2, 2, 50 + s.n));
        // fp32 output.
        std::vector<float> c32 = random_floats(s.m * s.n, -1, 1, 60);
        std::vector<double> c0;
        if (acc) c0.assign(c32.begin(), c32.end());
        std::vector<double> ref, mag;
        ref_matmul(a, b, s.m, s.k, s.n, bt, c0, ref, mag);
        matmul(DType::kFloat16, DType::kFloat32, c32.data(), a.data(), b.data(), s.m, s.k, s.n, bt, acc);
        for (std::size_t i = 0; i < c32.size(); ++i)
          ASSERT_NEAR(c32[i], ref[i], 1e-5 * mag[i] + 1e-6) << "element " << i;
        // fp16 output: one rounding at the end.
        std::vector<half> c16 = to_half(random_floats(s.m * s.n, -1, 1, 61));
        c0.clear();
        if (acc)
          for (half h : c16) c0.push_back(static_cast<float>(h));
        ref_matmul(a, b, s.m, s.k, s.n, bt, c0, ref, mag);
        matmul(DType::kFloat16, DType::kFloat16, c16.data(), a.data(), b.data(), s.m, s.k, s.n, bt, acc);
        for (std::size_t i = 0; i < c16.size(); ++i)
          ASSERT_LE(std::fabs(static_cast<float>(c16[i]) - ref[i]), half_ulp(ref[i]) + 1e-5 * mag[i] + 1e-6)
              << "element " << i;
      }
    }
  }
}

// A stored depth-major, [K,M]: the product of the A it holds transposed, for fp32, fp16 -> fp32
// and int8, both B layouts, with and without accumulation. The reference reads A as [M,K] from an
// explicit transpose of the stored array.
template <class T> std::vector<T> k_major(const std::vector<T>& a, std::size_t m, std::size_t k) {
  std::vector<T> t(a.size());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) t[p * m + i] = a[i * k + p];
  return t;
}

TEST(Matmul, AKMajorMultipliesTheTransposeOfWhatItHolds) {
  for (const Shape& s : kShapes) {
    for (bool bt : {false, true}) {
      for (bool acc : {false, true}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                     (bt ? " bT" : "") + (acc ? " acc" : ""));
        const auto a = random_floats(s.m * s.k, -1, 1, 110 + s.m), b = random_floats(s.k * s.n, -1, 1, 120 + s.n);
        std::vector<float> c = random_floats(s.m * s.n, -1, 1, 130);
        std::vector<double> c0, ref, mag;
        if (acc) c0.assign(c.begin(), c.end());
        ref_matmul(a, b, s.m, s.k, s.n, bt, c0, ref, mag);
        const std::vector<float> at = k_major(a, s.m, s.k);
        matmul_a_k_major(DType::kFloat32, DType::kFloat32, c.data(), at.data(), b.data(), s.m, s.k, s.n, bt, acc);
        for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], ref[i], 1e-5 * mag[i] + 1e-6) << "fp32 " << i;

        const auto ah = to_half(random_floats(s.m * s.k, -2, 2, 140 + s.m));
        const auto bh = to_half(random_floats(s.k * s.n, -2, 2, 150 + s.n));
        std::vector<float> c32(s.m * s.n, 0.5f);
        c0.assign(acc ? s.m * s.n : 0, 0.5);
        ref_matmul(ah, bh, s.m, s.k, s.n, bt, c0, ref, mag);
        const std::vector<half> aht = k_major(ah, s.m, s.k);
        matmul_a_k_major(DType::kFloat16, DType::kFloat32, c32.data(), aht.data(), bh.data(), s.m, s.k, s.n, bt, acc);
        for (std::size_t i = 0; i < c32.size(); ++i)
          ASSERT_NEAR(c32[i], ref[i], 1e-5 * mag[i] + 1e-6) << "fp16 " << i;

        const auto ai = random_ints<std::int8_t>(s.m * s.k, -128, 127, 160 + s.m);
        const auto bi = random_ints<std::int8_t>(s.k * s.n, -128, 127, 170 + s.n);
        std::vector<std::int32_t> ci(s.m * s.n, 7), want(s.m * s.n, 0);
        for (std::size_t i = 0; i < s.m; ++i)
          for (std::size_t j = 0; j < s.n; ++j) {
            std::int64_t v = acc ? 7 : 0;
            for (std::size_t p = 0; p < s.k; ++p)
              v += std::int64_t{ai[i * s.k + p]} * (bt ? bi[j * s.k + p] : bi[p * s.n + j]);
            want[i * s.n + j] = static_cast<std::int32_t>(v);
          }
        const std::vector<std::int8_t> ait = k_major(ai, s.m, s.k);
        matmul_a_k_major(DType::kInt8, DType::kInt32, ci.data(), ait.data(), bi.data(), s.m, s.k, s.n, bt, acc);
        EXPECT_EQ(ci, want);
      }
    }
  }
}

void ref_matmul_i8(const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b, std::size_t m,
                   std::size_t k, std::size_t n, bool bt, const std::vector<std::int32_t>* c0,
                   std::vector<std::int32_t>& out) {
  out.assign(m * n, 0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int64_t acc = c0 ? (*c0)[i * n + j] : 0;
      for (std::size_t p = 0; p < k; ++p)
        acc += std::int64_t{a[i * k + p]} * (bt ? b[j * k + p] : b[p * n + j]);
      out[i * n + j] = wrap<std::int32_t>(acc);
    }
}

TEST(Matmul, Int8IsExact) {
  for (const Shape& s : kShapes) {
    for (bool bt : {false, true}) {
      for (bool acc : {false, true}) {
        const auto a = random_ints<std::int8_t>(s.m * s.k, -128, 127, 70 + s.m);
        const auto b = random_ints<std::int8_t>(s.k * s.n, -128, 127, 80 + s.n);
        std::vector<std::int32_t> c = random_ints<std::int32_t>(s.m * s.n, -100000, 100000, 90);
        const std::vector<std::int32_t> c0 = c;
        std::vector<std::int32_t> want;
        ref_matmul_i8(a, b, s.m, s.k, s.n, bt, acc ? &c0 : nullptr, want);
        matmul(DType::kInt8, DType::kInt32, c.data(), a.data(), b.data(), s.m, s.k, s.n, bt, acc);
        EXPECT_EQ(c, want) << s.m << "x" << s.k << "x" << s.n << (bt ? " bT" : "") << (acc ? " acc" : "");
      }
    }
  }
}

TEST(Matmul, Int8LongReductionWrapsLikeInt32) {
  // K = 140000 of (-128)*(-128) = 2,293,760,000 > INT32_MAX: the result wraps, exactly.
  const std::size_t m = 2, k = 140000, n = 3;
  std::vector<std::int8_t> a(m * k, -128), b(k * n, -128);
  a[5] = 77;
  b[7] = -3;
  std::vector<std::int32_t> c(m * n), want;
  ref_matmul_i8(a, b, m, k, n, false, nullptr, want);
  matmul(DType::kInt8, DType::kInt32, c.data(), a.data(), b.data(), m, k, n, false, false);
  EXPECT_EQ(c, want);
  EXPECT_EQ(c[m * n - 1], wrap<std::int32_t>(std::int64_t{140000} * 16384));
}

TEST(Matmul, OutputMayAliasAnInput) {
  const std::size_t s = 9;
  const auto a = random_floats(s * s, -1, 1, 100), b = random_floats(s * s, -1, 1, 101);
  std::vector<double> ref, mag;
  ref_matmul(a, b, s, s, s, false, {}, ref, mag);
  std::vector<float> c = a;  // C overwrites A
  matmul(DType::kFloat32, DType::kFloat32, c.data(), c.data(), b.data(), s, s, s, false, false);
  for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], ref[i], 1e-5 * mag[i] + 1e-6);
  ref_matmul(a, b, s, s, s, true, std::vector<double>(b.begin(), b.end()), ref, mag);
  c = b;  // C += A x C^T
  matmul(DType::kFloat32, DType::kFloat32, c.data(), a.data(), c.data(), s, s, s, true, true);
  for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], ref[i], 1e-5 * mag[i] + 1e-6);
  const auto ah = to_half(a), bh = to_half(b);
  ref_matmul(ah, bh, s, s, s, false, {}, ref, mag);
  std::vector<half> ch = bh;  // fp16 C overwrites B
  matmul(DType::kFloat16, DType::kFloat16, ch.data(), ah.data(), ch.data(), s, s, s, false, false);
  for (std::size_t i = 0; i < ch.size(); ++i)
    ASSERT_LE(std::fabs(static_cast<float>(ch[i]) - ref[i]), half_ulp(ref[i]) + 1e-5 * mag[i] + 1e-6);
}

TEST(Matmul, EmptyReductionAndEmptyOutput) {
  std::vector<float> c(6, 3.0f);
  matmul(DType::kFloat32, DType::kFloat32, c.data(), nullptr, nullptr, 2, 0, 3, false, true);
  EXPECT_EQ(c, std::vector<float>(6, 3.0f));
  matmul(DType::kFloat32, DType::kFloat32, c.data(), nullptr, nullptr, 2, 0, 3, false, false);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
  std::vector<std::int32_t> ci(6, 5);
  matmul(DType::kInt8, DType::kInt32, ci.data(), nullptr, nullptr, 2, 0, 3, true, false);
  EXPECT_EQ(ci, std::vector<std::int32_t>(6, 0));
  std::vector<half> ch(6, half(2.0f));
  matmul(DType::kFloat16, DType::kFloat16, ch.data(), nullptr, nullptr, 2, 0, 3, false, true);
  EXPECT_EQ(static_cast<float>(ch[5]), 2.0f);
  matmul(DType::kFloat32, DType::kFloat32, nullptr, nullptr, nullptr, 0, 4, 3, false, false);  // no-op
}

TEST(Matmul, UnsupportedDtypesNameBoth) {
  float buf[4] = {};
  for (auto [in, out] : {std::pair{DType::kInt32, DType::kInt32}, std::pair{DType::kFloat32, DType::kFloat16},
                         std::pair{DType::kInt8, DType::kInt8}, std::pair{DType::kFloat64, DType::kFloat64},
                         std::pair{DType::kBool, DType::kInt32}}) {
    try {
      matmul(in, out, buf, buf, buf, 1, 1, 1, false, false);
      ADD_FAILURE() << "must throw";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + std::string(dtype_name(in)) + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'" + std::string(dtype_name(out)) + "'"), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(conv2d(DType::kInt32, DType::kInt32, buf, buf, buf, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, false),
               std::invalid_argument);
}

// ---- conv2d --------------------------------------------------------------------------------------

struct ConvCase {
  std::size_t ih, iw, c, oc, kh, kw, sh, sw, dh, dw;
};
const ConvCase kConvs[] = {
    {9, 11, 3, 5, 3, 2, 2, 1, 1, 2},  // strided, dilated, non-square
    {5, 7, 6, 4, 1, 1, 1, 1, 1, 1},   // 1x1 stride 1: GEMM on the input as is
    {6, 5, 2, 3, 1, 1, 2, 2, 1, 1},   // 1x1 stride 2: through im2col
    {4, 4, 8, 7, 4, 4, 1, 1, 1, 1},   // kernel covers the input: one output pixel
    {12, 10, 5, 9, 3, 3, 3, 2, 2, 1},
};

// out[oh,ow,o] = out0 + sum in[oh*sh + kh*dh, ow*sw + kw*dw, c] * w[o,kh,kw,c]  (double / int64)
template <class T, class Acc>
void ref_conv(const ConvCase& p, const std::vector<T>& in, const std::vector<T>& w, std::vector<Acc>& out,
              std::vector<double>& mag, std::size_t& oh, std::size_t& ow) {
  oh = (p.ih - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  ow = (p.iw - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  out.assign(oh * ow * p.oc, Acc{});
  mag.assign(oh * ow * p.oc, 0.0);
  for (std::size_t y = 0; y < oh; ++y)
    for (std::size_t x = 0; x < ow; ++x)
      for (std::size_t o = 0; o < p.oc; ++o) {
        Acc acc{};
        double abs_acc = 0;
        for (std::size_t ky = 0; ky < p.kh; ++ky)
          for (std::size_t kx = 0; kx < p.kw; ++kx)
            for (std::size_t ch = 0; ch < p.c; ++ch) {
              const std::size_t iy = y * p.sh + ky * p.dh, ix = x * p.sw + kx * p.dw;
              const T iv = in[(iy * p.iw + ix) * p.c + ch];
              const T wv = w[((o * p.kh + ky) * p.kw + kx) * p.c + ch];
              if constexpr (std::is_same_v<Acc, double>) {
                acc += as_double(iv) * as_double(wv);
                abs_acc += std::fabs(as_double(iv) * as_double(wv));
              } else {
                acc += std::int64_t{iv} * std::int64_t{wv};
              }
            }
        out[(y * ow + x) * p.oc + o] = acc;
        mag[(y * ow + x) * p.oc + o] = abs_acc;
      }
}

std::string describe(const ConvCase& p) {
  return std::to_string(p.ih) + "x" + std::to_string(p.iw) + "x" + std::to_string(p.c) + " -> " +
         std::to_string(p.oc) + " k" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + " s" +
         std::to_string(p.sh) + "," + std::to_string(p.sw) + " d" + std::to_string(p.dh) + "," +
         std::to_string(p.dw);
}

TEST(Conv2d, Fp32MatchesNaiveLoops) {
  for (const ConvCase& p : kConvs) {
    SCOPED_TRACE(describe(p));
    const auto in = random_floats(p.ih * p.iw * p.c, -1, 1, 110);
    const auto w = random_floats(p.oc * p.kh * p.kw * p.c, -1, 1, 111);
    std::vector<double> ref, mag;
    std::size_t oh, ow;
    ref_conv(p, in, w, ref, mag, oh, ow);
    EXPECT_EQ(conv_out_size(p.ih, p.kh, p.sh, p.dh), oh);
    EXPECT_EQ(conv_out_size(p.iw, p.kw, p.sw, p.dw), ow);
    std::vector<float> out(oh * ow * p.oc, 123.0f);
    conv2d(DType::kFloat32, DType::kFloat32, out.data(), in.data(), w.data(), p.ih, p.iw, p.c, p.oc,
           p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/false, false);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5 * mag[i] + 1e-6) << i;
    // Accumulate adds onto the previous output.
    conv2d(DType::kFloat32, DType::kFloat32, out.data(), in.data(), w.data(), p.ih, p.iw, p.c, p.oc,
           p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/false, true);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], 2 * ref[i], 4e-5 * mag[i] + 1e-6) << i;
  }
}

TEST(Conv2d, KMajorWeightsGiveTheSameConvolution) {
  for (const ConvCase& p : kConvs) {
    SCOPED_TRACE(describe(p));
    const auto in = to_half(random_floats(p.ih * p.iw * p.c, -1, 1, 140));
    const auto w = to_half(random_floats(p.oc * p.kh * p.kw * p.c, -1, 1, 141));
    std::vector<half> wk(w.size());  // [OC,KH,KW,C] -> [KH,KW,C,OC]
    const std::size_t depth = p.kh * p.kw * p.c;
    for (std::size_t o = 0; o < p.oc; ++o)
      for (std::size_t d = 0; d < depth; ++d) wk[d * p.oc + o] = w[o * depth + d];
    std::vector<double> ref, mag;
    std::size_t oh, ow;
    ref_conv(p, in, w, ref, mag, oh, ow);
    std::vector<float> out(oh * ow * p.oc, 7.0f);
    conv2d(DType::kFloat16, DType::kFloat32, out.data(), in.data(), wk.data(), p.ih, p.iw, p.c, p.oc,
           p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/true, false);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5 * mag[i] + 1e-6) << i;
  }
}

TEST(Conv2d, Fp16ToFp16AndFp32) {
  for (const ConvCase& p : kConvs) {
    SCOPED_TRACE(describe(p));
    const auto in = to_half(random_floats(p.ih * p.iw * p.c, -1, 1, 120));
    const auto w = to_half(random_floats(p.oc * p.kh * p.kw * p.c, -1, 1, 121));
    std::vector<double> ref, mag;
    std::size_t oh, ow;
    ref_conv(p, in, w, ref, mag, oh, ow);
    std::vector<float> o32(oh * ow * p.oc);
    conv2d(DType::kFloat16, DType::kFloat32, o32.data(), in.data(), w.data(), p.ih, p.iw, p.c, p.oc,
           p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/false, false);
    for (std::size_t i = 0; i < o32.size(); ++i) ASSERT_NEAR(o32[i], ref[i], 1e-5 * mag[i] + 1e-6) << i;
    std::vector<half> o16(oh * ow * p.oc);
    conv2d(DType::kFloat16, DType::kFloat16, o16.data(), in.data(), w.data(), p.ih, p.iw, p.c, p.oc,
           p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/false, false);
    for (std::size_t i = 0; i < o16.size(); ++i)
      ASSERT_LE(std::fabs(static_cast<float>(o16[i]) - ref[i]), half_ulp(ref[i]) + 1e-5 * mag[i] + 1e-6) << i;
  }
}

TEST(Conv2d, Int8IsExact) {
  for (const ConvCase& p : kConvs) {
    SCOPED_TRACE(describe(p));
    const auto in = random_ints<std::int8_t>(p.ih * p.iw * p.c, -128, 127, 130);
    const auto w = random_ints<std::int8_t>(p.oc * p.kh * p.kw * p.c, -128, 127, 131);
    std::vector<std::int64_t> ref;
    std::vector<double> mag;
    std::size_t oh, ow;
    ref_conv(p, in, w, ref, mag, oh, ow);
    std::vector<std::int32_t> out = random_ints<std::int32_t>(oh * ow * p.oc, -1000, 1000, 132);
    const std::vector<std::int32_t> out0 = out;
    conv2d(DType::kInt8, DType::kInt32, out.data(), in.data(), w.data(), p.ih, p.iw, p.c, p.oc, p.kh,
           p.kw, p.sh, p.sw, p.dh, p.dw, /*weights_k_major=*/false, true);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], wrap<std::int32_t>(out0[i] + ref[i])) << i;
  }
}

TEST(Conv2d, RejectsKernelsThatDoNotFit) {
  float buf[64] = {};
  EXPECT_THROW(conv_out_size(4, 3, 1, 2), std::invalid_argument);  // dilated extent 5 > 4
  EXPECT_THROW(conv_out_size(4, 3, 0, 1), std::invalid_argument);
  EXPECT_THROW(conv_out_size(4, 0, 1, 1), std::invalid_argument);
  EXPECT_EQ(conv_out_size(5, 3, 2, 2), 1u);
  EXPECT_THROW(conv2d(DType::kFloat32, DType::kFloat32, buf, buf, buf, 2, 8, 1, 1, 3, 1, 1, 1, 1, 1, false, false),
               std::invalid_argument);
}

}  // namespace
}  // namespace mlusim::sim::compute
