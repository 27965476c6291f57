// What a kernel launch is, as the simulated chip sees it: a body run once per task, a
// BANG-style dim {x,y,z} and a function type (BLOCK or UNIONn).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace mlusim::sim {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return std::uint64_t{x} * y * z; }
};

// BLOCK runs each task on one compute core, no SRAM. UNIONn runs groups of n whole clusters
// (n * cores_per_cluster tasks per group, plus each cluster's memory core) with shared SRAM.
// Values match CNRT's cnrtFunctionType_t (= cores used per group on a 4-core cluster).
enum class FunctionType : std::uint32_t {
  kBlock = 1, kUnion1 = 4, kUnion2 = 8, kUnion4 = 16, kUnion8 = 32, kUnion16 = 64,
};

// Clusters per group for a union type; 0 for BLOCK.
std::uint32_t union_clusters(FunctionType t);
std::string function_type_name(FunctionType t);  // "BLOCK", "UNION4", ...

// The kernel body: run once per task (and per memory core in union launches) with the
// device API of kernel_api.h bound to the executing core. Arguments are captured by value.
using KernelBody = std::function<void()>;

struct KernelLaunch {
  std::string name;
  KernelBody body;
  Dim3 dim;
  FunctionType type = FunctionType::kBlock;
  // Who launched it, as the caller names it (a framework op such as "aten::addmm"; empty for
  // none). Carried into the kernel record and the trace so reports can group kernels by op.
  std::string tag = {};
};

// A launch the device cannot run: bad dim, unknown type, union larger than the device.
class LaunchError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace mlusim::sim
