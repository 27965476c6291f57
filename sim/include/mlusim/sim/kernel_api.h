// The kernel-side device API, modelled on BANG C. Kernels are C++ functions run by simulated
// cores; every call below does its real work on the simulated memories AND advances simulated
// time on the engine it uses. Call these only from a kernel body while it runs on a core.
//
// Pipeline semantics (DESIGN.md): a compute intrinsic (vec_*, matmul, conv2d, load/store)
// occupies its engine and the issuing core until done; memcpy_async returns at once and runs on
// a DMA engine; sync_io waits for the core's outstanding copies. Operands are read when an
// operation starts and results land when it completes. Touching a range that an outstanding
// async copy reads (write) or writes (read or write) before sync_io is a hazard fault.
//
// Any misuse (out-of-bounds address, wrong space for a direction, buffer that does not fit,
// hazard, barrier mismatch, unsupported dtype on an engine) faults the kernel: the task stops,
// the launch reports cnrtErrorKernelTrap with a message naming kernel, task and address.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mlusim/sim/address.h"
#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::dev {

using sim::Addr;
using sim::DType;
using sim::Space;
using sim::Gdram;
using sim::Nram;
using sim::Sram;
using sim::Wram;

// ---- identity (BANG: taskId, taskDim, taskIdX.., clusterId, clusterDim, coreId, coreDim) ----
std::uint32_t task_id();
std::uint32_t task_dim();
std::uint32_t task_id_x();
std::uint32_t task_id_y();
std::uint32_t task_id_z();
std::uint32_t task_dim_x();
std::uint32_t task_dim_y();
std::uint32_t task_dim_z();
std::uint32_t cluster_id();    // cluster index within the union group (0 for BLOCK)
std::uint32_t cluster_dim();   // clusters per union group (1 for BLOCK)
std::uint32_t core_id();       // core index within its cluster; kMemoryCoreId on a memory core
std::uint32_t core_dim();      // compute cores per cluster
bool is_memory_core();
constexpr std::uint32_t kMemoryCoreId = 0x80;  // BANG reports coreId 0x80 on the MPU

// ---- on-chip buffers: capacity-checked, 128-byte aligned, released when the task ends ----
// SRAM: every participant of a cluster that allocates in the same order gets the same offsets,
// which is how BANG's __mlu_shared__ buffers are shared. Not available to BLOCK tasks.
Addr alloc(Space space, std::size_t bytes);
template <class T> Nram<T> nram_alloc(std::size_t count) { return Nram<T>(alloc(Space::kNram, count * sizeof(T)).value); }
template <class T> Wram<T> wram_alloc(std::size_t count) { return Wram<T>(alloc(Space::kWram, count * sizeof(T)).value); }
template <class T> Sram<T> sram_alloc(std::size_t count) { return Sram<T>(alloc(Space::kSram, count * sizeof(T)).value); }
std::size_t capacity(Space space);  // bytes of that space usable by this core (NRAM, WRAM, SRAM)
std::size_t available(Space space);  // bytes still free for this task

// ---- data movement ----
enum class Dir : std::uint8_t {
  kGdram2Nram, kNram2Gdram, kGdram2Wram, kWram2Gdram, kGdram2Sram, kSram2Gdram,
  kSram2Nram, kNram2Sram, kSram2Wram, kWram2Sram, kNram2Wram, kWram2Nram,
  kNram2Nram, kGdram2Gdram, kSram2Sram,
};
std::string_view dir_name(Dir d);  // "GDRAM2NRAM", ...

// A strided copy: up to 3 levels. Level 0 is one contiguous segment of seg_bytes; level 1 repeats
// it n1 times with the given byte strides; level 2 repeats level 1 n2 times (as BANG __memcpy
// with dst_stride/src_stride/segnum, and its 3D form).
struct CopyShape {
  std::size_t seg_bytes = 0;
  std::size_t n1 = 1;
  std::int64_t dst_stride1 = 0, src_stride1 = 0;
  std::size_t n2 = 1;
  std::int64_t dst_stride2 = 0, src_stride2 = 0;
  std::size_t total_bytes() const { return seg_bytes * n1 * n2; }
};

void memcpy(Addr dst, Addr src, std::size_t bytes, Dir dir);        // blocks until the data landed
void memcpy_async(Addr dst, Addr src, std::size_t bytes, Dir dir);  // returns at once
void memcpy_strided(Addr dst, Addr src, const CopyShape& shape, Dir dir);
void memcpy_strided_async(Addr dst, Addr src, const CopyShape& shape, Dir dir);

// ---- synchronisation ----
void sync_io();       // wait for this core's outstanding async copies
// Wait for this core's outstanding async copies into on-chip memory (NRAM, WRAM, SRAM: loads and
// on-chip moves); copies to GDRAM (stores) keep running, their source ranges still guarded (a
// write to one before the store has landed is a hazard fault), until a later sync_io or their
// landing. A kernel that double-buffers its output lets a tile's stores drain during the next
// tile's steps (as CUDA separates TMA loads' completion, mbarriers, from stores'
// cp.async.bulk.wait_group). Same time as sync_io when nothing but loads is outstanding.
void sync_loads();
void sync_compute();  // wait for this core's compute pipelines (they are in-order: a no-op in time)
void sync_cluster();  // barrier: the cluster's compute cores + memory core of this union group
void sync_all();      // barrier: every core and memory core of this union group

// ---- VFU: operands in NRAM (n elements of dtype), 128-byte-aligned starts not required ----
// bf16 (like fp16) computes in fp32 and rounds once to nearest even; on a config without
// `vfu.bf16` every bf16 intrinsic but a kCopy faults, naming the op and the config.
void vec_binary(sim::VecBinaryOp op, DType dtype, Addr dst, Addr a, Addr b, std::size_t n);
void vec_binary_scalar(sim::VecBinaryOp op, DType dtype, Addr dst, Addr a, double scalar, std::size_t n);
void vec_unary(sim::VecUnaryOp op, DType dtype, Addr dst, Addr src, std::size_t n);
void vec_reduce(sim::VecReduceOp op, DType dtype, Addr dst, Addr src, std::size_t rows, std::size_t n);
void vec_cast(DType dst_type, Addr dst, DType src_type, Addr src, std::size_t n);
void vec_fill(DType dtype, Addr dst, double value, std::size_t n);
void vec_select(DType dtype, Addr dst, Addr cond_bool, Addr a, Addr b, std::size_t n);

// ---- TFU: A in NRAM, B in WRAM, C in NRAM; row-major ----
// C[M,N] (+)= A[M,K] x B, B stored [K,N] or, with b_transposed, [N,K] (filter-major).
// in fp32 -> out fp32; in fp16 -> out fp16 or fp32, in bf16 -> out bf16 or fp32 (fp32
// accumulate, one round-to-nearest-even rounding of a 16-bit output); in int8 -> out int32.
void matmul(DType in_type, DType out_type, Addr c, Addr a, Addr b, std::size_t m, std::size_t k,
            std::size_t n, bool b_transposed, bool accumulate);

// The same product with A stored depth-major, [K,M] (A[m][k] at a + (k x M + m) x size): an
// output-stationary array takes one column of A (all M rows' element k) per cycle, which is a
// contiguous read in this layout, so the cycles are matmul's (as ConvParams::weights_k_major for
// B; AWS Trainium's Tensor Engine takes its stationary operand this way natively, nc_matmul
// computing stationary^T x moving). A kernel whose A is the transpose of what it loaded (a
// weight gradient's dY^T from an NHWC tile) multiplies it as it is, without a transpose pass.
void matmul_a_k_major(DType in_type, DType out_type, Addr c, Addr a, Addr b, std::size_t m, std::size_t k,
                      std::size_t n, bool b_transposed, bool accumulate);

// True when this config's TFU has an array for `in_type` (tfu.<dtype>.rows/cols non-zero).
bool tfu_supports(DType in_type);

// The same product on the VFU, for dtypes the TFU lacks: one fused multiply-add pass per
// (row of A, element of K) over N. All operands in NRAM; same dtype rules as matmul.
// Cycles: vfu.startup_cycles + M x K x ceil(N / lanes(out_type)).
void vec_matmul(DType in_type, DType out_type, Addr c, Addr a, Addr b, std::size_t m, std::size_t k,
                std::size_t n, bool b_transposed, bool accumulate);

struct ConvParams {
  std::size_t in_h = 0, in_w = 0, in_c = 0;  // input tile, HWC, already padded by the kernel
  std::size_t out_c = 0, k_h = 1, k_w = 1;
  std::size_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  // Weights [KH,KW,C,OC] (depth-major, as matmul's B not transposed) instead of [OC,KH,KW,C]: a
  // kernel that holds a convolution's weights with the roles of C and OC swapped (a backward-data
  // pass over the forward weights) loads them as they are. Same cycles: an output-stationary
  // array streams B either way, only the WRAM read order differs (as matmul's b_transposed).
  bool weights_k_major = false;
  std::size_t out_h() const { return (in_h - dilation_h * (k_h - 1) - 1) / stride_h + 1; }
  std::size_t out_w() const { return (in_w - dilation_w * (k_w - 1) - 1) / stride_w + 1; }
};
// out [OH,OW,OC] in NRAM, in [IH,IW,C] in NRAM, weights [OC,KH,KW,C] (or, weights_k_major,
// [KH,KW,C,OC]) in WRAM.
void conv2d(DType in_type, DType out_type, Addr out, Addr in, Addr weights, const ConvParams& p,
            bool accumulate);

// ---- scalar unit: checked single-element access ----
void load_bytes(Addr src, void* value, std::size_t bytes);
void store_bytes(Addr dst, const void* value, std::size_t bytes);
template <Space S, class T> T load(sim::Ptr<S, T> p) { T v; load_bytes(p, &v, sizeof(T)); return v; }
template <Space S, class T> void store(sim::Ptr<S, T> p, T v) { store_bytes(p, &v, sizeof(T)); }

// ---- debugging ----
void printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // prefixed with kernel/task
[[noreturn]] void trap(const std::string& message);                      // fault the kernel
inline void kassert(bool condition, const char* what) {
  if (!condition) trap(std::string("assertion failed: ") + what);
}

}  // namespace mlusim::dev
