// A compute core (IPU) or a cluster's memory core (MPU).
//
// Scope: one persistent SystemC thread per core runs the tasks the scheduler assigns, calling the
// kernel body with the device API bound to this core. Compute intrinsics (scalar, VFU, TFU)
// block the core for their formula's cycles (a core issues in order); copies run on the core's
// IO-DMA / Move-DMA (memory core: its DMA) through the device's bandwidth fabric and may be
// asynchronous. Approximations: no instruction-level timing between intrinsics (kernel C++ code
// itself takes zero time), hazards are checked only against this core's own outstanding copies.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "compute/tfu_timing.h"
#include "device/launch_state.h"
#include "fabric/bandwidth_fabric.h"
#include "core/range_set.h"
#include "memory/onchip_memory.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/stats.h"

namespace mlusim::sim {

using fabric::BandwidthFabric;
using fabric::FlowUse;
using fabric::ResourceId;
using fabric::Transfer;
using fabric::TransferRequest;

class DeviceImpl;
class Cluster;

// Thrown by the device API inside a kernel: the message names kernel, task and what was wrong.
struct KernelFault {
  std::string message;
};
// Thrown to unwind a task whose launch already faulted elsewhere (not a new fault).
struct KernelAbort {};

class Core {
 public:
  Core(DeviceImpl& device, Cluster& cluster, std::uint32_t cluster_index, std::uint32_t core_in_cluster,
       bool memory_core, std::uint32_t stats_index);
  ~Core();

  bool busy() const { return assignment_.launch != nullptr; }
  bool is_memory_core() const { return memory_core_; }
  std::uint32_t cluster_index() const { return cluster_index_; }
  // Gives this idle core `task`, which starts after `delay` (the launch latency still to pass,
  // device/scheduler.h; 0: at the current simulated time); the core is busy from now.
  void assign(const TaskAssignment& task, Picos delay = 0);
  void shutdown();

  // ---- kernel side: called through dev:: while this core runs a task ----
  static Core& current();  // the core whose kernel body is executing; faults outside a kernel
  const TaskAssignment& task() const { return assignment_; }
  std::uint32_t core_id() const;
  std::uint32_t cores_per_cluster() const;
  Addr alloc(Space space, std::uint64_t bytes);
  std::uint64_t capacity(Space space) const;
  std::uint64_t available(Space space) const;
  void copy(Addr dst, Addr src, const dev::CopyShape& shape, dev::Dir dir, bool async);
  void sync_io();
  void sync_loads();  // dev::sync_loads: the copies into on-chip memory only
  void barrier(bool whole_group);
  void vec_binary(VecBinaryOp op, DType t, Addr dst, Addr a, Addr b, std::uint64_t n);
  void vec_binary_scalar(VecBinaryOp op, DType t, Addr dst, Addr a, double s, std::uint64_t n);
  void vec_unary(VecUnaryOp op, DType t, Addr dst, Addr src, std::uint64_t n);
  void vec_reduce(VecReduceOp op, DType t, Addr dst, Addr src, std::uint64_t rows, std::uint64_t n);
  void vec_cast(DType dst_t, Addr dst, DType src_t, Addr src, std::uint64_t n);
  void vec_fill(DType t, Addr dst, double value, std::uint64_t n);
  void vec_select(DType t, Addr dst, Addr cond, Addr a, Addr b, std::uint64_t n);
  // a_k_major: A stored [K, M] (dev::matmul_a_k_major), same cycles.
  void matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::uint64_t m, std::uint64_t k, std::uint64_t n,
              bool a_k_major, bool b_transposed, bool accumulate);
  void conv2d(DType in_t, DType out_t, Addr out, Addr in, Addr w, const dev::ConvParams& p, bool accumulate);
  bool tfu_supports(DType in_t) const;
  void vec_matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                  bool b_transposed, bool accumulate);
  void scalar_access(Addr addr, void* value, std::uint64_t bytes, bool store);
  void log(const std::string& line);
  [[noreturn]] void fault(const std::string& what) const;

 private:
  struct Range {
    Space space;
    std::uint64_t lo, hi;  // [lo, hi) in the space's addresses
  };
  struct OutstandingCopy {
    std::uint32_t id;
    std::shared_ptr<Transfer> transfer;
    std::vector<Range> reads, writes;
  };

  // Waits for the outstanding copies `wait_for` selects, then retires every copy that has landed
  // (sync_io: all of them; sync_loads: those writing on-chip memory).
  void retire_copies(bool (*wait_for)(const OutstandingCopy&));
  void guard(const OutstandingCopy& c);  // adds its ranges to the hazard keys (inflight_reads_ / _writes_)
  void thread_main();
  void run_task();
  void wait_ps(Picos ps);
  void wait_event(const sc_core::sc_event& e);
  void check_alive();  // after every wait: unwind if the launch faulted elsewhere

  std::uint8_t* resolve(Addr a, std::uint64_t bytes, const char* role);
  OnChipMemory& onchip(Space s) const;
  void check_hazards(const std::vector<Range>& reads, const std::vector<Range>& writes, const char* what);
  static std::uint64_t hazard_key(Space s, std::uint64_t addr);
  void compute(Engine engine, std::uint64_t cycles, const std::string& label, const std::vector<Range>& reads,
               const std::vector<Range>& writes);
  // A TFU intrinsic of `cost` reading `operands` (A and B; an accumulated C is not one) and
  // `reads`/`writes` in all: its cycles less the previous intrinsic's drain it hides when issued
  // back to back (compute/tfu_timing.h, "Back-to-back intrinsics"), then run on the TFU.
  void tfu_op(const compute::TfuCost& cost, DType in_t, const std::string& label,
              const std::vector<Range>& operands, const std::vector<Range>& reads, const std::vector<Range>& writes);
  // Ends the chain of back-to-back intrinsics: the next TFU intrinsic hides nothing (called on
  // anything that stalls the core or occupies another engine between two intrinsics).
  void break_tfu_chain();
  Range range(Addr a, std::uint64_t bytes, const char* role);
  void require_compute_core(const char* what) const;
  void require_nram(Addr a, const char* role) const;
  void require_vfu_operands(const char* what, std::initializer_list<Addr> operands) const;
  // One VFU intrinsic: cycles from `cycles_fn`, arithmetic `work` (skipped in timing-only mode
  // for floating-point results), operand ranges for hazards and traffic statistics.
  template <class CyclesFn, class WorkFn>
  void vfu_op(const std::string& label, DType result, std::uint64_t elements, const std::vector<Range>& reads,
              const std::vector<Range>& writes, CyclesFn&& cycles_fn, WorkFn&& work);
  void engine_begin(Engine e);
  void engine_end(Engine e);
  EngineCounters& counters(Engine e);
  void add_traffic(MemLevel from, MemLevel to, std::uint64_t bytes, std::uint64_t l2_hit_bytes = 0,
                   std::uint64_t l2_overfetch_bytes = 0);
  void trace_event(Engine e, const std::string& name, Picos start_abs, Picos end_abs);

  DeviceImpl& device_;
  Cluster& cluster_;
  std::uint32_t cluster_index_;
  std::uint32_t core_in_cluster_;
  bool memory_core_;
  std::uint32_t stats_index_;
  std::string name_;  // "cluster0.core1" or "cluster0.memcore"

  std::unique_ptr<OnChipMemory> nram_, wram_;
  BumpAllocator nram_alloc_, wram_alloc_, sram_alloc_;
  ResourceId io_dma_{}, move_dma_{};  // memory core: io_dma_ is its DMA, move_dma_ unused

  TaskAssignment assignment_;
  std::unique_ptr<sc_core::sc_event> start_;
  bool shutdown_ = false;

  // Back-to-back TFU intrinsics: the last one's end, the drain cycles it leaves to hide and its
  // output; the copies sync_io / sync_loads retired since without a stall (their footprints, one range per
  // side, and end times: an intrinsic's operands are ready when the copies writing them ended).
  struct RetiredCopy {
    Range read_box, write_box;
    Picos end_ps;
  };
  bool tfu_chain_ = false;
  DType tfu_dtype_ = DType::kFloat32;  // the last intrinsic's input dtype: its array
  Picos tfu_end_ps_ = 0;
  std::uint64_t tfu_drain_ = 0;
  std::vector<Range> tfu_writes_;
  std::vector<RetiredCopy> retired_;

  std::vector<OutstandingCopy> outstanding_;
  RangeSet inflight_reads_, inflight_writes_;  // hazard keys of outstanding_'s ranges
  std::uint32_t next_copy_id_ = 0;
  std::array<std::uint32_t, kEngineCount> engine_active_{};
  std::array<Picos, kEngineCount> engine_busy_since_{};
};

}  // namespace mlusim::sim
