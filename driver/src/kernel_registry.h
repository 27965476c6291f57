// Kernels registered with MLUSIM_KERNEL (or register_kernel): handle -> name, arity, binder.
// Registration happens during static initialisation of the programs and libraries that define
// kernels, possibly before the runtime starts, so the registry is a separate, self-locking
// singleton.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "mlusim_ext.h"

namespace mlusim::driver {

struct RegisteredKernel {
  std::string name;
  std::size_t arity = 0;
  KernelBinder binder;
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(const void* handle, RegisteredKernel kernel);
  std::optional<RegisteredKernel> find(const void* handle) const;
  std::mutex& mutex() { return mu_; }  // for fork handlers

 private:
  mutable std::mutex mu_;
  std::unordered_map<const void*, RegisteredKernel> kernels_;
};

}  // namespace mlusim::driver
