// NN ops on BERT-base shapes on mlu370-x4: simulated time against the roofline bound, and host
// seconds per op.
//   BM_Softmax/<seq>/<fp16>: softmax over the last dim of [batch*heads*seq, seq] attention scores
//     (batch 8, 12 heads), seq 128 and 512.
//   BM_LayerNorm/<seq>/<fp16>: layer norm over the last dim of [batch*seq, 768] (weight and bias,
//     mean and rstd saved); BM_LayerNormBackward: its backward with dx, dweight and dbias.
//   BM_MaxPool/<batch>/<fp16>/<indices>: ResNet's stem max pool, 3x3 stride 2 pad 1 over
//     [batch, 64, 112, 112] -> [batch, 64, 56, 56], with or without int64 indices (torch's
//     max_pool2d_with_indices returns them; batch 1 is `mlusim run resnet18`).
//   BM_AvgPool/<batch>/<fp16>: avg_pool2d with the same geometry (count_include_pad).
// Counters: simulated_us (first kernel start to last kernel end), bound_us (roofline bound of
// the op's minimum DRAM bytes), efficiency = bound / simulated (1 = at the roofline),
// host_seconds (wall time of one call including its sync), vfu_busy / io_dma_busy (share of
// the simulated time each core's VFU / IO-DMA engine was busy, averaged over cores),
// vfu_ops / io_dmas / move_dmas (intrinsics issued on those engines, all cores together).
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/mlu.h"
#include "mlusim/sim/config.h"
#include "mlusim/sim/roofline.h"

namespace {

using namespace mlusim;
using mlu::DType;
using mlu::Status;
using mlu::TensorDesc;

constexpr std::int64_t kBatch = 8, kHeads = 12, kHidden = 768;

struct Device {
  Device() {
    if (mlusimLoadConfig("mlu370-x4") != cnrtSuccess) throw std::runtime_error(mlusimGetLastErrorMessage());
    cfg = sim::load_config("mlu370-x4");
    if (mlu::Handle::create(&handle) != Status::kSuccess) throw std::runtime_error(mlu::last_error_detail());
  }
  ~Device() {
    for (void* p : buffers) cnrtFree(p);
    mlu::Handle::destroy(handle);
  }
  // A device buffer of `bytes` holding small random values of `dtype`.
  void* random_buffer(std::size_t bytes, DType dtype) {
    void* p = nullptr;
    if (cnrtMalloc(&p, bytes) != cnrtSuccess) throw std::runtime_error("cnrtMalloc failed");
    buffers.push_back(p);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::vector<std::uint8_t> host(bytes);
    if (dtype == DType::kFloat32) {
      auto* f = reinterpret_cast<float*>(host.data());
      for (std::size_t i = 0; i < bytes / 4; ++i) f[i] = u(rng);
    } else {
      auto* f = reinterpret_cast<sim::half*>(host.data());
      for (std::size_t i = 0; i < bytes / 2; ++i) f[i] = sim::half(u(rng));
    }
    cnrtMemcpy(p, host.data(), bytes, cnrtMemcpyHostToDev);
    return p;
  }
  sim::HardwareConfig cfg;
  mlu::Handle* handle = nullptr;
  std::vector<void*> buffers;
};

TensorDesc desc(DType t, std::vector<std::int64_t> dims) {
  TensorDesc d;
  d.set(t, dims);
  return d;
}

// Runs `op` once per iteration and reports simulated time against the roofline of its op record.
void measure(benchmark::State& state, Device& dev, const std::function<Status()>& op) {
  double host = 0, simulated_ns = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    cnrtQueueSync(dev.handle->queue());
    mlusimResetStats(0);
    dev.handle->clear_ops();
    const auto t0 = std::chrono::steady_clock::now();
    if (op() != Status::kSuccess) {
      state.SkipWithError(mlu::last_error_detail().c_str());
      return;
    }
    if (cnrtQueueSync(dev.handle->queue()) != cnrtSuccess) {
      state.SkipWithError(mlusimGetLastErrorMessage());
      return;
    }
    host += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t count = 0;
    mlusimGetKernelRecordCount(0, &count);
    mlusimKernelRecord_t first{}, last{};
    mlusimGetKernelRecord(0, 0, &first);
    mlusimGetKernelRecord(0, count - 1, &last);
    simulated_ns = last.end_ns - first.start_ns;
    bytes = 0;
    for (const auto& r : dev.handle->ops()) bytes += r.bytes;
  }
  mlusimDeviceStats_t stats{};
  mlusimGetDeviceStats(0, &stats);
  const double core_ns = simulated_ns * double(dev.cfg.total_cores());
  const double bound_ns = double(sim::roofline_bound_ps(dev.cfg, sim::MacsByDtype{}, bytes)) / 1e3;
  state.counters["vfu_busy"] = stats.engine_busy_ns[1] / core_ns;
  state.counters["io_dma_busy"] = stats.engine_busy_ns[3] / core_ns;
  state.counters["vfu_ops"] = double(stats.engine_intrinsics[1]);
  state.counters["io_dmas"] = double(stats.engine_intrinsics[3]);
  state.counters["move_dmas"] = double(stats.engine_intrinsics[4]);
  state.counters["simulated_us"] = simulated_ns / 1e3;
  state.counters["bound_us"] = bound_ns / 1e3;
  state.counters["efficiency"] = bound_ns / simulated_ns;
  state.counters["host_seconds"] = host / double(state.iterations());
}

Device& device() {
  static Device d;
  return d;
}

void BM_Softmax(benchmark::State& state) {
  Device& dev = device();
  const std::int64_t seq = state.range(0);
  const DType t = state.range(1) ? DType::kFloat16 : DType::kFloat32;
  const std::vector<std::int64_t> dims{kBatch * kHeads * seq, seq};
  const std::size_t bytes = std::size_t(dims[0] * dims[1]) * sim::dtype_size(t);
  void* x = dev.random_buffer(bytes, t);
  void* y = dev.random_buffer(bytes, t);
  measure(state, dev, [&] {
    return mlu::softmax_forward(dev.handle, mlu::SoftmaxMode::kSoftmax, -1, desc(t, dims), x, desc(t, dims), y);
  });
}
BENCHMARK(BM_Softmax)
    ->ArgsProduct({{128, 512}, {0, 1}})
    ->ArgNames({"seq", "fp16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

void BM_LayerNorm(benchmark::State& state) {
  Device& dev = device();
  const std::int64_t seq = state.range(0);
  const DType t = state.range(1) ? DType::kFloat16 : DType::kFloat32;
  const std::vector<std::int64_t> dims{kBatch * seq, kHidden};
  const std::size_t es = sim::dtype_size(t), bytes = std::size_t(dims[0] * dims[1]) * es;
  void* x = dev.random_buffer(bytes, t);
  void* y = dev.random_buffer(bytes, t);
  void* w = dev.random_buffer(kHidden * es, t);
  void* b = dev.random_buffer(kHidden * es, t);
  void* mean = dev.random_buffer(dims[0] * 4, DType::kFloat32);
  void* rstd = dev.random_buffer(dims[0] * 4, DType::kFloat32);
  const TensorDesc xd = desc(t, dims), wd = desc(t, {kHidden}), sd = desc(DType::kFloat32, {dims[0], 1});
  measure(state, dev, [&] {
    return mlu::layer_norm_forward(dev.handle, 1, 1e-12, xd, x, &wd, w, &wd, b, xd, y, &sd, mean, &sd, rstd);
  });
}
BENCHMARK(BM_LayerNorm)
    ->ArgsProduct({{128, 512}, {0, 1}})
    ->ArgNames({"seq", "fp16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

void BM_LayerNormBackward(benchmark::State& state) {
  Device& dev = device();
  const std::int64_t seq = state.range(0);
  const DType t = state.range(1) ? DType::kFloat16 : DType::kFloat32;
  const std::vector<std::int64_t> dims{kBatch * seq, kHidden};
  const std::size_t es = sim::dtype_size(t), bytes = std::size_t(dims[0] * dims[1]) * es;
  void* x = dev.random_buffer(bytes, t);
  void* dy = dev.random_buffer(bytes, t);
  void* dx = dev.random_buffer(bytes, t);
  void* w = dev.random_buffer(kHidden * es, t);
  void* dw = dev.random_buffer(kHidden * es, t);
  void* db = dev.random_buffer(kHidden * es, t);
  void* mean = dev.random_buffer(dims[0] * 4, DType::kFloat32);
  void* rstd = dev.random_buffer(dims[0] * 4, DType::kFloat32);
  const TensorDesc xd = desc(t, dims), wd = desc(t, {kHidden}), sd = desc(DType::kFloat32, {dims[0], 1});
  std::size_t ws_bytes = 0;
  mlu::get_layer_norm_backward_workspace_size(dev.handle, 1, xd, true, true, &ws_bytes);
  void* ws = dev.random_buffer(ws_bytes, DType::kFloat32);
  measure(state, dev, [&] {
    return mlu::layer_norm_backward(dev.handle, 1, xd, dy, xd, x, sd, mean, sd, rstd, &wd, w, ws, ws_bytes, &xd, dx,
                                    &wd, dw, &wd, db);
  });
}
BENCHMARK(BM_LayerNormBackward)
    ->ArgsProduct({{128, 512}, {0, 1}})
    ->ArgNames({"seq", "fp16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

// ResNet stem max pool: 3x3, stride 2, pad 1 over [batch, 64, 112, 112].
mlu::Pool2dParams resnet_pool_params() {
  mlu::Pool2dParams p;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  return p;
}

void BM_MaxPool(benchmark::State& state) {
  Device& dev = device();
  const std::int64_t batch = state.range(0);
  const DType t = state.range(1) ? DType::kFloat16 : DType::kFloat32;
  const bool with_indices = state.range(2) != 0;
  const std::size_t es = sim::dtype_size(t);
  const TensorDesc xd = desc(t, {batch, 64, 112, 112}), yd = desc(t, {batch, 64, 56, 56});
  const TensorDesc id = desc(DType::kInt64, {batch, 64, 56, 56});
  void* x = dev.random_buffer(std::size_t(xd.numel()) * es, t);
  void* y = dev.random_buffer(std::size_t(yd.numel()) * es, t);
  void* ind = dev.random_buffer(std::size_t(id.numel()) * 8, DType::kFloat32);
  const mlu::Pool2dParams p = resnet_pool_params();
  measure(state, dev, [&] {
    return mlu::max_pool2d_forward(dev.handle, p, xd, x, yd, y, with_indices ? &id : nullptr, ind);
  });
}
BENCHMARK(BM_MaxPool)
    ->ArgsProduct({{1, 8}, {0, 1}, {0, 1}})
    ->ArgNames({"batch", "fp16", "indices"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

void BM_AvgPool(benchmark::State& state) {
  Device& dev = device();
  const std::int64_t batch = state.range(0);
  const DType t = state.range(1) ? DType::kFloat16 : DType::kFloat32;
  const std::size_t es = sim::dtype_size(t);
  const TensorDesc xd = desc(t, {batch, 64, 112, 112}), yd = desc(t, {batch, 64, 56, 56});
  void* x = dev.random_buffer(std::size_t(xd.numel()) * es, t);
  void* y = dev.random_buffer(std::size_t(yd.numel()) * es, t);
  const mlu::Pool2dParams p = resnet_pool_params();
  measure(state, dev, [&] { return mlu::avg_pool2d_forward(dev.handle, p, xd, x, yd, y); });
}
BENCHMARK(BM_AvgPool)
    ->ArgsProduct({{1, 8}, {0, 1}})
    ->ArgNames({"batch", "fp16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
