// libmlu int8 quantization (quant.h) against naive host references written here: quantize and
// dequantize as torch's quantized_decomposed ops compute them (fp32 steps, round half to even,
// clamp), the int8 convolution / linear as exact int32 sums followed by quant.h's requantization
// steps in fp32, bit for bit. Tiling is exercised on tiny (64 KiB NRAM/WRAM, 8 cores): input
// channels split over steps, a narrower last output-channel chunk. Error paths name op and argument;
// a preset without an int8 TFU array is refused naming the op and the config; a flipped DMA bit
// changes the result (the numbers come out of the simulated memories).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

std::int8_t ref_quantize(float x, float inv, std::int64_t zp, std::int64_t qmin = -128, std::int64_t qmax = 127) {
  const float r = std::nearbyint(x * inv);  // fp32 product, round half to even (default FP mode)
  if (std::isnan(r)) return static_cast<std::int8_t>(zp);
  return static_cast<std::int8_t>(std::clamp<double>(static_cast<double>(r) + static_cast<double>(zp),
                                                     static_cast<double>(qmin), static_cast<double>(qmax)));
}

std::vector<std::int8_t> random_int8(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(d(rng));
  return v;
}

class Quant : public MluTest {
 protected:
  // Requantization of one int32 sum, quant.h's steps in order.
  static std::int8_t requant(std::int32_t acc, float x_scale, float w_scale, const float* bias, bool relu,
                             double y_scale, std::int64_t y_zp) {
    const float inv = static_cast<float>(1.0 / y_scale);
    const float m = (w_scale * x_scale) * inv;
    const float c = bias ? *bias * inv + static_cast<float>(y_zp) : static_cast<float>(y_zp);
    float v = static_cast<float>(acc) * m + c;
    if (relu) v = std::max(v, static_cast<float>(y_zp));
    return static_cast<std::int8_t>(std::clamp(std::nearbyint(v), -128.0f, 127.0f));
  }
};

TEST_F(Quant, QuantizePerTensorRoundsHalfToEvenAndClamps) {
  std::vector<float> x = random<float>(5000, 1, -3.0f, 3.0f);
  const double scale = 0.03125;  // 1 / 32: x * 32 is exact, so ties are real ties
  x[0] = 2.5f / 32, x[1] = 3.5f / 32, x[2] = -2.5f / 32, x[3] = 1e9f, x[4] = -1e9f, x[5] = 0.0f;
  const std::int64_t zp = -5;
  void* px = to_device(x);
  void* py = dalloc(x.size());
  QuantParams q;
  q.scale = scale, q.zero_point = zp;
  const TensorDesc dx = desc(DType::kFloat32, {50, 100}), dy = desc(DType::kInt8, {50, 100});
  ASSERT_EQ(quantize(&h(), q, dx, px, dy, py), Status::kSuccess) << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, x.size());
  const float inv = static_cast<float>(1.0 / scale);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], ref_quantize(x[i], inv, zp)) << i << ": " << x[i];
  EXPECT_EQ(y[0], 2 - 5);  // 2.5 -> 2
  EXPECT_EQ(y[1], 4 - 5);  // 3.5 -> 4
  EXPECT_EQ(y[2], -2 - 5);
  EXPECT_EQ(y[3], 127);
  EXPECT_EQ(y[4], -128);
  // Dequantize back: (q - zp) * scale in fp32, exactly.
  void* pz = dalloc(x.size() * 4);
  ASSERT_EQ(dequantize(&h(), q, dy, py, dx, pz), Status::kSuccess) << last_error_detail();
  const std::vector<float> z = from_device<float>(pz, x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(z[i], (static_cast<float>(y[i]) - static_cast<float>(zp)) * static_cast<float>(scale)) << i;
}

TEST_F(Quant, PerChannelAlongAMiddleAxis) {
  const std::int64_t a = 3, c = 4, b = 70;  // [3, 4, 70], axis 1
  const std::vector<float> x = random<float>(a * c * b, 2, -2.0f, 2.0f);
  const std::vector<float> scales = {0.01f, 0.02f, 0.0173f, 0.05f};
  const std::vector<std::int32_t> zps = {0, -3, 7, 127};
  void* px = to_device(x);
  void* ps = to_device(scales);
  void* pzp = to_device(zps);
  void* py = dalloc(x.size());
  void* pback = dalloc(x.size() * 4);
  const TensorDesc dx = desc(DType::kFloat32, {a, c, b}), dy = desc(DType::kInt8, {a, c, b});
  const TensorDesc ds = desc(DType::kFloat32, {c}), dz = desc(DType::kInt32, {c});
  QuantParams q;
  q.axis = 1, q.scales = &ds, q.scales_ptr = ps, q.zero_points = &dz, q.zero_points_ptr = pzp;
  ASSERT_EQ(quantize(&h(), q, dx, px, dy, py), Status::kSuccess) << last_error_detail();
  ASSERT_EQ(dequantize(&h(), q, dy, py, dx, pback), Status::kSuccess) << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, x.size());
  const std::vector<float> back = from_device<float>(pback, x.size());
  for (std::int64_t i = 0; i < a * c * b; ++i) {
    const std::size_t ch = static_cast<std::size_t>((i / b) % c);
    ASSERT_EQ(y[i], ref_quantize(x[i], 1.0f / scales[ch], zps[ch])) << i;
    ASSERT_EQ(back[i], (static_cast<float>(y[i]) - static_cast<float>(zps[ch])) * scales[ch]) << i;
  }
}

TEST_F(Quant, AddDequantizesAddsAndRequantizes) {
  const std::size_t n = 9000;
  const std::vector<std::int8_t> a = random_int8(n, 5), b = random_int8(n, 6);
  void* pa = to_device(a);
  void* pb = to_device(b);
  void* py = dalloc(n);
  QAddParams p;
  p.a.scale = 0.031, p.a.zero_point = -128, p.b.scale = 0.017, p.b.zero_point = 9;
  p.y.scale = 0.043, p.y.zero_point = -20, p.relu = true;
  const TensorDesc d = desc(DType::kInt8, {90, 100});
  ASSERT_EQ(qadd(&h(), p, d, pa, d, pb, d, py), Status::kSuccess) << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, n);
  for (std::size_t i = 0; i < n; ++i) {
    const float va = (static_cast<float>(a[i]) + 128.0f) * 0.031f, vb = (static_cast<float>(b[i]) - 9.0f) * 0.017f;
    ASSERT_EQ(y[i], ref_quantize(std::max(va + vb, 0.0f), static_cast<float>(1.0 / 0.043), -20)) << i;
  }
}

TEST_F(Quant, MaxPoolOverInt8Rows) {
  const std::int64_t n = 2, c = 5, hh = 9, ww = 11, k = 3, st = 2, pad = 1;
  const std::int64_t oh = (hh + 2 * pad - k) / st + 1, ow = (ww + 2 * pad - k) / st + 1;
  const std::vector<std::int8_t> x = random_int8(n * hh * ww * c, 7);
  void* px = to_device(x);
  void* py = dalloc(n * oh * ow * c);
  TensorDesc dx, dy;
  ASSERT_EQ(dx.set(DType::kInt8, {n, hh, ww, c}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(dy.set(DType::kInt8, {n, oh, ow, c}, Layout::kNHWC), Status::kSuccess);
  QPoolParams p;
  p.kernel_h = p.kernel_w = k, p.stride_h = p.stride_w = st, p.pad_h = p.pad_w = pad;
  ASSERT_EQ(qmax_pool2d(&h(), p, dx, px, dy, py), Status::kSuccess) << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, n * oh * ow * c);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t ch = 0; ch < c; ++ch) {
          int m = -1000;
          for (std::int64_t r = 0; r < k; ++r)
            for (std::int64_t s = 0; s < k; ++s) {
              const std::int64_t ih = i * st - pad + r, iw = j * st - pad + s;
              if (ih >= 0 && ih < hh && iw >= 0 && iw < ww) m = std::max<int>(m, x[((b * hh + ih) * ww + iw) * c + ch]);
            }
          ASSERT_EQ(y[((b * oh + i) * ow + j) * c + ch], m) << b << "," << i << "," << j << "," << ch;
        }
  p.pad_h = 2;  // more than kernel / 2
  EXPECT_EQ(qmax_pool2d(&h(), p, dx, px, dy, py), Status::kBadParam);
  EXPECT_EQ(std::string(last_error_detail()),
            "qmax_pool2d: kernel, stride and dilation must be >= 1 and padding in [0, kernel / 2]");
}

TEST_F(Quant, WeightSumsAreExact) {
  for (std::int64_t len : {std::int64_t{27}, std::int64_t{5000}}) {  // rows in blocks; one row in pieces
    const std::int64_t oc = 13;
    const std::vector<std::int8_t> w = random_int8(oc * len, 3);
    void* pw = to_device(w);
    void* ps = dalloc(oc * 4);
    ASSERT_EQ(int8_weight_sums(&h(), desc(DType::kInt8, {oc, len}), pw, desc(DType::kInt32, {oc}), ps),
              Status::kSuccess)
        << last_error_detail();
    const std::vector<std::int32_t> s = from_device<std::int32_t>(ps, oc);
    for (std::int64_t o = 0; o < oc; ++o) {
      std::int32_t ref = 0;
      for (std::int64_t k = 0; k < len; ++k) ref += w[o * len + k];
      EXPECT_EQ(s[o], ref) << "len " << len << " channel " << o;
    }
  }
}

struct ConvCase {
  std::int64_t n, c, h, w, oc, kh, kw, stride, pad, dil, x_zp;
  bool bias, relu;
  bool staged;  // the plan stages the weights per cluster in SRAM (UNION1)
  const char* name;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class QConv : public Quant, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(QConv, MatchesTheExactIntegerReference) {
  const ConvCase k = GetParam();
  const std::int64_t oh = (k.h + 2 * k.pad - k.dil * (k.kh - 1) - 1) / k.stride + 1;
  const std::int64_t ow = (k.w + 2 * k.pad - k.dil * (k.kw - 1) - 1) / k.stride + 1;
  const std::vector<std::int8_t> x = random_int8(k.n * k.h * k.w * k.c, 10);      // NHWC
  const std::vector<std::int8_t> w = random_int8(k.oc * k.kh * k.kw * k.c, 11);   // [OC, KH, KW, C]
  const std::vector<float> ws = random<float>(k.oc, 12, 0.001f, 0.01f), bias = random<float>(k.oc, 13, -4.0f, 4.0f);
  std::vector<std::int32_t> sums(k.oc, 0);
  for (std::int64_t o = 0; o < k.oc; ++o)
    for (std::int64_t i = 0; i < k.kh * k.kw * k.c; ++i) sums[o] += w[o * k.kh * k.kw * k.c + i];
  const double x_scale = 0.05, y_scale = 0.07;
  const std::int64_t y_zp = -9;
  void* px = to_device(x);
  void* pw = to_device(w);
  void* pws = to_device(ws);
  void* pb = to_device(bias);
  void* psum = to_device(sums);
  void* py = dalloc(k.n * oh * ow * k.oc);
  const TensorDesc dws = desc(DType::kFloat32, {k.oc}), dbias = desc(DType::kFloat32, {k.oc}),
                   dsum = desc(DType::kInt32, {k.oc});
  Int8Output o;
  o.x_scale = x_scale, o.x_zero_point = k.x_zp, o.y_scale = y_scale, o.y_zero_point = y_zp, o.relu = k.relu;
  o.w_scales = &dws, o.w_scales_ptr = pws, o.w_sums = &dsum, o.w_sums_ptr = psum;
  if (k.bias) o.bias = &dbias, o.bias_ptr = pb;
  ConvParams p;
  p.stride_h = p.stride_w = static_cast<int>(k.stride);
  p.pad_h = p.pad_w = static_cast<int>(k.pad);
  p.dilation_h = p.dilation_w = static_cast<int>(k.dil);
  TensorDesc dx, dw, dy;
  ASSERT_EQ(dx.set(DType::kInt8, {k.n, k.h, k.w, k.c}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(dw.set(DType::kInt8, {k.oc, k.kh, k.kw, k.c}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(dy.set(DType::kInt8, {k.n, oh, ow, k.oc}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
  ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
  ASSERT_EQ(qconv2d(&h(), p, o, dx, px, dw, pw, dy, py), Status::kSuccess) << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, k.n * oh * ow * k.oc);
  // Which kernel variant ran: the memory cores' DMA moves the weights only in the staged one.
  mlusimDeviceStats_t stats;
  ASSERT_EQ(mlusimGetDeviceStats(0, &stats), cnrtSuccess);
  EXPECT_EQ(stats.engine_intrinsics[5] > 0, k.staged);
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t oc = 0; oc < k.oc; ++oc) {
          std::int32_t acc = 0;
          for (std::int64_t r = 0; r < k.kh; ++r)
            for (std::int64_t s = 0; s < k.kw; ++s)
              for (std::int64_t c = 0; c < k.c; ++c) {
                const std::int64_t ih = i * k.stride - k.pad + r * k.dil, iw = j * k.stride - k.pad + s * k.dil;
                const std::int32_t xv = ih < 0 || ih >= k.h || iw < 0 || iw >= k.w
                                            ? static_cast<std::int32_t>(k.x_zp)
                                            : x[((n * k.h + ih) * k.w + iw) * k.c + c];
                acc += (xv - static_cast<std::int32_t>(k.x_zp)) * w[((oc * k.kh + r) * k.kw + s) * k.c + c];
              }
          const std::int8_t want = requant(acc, static_cast<float>(x_scale), ws[oc], k.bias ? &bias[oc] : nullptr,
                                           k.relu, y_scale, y_zp);
          ASSERT_EQ(y[((n * oh + i) * ow + j) * k.oc + oc], want) << n << "," << i << "," << j << "," << oc;
        }
  // The op's record: the convolution's MACs.
  const OpRecord& rec = h().ops().back();
  EXPECT_EQ(rec.name, "qconv2d");
  EXPECT_EQ(rec.macs, static_cast<std::uint64_t>(k.n * oh * ow * k.oc * k.kh * k.kw * k.c));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QConv,
    ::testing::Values(ConvCase{2, 5, 7, 6, 9, 3, 3, 2, 1, 1, 3, true, true, false, "Stride2ZeroPointPadding"},
                      ConvCase{1, 1024, 5, 5, 37, 3, 3, 1, 1, 1, -128, true, false, false, "InputChannelSteps"},  // any chunk > WRAM
                      ConvCase{1, 16, 9, 9, 8, 3, 3, 1, 2, 2, 0, false, true, false, "DilationNoZeroPoint"},
                      ConvCase{4, 64, 12, 12, 64, 3, 3, 1, 1, 1, -128, true, true, true, "WeightsStagedPerCluster"}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

TEST_F(Quant, LinearMatchesTheExactIntegerReference) {
  const std::int64_t m = 19, k = 70, n = 45;
  const std::vector<std::int8_t> x = random_int8(m * k, 20), w = random_int8(n * k, 21);
  const std::vector<float> ws(n, 0.004f), bias = random<float>(n, 22, -1.0f, 1.0f);  // a per-tensor scale
  std::vector<std::int32_t> sums(n, 0);
  for (std::int64_t o = 0; o < n; ++o)
    for (std::int64_t i = 0; i < k; ++i) sums[o] += w[o * k + i];
  void* px = to_device(x);
  void* pw = to_device(w);
  void* pws = to_device(ws);
  void* pb = to_device(bias);
  void* psum = dalloc(n * 4);
  void* py = dalloc(m * n);
  const TensorDesc dws = desc(DType::kFloat32, {n}), dbias = desc(DType::kFloat32, {n}), dsum = desc(DType::kInt32, {n});
  ASSERT_EQ(int8_weight_sums(&h(), desc(DType::kInt8, {n, k}), pw, dsum, psum), Status::kSuccess);
  Int8Output o;
  o.x_scale = 0.02, o.x_zero_point = 17, o.y_scale = 0.1, o.y_zero_point = 3;
  o.w_scales = &dws, o.w_scales_ptr = pws, o.w_sums = &dsum, o.w_sums_ptr = psum, o.bias = &dbias, o.bias_ptr = pb;
  ASSERT_EQ(qlinear(&h(), o, desc(DType::kInt8, {m, k}), px, desc(DType::kInt8, {n, k}), pw,
                    desc(DType::kInt8, {m, n}), py),
            Status::kSuccess)
      << last_error_detail();
  const std::vector<std::int8_t> y = from_device<std::int8_t>(py, m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (std::int64_t t = 0; t < k; ++t) acc += (x[i * k + t] - 17) * w[j * k + t];
      ASSERT_EQ(y[i * n + j], requant(acc, 0.02f, ws[j], &bias[j], false, 0.1, 3)) << i << "," << j;
    }
  // dequantize_output: the same int8 values, dequantized into an fp32 y.
  o.dequantize_output = true;
  void* pf = dalloc(m * n * 4);
  ASSERT_EQ(qlinear(&h(), o, desc(DType::kInt8, {m, k}), px, desc(DType::kInt8, {n, k}), pw,
                    desc(DType::kFloat32, {m, n}), pf),
            Status::kSuccess)
      << last_error_detail();
  const std::vector<float> f = from_device<float>(pf, m * n);
  for (std::int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(f[i], (static_cast<float>(y[i]) - 3.0f) * static_cast<float>(0.1)) << i;
}

TEST_F(Quant, BadArgumentsAreNamed) {
  void* p = dalloc(4096);
  const TensorDesc f = desc(DType::kFloat32, {4, 4}), i8 = desc(DType::kInt8, {4, 4}), i32 = desc(DType::kInt32, {4, 4});
  QuantParams q;
  EXPECT_EQ(quantize(&h(), q, i32, p, i8, p), Status::kNotSupported);
  EXPECT_EQ(std::string(last_error_detail()), "quantize: x has dtype int32; supported: fp32");
  q.scale = 0.0;
  EXPECT_EQ(quantize(&h(), q, f, p, i8, p), Status::kBadParam);
  EXPECT_EQ(std::string(last_error_detail()), "quantize: scale 0.000000 must be finite and > 0");
  q.scale = 0.1, q.zero_point = 128;
  EXPECT_EQ(dequantize(&h(), q, i8, p, f, p), Status::kBadParam);
  EXPECT_EQ(std::string(last_error_detail()), "dequantize: zero point 128 is outside [-128, 127]");
  q.zero_point = 0, q.axis = 2;
  EXPECT_EQ(quantize(&h(), q, f, p, i8, p), Status::kBadParam);
  EXPECT_NE(std::string(last_error_detail()).find("quantize: axis 2 is out of range"), std::string::npos);
  // qlinear: y scale, a missing w_sums with a non-zero input zero point.
  const TensorDesc ws = desc(DType::kFloat32, {4});
  Int8Output o;
  o.w_scales = &ws, o.w_scales_ptr = p, o.y_scale = -1.0;
  EXPECT_EQ(qlinear(&h(), o, i8, p, i8, p, i8, p), Status::kBadParam);
  EXPECT_EQ(std::string(last_error_detail()), "qlinear: y scale -1.000000 must be finite and > 0");
  o.y_scale = 1.0, o.x_zero_point = 4;
  EXPECT_EQ(qlinear(&h(), o, i8, p, i8, p, i8, p), Status::kBadParam);
  EXPECT_NE(std::string(last_error_detail()).find("qlinear: w_sums (int8_weight_sums of w) is required when x's zero point (4) is not 0"), std::string::npos) << last_error_detail();
  // Per-channel values live on the device: the kernel checks them (a trap naming the channel).
  const std::vector<float> bad_scales = {0.1f, -0.5f, 0.1f, 0.1f};
  const std::vector<std::int32_t> zps = {0, 0, 0, 0};
  void* ps = to_device(bad_scales);
  void* pz = to_device(zps);
  const TensorDesc dz = desc(DType::kInt32, {4});
  QuantParams pc;
  pc.axis = 0, pc.scales = &ws, pc.scales_ptr = ps, pc.zero_points = &dz, pc.zero_points_ptr = pz;
  ASSERT_EQ(quantize(&h(), pc, f, p, i8, p), Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
}

TEST_F(Quant, PresetWithoutAnInt8ArrayIsRefusedNamingOpAndConfig) {
  Handle::destroy(handle_);
  const char* overrides[] = {"tfu.int8.rows=0", "tfu.int8.cols=0"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", overrides, 2), cnrtSuccess);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  void* p = dalloc(4096);
  const TensorDesc i8 = desc(DType::kInt8, {4, 4}), ws = desc(DType::kFloat32, {4});
  Int8Output o;
  o.w_scales = &ws, o.w_scales_ptr = p;
  EXPECT_EQ(qlinear(&h(), o, i8, p, i8, p, i8, p), Status::kNotSupported);
  EXPECT_EQ(std::string(last_error_detail()), "qlinear: config 'tiny' has no int8 TFU array (tfu.int8 is 0x0)");
}

TEST_F(Quant, BitFlipChangesTheConvolution) {
  const std::int64_t c = 8, hw = 6, oc = 8;
  const std::vector<std::int8_t> x = random_int8(hw * hw * c, 30), w = random_int8(oc * 9 * c, 31);
  const std::vector<float> ws(oc, 0.001f);
  void* px = to_device(x);
  void* pw = to_device(w);
  void* pws = to_device(ws);
  void* py = dalloc(hw * hw * oc);
  const TensorDesc dws = desc(DType::kFloat32, {oc});
  TensorDesc dx, dw, dy;
  ASSERT_EQ(dx.set(DType::kInt8, {1, hw, hw, c}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(dw.set(DType::kInt8, {oc, 3, 3, c}, Layout::kNHWC), Status::kSuccess);
  ASSERT_EQ(dy.set(DType::kInt8, {1, hw, hw, oc}, Layout::kNHWC), Status::kSuccess);
  Int8Output o;
  o.w_scales = &dws, o.w_scales_ptr = pws, o.y_scale = 0.05;
  ConvParams p;
  p.pad_h = p.pad_w = 1;
  std::vector<std::int8_t> clean, flipped;
  for (bool flip : {false, true}) {
    if (flip) {
      ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
    }
    ASSERT_EQ(qconv2d(&h(), p, o, dx, px, dw, pw, dy, py), Status::kSuccess) << last_error_detail();
    (flip ? flipped : clean) = from_device<std::int8_t>(py, hw * hw * oc);
  }
  EXPECT_NE(clean, flipped);
}

}  // namespace
}  // namespace mlusim::mlu::testing
