#include "kernel_registry.h"

#include <utility>

namespace mlusim::driver {

KernelRegistry& KernelRegistry::instance() {
  // Never destroyed: kernels may be looked up while other static objects are torn down.
  static KernelRegistry* registry = new KernelRegistry();
  return *registry;
}

void KernelRegistry::add(const void* handle, RegisteredKernel kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  kernels_[handle] = std::move(kernel);
}

std::optional<RegisteredKernel> KernelRegistry::find(const void* handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(handle);
  if (it == kernels_.end()) return std::nullopt;
  return it->second;
}

bool register_kernel(const void* handle, const char* name, std::size_t arity, KernelBinder binder) {
  KernelRegistry::instance().add(handle, RegisteredKernel{name ? name : "kernel", arity, std::move(binder)});
  return true;
}

}  // namespace mlusim::driver
