// nll_loss forward/backward (and cross entropy as log_softmax + nll_loss) against a naive
// reference with torch's semantics: class weights, ignore_index, reductions, spatial dims.
#include "mlusim/mlu/loss.h"
#include "mlusim/mlu/softmax.h"

#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

struct NllCase {
  Dims input_dims;  // [C], [N,C] or [N,C,d..]
  LossReduction reduction = LossReduction::kMean;
  bool weight = false;
  DType input_type = DType::kFloat32;
  DType target_type = DType::kInt64;
  std::int64_t ignore_index = -100;
  Dims input_strides = {};
};

struct NllRef {
  std::vector<double> loss;  // per sample
  double total = 0, weight_sum = 0;
  std::vector<double> grad;  // per input element (logical order)
};

// Logical input values x (input dims), targets per sample (row-major sample order).
NllRef ref_nll(const Dims& in, const std::vector<float>& x, const std::vector<std::int64_t>& t,
               const std::vector<float>* w, std::int64_t ignore, LossReduction red, const std::vector<float>& g) {
  const int cdim = in.size() == 1 ? 0 : 1;
  const std::int64_t C = in[cdim];
  std::int64_t N = cdim == 0 ? 1 : in[0], D = 1;
  for (std::size_t i = 2; i < in.size(); ++i) D *= in[i];
  NllRef r;
  r.loss.assign(N * D, 0);
  r.grad.assign(x.size(), 0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t d = 0; d < D; ++d) {
      const std::int64_t s = n * D + d, tc = t[s];
      if (tc == ignore) continue;
      const double wt = w ? (*w)[tc] : 1.0;
      const std::int64_t xi = (n * C + tc) * D + d;
      r.loss[s] = -wt * x[xi];
      r.total += r.loss[s];
      r.weight_sum += wt;
    }
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t d = 0; d < D; ++d) {
      const std::int64_t s = n * D + d, tc = t[s];
      if (tc == ignore) continue;
      const double wt = w ? (*w)[tc] : 1.0;
      const double gs = red == LossReduction::kNone ? g[s] : red == LossReduction::kSum ? g[0] : g[0] / r.weight_sum;
      r.grad[(n * C + tc) * D + d] = -wt * gs;
    }
  return r;
}

class NllLossTest : public MluTest {
 protected:
  Dims sample_dims(const Dims& in) {
    Dims s;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (i != (in.size() == 1 ? 0u : 1u)) s.push_back(in[i]);
    return s;
  }
  void* upload_targets(const std::vector<std::int64_t>& t, DType type) {
    if (type == DType::kInt64) return to_device(t);
    return to_device(std::vector<std::int32_t>(t.begin(), t.end()));
  }
  void* upload(DType type, const std::vector<float>& v, const Dims& d, const Dims& s) {
    return type == DType::kFloat32 ? to_device(to_storage<float>(v, d, s)) : to_device(to_storage<sim::half>(v, d, s));
  }

  void run(const NllCase& c) {
    const Dims sd = sample_dims(c.input_dims);
    const int cdim = c.input_dims.size() == 1 ? 0 : 1;
    const std::int64_t C = c.input_dims[cdim], S = numel(sd);
    const Dims xs = c.input_strides.empty() ? contiguous_strides(c.input_dims) : c.input_strides;
    std::vector<float> x = random<float>(numel(c.input_dims), 31, -3, 0);
    if (c.input_type == DType::kFloat16) x = round_half(x);
    std::vector<std::int64_t> t(S);
    std::mt19937 rng(32);
    for (auto& v : t) v = rng() % 5 == 0 ? c.ignore_index : std::int64_t(rng() % C);
    std::vector<float> w = random<float>(C, 33, 0.1f, 2.0f);
    if (c.input_type == DType::kFloat16) w = round_half(w);
    const bool none = c.reduction == LossReduction::kNone;
    std::vector<float> g = random<float>(none ? S : 1, 34, 0.5f, 1.5f);

    void* xp = upload(c.input_type, x, c.input_dims, xs);
    void* tp = upload_targets(t, c.target_type);
    void* wp = upload(c.input_type, w, {C}, {1});
    const TensorDesc xd = desc(c.input_type, c.input_dims, xs), td = desc(c.target_type, sd),
                     wd = desc(c.input_type, {C});
    const TensorDesc od = desc(DType::kFloat32, none ? sd : Dims{}), twd = desc(DType::kFloat32, {});
    void* op = dalloc(std::max<std::int64_t>(S, 1) * 4);
    void* twp = dalloc(4);
    std::size_t ws = 0;
    ASSERT_EQ(get_nll_loss_workspace_size(handle_, xd, c.reduction, &ws), Status::kSuccess);
    void* wsp = ws ? dalloc(ws) : nullptr;
    ASSERT_EQ(nll_loss_forward(handle_, c.reduction, c.ignore_index, xd, xp, td, tp, c.weight ? &wd : nullptr, wp, wsp,
                               ws, od, op, twd, twp),
              Status::kSuccess)
        << last_error_detail();
    const NllRef ref = ref_nll(c.input_dims, x, t, c.weight ? &w : nullptr, c.ignore_index, c.reduction, g);
    if (none) {
      expect_close(from_device<float>(op, S), ref.loss, 1e-6, 1e-6, "loss");
      EXPECT_EQ(from_device<float>(twp, 1)[0], 0.0f);
    } else {
      const double want = c.reduction == LossReduction::kSum ? ref.total : ref.total / ref.weight_sum;
      expect_close(from_device<float>(op, 1), {want}, 1e-5, 1e-5, "loss");
      expect_close(from_device<float>(twp, 1), {ref.weight_sum}, 1e-5, 1e-5, "total_weight");
    }

    // Backward into a grad_input of input's layout, pre-filled with garbage (must become zeros).
    void* gp = to_device(g);
    void* gip = upload(c.input_type, std::vector<float>(x.size(), 5.0f), c.input_dims, xs);
    const TensorDesc gd = desc(DType::kFloat32, none ? sd : Dims{});
    ASSERT_EQ(nll_loss_backward(handle_, c.reduction, c.ignore_index, gd, gp, td, tp, c.weight ? &wd : nullptr, wp, twd,
                                twp, xd, gip),
              Status::kSuccess)
        << last_error_detail();
    const std::size_t n = storage_elems(c.input_dims, xs);
    const std::vector<float> got = c.input_type == DType::kFloat32
                                       ? from_storage(from_device<float>(gip, n), c.input_dims, xs)
                                       : from_storage(from_device<sim::half>(gip, n), c.input_dims, xs);
    const double tol = c.input_type == DType::kFloat16 ? 2e-3 : 1e-6;
    expect_close(got, ref.grad, tol, tol, "grad_input");
  }
};

TEST_F(NllLossTest, TwoDimensionalAllReductions) {
  for (LossReduction r : {LossReduction::kNone, LossReduction::kMean, LossReduction::kSum}) {
    run({{37, 11}, r});
    run({{37, 11}, r, true});
  }
}

TEST_F(NllLossTest, SpatialDimsAndInt32Targets) {
  run({{3, 5, 4, 6}, LossReduction::kMean, true, DType::kFloat32, DType::kInt32});
  run({{2, 4, 7}, LossReduction::kNone, false, DType::kFloat32, DType::kInt32, 2});
}

TEST_F(NllLossTest, SingleSampleAndHalfInputs) {
  run({{7}, LossReduction::kSum});
  run({{7}, LossReduction::kNone, true});
  run({{20, 9}, LossReduction::kMean, true, DType::kFloat16});
}

TEST_F(NllLossTest, NonContiguousInput) {
  run({{12, 6}, LossReduction::kMean, true, DType::kFloat32, DType::kInt64, -100, layout_strides({12, 6}, {1, 0})});
  run({{2, 3, 4},
       LossReduction::kNone,
       false,
       DType::kFloat32,
       DType::kInt64,
       -1,
       layout_strides({2, 3, 4}, {2, 0, 1}, 1)});
}

TEST_F(NllLossTest, ManySamplesOverAllCores) { run({{3000, 4}, LossReduction::kMean, true}); }

TEST_F(NllLossTest, AllIgnoredMeanIsNanAndEmptyBatch) {
  const TensorDesc xd = desc(DType::kFloat32, {3, 4}), td = desc(DType::kInt64, {3}), sd = desc(DType::kFloat32, {});
  void* xp = to_device(random<float>(12, 1));
  void* tp = to_device(std::vector<std::int64_t>{-100, -100, -100});
  void* out = dalloc(4);
  void* tw = dalloc(4);
  std::size_t ws = 0;
  ASSERT_EQ(get_nll_loss_workspace_size(handle_, xd, LossReduction::kMean, &ws), Status::kSuccess);
  void* wsp = dalloc(ws);
  ASSERT_EQ(
      nll_loss_forward(handle_, LossReduction::kMean, -100, xd, xp, td, tp, nullptr, nullptr, wsp, ws, sd, out, sd, tw),
      Status::kSuccess);
  EXPECT_TRUE(std::isnan(from_device<float>(out, 1)[0]));
  EXPECT_EQ(from_device<float>(tw, 1)[0], 0.0f);
  // An empty batch: the sum is 0, the mean NaN (0/0), as torch.
  const TensorDesc ed = desc(DType::kFloat32, {0, 4}), etd = desc(DType::kInt64, {0});
  ASSERT_EQ(nll_loss_forward(handle_, LossReduction::kSum, -100, ed, nullptr, etd, nullptr, nullptr, nullptr, wsp, ws,
                             sd, out, sd, tw),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(out, 1)[0], 0.0f);
  ASSERT_EQ(nll_loss_forward(handle_, LossReduction::kMean, -100, ed, nullptr, etd, nullptr, nullptr, nullptr, wsp, ws,
                             sd, out, sd, tw),
            Status::kSuccess);
  EXPECT_TRUE(std::isnan(from_device<float>(out, 1)[0]));
  EXPECT_EQ(nll_loss_backward(handle_, LossReduction::kMean, -100, sd, out, etd, nullptr, nullptr, nullptr, sd, tw, ed,
                              nullptr),
            Status::kSuccess);
}

TEST_F(NllLossTest, OutOfRangeTargetFaultsTheKernel) {
  const TensorDesc xd = desc(DType::kFloat32, {3, 4}), td = desc(DType::kInt64, {3}), sd = desc(DType::kFloat32, {3});
  void* xp = to_device(random<float>(12, 1));
  void* tp = to_device(std::vector<std::int64_t>{1, 4, 0});
  void* out = dalloc(12);
  void* tw = dalloc(4);
  mlusimSetFaultPrinting(0);
  ASSERT_EQ(nll_loss_forward(handle_, LossReduction::kNone, -100, xd, xp, td, tp, nullptr, nullptr, nullptr, 0, sd, out,
                             desc(DType::kFloat32, {}), tw),
            Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("target 4 is out of bounds [0, 4)"), std::string::npos)
      << mlusimGetLastErrorMessage();
  mlusimSetFaultPrinting(1);
}

TEST_F(NllLossTest, CrossEntropyIsLogSoftmaxThenNll) {
  const Dims d{16, 10};
  const std::vector<float> x = random<float>(numel(d), 41, -4, 4);
  std::vector<std::int64_t> t(16);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::int64_t((i * 7) % 10);
  void* xp = to_device(x);
  void* lp = dalloc(numel(d) * 4);
  void* tp = to_device(t);
  void* out = dalloc(4);
  void* tw = dalloc(4);
  const TensorDesc xd = desc(DType::kFloat32, d), sd = desc(DType::kFloat32, {});
  ASSERT_EQ(softmax_forward(handle_, SoftmaxMode::kLogSoftmax, 1, xd, xp, xd, lp), Status::kSuccess);
  std::size_t ws = 0;
  ASSERT_EQ(get_nll_loss_workspace_size(handle_, xd, LossReduction::kMean, &ws), Status::kSuccess);
  void* wsp = dalloc(ws);
  ASSERT_EQ(nll_loss_forward(handle_, LossReduction::kMean, -100, xd, lp, desc(DType::kInt64, {16}), tp, nullptr,
                             nullptr, wsp, ws, sd, out, sd, tw),
            Status::kSuccess);
  double want = 0;
  for (int i = 0; i < 16; ++i) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 10; ++j) m = std::max(m, double(x[i * 10 + j]));
    for (int j = 0; j < 10; ++j) s += std::exp(x[i * 10 + j] - m);
    want += -(x[i * 10 + t[i]] - m - std::log(s)) / 16;
  }
  expect_close(from_device<float>(out, 1), {want}, 1e-5, 1e-5, "cross entropy");
}

TEST_F(NllLossTest, BadArguments) {
  void* p = dalloc(1024);
  const TensorDesc xd = desc(DType::kFloat32, {4, 5}), td = desc(DType::kInt64, {4}), sd = desc(DType::kFloat32, {});
  std::size_t ws = 0;
  ASSERT_EQ(get_nll_loss_workspace_size(handle_, xd, LossReduction::kMean, &ws), Status::kSuccess);
  auto fwd = [&](LossReduction r, const TensorDesc& x, const TensorDesc& t, const TensorDesc* w, std::size_t wsb,
                 const TensorDesc& o) {
    return nll_loss_forward(handle_, r, -100, x, p, t, p, w, p, p, wsb, o, p, sd, p);
  };
  EXPECT_EQ(nll_loss_forward(nullptr, LossReduction::kMean, -100, xd, p, td, p, nullptr, p, p, ws, sd, p, sd, p),
            Status::kNotInitialized);
  EXPECT_EQ(fwd(static_cast<LossReduction>(7), xd, td, nullptr, ws, sd), Status::kBadParam);
  EXPECT_EQ(fwd(LossReduction::kMean, xd, desc(DType::kInt64, {5}), nullptr, ws, sd), Status::kBadParam);
  EXPECT_EQ(fwd(LossReduction::kMean, xd, desc(DType::kFloat32, {4}), nullptr, ws, sd), Status::kNotSupported);
  EXPECT_EQ(fwd(LossReduction::kMean, desc(DType::kInt32, {4, 5}), td, nullptr, ws, sd), Status::kNotSupported);
  const TensorDesc w4 = desc(DType::kFloat32, {4});
  EXPECT_EQ(fwd(LossReduction::kMean, xd, td, &w4, ws, sd), Status::kBadParam);
  EXPECT_EQ(fwd(LossReduction::kMean, xd, td, nullptr, ws - 1, sd), Status::kBadParam);
  EXPECT_EQ(fwd(LossReduction::kNone, xd, td, nullptr, 0, sd), Status::kBadParam);  // output must be [4]
  EXPECT_EQ(fwd(LossReduction::kSum, xd, td, nullptr, ws, desc(DType::kFloat32, {2})), Status::kBadParam);
  EXPECT_EQ(nll_loss_backward(handle_, LossReduction::kNone, -100, sd, p, td, p, nullptr, p, sd, p, xd, p),
            Status::kBadParam);  // per-sample grad_output must be [4]
  EXPECT_EQ(nll_loss_backward(handle_, LossReduction::kMean, -100, sd, p, td, p, nullptr, p, sd, p,
                              desc(DType::kFloat32, {4, 5}, {0, 1}), p),
            Status::kBadParam);
}

TEST_F(NllLossTest, ResultsComeFromSimulatedMemory) {
  const Dims d{8, 6};
  const std::vector<float> x = random<float>(numel(d), 3);
  const std::vector<std::int64_t> t{0, 1, 2, 3, 4, 5, 0, 1};
  void* xp = to_device(x);
  void* tp = to_device(t);
  void* out = dalloc(8 * 4);
  void* tw = dalloc(4);
  const TensorDesc xd = desc(DType::kFloat32, d), td = desc(DType::kInt64, {8}), od = desc(DType::kFloat32, {8});
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);  // the targets' load
  ASSERT_EQ(nll_loss_forward(handle_, LossReduction::kNone, -100, xd, xp, td, tp, nullptr, nullptr, nullptr, 0, od, out,
                             desc(DType::kFloat32, {}), tw),
            Status::kSuccess);
  // A flipped target bit either changes a gathered class or faults the kernel on its bounds check.
  const cnrtRet_t r = cnrtQueueSync(h().queue());
  if (r == cnrtSuccess) {
    const std::vector<float> got = from_device<float>(out, 8);
    bool differs = false;
    for (int i = 0; i < 8; ++i) differs |= got[i] != -x[i * 6 + t[i]];
    EXPECT_TRUE(differs);
  } else {
    EXPECT_EQ(r, cnrtErrorKernelTrap);
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
