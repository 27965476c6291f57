// conv2d_bn_act_forward against a naive double-precision reference and against the unfused
// sequence conv2d_forward -> batch_norm_forward_inference -> unary/clamp: odd shapes, stride,
// groups, depthwise, fp32/fp16 (with fp32 or fp16 BN tensors), channels_last input, padded output,
// partial BN, every activation; the fused op launches fewer kernels and moves fewer GDRAM bytes;
// bad arguments give kBadParam with a detail.
#include <cmath>
#include <string>

#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

// kChannelsLast: x only; kNhwc: x, w and y all channels_last (the direct NHWC kernel).
enum class Mem { kContiguous, kChannelsLast, kPaddedOutput, kNhwc };

struct ConvCase {
  const char* name;
  std::int64_t n, c, h, w, oc, kh, kw;
  ConvParams p;
  DType dtype = DType::kFloat32;
  Activation act = Activation::kRelu;
  Mem mem = Mem::kContiguous;
  bool bias = true;
  bool gamma = true, beta = true, mean = true, var = true;
  DType bn_dtype = DType::kFloat32;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

std::int64_t out_dim(std::int64_t in, std::int64_t k, int pad, int stride, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

// A logical NCHW tensor with its strides.
struct Layout4 {
  std::int64_t d[4], s[4];
  std::int64_t at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
  }
  std::int64_t span() const {
    std::int64_t e = 1;
    for (int i = 0; i < 4; ++i) e += (d[i] - 1) * s[i];
    return d[0] * d[1] * d[2] * d[3] == 0 ? 0 : e;
  }
};

Layout4 dense(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return {{n, c, h, w}, {c * h * w, h * w, w, 1}};
}
Layout4 channels_last(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return {{n, c, h, w}, {h * w * c, 1, w * c, c}};
}
Layout4 padded(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return {{n, c, h, w}, {c * (h + 1) * (w + 2) + 3, (h + 1) * (w + 2), w + 2, 1}};
}

class ConvBnActTest : public MluTest {
 protected:
  TensorDesc desc4(DType t, const Layout4& l) {
    TensorDesc d;
    EXPECT_EQ(d.set(t, {l.d[0], l.d[1], l.d[2], l.d[3]}, {l.s[0], l.s[1], l.s[2], l.s[3]}, Layout::kNCHW),
              Status::kSuccess);
    return d;
  }
  template <class T>
  void* upload(const std::vector<float>& v) {
    std::vector<T> t(v.begin(), v.end());
    return to_device(t);
  }
  void* upload(DType t, const std::vector<float>& v) {
    return t == DType::kFloat16 ? upload<half>(v) : upload<float>(v);
  }
  // Host values as the device holds them (fp16 rounded).
  static std::vector<float> rounded(DType t, std::vector<float> v) {
    if (t == DType::kFloat16)
      for (float& x : v) x = static_cast<float>(half(x));
    return v;
  }
  std::vector<double> download(DType t, const void* p, const Layout4& l) {
    std::vector<double> out(static_cast<std::size_t>(l.d[0] * l.d[1] * l.d[2] * l.d[3]));
    std::vector<float> raw(static_cast<std::size_t>(l.span()));
    if (t == DType::kFloat16) {
      const std::vector<half> hv = from_device<half>(p, raw.size());
      for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>(hv[i]);
    } else {
      raw = from_device<float>(p, raw.size());
    }
    std::size_t k = 0;
    for (std::int64_t n = 0; n < l.d[0]; ++n)
      for (std::int64_t c = 0; c < l.d[1]; ++c)
        for (std::int64_t y = 0; y < l.d[2]; ++y)
          for (std::int64_t x = 0; x < l.d[3]; ++x) out[k++] = raw[static_cast<std::size_t>(l.at(n, c, y, x))];
    return out;
  }

  void run(const ConvCase& k);
};

void ConvBnActTest::run(const ConvCase& k) {
  SCOPED_TRACE(k.name);
  const int g = k.p.groups;
  const std::int64_t cg = k.c / g, ocg = k.oc / g;
  const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
  const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
  const bool nhwc = k.mem == Mem::kNhwc;
  const Layout4 xl = k.mem == Mem::kChannelsLast || nhwc ? channels_last(k.n, k.c, k.h, k.w) : dense(k.n, k.c, k.h, k.w);
  const Layout4 yl = k.mem == Mem::kPaddedOutput ? padded(k.n, k.oc, oh, ow)
                     : nhwc                      ? channels_last(k.n, k.oc, oh, ow)
                                                 : dense(k.n, k.oc, oh, ow);
  const Layout4 wl = nhwc ? channels_last(k.oc, cg, k.kh, k.kw) : dense(k.oc, cg, k.kh, k.kw);
  const std::vector<float> x = rounded(k.dtype, random<float>(static_cast<std::size_t>(xl.span()), 1));
  const std::vector<float> w = rounded(k.dtype, random<float>(static_cast<std::size_t>(wl.span()), 2, -0.5f, 0.5f));
  const std::size_t oc = static_cast<std::size_t>(k.oc);
  const std::vector<float> bias = rounded(k.dtype, random<float>(oc, 3));
  const std::vector<float> gamma = rounded(k.bn_dtype, random<float>(oc, 4, 0.5f, 2.0f));
  const std::vector<float> beta = rounded(k.bn_dtype, random<float>(oc, 5));
  const std::vector<float> mean = rounded(k.bn_dtype, random<float>(oc, 6, -0.5f, 0.5f));
  const std::vector<float> var = rounded(k.bn_dtype, random<float>(oc, 7, 0.2f, 3.0f));
  const double eps = 1e-3;

  // Reference: act(((conv + bias) - mean) / sqrt(var + eps) * gamma + beta).
  std::vector<double> want(static_cast<std::size_t>(k.n * k.oc * oh * ow));
  std::size_t idx = 0;
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t o = 0; o < k.oc; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double acc = 0;
          const std::int64_t grp = o / ocg;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t i = 0; i < k.kh; ++i)
              for (std::int64_t j = 0; j < k.kw; ++j) {
                const std::int64_t iy = oy * k.p.stride_h - k.p.pad_h + i * k.p.dilation_h;
                const std::int64_t ix = ox * k.p.stride_w - k.p.pad_w + j * k.p.dilation_w;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                acc += double(x[static_cast<std::size_t>(xl.at(n, grp * cg + ci, iy, ix))]) *
                       w[static_cast<std::size_t>(wl.at(o, ci, i, j))];
              }
          const std::size_t c = static_cast<std::size_t>(o);
          if (k.bias) acc += bias[c];
          double scale = k.gamma ? gamma[c] : 1.0;
          if (k.var) scale /= std::sqrt(double(var[c]) + eps);
          const double shift = (k.beta ? beta[c] : 0.0) - (k.mean ? mean[c] : 0.0) * scale;
          want[idx++] = ref_activation(k.act, acc * scale + shift);
        }

  const TensorDesc xd = desc4(k.dtype, xl), wd = desc4(k.dtype, wl), yd = desc4(k.dtype, yl);
  const TensorDesc cd = desc(k.dtype, {k.oc}), pd = desc(k.bn_dtype, {k.oc});
  void* xp = upload(k.dtype, x);
  void* wp = upload(k.dtype, w);
  void* bp = upload(k.dtype, bias);
  void* gp = upload(k.bn_dtype, gamma);
  void* betap = upload(k.bn_dtype, beta);
  void* mp = upload(k.bn_dtype, mean);
  void* vp = upload(k.bn_dtype, var);
  void* yp = dalloc(static_cast<std::size_t>(yl.span()) * sim::dtype_size(k.dtype));
  BatchNormInference bn;
  bn.eps = eps;
  if (k.gamma) bn.weight = &pd, bn.weight_ptr = gp;
  if (k.beta) bn.bias = &pd, bn.bias_ptr = betap;
  if (k.mean) bn.running_mean = &pd, bn.running_mean_ptr = mp;
  if (k.var) bn.running_var = &pd, bn.running_var_ptr = vp;

  std::size_t ws_bytes = 0;
  ASSERT_EQ(get_conv2d_bn_act_workspace_size(handle_, k.p, k.act, xd, wd, &bn, yd, &ws_bytes), Status::kSuccess)
      << last_error_detail();
  void* ws = ws_bytes ? dalloc(ws_bytes) : nullptr;
  h().clear_ops();
  const DeviceCost fused = device_cost(h(), [&] {
    ASSERT_EQ(conv2d_bn_act_forward(handle_, k.p, k.act, xd, xp, wd, wp, k.bias ? &cd : nullptr, k.bias ? bp : nullptr,
                                    &bn, yd, yp, ws, ws_bytes),
              Status::kSuccess)
        << last_error_detail();
  });
  const std::vector<double> got = download(k.dtype, yp, yl);
  const bool half16 = k.dtype == DType::kFloat16;
  expect_close(got, want, half16 ? 2e-2 : 2e-4, half16 ? 1e-2 : 2e-4, "fused vs reference");

  ASSERT_EQ(h().ops().size(), 1u);
  const OpRecord& rec = h().ops().back();
  EXPECT_EQ(rec.name, "fused_conv_bn_act");
  // All-NHWC operands: the direct kernel folds the batch norm in its epilogue (no repacking kernels).
  if (nhwc) {
    EXPECT_EQ(fused.kernels, 1u) << fused.names;
  }
  EXPECT_EQ(rec.kernels, fused.kernels) << fused.names;
  EXPECT_EQ(rec.macs, static_cast<std::uint64_t>(k.n * k.oc * oh * ow * cg * k.kh * k.kw));
  const std::uint64_t es = sim::dtype_size(k.dtype), bs = sim::dtype_size(k.bn_dtype);
  const std::uint64_t bn_count = (k.gamma ? 1 : 0) + (k.beta ? 1 : 0) + (k.mean ? 1 : 0) + (k.var ? 1 : 0);
  EXPECT_EQ(rec.bytes,
            (k.n * k.c * k.h * k.w + k.oc * cg * k.kh * k.kw + k.n * k.oc * oh * ow + (k.bias ? k.oc : 0)) * es +
                bn_count * oc * bs);

  // The unfused sequence needs running statistics (batch_norm_forward_inference's contract). Its
  // intermediates have y's layout, as a framework's would.
  if (!(k.mean && k.var)) return;
  const Layout4 tl = yl;
  const TensorDesc td = yd;
  void* t1 = dalloc(static_cast<std::size_t>(tl.span()) * es);
  void* t2 = dalloc(static_cast<std::size_t>(tl.span()) * es);
  void* y2 = dalloc(static_cast<std::size_t>(tl.span()) * es);
  std::size_t conv_ws = 0;
  ASSERT_EQ(get_conv2d_forward_workspace_size(handle_, k.p, xd, wd, td, &conv_ws), Status::kSuccess);
  void* cws = conv_ws ? dalloc(conv_ws) : nullptr;
  const DeviceCost unfused = device_cost(h(), [&] {
    ASSERT_EQ(conv2d_forward(handle_, k.p, xd, xp, wd, wp, k.bias ? &cd : nullptr, k.bias ? bp : nullptr, td, t1, cws,
                             conv_ws),
              Status::kSuccess);
    ASSERT_EQ(batch_norm_forward_inference(handle_, eps, td, t1, k.gamma ? &pd : nullptr, gp, k.beta ? &pd : nullptr,
                                           betap, pd, mp, pd, vp, td, t2),
              Status::kSuccess)
        << last_error_detail();
    switch (k.act) {
      case Activation::kNone:
        ASSERT_EQ(copy_strided(handle_, td, t2, td, y2), Status::kSuccess);
        break;
      case Activation::kRelu6:
        ASSERT_EQ(clamp(handle_, td, t2, 0.0, 6.0, td, y2), Status::kSuccess);
        break;
      default: {
        const UnaryOp op = k.act == Activation::kRelu       ? UnaryOp::kRelu
                           : k.act == Activation::kGelu     ? UnaryOp::kGelu
                           : k.act == Activation::kGeluTanh ? UnaryOp::kGeluTanh
                           : k.act == Activation::kSilu     ? UnaryOp::kSilu
                           : k.act == Activation::kSigmoid  ? UnaryOp::kSigmoid
                                                            : UnaryOp::kTanh;
        ASSERT_EQ(unary(handle_, op, td, t2, td, y2), Status::kSuccess);
      }
    }
  });
  const std::vector<double> seq = download(k.dtype, y2, tl);
  // The batch norm and the activation cost no kernel: as many as conv2d_forward alone.
  ASSERT_GE(h().ops().size(), 2u);
  EXPECT_EQ(h().ops()[1].name, "conv2d_forward");
  EXPECT_EQ(fused.kernels, h().ops()[1].kernels) << fused.names << "| " << unfused.names;
  // fp16: the sequence rounds after the convolution and after the batch norm too.
  expect_close(got, seq, half16 ? 1e-2 : 1e-5, half16 ? 8e-3 : 1e-5, "fused vs unfused");
  // The unfused identity activation copies (an extra kernel); compare like for like otherwise.
  EXPECT_LT(fused.kernels, unfused.kernels) << fused.names << "| " << unfused.names;
  EXPECT_LT(fused.gdram_bytes, unfused.gdram_bytes) << fused.names << "| " << unfused.names;
  // At least the intermediate's write and read of the BN pass are saved.
  const std::uint64_t y_bytes = static_cast<std::uint64_t>(k.n * k.oc * oh * ow) * es;
  EXPECT_LE(fused.gdram_bytes + 2 * y_bytes, unfused.gdram_bytes);
}

ConvParams params(int pad, int stride = 1, int groups = 1, int dil = 1) {
  ConvParams p;
  p.pad_h = p.pad_w = pad;
  p.stride_h = p.stride_w = stride;
  p.groups = groups;
  p.dilation_h = p.dilation_w = dil;
  return p;
}

class ConvBnActCases : public ConvBnActTest, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ConvBnActCases, MatchesReferenceAndUnfusedSequence) { run(GetParam()); }

ConvCase with(ConvCase c, DType t, Activation a, Mem m = Mem::kContiguous) {
  c.dtype = t, c.act = a, c.mem = m;
  return c;
}

const ConvCase kBase{"base", 2, 5, 9, 7, 6, 3, 3, params(1)};

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvBnActCases,
    ::testing::Values(
        with(kBase, DType::kFloat32, Activation::kRelu), with(kBase, DType::kFloat16, Activation::kSilu),
        ConvCase{"strided_dilated", 1, 3, 11, 10, 5, 3, 2, params(2, 2, 1, 2), DType::kFloat32, Activation::kGelu},
        ConvCase{"grouped_fp16", 2, 4, 6, 5, 6, 3, 3, params(1, 1, 2), DType::kFloat16, Activation::kGeluTanh},
        ConvCase{"channels_last", 2, 5, 7, 6, 4, 3, 3, params(1), DType::kFloat32, Activation::kSigmoid,
                 Mem::kChannelsLast},
        ConvCase{"padded_output", 1, 3, 6, 6, 5, 3, 3, params(0), DType::kFloat32, Activation::kTanh,
                 Mem::kPaddedOutput},
        ConvCase{"nhwc", 2, 24, 9, 7, 50, 3, 3, params(1), DType::kFloat32, Activation::kRelu, Mem::kNhwc},
        ConvCase{"nhwc_strided", 1, 16, 11, 10, 20, 3, 3, params(1, 2), DType::kFloat16, Activation::kSilu,
                 Mem::kNhwc},
        ConvCase{"nhwc_scale_only", 1, 8, 6, 5, 7, 1, 1, params(0), DType::kFloat32, Activation::kNone, Mem::kNhwc,
                 true, true, false, false, false},
        ConvCase{"depthwise", 2, 6, 7, 5, 12, 3, 3, params(1, 1, 6), DType::kFloat32, Activation::kRelu6},
        ConvCase{"depthwise_1x1_fp16", 1, 4, 5, 5, 4, 1, 1, params(0, 1, 4), DType::kFloat16, Activation::kSilu},
        // Deep and narrow: the planner may split the depth (the epilogue then runs in the reduction).
        ConvCase{"deep", 1, 96, 3, 3, 4, 3, 3, params(1), DType::kFloat32, Activation::kGelu},
        ConvCase{"no_bias", 1, 3, 5, 5, 4, 3, 3, params(1), DType::kFloat32, Activation::kRelu, Mem::kContiguous,
                 false},
        ConvCase{"fp16_with_fp32_bn", 1, 3, 6, 5, 7, 3, 3, params(1), DType::kFloat16, Activation::kRelu,
                 Mem::kContiguous, true, true, true, true, true, DType::kFloat32},
        ConvCase{"fp32_with_fp16_bn", 1, 3, 6, 5, 7, 3, 3, params(1), DType::kFloat32, Activation::kSilu,
                 Mem::kContiguous, true, true, true, true, true, DType::kFloat16},
        ConvCase{"scale_only", 1, 3, 5, 4, 3, 3, 3, params(1), DType::kFloat32, Activation::kNone, Mem::kContiguous,
                 true, true, false, false, false},
        ConvCase{"no_bn", 1, 3, 5, 4, 3, 3, 3, params(1), DType::kFloat32, Activation::kGelu, Mem::kContiguous, true,
                 false, false, false, false}),
    [](const ::testing::TestParamInfo<ConvCase>& info) {
      return std::string(info.param.name) + "_" + activation_name(info.param.act) +
             (info.param.dtype == DType::kFloat16 ? "_fp16" : "_fp32");
    });

TEST_F(ConvBnActTest, EveryActivation) {
  for (Activation a : kAllActivations) {
    ConvCase c{"act", 1, 3, 5, 6, 4, 3, 3, params(1)};
    c.act = a;
    run(c);
  }
}

// A dense NCHW convolution with or without batch norm is one kernel: the fold and the activation
// run in its epilogue.
TEST_F(ConvBnActTest, OneKernelWithOrWithoutBatchNorm) {
  const TensorDesc x = desc(DType::kFloat32, {1, 3, 6, 6}), w = desc(DType::kFloat32, {4, 3, 3, 3});
  const TensorDesc y = desc(DType::kFloat32, {1, 4, 4, 4});
  void* xp = to_device(random<float>(108, 1));
  void* wp = to_device(random<float>(108, 2));
  void* yp = dalloc(64 * 4);
  std::size_t ws = 0;
  ASSERT_EQ(get_conv2d_bn_act_workspace_size(handle_, ConvParams{}, Activation::kRelu, x, w, nullptr, y, &ws),
            Status::kSuccess);
  void* wsp = ws ? dalloc(ws) : nullptr;
  const TensorDesc c4 = desc(DType::kFloat32, {4});
  void* vp = to_device(random<float>(4, 3, 0.5f, 1.5f));
  BatchNormInference empty, var_only;  // no tensors: nothing to fold
  var_only.running_var = &c4, var_only.running_var_ptr = vp;
  const BatchNormInference* cases[] = {nullptr, &empty, &var_only};
  for (const BatchNormInference* bn : cases) {
    const DeviceCost c = device_cost(h(), [&] {
      ASSERT_EQ(conv2d_bn_act_forward(handle_, ConvParams{}, Activation::kRelu, x, xp, w, wp, nullptr, nullptr, bn, y,
                                      yp, wsp, ws),
                Status::kSuccess);
    });
    EXPECT_EQ(c.kernels, 1u) << c.names;
    for (float v : from_device<float>(yp, 64)) EXPECT_GE(v, 0.0f);
  }
}

TEST_F(ConvBnActTest, BadArguments) {
  const TensorDesc x = desc(DType::kFloat32, {1, 3, 6, 6}), w = desc(DType::kFloat32, {4, 3, 3, 3});
  const TensorDesc y = desc(DType::kFloat32, {1, 4, 4, 4}), c4 = desc(DType::kFloat32, {4});
  const TensorDesc c5 = desc(DType::kFloat32, {5}), i4 = desc(DType::kInt32, {4});
  void* p = dalloc(4096);
  auto call = [&](Activation act, const BatchNormInference* bn, const TensorDesc& yd, std::size_t ws) {
    return conv2d_bn_act_forward(handle_, ConvParams{}, act, x, p, w, p, nullptr, nullptr, bn, yd, p, p, ws);
  };
  auto expect_bad = [&](Status s, const std::string& needle) {
    EXPECT_EQ(s, Status::kBadParam);
    EXPECT_NE(last_error_detail().find(needle), std::string::npos) << last_error_detail();
  };
  BatchNormInference bn;
  bn.running_var = &c5, bn.running_var_ptr = p;
  expect_bad(call(Activation::kRelu, &bn, y, 4096), "bn running_var");
  bn.running_var = &i4;
  expect_bad(call(Activation::kRelu, &bn, y, 4096), "fp32 or fp16");
  bn.running_var = &c4, bn.running_var_ptr = nullptr;
  expect_bad(call(Activation::kRelu, &bn, y, 4096), "pointer bn running_var");
  bn.running_var_ptr = p, bn.eps = -1;
  expect_bad(call(Activation::kRelu, &bn, y, 4096), "eps");
  bn.eps = 1e-5;
  expect_bad(call(static_cast<Activation>(42), &bn, y, 4096), "activation");
  const TensorDesc wrong_y = desc(DType::kFloat32, {1, 4, 5, 5});
  expect_bad(call(Activation::kRelu, &bn, wrong_y, 4096), "fused_conv_bn_act");
  const TensorDesc wrong_bias = desc(DType::kFloat32, {3});
  EXPECT_EQ(
      conv2d_bn_act_forward(handle_, ConvParams{}, Activation::kRelu, x, p, w, p, &wrong_bias, p, &bn, y, p, p, 4096),
      Status::kBadParam);
  std::size_t bytes = 0;
  EXPECT_EQ(get_conv2d_bn_act_workspace_size(handle_, ConvParams{}, Activation::kRelu, x, w, &bn, y, nullptr),
            Status::kBadParam);
  EXPECT_EQ(get_conv2d_bn_act_workspace_size(nullptr, ConvParams{}, Activation::kRelu, x, w, &bn, y, &bytes),
            Status::kNotInitialized);
  EXPECT_TRUE(h().ops().empty());  // nothing was enqueued by a rejected call
}

}  // namespace
}  // namespace mlusim::mlu::testing
