// dev:: free functions: the BANG-like kernel API forwarded to the core that runs the caller.
#include "mlusim/sim/kernel_api.h"

#include <cstdio>
#include <vector>

#include "core/core.h"

namespace mlusim::dev {

using sim::Core;

namespace {
Core& core() { return Core::current(); }
const sim::TaskAssignment& task() { return core().task(); }
const sim::Dim3& dim() { return task().launch->launch.dim; }
}  // namespace

std::uint32_t task_id() { return task().task_id; }
std::uint32_t task_dim() { return static_cast<std::uint32_t>(dim().count()); }
std::uint32_t task_id_x() { return task().task_id % dim().x; }
std::uint32_t task_id_y() { return task().task_id / dim().x % dim().y; }
std::uint32_t task_id_z() { return task().task_id / (dim().x * dim().y); }
std::uint32_t task_dim_x() { return dim().x; }
std::uint32_t task_dim_y() { return dim().y; }
std::uint32_t task_dim_z() { return dim().z; }
std::uint32_t cluster_id() { return task().cluster_in_group; }
std::uint32_t cluster_dim() { return task().launch->union_n == 0 ? 1 : task().launch->union_n; }
std::uint32_t core_id() { return core().core_id(); }
std::uint32_t core_dim() { return core().cores_per_cluster(); }
bool is_memory_core() { return core().is_memory_core(); }

Addr alloc(Space space, std::size_t bytes) { return core().alloc(space, bytes); }
std::size_t capacity(Space space) { return core().capacity(space); }
std::size_t available(Space space) { return core().available(space); }

void memcpy(Addr dst, Addr src, std::size_t bytes, Dir dir) {
  core().copy(dst, src, CopyShape{bytes}, dir, false);
}
void memcpy_async(Addr dst, Addr src, std::size_t bytes, Dir dir) {
  core().copy(dst, src, CopyShape{bytes}, dir, true);
}
void memcpy_strided(Addr dst, Addr src, const CopyShape& shape, Dir dir) { core().copy(dst, src, shape, dir, false); }
void memcpy_strided_async(Addr dst, Addr src, const CopyShape& shape, Dir dir) {
  core().copy(dst, src, shape, dir, true);
}

void sync_io() { core().sync_io(); }
void sync_loads() { core().sync_loads(); }
void sync_compute() { (void)core(); }  // compute intrinsics block the core until done
void sync_cluster() { core().barrier(false); }
void sync_all() { core().barrier(true); }

void vec_binary(sim::VecBinaryOp op, DType t, Addr dst, Addr a, Addr b, std::size_t n) {
  core().vec_binary(op, t, dst, a, b, n);
}
void vec_binary_scalar(sim::VecBinaryOp op, DType t, Addr dst, Addr a, double s, std::size_t n) {
  core().vec_binary_scalar(op, t, dst, a, s, n);
}
void vec_unary(sim::VecUnaryOp op, DType t, Addr dst, Addr src, std::size_t n) { core().vec_unary(op, t, dst, src, n); }
void vec_reduce(sim::VecReduceOp op, DType t, Addr dst, Addr src, std::size_t rows, std::size_t n) {
  core().vec_reduce(op, t, dst, src, rows, n);
}
void vec_cast(DType dt, Addr dst, DType st, Addr src, std::size_t n) { core().vec_cast(dt, dst, st, src, n); }
void vec_fill(DType t, Addr dst, double v, std::size_t n) { core().vec_fill(t, dst, v, n); }
void vec_select(DType t, Addr dst, Addr cond, Addr a, Addr b, std::size_t n) {
  core().vec_select(t, dst, cond, a, b, n);
}
void matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::size_t m, std::size_t k, std::size_t n,
            bool b_transposed, bool accumulate) {
  core().matmul(in_t, out_t, c, a, b, m, k, n, /*a_k_major=*/false, b_transposed, accumulate);
}
void matmul_a_k_major(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::size_t m, std::size_t k, std::size_t n,
                      bool b_transposed, bool accumulate) {
  core().matmul(in_t, out_t, c, a, b, m, k, n, /*a_k_major=*/true, b_transposed, accumulate);
}
bool tfu_supports(DType in_t) { return core().tfu_supports(in_t); }
void vec_matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::size_t m, std::size_t k, std::size_t n,
                bool b_transposed, bool accumulate) {
  core().vec_matmul(in_t, out_t, c, a, b, m, k, n, b_transposed, accumulate);
}
void conv2d(DType in_t, DType out_t, Addr out, Addr in, Addr w, const ConvParams& p, bool accumulate) {
  core().conv2d(in_t, out_t, out, in, w, p, accumulate);
}
void load_bytes(Addr src, void* value, std::size_t bytes) { core().scalar_access(src, value, bytes, false); }
void store_bytes(Addr dst, const void* value, std::size_t bytes) {
  core().scalar_access(dst, const_cast<void*>(value), bytes, true);
}

void printf(const char* fmt, ...) {
  std::va_list args;
  va_start(args, fmt);
  std::va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::vector<char> buf(static_cast<std::size_t>(n > 0 ? n : 0) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  va_end(args);
  std::string line(buf.data());
  while (!line.empty() && line.back() == '\n') line.pop_back();
  core().log(line);
}

void trap(const std::string& message) { core().fault(message); }

std::string_view dir_name(Dir d) {
  static constexpr std::string_view kNames[] = {
      "GDRAM2NRAM", "NRAM2GDRAM", "GDRAM2WRAM", "WRAM2GDRAM", "GDRAM2SRAM", "SRAM2GDRAM", "SRAM2NRAM", "NRAM2SRAM",
      "SRAM2WRAM",  "WRAM2SRAM",  "NRAM2WRAM",  "WRAM2NRAM",  "NRAM2NRAM",  "GDRAM2GDRAM", "SRAM2SRAM"};
  const auto i = static_cast<std::size_t>(d);
  return i < std::size(kNames) ? kNames[i] : std::string_view("invalid");
}

}  // namespace mlusim::dev
