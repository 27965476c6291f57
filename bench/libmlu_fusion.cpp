// Fused vs unfused libmlu ops on mlu370-x4 (the default preset), in timing-only mode (cycles are
// those of functional mode by design; the arithmetic is skipped so large layers simulate fast).
//
// Per case, one run of each variant; counters from the driver's kernel records:
//   fused_us / unfused_us       simulated span, first kernel start to last kernel end
//   fused_kcycles / unfused_... that span in core-clock kilocycles
//   cycle_ratio                 fused / unfused span (below 1: fusion is faster)
//   fused_dram_mb / unfused_... bytes the kernels moved across the DRAM channels (GDRAM read +
//   written, less the reads the L2 served), MB
//   dram_ratio                  fused / unfused GDRAM bytes
//   fused_kernels / unfused_... kernel launches
// Cases:
//   BM_ConvBnRelu: a ResNet-50 layer3 3x3 conv (N=8, 256->256, 14x14, pad 1) + batch norm
//     (inference) + relu, fp16: conv2d_bn_act_forward vs conv2d_forward -> batch_norm_forward_inference
//     -> unary(relu).
//   BM_LinearGelu: a BERT-base FFN up-projection (M = 128 x 8 tokens, K = 768, N = 3072) + bias +
//     gelu, fp16: linear_act vs matmul -> unary(gelu).
//   BM_ElementwiseChain: y = gelu(a * b + c) * 0.5 on 16M fp32 elements: one elementwise_program
//     vs binary, binary, unary, binary_scalar (three intermediates through DRAM).
// These are ratios measured in one run, not timed assertions.
#include <benchmark/benchmark.h>
#include <cnrt.h>
#include <mlusim_ext.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "libmlu_session.h"
#include "mlusim/mlu/mlu.h"
#include "mlusim/sim/simulator.h"

namespace {

using namespace mlusim;
using mlu::DType;
using mlu::Status;
using mlu::TensorDesc;

using bench::check;
using bench::die;
using bench::Session;

struct Cost {
  double span_ns = 0;
  std::uint64_t dram_bytes = 0, kernels = 0;
};

// Runs `ops` once, waits, and sums the kernel records they produced.
Cost measure(Session& s, const std::function<void()>& ops) {
  std::size_t before = 0, after = 0;
  check(cnrtQueueSync(s.h->queue()), "sync");
  check(mlusimGetKernelRecordCount(0, &before), "record count");
  ops();
  check(cnrtQueueSync(s.h->queue()), "sync");
  check(mlusimGetKernelRecordCount(0, &after), "record count");
  Cost c;
  double first = 1e300, last = 0;
  for (std::size_t i = before; i < after; ++i) {
    mlusimKernelRecord_t r{};
    check(mlusimGetKernelRecord(0, i, &r), "record");
    if (r.faulted) die(std::string("kernel fault: ") + r.fault);
    first = std::min(first, r.start_ns), last = std::max(last, r.end_ns);
    c.dram_bytes += r.dram_bytes;  // across the DRAM channels
  }
  c.kernels = after - before;
  c.span_ns = last - first;
  return c;
}

void report(benchmark::State& state, const Cost& fused, const Cost& unfused) {
  const double mhz = sim::Simulator::instance().config().core_clock_mhz;
  state.counters["fused_us"] = fused.span_ns / 1e3;
  state.counters["unfused_us"] = unfused.span_ns / 1e3;
  state.counters["fused_kcycles"] = fused.span_ns * mhz / 1e6;
  state.counters["unfused_kcycles"] = unfused.span_ns * mhz / 1e6;
  state.counters["cycle_ratio"] = fused.span_ns / unfused.span_ns;
  state.counters["fused_dram_mb"] = static_cast<double>(fused.dram_bytes) / 1e6;
  state.counters["unfused_dram_mb"] = static_cast<double>(unfused.dram_bytes) / 1e6;
  state.counters["dram_ratio"] = static_cast<double>(fused.dram_bytes) / static_cast<double>(unfused.dram_bytes);
  state.counters["fused_kernels"] = static_cast<double>(fused.kernels);
  state.counters["unfused_kernels"] = static_cast<double>(unfused.kernels);
}

TensorDesc make_desc(DType t, std::vector<std::int64_t> dims, mlu::Layout layout = mlu::Layout::kND) {
  TensorDesc d;
  check(d.set(t, dims, layout), "descriptor");
  return d;
}

std::size_t bytes_of(const TensorDesc& d) { return static_cast<std::size_t>(d.numel()) * d.element_size(); }

void BM_ConvBnRelu(benchmark::State& state) {
  Session s(/*timing_only=*/true);
  const std::int64_t n = 8, c = 256, hw = 14, oc = 256;
  mlu::ConvParams p;
  p.pad_h = p.pad_w = 1;
  const TensorDesc x = make_desc(DType::kFloat16, {n, c, hw, hw}, mlu::Layout::kNCHW);
  const TensorDesc w = make_desc(DType::kFloat16, {oc, c, 3, 3}, mlu::Layout::kNCHW);
  const TensorDesc y = make_desc(DType::kFloat16, {n, oc, hw, hw}, mlu::Layout::kNCHW);
  const TensorDesc ch = make_desc(DType::kFloat32, {oc});
  void* px = s.alloc(bytes_of(x));
  void* pw = s.alloc(bytes_of(w));
  void* py = s.alloc(bytes_of(y));
  void* pt = s.alloc(bytes_of(y));
  void* pt2 = s.alloc(bytes_of(y));
  void* prm[4];
  for (void*& q : prm) q = s.alloc(bytes_of(ch));
  mlu::BatchNormInference bn;
  bn.weight = bn.bias = bn.running_mean = bn.running_var = &ch;
  bn.weight_ptr = prm[0], bn.bias_ptr = prm[1], bn.running_mean_ptr = prm[2], bn.running_var_ptr = prm[3];
  std::size_t ws_fused = 0, ws_conv = 0;
  check(mlu::get_conv2d_bn_act_workspace_size(s.h, p, mlu::Activation::kRelu, x, w, &bn, y, &ws_fused), "workspace");
  check(mlu::get_conv2d_forward_workspace_size(s.h, p, x, w, y, &ws_conv), "workspace");
  void* pws = s.alloc(std::max(ws_fused, ws_conv));
  Cost fused, unfused;
  for (auto _ : state) {
    fused = measure(s, [&] {
      check(mlu::conv2d_bn_act_forward(s.h, p, mlu::Activation::kRelu, x, px, w, pw, nullptr, nullptr, &bn, y, py, pws,
                                       ws_fused),
            "conv2d_bn_act_forward");
    });
    unfused = measure(s, [&] {
      check(mlu::conv2d_forward(s.h, p, x, px, w, pw, nullptr, nullptr, y, pt, pws, ws_conv), "conv2d_forward");
      check(
          mlu::batch_norm_forward_inference(s.h, 1e-5, y, pt, &ch, prm[0], &ch, prm[1], ch, prm[2], ch, prm[3], y, pt2),
          "batch_norm_forward_inference");
      check(mlu::unary(s.h, mlu::UnaryOp::kRelu, y, pt2, y, py), "relu");
    });
  }
  report(state, fused, unfused);
  state.SetLabel("N8 256->256 14x14 3x3 fp16, timing-only");
}
BENCHMARK(BM_ConvBnRelu)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_LinearGelu(benchmark::State& state) {
  Session s(/*timing_only=*/true);
  const std::int64_t m = 128 * 8, k = 768, n = 3072;
  const TensorDesc x = make_desc(DType::kFloat16, {m, k}), w = make_desc(DType::kFloat16, {n, k});
  const TensorDesc b = make_desc(DType::kFloat16, {n}), y = make_desc(DType::kFloat16, {m, n});
  void* px = s.alloc(bytes_of(x));
  void* pw = s.alloc(bytes_of(w));
  void* pb = s.alloc(bytes_of(b));
  void* py = s.alloc(bytes_of(y));
  void* pt = s.alloc(bytes_of(y));
  mlu::MatmulParams prm;
  prm.trans_b = true;
  std::size_t ws_fused = 0, ws_mm = 0;
  check(mlu::get_linear_act_workspace_size(s.h, mlu::Activation::kGelu, x, w, &b, y, &ws_fused), "workspace");
  check(mlu::get_matmul_workspace_size(s.h, prm, x, w, &b, y, &ws_mm), "workspace");
  void* pws = s.alloc(std::max(ws_fused, ws_mm));
  Cost fused, unfused;
  for (auto _ : state) {
    fused = measure(s, [&] {
      check(mlu::linear_act(s.h, mlu::Activation::kGelu, x, px, w, pw, &b, pb, y, py, pws, ws_fused), "linear_act");
    });
    unfused = measure(s, [&] {
      check(mlu::matmul(s.h, prm, x, px, w, pw, &b, pb, y, pt, pws, ws_mm), "matmul");
      check(mlu::unary(s.h, mlu::UnaryOp::kGelu, y, pt, y, py), "gelu");
    });
  }
  report(state, fused, unfused);
  state.SetLabel("M1024 K768 N3072 fp16, timing-only");
}
BENCHMARK(BM_LinearGelu)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_ElementwiseChain(benchmark::State& state) {
  Session s(/*timing_only=*/true);
  const std::int64_t elems = 16 << 20;
  const TensorDesc d = make_desc(DType::kFloat32, {elems});
  void* pa = s.alloc(bytes_of(d));
  void* pb = s.alloc(bytes_of(d));
  void* pc = s.alloc(bytes_of(d));
  void* py = s.alloc(bytes_of(d));
  void* t[3];
  for (void*& q : t) q = s.alloc(bytes_of(d));
  mlu::ElementwiseProgram prog;
  const int ab = prog.binary(mlu::BinaryOp::kMul, prog.input(0), prog.input(1));
  const int g = prog.unary(mlu::UnaryOp::kGelu, prog.binary(mlu::BinaryOp::kAdd, ab, prog.input(2)));
  prog.set_output(prog.binary(mlu::BinaryOp::kMul, g, prog.constant(0.5)));
  Cost fused, unfused;
  for (auto _ : state) {
    fused = measure(s, [&] {
      check(mlu::elementwise_program(s.h, prog, {{&d, pa}, {&d, pb}, {&d, pc}}, d, py), "elementwise_program");
    });
    unfused = measure(s, [&] {
      check(mlu::binary(s.h, mlu::BinaryOp::kMul, d, pa, d, pb, d, t[0]), "mul");
      check(mlu::binary(s.h, mlu::BinaryOp::kAdd, d, t[0], d, pc, d, t[1]), "add");
      check(mlu::unary(s.h, mlu::UnaryOp::kGelu, d, t[1], d, t[2]), "gelu");
      check(mlu::binary_scalar(s.h, mlu::BinaryOp::kMul, d, t[2], 0.5, d, py), "mul");
    });
  }
  report(state, fused, unfused);
  state.SetLabel("gelu(a*b+c)*0.5, 16M fp32, timing-only");
}
BENCHMARK(BM_ElementwiseChain)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
