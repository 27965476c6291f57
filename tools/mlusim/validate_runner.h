// Runs calibration rows (calibration_table.h) on a simulated device with libmlu's real kernels,
// for `mlusim validate`.
//
// Each row runs on a fresh device (mlusimReset), so a row's result never depends on which rows ran
// before it, in timing-only mode (mlusimSetTimingOnly: no floating-point arithmetic, the same
// cycles by design), through the driver and libmlu exactly as a user's program would:
// Every tensor has the row's dtype (fp32, fp16 or bf16; libmlu accumulates in fp32).
//   gemm:      mlu::matmul, A[M,K] x B[K,N] -> C[M,N], row-major, no bias.
//   conv2d:    mlu::conv2d_forward, x [B,Cin,H,W] and w [Cout,Cin,k,k] (torch's NCHW / OIHW
//              dims), no bias, in the memory format `ConvLayout` says: channels_last (NHWC strides,
//              what torch passes for memory_format=torch.channels_last) or dense NCHW.
//   layernorm: mlu::layer_norm_forward over the last dim, with weight and bias.
//   softmax:   mlu::softmax_forward along dim 1.
//   add:       mlu::binary (BinaryOp::kAdd) of two [M,N] tensors; relu, gelu: mlu::unary.
//   attention: mlu::matmul (k q^T, the 1/sqrt(D) scale as its alpha), mlu::softmax_forward along
//              dim -2, mlu::matmul (v^T p): the three ops as written, as an XLA program runs them
//              (two dots and a softmax fusion), not one fused attention kernel.
//   encoder:   the block's linears as mlu::matmul with their epilogues (bias; ReLU; the residual
//              add), the attention above on strided head views (no copies), two
//              mlu::layer_norm_forward: 10 ops.
//   model:NAME through the model runner the CLI installs (set_model_runner): the PyTorch layer's
//              `mlusim run` path; without one, such a row is an error naming the row.
// A row's buffers and workspaces are all allocated before its first op is enqueued.
// What is counted: the op's simulated time from the first kernel's start to the last kernel's
// end, in core-clock cycles of the config (kernel records, mlusim_ext.h), so gaps between the
// op's kernels (e.g. host launch overhead while the device waits) count and host time before the
// first kernel does not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "calibration_table.h"
#include "mlusim/sim/config.h"

namespace mlusim::cli {

enum class ConvLayout { kChannelsLast, kNchw };

const char* conv_layout_name(ConvLayout layout);  // "channels_last", "nchw"

struct RowResult {
  double simulated_cycles = 0;    // first kernel start .. last kernel end, core cycles
  double simulated_ns = 0;        // the same span in ns
  std::uint32_t kernels = 0;      // kernel launches of the op
  double kernel_cycles = 0;       // sum of the kernels' own spans; simulated - this = gaps between kernels
  std::uint64_t tfu_cycles = 0;   // TFU busy cycles, summed over all cores (its intrinsics' cycle formulas)
  std::uint64_t tfu_intrinsics = 0;
  double bound_cycles = 0;        // roofline bound: max(MACs / TFU peak, minimum DRAM bytes / DRAM bandwidth)
  std::uint64_t dram_bytes = 0;   // bytes the kernels read from and wrote to DRAM
  double macs = 0;                // multiply-accumulates the op's libmlu calls recorded

  // The simulated value in `unit`: cycles, or microseconds of simulated time.
  double simulated(MeasuredUnit unit) const {
    return unit == MeasuredUnit::kCycles ? simulated_cycles : simulated_ns * 1e-3;
  }
  // Signed error of the simulation against a measurement in `unit`, in percent: 100 (sim - meas) / meas.
  double error_pct(double measured, MeasuredUnit unit) const {
    return 100.0 * (simulated(unit) - measured) / measured;
  }
};

class ValidateRunner {
 public:
  // Loads the config (preset name or YAML path, plus "key=value" overrides) into the runtime.
  // Throws sim::ConfigError for an invalid config, std::runtime_error for anything else.
  ValidateRunner(const std::string& config, const std::vector<std::string>& overrides, ConvLayout layout);

  const sim::HardwareConfig& config() const { return config_; }

  // With a folder: each row also writes <dir>/<workload>.json, a Chrome/Perfetto trace of the op
  // with every engine's intrinsics (traces/README.md), to see where its cycles go.
  void set_trace_dir(std::string dir) { trace_dir_ = std::move(dir); }

  // What runs `model:NAME` rows: given the row, the config (name or path) and overrides this
  // runner was made with, and the trace file to write ("" for none).
  using ModelRowRunner = std::function<RowResult(const CalibrationRow& row, const std::string& config,
                                                 const std::vector<std::string>& overrides,
                                                 const std::string& trace_path)>;
  void set_model_runner(ModelRowRunner runner) { model_runner_ = std::move(runner); }

  // Runs one row; throws std::runtime_error naming the workload if the op fails (e.g. it does
  // not fit device memory, or a model row has no model runner).
  RowResult run(const CalibrationRow& row) const;

 private:
  RowResult run_ops(const CalibrationRow& row) const;

  std::string config_name_;
  std::vector<std::string> overrides_;
  ModelRowRunner model_runner_;
  sim::HardwareConfig config_;
  ConvLayout layout_;
  std::string trace_dir_;
};

}  // namespace mlusim::cli
