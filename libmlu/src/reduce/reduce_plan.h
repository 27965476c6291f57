// Host side of the reductions: builds the kernel's iteration space from x's dims, sizes the
// tile from NRAM, and launches, splitting the reduced extent over cores (two-phase: partials in
// the workspace, then a combine launch) when there are fewer output blocks than cores.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "reduce/reduce_kernel.h"

namespace mlusim::mlu::red {

// One dim of x as the planner sees it: size, whether it is reduced, every slot's stride along
// it (elements; outputs have 0 on reduced dims).
struct DimEntry {
  std::int64_t size = 1;
  bool reduced = false;
  std::array<std::int64_t, kSlots> strides{};
};

struct SlotData {
  std::uint64_t base = 0;  // 0 = unused slot
  DType dtype = DType::kFloat32;
};

// The op-specific part of a kernel (combine, pre/post ops, accumulation dtype).
struct ReduceOpConfig {
  Combine combine = Combine::kSum;
  bool with_index = false;
  PreOp pre = PreOp::kNone;
  double pre_scalar = 0;
  PostOp post = PostOp::kNone;
  double post_scalar = 1;
  DType acc = DType::kFloat32;
};

// Scratch for partials: values (and indices) of up to parts x outputs.
struct Workspace {
  std::uint8_t* base = nullptr;
  std::size_t bytes = 0;
};

// Plans and launches one reduction of x's dims (`entries`, logical order) into the output slots.
// `keep_reduced_order`: the reduced dims keep their logical order (flattened argmax), otherwise
// they are ordered by x's strides. With_index needs the reduced dims to form one dim after
// coalescing (the caller guarantees it). Adds the kernels launched to *kernels.
Status run_reduce(Handle& h, const char* name, const std::vector<DimEntry>& entries,
                  const std::array<SlotData, kSlots>& slots, const ReduceOpConfig& op, bool keep_reduced_order,
                  Workspace ws, std::uint32_t* kernels);

// Workspace bytes run_reduce may need for `outputs` outputs (partials of every core).
std::size_t partials_bytes(const Handle& h, std::int64_t outputs);

// Whether the reduced dims of `entries`, in logical order, merge into one dim.
bool reduced_dims_coalesce(const std::vector<DimEntry>& entries);

}  // namespace mlusim::mlu::red
