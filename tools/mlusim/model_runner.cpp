#include "model_runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>

#include <mlusim_ext.h>

#include "mlusim/sim/roofline.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/fusion.h"

namespace fs = std::filesystem;

namespace mlusim::cli {
namespace {

// A progress line on stderr while a run goes on: iteration, ATen ops run (as a bar once the first
// iteration told how many an iteration has), host seconds.
class Progress {
 public:
  Progress(bool enabled, int iterations) : enabled_(enabled && ::isatty(2) == 1), iterations_(iterations) {
    if (enabled_) thread_ = std::thread([this] { loop(); });
  }
  ~Progress() { stop(); }
  void iteration(int i) {
    const std::uint64_t now = bridge::op_calls();
    if (i == 1 && ops_at_start_ == 0) ops_at_start_ = now;
    if (i == 2) ops_per_iteration_ = now - ops_at_start_;
    iteration_ = i;
  }
  void stop() {
    if (!enabled_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::fprintf(stderr, "\r%-100s\r", "");
    std::fflush(stderr);
    enabled_ = false;
  }

 private:
  void loop() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::uint64_t ops = bridge::op_calls() - ops_at_start_;
      const int it = iteration_.load();
      char bar[32] = "";
      const std::uint64_t per = ops_per_iteration_.load();
      if (per > 0) {
        const double frac = std::min(1.0, double(ops) / double(per * std::uint64_t(iterations_)));
        const int filled = static_cast<int>(frac * 20);
        for (int k = 0; k < 20; ++k) bar[k] = k < filled ? '#' : '.';
        bar[20] = '\0';
      }
      std::fprintf(stderr, "\r  [%s] iteration %d/%d, %llu device ops, %.1f s", bar, std::max(it, 1), iterations_,
                   static_cast<unsigned long long>(ops), secs);
      std::fflush(stderr);
    }
  }

  bool enabled_;
  int iterations_;
  std::atomic<int> iteration_{0};
  std::atomic<std::uint64_t> ops_per_iteration_{0};
  std::uint64_t ops_at_start_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

at::Tensor first_tensor(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor();
  if (v.isTuple())
    for (const c10::IValue& e : v.toTupleRef().elements())
      if (e.isTensor()) return e.toTensor();
  if (v.isList())
    for (const c10::IValue& e : v.toListRef())
      if (e.isTensor()) return e.toTensor();
  throw std::runtime_error("the model's forward returned no tensor (got " + v.tagKind() + ")");
}

// Module::to() would call set_data() on every parameter, which torch refuses between CPU and
// PrivateUse1 tensors (not "compatible shallow-copy types"); nn.Module.to() replaces them
// instead, and so does this: every parameter and buffer of every submodule is set anew. A tensor
// shared by several attributes (tied weights: an LM head and its token embedding) is moved once
// and stays shared.
// With `channels_last`, 4-d floating tensors also take torch.channels_last strides (NHWC), as
// nn.Module.to(memory_format=torch.channels_last) does.
void move_module(torch::jit::Module& module, const c10::Device& device, at::ScalarType dtype, bool channels_last) {
  // source TensorImpl -> {source (kept alive so its address is not reused), moved copy}
  std::map<const c10::TensorImpl*, std::pair<at::Tensor, at::Tensor>> moved_once;
  for (torch::jit::Module m : module.modules()) {
    std::vector<std::pair<std::string, at::Tensor>> moved;
    for (const auto& p : m.named_parameters(/*recurse=*/false)) moved.emplace_back(p.name, p.value);
    for (const auto& b : m.named_buffers(/*recurse=*/false)) moved.emplace_back(b.name, b.value);
    for (auto& [name, t] : moved) {
      auto [it, is_new] = moved_once.try_emplace(t.unsafeGetTensorImpl());
      if (is_new) {
        at::Tensor d = t.is_floating_point() ? t.detach().to(device, dtype) : t.detach().to(device);
        if (channels_last && t.is_floating_point() && t.dim() == 4) d = d.contiguous(at::MemoryFormat::ChannelsLast);
        if (t.requires_grad()) d.set_requires_grad(true);
        it->second = {t, d};
      }
      m.setattr(name, it->second.second);
    }
  }
}

// A traced model (torch.jit.trace: the transformers built-ins, users' traced files) records the
// device of the tensors it created while tracing (torch.arange(..., device="cpu") for position
// ids, rotary tables) as Device constants in its graphs: they become the run's device, as if the
// model had been traced there. Scripted models hold no such constants unless written so.
void retarget_device_constants(torch::jit::Module& module, const c10::Device& device) {
  for (torch::jit::Module m : module.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      const std::shared_ptr<torch::jit::Graph> graph = method.graph();
      std::vector<torch::jit::Node*> constants;
      for (torch::jit::Node* n : graph->nodes())
        if (n->kind() == c10::prim::Constant && n->output()->type()->kind() == c10::TypeKind::DeviceObjType &&
            torch::jit::toIValue(n->output())->toDevice() != device)
          constants.push_back(n);
      for (torch::jit::Node* n : constants) {
        const torch::jit::WithInsertPoint guard(n);
        n->output()->replaceAllUsesWith(graph->insertConstant(device));
        n->destroy();
      }
    }
  }
}

std::string shape_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

namespace {

RunResult run_model_impl(const RunOptions& o) {
  if (o.batch < 1) throw std::invalid_argument("--batch must be >= 1");
  if (o.iterations < 1) throw std::invalid_argument("--iterations must be >= 1");
  if (o.dtype != "float32" && o.dtype != "float16")
    throw std::invalid_argument("--dtype " + o.dtype + ": expected float32 or float16");
  const at::ScalarType dtype = o.dtype == "float16" ? at::kHalf : at::kFloat;

  bridge::load_config(o.config, o.overrides);
  bridge::set_cpu_fallback(o.fallback);
  bridge::reset_cpu_fallback_counts();
  const c10::Device device(c10::DeviceType::PrivateUse1, 0);

  torch::jit::Module module;
  try {
    module = torch::jit::load(o.model.file.string());
  } catch (const c10::Error& e) {
    throw std::invalid_argument("model " + o.model.file.string() + " is not a TorchScript file torch can load: " +
                                e.what_without_backtrace());
  }
  move_module(module, device, dtype, o.channels_last);
  retarget_device_constants(module, device);
  module.train(o.train);
  std::map<std::string, int> fusion_matches;
  if (o.fuse) {
    if (o.train) throw std::invalid_argument("--fuse applies to inference: the fused ops have no backward (drop --train)");
    fusion_matches = bridge::fuse_torchscript(module, o.fusion).matches;
  }

  at::manual_seed(o.seed);
  bridge::manual_seed(o.seed);
  std::vector<c10::IValue> inputs;
  for (std::vector<std::int64_t> shape : o.model.inputs) {
    for (auto& d : shape)
      if (d == -1) d = o.batch;
    if (o.model.vocab > 0)  // token ids stay int64 whatever --dtype says
      inputs.emplace_back(at::randint(o.model.vocab, shape, at::TensorOptions().dtype(at::kLong)).to(device));
    else if (o.channels_last && shape.size() == 4)
      inputs.emplace_back(at::randn(shape).to(device, dtype).contiguous(at::MemoryFormat::ChannelsLast));
    else
      inputs.emplace_back(at::randn(shape).to(device, dtype));
  }
  // Classifiers: one class per sample; language models: one next token per position (the
  // logits are [B, T, classes], the targets [B, T] like the first input).
  at::Tensor target;
  if (o.train && o.model.loss == "cross_entropy") {
    const std::vector<std::int64_t> target_shape =
        o.model.vocab > 0 ? inputs.front().toTensor().sizes().vec() : std::vector<std::int64_t>{o.batch};
    target = at::randint(o.model.classes, target_shape, at::TensorOptions().dtype(at::kLong)).to(device);
  }

  std::vector<at::Tensor> params;
  for (const at::Tensor& p : module.parameters()) params.push_back(p);

  auto iteration = [&] {
    if (!o.train) {
      const c10::NoGradGuard no_grad;
      module.forward(inputs);
      return;
    }
    const at::Tensor out = first_tensor(module.forward(inputs));
    at::Tensor loss;
    if (o.model.loss == "cross_entropy") {
      loss = out.dim() == 3 ? at::cross_entropy_loss(out.flatten(0, 1), target.flatten())
                            : at::cross_entropy_loss(out, target);
    } else {
      loss = out.mul(out).mean();  // MSE against zeros
    }
    loss.backward();
    const c10::NoGradGuard no_grad;
    for (at::Tensor& p : params) {
      at::Tensor& g = p.mutable_grad();
      if (!g.defined()) continue;
      p.add_(g, -o.learning_rate);  // plain SGD
      g = at::Tensor();             // zero_grad(set_to_none=True)
    }
  };

  for (int i = 0; i < o.warmup; ++i) iteration();
  bridge::synchronize();
  bridge::reset_stats();
  if (!o.trace_path.empty()) bridge::trace_begin(o.trace_level);
  bridge::set_timing_only(o.timing_only);

  // --profile: torch.profiler's own recorder (Kineto, CPU + PrivateUse1 activities) over the
  // measured iterations, as `with torch.profiler.profile(...)` around them would.
  namespace tprof = torch::profiler::impl;
  const tprof::ProfilerConfig profiler_config(tprof::ProfilerState::KINETO_PRIVATEUSE1);  // the plug-in (torch_bridge/src/profiler)
  const std::set<tprof::ActivityType> activities{tprof::ActivityType::CPU, tprof::ActivityType::PrivateUse1};
  if (!o.profile_path.empty()) {
    torch::autograd::profiler::prepareProfiler(profiler_config, activities);
    torch::autograd::profiler::enableProfiler(profiler_config, activities);
  }
  const auto t0 = std::chrono::steady_clock::now();
  {
    Progress progress(o.progress, o.iterations);
    for (int i = 1; i <= o.iterations; ++i) {
      progress.iteration(i);
      iteration();
    }
    bridge::synchronize();
  }
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.profile_path.empty()) {
    const fs::path p(o.profile_path);
    if (p.has_parent_path()) fs::create_directories(p.parent_path());
    torch::autograd::profiler::disableProfiler()->save(o.profile_path);
  }
  bridge::set_timing_only(false);

  RunResult r;
  r.fusion_matches = fusion_matches;
  r.text = bridge::cycle_report();
  nlohmann::json report = nlohmann::json::parse(bridge::cycle_report_json());
  if (!o.trace_path.empty()) {
    bridge::trace_end();
    bridge::trace_write(o.trace_path);
  }
  const sim::HardwareConfig cfg = driver::loaded_config();
  const double elapsed_ns = report.value("elapsed_ns", 0.0);
  nlohmann::json& j = r.report;
  j["mlusim_run"] = 1;
  j["model"] = o.model.name;
  j["model_file"] = o.model.file.string();
  j["description"] = o.model.description;
  nlohmann::json shapes = nlohmann::json::array();
  for (const c10::IValue& v : inputs) shapes.push_back(v.toTensor().sizes().vec());
  j["inputs"] = shapes;
  j["config"] = bridge::config_name();
  j["batch"] = o.batch;
  j["dtype"] = o.dtype;
  j["mode"] = o.train ? "train" : "inference";
  j["iterations"] = o.iterations;
  j["timing_only"] = o.timing_only;
  j["simulated_ns"] = elapsed_ns;
  j["simulated_ns_per_iteration"] = elapsed_ns / o.iterations;
  j["cycles"] = static_cast<std::uint64_t>(elapsed_ns * cfg.core_clock_mhz / 1000.0);
  j["core_clock_mhz"] = cfg.core_clock_mhz;
  j["host_seconds"] = host_seconds;
  // Absolute, so the report finds it wherever the JSON is written.
  j["trace"] = o.trace_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(fs::absolute(o.trace_path).string());
  j["profile"] = o.profile_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(fs::absolute(o.profile_path).string());
  nlohmann::json macs = nlohmann::json::object();
  for (const sim::DType d : {sim::DType::kFloat32, sim::DType::kFloat16, sim::DType::kInt8})
    macs[std::string(sim::dtype_name(d))] = sim::peak_macs_per_s(cfg, d);
  j["peaks"] = {{"dram_bytes_per_s", sim::dram_peak_bytes_per_s(cfg)}, {"macs_per_s", macs}};
  j["fused"] = o.fuse;
  j["channels_last"] = o.channels_last;
  if (o.fuse) j["fusion_matches"] = fusion_matches;
  j["report"] = std::move(report);

  std::ostringstream head;
  char line[256];
  std::snprintf(line, sizeof line, "model %s (%s), %s, batch %lld, %s, %d iteration%s%s%s\n", o.model.name.c_str(),
                o.model.description.empty() ? o.model.file.string().c_str() : o.model.description.c_str(),
                o.train ? "training step (forward + backward + SGD)" : "inference", static_cast<long long>(o.batch),
                o.dtype.c_str(), o.iterations, o.iterations == 1 ? "" : "s", o.timing_only ? ", timing-only" : "",
                o.fuse ? (o.channels_last ? ", fused, channels_last" : ", fused") : (o.channels_last ? ", channels_last" : ""));
  head << line;
  std::snprintf(line, sizeof line,
                "simulated time %.3f ms (%.3f ms per iteration, %llu cycles at %.0f MHz); host time %.2f s\n",
                elapsed_ns / 1e6, elapsed_ns / 1e6 / o.iterations,
                static_cast<unsigned long long>(j["cycles"].get<std::uint64_t>()), cfg.core_clock_mhz, host_seconds);
  head << line;
  for (std::size_t i = 0; i < o.model.inputs.size(); ++i)
    head << "input " << i << ": " << shape_text(shapes[i].get<std::vector<std::int64_t>>()) << "\n";
  r.text = head.str() + "\n" + r.text;
  return r;
}

}  // namespace

double dram_bytes(const nlohmann::json& run_report) {
  const auto& t = run_report["report"]["memory_traffic"];
  if (!t.contains("GDRAM")) return 0;
  // The bytes that crossed the DRAM channels (GDRAM reads the L2 served did not; l2.cache).
  if (t.contains("DRAM")) return t["DRAM"].value("bytes", 0.0);
  return t["GDRAM"].value("read_bytes", 0.0) + t["GDRAM"].value("write_bytes", 0.0);
}

RunResult run_model(const RunOptions& o) {
  try {
    return run_model_impl(o);
  } catch (const c10::Error& e) {
    // Op errors name the op and the device; torch's C++ backtrace is noise for a CLI user.
    throw std::runtime_error(e.what_without_backtrace());
  }
}

}  // namespace mlusim::cli
