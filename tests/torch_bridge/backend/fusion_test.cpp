// The TorchScript fusion pass (mlusim/torch/fusion.h) on the built-in models (build/models/*.pt,
// from tools/models/make_models.py): match counts per pattern and per switch, the graph it
// leaves, and outputs of the fused model on the device and on the CPU against the unfused model
// on the CPU. Models come from $MLUSIM_MODEL_DIR or <build>/models (skipped when absent).
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ops/allclose.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sub.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/serialization/import.h>

#include "mlusim/torch/api.h"
#include "mlusim/torch/fusion.h"

namespace mlusim::bridge {
namespace {

namespace fs = std::filesystem;
const c10::Device kMlu(c10::DeviceType::PrivateUse1, 0);

fs::path model_path(const std::string& name) {
  if (const char* env = std::getenv("MLUSIM_MODEL_DIR"); env && *env) return fs::path(env) / (name + ".pt");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);  // <build>/torch_bridge/tests/<test>
  return exe.parent_path().parent_path().parent_path() / "models" / (name + ".pt");
}

// The model in eval mode with non-trivial batch norm statistics (seeded), or nullopt when missing.
c10::optional<torch::jit::Module> load(const std::string& name) {
  const fs::path p = model_path(name);
  if (!fs::is_regular_file(p)) return c10::nullopt;
  torch::jit::Module m = torch::jit::load(p.string());
  m.eval();
  at::manual_seed(7);
  for (const auto& b : m.named_buffers()) {
    const std::string& n = b.name;
    if (n.size() >= 12 && n.compare(n.size() - 12, 12, "running_mean") == 0) b.value.uniform_(-0.2, 0.2);
    if (n.size() >= 11 && n.compare(n.size() - 11, 11, "running_var") == 0) b.value.uniform_(0.5, 1.5);
  }
  return m;
}

// As the CLI does (model_runner.cpp): every parameter and buffer replaced by a device copy.
void move_to_device(torch::jit::Module& module) {
  for (torch::jit::Module m : module.modules()) {
    std::vector<std::pair<std::string, at::Tensor>> moved;
    for (const auto& p : m.named_parameters(/*recurse=*/false)) moved.emplace_back(p.name, p.value);
    for (const auto& b : m.named_buffers(/*recurse=*/false)) moved.emplace_back(b.name, b.value);
    for (auto& [name, t] : moved) m.setattr(name, t.detach().to(kMlu));
  }
}

int count_kind(const torch::jit::Module& m, const char* kind) {
  int n = 0;
  for (const torch::jit::Node* node : m.get_method("forward").graph()->nodes())
    n += node->kind() == c10::Symbol::fromQualString(kind);
  return n;
}

// The programs of the graph's mlu::elementwise nodes.
std::vector<std::string> programs(const torch::jit::Module& m) {
  std::vector<std::string> out;
  for (const torch::jit::Node* node : m.get_method("forward").graph()->nodes())
    if (node->kind() == c10::Symbol::fromQualString("mlu::elementwise"))
      out.push_back(torch::jit::toIValue(node->input(1))->toStringRef());
  return out;
}

at::Tensor forward(torch::jit::Module& m, const at::Tensor& x) {
  const c10::NoGradGuard no_grad;
  return m.forward({x}).toTensor();
}

double max_diff(const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b).abs().max().item<double>(); }

class FusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init());
    set_cpu_fallback(false);
    load_config("tiny", {"dram.capacity_bytes=1GiB"});  // resnet18's weights alone are 47 MB
  }
  void TearDown() override { load_config("tiny"); }
};

#define LOAD_OR_SKIP(var, name)                                               \
  auto var##_opt = load(name);                                                \
  if (!var##_opt) GTEST_SKIP() << model_path(name) << " missing (build mlusim_models)"; \
  torch::jit::Module var = *var##_opt

TEST_F(FusionTest, Resnet18FusedOnTheDeviceMatchesTheCpu) {
  LOAD_OR_SKIP(model, "resnet18");
  const at::Tensor x = at::randn({1, 3, 64, 64});
  const at::Tensor expect = forward(model, x);

  // Unfused on the device, for the kernel count.
  move_to_device(model);
  const at::Tensor xd = x.to(kMlu);
  synchronize();
  reset_stats();
  const at::Tensor unfused = forward(model, xd).cpu();
  const auto unfused_report = nlohmann::json::parse(cycle_report_json());

  const FusionStats stats = fuse_torchscript(model);
  EXPECT_EQ(stats.matches.at("conv_bn_act"), 20);  // every conv is followed by its batch norm
  EXPECT_EQ(stats.matches.at("linear_act"), 0);    // the classifier has no activation
  EXPECT_EQ(stats.matches.at("elementwise"), 8);   // out += identity; relu, per basic block
  EXPECT_EQ(count_kind(model, "mlu::conv_bn_act"), 20);
  EXPECT_EQ(count_kind(model, "mlu::elementwise"), 8);
  // In-place add_ on the fused conv's fresh result keeps that result's dtype.
  EXPECT_EQ(programs(model), std::vector<std::string>(8, "relu(cast_like(add($0, $1), $0))"));
  EXPECT_EQ(count_kind(model, "aten::batch_norm"), 0);
  EXPECT_EQ(count_kind(model, "aten::relu_"), 0);

  synchronize();
  reset_stats();
  const at::Tensor fused = forward(model, xd).cpu();
  const auto report = nlohmann::json::parse(cycle_report_json());
  EXPECT_TRUE(at::allclose(fused, expect, 1e-3, 1e-3)) << max_diff(fused, expect);
  EXPECT_TRUE(at::allclose(fused, unfused, 1e-4, 1e-4)) << max_diff(fused, unfused);
  int fused_calls = 0;
  for (const auto& op : report["ops"]) {
    const std::string name = op["name"];
    EXPECT_NE(name, "aten::native_batch_norm");
    if (name == "mlu::conv_bn_act") fused_calls = op["calls"];
  }
  EXPECT_EQ(fused_calls, 20);
  EXPECT_LT(report["kernel_launches"].get<int>(), unfused_report["kernel_launches"].get<int>());
  const auto gdram = [](const nlohmann::json& r) {
    const auto& t = r["memory_traffic"]["GDRAM"];
    return t["read_bytes"].get<double>() + t["write_bytes"].get<double>();
  };
  EXPECT_LT(gdram(report), gdram(unfused_report));
}

TEST_F(FusionTest, FusingBeforeMovingWorksAndTheCpuKernelsRunTheFusedGraph) {
  LOAD_OR_SKIP(model, "resnet18");
  const at::Tensor x = at::randn({1, 3, 32, 32});
  const at::Tensor expect = forward(model, x);
  fuse_torchscript(model);
  // On the CPU the fused ops run their reference kernels.
  const at::Tensor on_cpu = forward(model, x);
  EXPECT_TRUE(at::allclose(on_cpu, expect, 1e-4, 1e-4)) << max_diff(on_cpu, expect);
  // Weights stay attributes of the module: moving after fusing reaches the fused graph.
  move_to_device(model);
  const at::Tensor on_dev = forward(model, x.to(kMlu)).cpu();
  EXPECT_TRUE(at::allclose(on_dev, expect, 1e-3, 1e-3)) << max_diff(on_dev, expect);
}

TEST_F(FusionTest, SwitchesSelectPatterns) {
  LOAD_OR_SKIP(a, "resnet18");
  FusionOptions only_conv;
  only_conv.linear_act = only_conv.elementwise = false;
  FusionStats s = fuse_torchscript(a, only_conv);
  EXPECT_EQ(s.matches.at("conv_bn_act"), 20);
  EXPECT_EQ(s.matches.at("elementwise"), 0);
  EXPECT_EQ(count_kind(a, "aten::add_"), 8);

  LOAD_OR_SKIP(b, "resnet18");
  FusionOptions only_ew;
  only_ew.conv_bn_act = only_ew.linear_act = false;
  s = fuse_torchscript(b, only_ew);
  EXPECT_EQ(s.matches.at("conv_bn_act"), 0);
  EXPECT_EQ(s.matches.at("elementwise"), 8);  // add_ on a batch norm's fresh result, then relu_
  EXPECT_EQ(count_kind(b, "aten::batch_norm"), 20);
  EXPECT_EQ(count_kind(b, "aten::conv2d"), 20);

  LOAD_OR_SKIP(c, "resnet18");
  s = fuse_torchscript(c, FusionOptions{false, false, false});
  EXPECT_EQ(s.matches.at("conv_bn_act") + s.matches.at("linear_act") + s.matches.at("elementwise"), 0);
  EXPECT_EQ(count_kind(c, "aten::conv2d"), 20);
}

TEST_F(FusionTest, MobilenetTransformerBlocksAndMlp) {
  {
    LOAD_OR_SKIP(m, "mobilenet_v2");
    const FusionStats s = fuse_torchscript(m);
    EXPECT_EQ(s.matches.at("conv_bn_act"), 52);  // 35 with ReLU6 (hardtanh_), 17 projections without
    EXPECT_EQ(s.matches.at("elementwise"), 0);   // residual adds are single ops
    EXPECT_EQ(count_kind(m, "aten::hardtanh_"), 0);
  }
  {
    LOAD_OR_SKIP(m, "gpt2-small");
    const at::Tensor x = at::randn({1, 8, 768});
    const at::Tensor expect = forward(m, x);
    const FusionStats s = fuse_torchscript(m);
    EXPECT_EQ(s.matches.at("linear_act"), 1);   // fc + gelu(tanh)
    EXPECT_EQ(s.matches.at("elementwise"), 1);  // scores / 8 masked_fill'ed
    EXPECT_EQ(programs(m), std::vector<std::string>{"t0 = div($0, 8.0); cast_like(where($1, -10000.0, t0), t0)"});
    const at::Tensor got = forward(m, x);       // CPU kernels of the fused ops
    EXPECT_TRUE(at::allclose(got, expect, 1e-4, 1e-4)) << max_diff(got, expect);
  }
  {
    LOAD_OR_SKIP(m, "bert-base");
    const FusionStats s = fuse_torchscript(m);
    EXPECT_EQ(s.matches.at("linear_act"), 1);  // fc1 + gelu
    EXPECT_EQ(s.matches.at("elementwise"), 0);
  }
  {
    LOAD_OR_SKIP(m, "mlp");
    const at::Tensor x = at::randn({3, 784});
    const at::Tensor expect = forward(m, x);
    const FusionStats s = fuse_torchscript(m);
    EXPECT_EQ(s.matches.at("linear_act"), 2);
    move_to_device(m);
    const at::Tensor got = forward(m, x.to(kMlu)).cpu();
    EXPECT_TRUE(at::allclose(got, expect, 1e-3, 1e-3)) << max_diff(got, expect);
  }
}

TEST_F(FusionTest, RefusesTrainingMode) {
  LOAD_OR_SKIP(m, "mlp");
  m.train();
  EXPECT_THROW(fuse_torchscript(m), std::invalid_argument);
}

}  // namespace
}  // namespace mlusim::bridge
