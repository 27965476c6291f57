// ATen kernels that need no operator library: tensor creation, copies (host <-> device through
// the host link, device <-> device), views and metadata, resize/set_, item(), zero/fill by
// memset, pinned memory, record_stream. CUDA twins: aten/src/ATen/native/cuda/Copy.cu,
// Resize.cpp, TensorFactories.cu, Memory (pin_memory), RecordStream.cu.
//
// Views are at::native's device-independent implementations registered for PrivateUse1, so a
// view shares its base's storage (a boxed CPU fallback would return copies).
//
// Copies mirror CUDA's copy_kernel_cuda: host data is staged on the host (dtype conversion,
// layout) and moves in one transfer; device data never goes through a CPU operator. A device
// copy that is not a plain memcpy (different dtype or layout) is libmlu's copy_strided kernel
// (device_copy_strided() below, ops/copy_kernels.h).
#include <cstring>

#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "backend/host_ops.h"
#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"
#include "ops/copy_kernels.h"

namespace mlusim::bridge {
namespace {

using at::IntArrayRef;
using at::Tensor;

std::size_t nbytes(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.is_non_overlapping_and_dense();
}

bool is_device(const Tensor& t) { return t.device().type() == kDeviceType; }

// Waits for the queue: blocking copies return with the data in place (host memory reusable).
void sync(cnrtQueue_t q) { check_cnrt(cnrtQueueSync(q), "cnrtQueueSync"); }

// ---- device <-> device --------------------------------------------------------------------------

// dst = src on one device for any strides and dtypes (src broadcast to dst): libmlu copy_strided;
// complex data through the real views (a real source fills the real parts and zeroes the
// imaginary ones; a complex source into a real destination gives its real parts, as copy_ does).
void device_copy_strided(const Tensor& src, const Tensor& dst) {
  constexpr const char* kOp = "aten::_copy_from";
  if (dst.is_complex()) {
    const Tensor dst_pairs = at::native::view_as_real(dst);
    if (src.is_complex()) return ops::copy_strided_kernel(at::native::view_as_real(src), dst_pairs, kOp);
    ops::copy_strided_kernel(src, dst_pairs.select(-1, 0), kOp);
    return ops::fill_kernel(dst_pairs.select(-1, 1), 0, kOp);
  }
  if (src.is_complex()) return ops::copy_strided_kernel(at::native::view_as_real(src).select(-1, 0), dst, kOp);
  ops::copy_strided_kernel(src, dst, kOp);
}

void device_to_device(const Tensor& src, const Tensor& dst, bool non_blocking) {
  if (src.device() == dst.device()) {
    const c10::DeviceGuard guard(dst.device());
    if (!same_layout(src, dst) || src.scalar_type() != dst.scalar_type()) return device_copy_strided(src, dst);
    if (src.data_ptr() == dst.data_ptr()) return;
    check_cnrt(cnrtMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(dst), current_queue(), cnrtMemcpyDevToDev),
               "cnrtMemcpyAsync (device to device)");
    return;
  }
  if (!same_layout(src, dst)) {
    // Different dtypes or layouts: convert/re-lay on the source device into a dense temporary with
    // dst's dtype and strides, then one peer copy; a destination with gaps gets the data dense on
    // its own device first and is scattered there.
    if (dst.is_non_overlapping_and_dense()) {
      const Tensor tmp = at::empty_strided(dst.sizes(), dst.strides(), dst.options().device(src.device()));
      device_copy_strided(src, tmp);
      return device_to_device(tmp, dst, non_blocking);
    }
    const Tensor tmp = at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
    device_to_device(src, tmp, non_blocking);
    return device_to_device(tmp, dst, non_blocking);
  }
  // The copy runs on the source device's current queue, after the work already queued on both
  // devices' current queues; the destination queue's later work waits for it (CUDA's order).
  const int src_dev = src.device().index(), dst_dev = dst.device().index();
  const std::int64_t src_q = current_queue_id(src_dev), dst_q = current_queue_id(dst_dev);
  const std::uintptr_t dst_ready = notifier_create(dst_dev, false);
  const std::uintptr_t copied = notifier_create(src_dev, false);
  try {
    notifier_record(dst_ready, dst_dev, dst_q);
    queue_wait_notifier(src_dev, src_q, dst_ready);
    {
      const c10::DeviceGuard guard(src.device());
      check_cnrt(cnrtMemcpyPeerAsync(dst.data_ptr(), dst_dev, src.data_ptr(), src_dev, nbytes(dst), current_queue()),
                 "cnrtMemcpyPeerAsync");
    }
    notifier_record(copied, src_dev, src_q);
    queue_wait_notifier(dst_dev, dst_q, copied);  // device copies are queue-ordered, never host-blocking
  } catch (const std::exception& e) {
    notifier_destroy(dst_ready);
    notifier_destroy(copied);
    C10_THROW_ERROR(Error, e.what());
  }
  notifier_destroy(dst_ready);  // a pending placement still completes (cnrtNotifierDestroy)
  notifier_destroy(copied);
}

// ---- host <-> device ----------------------------------------------------------------------------

void host_to_device(const Tensor& src, const Tensor& dst, bool non_blocking) {
  if (!dst.is_non_overlapping_and_dense()) {
    // Upload packed, then scatter on the device.
    Tensor tmp = at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
    host_to_device(src, tmp, false);
    return device_to_device(tmp, dst, non_blocking);
  }
  const c10::DeviceGuard guard(dst.device());
  cnrtQueue_t q = current_queue();
  const bool direct = same_layout(src, dst);
  const Tensor staged = direct ? src : host::stage(src, dst.sizes(), dst.strides(), dst.scalar_type());
  check_cnrt(cnrtMemcpyAsync(dst.data_ptr(), staged.data_ptr(), nbytes(dst), q, cnrtMemcpyHostToDev),
             "cnrtMemcpyAsync (host to device)");
  // Asynchronous only from pinned memory the caller owns (cnrtFreeHost waits for queued copies).
  if (!(non_blocking && direct && is_pinned_host_pointer(src.storage().data()))) sync(q);
}

void device_to_host(const Tensor& src, const Tensor& dst, bool non_blocking) {
  const c10::DeviceGuard guard(src.device());
  cnrtQueue_t q = current_queue();
  if (src.is_non_overlapping_and_dense()) {
    if (same_layout(src, dst)) {
      check_cnrt(cnrtMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(dst), q, cnrtMemcpyDevToHost),
                 "cnrtMemcpyAsync (device to host)");
      if (!(non_blocking && is_pinned_host_pointer(dst.storage().data()))) sync(q);
      return;
    }
    Tensor staged = host::empty_strided(src.sizes(), src.strides(), src.scalar_type());
    check_cnrt(cnrtMemcpyAsync(staged.data_ptr(), src.data_ptr(), nbytes(src), q, cnrtMemcpyDevToHost),
               "cnrtMemcpyAsync (device to host)");
    sync(q);
    return host::copy(dst, staged);
  }
  // A view with gaps (a slice, an expanded dim): download the storage span it covers and pick
  // the elements on the host. Strides are non-negative, so the span starts at data_ptr().
  std::int64_t last = 0;
  for (std::int64_t d = 0; d < src.dim(); ++d) last += (src.size(d) - 1) * src.stride(d);
  const std::int64_t span = last + 1;
  Tensor buffer = host::empty_strided({span}, {1}, src.scalar_type());
  check_cnrt(cnrtMemcpyAsync(buffer.data_ptr(), src.data_ptr(), static_cast<std::size_t>(span) * src.element_size(), q,
                             cnrtMemcpyDevToHost),
             "cnrtMemcpyAsync (device to host)");
  sync(q);
  host::copy(dst, host::view(buffer, src.sizes(), src.strides(), 0));
}

// The memory of `t` without its conjugate / negative view bits (the same storage and strides).
Tensor without_view_bits(const Tensor& t) {
  Tensor m = t.is_conj() ? t.conj() : t;  // conj() of a conjugate view clears the bit
  return m.is_neg() ? at::_neg_view(m) : m;
}

// dst = conj(dst) and/or dst = -dst on dst's memory (device kernels, or the CPU's for host data).
void apply_view_bits(const Tensor& dst, bool conj, bool neg) {
  if (is_device(dst)) {
    if (conj && dst.is_complex()) at::native::view_as_real(dst).select(-1, 1).neg_();
    if (neg) (dst.is_complex() ? at::native::view_as_real(dst) : dst).neg_();
    return;
  }
  if (conj) dst.conj_physical_();
  if (neg) dst.neg_();
}

Tensor mlu_copy_from(const Tensor& self, const Tensor& dst, bool non_blocking);

// _copy_from of tensors with view bits: copy the memory as it is, then apply to dst's memory the
// bits that differ (dst reads conj_d(mem_d) and must equal conj_s(mem_s)).
void copy_with_view_bits(const Tensor& self, const Tensor& dst, bool non_blocking) {
  const Tensor dst_mem = without_view_bits(dst);
  mlu_copy_from(without_view_bits(self), dst_mem, non_blocking && !is_device(dst));
  apply_view_bits(dst_mem, self.is_conj() != dst.is_conj() && self.is_complex(), self.is_neg() != dst.is_neg());
}

// _copy_from(self=src, dst): copy_ sends every copy that involves this device here.
Tensor mlu_copy_from(const Tensor& self, const Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.layout() == at::kStrided && dst.layout() == at::kStrided, "aten::_copy_from: only strided tensors "
              "can be copied to or from device mlu, got ", self.layout(), " and ", dst.layout());
  if (dst.numel() == 0) return dst;
  if (self.is_conj() || dst.is_conj() || self.is_neg() || dst.is_neg()) {
    copy_with_view_bits(self, dst, non_blocking);
    return dst;
  }
  if (is_device(self) && is_device(dst)) {
    // torch's copy_ rules (TensorIterator): a destination that overlaps itself or partly
    // overlaps the source is refused, before any memcpy could see the overlap.
    if (self.device() == dst.device() && !self.is_same(dst)) {
      at::assert_no_internal_overlap(dst);
      at::assert_no_partial_overlap(dst, self);
    }
    device_to_device(self.sizes() == dst.sizes() ? self : self.expand(dst.sizes()), dst, non_blocking);
  } else if (is_device(dst)) {
    host_to_device(self, dst, non_blocking);
  } else {
    TORCH_CHECK(is_device(self), "aten::_copy_from: neither tensor is on device mlu");
    device_to_host(self.sizes() == dst.sizes() ? self : self.expand(dst.sizes()), dst, non_blocking);
  }
  return dst;
}

Tensor mlu_copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return mlu_copy_from(self, dst, false);
}

// ---- creation --------------------------------------------------------------------------------------

void check_options(c10::optional<at::Layout> layout, c10::optional<bool> pin_memory) {
  TORCH_CHECK(!layout || *layout == at::kStrided, "device mlu supports strided tensors only, got ",
              *layout);
  TORCH_CHECK(!pin_memory || !*pin_memory, "pin_memory=True applies to CPU tensors, not to device mlu");
}

c10::Device target_device(c10::optional<c10::Device> device) {
  return device ? *device : c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(current_device()));
}

Tensor mlu_empty(IntArrayRef size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                 c10::optional<c10::Device> device, c10::optional<bool> pin_memory,
                 c10::optional<at::MemoryFormat> memory_format) {
  check_options(layout, pin_memory);
  const c10::DeviceGuard guard(target_device(device));
  return at::detail::empty_generic(size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

Tensor mlu_empty_strided(IntArrayRef size, IntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<c10::Device> device,
                         c10::optional<bool> pin_memory) {
  check_options(layout, pin_memory);
  const c10::DeviceGuard guard(target_device(device));
  return at::detail::empty_strided_generic(size, stride, device_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c10::dtype_or_default(dtype));
}

// _efficientzerotensor (autograd's "this gradient is zero", e.g. sgn of a real input): a tensor of
// the ZeroTensor dispatch key with no storage, as CUDA's; ATen's ZeroTensor fallback turns it into
// real zeros (at::zeros on the device) when an op without a ZeroTensor kernel reads it. The
// allocator hands out no memory, so nothing reads or writes through it.
class NoStorageAllocator final : public c10::Allocator {
 public:
  explicit NoStorageAllocator(c10::Device device) : device_(device) {}
  c10::DataPtr allocate(std::size_t /*bytes*/) override { return {nullptr, nullptr, &no_delete, device_}; }
  c10::DeleterFnPtr raw_deleter() const override { return &no_delete; }
  void copy_data(void* /*dest*/, const void* /*src*/, std::size_t count) const override {
    TORCH_CHECK(count == 0, "a zero tensor on device mlu has no storage to copy");
  }

 private:
  static void no_delete(void* /*ptr*/) {}
  c10::Device device_;
};

Tensor mlu_efficientzerotensor(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<c10::Device> device,
                               c10::optional<bool> pin_memory) {
  check_options(layout, pin_memory);
  const c10::Device target = target_device(device);
  NoStorageAllocator allocator(target);
  const c10::DispatchKeySet keys = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) |
                                   c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(C10_AS_INTARRAYREF_SLOW(size), &allocator, keys, c10::dtype_or_default(dtype),
                                   c10::nullopt);
}

// ---- resize and set_ ----------------------------------------------------------------------------------

void maybe_resize_storage(c10::TensorImpl* self, std::size_t new_size_bytes) {
  if (new_size_bytes == 0) return;
  const c10::Storage& storage = self->unsafe_storage();
  TORCH_CHECK(storage, "resize_: the tensor has no storage");
  if (new_size_bytes > storage.nbytes()) resize_storage_bytes(storage.unsafeGetStorageImpl(), new_size_bytes);
}

void resize_impl(c10::TensorImpl* self, IntArrayRef size, at::OptionalIntArrayRef stride) {
  if (self->sizes() == size && (!stride || self->strides() == *stride)) return;
  const auto itemsize = self->dtype().itemsize();
  const auto offset = static_cast<std::size_t>(self->storage_offset());
  std::size_t bytes = 0;
  if (stride) {
    self->set_sizes_and_strides(size, *stride);
    bytes = at::detail::computeStorageNbytes(size, *stride, itemsize, offset);
  } else {
    self->set_sizes_contiguous(size);
    bytes = at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  }
  maybe_resize_storage(self, bytes);
}

const Tensor& mlu_resize_(const Tensor& self, IntArrayRef size, c10::optional<at::MemoryFormat> memory_format) {
  for (const int64_t s : size) TORCH_CHECK(s >= 0, "resize_: negative size in ", size);
  resize_impl(self.unsafeGetTensorImpl(), size, c10::nullopt);
  if (memory_format) {
    TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve, "resize_: unsupported memory format ", *memory_format);
    self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  }
  return self;
}

Tensor& mlu_set_storage_(Tensor& self, c10::Storage source, int64_t storage_offset, IntArrayRef size,
                         IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  const at::OptionalIntArrayRef stride_opt = stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : c10::nullopt;
  resize_impl(self.unsafeGetTensorImpl(), size, stride_opt);
  return self;
}

Tensor& mlu_set_source_storage_(Tensor& self, c10::Storage source) {
  const auto n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return mlu_set_storage_(self, std::move(source), 0, {n}, {});
}

Tensor& mlu_set_source_tensor_(Tensor& self, const Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  return mlu_set_storage_(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

Tensor& mlu_set_empty_(Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return mlu_set_storage_(self, std::move(storage), 0, {0}, {});
}

// ---- scalars, fill ------------------------------------------------------------------------------------

at::Scalar mlu_local_scalar_dense(const Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: the tensor is empty");
  const c10::DeviceGuard guard(self.device());
  cnrtQueue_t q = current_queue();
  alignas(16) unsigned char buf[16] = {0};
  TORCH_INTERNAL_ASSERT(self.element_size() <= static_cast<int64_t>(sizeof buf));
  check_cnrt(cnrtMemcpyAsync(buf, self.data_ptr(), static_cast<std::size_t>(self.element_size()), q, cnrtMemcpyDevToHost),
             "cnrtMemcpyAsync (item)");
  sync(q);
  at::Scalar r;
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND4(at::kHalf, at::kBool, at::kBFloat16, at::kComplexHalf, self.scalar_type(),
                                         "_local_scalar_dense_mlu", [&] {
    scalar_t v;
    std::memcpy(&v, buf, sizeof v);
    r = at::Scalar(v);
  });
  return r;
}

// The byte every byte of `value` (as self's dtype) equals, if there is one: such fills are a
// cnrtMemset of the whole range.
bool byte_pattern(const at::Scalar& value, at::ScalarType dtype, int* pattern) {
  bool uniform = false;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBool, at::kBFloat16, dtype, "fill_mlu_pattern", [&] {
    const scalar_t v = value.to<scalar_t>();
    unsigned char bytes[sizeof(scalar_t)];
    std::memcpy(bytes, &v, sizeof v);
    uniform = true;
    for (std::size_t i = 1; i < sizeof v; ++i) uniform = uniform && bytes[i] == bytes[0];
    *pattern = bytes[0];
  });
  return uniform;
}

void memset_dense(const Tensor& self, int pattern) {
  const c10::DeviceGuard guard(self.device());
  check_cnrt(cnrtMemsetAsync(self.data_ptr(), pattern, nbytes(self), current_queue()), "cnrtMemsetAsync");
}

Tensor& mlu_zero_(Tensor& self) {
  if (self.numel() == 0) return self;
  if (self.is_non_overlapping_and_dense()) {
    memset_dense(self, 0);
    return self;
  }
  // A view with gaps: libmlu fill (complex: of its real view, all parts zero).
  ops::fill_kernel(self.is_complex() ? at::native::view_as_real(self) : self, 0, "aten::zero_");
  return self;
}

Tensor& mlu_fill_scalar_(Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) return self;
  if (self.is_complex()) {  // the real and imaginary parts, each a fill of the real view
    const c10::complex<double> v = value.toComplexDouble();
    if (v == c10::complex<double>(0.0, 0.0)) return mlu_zero_(self);
    const Tensor pairs = at::native::view_as_real(self);
    ops::fill_kernel(pairs.select(-1, 0), v.real(), "aten::fill_.Scalar");
    ops::fill_kernel(pairs.select(-1, 1), v.imag(), "aten::fill_.Scalar");
    return self;
  }
  int pattern = 0;
  if (self.is_non_overlapping_and_dense() && !self.is_complex() && byte_pattern(value, self.scalar_type(), &pattern)) {
    memset_dense(self, pattern);
    return self;
  }
  ops::fill_kernel(self, value, "aten::fill_.Scalar");  // libmlu fill (any strides and dtypes)
  return self;
}

// ---- pinned memory, streams -----------------------------------------------------------------------------

bool mlu_is_pinned(const Tensor& self, c10::optional<c10::Device> /*device*/) {
  return self.device().is_cpu() && is_pinned_host_pointer(self.storage().data());
}

// Whether `from` may replace `self`'s data in place (Tensor.data = ..., set_data). c10 lists the
// backends it considers compatible and PrivateUse1 is not among them, so without this kernel
// nn.Module.to("mlu") makes a new Parameter per module and unties shared weights (GPT-2's lm_head
// and token embedding). Dense strided CPU and MLU tensors are compatible, as CPU and CUDA are.
bool mlu_has_compatible_shallow_copy_type(const Tensor& self, const Tensor& from) {
  auto dense = [](const Tensor& t) {
    return t.layout() == at::kStrided && (t.device().is_cpu() || t.device().type() == kDeviceType);
  };
  if (dense(self) && dense(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

void mlu_record_stream(Tensor& self, c10::Stream stream) { record_stream(self.storage().data_ptr(), stream); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(mlu_empty));
  m.impl("empty_strided", TORCH_FN(mlu_empty_strided));
  m.impl("_efficientzerotensor", TORCH_FN(mlu_efficientzerotensor));
  m.impl("_copy_from", TORCH_FN(mlu_copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(mlu_copy_from_and_resize));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));
  m.impl("resize_", TORCH_FN(mlu_resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(mlu_set_storage_));
  m.impl("set_.source_Storage", TORCH_FN(mlu_set_source_storage_));
  m.impl("set_.source_Tensor", TORCH_FN(mlu_set_source_tensor_));
  m.impl("set_", TORCH_FN(mlu_set_empty_));
  m.impl("_local_scalar_dense", TORCH_FN(mlu_local_scalar_dense));
  m.impl("fill_.Scalar", TORCH_FN(mlu_fill_scalar_));
  m.impl("zero_", TORCH_FN(mlu_zero_));
  m.impl("record_stream", TORCH_FN(mlu_record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(mlu_has_compatible_shallow_copy_type));
}

// _copy_from resolves the conjugate and negative view bits itself (copy_with_view_bits). Without
// these, the Conjugate / Negative keys' fallbacks would materialise a conjugate source with clone(),
// whose copy_ comes back to _copy_from with the bit still set (copy_ itself falls through those
// keys), recursing without end.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

// Pinning CPU tensors goes through the hooks' pinned allocator (hooks.cpp); is_pinned of a device
// tensor is false, as CUDA's.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("is_pinned", TORCH_FN(mlu_is_pinned)); }

// ---- device.h ----------------------------------------------------------------------------------

// Grows the storage to `size` bytes, keeping its contents (CUDA's resize_bytes_cuda).
void resize_storage_bytes(c10::StorageImpl* storage, std::size_t size) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  const c10::DeviceGuard guard(storage->device());
  c10::DataPtr data = device_allocator()->allocate(size);
  const std::size_t keep = std::min(size, storage->nbytes());
  if (keep > 0 && storage->data())
    check_cnrt(cnrtMemcpyAsync(data.get(), const_cast<void*>(storage->data()), keep, current_queue(), cnrtMemcpyDevToDev),
               "cnrtMemcpyAsync (resize)");
  storage->set_data_ptr_noswap(std::move(data));
  storage->set_nbytes(size);
}


}  // namespace mlusim::bridge
