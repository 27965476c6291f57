// Reduction entry points: validation, torch's dtype rules and empty-reduction results, then the
// reduction kernel(s) of reduce_plan.h.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/copy.h"
#include "elementwise/fill.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/reduce.h"
#include "reduce/reduce_plan.h"

namespace mlusim::mlu {
namespace {

using red::DimEntry;
using red::SlotData;

constexpr std::size_t kWsAlign = 128;
std::size_t align_up(std::size_t v) { return (v + kWsAlign - 1) / kWsAlign * kWsAlign; }

// Which of x's dims are reduced. Empty `dims` = all; negative dims count from the end; a 0-dim x
// accepts dim 0 / -1 (torch).
Status reduced_mask(const char* op, const TensorDesc& x, const std::vector<int>& dims, std::vector<bool>* mask) {
  const int nd = x.ndim();
  mask->assign(static_cast<std::size_t>(nd), dims.empty());
  for (int d : dims) {
    const int bound = std::max(nd, 1);
    MLU_CHECK(d >= -bound && d < bound, Status::kBadParam,
              std::string(op) + ": dim " + std::to_string(d) + " is out of range for the " + std::to_string(nd) +
                  "-d x " + x.str());
    if (nd == 0) continue;
    const int i = d < 0 ? d + nd : d;
    MLU_CHECK(!(*mask)[static_cast<std::size_t>(i)], Status::kBadParam,
              std::string(op) + ": dim " + std::to_string(i) + " appears twice in the reduced dims");
    (*mask)[static_cast<std::size_t>(i)] = true;
  }
  return Status::kSuccess;
}

std::vector<std::int64_t> result_dims(const TensorDesc& x, const std::vector<bool>& mask, bool keepdim) {
  std::vector<std::int64_t> out;
  for (int i = 0; i < x.ndim(); ++i) {
    if (!mask[static_cast<std::size_t>(i)]) out.push_back(x.dim(i));
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Stride of output `y` along each of x's dims (0 on reduced dims).
std::vector<std::int64_t> strides_per_x_dim(const TensorDesc& x, const std::vector<bool>& mask, bool keepdim,
                                            const TensorDesc& y) {
  std::vector<std::int64_t> s(static_cast<std::size_t>(x.ndim()), 0);
  int j = 0;
  for (int i = 0; i < x.ndim(); ++i) {
    if (!mask[static_cast<std::size_t>(i)]) s[static_cast<std::size_t>(i)] = y.stride(j++);
    else if (keepdim) ++j;
  }
  return s;
}

// Compact strides over the kept dims ordered by x's strides (the order the planner uses, so
// these strides never stop kept dims from merging).
std::vector<std::int64_t> compact_kept_strides(const TensorDesc& x, const std::vector<bool>& mask) {
  std::vector<int> kept;
  for (int i = 0; i < x.ndim(); ++i)
    if (!mask[static_cast<std::size_t>(i)]) kept.push_back(i);
  std::stable_sort(kept.begin(), kept.end(), [&](int a, int b) { return x.stride(a) > x.stride(b); });
  std::vector<std::int64_t> s(static_cast<std::size_t>(x.ndim()), 0);
  std::int64_t running = 1;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    s[static_cast<std::size_t>(*it)] = running;
    running *= x.dim(*it);
  }
  return s;
}

std::int64_t reduced_count(const TensorDesc& x, const std::vector<bool>& mask) {
  std::int64_t n = 1;
  for (int i = 0; i < x.ndim(); ++i)
    if (mask[static_cast<std::size_t>(i)]) n *= x.dim(i);
  return n;
}

std::int64_t kept_count(const TensorDesc& x, const std::vector<bool>& mask) {
  std::int64_t n = 1;
  for (int i = 0; i < x.ndim(); ++i)
    if (!mask[static_cast<std::size_t>(i)]) n *= x.dim(i);
  return n;
}

std::vector<DimEntry> x_entries(const TensorDesc& x, const std::vector<bool>& mask) {
  std::vector<DimEntry> e(static_cast<std::size_t>(x.ndim()));
  for (int i = 0; i < x.ndim(); ++i) {
    e[static_cast<std::size_t>(i)].size = x.dim(i);
    e[static_cast<std::size_t>(i)].reduced = mask[static_cast<std::size_t>(i)];
    e[static_cast<std::size_t>(i)].strides[red::kX] = x.stride(i);
  }
  return e;
}

void set_slot_strides(std::vector<DimEntry>* e, int slot, const std::vector<std::int64_t>& strides) {
  for (std::size_t i = 0; i < e->size(); ++i) (*e)[i].strides[slot] = strides[i];
}

// Workspace regions: [partials][mean][contiguous copy of x (flattened index reductions only)].
struct WsLayout {
  std::size_t partials = 0, mean = 0, copy = 0, total = 0;
};

bool needs_contiguous_copy(const TensorDesc& x, const std::vector<bool>& mask) {
  return std::all_of(mask.begin(), mask.end(), [](bool b) { return b; }) && !red::reduced_dims_coalesce(x_entries(x, mask));
}

WsLayout ws_layout(const Handle& h, const TensorDesc& x, const std::vector<bool>& mask) {
  WsLayout l;
  const std::int64_t outputs = kept_count(x, mask);
  l.partials = 0;
  l.mean = align_up(red::partials_bytes(h, outputs));
  l.copy = l.mean + align_up(static_cast<std::size_t>(outputs) * 4);
  l.total = l.copy + (needs_contiguous_copy(x, mask) ? static_cast<std::size_t>(x.numel()) * x.element_size() : 0);
  return l;
}

// The prologue every entry point shares: handle, x, dims, workspace.
Status check_common(Handle* h, const char* op, const TensorDesc& x, const void* x_ptr, const std::vector<int>& dims,
                    void* ws, std::size_t ws_bytes, std::vector<bool>* mask, WsLayout* layout) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt8,
                                         DType::kInt64, DType::kBool},
                                     op, "x"));
  MLU_RETURN_IF_ERROR(reduced_mask(op, x, dims, mask));
  *layout = ws_layout(*h, x, *mask);
  MLU_CHECK(ws_bytes >= layout->total && (layout->total == 0 || ws != nullptr), Status::kBadParam,
            std::string(op) + ": workspace of " + std::to_string(ws_bytes) + " bytes, needs " +
                std::to_string(layout->total) + " (get_reduce_workspace_size)");
  return Status::kSuccess;
}

Status check_output(const char* op, const char* name, const TensorDesc* y, const void* y_ptr,
                    const std::vector<std::int64_t>& dims) {
  MLU_RETURN_IF_ERROR(check_desc(y, op, name));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, *y, op, name));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, name, *y));
  std::string want = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) want += (i ? "," : "") + std::to_string(dims[i]);
  MLU_CHECK(y->dims() == dims, Status::kBadParam,
            std::string(op) + ": " + name + " " + y->str() + " should have dims " + want + "]");
  return Status::kSuccess;
}

red::Workspace partials(void* ws, const WsLayout& l) {
  return red::Workspace{static_cast<std::uint8_t*>(ws) + l.partials, l.mean - l.partials};
}

DType acc_dtype(DType x) { return sim::dtype_is_float(x) ? DType::kFloat32 : DType::kInt32; }

std::uint64_t bytes_of(const TensorDesc& d) { return static_cast<std::uint64_t>(d.numel()) * d.element_size(); }

// The result of reducing an empty extent: y (and `also`, var's mean) filled with the identity.
Status fill_empty_result(Handle& h, const char* op, double value, const TensorDesc& y, void* y_ptr,
                         const TensorDesc* also, void* also_ptr = nullptr) {
  MLU_RETURN_IF_ERROR(ew::launch_fill(h, value, y, y_ptr));
  std::uint32_t kernels = y.numel() > 0;
  if (also != nullptr) {
    MLU_RETURN_IF_ERROR(ew::launch_fill(h, value, *also, also_ptr));
    kernels += also->numel() > 0;
  }
  if (kernels > 0) record(h, op, 0, bytes_of(y) + (also ? bytes_of(*also) : 0), kernels);
  return Status::kSuccess;
}

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kAmax: return "amax";
    case ReduceOp::kAmin: return "amin";
  }
  return "reduce";
}

}  // namespace

Status get_reduce_workspace_size(Handle* h, const TensorDesc& x, const std::vector<int>& dims, std::size_t* bytes) {
  MLU_RETURN_IF_ERROR(check_handle(h, "get_reduce_workspace_size"));
  MLU_RETURN_IF_ERROR(check_desc(&x, "get_reduce_workspace_size", "x"));
  MLU_CHECK(bytes != nullptr, Status::kBadParam, "get_reduce_workspace_size: bytes is null");
  std::vector<bool> mask;
  MLU_RETURN_IF_ERROR(reduced_mask("get_reduce_workspace_size", x, dims, &mask));
  *bytes = ws_layout(*h, x, mask).total;
  return Status::kSuccess;
}

Status reduce(Handle* h, ReduceOp op, const TensorDesc& x, const void* x_ptr, const std::vector<int>& dims, bool keepdim,
              const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes) {
  MLU_CHECK(static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(ReduceOp::kAmin), Status::kBadParam,
            "reduce: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = reduce_name(op);
  std::vector<bool> mask;
  WsLayout layout;
  MLU_RETURN_IF_ERROR(check_common(h, name, x, x_ptr, dims, workspace, workspace_bytes, &mask, &layout));
  MLU_RETURN_IF_ERROR(check_output(name, "y", &y, y_ptr, result_dims(x, mask, keepdim)));
  const bool floating = sim::dtype_is_float(x.dtype());
  MLU_CHECK(op != ReduceOp::kMean || floating, Status::kBadParam,
            "mean: could not infer output dtype; x must be floating, got " + std::string(sim::dtype_name(x.dtype())));
  const bool extreme = op == ReduceOp::kAmax || op == ReduceOp::kAmin;
  // torch: sum/prod of integral or bool tensors give int64; the others keep x's dtype.
  const DType result = floating || extreme ? x.dtype() : DType::kInt64;
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, result, y));

  const std::int64_t n = reduced_count(x, mask);
  if (n == 0) {
    MLU_CHECK(!extreme || y.numel() == 0, Status::kBadParam,
              std::string(name) + ": cannot reduce an empty dim (the reduction has no identity)");
    const double identity = op == ReduceOp::kProd ? 1.0 : op == ReduceOp::kMean ? NAN : 0.0;
    return fill_empty_result(*h, name, identity, y, y_ptr, nullptr);
  }
  if (y.numel() == 0) return Status::kSuccess;

  red::ReduceOpConfig cfg;
  cfg.acc = acc_dtype(x.dtype());
  cfg.combine = op == ReduceOp::kProd ? red::Combine::kProd
                : op == ReduceOp::kAmax ? red::Combine::kMax
                : op == ReduceOp::kAmin ? red::Combine::kMin
                                        : red::Combine::kSum;
  if (op == ReduceOp::kMean) {
    cfg.post = red::PostOp::kDivide;
    cfg.post_scalar = static_cast<double>(n);
  }
  std::vector<DimEntry> entries = x_entries(x, mask);
  set_slot_strides(&entries, red::kOut, strides_per_x_dim(x, mask, keepdim, y));
  std::array<SlotData, red::kSlots> slots{};
  slots[red::kX] = {reinterpret_cast<std::uintptr_t>(x_ptr), x.dtype()};
  slots[red::kOut] = {reinterpret_cast<std::uintptr_t>(y_ptr), y.dtype()};
  std::uint32_t kernels = 0;
  MLU_RETURN_IF_ERROR(red::run_reduce(*h, name, entries, slots, cfg, false, partials(workspace, layout), &kernels));
  record(*h, name, 0, bytes_of(x) + bytes_of(y), kernels);
  return Status::kSuccess;
}

namespace {

// Shared by reduce_with_indices and arg_reduce. values may be null (argmax).
Status indexed_reduce(Handle* h, const char* name, Extreme which, const TensorDesc& x, const void* x_ptr,
                      std::optional<int> dim, bool keepdim, const TensorDesc* values, void* values_ptr,
                      const TensorDesc& indices, void* indices_ptr, void* workspace, std::size_t workspace_bytes) {
  MLU_CHECK(which == Extreme::kMax || which == Extreme::kMin, Status::kBadParam,
            std::string(name) + ": unknown extreme " + std::to_string(static_cast<int>(which)));
  std::vector<bool> mask;
  WsLayout layout;
  MLU_RETURN_IF_ERROR(check_common(h, name, x, x_ptr, dim ? std::vector<int>{*dim} : std::vector<int>{}, workspace,
                                   workspace_bytes, &mask, &layout));
  // A flattened (dim = None) result has no dims, or every dim kept as 1.
  std::vector<std::int64_t> out_dims = result_dims(x, mask, keepdim);
  if (!dim && !keepdim) out_dims.clear();
  MLU_RETURN_IF_ERROR(check_output(name, "indices", &indices, indices_ptr, out_dims));
  MLU_RETURN_IF_ERROR(check_dtype_in(indices, {DType::kInt64, DType::kInt32}, name, "indices"));
  if (values != nullptr) {
    MLU_RETURN_IF_ERROR(check_output(name, "values", values, values_ptr, out_dims));
    MLU_CHECK(values->dtype() == x.dtype(), Status::kBadParam,
              std::string(name) + ": values " + values->str() + " must have x's dtype " +
                  std::string(sim::dtype_name(x.dtype())));
  }
  MLU_CHECK(reduced_count(x, mask) > 0 || indices.numel() == 0, Status::kBadParam,
            std::string(name) + ": cannot reduce an empty dim (the reduction has no identity)");
  if (indices.numel() == 0) return Status::kSuccess;

  std::uint32_t kernels = 0;
  // Flattened index of a tensor whose dims do not merge: read a contiguous copy instead.
  TensorDesc source = x;
  const void* source_ptr = x_ptr;
  if (!dim && needs_contiguous_copy(x, mask)) {
    void* copy = static_cast<std::uint8_t*>(workspace) + layout.copy;
    MLU_RETURN_IF_ERROR(source.set(x.dtype(), x.dims()));
    MLU_RETURN_IF_ERROR(ew::launch_copy(*h, x, x_ptr, source, copy));
    source_ptr = copy;
    ++kernels;
  }
  std::vector<DimEntry> entries = x_entries(source, mask);
  if (values != nullptr) set_slot_strides(&entries, red::kOut, strides_per_x_dim(source, mask, keepdim, *values));
  if (dim) {
    set_slot_strides(&entries, red::kOutIndex, strides_per_x_dim(source, mask, keepdim, indices));
  }  // flattened: one output, every stride 0
  std::array<SlotData, red::kSlots> slots{};
  slots[red::kX] = {reinterpret_cast<std::uintptr_t>(source_ptr), x.dtype()};
  if (values != nullptr) slots[red::kOut] = {reinterpret_cast<std::uintptr_t>(values_ptr), values->dtype()};
  slots[red::kOutIndex] = {reinterpret_cast<std::uintptr_t>(indices_ptr), indices.dtype()};
  red::ReduceOpConfig cfg;
  cfg.acc = acc_dtype(x.dtype());
  cfg.combine = which == Extreme::kMax ? red::Combine::kMax : red::Combine::kMin;
  cfg.with_index = true;
  MLU_RETURN_IF_ERROR(red::run_reduce(*h, name, entries, slots, cfg, true, partials(workspace, layout), &kernels));
  record(*h, name, 0, bytes_of(x) + bytes_of(indices) + (values ? bytes_of(*values) : 0), kernels);
  return Status::kSuccess;
}

}  // namespace

Status reduce_with_indices(Handle* h, Extreme which, const TensorDesc& x, const void* x_ptr, int dim, bool keepdim,
                           const TensorDesc& values, void* values_ptr, const TensorDesc& indices, void* indices_ptr,
                           void* workspace, std::size_t workspace_bytes) {
  const char* name = which == Extreme::kMin ? "min_dim" : "max_dim";
  return indexed_reduce(h, name, which, x, x_ptr, dim, keepdim, &values, values_ptr, indices, indices_ptr, workspace,
                        workspace_bytes);
}

Status arg_reduce(Handle* h, Extreme which, const TensorDesc& x, const void* x_ptr, std::optional<int> dim, bool keepdim,
                  const TensorDesc& indices, void* indices_ptr, void* workspace, std::size_t workspace_bytes) {
  const char* name = which == Extreme::kMin ? "argmin" : "argmax";
  return indexed_reduce(h, name, which, x, x_ptr, dim, keepdim, nullptr, nullptr, indices, indices_ptr, workspace,
                        workspace_bytes);
}

Status var(Handle* h, const TensorDesc& x, const void* x_ptr, const std::vector<int>& dims, double correction,
           bool keepdim, bool take_sqrt, const TensorDesc& y, void* y_ptr, const TensorDesc* mean, void* mean_ptr,
           void* workspace, std::size_t workspace_bytes) {
  const char* name = take_sqrt ? "std" : "var";
  std::vector<bool> mask;
  WsLayout layout;
  MLU_RETURN_IF_ERROR(check_common(h, name, x, x_ptr, dims, workspace, workspace_bytes, &mask, &layout));
  const std::vector<std::int64_t> out_dims = result_dims(x, mask, keepdim);
  MLU_RETURN_IF_ERROR(check_output(name, "y", &y, y_ptr, out_dims));
  if (mean != nullptr) MLU_RETURN_IF_ERROR(check_output(name, "mean", mean, mean_ptr, out_dims));
  MLU_CHECK(sim::dtype_is_float(x.dtype()), Status::kBadParam,
            std::string(name) + ": std and var only support floating dtypes, got " + std::string(sim::dtype_name(x.dtype())));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, x.dtype(), y));
  MLU_CHECK(std::isfinite(correction), Status::kBadParam, std::string(name) + ": correction must be finite");

  const std::int64_t n = reduced_count(x, mask);
  if (n == 0) return fill_empty_result(*h, name, NAN, y, y_ptr, mean, mean_ptr);
  if (y.numel() == 0) return Status::kSuccess;

  // Pass 1: the mean, fp32, into the workspace (compact over the kept dims).
  std::uint8_t* ws_mean = static_cast<std::uint8_t*>(workspace) + layout.mean;
  const std::vector<std::int64_t> compact = compact_kept_strides(x, mask);
  std::vector<DimEntry> entries = x_entries(x, mask);
  set_slot_strides(&entries, red::kOut, compact);
  std::array<SlotData, red::kSlots> slots{};
  slots[red::kX] = {reinterpret_cast<std::uintptr_t>(x_ptr), x.dtype()};
  slots[red::kOut] = {reinterpret_cast<std::uintptr_t>(ws_mean), DType::kFloat32};
  red::ReduceOpConfig cfg;
  cfg.post = red::PostOp::kDivide;
  cfg.post_scalar = static_cast<double>(n);
  std::uint32_t kernels = 0;
  MLU_RETURN_IF_ERROR(red::run_reduce(*h, name, entries, slots, cfg, false, partials(workspace, layout), &kernels));

  // Pass 2: sum of squared deviations / max(0, N - correction).
  set_slot_strides(&entries, red::kMean, compact);
  set_slot_strides(&entries, red::kOut, strides_per_x_dim(x, mask, keepdim, y));
  slots[red::kMean] = slots[red::kOut];
  slots[red::kOut] = {reinterpret_cast<std::uintptr_t>(y_ptr), y.dtype()};
  cfg.pre = red::PreOp::kSubMeanSquare;
  cfg.post = take_sqrt ? red::PostOp::kDivideSqrt : red::PostOp::kDivide;
  cfg.post_scalar = std::max(0.0, static_cast<double>(n) - correction);
  MLU_RETURN_IF_ERROR(red::run_reduce(*h, name, entries, slots, cfg, false, partials(workspace, layout), &kernels));

  if (mean != nullptr) {
    // The workspace mean, viewed with the output's dims, converted into `mean`.
    std::vector<std::int64_t> mean_strides;
    for (int i = 0; i < x.ndim(); ++i) {
      if (!mask[static_cast<std::size_t>(i)]) mean_strides.push_back(compact[static_cast<std::size_t>(i)]);
      else if (keepdim) mean_strides.push_back(1);
    }
    TensorDesc ws_view;
    MLU_RETURN_IF_ERROR(ws_view.set(DType::kFloat32, out_dims, mean_strides));
    MLU_RETURN_IF_ERROR(ew::launch_copy(*h, ws_view, ws_mean, *mean, mean_ptr));
    ++kernels;
  }
  record(*h, name, 0, bytes_of(x) + bytes_of(y) + (mean ? bytes_of(*mean) : 0), kernels);
  return Status::kSuccess;
}

Status norm(Handle* h, const TensorDesc& x, const void* x_ptr, double p, const std::vector<int>& dims, bool keepdim,
            const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes) {
  const char* name = "norm";
  std::vector<bool> mask;
  WsLayout layout;
  MLU_RETURN_IF_ERROR(check_common(h, name, x, x_ptr, dims, workspace, workspace_bytes, &mask, &layout));
  MLU_RETURN_IF_ERROR(check_output(name, "y", &y, y_ptr, result_dims(x, mask, keepdim)));
  MLU_CHECK(sim::dtype_is_float(x.dtype()), Status::kBadParam,
            std::string(name) + ": needs a floating x, got " + std::string(sim::dtype_name(x.dtype())));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, x.dtype(), y));
  MLU_CHECK(!std::isnan(p), Status::kBadParam, "norm: p is NaN");
  const std::int64_t n = reduced_count(x, mask);
  if (n == 0) {
    MLU_CHECK(!std::isinf(p) || y.numel() == 0, Status::kBadParam, "norm: the inf-norm of an empty dim is undefined");
    return fill_empty_result(*h, name, 0.0, y, y_ptr, nullptr);
  }
  if (y.numel() == 0) return Status::kSuccess;

  red::ReduceOpConfig cfg;
  if (p == 2) {
    cfg.pre = red::PreOp::kSquare;
    cfg.post = red::PostOp::kSqrt;
  } else if (p == 1) {
    cfg.pre = red::PreOp::kAbs;
  } else if (std::isinf(p)) {
    cfg.pre = red::PreOp::kAbs;
    cfg.combine = p > 0 ? red::Combine::kMax : red::Combine::kMin;
  } else if (p == 0) {
    cfg.pre = red::PreOp::kNonZero;
  } else {
    cfg.pre = red::PreOp::kAbsPow;
    cfg.pre_scalar = p;
    cfg.post = red::PostOp::kPow;
    cfg.post_scalar = 1.0 / p;
  }
  std::vector<DimEntry> entries = x_entries(x, mask);
  set_slot_strides(&entries, red::kOut, strides_per_x_dim(x, mask, keepdim, y));
  std::array<SlotData, red::kSlots> slots{};
  slots[red::kX] = {reinterpret_cast<std::uintptr_t>(x_ptr), x.dtype()};
  slots[red::kOut] = {reinterpret_cast<std::uintptr_t>(y_ptr), y.dtype()};
  std::uint32_t kernels = 0;
  MLU_RETURN_IF_ERROR(red::run_reduce(*h, name, entries, slots, cfg, false, partials(workspace, layout), &kernels));
  record(*h, name, 0, bytes_of(x) + bytes_of(y), kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
