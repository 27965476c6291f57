// batch_norm forward (training, inference) and backward against a naive double-precision
// reference with torch's semantics (biased variance to normalise, unbiased in running_var).
#include "mlusim/mlu/norm.h"

#include <memory>
#include <optional>

#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

struct BnRef {
  std::vector<double> y, mean, invstd, run_mean, run_var, dx, dw, db;
};

// x logical [N, C, S] (channel dim 1 of the logical dims); g = dy.
BnRef ref_bn(const std::vector<float>& x, const std::vector<float>& g, std::int64_t N, std::int64_t C, std::int64_t S,
             const std::vector<float>& w, const std::vector<float>& b, const std::vector<float>& rm,
             const std::vector<float>& rv, double momentum, double eps, bool training) {
  BnRef r;
  r.y.resize(x.size()), r.dx.resize(x.size());
  const double M = double(N * S);
  for (std::int64_t c = 0; c < C; ++c) {
    auto at = [&](std::int64_t n, std::int64_t s) { return (n * C + c) * S + s; };
    double m = 0, v = 0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) m += x[at(n, s)];
    m /= M;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) v += (x[at(n, s)] - m) * (x[at(n, s)] - m);
    const double var_b = v / M, var_u = v / (M - 1);
    const double mean = training ? m : rm[c];
    const double istd = 1 / std::sqrt((training ? var_b : rv[c]) + eps);
    r.mean.push_back(m), r.invstd.push_back(1 / std::sqrt(var_b + eps));
    r.run_mean.push_back((1 - momentum) * rm[c] + momentum * m);
    r.run_var.push_back((1 - momentum) * rv[c] + momentum * var_u);
    double sg = 0, sgx = 0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) {
        const double xh = (x[at(n, s)] - mean) * istd;
        r.y[at(n, s)] = xh * w[c] + b[c];
        sg += g[at(n, s)], sgx += g[at(n, s)] * xh;
      }
    r.db.push_back(sg), r.dw.push_back(sgx);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) {
        const double xh = (x[at(n, s)] - mean) * istd;
        r.dx[at(n, s)] = training ? (g[at(n, s)] - sg / M - xh * sgx / M) * istd * w[c] : g[at(n, s)] * istd * w[c];
      }
  }
  return r;
}

struct Case {
  Dims dims;  // [N, C, spatial...]
  DType type = DType::kFloat32;
  Dims strides = {};  // of x (and dy); empty = contiguous
  float offset = 0;   // added to x
};

class BatchNormTest : public MluTest {
 protected:
  void* upload(DType t, const std::vector<float>& v, const Dims& d, const Dims& s) {
    return t == DType::kFloat32 ? to_device(to_storage<float>(v, d, s)) : to_device(to_storage<sim::half>(v, d, s));
  }
  std::vector<float> download(DType t, const void* p, const Dims& d, const Dims& s) {
    const std::size_t n = storage_elems(d, s);
    return t == DType::kFloat32 ? from_storage(from_device<float>(p, n), d, s)
                                : from_storage(from_device<sim::half>(p, n), d, s);
  }

  // split: whether the reduction must be split over the cores (batch_norm_split.h), if given;
  // either way a split (a workspace) means three kernels.
  void run(const Case& c, bool training, std::optional<bool> split = std::nullopt) {
    const Dims xs = c.strides.empty() ? contiguous_strides(c.dims) : c.strides;
    const std::int64_t N = c.dims[0], C = c.dims[1], S = numel(c.dims) / (N * C);
    const bool half = c.type == DType::kFloat16;
    std::vector<float> x = random<float>(numel(c.dims), 51, -2, 2), g = random<float>(numel(c.dims), 52);
    for (float& v : x) v += c.offset;
    if (half) x = round_half(x), g = round_half(g);
    const std::vector<float> w = random<float>(C, 53, 0.5f, 1.5f), b = random<float>(C, 54), rm = random<float>(C, 55),
                             rv = random<float>(C, 56, 0.5f, 2.0f);
    const double momentum = 0.1, eps = 1e-5;
    const BnRef ref = ref_bn(x, g, N, C, S, w, b, rm, rv, momentum, eps, training);
    const TensorDesc xd = desc(c.type, c.dims, xs), cd = desc(DType::kFloat32, {C});
    void* xp = upload(c.type, x, c.dims, xs);
    void* yp = upload(c.type, std::vector<float>(x.size(), 0.0f), c.dims, xs);
    void* wp = to_device(w);
    void* bp = to_device(b);
    void* rmp = to_device(rm);
    void* rvp = to_device(rv);
    void* smp = dalloc(C * 4);
    void* sip = dalloc(C * 4);
    const double tol = half ? 1e-2 : 3e-5;
    if (training) {
      std::size_t ws = 0;
      ASSERT_EQ(get_batch_norm_forward_training_workspace_size(handle_, xd, &ws), Status::kSuccess);
      if (split) {
        EXPECT_EQ(ws > 0, *split) << "forward workspace " << ws << " of " << xd.str();
      }
      ASSERT_EQ(batch_norm_forward_training(handle_, momentum, eps, xd, xp, &cd, wp, &cd, bp, &cd, rmp, &cd, rvp, xd,
                                            yp, &cd, smp, &cd, sip, ws ? dalloc(ws) : nullptr, ws),
                Status::kSuccess)
          << last_error_detail();
      // Split: the slices' statistics, their combination, the normalizing pass.
      EXPECT_EQ(h().ops().back().kernels, ws > 0 ? 3u : 1u);
      expect_close(download(c.type, yp, c.dims, xs), ref.y, tol, tol, "y");
      expect_close(from_device<float>(smp, C), ref.mean, 1e-5 + 1e-6 * std::abs(c.offset), 1e-5, "save_mean");
      expect_close(from_device<float>(sip, C), ref.invstd, 1e-5, 1e-4, "save_invstd");
      expect_close(from_device<float>(rmp, C), ref.run_mean, 1e-5 + 1e-6 * std::abs(c.offset), 1e-5, "running_mean");
      expect_close(from_device<float>(rvp, C), ref.run_var, 1e-5, 1e-4, "running_var");
    } else {
      ASSERT_EQ(batch_norm_forward_inference(handle_, eps, xd, xp, &cd, wp, &cd, bp, cd, rmp, cd, rvp, xd, yp),
                Status::kSuccess)
          << last_error_detail();
      expect_close(download(c.type, yp, c.dims, xs), ref.y, tol, tol, "y");
    }
    // Backward from the reference statistics.
    const std::vector<float> mean(ref.mean.begin(), ref.mean.end()), invstd(ref.invstd.begin(), ref.invstd.end());
    void* mp = to_device(training ? mean : rm);
    void* ip = to_device(training ? invstd : rv);
    void* gp = upload(c.type, g, c.dims, xs);
    void* dxp = upload(c.type, std::vector<float>(x.size(), 0.0f), c.dims, xs);
    void* dwp = dalloc(C * 4);
    void* dbp = dalloc(C * 4);
    std::size_t ws = 0;
    ASSERT_EQ(get_batch_norm_backward_workspace_size(handle_, xd, &ws), Status::kSuccess);
    if (split) {
      EXPECT_EQ(ws > 0, *split) << "backward workspace " << ws << " of " << xd.str();
    }
    ASSERT_EQ(batch_norm_backward(handle_, training, eps, xd, gp, xd, xp, &cd, wp, cd, mp, cd, ip, &xd, dxp, &cd, dwp,
                                  &cd, dbp, ws ? dalloc(ws) : nullptr, ws),
              Status::kSuccess)
        << last_error_detail();
    // Split: the slices' sums, their totals (dweight, dbias and fp32 copies), dx.
    EXPECT_EQ(h().ops().back().kernels, ws > 0 ? 3u : 1u);
    const double btol = half ? 2e-2 : 1e-4;
    expect_close(download(c.type, dxp, c.dims, xs), ref.dx, btol, btol, "dx");
    expect_close(from_device<float>(dwp, C), ref.dw, btol * 10, btol, "dweight");
    expect_close(from_device<float>(dbp, C), ref.db, btol * 10, btol, "dbias");
  }
};

TEST_F(BatchNormTest, TrainingNchw) {
  run({{3, 5, 4, 6}}, true);
  run({{2, 7, 3}}, true);
  run({{4, 3, 5, 5}, DType::kFloat32, {}, 100.0f}, true);  // a large mean: the refined centring
}

TEST_F(BatchNormTest, TrainingTwoDimensionalAndChannelsLast) {
  run({{17, 9}}, true);
  const Dims d{2, 6, 3, 5};
  run({d, DType::kFloat32, layout_strides(d, {0, 2, 3, 1})}, true);  // channels-last memory
}

TEST_F(BatchNormTest, HalfPrecision) { run({{4, 6, 3, 3}, DType::kFloat16}, true); }

TEST_F(BatchNormTest, ChannelsLargerThanNramUseMultiplePasses) {
  run({{2, 3, 100, 100}}, true);  // 20000 values per channel: 80 KB, beyond tiny's 64 KiB NRAM
  run({{2, 3, 100, 100}}, false);
  run({{3000, 4}}, true);  // long columns
}

// Few channel groups over many values: the reduction splits over tiny's 8 cores (slices of the
// coalesced N x H x W of channels-last memory, or of N in NCHW), combined per channel; results
// as unsplit, including a large mean (the slices' means combine with their spread) and fp16.
TEST_F(BatchNormTest, FewChannelsSplitOverCores) {
  const Dims cl{4, 8, 32, 32}, nchw{8, 2, 64, 64};
  run({cl, DType::kFloat32, layout_strides(cl, {0, 2, 3, 1})}, true, true);
  run({cl, DType::kFloat32, layout_strides(cl, {0, 2, 3, 1}), 100.0f}, true, true);
  run({cl, DType::kFloat16, layout_strides(cl, {0, 2, 3, 1})}, true, true);
  run({cl, DType::kFloat32, layout_strides(cl, {0, 2, 3, 1})}, false, true);
  run({nchw}, true, true);
  run({{2, 8, 16, 16}, DType::kFloat32, layout_strides({2, 8, 16, 16}, {0, 2, 3, 1})}, true, false);  // 512 values
}

// The split's workspace: less than the query's size is refused (naming the query), and nothing
// is written; the inference forward splits without one.
TEST_F(BatchNormTest, SplitWorkspaceIsChecked) {
  const Dims d{4, 8, 32, 32};
  const TensorDesc xd = desc(DType::kFloat32, d, layout_strides(d, {0, 2, 3, 1})), cd = desc(DType::kFloat32, {8});
  std::size_t fwd = 0, bwd = 0;
  ASSERT_EQ(get_batch_norm_forward_training_workspace_size(handle_, xd, &fwd), Status::kSuccess);
  ASSERT_EQ(get_batch_norm_backward_workspace_size(handle_, xd, &bwd), Status::kSuccess);
  EXPECT_GT(fwd, 0u);
  EXPECT_GT(bwd, 0u);
  EXPECT_EQ(get_batch_norm_backward_workspace_size(handle_, xd, nullptr), Status::kBadParam);
  const std::vector<float> y0(numel(d), 7.0f);
  void* xp = to_device(random<float>(numel(d), 71));
  void* yp = to_device(y0);
  void* ws = dalloc(fwd);
  EXPECT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, nullptr, xd, yp, nullptr, nullptr, nullptr, nullptr, ws,
                                        fwd - 1),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("get_batch_norm_forward_training_workspace_size"), std::string::npos);
  EXPECT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, nullptr, xd, yp, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        fwd),
            Status::kBadParam);
  EXPECT_EQ(from_device<float>(yp, numel(d)), y0);
  void* mp = to_device(std::vector<float>(8, 0.0f));
  void* ip = to_device(std::vector<float>(8, 1.0f));
  EXPECT_EQ(batch_norm_backward(handle_, true, 1e-5, xd, xp, xd, xp, nullptr, nullptr, cd, mp, cd, ip, &xd, yp, nullptr,
                                nullptr, nullptr, nullptr, ws, bwd - 1),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("get_batch_norm_backward_workspace_size"), std::string::npos);
  EXPECT_EQ(from_device<float>(yp, numel(d)), y0);
}

// The split's kernels run after the call returns: they keep views, not the caller's descriptors
// (freed here before the queue runs; ASan builds report a use after free).
TEST_F(BatchNormTest, SplitKernelsOutliveTheirDescriptors) {
  const Dims d{4, 8, 32, 32};
  const TensorDesc xd = desc(DType::kFloat32, d, layout_strides(d, {0, 2, 3, 1}));
  void* xp = to_device(std::vector<float>(numel(d), 2.0f));
  void* yp = dalloc(numel(d) * 4);
  void* rmp = to_device(std::vector<float>(8, 0.0f));
  void* rvp = to_device(std::vector<float>(8, 1.0f));
  void* smp = dalloc(32);
  void* sip = dalloc(32);
  std::size_t ws = 0;
  ASSERT_EQ(get_batch_norm_forward_training_workspace_size(handle_, xd, &ws), Status::kSuccess);
  ASSERT_GT(ws, 0u);
  void* wsp = dalloc(ws);
  ASSERT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
  {
    auto cd = std::make_unique<TensorDesc>(desc(DType::kFloat32, {8}));
    ASSERT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, cd.get(), rmp,
                                          cd.get(), rvp, xd, yp, cd.get(), smp, cd.get(), sip, wsp, ws),
              Status::kSuccess)
        << last_error_detail();
  }
  // A constant input: mean 2, variance 0.
  expect_close(from_device<float>(rmp, 8), std::vector<double>(8, 0.2), 1e-6, 1e-6, "running_mean");
  expect_close(from_device<float>(rvp, 8), std::vector<double>(8, 0.9), 1e-6, 1e-6, "running_var");
  expect_close(from_device<float>(smp, 8), std::vector<double>(8, 2.0), 1e-6, 1e-6, "save_mean");
  expect_close(from_device<float>(sip, 8), std::vector<double>(8, 1 / std::sqrt(1e-5)), 1e-3, 1e-5, "save_invstd");
}

TEST_F(BatchNormTest, Inference) {
  run({{3, 5, 4, 6}}, false);
  run({{17, 9}, DType::kFloat16}, false);
}

TEST_F(BatchNormTest, OptionalTensorsAndSubsetsOfGradients) {
  const Dims d{3, 4, 5};
  const std::vector<float> x = random<float>(60, 61), g = random<float>(60, 62);
  const std::vector<float> ones(4, 1.0f), zeros(4, 0.0f);
  const BnRef ref = ref_bn(x, g, 3, 4, 5, ones, zeros, zeros, ones, 0.1, 1e-5, true);
  void* xp = to_device(x);
  void* gp = to_device(g);
  void* yp = dalloc(60 * 4);
  const TensorDesc xd = desc(DType::kFloat32, d), cd = desc(DType::kFloat32, {4});
  ASSERT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, nullptr, xd, yp, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            Status::kSuccess)
      << last_error_detail();
  expect_close(from_device<float>(yp, 60), ref.y, 3e-5, 3e-5, "y");
  void* mp = to_device(std::vector<float>(ref.mean.begin(), ref.mean.end()));
  void* ip = to_device(std::vector<float>(ref.invstd.begin(), ref.invstd.end()));
  void* dbp = dalloc(16);
  ASSERT_EQ(batch_norm_backward(handle_, true, 1e-5, xd, gp, xd, xp, nullptr, nullptr, cd, mp, cd, ip, nullptr, nullptr,
                                nullptr, nullptr, &cd, dbp, nullptr, 0),
            Status::kSuccess);
  expect_close(from_device<float>(dbp, 4), ref.db, 1e-5, 1e-5, "dbias");
  ASSERT_EQ(batch_norm_backward(handle_, true, 1e-5, xd, gp, xd, xp, nullptr, nullptr, cd, mp, cd, ip, &xd, yp, nullptr,
                                nullptr, nullptr, nullptr, nullptr, 0),
            Status::kSuccess);
  expect_close(from_device<float>(yp, 60), ref.dx, 1e-5, 1e-4, "dx");
}

TEST_F(BatchNormTest, EmptyAndBadArguments) {
  const TensorDesc e = desc(DType::kFloat32, {0, 3, 2}), c3 = desc(DType::kFloat32, {3});
  EXPECT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, e, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, nullptr, e, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            Status::kSuccess);
  void* p = dalloc(1024);
  const TensorDesc x = desc(DType::kFloat32, {2, 3, 4});
  auto train = [&](const TensorDesc& xd, const TensorDesc* w, const TensorDesc& y, double eps) {
    return batch_norm_forward_training(handle_, 0.1, eps, xd, p, w, p, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       nullptr, y, p, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
  };
  EXPECT_EQ(batch_norm_forward_training(nullptr, 0.1, 1e-5, x, p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, x, p, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            Status::kNotInitialized);
  EXPECT_EQ(train(desc(DType::kFloat32, {6}), nullptr, desc(DType::kFloat32, {6}), 1e-5), Status::kBadParam);
  const TensorDesc w4 = desc(DType::kFloat32, {4});
  EXPECT_EQ(train(x, &w4, x, 1e-5), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("weight"), std::string::npos);
  EXPECT_EQ(train(x, nullptr, desc(DType::kFloat32, {2, 3, 5}), 1e-5), Status::kBadParam);
  EXPECT_EQ(train(x, nullptr, x, -1), Status::kBadParam);
  EXPECT_EQ(train(desc(DType::kInt32, {2, 3, 4}), nullptr, x, 1e-5), Status::kNotSupported);
  EXPECT_EQ(batch_norm_forward_inference(handle_, 1e-5, x, p, nullptr, nullptr, nullptr, nullptr, w4, p, c3, p, x, p),
            Status::kBadParam);
  EXPECT_EQ(batch_norm_backward(handle_, true, 1e-5, x, p, x, p, nullptr, nullptr, c3, p, c3, p, &x, nullptr, nullptr,
                                nullptr, nullptr, nullptr, nullptr, 0),
            Status::kBadParam);
}

TEST_F(BatchNormTest, ResultsComeFromSimulatedMemory) {
  const Dims d{4, 3, 8};
  // Inputs near 1000 with a small spread: a flipped lowest mantissa bit (6e-5) is a visible
  // fraction of the standard deviation.
  void* xp = to_device(random<float>(numel(d), 3, 1000, 1001));
  void* yp = dalloc(numel(d) * 4);
  const TensorDesc xd = desc(DType::kFloat32, d);
  auto run = [&] {
    EXPECT_EQ(batch_norm_forward_training(handle_, 0.1, 1e-5, xd, xp, nullptr, nullptr, nullptr, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, xd, yp, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
              Status::kSuccess);
    return from_device<float>(yp, numel(d));
  };
  const std::vector<float> clean = run();
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  EXPECT_NE(run(), clean) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
