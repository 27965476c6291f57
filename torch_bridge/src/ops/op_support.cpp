#include "ops/op_support.h"

#include <algorithm>
#include <map>
#include <utility>

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/any.h>
#include <mlusim_ext.h>

#include "backend/internal.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge::ops {
namespace {

// One libmlu handle per (device, queue) per host thread: a handle is single-threaded (as cuDNN's)
// and bound to one queue. Dropped when the runtime restarts (config reload, fork child).
struct HandleCache {
  std::uint64_t epoch = 0;
  std::map<std::pair<int, cnrtQueue_t>, mlu::Handle*> handles;

  ~HandleCache() { clear(); }
  void clear() {
    for (auto& [key, h] : handles) mlu::Handle::destroy(h);
    handles.clear();
  }
};

thread_local HandleCache t_handles;
thread_local int t_depth = 0;  // nesting of OpScopes on this thread: the outermost names kernels
thread_local const char* t_outermost = nullptr;  // its ATen op name

mlu::Handle* handle_for(int device, cnrtQueue_t queue) {
  const std::uint64_t epoch = runtime_epoch();
  if (t_handles.epoch != epoch) {
    // The old runtime's queues are gone; the handles only hold plain data, so dropping is safe.
    t_handles.clear();
    t_handles.epoch = epoch;
  }
  auto [it, inserted] = t_handles.handles.try_emplace({device, queue}, nullptr);
  if (inserted) {
    mlu::Handle* h = nullptr;
    const mlu::Status s = mlu::Handle::create(&h);
    if (s != mlu::Status::kSuccess) {
      t_handles.handles.erase(it);
      TORCH_CHECK(false, "libmlu handle for mlu:", device, ": ", mlu::status_name(s), ": ", mlu::last_error_detail());
    }
    TORCH_INTERNAL_ASSERT(h->device() == device, "libmlu handle created on device ", h->device(), ", expected ", device);
    h->set_queue(queue);
    it->second = h;
  }
  return it->second;
}

}  // namespace

bool has_mlu_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: case at::kHalf: case at::kBFloat16: case at::kChar: case at::kInt: case at::kLong: case at::kBool:
    case at::kDouble:
      return true;
    default:
      return false;
  }
}

mlu::DType mlu_dtype(at::ScalarType t, const char* op) {
  switch (t) {
    case at::kFloat: return mlu::DType::kFloat32;
    case at::kHalf: return mlu::DType::kFloat16;
    case at::kBFloat16: return mlu::DType::kBFloat16;
    case at::kChar: return mlu::DType::kInt8;
    case at::kInt: return mlu::DType::kInt32;
    case at::kLong: return mlu::DType::kInt64;
    case at::kBool: return mlu::DType::kBool;
    case at::kDouble: return mlu::DType::kFloat64;
    default: break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": dtype ", t, " is not supported on device mlu"
                               "(supported: float32, float16, bfloat16 where the preset computes it, int8, int32, int64, bool; "
                              "float64 for copies)");
}

at::Tensor widened(const at::Tensor& t, at::ScalarType common) {
  if (t.device().is_cpu() && t.dim() == 0) return is_narrow_int(common) ? t.to(common).to(at::kInt) : t;
  return is_narrow_int(t.scalar_type()) ? t.to(at::kInt) : t;
}

mlu::TensorDesc moved_desc(const at::Tensor& t, const char* op) {
  return t.scalar_type() == at::kByte ? desc_as(t, mlu::DType::kInt8, op) : desc(t, op);
}

mlu::TensorDesc desc_as(const at::Tensor& t, mlu::DType dtype, const char* op) {
  std::vector<std::int64_t> dims(t.sizes().begin(), t.sizes().end());
  std::vector<std::int64_t> strides(t.strides().begin(), t.strides().end());
  for (std::size_t i = 0; i < strides.size(); ++i)
    TORCH_CHECK(strides[i] >= 0 || dims[i] <= 1, op, ": negative strides are not supported on device mlu"
                ", got strides ", t.strides());
  for (std::size_t i = 0; i < strides.size(); ++i)
    if (dims[i] <= 1) strides[i] = std::max<std::int64_t>(strides[i], 0);
  TORCH_CHECK(static_cast<int>(dims.size()) <= mlu::kMaxDims, op, ": tensors on device mlu have at most ",
              mlu::kMaxDims, " dims, got ", dims.size());
  mlu::TensorDesc d;
  const mlu::Status s = d.set(dtype, dims, strides, mlu::Layout::kND);
  TORCH_CHECK(s == mlu::Status::kSuccess, op, ": cannot describe ", t.scalar_type(), t.sizes(), " with strides ",
              t.strides(), ": ", mlu::last_error_detail());
  return d;
}

mlu::TensorDesc desc(const at::Tensor& t, const char* op, mlu::Layout layout) {
  mlu::TensorDesc d = desc_as(t, mlu_dtype(t.scalar_type(), op), op);
  if (layout != mlu::Layout::kND) {
    mlu::TensorDesc l;
    const mlu::Status s = l.set(d.dtype(), d.dims(), d.strides(), layout);
    TORCH_CHECK(s == mlu::Status::kSuccess, op, ": ", mlu::last_error_detail());
    return l;
  }
  return d;
}

void check_on_device(const at::Tensor& t, const c10::Device& device, const char* op, const char* arg) {
  TORCH_CHECK(t.defined(), op, ": ", arg, " is undefined");
  TORCH_CHECK(t.device() == device, op, ": expected ", arg, " on ", device, " (mlu), got a tensor on ", t.device());
}

// ---- OpScope ---------------------------------------------------------------------------------------

namespace {
const c10::Device& checked(const c10::Device& d, const char* aten_op) {
  TORCH_CHECK(d.type() == kDeviceType, aten_op, ": expected tensors on device mlu, got ", d);
  return d;
}
}  // namespace

OpScope::OpScope(const char* aten_op, const at::Tensor& device_of) : OpScope(aten_op, device_of.device()) {}

OpScope::OpScope(const char* aten_op, const c10::Device& device)
    : name_(aten_op), device_(checked(device, aten_op)), guard_(device_) {
  handle_ = handle_for(device_.index(), current_queue(device_.index()));
  first_record_ = handle_->ops().size();
  if (t_depth++ == 0) {
    owns_tag_ = true;
    t_outermost = name_;
    mlusimSetLaunchTag(name_);
  }
}

OpScope::~OpScope() {
  // The libmlu ops run inside this scope (nested ATen kernels included) count for the outermost
  // ATen op, as their kernels carry its launch tag.
  const std::vector<mlu::OpRecord>& records = handle_->ops();
  for (std::size_t i = first_record_; i < records.size(); ++i)
    op_table_add(device_.index(), t_outermost, records[i].macs, records[i].bytes, records[i].kernels);
  handle_->truncate_ops(first_record_);
  if (owns_tag_) {
    op_table_count_call(device_.index(), name_);
    mlusimSetLaunchTag(nullptr);
  }
  --t_depth;
  workspaces_.clear();  // stream-ordered reuse: same queue as the kernels that used them
}

void* OpScope::workspace(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  workspaces_.push_back(empty_on(device_, {static_cast<std::int64_t>(bytes)}, at::kByte));
  return workspaces_.back().data_ptr();
}

void OpScope::fail(mlu::Status s, const char* call) const {
  const std::string detail = mlu::last_error_detail();
  TORCH_CHECK_NOT_IMPLEMENTED(s != mlu::Status::kNotSupported, name_, ": ", detail, " (libmlu ", call,
                              " on device mlu: ", mlu::status_name(s), ")");
  TORCH_CHECK_VALUE(s != mlu::Status::kBadParam, name_, ": ", detail, " (libmlu ", call, ": ", mlu::status_name(s), ")");
  TORCH_CHECK(false, name_, ": libmlu ", call, " failed: ", mlu::status_name(s), ": ", detail);
}

void OpScope::take_random(std::uint64_t count, const std::optional<at::Generator>& gen) {
  const auto [seed, first] = reserve_random(gen, device_.index(), count);
  handle_->set_random_state(seed, first);
}

// ---- outputs ---------------------------------------------------------------------------------------

at::Tensor empty_on(const c10::Device& device, at::IntArrayRef sizes, at::ScalarType dtype) {
  return at::empty(sizes, at::TensorOptions().device(device).dtype(dtype));
}

at::Tensor empty_like_dense(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype) {
  if (like.sizes() == sizes && like.is_non_overlapping_and_dense() && !like.is_contiguous())
    return at::empty_strided(sizes, like.strides(), at::TensorOptions().device(like.device()).dtype(dtype));
  return empty_on(like.device(), sizes, dtype);
}

void prepare_out(const at::Tensor& out, const c10::Device& device, at::IntArrayRef sizes, const char* op) {
  check_on_device(out, device, op, "out");
  at::native::resize_output(out, sizes);
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t n = std::max<std::int64_t>(ndim, 1);
  TORCH_CHECK_INDEX(dim >= -n && dim < n, op, ": Dimension out of range (expected to be in range of [", -n, ", ",
                    n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

void check_out_dtype(const at::Tensor& out, at::ScalarType want, const char* op) {
  TORCH_CHECK(out.scalar_type() == want, op, ": Expected out tensor to have dtype ", c10::toString(want), ", but got ",
              out.scalar_type(), " instead");
}

at::Tensor& write_out(const at::Tensor& result, at::Tensor& out, const char* op) {
  if (out.is_same(result)) return out;
  prepare_out(out, result.device(), result.sizes(), op);
  out.copy_(result);
  return out;
}

void copy_into(OpScope& op, const at::Tensor& src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  op.check(mlu::copy_strided(op.handle(), desc(src, op.name()), src.data_ptr(), desc(dst, op.name()), dst.data_ptr()),
           "copy_strided");
}

at::Tensor narrow_float64(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.scalar_type() == at::kDouble, op, ": narrow_float64 takes a float64 tensor, got ", t.scalar_type());
  const at::Tensor narrowed = t.to(at::kFloat);  // libmlu copy_strided: round to nearest, overflow to inf
  if (t.numel() == 0) return narrowed;
  // The range check on the float64 bits (the VFU has no fp64 compare): a float32 inf whose source
  // was not inf (high word & 0x7fffffff = 0x7ff00000 and low word 0) overflowed.
  const at::Tensor words = t.reshape({-1}).contiguous().view(at::kInt).view({-1, 2});  // little endian: low, high
  const at::Tensor overflow = run_elementwise_program(
      {narrowed.reshape({-1}), words.select(1, 1), words.select(1, 0)},
      "h = where(lt($1, 0), add(add($1, 1073741824), 1073741824), $1); "
      "logical_and(eq(abs($0), inf), logical_not(logical_and(eq(h, 2146435072), eq($2, 0))))");
  TORCH_CHECK_VALUE(!at::any(overflow).item<bool>(), op, ": a float64 value lies beyond float32's range (about 3.4e38); "
                    "the device computes float64 in float32 (its VFU has no fp64 arithmetic)");
  return narrowed;
}

}  // namespace mlusim::bridge::ops
