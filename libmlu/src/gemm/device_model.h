// The figures of the current device that GEMM/conv tiling needs beyond the memory sizes the
// handle carries: the TFU array of each dtype, its dataflow, and the rates of the memories and
// DMA engines, all per core-clock cycle. The planner uses them in its cost model only; kernels
// never read them (they size buffers from dev::capacity()).
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/sim/config.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::gemm {

struct DeviceModel {
  sim::HardwareConfig config;  // the loaded config (engine formulas and rates come from it)
  sim::DType in = sim::DType::kFloat32;
  // TFU array for the input dtype; rows == cols == 0 when the TFU lacks it (the VFU computes).
  std::uint32_t tfu_rows = 0, tfu_cols = 0;
  bool weight_stationary = false;  // dataflow: rows take K (WS) instead of M (OS)
  // Bytes per core-clock cycle.
  double dram_bpc = 0, noc_bpc = 0, io_dma_bpc = 0, move_dma_bpc = 0, memcore_dma_bpc = 0, sram_bpc = 0;
  std::uint32_t io_latency_cycles = 0, move_latency_cycles = 0;
  std::uint32_t burst_bytes = 64;
  // Capacities (bytes) and topology, from the handle.
  std::uint64_t nram_bytes = 0, wram_bytes = 0, sram_bytes = 0;
  std::uint32_t clusters = 1, cores_per_cluster = 1;

  bool on_tfu() const { return tfu_rows > 0 && tfu_cols > 0; }
  // Bytes a DMA moves for a contiguous run of `bytes`: whole bursts (dma.burst_bytes).
  std::uint64_t whole_bursts(std::uint64_t bytes) const { return (bytes + burst_bytes - 1) / burst_bytes * burst_bytes; }
  // Cycles of one matmul intrinsic C[m,n] = A[m,k] x B[k,n] on this device: the TFU's formula,
  // or vec_matmul's (fp32 accumulation) when the TFU lacks the dtype (mlusim/sim/engine_costs.h).
  std::uint64_t matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n) const;
  // Cycles of one conv2d intrinsic (TFU only): m output pixels x n channels from windows of `taps`
  // kernel positions x `cin` channels (sim/engine_costs.h: the matmul of K = taps x cin, or the
  // depth folded per tap where the config says so).
  std::uint64_t conv_cycles(std::uint64_t m, std::uint64_t taps, std::uint64_t cin, std::uint64_t n) const;
  // The same intrinsic issued the moment the one before it ends, reading nothing that one wrote:
  // its cycles less the drain the TFU hides where it chains intrinsics (that one's, approximated
  // by its own: sim/engine_costs.h).
  std::uint64_t conv_chained_cycles(std::uint64_t m, std::uint64_t taps, std::uint64_t cin, std::uint64_t n) const;
  // Cycles of a VFU pass over n fp32 elements.
  std::uint64_t vfu_cycles_fp32(std::uint64_t n) const;
};

// The model of h's device for GEMMs whose inputs have dtype `in`.
DeviceModel device_model(const Handle& h, sim::DType in);

}  // namespace mlusim::mlu::gemm
