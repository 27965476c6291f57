// What every ATen kernel over libmlu uses: descriptors from at::Tensor, the libmlu handle of the
// current queue, workspace, status checks, output allocation and the per-op record that feeds
// the cycle report.
//
// Kernel shape (one per ATen op overload):
//
//   Tensor& mlu_add_out(const Tensor& a, const Tensor& b, const Scalar& alpha, Tensor& out) {
//     OpScope op("aten::add.out", out);          // device guard, handle, launch tag
//     ... check shapes/devices, resize `out` (resize_output) ...
//     op.check(mlu::binary(op.handle(), ..., desc(a), a.data_ptr(), ...), "binary");
//     return out;
//   }
//
// Errors: libmlu's kBadParam becomes c10::ValueError / c10::Error with libmlu's detail,
// kNotSupported becomes NotImplementedError naming the op and the device, driver failures keep
// their cnrt message. Nothing here falls back to the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::bridge::ops {

// libmlu's dtype for a torch dtype (float, half, int8, int32, int64, bool, double; uint8 reads
// as int8 only where the caller says so). NotImplementedError naming `op` for others.
mlu::DType mlu_dtype(at::ScalarType t, const char* op);
bool has_mlu_dtype(at::ScalarType t);
// uint8 and int16: integer dtypes libmlu lacks, which ops compute on int32 copies and narrow back
// (modular, as torch wraps); elementwise_ops.cpp and reduce_ops.cpp say which ops and why exact.
inline bool is_narrow_int(at::ScalarType t) { return t == at::kByte || t == at::kShort; }
// An operand of an op computing torch's result dtype `common` in int32 lanes: a uint8 / int16
// device tensor as its int32 copy; a CPU scalar cast to `common` first, as TensorIterator casts
// it (x > 300 on uint8 compares with 44), then held as int32; anything else unchanged.
at::Tensor widened(const at::Tensor& t, at::ScalarType common);

// The descriptor of `t` (its dtype, sizes and strides, in elements). A negative stride or a
// dtype libmlu lacks raises, naming `op`. Layout kNCHW is for conv/pool/batch norm 4-d tensors.
mlu::TensorDesc desc(const at::Tensor& t, const char* op, mlu::Layout layout = mlu::Layout::kND);
// `t` with `dtype`'s descriptor but t's dims and strides (reinterpretation, e.g. uint8 as int8).
mlu::TensorDesc desc_as(const at::Tensor& t, mlu::DType dtype, const char* op);
// The descriptor of a tensor whose values an op only moves (concatenate, select, gather, where
// between same-dtype values): uint8 as int8, the same bytes; every other dtype as desc().
mlu::TensorDesc moved_desc(const at::Tensor& t, const char* op);

// Raises unless `t` is a tensor on `device` ("<op>: expected <arg> on mlu:0, got cpu").
void check_on_device(const at::Tensor& t, const c10::Device& device, const char* op, const char* arg);

// One ATen kernel's stay on the device. Constructing it: device guard on `device_of`'s device,
// the libmlu handle bound to that device's current queue, the launch tag (the outermost ATen op
// on this thread names the kernels). Destroying it: the handle's op records go to the op table
// of the cycle report under the tag, workspace goes back to the caching allocator (stream
// ordered: later work on the same queue may reuse it at once, as in CUDA).
class OpScope {
 public:
  OpScope(const char* aten_op, const at::Tensor& device_of);
  OpScope(const char* aten_op, const c10::Device& device);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  mlu::Handle* handle() const { return handle_; }
  const c10::Device& device() const { return device_; }
  const char* name() const { return name_; }

  // Device scratch of at least `bytes` (nullptr for 0), alive until the scope ends.
  void* workspace(std::size_t bytes);
  // Throws for a failed libmlu status: "<aten op>: <libmlu call>: <status name>: <detail>".
  void check(mlu::Status s, const char* call) const {
    if (s != mlu::Status::kSuccess) fail(s, call);
  }
  [[noreturn]] void fail(mlu::Status s, const char* call) const;
  // Random ops: the next libmlu random reservation of `count` numbers continues `gen` (or the
  // device's default generator, which torch.manual_seed reaches) instead of the handle's own.
  void take_random(std::uint64_t count, const std::optional<at::Generator>& gen = std::nullopt);

 private:
  const char* name_;
  c10::Device device_;
  c10::DeviceGuard guard_;
  bool owns_tag_ = false;
  mlu::Handle* handle_ = nullptr;
  std::size_t first_record_ = 0;  // the handle's op records before this scope
  std::vector<at::Tensor> workspaces_;
};

// A new device tensor for an op's result (the device allocator; contiguous, or with
// `like`'s memory format when `like` is given and dense).
at::Tensor empty_on(const c10::Device& device, at::IntArrayRef sizes, at::ScalarType dtype);
at::Tensor empty_like_dense(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype);

// out= semantics (at::native::resize_output): `out` must be on the op's device; a wrong-shaped
// `out` is resized (with torch's warning when it was not empty).
void prepare_out(const at::Tensor& out, const c10::Device& device, at::IntArrayRef sizes, const char* op);

// torch's maybe_wrap_dim: dim in [-n, n) with n = max(ndim, 1) (a 0-d tensor takes -1 or 0),
// negative counted from the end; IndexError naming `op` otherwise.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);

// out= tensors whose dtype is fixed by the op (structured kernels' rule): RuntimeError
// "<op>: Expected out tensor to have dtype <want>, but got <dtype> instead".
void check_out_dtype(const at::Tensor& out, at::ScalarType want, const char* op);

// The out= / in-place tail of ops that compute a fresh result first: prepare_out(out, ...) for
// `result`'s shape, then out = result (nothing when they are the same tensor). Returns out.
at::Tensor& write_out(const at::Tensor& result, at::Tensor& out, const char* op);

// dst = src on the device with libmlu copy_strided (any strides and dtypes, src broadcast to
// dst's dims) inside `op`'s scope; nothing for an empty dst.
void copy_into(OpScope& op, const at::Tensor& src, const at::Tensor& dst);

// float64 on a device whose VFU computes no fp64 (as int64 is narrowed to int32): `t` (float64)
// copied to float32 on the device, with a range check: a finite value beyond float32's range (it
// would become inf) raises a ValueError naming `op`. Precision is then float32's (relative 6e-8;
// magnitudes below 1.4e-45 become 0). Ops that take float64 this way compute in float32 and write
// the result back as float64.
at::Tensor narrow_float64(const at::Tensor& t, const char* op);

// One libmlu elementwise program (fused_ops.cpp: the format of torch.ops.mlu.elementwise) over the
// broadcast inputs: one streaming VFU kernel, the result in torch's dtype for the chain. Ops that
// are a short chain of elementwise steps (program_ops.cpp) compute through it.
at::Tensor run_elementwise_program(at::TensorList inputs, c10::string_view program);

}  // namespace mlusim::bridge::ops
