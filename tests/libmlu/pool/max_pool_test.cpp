// max_pool2d forward/backward against torch's CPU algorithm, ties and NaN included.
#include "pool/pool_test_util.h"
#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

Pool2dParams params(std::int64_t k, std::int64_t s, std::int64_t pad, std::int64_t dil = 1, bool ceil = false) {
  Pool2dParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dil;
  p.ceil_mode = ceil;
  return p;
}

class MaxPoolTest : public MluTest {
 protected:
  // x [N, C, H, W] with values on a coarse grid (many ties, as after a ReLU), some special values.
  // channels_last_out: y and the indices in channels-last strides too (with a channels-last x: the
  // NHWC kernel, max_pool_nhwc.h).
  void run(const Dims& xd, const Pool2dParams& p, DType t = DType::kFloat32, Dims xs = {}, bool specials = false,
           DType index_type = DType::kInt64, bool channels_last_out = false) {
    if (xs.empty()) xs = contiguous_strides(xd);
    const std::int64_t H = xd[xd.size() - 2], W = xd[xd.size() - 1], planes = numel(xd) / (H * W);
    std::int64_t oh = 0, ow = 0;
    ASSERT_EQ(pool2d_output_size(p, H, W, &oh, &ow), Status::kSuccess) << last_error_detail();
    std::vector<float> x = random<float>(numel(xd), 71, -1, 2);
    for (float& v : x) v = std::max(0.0f, std::round(v * 2) / 2);
    if (specials && x.size() > 40) x[3] = NAN, x[17] = -INFINITY, x[18] = INFINITY, x[40] = NAN;
    Dims yd = xd;
    yd[yd.size() - 2] = oh, yd[yd.size() - 1] = ow;
    const Dims ys = channels_last_out ? layout_strides(yd, {0, 2, 3, 1}) : contiguous_strides(yd);
    // Device storage of y and indices (dense either way) -> logical NCHW order.
    auto logical = [&](auto storage) { return from_storage(storage, yd, ys); };
    void* xp =
        t == DType::kFloat32 ? to_device(to_storage<float>(x, xd, xs)) : to_device(to_storage<sim::half>(x, xd, xs));
    void* yp = dalloc(numel(yd) * 4);
    void* ip = dalloc(numel(yd) * 8);
    const TensorDesc id = desc(index_type, yd, ys);
    ASSERT_EQ(max_pool2d_forward(handle_, p, desc(t, xd, xs), xp, desc(t, yd, ys), yp, &id, ip), Status::kSuccess)
        << last_error_detail();
    std::vector<double> want;
    std::vector<std::int64_t> want_idx;
    ref_max_pool(x, {planes, H, W, oh, ow}, p, &want, &want_idx);
    const std::vector<float> got = t == DType::kFloat32 ? logical(from_device<float>(yp, numel(yd)))
                                                        : logical(from_device<sim::half>(yp, numel(yd)));
    expect_close(got, want, 0, 0, "y");
    // Without indices (a separate kernel path that skips all index work): the same values.
    void* yp2 = dalloc(numel(yd) * 4);
    ASSERT_EQ(max_pool2d_forward(handle_, p, desc(t, xd, xs), xp, desc(t, yd, ys), yp2, nullptr, nullptr),
              Status::kSuccess)
        << last_error_detail();
    expect_close(t == DType::kFloat32 ? logical(from_device<float>(yp2, numel(yd)))
                                      : logical(from_device<sim::half>(yp2, numel(yd))),
                 want, 0, 0, "y without indices");
    std::vector<std::int64_t> got_idx;  // indices < 2^24: exact through from_storage's float
    for (float v : index_type == DType::kInt64 ? logical(from_device<std::int64_t>(ip, numel(yd)))
                                               : logical(from_device<std::int32_t>(ip, numel(yd))))
      got_idx.push_back(static_cast<std::int64_t>(v));
    EXPECT_EQ(got_idx, want_idx);

    // Backward: gradients scattered to the indices, overlaps accumulated. With channels_last_out,
    // dy and dx channels-last in the op's dtype (the NHWC backward, max_pool_nhwc.h), dx rows
    // first filled with 9s (every element must be written); else fp32 NCHW.
    std::vector<float> g = random<float>(numel(yd), 72);
    const DType gt = channels_last_out ? t : DType::kFloat32;
    const Dims gxs = channels_last_out ? xs : contiguous_strides(xd);
    if (gt == DType::kFloat16) g = round_half(g);
    auto upload = [&](const std::vector<float>& v, const Dims& d, const Dims& st) {
      return gt == DType::kFloat32 ? to_device(to_storage<float>(v, d, st)) : to_device(to_storage<sim::half>(v, d, st));
    };
    void* gxp = upload(std::vector<float>(numel(xd), 9.0f), xd, gxs);
    ASSERT_EQ(max_pool2d_backward(handle_, p, desc(gt, yd, ys), upload(g, yd, ys), id, ip, desc(gt, xd, gxs), gxp),
              Status::kSuccess)
        << last_error_detail();
    std::vector<double> want_gx(numel(xd), 0.0);
    for (std::int64_t o = 0; o < numel(yd); ++o) want_gx[o / (oh * ow) * H * W + want_idx[o]] += g[o];
    const std::size_t nx = storage_elems(xd, gxs);
    const std::vector<float> got_gx = gt == DType::kFloat32 ? from_storage(from_device<float>(gxp, nx), xd, gxs)
                                                            : from_storage(from_device<sim::half>(gxp, nx), xd, gxs);
    const double tol = gt == DType::kFloat32 ? 1e-6 : 4e-3;
    expect_close(got_gx, want_gx, tol, tol, "dx");
  }
};

TEST_F(MaxPoolTest, ResNetStem) { run({2, 3, 16, 16}, params(3, 2, 1)); }

TEST_F(MaxPoolTest, StridesPaddingDilationCeilMode) {
  run({1, 2, 9, 11}, params(2, 2, 0));
  run({2, 2, 10, 7}, params(3, 1, 1));
  run({1, 3, 13, 13}, params(3, 2, 1, 2));
  run({1, 2, 10, 10}, params(3, 3, 1, 1, true));
  Pool2dParams p = params(3, 2, 1);
  p.kernel_w = 2, p.stride_w = 1, p.pad_w = 0, p.dilation_h = 2;
  run({2, 1, 12, 8}, p);
}

TEST_F(MaxPoolTest, TiesNanAndInfinities) { run({1, 2, 12, 12}, params(3, 2, 1), DType::kFloat32, {}, true); }

TEST_F(MaxPoolTest, HalfNonContiguousAndInt32Indices) {
  run({2, 3, 8, 8}, params(2, 2, 0), DType::kFloat16);
  const Dims d{2, 3, 9, 9};
  run(d, params(3, 2, 1), DType::kFloat32, layout_strides(d, {0, 2, 3, 1}));     // channels last
  run({3, 10, 10}, params(3, 2, 1), DType::kFloat32, {}, false, DType::kInt32);  // unbatched
}

// x, y and indices all channels-last (torch's output follows its input): the NHWC kernel, whose
// windows are gathered per tap from pixel rows with the channels as the vector dim. Ties, NaN and
// infinities, padding on every side, strides, dilation, ceil mode, fp16, int32 indices, channel
// blocks (many channels), several row bands, and the backward from channels-last indices.
TEST_F(MaxPoolTest, ChannelsLastInAndOut) {
  auto nhwc = [&](const Dims& d, const Pool2dParams& p, DType t = DType::kFloat32, bool specials = false,
                  DType index_type = DType::kInt64) {
    run(d, p, t, layout_strides(d, {0, 2, 3, 1}), specials, index_type, true);
  };
  nhwc({2, 3, 16, 16}, params(3, 2, 1));  // ResNet's stem pool
  nhwc({1, 8, 12, 12}, params(3, 2, 1), DType::kFloat32, true);
  nhwc({2, 5, 10, 7}, params(3, 1, 1));
  nhwc({1, 4, 13, 13}, params(3, 2, 1, 2));
  nhwc({1, 6, 10, 10}, params(3, 3, 1, 1, true));
  nhwc({2, 16, 9, 9}, params(2, 2, 0), DType::kFloat16, false, DType::kInt32);
  nhwc({1, 2048, 6, 6}, params(3, 2, 1));  // channel blocks: a band of all 2048 channels is large
  nhwc({1, 64, 57, 57}, params(3, 2, 1));  // row bands, top and bottom tiles
  Pool2dParams p = params(3, 2, 1);
  p.kernel_w = 2, p.stride_w = 1, p.pad_w = 0, p.dilation_h = 2;
  nhwc({2, 3, 12, 8}, p);
}

TEST_F(MaxPoolTest, PlanesLargerThanNramUseRowBands) { run({1, 1, 90, 90}, params(3, 2, 1)); }

// Few planes with >= 16 output rows are cut into equal row bands (several pipeline steps per core);
// bands in the middle skip the pad fill of their buffer. Odd sizes, padding, ceil_mode, dilation,
// fp16, specials and channels-last strides through that path.
TEST_F(MaxPoolTest, RowBandTiles) {
  run({1, 2, 37, 35}, params(3, 2, 1));
  run({1, 1, 41, 33}, params(3, 2, 1, 1, true));
  run({1, 1, 40, 40}, params(3, 2, 1, 2));
  run({1, 2, 34, 34}, params(3, 1, 1));
  run({1, 1, 36, 36}, params(3, 2, 1), DType::kFloat16);
  run({1, 2, 33, 33}, params(3, 2, 1), DType::kFloat32, {}, true);
  const Dims d{1, 3, 35, 35};
  run(d, params(3, 2, 1), DType::kFloat32, layout_strides(d, {0, 2, 3, 1}));
}

TEST_F(MaxPoolTest, OutputSizeAndBadArguments) {
  std::int64_t oh = 0, ow = 0;
  ASSERT_EQ(pool2d_output_size(params(3, 2, 1), 112, 112, &oh, &ow), Status::kSuccess);
  EXPECT_EQ(oh, 56);
  ASSERT_EQ(pool2d_output_size(params(3, 2, 0, 1, true), 6, 6, &oh, &ow), Status::kSuccess);
  EXPECT_EQ(oh, 3);  // ceil((6-3)/2)+1 = 3: the last window starts inside the input
  ASSERT_EQ(pool2d_output_size(params(2, 2, 1, 1, true), 5, 5, &oh, &ow), Status::kSuccess);
  EXPECT_EQ(oh, 3);  // ceil would give 4, but that window would start in the right padding
  EXPECT_EQ(pool2d_output_size(params(3, 1, 2), 8, 8, &oh, &ow), Status::kBadParam);  // pad > k/2
  EXPECT_EQ(pool2d_output_size(params(5, 1, 0), 3, 3, &oh, &ow), Status::kBadParam);  // output < 1
  EXPECT_EQ(pool2d_output_size(params(0, 1, 0), 3, 3, &oh, &ow), Status::kBadParam);
  void* p = dalloc(4096);
  const TensorDesc x = desc(DType::kFloat32, {1, 2, 8, 8}), y = desc(DType::kFloat32, {1, 2, 4, 4});
  const TensorDesc i64 = desc(DType::kInt64, {1, 2, 4, 4});
  EXPECT_EQ(max_pool2d_forward(nullptr, params(2, 2, 0), x, p, y, p, &i64, p), Status::kNotInitialized);
  EXPECT_EQ(max_pool2d_forward(handle_, params(2, 2, 0), x, p, desc(DType::kFloat32, {1, 2, 5, 4}), p, &i64, p),
            Status::kBadParam);
  EXPECT_EQ(max_pool2d_forward(handle_, params(2, 2, 0), x, p, desc(DType::kFloat32, {1, 3, 4, 4}), p, nullptr, p),
            Status::kBadParam);
  EXPECT_EQ(max_pool2d_forward(handle_, params(2, 2, 0), x, p, y, p, &y, p), Status::kNotSupported);
  EXPECT_EQ(max_pool2d_forward(handle_, params(2, 2, 0), desc(DType::kFloat32, {8, 8}), p, y, p, nullptr, p),
            Status::kBadParam);
  EXPECT_EQ(max_pool2d_backward(handle_, params(2, 2, 0), y, p, desc(DType::kFloat32, {1, 2, 4, 4}), p, x, p),
            Status::kNotSupported);
}

TEST_F(MaxPoolTest, EmptyBatch) {
  const TensorDesc x = desc(DType::kFloat32, {0, 2, 8, 8}), y = desc(DType::kFloat32, {0, 2, 4, 4});
  const TensorDesc i = desc(DType::kInt64, {0, 2, 4, 4});
  EXPECT_EQ(max_pool2d_forward(handle_, params(2, 2, 0), x, nullptr, y, nullptr, &i, nullptr), Status::kSuccess);
  EXPECT_EQ(max_pool2d_backward(handle_, params(2, 2, 0), y, nullptr, i, nullptr, x, nullptr), Status::kSuccess);
}

TEST_F(MaxPoolTest, ResultsComeFromSimulatedMemory) {
  // A 1x1 window: every input element is an output, so any flipped bit of the load shows.
  const Dims d{1, 1, 8, 8};  // one plane: one task, so DMAs are counted in its own order
  void* xp = to_device(random<float>(numel(d), 3));
  void* yp = dalloc(numel(d) * 4);
  void* ip = dalloc(numel(d) * 8);
  const TensorDesc id = desc(DType::kInt64, d);
  auto run = [&] {
    EXPECT_EQ(max_pool2d_forward(handle_, params(1, 1, 0), desc(DType::kFloat32, d), xp, desc(DType::kFloat32, d), yp,
                                 &id, ip),
              Status::kSuccess);
    return std::pair{from_device<float>(yp, numel(d)), from_device<std::int64_t>(ip, numel(d))};
  };
  const auto clean = run();
  // The kernel's first two DMAs replicate its column index patterns (a flip there can vanish in
  // fp32 index rounding); the third is the input band's load.
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 3), cnrtSuccess);
  EXPECT_NE(run(), clean) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
