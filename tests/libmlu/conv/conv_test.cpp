// conv2d forward / backward-data / backward-weight against naive loops: odd shapes, stride,
// padding, dilation, groups, depthwise, bias, fp16, NCHW / NHWC / channels_last / padded strides,
// empty tensors and bad arguments.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <type_traits>

#include "common/mlu_test.h"
#include "conv/direct_conv.h"
#include "conv/direct_weight_grad.h"

namespace mlusim::mlu::testing {
namespace {

using sim::half;

// How a 4-d tensor (logical NCHW / OIHW) is laid out in memory.
enum class Format { kNchw, kNhwc, kChannelsLast /* NCHW dims, NHWC strides */, kPadded /* NCHW, gaps */ };

template <class T>
struct Tensor4 {
  std::int64_t d[4];  // logical N, C, H, W
  std::int64_t s[4];  // strides of those logical dims
  Format format;
  std::vector<T> data;
  std::int64_t at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return n * s[0] + c * s[1] + h * s[2] + w * s[3];
  }
  double get(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return static_cast<float>(data[static_cast<std::size_t>(at(n, c, h, w))]);
  }
};

struct Case {
  std::int64_t n, c, h, w, oc, kh, kw;
  ConvParams p;
};

std::int64_t out_dim(std::int64_t in, std::int64_t k, int pad, int stride, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

class ConvTest : public MluTest {
 protected:
  template <class T>
  static Tensor4<T> make(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Format f, unsigned seed) {
    Tensor4<T> t{{n, c, h, w}, {}, f, {}};
    std::int64_t span = 0;
    switch (f) {
      case Format::kNchw:
        t.s[3] = 1, t.s[2] = w, t.s[1] = h * w, t.s[0] = c * h * w;
        break;
      case Format::kNhwc:
      case Format::kChannelsLast:
        t.s[1] = 1, t.s[3] = c, t.s[2] = w * c, t.s[0] = h * w * c;
        break;
      case Format::kPadded:
        t.s[3] = 1, t.s[2] = w + 3, t.s[1] = (w + 3) * (h + 1), t.s[0] = (w + 3) * (h + 1) * c + 5;
        break;
    }
    for (int i = 0; i < 4; ++i) span += (t.d[i] - 1) * t.s[i];
    const bool empty = n * c * h * w == 0;
    t.data = random<T>(empty ? 0 : static_cast<std::size_t>(span + 1), seed);
    return t;
  }
  template <class T>
  TensorDesc desc_of(const Tensor4<T>& t) {
    const DType dt = sim::DTypeOf<T>::value;
    TensorDesc d;
    if (t.format == Format::kNhwc)
      EXPECT_EQ(d.set(dt, {t.d[0], t.d[2], t.d[3], t.d[1]}, {t.s[0], t.s[2], t.s[3], t.s[1]}, Layout::kNHWC),
                Status::kSuccess);
    else
      EXPECT_EQ(d.set(dt, {t.d[0], t.d[1], t.d[2], t.d[3]}, {t.s[0], t.s[1], t.s[2], t.s[3]}, Layout::kNCHW),
                Status::kSuccess);
    return d;
  }

  // Calls f(n, o, oy, ox, ci, i, j, iy, ix) for every valid (output, tap) pair of the convolution.
  static void for_each_tap(
      const Case& k, const std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                              std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& f) {
    const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
    const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
    const std::int64_t cg = k.c / k.p.groups, ocg = k.oc / k.p.groups;
    for (std::int64_t n = 0; n < k.n; ++n)
      for (std::int64_t o = 0; o < k.oc; ++o)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox)
            for (std::int64_t c = 0; c < cg; ++c)
              for (std::int64_t i = 0; i < k.kh; ++i)
                for (std::int64_t j = 0; j < k.kw; ++j) {
                  const std::int64_t iy = oy * k.p.stride_h + i * k.p.dilation_h - k.p.pad_h;
                  const std::int64_t ix = ox * k.p.stride_w + j * k.p.dilation_w - k.p.pad_w;
                  if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                  f(n, o, oy, ox, (o / ocg) * cg + c, i, j, iy, ix);
                }
  }

  template <class T>
  void expect_close(const Tensor4<T>& got, const std::vector<double>& want, double tol, const char* what) {
    std::size_t idx = 0;
    for (std::int64_t a = 0; a < got.d[0]; ++a)
      for (std::int64_t b = 0; b < got.d[1]; ++b)
        for (std::int64_t c = 0; c < got.d[2]; ++c)
          for (std::int64_t d = 0; d < got.d[3]; ++d, ++idx) {
            const double g = got.get(a, b, c, d);
            ASSERT_NEAR(g, want[idx], tol * (1.0 + std::fabs(want[idx])))
                << what << " at " << a << "," << b << "," << c << "," << d;
          }
  }
  static std::size_t flat(const std::int64_t* d, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t e) {
    return static_cast<std::size_t>(((a * d[1] + b) * d[2] + c) * d[3] + e);
  }
  void* workspace(std::size_t bytes) { return bytes ? dalloc(bytes) : nullptr; }

  template <class T>
  void forward(const Case& k, Format fx, Format fw, Format fy, bool bias, double tol) {
    const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
    const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
    auto x = make<T>(k.n, k.c, k.h, k.w, fx, 1);
    auto w = make<T>(k.oc, k.c / k.p.groups, k.kh, k.kw, fw, 2);
    auto y = make<T>(k.n, k.oc, oh, ow, fy, 3);
    const std::vector<T> b = random<T>(static_cast<std::size_t>(k.oc), 4);
    const TensorDesc dx = desc_of(x), dw = desc_of(w), dy = desc_of(y), db = desc(sim::DTypeOf<T>::value, {k.oc});
    void* px = to_device(x.data);
    void* pw = to_device(w.data);
    void* py = to_device(y.data);
    void* pb = to_device(b);
    std::size_t ws = 0;
    ASSERT_EQ(get_conv2d_forward_workspace_size(&h(), k.p, dx, dw, dy, &ws), Status::kSuccess) << last_error_detail();
    ASSERT_EQ(conv2d_forward(&h(), k.p, dx, px, dw, pw, bias ? &db : nullptr, pb, dy, py, workspace(ws), ws),
              Status::kSuccess)
        << last_error_detail();
    y.data = from_device<T>(py, y.data.size());
    std::vector<double> want(static_cast<std::size_t>(k.n * k.oc * oh * ow), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
      want[flat(y.d, n, o, oy, ox)] += w.get(o, ci % (k.c / k.p.groups), i, j) * x.get(n, ci, iy, ix);
    });
    if (bias)
      for (std::size_t i = 0; i < want.size(); ++i)
        want[i] += static_cast<float>(b[i / static_cast<std::size_t>(oh * ow) % k.oc]);
    expect_close(y, want, tol, "y");
  }

  template <class T>
  // bias: + b[c] on dx (a transposed convolution's bias, the epilogue of every path).
  void backward_data(const Case& k, Format fdy, Format fw, Format fdx, double tol, bool bias = false) {
    const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
    const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
    auto gy = make<T>(k.n, k.oc, oh, ow, fdy, 5);
    auto w = make<T>(k.oc, k.c / k.p.groups, k.kh, k.kw, fw, 6);
    auto gx = make<T>(k.n, k.c, k.h, k.w, fdx, 7);
    const std::vector<T> b = random<T>(static_cast<std::size_t>(k.c), 11);
    const TensorDesc ddy = desc_of(gy), dw = desc_of(w), ddx = desc_of(gx), db = desc(sim::DTypeOf<T>::value, {k.c});
    void* pdy = to_device(gy.data);
    void* pw = to_device(w.data);
    void* pdx = to_device(gx.data);
    void* pb = to_device(b);
    std::size_t ws = 0;
    ASSERT_EQ(get_conv2d_backward_data_workspace_size(&h(), k.p, ddy, dw, ddx, &ws), Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(conv2d_backward_data(&h(), k.p, ddy, pdy, dw, pw, bias ? &db : nullptr, pb, ddx, pdx, workspace(ws), ws),
              Status::kSuccess)
        << last_error_detail();
    gx.data = from_device<T>(pdx, gx.data.size());
    std::vector<double> want(static_cast<std::size_t>(k.n * k.c * k.h * k.w), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
      want[flat(gx.d, n, ci, iy, ix)] += w.get(o, ci % (k.c / k.p.groups), i, j) * gy.get(n, o, oy, ox);
    });
    if (bias)
      for (std::size_t i = 0; i < want.size(); ++i)
        want[i] += static_cast<float>(b[i / static_cast<std::size_t>(k.h * k.w) % static_cast<std::size_t>(k.c)]);
    expect_close(gx, want, tol, "dx");
  }

  template <class T>
  void backward_weight(const Case& k, Format fx, Format fdy, Format fdw, double tol) {
    const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
    const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
    auto x = make<T>(k.n, k.c, k.h, k.w, fx, 8);
    auto gy = make<T>(k.n, k.oc, oh, ow, fdy, 9);
    auto gw = make<T>(k.oc, k.c / k.p.groups, k.kh, k.kw, fdw, 10);
    const TensorDesc dx = desc_of(x), ddy = desc_of(gy), ddw = desc_of(gw);
    void* px = to_device(x.data);
    void* pdy = to_device(gy.data);
    void* pdw = to_device(gw.data);
    std::size_t ws = 0;
    ASSERT_EQ(get_conv2d_backward_weight_workspace_size(&h(), k.p, dx, ddy, ddw, &ws), Status::kSuccess)
        << last_error_detail();
    ASSERT_EQ(conv2d_backward_weight(&h(), k.p, dx, px, ddy, pdy, ddw, pdw, workspace(ws), ws), Status::kSuccess)
        << last_error_detail();
    gw.data = from_device<T>(pdw, gw.data.size());
    std::vector<double> want(static_cast<std::size_t>(k.oc * (k.c / k.p.groups) * k.kh * k.kw), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
      want[flat(gw.d, o, ci % (k.c / k.p.groups), i, j)] += gy.get(n, o, oy, ox) * x.get(n, ci, iy, ix);
    });
    expect_close(gw, want, tol, "dw");
  }

  // The direct backward-weight kernel launched with `plan` as given (channels_last operands),
  // against the reference.
  template <class T>
  void forced_weight_grad(const Case& k, const conv::WeightGradPlan& plan, double tol, const std::string& what);
};

ConvParams params(int pad_h, int pad_w, int stride_h, int stride_w, int dil_h, int dil_w, int groups) {
  ConvParams p;
  p.pad_h = pad_h, p.pad_w = pad_w, p.stride_h = stride_h, p.stride_w = stride_w;
  p.dilation_h = dil_h, p.dilation_w = dil_w, p.groups = groups;
  return p;
}

const Case kCases[] = {
    {2, 5, 9, 9, 7, 3, 3, params(1, 1, 1, 1, 1, 1, 1)},    // 3x3 same padding
    {1, 3, 11, 10, 6, 3, 2, params(2, 1, 2, 1, 2, 1, 1)},  // odd kernel, stride, dilation, asymmetric padding
    {2, 6, 7, 8, 4, 3, 3, params(1, 0, 1, 2, 1, 1, 2)},    // groups
    {1, 3, 20, 20, 8, 7, 7, params(3, 3, 2, 2, 1, 1, 1)},  // conv1-like 7x7 / 2
    {3, 9, 6, 5, 10, 1, 1, params(0, 0, 1, 1, 1, 1, 1)},   // 1x1
    {2, 8, 7, 7, 12, 1, 1, params(0, 0, 2, 2, 1, 1, 1)},   // 1x1 / 2 (downsample)
};

TEST_F(ConvTest, ForwardFp32) {
  for (const Case& k : kCases) forward<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, true, 1e-4);
}

TEST_F(ConvTest, ForwardFp16) {
  forward<half>(kCases[0], Format::kNchw, Format::kNchw, Format::kNchw, true, 3e-3);
  forward<half>(kCases[1], Format::kNchw, Format::kNchw, Format::kNchw, false, 3e-3);
}

TEST_F(ConvTest, ForwardLayouts) {
  forward<float>(kCases[0], Format::kNhwc, Format::kNhwc, Format::kNhwc, true, 1e-4);
  forward<float>(kCases[2], Format::kChannelsLast, Format::kNchw, Format::kChannelsLast, false, 1e-4);
  forward<half>(kCases[3], Format::kPadded, Format::kPadded, Format::kPadded, true, 3e-3);
  // 1x1 strided without padding runs on a subsampled copy of x: NHWC and padded sources, odd
  // sizes, unequal strides.
  forward<half>(kCases[5], Format::kNhwc, Format::kNchw, Format::kNhwc, true, 3e-3);
  forward<float>({2, 5, 9, 11, 6, 1, 1, params(0, 0, 3, 2, 1, 1, 1)}, Format::kPadded, Format::kNchw, Format::kNchw,
                 false, 1e-4);
}

// Wide rows strided along x: the phase split applies its permutation per block of s * m columns
// (the row zero-padded to whole blocks) instead of over the whole row. Odd widths (a padded last
// block), strides 2 and 3, padding, dilation, NHWC and padded sources, fp16 (wider blocks).
TEST_F(ConvTest, ForwardStridedWideRows) {
  forward<float>({1, 3, 9, 229, 5, 7, 7, params(3, 3, 2, 2, 1, 1, 1)}, Format::kNchw, Format::kNchw, Format::kNchw,
                 true, 1e-4);
  forward<float>({2, 4, 7, 101, 6, 3, 3, params(1, 2, 2, 3, 1, 2, 1)}, Format::kNhwc, Format::kNchw, Format::kNhwc,
                 false, 1e-4);
  forward<float>({1, 6, 6, 150, 4, 3, 3, params(1, 1, 1, 2, 2, 1, 2)}, Format::kPadded, Format::kNchw, Format::kNchw,
                 true, 1e-4);
  forward<half>({1, 3, 8, 227, 5, 7, 7, params(3, 3, 2, 2, 1, 1, 1)}, Format::kNchw, Format::kNchw, Format::kNchw,
                true, 3e-3);
  forward<half>({2, 5, 5, 133, 4, 3, 3, params(0, 1, 2, 3, 1, 1, 1)}, Format::kNhwc, Format::kNhwc, Format::kNchw,
                false, 3e-3);
}

// Channels-innermost operands run the direct kernel (conv/direct_conv.h): the TFU's conv2d
// intrinsic on NHWC tiles. Odd sizes, strides 1-3, padding, dilation, 1x1 / 3x3 / 7x7, fp32/fp16.
TEST_F(ConvTest, DirectForwardChannelsLast) {
  for (std::size_t i : {0, 1, 3, 4, 5})
    forward<float>(kCases[i], Format::kChannelsLast, Format::kChannelsLast, Format::kChannelsLast, i % 2 == 0, 1e-4);
  forward<half>(kCases[0], Format::kNhwc, Format::kNhwc, Format::kNhwc, true, 3e-3);
  forward<half>(kCases[3], Format::kChannelsLast, Format::kChannelsLast, Format::kNhwc, false, 3e-3);
  forward<half>(kCases[5], Format::kChannelsLast, Format::kNhwc, Format::kChannelsLast, true, 3e-3);
}

// The direct kernel's description of a channels_last convolution, as conv_forward.cpp builds it.
conv::DirectConv direct_of(const Case& k, DType dt) {
  conv::DirectConv d;
  d.dtype = dt;
  d.n = k.n, d.c = k.c, d.h = k.h, d.w = k.w, d.oc = k.oc, d.kh = k.kh, d.kw = k.kw;
  d.oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
  d.ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
  d.stride_h = k.p.stride_h, d.stride_w = k.p.stride_w, d.dil_h = k.p.dilation_h, d.dil_w = k.p.dilation_w;
  d.pad_h = k.p.pad_h, d.pad_w = k.p.pad_w;
  d.xs_n = k.h * k.w * k.c, d.xs_h = k.w * k.c, d.xs_w = k.c;
  d.ws_o = k.kh * k.kw * k.c, d.ws_kh = k.kw * k.c, d.ws_kw = k.c;
  return d;
}

// Points a direct convolution's output at `py`, the device copy of y (channels-last strides):
// image n at n x y.s[0] elements, pixels y.s[3] apart, in y's dtype.
template <class T>
void direct_output_to(conv::DirectConv* d, const Tensor4<T>& y, void* py) {
  d->out.dtype = sim::DTypeOf<T>::value;
  d->out.base = reinterpret_cast<std::uintptr_t>(py);
  d->out.batch = gemm::BatchIndexer{{y.d[0]}, {y.s[0]}};
  d->out.row_stride = y.s[3];
}

// The direct backward-weight kernel's description of a channels_last convolution.
conv::WeightGradConv weight_grad_of(const Case& k, DType dt) {
  conv::WeightGradConv d;
  d.dtype = dt;
  d.n = k.n, d.c = k.c, d.h = k.h, d.w = k.w, d.oc = k.oc, d.kh = k.kh, d.kw = k.kw;
  d.oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
  d.ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
  d.stride_h = k.p.stride_h, d.stride_w = k.p.stride_w, d.dil_h = k.p.dilation_h, d.dil_w = k.p.dilation_w;
  d.pad_h = k.p.pad_h, d.pad_w = k.p.pad_w;
  d.xs_n = k.h * k.w * k.c, d.xs_h = k.w * k.c, d.xs_w = k.c;
  d.ys_n = d.oh * d.ow * k.oc, d.ys_w = k.oc;
  d.ws_o = k.kh * k.kw * k.c, d.ws_t = k.c;
  return d;
}

// On the tiny preset (64 KiB NRAM and WRAM) a 64-channel 3x3 convolution needs every level of the
// tiling: several input-channel chunks (SRAM staging one chunk ahead), output-channel chunks,
// bands of rows with padding rows at both ends, and more jobs than clusters.
TEST_F(ConvTest, DirectForwardChunked) {
  const Case k{2, 512, 6, 5, 40, 3, 3, params(1, 2, 1, 1, 1, 1, 1)};
  conv::DirectConv d = direct_of(k, DType::kFloat32);
  d.out.bias = true;
  const conv::DirectPlan plan = conv::plan_direct(h(), d);
  ASSERT_GT(plan.rh, 0u);
  EXPECT_GT(plan.qc, 2u) << plan.str();
  EXPECT_GT(plan.tb, 1u) << plan.str();
  EXPECT_GT(plan.jobs, plan.clusters) << plan.str();
  forward<float>(k, Format::kChannelsLast, Format::kChannelsLast, Format::kChannelsLast, true, 1e-4);
  forward<half>(k, Format::kNhwc, Format::kNhwc, Format::kNhwc, false, 3e-3);
  forward<float>({3, 64, 11, 9, 40, 3, 3, params(1, 2, 1, 1, 1, 1, 1)}, Format::kChannelsLast, Format::kChannelsLast,
                 Format::kChannelsLast, true, 1e-4);
}

// Small images at stride 1 are stacked, several whole padded images per intrinsic (the rows
// between them computed and dropped), so the weight-stationary TFU streams long operands.
TEST_F(ConvTest, DirectForwardStackedImages) {
  const Case k{9, 16, 3, 4, 12, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  ASSERT_EQ(mlusimLoadConfig("tpu-v3"), cnrtSuccess);
  Handle::destroy(handle_);
  allocations_.clear();
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  const conv::DirectPlan plan = conv::plan_direct(h(), direct_of(k, DType::kFloat32));
  EXPECT_GT(plan.ni, 1u) << plan.str();
  forward<float>(k, Format::kChannelsLast, Format::kChannelsLast, Format::kChannelsLast, true, 1e-4);
  forward<float>({5, 8, 5, 3, 6, 3, 3, params(1, 0, 1, 1, 1, 1, 1)}, Format::kNhwc, Format::kNhwc, Format::kNhwc,
                 false, 1e-4);
}

// A chunk of output channels run as pieces (one intrinsic, WRAM slot and accumulator block per
// piece of ps channels), with the plan forced so that the pieces are there whatever the planner
// prefers: the result must not change. The same with depth-major weights (w_k_major, as a
// backward-data pass reads them): a copy laid out [C][tap][OC] with its taps mirrored, read
// through negative tap strides from its last tap, with the forced pieces and with the
// planner's own plan. Also forced: two Cin chunks with group 0 staged and copied in two halves of
// its output channels (split0: 5 + 6 channels), staged one chunk a group or both at once (gq 2),
// in both weight layouts.
TEST_F(ConvTest, DirectForwardOutputChannelPieces) {
  const Case k{2, 8, 7, 6, 11, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  const conv::DirectConv d0 = direct_of(k, DType::kFloat32);
  conv::DirectPlan pieces = conv::plan_direct(h(), d0);
  ASSERT_GT(pieces.rh, 0u);
  pieces.nco = 11, pieces.ps = 4, pieces.cc = 8, pieces.qc = 1, pieces.gq = 1, pieces.q = 1;  // pieces of 4, 4, 3
  // One-row tiles on one cluster: 14 tiles, 3-4 per core, so a core loads inputs ahead into slots
  // its tile before last has freed.
  pieces.rh = 1, pieces.ni = 1, pieces.tb = d0.oh, pieces.gp = 1;
  pieces.jobs = pieces.gp, pieces.clusters = 1;
  auto x = make<float>(k.n, k.c, k.h, k.w, Format::kChannelsLast, 21);
  auto w = make<float>(k.oc, k.c, k.kh, k.kw, Format::kChannelsLast, 22);
  const std::int64_t taps = k.kh * k.kw;
  std::vector<float> wk(w.data.size());  // (o, c, ky, kx) at c taps OC + (taps - 1 - (ky KW + kx)) OC + o
  for (std::int64_t o = 0; o < k.oc; ++o)
    for (std::int64_t c = 0; c < k.c; ++c)
      for (std::int64_t i = 0; i < k.kh; ++i)
        for (std::int64_t j = 0; j < k.kw; ++j)
          wk[static_cast<std::size_t>(c * taps * k.oc + (taps - 1 - (i * k.kw + j)) * k.oc + o)] =
              static_cast<float>(w.get(o, c, i, j));
  std::vector<double> want(static_cast<std::size_t>(k.n * k.oc * d0.oh * d0.ow), 0.0);
  auto y = make<float>(k.n, k.oc, d0.oh, d0.ow, Format::kChannelsLast, 23);
  for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
    want[flat(y.d, n, o, oy, ox)] += w.get(o, ci, i, j) * x.get(n, ci, iy, ix);
  });
  auto run = [&](conv::DirectConv d, const conv::DirectPlan& plan, const std::string& what) {
    SCOPED_TRACE(what + ": " + plan.str());
    d.x_base = reinterpret_cast<std::uintptr_t>(to_device(x.data));
    void* py = to_device(y.data);
    direct_output_to(&d, y, py);
    std::uint32_t kernels = 0;
    ASSERT_EQ(conv::launch_direct(h(), "direct_" + what, d, plan, &kernels), Status::kSuccess) << last_error_detail();
    auto got = y;
    got.data = from_device<float>(py, y.data.size());
    expect_close(got, want, 1e-4, "y");
  };
  conv::DirectPlan halves = pieces;
  halves.ps = 11, halves.cc = 4, halves.qc = 2, halves.split0 = true;
  conv::DirectConv d = d0;
  d.w_base = reinterpret_cast<std::uintptr_t>(to_device(w.data));
  run(d, pieces, "pieces");
  for (const std::size_t gq : {std::size_t{1}, std::size_t{2}}) {
    halves.gq = gq;
    run(d, halves, "split0_gq" + std::to_string(gq));
  }
  d.w_k_major = true;
  d.ws_o = 1, d.ws_c = taps * k.oc, d.ws_kh = -k.kw * k.oc, d.ws_kw = -k.oc;
  d.w_base = reinterpret_cast<std::uintptr_t>(to_device(wk)) + static_cast<std::uint64_t>((taps - 1) * k.oc * 4);
  run(d, pieces, "k_major_pieces");
  halves.gq = 1;  // depth-major weights stage one chunk a group
  run(d, halves, "k_major_split0");
  const conv::DirectPlan own = conv::plan_direct(h(), d);
  ASSERT_GT(own.rh, 0u);
  run(d, own, "k_major");
  conv::DirectConv bad = d;
  bad.ws_o = 2;  // depth-major staging copies runs of output channels: stride 1 only
  EXPECT_EQ(conv::plan_direct(h(), bad).rh, 0u);
}

// Stacked images finished through the epilogue (fp16 from two Cin chunks: rounded into a staging
// buffer, then stored asynchronously): each image of a tile rounds into its own part of the
// staging buffer, so the second image's rounding does not overwrite the first one's store in
// flight (the simulator faults on such a hazard). Forced plan: tiles of two whole images, one
// cluster; written densely (one block per image) and with a row pitch of two output rows (as a
// phase of a strided backward-data writes dx: each image's rows finished as one block and stored
// by one copy), the rows between untouched; without and with a bias, and with each core's last
// intrinsic in two parts (split_last: the first part's rounding and store in flight while the
// second part's block is finished).
TEST_F(ConvTest, DirectStackedImagesThroughTheEpilogue) {
  const Case k{3, 16, 5, 4, 6, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  const conv::DirectConv d0 = direct_of(k, DType::kFloat16);
  conv::DirectPlan plan = conv::plan_direct(h(), d0);
  ASSERT_GT(plan.rh, 0u);
  plan.nco = 6, plan.ps = 6, plan.cc = 8, plan.qc = 2, plan.gq = 1, plan.q = 1;
  plan.rh = d0.oh, plan.ni = 2, plan.tb = 1, plan.gp = 1, plan.jobs = 1, plan.clusters = 1;
  auto x = make<half>(k.n, k.c, k.h, k.w, Format::kChannelsLast, 41);
  auto w = make<half>(k.oc, k.c, k.kh, k.kw, Format::kChannelsLast, 42);
  std::vector<double> conv_out(static_cast<std::size_t>(k.n * k.oc * d0.oh * d0.ow), 0.0);
  const std::int64_t dims[4] = {k.n, k.oc, static_cast<std::int64_t>(d0.oh), static_cast<std::int64_t>(d0.ow)};
  for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
    conv_out[flat(dims, n, o, oy, ox)] += w.get(o, ci, i, j) * x.get(n, ci, iy, ix);
  });
  auto bias = make<half>(1, k.oc, 1, 1, Format::kNchw, 44);
  void* pbias = to_device(bias.data);
  for (const std::int64_t row_gap : {1, 2})  // output rows 1 or 2 rows apart
  for (const bool with_bias : {false, true})
  for (const bool split_last : {false, true}) {
    plan.split_last = split_last;
    SCOPED_TRACE("rows " + std::to_string(row_gap) + " apart" + (with_bias ? ", bias: " : ": ") + plan.str());
    auto y = make<half>(k.n, k.oc, row_gap * d0.oh, d0.ow, Format::kChannelsLast, 43);
    std::vector<double> want(y.data.size());
    for (std::int64_t n = 0; n < y.d[0]; ++n)
      for (std::int64_t o = 0; o < y.d[1]; ++o)
        for (std::int64_t r = 0; r < y.d[2]; ++r)
          for (std::int64_t c = 0; c < y.d[3]; ++c)
            want[flat(y.d, n, o, r, c)] =
                r % row_gap ? static_cast<double>(y.get(n, o, r, c))
                            : conv_out[flat(dims, n, o, r / row_gap, c)] + (with_bias ? bias.get(0, o, 0, 0) : 0.0);
    conv::DirectConv d = d0;
    d.x_base = reinterpret_cast<std::uintptr_t>(to_device(x.data));
    d.w_base = reinterpret_cast<std::uintptr_t>(to_device(w.data));
    void* py = to_device(y.data);
    direct_output_to(&d, y, py);
    if (row_gap > 1) d.out_row_pitch = row_gap * y.s[2];
    if (with_bias) d.out.bias = true, d.out.bias_base = reinterpret_cast<std::uintptr_t>(pbias), d.out.bias_stride = 1;
    std::uint32_t kernels = 0;
    ASSERT_EQ(conv::launch_direct(h(), "direct_stacked", d, plan, &kernels), Status::kSuccess) << last_error_detail();
    ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess) << last_error_detail();
    y.data = from_device<half>(py, y.data.size());
    expect_close(y, want, 3e-3, "y");
  }
}

// Two independent direct convolutions in one launch, each planned on one of tiny's two clusters
// (as the phases of a strided backward-data on a larger device): both results as when alone, one
// kernel; plans needing more clusters than the device has are refused.
TEST_F(ConvTest, DirectConvolutionsShareOneLaunch) {
  const Case ka{2, 8, 7, 6, 11, 3, 3, params(1, 1, 1, 1, 1, 1, 1)}, kb{1, 6, 9, 5, 4, 1, 1, params(0, 0, 1, 1, 1, 1, 1)};
  std::vector<conv::DirectConv> convs;
  std::vector<conv::DirectPlan> plans;
  std::vector<Tensor4<float>> xs, ws, ys;
  std::vector<void*> outs;
  for (const Case& k : {ka, kb}) {
    conv::DirectConv d = direct_of(k, DType::kFloat32);
    plans.push_back(conv::plan_direct(h(), d, 1));
    ASSERT_EQ(plans.back().clusters, 1u) << plans.back().str();
    xs.push_back(make<float>(k.n, k.c, k.h, k.w, Format::kChannelsLast, 31 + int(xs.size())));
    ws.push_back(make<float>(k.oc, k.c, k.kh, k.kw, Format::kChannelsLast, 33 + int(ws.size())));
    ys.push_back(make<float>(k.n, k.oc, d.oh, d.ow, Format::kChannelsLast, 35 + int(ys.size())));
    d.x_base = reinterpret_cast<std::uintptr_t>(to_device(xs.back().data));
    d.w_base = reinterpret_cast<std::uintptr_t>(to_device(ws.back().data));
    outs.push_back(to_device(ys.back().data));
    direct_output_to(&d, ys.back(), outs.back());
    convs.push_back(d);
  }
  std::uint32_t kernels = 0;
  ASSERT_EQ(conv::launch_direct_concurrent(h(), "direct_concurrent", convs, plans, &kernels), Status::kSuccess)
      << last_error_detail();
  EXPECT_EQ(kernels, 1u);
  std::size_t i = 0;
  for (const Case& k : {ka, kb}) {
    Tensor4<float>& y = ys[i];
    y.data = from_device<float>(outs[i], y.data.size());
    std::vector<double> want(y.data.size(), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto a, auto b, auto iy, auto ix) {
      want[flat(y.d, n, o, oy, ox)] += ws[i].get(o, ci, a, b) * xs[i].get(n, ci, iy, ix);
    });
    expect_close(y, want, 1e-4, i == 0 ? "y (3x3)" : "y (1x1)");
    ++i;
  }
  plans[0].clusters = 2;  // 3 clusters on a 2-cluster device
  EXPECT_EQ(conv::launch_direct_concurrent(h(), "direct_concurrent", convs, plans, &kernels), Status::kInternalError);
  EXPECT_NE(last_error_detail().find("3 clusters planned on a device of 2"), std::string::npos) << last_error_detail();
}

// TFU time of the direct kernel = the sum over its intrinsics of the SCALE-Sim formula of
// tfu_timing.h (output-stationary, fold overlap off on this preset): per intrinsic
// ceil(M / R) x ceil(N / C) x (K + R + C - 2) - 1, M = rows x OW, K = KH x KW x cc, N = chunk's channels;
// with split_last each core's last intrinsic in two parts of half its tile (M of each part).
TEST_F(ConvTest, DirectForwardTfuCycles) {
  const Case k{2, 16, 7, 6, 10, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  const conv::DirectConv d = direct_of(k, DType::kFloat32);
  const conv::DirectPlan planned = conv::plan_direct(h(), d);
  ASSERT_GT(planned.rh, 0u);
  const std::uint64_t r = 4, c = 4;  // tiny: fp32 array 4 x 4, 4 compute cores a cluster
  const std::size_t cores = 4;
  auto f = [&](std::uint64_t m, std::uint64_t kk, std::uint64_t n) {
    return ((m + r - 1) / r) * ((n + c - 1) / c) * (kk + r + c - 2) - 1;
  };
  // A tile of several whole images stacks their padded rows (oh + kh - 1 each, stride 1).
  auto out_rows = [&](std::size_t images, std::size_t rows) -> std::uint64_t {
    return images == 1 ? rows : images * (d.oh + d.kh - 1) - (d.kh - 1);
  };
  // As planned, and forced to two Cin chunks of 8 (no pieces): each core's last intrinsic then
  // runs in two parts, its tile's images (else rows) halved.
  conv::DirectPlan chunks = planned;
  chunks.cc = 8, chunks.qc = 2, chunks.ps = chunks.nco, chunks.split_last = true;
  for (const conv::DirectPlan& plan : {planned, chunks}) {
    std::uint64_t want = 0, intrinsics = 0;
    const std::size_t tiles = (d.n + plan.ni - 1) / plan.ni * plan.tb;
    const std::uint64_t kk = d.kh * d.kw * plan.cc;
    for (std::size_t job = 0; job < plan.jobs; ++job) {
      const std::size_t co0 = (job / plan.gp) * plan.nco, nn = std::min(plan.nco, d.oc - co0);
      const bool pieces = plan.qc == 1 && plan.ps < nn;
      const gemm::Span jt = gemm::split_units(tiles, plan.gp, 1, job % plan.gp);
      for (std::size_t core = 0; core < cores; ++core) {
        const gemm::Span mine = gemm::split_units(jt.size, cores, 1, core);
        for (std::size_t i = 0; i < mine.size; ++i) {
          const std::size_t t = jt.begin + mine.begin + i;
          const std::size_t n = (t / plan.tb) * plan.ni, images = std::min(plan.ni, d.n - n);
          const std::size_t y0 = (t % plan.tb) * plan.rh, rows = std::min(plan.rh, d.oh - y0);
          const std::uint64_t m = out_rows(images, rows) * d.ow;
          // One intrinsic per Cin chunk, or (one chunk) per piece of ps output channels.
          for (std::uint64_t p0 = 0; p0 < nn; p0 += pieces ? plan.ps : nn) {
            const std::uint64_t np = pieces ? std::min<std::uint64_t>(plan.ps, nn - p0) : nn;
            want += plan.qc * f(m, kk, np), intrinsics += plan.qc;
          }
          if (!plan.split_last || i + 1 < mine.size || pieces || (images == 1 && rows == 1)) continue;
          const std::uint64_t ma = images > 1 ? out_rows(images / 2, rows) * d.ow : rows / 2 * d.ow;
          const std::uint64_t mb = images > 1 ? out_rows(images - images / 2, rows) * d.ow : (rows - rows / 2) * d.ow;
          want += f(ma, kk, nn) + f(mb, kk, nn) - f(m, kk, nn), ++intrinsics;
        }
      }
    }
    ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
    conv::DirectConv dd = d;
    auto x = make<float>(k.n, k.c, k.h, k.w, Format::kChannelsLast, 31);
    auto w = make<float>(k.oc, k.c, k.kh, k.kw, Format::kChannelsLast, 32);
    auto y = make<float>(k.n, k.oc, d.oh, d.ow, Format::kChannelsLast, 33);
    std::vector<double> ref(y.data.size(), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
      ref[flat(y.d, n, o, oy, ox)] += w.get(o, ci, i, j) * x.get(n, ci, iy, ix);
    });
    dd.x_base = reinterpret_cast<std::uintptr_t>(to_device(x.data));
    dd.w_base = reinterpret_cast<std::uintptr_t>(to_device(w.data));
    void* py = to_device(y.data);
    direct_output_to(&dd, y, py);
    std::uint32_t kernels = 0;
    ASSERT_EQ(conv::launch_direct(h(), "direct_cycles", dd, plan, &kernels), Status::kSuccess) << last_error_detail();
    ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess) << last_error_detail();
    y.data = from_device<float>(py, y.data.size());
    expect_close(y, ref, 1e-4, "y");
    mlusimDeviceStats_t st{};
    ASSERT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
    EXPECT_EQ(st.engine_intrinsics[2], intrinsics) << plan.str();
    EXPECT_EQ(st.engine_cycles[2], want) << plan.str();
  }
}

TEST_F(ConvTest, ForwardDepthwise) {
  forward<float>({2, 4, 9, 8, 8, 3, 3, params(1, 1, 2, 1, 1, 2, 4)}, Format::kNchw, Format::kNchw, Format::kNchw, true,
                 1e-4);
  forward<half>({1, 6, 10, 10, 6, 3, 3, params(1, 1, 1, 1, 1, 1, 6)}, Format::kNhwc, Format::kNchw, Format::kNchw,
                false, 3e-3);
}

TEST_F(ConvTest, BackwardDataFp32) {
  for (const Case& k : kCases) backward_data<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
}

TEST_F(ConvTest, BackwardDataFp16AndLayouts) {
  backward_data<half>(kCases[0], Format::kNchw, Format::kNchw, Format::kNchw, 3e-3);
  backward_data<float>(kCases[1], Format::kNhwc, Format::kNhwc, Format::kNhwc, 1e-4);
  backward_data<float>(kCases[2], Format::kPadded, Format::kChannelsLast, Format::kPadded, 1e-4);
}

// Stride 1 with channels-innermost operands: the direct kernel on the mirrored, transposed
// weights (padding up to dilation x (kernel - 1), 1x1 / 3x3 / 7x7, dilation, odd sizes, fp16).
TEST_F(ConvTest, DirectBackwardData) {
  backward_data<float>(kCases[0], Format::kChannelsLast, Format::kChannelsLast, Format::kChannelsLast, 1e-4);
  backward_data<float>(kCases[4], Format::kNhwc, Format::kNhwc, Format::kNhwc, 1e-4);
  backward_data<float>({2, 5, 9, 8, 6, 3, 2, params(2, 0, 1, 1, 2, 1, 1)}, Format::kChannelsLast,
                       Format::kChannelsLast, Format::kChannelsLast, 1e-4);
  backward_data<float>({1, 3, 12, 11, 8, 7, 7, params(3, 2, 1, 1, 1, 1, 1)}, Format::kNhwc, Format::kNhwc,
                       Format::kNhwc, 1e-4);
  backward_data<half>(kCases[0], Format::kNhwc, Format::kNhwc, Format::kNhwc, 3e-3);
  backward_data<float>({2, 512, 6, 5, 40, 3, 3, params(1, 2, 1, 1, 1, 1, 1)}, Format::kChannelsLast,
                       Format::kChannelsLast, Format::kChannelsLast, 1e-4);
}

// Strided, channels-innermost: one direct convolution per output phase with its sub-kernel
// (3x3 / 2, 7x7 / 2 with odd sizes, stride 2 x 1 with asymmetric padding, fp16), the phases with
// taps in one launch, one each or (the 3x3 / 2 and 3x3 / 4 here, fp32 and fp16 with a bias) as
// one phased kernel (DirectConv::phases, below). Phases no tap reaches are filled
// with zeros or the bias over dx's previous contents: a 1x1 / 2 is one direct kernel, one fill of
// the odd columns of even rows and one of whole odd rows; a 3x3 / 4 has tapless rows and tapless
// columns in rows with taps. Each phase reads its mirrored sub-kernel straight from w (no
// transposed copy).
TEST_F(ConvTest, DirectBackwardDataStrided) {
  const Format cl = Format::kChannelsLast;
  const Case s2{2, 6, 9, 8, 5, 3, 3, params(1, 1, 2, 2, 1, 1, 1)};
  conv::ConvShape shape;
  shape.n = 2, shape.c = 6, shape.h = 9, shape.w = 8, shape.oc = 5, shape.kh = 3, shape.kw = 3;
  shape.p = s2.p;
  const std::vector<conv::DataPhase> phases = conv::backward_data_phases(shape);
  ASSERT_EQ(phases.size(), 4u);
  EXPECT_EQ(phases[0].taps_h * phases[0].taps_w + phases[1].taps_h * phases[1].taps_w +
                phases[2].taps_h * phases[2].taps_w + phases[3].taps_h * phases[3].taps_w,
            9u);
  EXPECT_EQ(phases[3].out_h, 4u);  // rows 1, 3, 5, 7 of 9
  backward_data<float>(s2, cl, cl, cl, 1e-4);
  EXPECT_EQ(h().ops().back().kernels, 1u);  // the four phases in one direct kernel
  backward_data<float>({1, 4, 21, 19, 6, 7, 7, params(3, 3, 2, 2, 1, 1, 1)}, Format::kNhwc, Format::kNhwc,
                       Format::kNhwc, 1e-4);
  backward_data<float>({2, 5, 10, 7, 4, 3, 2, params(2, 0, 2, 1, 1, 1, 1)}, cl, cl, cl, 1e-4);
  backward_data<half>(s2, cl, cl, cl, 3e-3);
  backward_data<float>(kCases[5], cl, cl, cl, 1e-4);
  EXPECT_EQ(h().ops().back().kernels, 3u);
  backward_data<float>(kCases[5], cl, cl, cl, 1e-4, /*bias=*/true);
  const Case s4{2, 5, 13, 14, 6, 3, 3, params(0, 0, 4, 4, 1, 1, 1)};  // rows and columns 3, 7, 11: no taps
  backward_data<float>(s4, cl, cl, cl, 1e-4);
  // 9 phases with taps (one direct kernel), 3 tapless in rows with taps, rows 3 mod 4 whole.
  EXPECT_EQ(h().ops().back().kernels, 1u + 3 + 1);
  backward_data<half>(s4, Format::kNhwc, Format::kNhwc, Format::kNhwc, 3e-3, /*bias=*/true);
  EXPECT_EQ(h().ops().back().kernels, 1u + 3 + 1);
}

// The phases of a strided backward-data as one direct kernel (DirectConv::phases): unite_phases
// places each phase's window in the union's, each tile's dy is loaded once and every phase runs
// its own intrinsic over whole tile rows, Wp - kw + 1 columns of which its ow first are kept.
// 3x3 / 2 on 9 x 8 (phases of 1 x 1, 1 x 2, 2 x 1 and 2 x 2 taps; 5 and 4 rows): at padding 1
// every phase is padded by 0 and the union is 2 x 2 at padding 0 (a 1-tap phase computes a
// column it drops); at padding 0 the 2-tap dimensions are padded by 1, so the union is 2 x 2 at
// padding 1 and a 1-tap phase's window starts one row or column in (its last row reads past the
// tile into the columns it drops). dx against the transposed convolution's loops, as planned and
// forced to two Cin chunks; the TFU time = the sum over the intrinsics of tfu_timing.h's formula
// (tiny: fp32 4 x 4, output-stationary, folds not pipelined), per tile, Cin chunk and phase with
// rows there: M = rows x (Wp - kw + 1), K = taps x cc, N = the chunk's output channels.
TEST_F(ConvTest, DirectBackwardDataPhasesShareTheInputTile) {
  for (const std::int64_t pad : {1, 0}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    const Case k{2, 8, 9, 8, 6, 3, 3, params(pad, pad, 2, 2, 1, 1, 1)};
    conv::ConvShape shape;
    shape.n = k.n, shape.c = k.c, shape.h = k.h, shape.w = k.w, shape.oc = k.oc, shape.kh = k.kh, shape.kw = k.kw;
    shape.p = k.p;
    const std::int64_t oh = out_dim(k.h, k.kh, pad, 2, 1), ow = out_dim(k.w, k.kw, pad, 2, 1);
    auto dy = make<float>(k.n, k.oc, oh, ow, Format::kChannelsLast, 61);
    auto w = make<float>(k.oc, k.c, k.kh, k.kw, Format::kChannelsLast, 62);
    auto dx = make<float>(k.n, k.c, k.h, k.w, Format::kChannelsLast, 63);
    std::vector<double> want(dx.data.size(), 0.0);
    for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
      want[flat(dx.d, n, ci, iy, ix)] += w.get(o, ci, i, j) * dy.get(n, o, oy, ox);
    });
    conv::DirectConv u;
    u.dtype = DType::kFloat32;
    u.n = k.n, u.h = static_cast<std::size_t>(oh), u.w = static_cast<std::size_t>(ow), u.c = k.oc, u.oc = k.c;
    u.xs_n = dy.s[0], u.xs_h = dy.s[2], u.xs_w = dy.s[3];
    u.w_k_major = true, u.ws_o = w.s[1], u.ws_c = w.s[0];
    u.x_base = reinterpret_cast<std::uintptr_t>(to_device(dy.data));
    u.w_base = reinterpret_cast<std::uintptr_t>(to_device(w.data));
    void* pdx = to_device(dx.data);
    direct_output_to(&u, dx, pdx);
    u.out.row_stride = 2 * dx.s[3], u.out_row_pitch = 2 * dx.s[2];
    for (const conv::DataPhase& ph : conv::backward_data_phases(shape)) {
      conv::DirectConv::Phase p;
      p.kh = ph.taps_h, p.kw = ph.taps_w, p.oh = ph.out_h, p.ow = ph.out_w, p.pad_h = ph.pad_h, p.pad_w = ph.pad_w;
      p.ws_kh = -2 * w.s[2], p.ws_kw = -2 * w.s[3];
      using I = std::int64_t;
      p.w_off = I(ph.k0y + 2 * (ph.taps_h - 1)) * w.s[2] + I(ph.k0x + 2 * (ph.taps_w - 1)) * w.s[3];
      p.out_off = I(ph.ry) * dx.s[2] + I(ph.rx) * dx.s[3];
      u.phases.push_back(p);
    }
    ASSERT_EQ(u.phases.size(), 4u);
    conv::unite_phases(u);
    EXPECT_EQ(u.kh, 2u);
    EXPECT_EQ(u.kw, 2u);
    EXPECT_EQ(u.pad_h, 1 - pad);
    EXPECT_EQ(u.pad_w, 1 - pad);
    EXPECT_EQ(u.oh, 5u);
    EXPECT_EQ(u.ow, 4u);
    for (const conv::DirectConv::Phase& p : u.phases) {
      EXPECT_EQ(p.row_off, p.kh == 1 && pad == 0 ? 1u : 0u);
      EXPECT_EQ(p.col_off, p.kw == 1 && pad == 0 ? 1u : 0u);
    }
    const conv::DirectPlan planned = conv::plan_direct(h(), u);
    ASSERT_GT(planned.rh, 0u);
    EXPECT_FALSE(planned.split_last);
    EXPECT_EQ(planned.ni, 1u);
    conv::DirectPlan chunks = planned;
    chunks.cc = 3, chunks.qc = 2, chunks.ps = chunks.nco, chunks.split0 = false;
    const std::uint64_t r = 4, c = 4, wp = u.ow + u.kw - 1;  // the input tile's width
    auto f = [&](std::uint64_t m, std::uint64_t kk, std::uint64_t n) {
      return ((m + r - 1) / r) * ((n + c - 1) / c) * (kk + r + c - 2) - 1;
    };
    for (const conv::DirectPlan& plan : {planned, chunks}) {
      SCOPED_TRACE(plan.str());
      std::uint64_t want_cycles = 0, intrinsics = 0;
      for (std::size_t job = 0; job < plan.jobs; ++job) {
        const std::size_t nn = std::min(plan.nco, u.oc - (job / plan.gp) * plan.nco);
        const gemm::Span jt = gemm::split_units(k.n * plan.tb, plan.gp, 1, job % plan.gp);
        for (std::size_t core = 0; core < 4; ++core) {
          const gemm::Span mine = gemm::split_units(jt.size, 4, 1, core);
          for (std::size_t t = jt.begin + mine.begin; t < jt.begin + mine.begin + mine.size; ++t) {
            const std::size_t y0 = (t % plan.tb) * plan.rh;
            for (const conv::DirectConv::Phase& p : u.phases) {
              if (y0 >= p.oh) continue;
              const std::uint64_t rows = std::min(plan.rh, p.oh - y0);
              want_cycles += plan.qc * f(rows * (wp - p.kw + 1), p.kh * p.kw * plan.cc, nn), intrinsics += plan.qc;
            }
          }
        }
      }
      ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
      std::uint32_t kernels = 0;
      ASSERT_EQ(conv::launch_direct(h(), "direct_phases", u, plan, &kernels), Status::kSuccess) << last_error_detail();
      ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess) << last_error_detail();
      auto got = dx;
      got.data = from_device<float>(pdx, dx.data.size());
      expect_close(got, want, 1e-4, "dx");
      mlusimDeviceStats_t st{};
      ASSERT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
      EXPECT_EQ(st.engine_intrinsics[2], intrinsics);
      EXPECT_EQ(st.engine_cycles[2], want_cycles);
    }
  }
}

TEST_F(ConvTest, BackwardDataDepthwise) {
  backward_data<float>({2, 4, 9, 8, 8, 3, 3, params(1, 1, 2, 1, 1, 2, 4)}, Format::kNchw, Format::kNchw, Format::kNchw,
                       1e-4);
  backward_data<half>({1, 3, 7, 9, 3, 3, 3, params(1, 2, 2, 2, 1, 1, 3)}, Format::kNhwc, Format::kNchw, Format::kNhwc,
                      3e-3);
}

// The bias of a transposed convolution, added in fp32 by each path's epilogue before the one
// rounding: the implicit GEMM (NCHW; strided; groups), the direct kernel (stride 1 and per phase),
// the depthwise VFU kernel; fp16 at a tolerance a second rounding (dx rounded, then + bias) fails.
TEST_F(ConvTest, BackwardDataBias) {
  const Format cl = Format::kChannelsLast;
  for (std::size_t i : {0, 1, 2}) backward_data<float>(kCases[i], Format::kNchw, Format::kNchw, Format::kNchw, 1e-4, true);
  backward_data<float>(kCases[0], cl, cl, cl, 1e-4, true);
  backward_data<float>({2, 6, 9, 8, 5, 3, 3, params(1, 1, 2, 2, 1, 1, 1)}, cl, cl, cl, 1e-4, true);
  backward_data<float>({2, 4, 9, 8, 8, 3, 3, params(1, 1, 2, 1, 1, 2, 4)}, Format::kNchw, Format::kNchw, Format::kNchw,
                       1e-4, true);
  backward_data<half>(kCases[0], Format::kNchw, Format::kNchw, Format::kNchw, 3e-3, true);
  backward_data<half>(kCases[0], Format::kNhwc, Format::kNhwc, Format::kNhwc, 3e-3, true);
  backward_data<half>({1, 3, 7, 9, 3, 3, 3, params(1, 2, 2, 2, 1, 1, 3)}, Format::kNhwc, Format::kNchw, Format::kNhwc,
                      3e-3, true);
}

// On the tiny preset (256 KiB of cluster SRAM) the dy window of every one of 256 (or 128) output
// channels over a 40-pixel-wide image does not fit even for the narrowest tile, so depth steps
// stay within one tap and stage only their channels (these shapes had no tiling before that).
TEST_F(ConvTest, BackwardDataWideImageManyChannelsStepsWithinATap) {
  backward_data<float>({2, 16, 40, 40, 256, 1, 1, params(0, 0, 1, 1, 1, 1, 1)}, Format::kNchw, Format::kNchw,
                       Format::kNchw, 1e-4);
  backward_data<float>({1, 8, 40, 40, 128, 3, 3, params(1, 1, 2, 2, 1, 1, 1)}, Format::kNchw, Format::kNchw,
                       Format::kNchw, 1e-4, true);
}

TEST_F(ConvTest, BackwardWeightFp32) {
  for (const Case& k : kCases) backward_weight<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
}

TEST_F(ConvTest, BackwardWeightFp16AndLayouts) {
  backward_weight<half>(kCases[0], Format::kNchw, Format::kNchw, Format::kNchw, 5e-3);
  backward_weight<float>(kCases[1], Format::kNhwc, Format::kNhwc, Format::kNhwc, 1e-4);
  backward_weight<float>(kCases[2], Format::kChannelsLast, Format::kPadded, Format::kChannelsLast, 1e-4);
}

// A channels-innermost 1x1 stride-1 weight gradient is one matmul over the pixels,
// dW = dY^T x X: exactly one operand is repacked (the smaller, x with 3 channels against dy's 7;
// dy with 4 against x's 9), never both, and the result matches for fp32 and fp16, with dw
// channels-last or contiguous. Padded (not evenly spaced) pixels keep the implicit GEMM.
TEST_F(ConvTest, PointwiseBackwardWeightIsOneMatmul) {
  const Format cl = Format::kChannelsLast;
  auto packs = [&](auto&& run) {
    std::size_t before = 0, after = 0;
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
    EXPECT_EQ(mlusimGetKernelRecordCount(0, &before), cnrtSuccess);
    run();
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
    EXPECT_EQ(mlusimGetKernelRecordCount(0, &after), cnrtSuccess);
    std::size_t n = 0;
    for (std::size_t i = before; i < after; ++i) {
      mlusimKernelRecord_t r{};
      EXPECT_EQ(mlusimGetKernelRecord(0, i, &r), cnrtSuccess);
      if (std::string(r.name).find("pack") != std::string::npos) ++n;
    }
    return n;
  };
  const Case narrow_x{2, 3, 9, 8, 7, 1, 1, params(0, 0, 1, 1, 1, 1, 1)};
  const Case narrow_dy{3, 9, 6, 5, 4, 1, 1, params(0, 0, 1, 1, 1, 1, 1)};
  EXPECT_EQ(packs([&] { backward_weight<float>(narrow_x, cl, cl, cl, 1e-4); }), 1u);
  EXPECT_EQ(packs([&] { backward_weight<float>(narrow_dy, Format::kNhwc, Format::kNhwc, Format::kNchw, 1e-4); }), 1u);
  backward_weight<half>(narrow_x, cl, cl, Format::kNchw, 5e-3);
  backward_weight<float>(narrow_dy, Format::kPadded, cl, cl, 1e-4);
}

// Channels-innermost operands run the direct backward-weight kernel (conv/direct_weight_grad.h):
// 3x3 same padding, 7x7 / 2, 1x1 / 2, stride and dilation with asymmetric padding, fp16, and a
// case with several channel blocks: as planned, with the input tiles shared through SRAM (forced:
// whether the planner shares them depends on its estimates), and with its pixels split over two
// cores (sums reduced through SRAM); forced plans with taps one per matmul and four per matmul.
// (1x1 stride-1 convolutions are one matmul, above; fewer input channels than array columns keep
// the GEMM.)
template <class T>
void ConvTest::forced_weight_grad(const Case& k, const conv::WeightGradPlan& plan, double tol, const std::string& what) {
  const Format cl = Format::kChannelsLast;
  const conv::WeightGradConv d = weight_grad_of(k, std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat16);
  auto x = make<T>(k.n, k.c, k.h, k.w, cl, 8);
  auto gy = make<T>(k.n, k.oc, d.oh, d.ow, cl, 9);
  auto gw = make<T>(k.oc, k.c, k.kh, k.kw, cl, 10);
  conv::WeightGradConv run = d;
  const auto addr = [](void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
  run.x_base = addr(to_device(x.data)), run.dy_base = addr(to_device(gy.data));
  void* pdw = to_device(gw.data);
  run.dw_base = addr(pdw);
  std::uint32_t kernels = 0;
  ASSERT_EQ(conv::launch_weight_grad(h(), "weight_grad_" + what, run, plan, &kernels), Status::kSuccess)
      << last_error_detail();
  gw.data = from_device<T>(pdw, gw.data.size());
  std::vector<double> want(gw.data.size(), 0.0);
  for_each_tap(k, [&](auto n, auto o, auto oy, auto ox, auto ci, auto i, auto j, auto iy, auto ix) {
    want[flat(gw.d, o, ci, i, j)] += gy.get(n, o, oy, ox) * x.get(n, ci, iy, ix);
  });
  expect_close(gw, want, tol, ("dw (" + what + ")").c_str());
}

TEST_F(ConvTest, DirectBackwardWeight) {
  const Format cl = Format::kChannelsLast;
  backward_weight<float>(kCases[0], cl, cl, cl, 1e-4);
  backward_weight<float>({1, 4, 11, 10, 6, 3, 2, params(2, 1, 2, 1, 2, 1, 1)}, Format::kNhwc, Format::kNhwc,
                         Format::kNhwc, 1e-4);
  backward_weight<float>({1, 4, 20, 20, 8, 7, 7, params(3, 3, 2, 2, 1, 1, 1)}, cl, cl, cl, 1e-4);
  backward_weight<float>(kCases[5], Format::kNhwc, Format::kNhwc, Format::kNhwc, 1e-4);
  backward_weight<half>(kCases[0], cl, cl, cl, 5e-3);
  const Case big{2, 40, 6, 5, 36, 3, 3, params(1, 2, 1, 1, 1, 1, 1)};
  const conv::WeightGradPlan plan = conv::plan_weight_grad(h(), weight_grad_of(big, DType::kFloat32));
  ASSERT_GT(plan.ocb, 0u);
  EXPECT_GT(plan.nob * plan.ncb, 1u) << plan.str();
  backward_weight<float>(big, cl, cl, cl, 1e-4);
  // Shared input tiles: a cluster's cores take 4 blocks of the same input channels (9 output
  // channels each) and read the input tiles the memory core stages in SRAM; 16 jobs on 8 cores.
  conv::WeightGradPlan shared = plan;
  shared.ocb = 9, shared.cb = 10, shared.s = 1, shared.shared = true, shared.nob = 4, shared.ncb = 4;
  shared.jobs = 16, shared.clusters = 2, shared.rounds = 2;
  for (const std::size_t tg : {std::size_t{1}, std::size_t{4}}) {
    shared.tg = tg;
    forced_weight_grad<float>(big, shared, 1e-4, "shared, tg = " + std::to_string(tg));
  }
  // Two pixel parts per block: each core's partial sums reach the others through SRAM, each tap
  // group's copied there once its last matmul is done (during the next group's).
  conv::WeightGradPlan split = plan;
  split.s = 2, split.shared = false, split.jobs = plan.nob * plan.ncb * 2;
  split.clusters = std::min<std::size_t>(2, (split.jobs + 3) / 4), split.rounds = (split.jobs + 4 * split.clusters - 1) / (4 * split.clusters);
  for (const std::size_t tg : {std::size_t{1}, std::size_t{4}}) {  // 4: groups of 4, 4 and 1 taps
    split.tg = tg;
    forced_weight_grad<float>(big, split, 1e-4, "s = 2, tg = " + std::to_string(tg));
  }
}

// Without a reduction (s == 1) each tap group's sums are stored while the next group's matmul runs
// (cast in a free input slot for fp16), and an input slot keeps its zeroed padding columns for
// the next job unless it served as that scratch or the next job's channel count differs. Forced
// plans on one cluster, so each core runs two jobs (6 jobs on 4 cores): blocks of 7 input
// channels (core 0: two of them, the same layout; core 1: 7 then the last block's 36 - 5 x 7 = 1
// channel), jobs of one tile (the store's scratch is the unused second slot) and of several
// tiles (the last tile's free slot). 12 output channels x 7 cast into a slot reach past its
// first row (7 pixels wide) into the left padding column of the second, which no load writes.
// Taps one per matmul, or grouped side by side (tg = 2: four pairs and a single tap, a store of
// two taps' runs per output channel; tg = 9: one matmul of all nine, the next tile's whole input
// loaded during it). Each also with the jobs' first tiles cut in halves (half_first: 3 rows as 1 +
// 2, a whole image's 6 rows as 3 + 3, a tile of two images as one image each), and resident (a
// job's last two tiles run group by group, both kept on chip, each group stored in halves during
// the next: jobs of two tiles, and of four whose first two run tile by tile; a job of one tile
// runs as usual).
TEST_F(ConvTest, DirectBackwardWeightStoresTapsEarly) {
  const Case k{2, 36, 6, 5, 12, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  conv::WeightGradPlan plan = conv::plan_weight_grad(h(), weight_grad_of(k, DType::kFloat32));
  ASSERT_GT(plan.ocb, 0u);
  plan.ocb = 12, plan.cb = 7, plan.s = 1, plan.shared = false, plan.clusters = 1;
  plan.nob = 1, plan.ncb = 6, plan.jobs = plan.nob * plan.ncb;
  plan.rounds = (plan.jobs + 3) / 4;  // tiny: 4 cores a cluster
  for (const std::size_t tg : {std::size_t{1}, std::size_t{2}, std::size_t{9}}) {
    plan.tg = tg;
    const std::string g = "tg " + std::to_string(tg) + ", ";
    for (const int mode : {0, 1, 2}) {  // tiles whole, half_first, resident
      plan.half_first = mode == 1, plan.resident = mode == 2;
      const std::string gh = g + (mode == 1 ? "half first, " : mode == 2 ? "resident, " : "");
      for (const std::size_t rows : {std::size_t{3}, std::size_t{6}}) {  // 4 tiles of 3 rows, or 2 whole images
        plan.rh = rows, plan.ni = 1, plan.tb = (6 + rows - 1) / rows, plan.tiles = 2 * plan.tb;
        forced_weight_grad<float>(k, plan, 1e-4, gh + "fp32 rh " + std::to_string(rows));
        forced_weight_grad<half>(k, plan, 5e-3, gh + "fp16 rh " + std::to_string(rows));
      }
      plan.rh = 6, plan.ni = 2, plan.tb = 1, plan.tiles = 1;  // one tile: both images
      forced_weight_grad<float>(k, plan, 1e-4, gh + "fp32 one tile");
      forced_weight_grad<half>(k, plan, 5e-3, gh + "fp16 one tile");
    }
  }
}

// TFU time of the direct backward-weight kernel = the sum over its intrinsics of tfu_timing.h's
// formula (output-stationary, fold overlap off; tiny's fp32 array is 4 x 4): per tile of P output
// pixels, per group of g taps (tg, the last group the taps left) M = ocb, K = P, N = g x cb (dY
// is the matmul's A stored depth-major: no transpose intrinsic): ceil(M / R) x ceil(N / C) x (K + R + C - 2) - 1. As
// planned, and with the taps forced into groups of 2 and 4; each with and without the jobs' first
// tiles cut in halves (half_first: two tiles of half the pixels, by images, else rows), and
// resident (the same intrinsics in another order).
TEST_F(ConvTest, DirectBackwardWeightTfuCycles) {
  const Case k{2, 16, 7, 6, 10, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  const conv::WeightGradConv d = weight_grad_of(k, DType::kFloat32);
  const conv::WeightGradPlan planned = conv::plan_weight_grad(h(), d);
  ASSERT_GT(planned.ocb, 0u);
  const std::uint64_t r = 4, c = 4, taps = d.kh * d.kw;
  auto f = [&](std::uint64_t m, std::uint64_t kk, std::uint64_t n) {
    return ((m + r - 1) / r) * ((n + c - 1) / c) * (kk + r + c - 2) - 1;
  };
  for (const std::size_t tg : {planned.tg, std::size_t{2}, std::size_t{4}})
  for (const int mode : {0, 1, 2}) {  // tiles whole, half_first, resident
    const bool halves = mode == 1;
    conv::WeightGradPlan plan = planned;
    plan.tg = tg, plan.half_first = halves, plan.resident = mode == 2;
    std::uint64_t want = 0, intrinsics = 0;
    for (std::size_t job = 0; job < plan.jobs; ++job) {
      const std::size_t b = job / plan.s, part = job % plan.s;
      const std::size_t ob = plan.shared ? b % plan.nob : b / plan.ncb, cbi = plan.shared ? b / plan.nob : b % plan.ncb;
      const std::size_t on = std::min(plan.ocb, d.oc - ob * plan.ocb), cn = std::min(plan.cb, d.c - cbi * plan.cb);
      const gemm::Span tiles = gemm::split_units(plan.tiles, plan.s, 1, part);
      std::vector<std::uint64_t> pixels;  // the job's tiles
      for (std::size_t t = tiles.begin; t < tiles.begin + tiles.size; ++t) {
        const std::size_t n0 = (t / plan.tb) * plan.ni, ni = std::min(plan.ni, d.n - n0);
        const std::size_t oy0 = (t % plan.tb) * plan.rh, rows = std::min(plan.rh, d.oh - oy0);
        if (halves && t == tiles.begin && (ni > 1 || rows > 1)) {
          const std::size_t ni_a = ni > 1 ? ni / 2 : 1, rows_a = ni > 1 ? rows : rows / 2;
          pixels.push_back(ni_a * rows_a * d.ow);
          pixels.push_back((ni > 1 ? (ni - ni_a) * rows : rows - rows_a) * d.ow);
        } else {
          pixels.push_back(ni * rows * d.ow);
        }
      }
      for (const std::uint64_t px : pixels) {
        for (std::uint64_t t0 = 0; t0 < taps; t0 += tg) want += f(on, px, std::min<std::uint64_t>(tg, taps - t0) * cn), ++intrinsics;
      }
    }
    ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
    forced_weight_grad<float>(k, plan, 1e-4, "tg " + std::to_string(tg) + (halves ? " half first" : "") +
                                                 (plan.resident ? " resident" : ""));
    mlusimDeviceStats_t st{};
    ASSERT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
    EXPECT_EQ(st.engine_intrinsics[2], intrinsics) << plan.str();
    EXPECT_EQ(st.engine_cycles[2], want) << plan.str();
  }
}

TEST_F(ConvTest, BackwardWeightDepthwise) {
  backward_weight<float>({2, 4, 9, 8, 8, 3, 3, params(1, 1, 2, 1, 1, 2, 4)}, Format::kNchw, Format::kNchw,
                         Format::kNchw, 1e-4);
  backward_weight<half>({2, 3, 7, 9, 3, 3, 3, params(1, 2, 2, 2, 1, 1, 3)}, Format::kNhwc, Format::kNhwc, Format::kNchw,
                        5e-3);
}

TEST_F(ConvTest, RandomShapes) {
  // Random geometry: kernel, stride, padding, dilation, groups (depthwise included), all three ops.
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 30; ++iter) {
    const int groups = pick(0, 3) == 0 ? 1 : pick(1, 3);
    const std::int64_t cg = pick(1, 5), ocg = pick(1, 4);
    Case k{pick(1, 2),   cg * groups,
           pick(4, 12),  pick(4, 12),
           ocg * groups, pick(1, 4),
           pick(1, 4),   params(pick(0, 2), pick(0, 2), pick(1, 3), pick(1, 3), pick(1, 2), pick(1, 2), groups)};
    if ((k.kh - 1) * k.p.dilation_h + 1 > k.h + 2 * k.p.pad_h || (k.kw - 1) * k.p.dilation_w + 1 > k.w + 2 * k.p.pad_w)
      continue;
    SCOPED_TRACE("case " + std::to_string(iter));
    forward<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, pick(0, 1), 1e-4);
    backward_data<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
    backward_weight<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
  }
}

TEST_F(ConvTest, RandomShapesChannelsLast) {
  // The direct kernels (forward, backward-data phases, backward-weight) on random geometry.
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Format cl = Format::kChannelsLast;
  for (int iter = 0; iter < 20; ++iter) {
    Case k{pick(1, 3), pick(4, 12), pick(4, 12), pick(4, 12), pick(1, 10), pick(1, 4), pick(1, 4),
           params(pick(0, 2), pick(0, 2), pick(1, 3), pick(1, 3), pick(1, 2), pick(1, 2), 1)};
    if ((k.kh - 1) * k.p.dilation_h + 1 > k.h + 2 * k.p.pad_h || (k.kw - 1) * k.p.dilation_w + 1 > k.w + 2 * k.p.pad_w)
      continue;
    SCOPED_TRACE("case " + std::to_string(iter));
    forward<float>(k, cl, cl, cl, pick(0, 1), 1e-4);
    backward_data<float>(k, cl, cl, cl, 1e-4);
    backward_weight<float>(k, cl, cl, cl, 1e-4);
  }
}

TEST_F(ConvTest, EmptyBatchLaunchesNothing) {
  const Case k{0, 3, 5, 5, 4, 3, 3, params(1, 1, 1, 1, 1, 1, 1)};
  forward<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, true, 0);
  backward_data<float>(k, Format::kNchw, Format::kNchw, Format::kNchw, 0);
  EXPECT_EQ(h().ops().back().kernels, 0u);
}

TEST_F(ConvTest, RecordsMacsAndBytes) {
  h().clear_ops();
  forward<float>(kCases[0], Format::kNchw, Format::kNchw, Format::kNchw, false, 1e-4);
  ASSERT_FALSE(h().ops().empty());
  const OpRecord& r = h().ops().back();
  EXPECT_EQ(r.name, "conv2d_forward");
  EXPECT_EQ(r.macs, 2u * 7 * 9 * 9 * 5 * 3 * 3);
  EXPECT_EQ(r.bytes, (2u * 5 * 81 + 7 * 5 * 9 + 2 * 7 * 81) * 4);
}

TEST_F(ConvTest, BadArguments) {
  const ConvParams p = params(1, 1, 1, 1, 1, 1, 1);
  const TensorDesc x = desc(DType::kFloat32, {1, 4, 6, 6}), w = desc(DType::kFloat32, {8, 4, 3, 3});
  const TensorDesc y = desc(DType::kFloat32, {1, 8, 6, 6});
  void* m = dalloc(4096);
  auto fwd = [&](const ConvParams& q, const TensorDesc& a, const TensorDesc& b, const TensorDesc& c) {
    return conv2d_forward(&h(), q, a, m, b, m, nullptr, nullptr, c, m, nullptr, 0);
  };
  EXPECT_EQ(conv2d_forward(nullptr, p, x, m, w, m, nullptr, nullptr, y, m, nullptr, 0), Status::kNotInitialized);
  EXPECT_EQ(fwd(p, x, w, desc(DType::kFloat32, {1, 8, 5, 6})), Status::kBadParam);  // wrong output size
  EXPECT_EQ(fwd(p, x, desc(DType::kFloat32, {8, 3, 3, 3}), y), Status::kBadParam);  // C/groups mismatch
  EXPECT_EQ(fwd(params(1, 1, 1, 1, 1, 1, 3), x, w, y), Status::kBadParam);          // groups do not divide
  EXPECT_EQ(fwd(params(1, 1, 0, 1, 1, 1, 1), x, w, y), Status::kBadParam);          // stride 0
  EXPECT_EQ(fwd(params(-1, 1, 1, 1, 1, 1, 1), x, w, y), Status::kBadParam);         // negative padding
  EXPECT_EQ(fwd(params(0, 0, 1, 1, 4, 1, 1), x, w, y), Status::kBadParam);          // dilated kernel too big
  EXPECT_EQ(fwd(p, desc(DType::kFloat16, {1, 4, 6, 6}), w, y), Status::kBadParam);  // mixed dtypes
  EXPECT_EQ(
      fwd(p, desc(DType::kInt32, {1, 4, 6, 6}), desc(DType::kInt32, {8, 4, 3, 3}), desc(DType::kInt32, {1, 8, 6, 6})),
      Status::kNotSupported);
  EXPECT_EQ(fwd(p, desc(DType::kFloat32, {4, 6, 6}), w, y), Status::kBadParam);  // 3-d
  const TensorDesc bad_bias = desc(DType::kFloat32, {7});
  EXPECT_EQ(conv2d_forward(&h(), p, x, m, w, m, &bad_bias, m, y, m, nullptr, 0), Status::kBadParam);
  EXPECT_EQ(conv2d_forward(&h(), p, x, nullptr, w, m, nullptr, nullptr, y, m, nullptr, 0), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("conv2d_forward"), std::string::npos);
  EXPECT_EQ(conv2d_backward_data(&h(), p, desc(DType::kFloat32, {1, 8, 6, 5}), m, w, m, nullptr, nullptr, x, m, nullptr, 0),
            Status::kBadParam);
  // backward-data's bias is per input channel (C = 4): the output's 8 is wrong, so is fp16 and a null pointer.
  const TensorDesc oc_bias = desc(DType::kFloat32, {8}), half_bias = desc(DType::kFloat16, {4});
  const TensorDesc c_bias = desc(DType::kFloat32, {4});
  EXPECT_EQ(conv2d_backward_data(&h(), p, y, m, w, m, &oc_bias, m, x, m, nullptr, 0), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("bias"), std::string::npos) << last_error_detail();
  EXPECT_EQ(conv2d_backward_data(&h(), p, y, m, w, m, &half_bias, m, x, m, nullptr, 0), Status::kBadParam);
  EXPECT_EQ(conv2d_backward_data(&h(), p, y, m, w, m, &c_bias, nullptr, x, m, nullptr, 0), Status::kBadParam);
  EXPECT_EQ(conv2d_backward_weight(&h(), p, x, m, y, m, desc(DType::kFloat32, {8, 4, 2, 3}), m, nullptr, 0),
            Status::kBadParam);
  // An NHWC input must be rearranged: without the workspace the call is refused.
  TensorDesc xn;
  ASSERT_EQ(xn.set(DType::kFloat32, {1, 6, 6, 4}, Layout::kNHWC), Status::kSuccess);
  std::size_t ws = 0;
  ASSERT_EQ(get_conv2d_forward_workspace_size(&h(), p, xn, w, y, &ws), Status::kSuccess);
  EXPECT_GT(ws, 0u);
  EXPECT_EQ(fwd(p, xn, w, y), Status::kBadParam);
}

TEST_F(ConvTest, PresetWithoutAnFpTfu) {
  // MLU270: fp16/fp32 GEMMs and the phase split / zero-interleave permutations run on the VFU.
  ASSERT_EQ(mlusimLoadConfig("mlu270"), cnrtSuccess);
  Handle::destroy(handle_);
  allocations_.clear();
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  forward<half>(kCases[1], Format::kNchw, Format::kNchw, Format::kNchw, true, 3e-3);
  backward_data<float>(kCases[1], Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
  backward_weight<float>(kCases[3], Format::kNchw, Format::kNchw, Format::kNchw, 1e-4);
}

TEST_F(ConvTest, DmaBitFlipChangesTheResult) {
  // Each op's result must come out of the simulated memories: with one DMA's bit flipped (tried
  // over several of the op's DMAs, as a low mantissa bit may round away) it differs. NCHW runs
  // the implicit GEMMs; channels_last the direct kernels, at stride 1 and 2.
  const Case strided{2, 5, 9, 9, 7, 3, 3, params(1, 1, 2, 2, 1, 1, 1)};
  for (const auto& kf : {std::pair{kCases[0], Format::kNchw}, std::pair{kCases[0], Format::kChannelsLast},
                         std::pair{strided, Format::kChannelsLast}}) {
    const Case& k = kf.first;
    const Format f = kf.second;
    SCOPED_TRACE(k.p.stride_h == 1 && f == Format::kNchw ? "nchw" : k.p.stride_h == 1 ? "channels_last" : "strided");
    const std::int64_t oh = out_dim(k.h, k.kh, k.p.pad_h, k.p.stride_h, k.p.dilation_h);
    const std::int64_t ow = out_dim(k.w, k.kw, k.p.pad_w, k.p.stride_w, k.p.dilation_w);
    auto x = make<float>(k.n, k.c, k.h, k.w, f, 11);
    auto w = make<float>(k.oc, k.c, k.kh, k.kw, f, 12);
    auto y = make<float>(k.n, k.oc, oh, ow, f, 13);
    const TensorDesc dx = desc_of(x), dw = desc_of(w), dy = desc_of(y);
    void* px = to_device(x.data);
    void* pw = to_device(w.data);
    void* py = to_device(y.data);
    std::size_t ws = 0;
    ASSERT_EQ(get_conv2d_backward_data_workspace_size(&h(), k.p, dy, dw, dx, &ws), Status::kSuccess);
    void* pws = workspace(std::max<std::size_t>(ws, 1 << 20));
    const std::function<std::vector<float>()> ops[] = {
        [&] {
          EXPECT_EQ(conv2d_forward(&h(), k.p, dx, px, dw, pw, nullptr, nullptr, dy, py, pws, 1 << 20), Status::kSuccess);
          return from_device<float>(py, y.data.size());
        },
        [&] {
          EXPECT_EQ(conv2d_backward_data(&h(), k.p, dy, py, dw, pw, nullptr, nullptr, dx, px, pws, 1 << 20), Status::kSuccess);
          return from_device<float>(px, x.data.size());
        },
        [&] {
          EXPECT_EQ(conv2d_backward_weight(&h(), k.p, dx, px, dy, py, dw, pw, pws, 1 << 20), Status::kSuccess);
          return from_device<float>(pw, w.data.size());
        },
    };
    for (const auto& op : ops) {
      const std::vector<float> clean = op();
      int changed = 0;
      for (unsigned long long n = 1; n <= 8; ++n) {
        ASSERT_EQ(mlusimInjectDmaBitFlip(0, n), cnrtSuccess);
        changed += op() != clean;
      }
      ASSERT_EQ(mlusimInjectDmaBitFlip(0, 0), cnrtSuccess);
      EXPECT_GT(changed, 0);
      EXPECT_EQ(op(), clean);
    }
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
