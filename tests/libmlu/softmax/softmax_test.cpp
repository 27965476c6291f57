// softmax / log_softmax forward and backward against a naive double-precision reference.
#include "mlusim/mlu/softmax.h"

#include <functional>

#include "softmax/nn_test_util.h"

namespace mlusim::mlu::testing {
namespace {

// Reference over `dim` of row-major logical values.
struct Slices {
  std::int64_t outer = 1, n = 1, inner = 1;
  Slices(const Dims& d, int dim) {
    for (int i = 0; i < static_cast<int>(d.size()); ++i) (i < dim ? outer : i == dim ? n : inner) *= d[i];
  }
  std::int64_t at(std::int64_t o, std::int64_t j, std::int64_t i) const { return (o * n + j) * inner + i; }
};

std::vector<double> ref_forward(const std::vector<float>& x, const Dims& d, int dim, SoftmaxMode mode) {
  const Slices s(d, dim);
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i) {
      double m = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < s.n; ++j) m = std::max(m, double(x[s.at(o, j, i)]));
      for (std::int64_t j = 0; j < s.n; ++j) sum += std::exp(x[s.at(o, j, i)] - m);
      for (std::int64_t j = 0; j < s.n; ++j) {
        const double v = x[s.at(o, j, i)] - m;
        y[s.at(o, j, i)] = mode == SoftmaxMode::kSoftmax ? std::exp(v) / sum : v - std::log(sum);
      }
    }
  return y;
}

std::vector<double> ref_backward(const std::vector<float>& y, const std::vector<float>& dy, const Dims& d, int dim,
                                 SoftmaxMode mode) {
  const Slices s(d, dim);
  std::vector<double> dx(y.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i) {
      double acc = 0;
      for (std::int64_t j = 0; j < s.n; ++j) {
        const auto k = s.at(o, j, i);
        acc += mode == SoftmaxMode::kSoftmax ? double(dy[k]) * y[k] : double(dy[k]);
      }
      for (std::int64_t j = 0; j < s.n; ++j) {
        const auto k = s.at(o, j, i);
        dx[k] = mode == SoftmaxMode::kSoftmax ? y[k] * (dy[k] - acc) : dy[k] - std::exp(double(y[k])) * acc;
      }
    }
  return dx;
}

struct Case {
  Dims dims;
  int dim;
  SoftmaxMode mode;
  DType x_type = DType::kFloat32, y_type = DType::kFloat32;
  Dims x_strides = {}, y_strides = {};  // empty: contiguous
  float scale = 3.0f;                   // inputs uniform in [-scale, scale]
};

class SoftmaxTest : public MluTest {
 protected:
  template <class T>
  void* upload(const std::vector<float>& logical, const Dims& d, const Dims& s) {
    return to_device(to_storage<T>(logical, d, s));
  }
  void* upload(DType t, const std::vector<float>& logical, const Dims& d, const Dims& s) {
    return t == DType::kFloat32 ? upload<float>(logical, d, s) : upload<sim::half>(logical, d, s);
  }
  std::vector<float> download(DType t, const void* p, const Dims& d, const Dims& s) {
    const std::size_t n = storage_elems(d, s);
    return t == DType::kFloat32 ? from_storage(from_device<float>(p, n), d, s)
                                : from_storage(from_device<sim::half>(p, n), d, s);
  }

  // Runs the forward case and returns {got, reference} after checking the status.
  void run_forward(const Case& c) {
    const Dims xs = c.x_strides.empty() ? contiguous_strides(c.dims) : c.x_strides;
    const Dims ys = c.y_strides.empty() ? contiguous_strides(c.dims) : c.y_strides;
    std::vector<float> x = random<float>(numel(c.dims), 11, -c.scale, c.scale);
    if (c.x_type == DType::kFloat16) x = round_half(x);
    void* xp = upload(c.x_type, x, c.dims, xs);
    void* yp = upload(c.y_type, std::vector<float>(numel(c.dims), 0.0f), c.dims, ys);
    ASSERT_EQ(softmax_forward(handle_, c.mode, c.dim, desc(c.x_type, c.dims, xs), xp, desc(c.y_type, c.dims, ys), yp),
              Status::kSuccess)
        << last_error_detail();
    const int d = c.dim < 0 ? c.dim + static_cast<int>(std::max<std::size_t>(c.dims.size(), 1)) : c.dim;
    const std::vector<double> want = ref_forward(x, c.dims.empty() ? Dims{1} : c.dims, d, c.mode);
    const bool half = c.y_type == DType::kFloat16;
    // fp32: a few ulps of exp/log and of the sum; fp16 output: one fp16 rounding (2^-11 relative).
    expect_close(download(c.y_type, yp, c.dims, ys), want, half ? 2e-3 : 2e-6, half ? 2e-3 : 2e-5, "forward");
  }

  void run_backward(const Case& c) {
    const Dims xs = c.x_strides.empty() ? contiguous_strides(c.dims) : c.x_strides;
    const Dims ys = c.y_strides.empty() ? contiguous_strides(c.dims) : c.y_strides;
    const int d = c.dim < 0 ? c.dim + static_cast<int>(c.dims.size()) : c.dim;
    std::vector<float> x = random<float>(numel(c.dims), 5, -c.scale, c.scale);
    std::vector<float> y(x.size());
    const std::vector<double> yd = ref_forward(x, c.dims, d, c.mode);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(yd[i]);
    std::vector<float> dy = random<float>(numel(c.dims), 6);
    if (c.x_type == DType::kFloat16) y = round_half(y), dy = round_half(dy);
    // y and dy share x_type / x_strides; dx gets y_type / y_strides.
    void* yp = upload(c.x_type, y, c.dims, xs);
    void* dyp = upload(c.x_type, dy, c.dims, xs);
    void* dxp = upload(c.y_type, std::vector<float>(numel(c.dims), 0.0f), c.dims, ys);
    ASSERT_EQ(softmax_backward(handle_, c.mode, c.dim, desc(c.x_type, c.dims, xs), yp, desc(c.x_type, c.dims, xs), dyp,
                               desc(c.y_type, c.dims, ys), dxp),
              Status::kSuccess)
        << last_error_detail();
    const bool half = c.y_type == DType::kFloat16 || c.x_type == DType::kFloat16;
    expect_close(download(c.y_type, dxp, c.dims, ys), ref_backward(y, dy, c.dims, d, c.mode), half ? 4e-3 : 1e-5,
                 half ? 4e-3 : 1e-4, "backward");
  }
};

TEST_F(SoftmaxTest, LastDimOddShapes) {
  for (SoftmaxMode m : {SoftmaxMode::kSoftmax, SoftmaxMode::kLogSoftmax}) {
    run_forward({{7, 37}, -1, m});
    run_forward({{3, 5, 129}, 2, m});
    run_forward({{1, 1}, 1, m});
    run_forward({{300, 3}, 1, m});
  }
}

TEST_F(SoftmaxTest, LeadingAndMiddleDims) {
  for (SoftmaxMode m : {SoftmaxMode::kSoftmax, SoftmaxMode::kLogSoftmax}) {
    run_forward({{13, 11, 6}, 1, m});
    run_forward({{13, 11, 6}, 0, m});
    run_forward({{2, 3, 4, 5}, 1, m});
    run_forward({{9, 70}, 0, m});
  }
}

TEST_F(SoftmaxTest, LargeMagnitudesAreStable) {
  run_forward({{5, 33}, 1, SoftmaxMode::kSoftmax, DType::kFloat32, DType::kFloat32, {}, {}, 1000.0f});
  run_forward({{5, 33}, 1, SoftmaxMode::kLogSoftmax, DType::kFloat32, DType::kFloat32, {}, {}, 1000.0f});
}

TEST_F(SoftmaxTest, HalfPrecision) {
  run_forward({{6, 50}, 1, SoftmaxMode::kSoftmax, DType::kFloat16, DType::kFloat16});
  run_forward({{6, 50}, 1, SoftmaxMode::kLogSoftmax, DType::kFloat16, DType::kFloat16});
  run_forward({{6, 50}, 0, SoftmaxMode::kSoftmax, DType::kFloat16, DType::kFloat32});  // half_to_float
}

TEST_F(SoftmaxTest, NonContiguousInputAndOutput) {
  const Dims d{9, 14};
  run_forward({d, 1, SoftmaxMode::kSoftmax, DType::kFloat32, DType::kFloat32, layout_strides(d, {1, 0}),
               layout_strides(d, {0, 1}, 3)});
  run_forward({d, 0, SoftmaxMode::kLogSoftmax, DType::kFloat16, DType::kFloat32, layout_strides(d, {1, 0}, 2)});
  const Dims d3{4, 5, 6};
  run_forward({d3, 2, SoftmaxMode::kSoftmax, DType::kFloat32, DType::kFloat32, layout_strides(d3, {2, 0, 1})});
}

TEST_F(SoftmaxTest, BroadcastInput) {
  // x [5, 7] whose rows all alias one stored row (stride 0), as torch's expand().
  const Dims d{5, 7};
  const std::vector<float> row = random<float>(7, 12);
  std::vector<float> x;
  for (int i = 0; i < 5; ++i) x.insert(x.end(), row.begin(), row.end());
  void* xp = to_device(row);
  void* yp = dalloc(35 * 4);
  for (int dim : {0, 1}) {
    ASSERT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, dim, desc(DType::kFloat32, d, {0, 1}), xp,
                              desc(DType::kFloat32, d), yp),
              Status::kSuccess)
        << last_error_detail();
    expect_close(from_device<float>(yp, 35), ref_forward(x, d, dim, SoftmaxMode::kSoftmax), 2e-6, 2e-5, "y");
  }
}

TEST_F(SoftmaxTest, RowsLargerThanNramUseMultiplePasses) {
  // tiny.yaml has 64 KiB of NRAM: a 20000-float row (80 KB) cannot be resident.
  const Dims d{2, 20000};
  run_forward({d, 1, SoftmaxMode::kSoftmax});
  run_forward({d, 1, SoftmaxMode::kLogSoftmax, DType::kFloat16, DType::kFloat16});
  run_forward({{9000, 3}, 0, SoftmaxMode::kSoftmax});  // long columns
  run_backward({d, 1, SoftmaxMode::kSoftmax});
  run_backward({{9000, 3}, 0, SoftmaxMode::kLogSoftmax});
}

TEST_F(SoftmaxTest, Backward) {
  for (SoftmaxMode m : {SoftmaxMode::kSoftmax, SoftmaxMode::kLogSoftmax}) {
    run_backward({{7, 37}, 1, m});
    run_backward({{13, 11, 6}, 1, m});
    run_backward({{5, 8}, 0, m, DType::kFloat16, DType::kFloat16});
    run_backward({{9, 14}, 1, m, DType::kFloat32, DType::kFloat16, layout_strides({9, 14}, {1, 0}), {}});
  }
}

TEST_F(SoftmaxTest, EmptyAndScalarTensors) {
  void* p = dalloc(16);
  ASSERT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, desc(DType::kFloat32, {3, 0}), nullptr,
                            desc(DType::kFloat32, {3, 0}), nullptr),
            Status::kSuccess);
  ASSERT_EQ(softmax_backward(handle_, SoftmaxMode::kSoftmax, 0, desc(DType::kFloat32, {0, 4}), nullptr,
                             desc(DType::kFloat32, {0, 4}), nullptr, desc(DType::kFloat32, {0, 4}), nullptr),
            Status::kSuccess);
  // A 0-d tensor is a 1-element slice: softmax 1, log_softmax 0.
  void* x = to_device(std::vector<float>{42.0f});
  ASSERT_EQ(
      softmax_forward(handle_, SoftmaxMode::kSoftmax, 0, desc(DType::kFloat32, {}), x, desc(DType::kFloat32, {}), p),
      Status::kSuccess);
  EXPECT_EQ(from_device<float>(p, 1)[0], 1.0f);
  ASSERT_EQ(softmax_forward(handle_, SoftmaxMode::kLogSoftmax, -1, desc(DType::kFloat32, {}), x,
                            desc(DType::kFloat32, {}), p),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(p, 1)[0], 0.0f);
}

TEST_F(SoftmaxTest, BadArguments) {
  void* p = dalloc(1024);
  const TensorDesc f{desc(DType::kFloat32, {4, 8})};
  EXPECT_EQ(softmax_forward(nullptr, SoftmaxMode::kSoftmax, 1, f, p, f, p), Status::kNotInitialized);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 2, f, p, f, p), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("dim 2"), std::string::npos) << last_error_detail();
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, -3, f, p, f, p), Status::kBadParam);
  EXPECT_EQ(softmax_forward(handle_, static_cast<SoftmaxMode>(9), 1, f, p, f, p), Status::kBadParam);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, f, p, desc(DType::kFloat32, {4, 7}), p),
            Status::kBadParam);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, desc(DType::kInt32, {4, 8}), p, f, p),
            Status::kNotSupported);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, f, nullptr, f, p), Status::kBadParam);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, f, p, desc(DType::kFloat32, {4, 8}, {0, 1}), p),
            Status::kBadParam);
  EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, TensorDesc{}, p, f, p), Status::kBadParam);
  EXPECT_EQ(softmax_backward(handle_, SoftmaxMode::kSoftmax, 1, f, p, desc(DType::kFloat32, {4, 9}), p, f, p),
            Status::kBadParam);
  EXPECT_EQ(softmax_backward(handle_, SoftmaxMode::kLogSoftmax, 1, f, p, f, p, f, nullptr), Status::kBadParam);
}

TEST_F(SoftmaxTest, OneKernelPerCallAndMinimumBytesRecorded) {
  const Dims d{16, 40};
  void* x = to_device(random<float>(numel(d), 1));
  void* y = dalloc(numel(d) * 2);
  h().clear_ops();
  ASSERT_EQ(
      softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, desc(DType::kFloat32, d), x, desc(DType::kFloat16, d), y),
      Status::kSuccess);
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops()[0].name, "softmax_forward");
  EXPECT_EQ(h().ops()[0].kernels, 1u);
  EXPECT_EQ(h().ops()[0].bytes, std::uint64_t(numel(d)) * 6);
  EXPECT_EQ(h().ops()[0].macs, 0u);
}

// GDRAM traffic of one call: (bytes read, bytes written) by its kernels.
std::pair<std::uint64_t, std::uint64_t> kernel_traffic(Handle* h, const std::function<Status()>& op) {
  EXPECT_EQ(cnrtQueueSync(h->queue()), cnrtSuccess);
  EXPECT_EQ(mlusimResetStats(0), cnrtSuccess);
  EXPECT_EQ(op(), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(cnrtQueueSync(h->queue()), cnrtSuccess);
  mlusimDeviceStats_t stats{};
  EXPECT_EQ(mlusimGetDeviceStats(0, &stats), cnrtSuccess);
  return {stats.read_bytes[1], stats.write_bytes[1]};
}

TEST_F(SoftmaxTest, ResidentSlicesAreReadOnceElseThreeTimes) {
  // tiny.yaml has 64 KiB of NRAM: 500-float rows are resident, 20000-float rows are not.
  for (const Dims& d : {Dims{40, 500}, Dims{2, 20000}}) {
    const std::uint64_t bytes = 4 * numel(d);
    void* x = to_device(random<float>(numel(d), 2));
    void* y = dalloc(bytes);
    const auto [read, written] = kernel_traffic(handle_, [&] {
      return softmax_forward(handle_, SoftmaxMode::kSoftmax, 1, desc(DType::kFloat32, d), x, desc(DType::kFloat32, d),
                             y);
    });
    EXPECT_EQ(read, (d[1] == 500 ? 1 : 3) * bytes) << "max, sum and write passes each read a long row";
    EXPECT_EQ(written, bytes);
  }
}

TEST_F(SoftmaxTest, ResultsComeFromSimulatedMemory) {
  // log_softmax of values in [50, 100] is linear in x with outputs no larger than x, so even a
  // flipped lowest mantissa bit of any input shows in its output.
  const Dims d{8, 64};
  void* xp = to_device(random<float>(numel(d), 3, 50, 100));
  void* yp = dalloc(numel(d) * 4);
  auto run = [&] {
    EXPECT_EQ(softmax_forward(handle_, SoftmaxMode::kLogSoftmax, 1, desc(DType::kFloat32, d), xp,
                              desc(DType::kFloat32, d), yp),
              Status::kSuccess);
    return from_device<float>(yp, numel(d));
  };
  const std::vector<float> clean = run();
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);  // the first DMA: an input load
  EXPECT_NE(run(), clean) << "a flipped DMA bit must change the result";
}

}  // namespace
}  // namespace mlusim::mlu::testing
