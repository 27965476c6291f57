// libmlu GEMM and convolution efficiency on mlu370-x4 (the default preset).
//
// Per case, measured in one run: the op's simulated time (first kernel start to last kernel end,
// from the driver's kernel records), its efficiency against the TFU peak (MACs / (time x
// tfu_peak_macs_per_s)) and against the roofline bound (bound / time, bound = max(MACs / peak,
// minimum DRAM bytes / DRAM bandwidth) from sim/roofline.h), and the host seconds the simulation
// took. Counters: sim_us, tfu_peak_pct, roofline_pct, host_s, gmacs.
//
//   BM_GemmFp16/4096: C = A x B, 4096^3 fp16, in timing-only mode (mlusimSetTimingOnly(1)): the
//     ~69 GMAC of a functional run would cost minutes of host arithmetic and cycles are identical
//     by design. Target: tfu_peak_pct >= 85.
//   BM_GemmFp16/1024: the same at 1024^3, functional.
//   BM_BertLinear/<i>: BERT-base linear layers at 4096 tokens (forward, and a weight gradient whose
//     operand is a transposed view), fp16, timing-only.
//   BM_ResNet50Conv/<layer>/<batch>: every distinct conv layer of torchvision's ResNet-50 at 224x224
//     (conv1 7x7/2 3->64; per stage the 1x1 reduce, 3x3, 1x1 expand and the strided 3x3 and 1x1
//     downsample of the first block), NCHW fp16 forward, batch 1 and 8, timing-only.
//   BM_ResNet50ConvCL/<layer>/<batch>: the same in channels_last (NHWC activations, OHWI weights),
//     which the direct NHWC kernel runs (conv/direct_conv.h); BM_ResNet50ConvBwdData/<layer>/8 and
//     BM_ResNet50ConvBwdWeight/<layer>/8: the two backwards at batch 8, NCHW and channels_last
//     (layout 0 / 1). Counter `compute_bound`: 1 when MACs / TFU peak exceeds the minimum DRAM
//     bytes / DRAM bandwidth (the roofline's compute side). Per conv case, where the cycles go
//     (engine busy time summed over the cores, as a share of cores x span): tfu_busy_pct,
//     tfu_intrinsic_pct (MACs / (TFU cycles x array MACs per cycle): the intrinsics' own
//     efficiency, fill/drain and partial folds), vfu_busy_pct, io_dma_busy_pct,
//     move_dma_busy_pct; dram_mb (bytes across the DRAM channels: GDRAM read + written, less the
//     reads the L2 served, plus its over-fetch), l2_hit_mb (the reads it served), tfu_ops (TFU intrinsics).
//   BM_ResNet18Conv/<layer>: every distinct conv layer of torchvision's ResNet-18 at 224x224, batch
//     1, NCHW fp32 forward (what `mlusim run resnet18` runs), timing-only; BM_ResNet18ConvTotal sums
//     them weighted by how often each occurs in the model (20 convs), i.e. the model's conv time.
#include <benchmark/benchmark.h>
#include <cnrt.h>
#include <mlusim_ext.h>

#include <chrono>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "libmlu_session.h"
#include "mlusim/mlu/mlu.h"
#include "mlusim/sim/roofline.h"
#include "mlusim/sim/simulator.h"

namespace {

using namespace mlusim;
using mlu::DType;
using mlu::Status;
using mlu::TensorDesc;

using bench::check;
using bench::die;
using bench::Session;

struct Measured {
  double sim_ps = 0, host_s = 0;
  double split_ps = 0;  // the phase-split kernels (names ending in _split_x), start to end
};

// Runs `op` once, waits, and returns the span of the kernels it enqueued.
Measured measure(Session& s, const std::function<void()>& op) {
  std::size_t before = 0, after = 0;
  check(cnrtQueueSync(s.h->queue()), "sync");
  check(mlusimFlushL2(0), "flush L2");  // every op from a cold L2, whatever ran before it
  check(mlusimGetKernelRecordCount(0, &before), "record count");
  const auto t0 = std::chrono::steady_clock::now();
  op();
  check(cnrtQueueSync(s.h->queue()), "sync");
  Measured m;
  m.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check(mlusimGetKernelRecordCount(0, &after), "record count");
  double first = 1e300, last = 0;
  for (std::size_t i = before; i < after; ++i) {
    mlusimKernelRecord_t r{};
    check(mlusimGetKernelRecord(0, i, &r), "record");
    if (r.faulted) die(std::string("kernel fault: ") + r.fault);
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    if (std::string(r.name).find("_split_x") != std::string::npos) m.split_ps += (r.end_ns - r.start_ns) * 1e3;
  }
  m.sim_ps = (last - first) * 1e3;
  return m;
}

void report(benchmark::State& state, const Measured& m, const mlu::OpRecord& rec, DType dtype) {
  const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
  sim::MacsByDtype macs{};
  macs[static_cast<std::size_t>(dtype)] = rec.macs;
  const double bound_ps = static_cast<double>(sim::roofline_bound_ps(cfg, macs, rec.bytes));
  const double peak = sim::tfu_peak_macs_per_s(cfg, dtype);
  state.counters["sim_us"] = m.sim_ps / 1e6;
  state.counters["tfu_peak_pct"] = 100.0 * static_cast<double>(rec.macs) / (m.sim_ps * 1e-12 * peak);
  state.counters["roofline_pct"] = 100.0 * bound_ps / m.sim_ps;
  state.counters["host_s"] = m.host_s;
  state.counters["gmacs"] = static_cast<double>(rec.macs) / 1e9;
}

TensorDesc make_desc(DType t, std::vector<std::int64_t> dims, mlu::Layout layout = mlu::Layout::kND) {
  TensorDesc d;
  check(d.set(t, dims, layout), "descriptor");
  return d;
}

void BM_GemmFp16(benchmark::State& state) {
  const auto n = static_cast<std::int64_t>(state.range(0));
  const bool timing_only = n > 2048;
  Session s(timing_only);
  const TensorDesc a = make_desc(DType::kFloat16, {n, n});
  void* pa = s.alloc(n * n * 2);
  void* pb = s.alloc(n * n * 2);
  void* pc = s.alloc(n * n * 2);
  std::size_t ws = 0;
  check(mlu::get_matmul_workspace_size(s.h, {}, a, a, nullptr, a, &ws), "workspace");
  void* pws = ws ? s.alloc(ws) : nullptr;
  Measured m;
  for (auto _ : state) {
    s.h->clear_ops();
    m = measure(s, [&] { check(mlu::matmul(s.h, {}, a, pa, a, pb, nullptr, nullptr, a, pc, pws, ws), "matmul"); });
  }
  report(state, m, s.h->ops().back(), DType::kFloat16);
  state.SetLabel(timing_only ? "timing-only" : "functional");
}
BENCHMARK(BM_GemmFp16)->Arg(4096)->Arg(1024)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// BERT-base linear layers at 4096 tokens (batch 8 x sequence 512), fp16, timing-only: y = x W^T
// forward (W given transposed by flag, as torch.nn.Linear), and the weight gradient dW = dY^T X
// (a transposed view: repacked on the TFU first).
struct Linear {
  const char* name;
  std::int64_t m, k, n;
  bool weight_grad;
};
constexpr Linear kBert[] = {
    {"qkv_768x768", 4096, 768, 768, false},
    {"ffn_up_768x3072", 4096, 768, 3072, false},
    {"ffn_down_3072x768", 4096, 3072, 768, false},
    {"dW_ffn_up_3072x768", 3072, 4096, 768, true},
};

void BM_BertLinear(benchmark::State& state) {
  const Linear& l = kBert[state.range(0)];
  Session s(/*timing_only=*/true);
  mlu::MatmulParams prm;
  TensorDesc a, b;
  if (l.weight_grad) {  // dW [n_out, k_in] = dY^T [n_out, tokens] x X [tokens, k_in]: A is dY [tokens, n_out],
                        // transposed
    a = make_desc(DType::kFloat16, {l.k, l.m});
    b = make_desc(DType::kFloat16, {l.k, l.n});
    prm.trans_a = true;
  } else {  // y [tokens, out] = x [tokens, in] x W^T, W [out, in]
    a = make_desc(DType::kFloat16, {l.m, l.k});
    b = make_desc(DType::kFloat16, {l.n, l.k});
    prm.trans_b = true;
  }
  const TensorDesc c = make_desc(DType::kFloat16, {l.m, l.n});
  void* pa = s.alloc(static_cast<std::size_t>(a.numel()) * 2);
  void* pb = s.alloc(static_cast<std::size_t>(b.numel()) * 2);
  void* pc = s.alloc(static_cast<std::size_t>(c.numel()) * 2);
  std::size_t ws = 0;
  check(mlu::get_matmul_workspace_size(s.h, prm, a, b, nullptr, c, &ws), "workspace");
  void* pws = ws ? s.alloc(ws) : nullptr;
  Measured m;
  for (auto _ : state) {
    s.h->clear_ops();
    m = measure(s, [&] { check(mlu::matmul(s.h, prm, a, pa, b, pb, nullptr, nullptr, c, pc, pws, ws), "matmul"); });
  }
  report(state, m, s.h->ops().back(), DType::kFloat16);
  state.SetLabel(std::string(l.name) + " timing-only");
}
BENCHMARK(BM_BertLinear)
    ->DenseRange(0, std::size(kBert) - 1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// torchvision ResNet-50 (v1.5: the stride sits on the 3x3) at 224 x 224: every distinct conv.
struct ConvLayer {
  const char* name;
  std::int64_t c, hw, oc, k, stride;
};
constexpr ConvLayer kResNet50[] = {
    {"conv1_7x7s2_3-64", 3, 224, 64, 7, 2},   {"l1_1x1_64-64", 64, 56, 64, 1, 1},
    {"l1_3x3_64-64", 64, 56, 64, 3, 1},       {"l1_1x1_64-256", 64, 56, 256, 1, 1},
    {"l1_1x1_256-64", 256, 56, 64, 1, 1},     {"l2_1x1_256-128", 256, 56, 128, 1, 1},
    {"l2_3x3s2_128-128", 128, 56, 128, 3, 2}, {"l2_down_1x1s2_256-512", 256, 56, 512, 1, 2},
    {"l2_1x1_128-512", 128, 28, 512, 1, 1},   {"l2_1x1_512-128", 512, 28, 128, 1, 1},
    {"l2_3x3_128-128", 128, 28, 128, 3, 1},   {"l3_1x1_512-256", 512, 28, 256, 1, 1},
    {"l3_3x3s2_256-256", 256, 28, 256, 3, 2}, {"l3_down_1x1s2_512-1024", 512, 28, 1024, 1, 2},
    {"l3_1x1_256-1024", 256, 14, 1024, 1, 1}, {"l3_1x1_1024-256", 1024, 14, 256, 1, 1},
    {"l3_3x3_256-256", 256, 14, 256, 3, 1},   {"l4_1x1_1024-512", 1024, 14, 512, 1, 1},
    {"l4_3x3s2_512-512", 512, 14, 512, 3, 2}, {"l4_down_1x1s2_1024-2048", 1024, 14, 2048, 1, 2},
    {"l4_1x1_512-2048", 512, 7, 2048, 1, 1},  {"l4_1x1_2048-512", 2048, 7, 512, 1, 1},
    {"l4_3x3_512-512", 512, 7, 512, 3, 1},
};

// Sums over all layers of a batch size, for the aggregate line.
struct Totals {
  double macs = 0, sim_ps = 0, bound_ps = 0;
};
Totals g_totals[2];

// A 4-d tensor of logical NCHW dims, in NCHW or channels_last (NHWC strides) memory format.
TensorDesc conv_desc(DType t, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, bool channels_last) {
  if (!channels_last) return make_desc(t, {n, c, h, w}, mlu::Layout::kNCHW);
  TensorDesc d;
  check(d.set(t, {n, c, h, w}, {h * w * c, 1, w * c, c}, mlu::Layout::kNCHW), "descriptor");
  return d;
}

enum class ConvOp { kForward, kBackwardData, kBackwardWeight };

// Runs one conv layer (pad k / 2) in timing-only mode and reports it; returns the op record and
// adds the run to `t` (`count` times: how often the layer occurs in its model).
void run_conv_layer(benchmark::State& state, const ConvLayer& l, std::int64_t n, DType dtype, Totals& t, int count,
                    bool channels_last = false, ConvOp op = ConvOp::kForward) {
  Session s(/*timing_only=*/true);
  const std::size_t es = dtype == DType::kFloat16 ? 2 : 4;
  mlu::ConvParams p;
  p.stride_h = p.stride_w = static_cast<int>(l.stride);
  p.pad_h = p.pad_w = static_cast<int>(l.k / 2);
  const std::int64_t out = (l.hw + 2 * p.pad_h - l.k) / l.stride + 1;
  const TensorDesc x = conv_desc(dtype, n, l.c, l.hw, l.hw, channels_last);
  const TensorDesc w = conv_desc(dtype, l.oc, l.c, l.k, l.k, channels_last);
  const TensorDesc y = conv_desc(dtype, n, l.oc, out, out, channels_last);
  void* px = s.alloc(static_cast<std::size_t>(x.numel()) * es);
  void* pw = s.alloc(static_cast<std::size_t>(w.numel()) * es);
  void* py = s.alloc(static_cast<std::size_t>(y.numel()) * es);
  std::size_t ws = 0;
  switch (op) {
    case ConvOp::kForward: check(mlu::get_conv2d_forward_workspace_size(s.h, p, x, w, y, &ws), "workspace"); break;
    case ConvOp::kBackwardData:
      check(mlu::get_conv2d_backward_data_workspace_size(s.h, p, y, w, x, &ws), "workspace");
      break;
    case ConvOp::kBackwardWeight:
      check(mlu::get_conv2d_backward_weight_workspace_size(s.h, p, x, y, w, &ws), "workspace");
      break;
  }
  void* pws = ws ? s.alloc(ws) : nullptr;
  Measured m;
  mlusimDeviceStats_t st{};
  for (auto _ : state) {
    s.h->clear_ops();
    check(cnrtQueueSync(s.h->queue()), "sync");
    check(mlusimResetStats(0), "reset stats");
    m = measure(s, [&] {
      switch (op) {
        case ConvOp::kForward:
          check(mlu::conv2d_forward(s.h, p, x, px, w, pw, nullptr, nullptr, y, py, pws, ws), "conv");
          break;
        case ConvOp::kBackwardData:
          check(mlu::conv2d_backward_data(s.h, p, y, py, w, pw, nullptr, nullptr, x, px, pws, ws), "conv backward data");
          break;
        case ConvOp::kBackwardWeight:
          check(mlu::conv2d_backward_weight(s.h, p, x, px, y, py, w, pw, pws, ws), "conv backward weight");
          break;
      }
    });
  }
  check(mlusimGetDeviceStats(0, &st), "stats");
  const mlu::OpRecord& rec = s.h->ops().back();
  report(state, m, rec, dtype);
  {
    // Where the cycles go (engine time summed over the cores, as a share of cores x the op's span):
    // tfu_busy_pct x tfu_intrinsic_pct ~ tfu_peak_pct; the rest is TFU idle (waiting for DMA,
    // VFU work, barriers, cores without work).
    const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
    const double core_ns = m.sim_ps / 1e3 * cfg.total_cores();
    const double per_core_cycle = sim::tfu_peak_macs_per_s(cfg, dtype) / (cfg.core_clock_mhz * 1e6 * cfg.total_cores());
    state.counters["tfu_busy_pct"] = 100.0 * st.engine_busy_ns[2] / core_ns;
    state.counters["tfu_intrinsic_pct"] =
        st.engine_cycles[2] ? 100.0 * static_cast<double>(rec.macs) / (static_cast<double>(st.engine_cycles[2]) * per_core_cycle) : 0;
    state.counters["vfu_busy_pct"] = 100.0 * st.engine_busy_ns[1] / core_ns;
    state.counters["io_dma_busy_pct"] = 100.0 * st.engine_busy_ns[3] / core_ns;
    state.counters["move_dma_busy_pct"] = 100.0 * st.engine_busy_ns[4] / core_ns;
    state.counters["dram_mb"] = static_cast<double>(st.dram_bytes) / 1e6;
    state.counters["l2_hit_mb"] = static_cast<double>(st.l2_hit_bytes) / 1e6;
    state.counters["tfu_ops"] = static_cast<double>(st.engine_intrinsics[2]);
  }
  {
    const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
    const double compute_s = static_cast<double>(rec.macs) / sim::tfu_peak_macs_per_s(cfg, dtype);
    const double memory_s = static_cast<double>(rec.bytes) / (cfg.dram_bandwidth_gbps * 1e9);
    state.counters["compute_bound"] = compute_s > memory_s ? 1 : 0;
  }
  state.counters["kernels"] = static_cast<double>(rec.kernels);
  state.counters["split_us"] = m.split_ps / 1e6;
  t.macs += count * static_cast<double>(rec.macs);
  t.sim_ps += count * m.sim_ps;
  t.bound_ps += count * m.sim_ps * state.counters["roofline_pct"] / 100.0;
  state.SetLabel(std::string(l.name) + " timing-only");
}

void BM_ResNet50Conv(benchmark::State& state) {
  run_conv_layer(state, kResNet50[state.range(0)], state.range(1), DType::kFloat16,
                 g_totals[state.range(1) == 1 ? 0 : 1], 1);
}
BENCHMARK(BM_ResNet50Conv)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kResNet50) - 1, 1), {1, 8}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_ResNet50ConvCL(benchmark::State& state) {
  Totals ignored;
  run_conv_layer(state, kResNet50[state.range(0)], state.range(1), DType::kFloat16, ignored, 1, true);
}
BENCHMARK(BM_ResNet50ConvCL)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kResNet50) - 1, 1), {1, 8}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_ResNet50ConvBwdData(benchmark::State& state) {
  Totals ignored;
  run_conv_layer(state, kResNet50[state.range(0)], 8, DType::kFloat16, ignored, 1, state.range(1) == 1,
                 ConvOp::kBackwardData);
}
BENCHMARK(BM_ResNet50ConvBwdData)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kResNet50) - 1, 1), {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_ResNet50ConvBwdWeight(benchmark::State& state) {
  Totals ignored;
  run_conv_layer(state, kResNet50[state.range(0)], 8, DType::kFloat16, ignored, 1, state.range(1) == 1,
                 ConvOp::kBackwardWeight);
}
BENCHMARK(BM_ResNet50ConvBwdWeight)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kResNet50) - 1, 1), {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// All layers of one batch size together (each layer once): MAC-weighted TFU efficiency and
// roofline efficiency of the whole set.
void BM_ResNet50ConvTotal(benchmark::State& state) {
  const Totals& t = g_totals[state.range(0) == 1 ? 0 : 1];
  for (auto _ : state) {
  }
  const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
  state.counters["sim_us"] = t.sim_ps / 1e6;
  state.counters["tfu_peak_pct"] = 100.0 * t.macs / (t.sim_ps * 1e-12 * sim::tfu_peak_macs_per_s(cfg, DType::kFloat16));
  state.counters["roofline_pct"] = 100.0 * t.bound_ps / t.sim_ps;
  state.counters["gmacs"] = t.macs / 1e9;
}
BENCHMARK(BM_ResNet50ConvTotal)->Arg(1)->Arg(8)->Iterations(1)->UseRealTime();

// torchvision ResNet-18 at 224 x 224, batch 1, fp32: every distinct conv and how often it occurs.
struct CountedLayer {
  ConvLayer layer;
  int count;
};
constexpr CountedLayer kResNet18[] = {
    {{"conv1_7x7s2_3-64", 3, 224, 64, 7, 2}, 1},        {{"l1_3x3_64-64", 64, 56, 64, 3, 1}, 4},
    {{"l2_3x3s2_64-128", 64, 56, 128, 3, 2}, 1},        {{"l2_3x3_128-128", 128, 28, 128, 3, 1}, 3},
    {{"l2_down_1x1s2_64-128", 64, 56, 128, 1, 2}, 1},   {{"l3_3x3s2_128-256", 128, 28, 256, 3, 2}, 1},
    {{"l3_3x3_256-256", 256, 14, 256, 3, 1}, 3},        {{"l3_down_1x1s2_128-256", 128, 28, 256, 1, 2}, 1},
    {{"l4_3x3s2_256-512", 256, 14, 512, 3, 2}, 1},      {{"l4_3x3_512-512", 512, 7, 512, 3, 1}, 3},
    {{"l4_down_1x1s2_256-512", 256, 14, 512, 1, 2}, 1},
};
Totals g_resnet18;

void BM_ResNet18Conv(benchmark::State& state) {
  const CountedLayer& l = kResNet18[state.range(0)];
  run_conv_layer(state, l.layer, 1, DType::kFloat32, g_resnet18, l.count);
  state.counters["count"] = l.count;
}
BENCHMARK(BM_ResNet18Conv)
    ->DenseRange(0, std::size(kResNet18) - 1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// The 20 convs of the model together (each layer times its count): its conv time (sim_us), MAC-
// weighted TFU efficiency and roofline efficiency.
void BM_ResNet18ConvTotal(benchmark::State& state) {
  const Totals& t = g_resnet18;
  for (auto _ : state) {
  }
  const sim::HardwareConfig& cfg = sim::Simulator::instance().config();
  state.counters["sim_us"] = t.sim_ps / 1e6;
  state.counters["tfu_peak_pct"] = 100.0 * t.macs / (t.sim_ps * 1e-12 * sim::tfu_peak_macs_per_s(cfg, DType::kFloat32));
  state.counters["roofline_pct"] = 100.0 * t.bound_ps / t.sim_ps;
  state.counters["gmacs"] = t.macs / 1e9;
}
BENCHMARK(BM_ResNet18ConvTotal)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
