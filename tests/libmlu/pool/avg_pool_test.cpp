// avg_pool2d and adaptive_avg_pool2d, forward and backward, against torch's CPU formulas.
#include "pool/pool_test_util.h"
#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

Pool2dParams avg(std::int64_t k, std::int64_t s, std::int64_t pad, bool ceil = false, bool include_pad = true,
                 std::int64_t divisor = 0) {
  Pool2dParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_h = p.pad_w = pad;
  p.ceil_mode = ceil;
  p.count_include_pad = include_pad;
  p.divisor_override = divisor;
  return p;
}

class AvgPoolTest : public MluTest {
 protected:
  void* upload(DType t, const std::vector<float>& v, const Dims& d, const Dims& s) {
    return t == DType::kFloat32 ? to_device(to_storage<float>(v, d, s)) : to_device(to_storage<sim::half>(v, d, s));
  }
  std::vector<float> download(DType t, const void* p, const Dims& d) {
    if (t == DType::kFloat32) return from_device<float>(p, numel(d));
    std::vector<float> out;
    for (sim::half v : from_device<sim::half>(p, numel(d))) out.push_back(float(v));
    return out;
  }

  // adaptive: p ignored, the output size is `out`.
  void run(const Dims& xd, const Pool2dParams& p, DType t = DType::kFloat32, Dims xs = {},
           const Dims& adaptive_out = {}) {
    if (xs.empty()) xs = contiguous_strides(xd);
    const std::int64_t H = xd[xd.size() - 2], W = xd[xd.size() - 1], planes = numel(xd) / (H * W);
    std::int64_t oh = 0, ow = 0;
    const bool adaptive = !adaptive_out.empty();
    if (adaptive)
      oh = adaptive_out[0], ow = adaptive_out[1];
    else
      ASSERT_EQ(pool2d_output_size(p, H, W, &oh, &ow), Status::kSuccess) << last_error_detail();
    Dims yd = xd;
    yd[yd.size() - 2] = oh, yd[yd.size() - 1] = ow;
    std::vector<float> x = random<float>(numel(xd), 81);
    if (t == DType::kFloat16) x = round_half(x);
    void* xp = upload(t, x, xd, xs);
    void* yp = dalloc(numel(yd) * 4);
    const PlaneDims pd{planes, H, W, oh, ow};
    const Status st = adaptive ? adaptive_avg_pool2d_forward(handle_, desc(t, xd, xs), xp, desc(t, yd), yp)
                               : avg_pool2d_forward(handle_, p, desc(t, xd, xs), xp, desc(t, yd), yp);
    ASSERT_EQ(st, Status::kSuccess) << last_error_detail();
    const double tol = t == DType::kFloat16 ? 2e-3 : 2e-6;
    expect_close(download(t, yp, yd), adaptive ? ref_adaptive(x, pd) : ref_avg_pool(x, pd, p), tol, tol, "y");

    std::vector<float> g = random<float>(numel(yd), 82);
    if (t == DType::kFloat16) g = round_half(g);
    void* gp = upload(t, g, yd, contiguous_strides(yd));
    void* dxp = upload(t, std::vector<float>(numel(xd), 7.0f), xd, xs);
    const Status bs = adaptive ? adaptive_avg_pool2d_backward(handle_, desc(t, yd), gp, desc(t, xd, xs), dxp)
                               : avg_pool2d_backward(handle_, p, desc(t, yd), gp, desc(t, xd, xs), dxp);
    ASSERT_EQ(bs, Status::kSuccess) << last_error_detail();
    const std::size_t n = storage_elems(xd, xs);
    const std::vector<float> got = t == DType::kFloat32 ? from_storage(from_device<float>(dxp, n), xd, xs)
                                                        : from_storage(from_device<sim::half>(dxp, n), xd, xs);
    expect_close(got, adaptive ? ref_adaptive_backward(g, pd) : ref_avg_pool_backward(g, pd, p), tol, tol, "dx");
  }
};

TEST_F(AvgPoolTest, KernelStridePadding) {
  run({2, 3, 8, 8}, avg(2, 2, 0));
  run({1, 2, 9, 11}, avg(3, 2, 1));
  run({1, 2, 7, 7}, avg(3, 1, 1));
  run({2, 1, 10, 9}, avg(2, 3, 0));  // stride > kernel: some inputs in no window
}

TEST_F(AvgPoolTest, CountIncludePadCeilModeAndDivisorOverride) {
  run({1, 2, 9, 9}, avg(3, 2, 1, false, false));
  run({1, 2, 10, 10}, avg(3, 2, 1, true, true));
  run({1, 2, 10, 10}, avg(3, 2, 1, true, false));
  run({1, 3, 6, 6}, avg(2, 2, 1, false, true, 3));
}

TEST_F(AvgPoolTest, HalfAndNonContiguous) {
  run({2, 2, 8, 8}, avg(2, 2, 0), DType::kFloat16);
  const Dims d{2, 3, 8, 8};
  run(d, avg(3, 2, 1), DType::kFloat32, layout_strides(d, {0, 2, 3, 1}));
}

TEST_F(AvgPoolTest, PlanesLargerThanNramUseRowBands) { run({1, 1, 80, 80}, avg(3, 2, 1)); }
TEST_F(AvgPoolTest, FewPlanesUseEqualRowBands) {
  run({1, 2, 37, 35}, avg(3, 2, 1));
  run({1, 1, 40, 36}, avg(3, 2, 1), DType::kFloat16);
}

TEST_F(AvgPoolTest, AdaptiveEvenAndUnevenBins) {
  run({2, 4, 7, 7}, {}, DType::kFloat32, {}, {1, 1});  // ResNet's global average pool
  run({1, 3, 8, 12}, {}, DType::kFloat32, {}, {4, 3});
  run({1, 2, 7, 10}, {}, DType::kFloat32, {}, {3, 4});  // uneven, overlapping bins
  run({3, 9, 5}, {}, DType::kFloat16, {}, {4, 2});      // unbatched, fp16
}

TEST_F(AvgPoolTest, BadArguments) {
  void* p = dalloc(4096);
  const TensorDesc x = desc(DType::kFloat32, {1, 2, 8, 8}), y = desc(DType::kFloat32, {1, 2, 4, 4});
  Pool2dParams dil = avg(2, 2, 0);
  dil.dilation_h = 2;
  EXPECT_EQ(avg_pool2d_forward(handle_, dil, x, p, y, p), Status::kBadParam);
  EXPECT_EQ(avg_pool2d_forward(handle_, avg(2, 2, 0), x, p, desc(DType::kFloat32, {1, 2, 3, 4}), p), Status::kBadParam);
  EXPECT_EQ(avg_pool2d_forward(handle_, avg(2, 2, 0, false, true, -1), x, p, y, p), Status::kBadParam);
  EXPECT_EQ(avg_pool2d_backward(nullptr, avg(2, 2, 0), y, p, x, p), Status::kNotInitialized);
  EXPECT_EQ(adaptive_avg_pool2d_forward(handle_, x, p, desc(DType::kFloat32, {1, 3, 4, 4}), p), Status::kBadParam);
  EXPECT_EQ(adaptive_avg_pool2d_forward(handle_, x, p, desc(DType::kInt32, {1, 2, 4, 4}), p), Status::kNotSupported);
  TensorDesc nhwc;
  ASSERT_EQ(nhwc.set(DType::kFloat32, {1, 8, 8, 2}, Layout::kNHWC), Status::kSuccess);
  EXPECT_EQ(avg_pool2d_forward(handle_, avg(2, 2, 0), nhwc, p, y, p), Status::kNotSupported);
}

TEST_F(AvgPoolTest, EmptyBatch) {
  const TensorDesc x = desc(DType::kFloat32, {0, 2, 8, 8}), y = desc(DType::kFloat32, {0, 2, 4, 4});
  EXPECT_EQ(avg_pool2d_forward(handle_, avg(2, 2, 0), x, nullptr, y, nullptr), Status::kSuccess);
  EXPECT_EQ(adaptive_avg_pool2d_backward(handle_, desc(DType::kFloat32, {0, 2, 3, 3}), nullptr, x, nullptr),
            Status::kSuccess);
}

TEST_F(AvgPoolTest, ResultsComeFromSimulatedMemory) {
  // A 1x1 window copies its input, so a flipped lowest bit of any loaded element shows.
  const Dims d{1, 2, 8, 8}, yd = d;
  void* xp = to_device(random<float>(numel(d), 3));
  void* yp = dalloc(numel(yd) * 4);
  auto run = [&] {
    EXPECT_EQ(avg_pool2d_forward(handle_, avg(1, 1, 0), desc(DType::kFloat32, d), xp, desc(DType::kFloat32, yd), yp),
              Status::kSuccess);
    return from_device<float>(yp, numel(yd));
  };
  const std::vector<float> clean = run();
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  EXPECT_NE(run(), clean) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
