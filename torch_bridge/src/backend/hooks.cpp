// at::PrivateUse1HooksInterface for the MLU (CUDA twin: aten/src/ATen/cuda/detail/CUDAHooks.cpp;
// OpenReg: csrc/runtime/OpenRegHooks.cpp). What torch asks of a device outside the dispatcher:
// availability, device management (torch.accelerator.*), default and new generators
// (torch.Generator(device="mlu"), torch.manual_seed), pinned host memory (Tensor.pin_memory(),
// DataLoader(pin_memory=True)), which device a pointer lives on (torch.from_blob / DLPack) and
// storage resizing (UntypedStorage.resize_). Registered when libmlusim_torch.so loads.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>
#include <mlusim_ext.h>

#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

struct MluHooks final : public at::PrivateUse1HooksInterface {
  void init() const override { ensure_started(); }
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  // The driver's runtime holds every device's context from its start.
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < device_count();
  }

  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    with_torch_errors([&] { set_device(device); });
  }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(current_device()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex old = getCurrentDevice();
    if (device >= 0 && device != old) setCurrentDevice(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override { return new_generator(device_index); }

  // A device pointer (interior ones too) names its device; anything else is an error, as CUDA's.
  at::Device getDeviceFromPtr(void* data) const override {
    ensure_started();
    cnrtPointerAttributes_t attr{};
    const cnrtRet_t ret = cnrtPointerGetAttributes(&attr, data);
    if (ret != cnrtSuccess) throw_cnrt_error(ret, "cnrtPointerGetAttributes");
    TORCH_CHECK(attr.type == cnrtMemTypeDevice && attr.device >= 0, "pointer ", data,
                " is not MLU device memory (no live cnrtMalloc allocation contains it)");
    return {kDeviceType, static_cast<c10::DeviceIndex>(attr.device)};
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_host_pointer(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_host_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, std::size_t newsize) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), newsize);
  }
};

// Registered at load time (the hooks object lives for the whole process, as torch requires), with
// the device name: C++ programs (the mlusim CLI, libtorch users) see "mlu" as Python does, and
// at::getAccelerator() (autograd's engine asks it) finds the device without Python's rename.
const bool g_registered = [] {
  c10::register_privateuse1_backend("mlu");
  at::RegisterPrivateUse1HooksInterface(new MluHooks());
  return true;
}();

}  // namespace
}  // namespace mlusim::bridge
