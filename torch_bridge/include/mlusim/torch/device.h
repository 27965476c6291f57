// What ATen kernels of the bridge (and of the libmlu op follow-up) use: c10 streams <-> CNRT
// queues, the current queue, the allocators, and turning CNRT failures into c10 errors.
// Includes c10 and ATen/core headers only (cheap).
//
// Kernel checklist: put a c10::DeviceGuard on the output's device (the dispatcher does not do it
// for out-of-tree backends; CNRT's NULL queue is the *current* device's default queue), enqueue
// work on current_queue(), allocate through the device allocator (at::empty / empty_strided).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>
#include <c10/util/Exception.h>
#include <ATen/core/Generator.h>

#include <optional>
#include <utility>

#include <cnrt.h>

namespace mlusim::bridge {

constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;

// The CNRT queue of a PrivateUse1 stream (created on first use; NULL for the default stream).
cnrtQueue_t queue_of(const c10::Stream& stream);
c10::Stream current_stream(int device = -1);
cnrtQueue_t current_queue(int device = -1);

// Runs `f`, turning the std exceptions api.h's calls throw into c10::Error, which torch's callers
// expect (c10::Errors pass through unchanged).
template <typename F>
auto with_torch_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, e.what());
  }
}

// Throws c10::Error: "<what> failed: <cnrt error name>: <driver message>".
[[noreturn]] void throw_cnrt_error(cnrtRet_t ret, const char* what);
inline void check_cnrt(cnrtRet_t ret, const char* what) {
  if (ret != cnrtSuccess) throw_cnrt_error(ret, what);
}

// The caching device allocator (also registered with c10::SetAllocator for PrivateUse1) and the
// pinned host allocator (cnrtHostMalloc; CPU tensors whose copies use the pinned host-link rate).
c10::Allocator* device_allocator();
c10::Allocator* pinned_host_allocator();
bool is_pinned_host_pointer(const void* ptr);

// The default generator of `device` (-1: current), as torch's hooks hand it out, and a new one
// (torch.Generator(device="mlu")).
const at::Generator& default_generator(int device = -1);
at::Generator new_generator(int device = -1);
// Reserves `count` random numbers from `gen`, or from the default generator of `device` when gen
// is empty or undefined: {seed, first offset}. c10::Error for a generator of another device type.
std::pair<std::uint64_t, std::uint64_t> reserve_random(const std::optional<at::Generator>& gen, int device,
                                                       std::uint64_t count);

// Grows or shrinks a device storage to `size` bytes, keeping min(old, new) bytes of its contents
// (CUDA's resize_bytes_cuda; storage.resize_ reaches it through the hooks).
void resize_storage_bytes(c10::StorageImpl* storage, std::size_t size);

// The block behind `data_ptr` is also used on `stream` (torch's record_stream).
void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream);

}  // namespace mlusim::bridge
