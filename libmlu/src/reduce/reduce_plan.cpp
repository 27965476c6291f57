#include "reduce/reduce_plan.h"

#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"

namespace mlusim::mlu::red {
namespace {

// NRAM slack for the 128-byte alignment of every buffer the kernel allocates.
constexpr std::size_t kAlignSlack = 32 * 128;

bool mergeable(const DimEntry& outer, const DimEntry& inner) {
  for (int s = 0; s < kSlots; ++s)
    if (outer.strides[s] != inner.strides[s] * inner.size) return false;
  return true;
}

std::vector<DimEntry> coalesce(const std::vector<DimEntry>& v) {
  std::vector<DimEntry> out;
  for (const DimEntry& e : v) {
    if (!out.empty() && mergeable(out.back(), e)) {
      out.back().size *= e.size;
      out.back().strides = e.strides;
    } else {
      out.push_back(e);
    }
  }
  return out;
}

std::int64_t min_x_stride(const std::vector<DimEntry>& v) {
  std::int64_t m = INT64_MAX;
  for (const DimEntry& e : v) m = std::min(m, e.strides[kX]);
  return m;
}

// Space order: kept dims then reduced dims (row mode), or, when a kept dim is innermost in x's
// memory, that dim moved after the reduced ones (column mode). Box: the three innermost dims.
Status plan(const std::vector<DimEntry>& entries, const std::array<SlotData, kSlots>& slots, const ReduceOpConfig& op,
            bool keep_reduced_order, std::size_t nram_bytes, ReduceKernel* k) {
  std::vector<DimEntry> kept, red;
  for (const DimEntry& e : entries)
    if (e.size > 1) (e.reduced ? red : kept).push_back(e);
  auto by_x_stride = [](const DimEntry& a, const DimEntry& b) { return a.strides[kX] > b.strides[kX]; };
  std::stable_sort(kept.begin(), kept.end(), by_x_stride);
  if (!keep_reduced_order) std::stable_sort(red.begin(), red.end(), by_x_stride);
  kept = coalesce(kept);
  red = coalesce(red);
  if (red.empty()) red.push_back(DimEntry{1, true, {}});
  const bool column = !kept.empty() && red[0].size > 1 && min_x_stride(kept) < min_x_stride(red);
  std::vector<DimEntry> order;
  if (column) {
    const auto inner = std::min_element(kept.begin(), kept.end(),
                                        [](const DimEntry& a, const DimEntry& b) { return a.strides[kX] < b.strides[kX]; });
    const DimEntry k_in = *inner;
    kept.erase(inner);
    order = kept;
    order.insert(order.end(), red.begin(), red.end());
    order.push_back(k_in);
  } else {
    order = kept;
    order.insert(order.end(), red.begin(), red.end());
  }
  while (order.size() < static_cast<std::size_t>(ew::kBoxDims)) order.insert(order.begin(), DimEntry{1, false, {}});
  MLU_CHECK(order.size() <= static_cast<std::size_t>(kMaxDims), Status::kNotSupported,
            "reduce: " + std::to_string(order.size()) + " dims that cannot be merged (at most " +
                std::to_string(kMaxDims) + ")");

  k->space = ew::IterSpace{};
  k->space.ndim = static_cast<int>(order.size());
  for (int s = 0; s < kSlots; ++s) k->space.operands.push_back(ew::Operand{slots[s].base, slots[s].dtype, {}});
  for (int d = 0; d < k->space.ndim; ++d) {
    k->space.dims[d] = order[static_cast<std::size_t>(d)].size;
    k->reduced[static_cast<std::size_t>(d)] = order[static_cast<std::size_t>(d)].reduced;
    for (int s = 0; s < kSlots; ++s) k->space.operands[s].strides[d] = order[static_cast<std::size_t>(d)].strides[s];
  }
  k->column = column;
  k->combine = op.combine;
  k->with_index = op.with_index;
  k->pre = op.pre;
  k->pre_scalar = op.pre_scalar;
  k->post = op.post;
  k->post_scalar = op.post_scalar;
  k->acc = op.acc;
  k->has_mean = slots[kMean].base != 0;
  k->index_from_input = slots[kInIndex].base != 0;

  const std::size_t budget = nram_bytes > kAlignSlack ? nram_bytes - kAlignSlack : 0;
  const auto e = static_cast<std::int64_t>(budget / k->bytes_per_element()) / 64 * 64;
  MLU_CHECK(e >= 64, Status::kInternalError, "reduce: NRAM (" + std::to_string(nram_bytes) + " bytes) cannot hold a tile");
  const int nd = k->space.ndim;
  const std::int64_t d0 = k->space.dims[nd - 1], d1 = k->space.dims[nd - 2], d2 = k->space.dims[nd - 3];
  std::int64_t b0, b1, b2;
  if (!column) {
    b0 = std::min(d0, e);
    b1 = std::min(d1, std::max<std::int64_t>(1, e / b0));
    b2 = std::min(d2, std::max<std::int64_t>(1, e / (b0 * b1)));
  } else {
    // Long contiguous rows of kept outputs, at least two reduced rows per tile to fold.
    b0 = std::min(d0, std::max<std::int64_t>(1, e / 2));
    b1 = std::min(d1, std::max<std::int64_t>(1, e / b0));
    b2 = k->reduced[static_cast<std::size_t>(nd - 3)] ? std::min(d2, std::max<std::int64_t>(1, e / (b0 * b1))) : 1;
  }
  k->box = {b0, b1, b2};
  finish_plan(k);
  return Status::kSuccess;
}

Status launch_kernel(Handle& h, const char* name, std::shared_ptr<const ReduceKernel> k, std::uint32_t* kernels) {
  const auto units = static_cast<std::uint64_t>(k->blocks * k->parts);
  MLU_RETURN_IF_ERROR(launch(h, name, [k] { reduce_body(*k); }, block_dim(h, units), CNRT_FUNC_TYPE_BLOCK));
  ++*kernels;
  return Status::kSuccess;
}

}  // namespace

std::size_t partials_bytes(const Handle& h, std::int64_t outputs) {
  return static_cast<std::size_t>(h.total_cores()) * static_cast<std::size_t>(outputs) * 8;
}

bool reduced_dims_coalesce(const std::vector<DimEntry>& entries) {
  std::vector<DimEntry> red;
  for (const DimEntry& e : entries)
    if (e.reduced && e.size > 1) red.push_back(e);
  return coalesce(red).size() <= 1;
}

Status run_reduce(Handle& h, const char* name, const std::vector<DimEntry>& entries,
                  const std::array<SlotData, kSlots>& slots, const ReduceOpConfig& op, bool keep_reduced_order,
                  Workspace ws, std::uint32_t* kernels) {
  auto k = std::make_shared<ReduceKernel>();
  MLU_RETURN_IF_ERROR(plan(entries, slots, op, keep_reduced_order, h.nram_bytes(), k.get()));
  if (k->blocks == 0) return Status::kSuccess;
  const std::int64_t cores = h.total_cores();
  const std::int64_t parts = k->blocks < cores ? std::min(k->steps, cores / k->blocks) : 1;
  if (parts <= 1) return launch_kernel(h, name, k, kernels);

  // Phase 1: every (block, part) stores raw partials at ws[part][output], outputs numbered
  // compactly over the space's kept dims.
  const int nd = k->space.ndim;
  std::array<std::int64_t, kMaxDims> compact{};
  std::int64_t outputs = 1;
  for (int d = nd - 1; d >= 0; --d) {
    if (k->reduced[static_cast<std::size_t>(d)]) continue;
    compact[d] = outputs;
    outputs *= k->space.dims[d];
  }
  const std::size_t value_bytes = static_cast<std::size_t>(parts * outputs) * 4;
  MLU_CHECK(ws.base != nullptr && ws.bytes >= 2 * value_bytes, Status::kBadParam,
            std::string(name) + ": workspace of " + std::to_string(ws.bytes) + " bytes is too small (query it)");
  const std::uint64_t ws_values = reinterpret_cast<std::uintptr_t>(ws.base);
  const std::uint64_t ws_indices = ws_values + value_bytes;
  auto phase1 = std::make_shared<ReduceKernel>(*k);
  phase1->parts = parts;
  phase1->part_elems = outputs;
  phase1->space.operands[kOut] = ew::Operand{ws_values, op.acc, compact};
  phase1->space.operands[kOutIndex] = ew::Operand{ws_indices, DType::kInt32, compact};
  MLU_RETURN_IF_ERROR(launch_kernel(h, name, phase1, kernels));

  // Phase 2: reduce the parts (outermost, stride `outputs`) into the real outputs.
  std::vector<DimEntry> combine_entries;
  DimEntry part_dim{parts, true, {}};
  part_dim.strides[kX] = outputs;
  part_dim.strides[kInIndex] = outputs;
  combine_entries.push_back(part_dim);
  for (int d = 0; d < nd; ++d) {
    if (k->reduced[static_cast<std::size_t>(d)] || k->space.dims[d] == 1) continue;
    DimEntry e{k->space.dims[d], false, {}};
    e.strides[kX] = compact[d];
    e.strides[kInIndex] = compact[d];
    e.strides[kOut] = k->space.operands[kOut].strides[d];
    e.strides[kOutIndex] = k->space.operands[kOutIndex].strides[d];
    combine_entries.push_back(e);
  }
  std::array<SlotData, kSlots> combine_slots = slots;
  combine_slots[kX] = SlotData{ws_values, op.acc};
  combine_slots[kMean] = SlotData{};
  combine_slots[kInIndex] = op.with_index ? SlotData{ws_indices, DType::kInt32} : SlotData{};
  ReduceOpConfig combine_op = op;
  combine_op.pre = PreOp::kNone;
  auto phase2 = std::make_shared<ReduceKernel>();
  MLU_RETURN_IF_ERROR(plan(combine_entries, combine_slots, combine_op, true, h.nram_bytes(), phase2.get()));
  return launch_kernel(h, name, phase2, kernels);
}

}  // namespace mlusim::mlu::red
