// Execution control: kernel launches (registered kernels and C++ bodies) and host functions.
#include <climits>
#include <cmath>
#include <string>

#include "api_support.h"
#include "host_range.h"
#include "kernel_registry.h"
#include "mlusim/sim/kernel_api.h"

using namespace mlusim::driver;
namespace sim = mlusim::sim;

namespace {

// The launch checks of sim's scheduler, done here so a bad launch is an error code at the call
// (the simulation thread never sees a launch the device would reject). mu held.
cnrtRet_t check_launch(Runtime& rt, HostThread& t, const std::string& fn, int device, cnrtDim3_t dim, long long type) {
  const sim::HardwareConfig& c = rt.config();
  const std::string d = "{" + std::to_string(dim.x) + "," + std::to_string(dim.y) + "," + std::to_string(dim.z) + "}";
  if (dim.x == 0 || dim.y == 0 || dim.z == 0) return t.fail(cnrtErrorArgsInvalid, fn + ": dim " + d + " has a zero component");
  if (dim.x > static_cast<unsigned>(INT_MAX) || dim.y > 65535u || dim.z > 65535u)
    return t.fail(cnrtErrorArgsInvalid, fn + ": dim " + d + " exceeds maxDim {2147483647,65535,65535}");
  if (std::uint64_t{dim.x} * dim.y * dim.z > 0xFFFFFFFFull)
    return t.fail(cnrtErrorArgsInvalid, fn + ": dim " + d + " has more than 2^32-1 tasks");
  if (type == cnrtFuncTypeBlock) return cnrtSuccess;
  std::uint32_t clusters = 0;
  switch (type) {
    case cnrtFuncTypeUnion1: clusters = 1; break;
    case cnrtFuncTypeUnion2: clusters = 2; break;
    case cnrtFuncTypeUnion4: clusters = 4; break;
    case cnrtFuncTypeUnion8: clusters = 8; break;
    case cnrtFuncTypeUnion16: clusters = 16; break;
    default:
      return t.fail(cnrtErrorArgsInvalid, fn + ": function type " + std::to_string(type) +
                                              " is not cnrtFuncTypeBlock or cnrtFuncTypeUnion1/2/4/8/16");
  }
  if (clusters > c.clusters)
    return t.fail(cnrtErrorArgsInvalid, fn + ": UNION" + std::to_string(clusters) + " needs " + std::to_string(clusters) +
                                            " clusters but mlu" + std::to_string(device) + " has " + std::to_string(c.clusters));
  const std::uint64_t group = std::uint64_t{clusters} * c.cores_per_cluster;
  if (dim.x % group != 0)
    return t.fail(cnrtErrorArgsInvalid, fn + ": UNION" + std::to_string(clusters) + " needs dim.x to be a multiple of " +
                                            std::to_string(group) + " (got " + std::to_string(dim.x) + ")");
  return cnrtSuccess;
}

cnrtRet_t launch(Runtime& rt, HostThread& t, const std::string& fn, const std::string& name, std::function<void()> body,
                 cnrtDim3_t dim, long long type, cnrtQueue_t queue) {
  std::lock_guard<std::mutex> lk(rt.mu);
  if (no_device(rt)) return fail_no_device(t, fn.c_str());
  QueuePtr q = rt.find_queue(queue, t);
  if (!q) return t.fail(cnrtErrorInvalidResourceHandle, fn + ": queue " + hex_address(queue) + " is not a live queue");
  if (cnrtRet_t r = check_launch(rt, t, fn, q->device, dim, type); r != cnrtSuccess) return r;
  std::uint64_t& countdown = rt.device(q->device).kernel_fault_countdown;
  if (countdown > 0 && --countdown == 0)  // armed by mlusimInjectKernelFault: this launch traps on every core
    body = [] { mlusim::dev::trap("injected kernel fault (mlusimInjectKernelFault)"); };
  auto op = std::make_shared<Op>();
  op->kind = OpKind::kKernel;
  op->device = q->device;
  op->label = name;
  op->launch = sim::KernelLaunch{name, std::move(body), sim::Dim3{dim.x, dim.y, dim.z}, static_cast<sim::FunctionType>(type), t.launch_tag};
  rt.submit(op, q, t);
  return cnrtSuccess;
}

}  // namespace

namespace mlusim::driver {

cnrtRet_t invoke_kernel_body(const std::string& name, std::function<void()> body, cnrtDim3_t dim, cnrtFunctionType_t type,
                             cnrtQueue_t queue) {
  return api_call(HostCost::kLaunch, [&](Runtime& rt, HostThread& t) {
    if (!body) return t.fail(cnrtErrorArgsInvalid, "invoke_kernel_body: empty kernel body");
    if (name.empty()) return t.fail(cnrtErrorArgsInvalid, "invoke_kernel_body: empty kernel name");
    return launch(rt, t, "invoke_kernel_body", name, std::move(body), dim, raw_enum(type), queue);
  });
}

}  // namespace mlusim::driver

extern "C" {

cnrtRet_t cnrtInvokeKernel(const void* kernel, cnrtDim3_t dim, cnrtFunctionType_t ktype, void** args, size_t reserved,
                           cnrtQueue_t queue) {
  (void)reserved;
  return api_call(HostCost::kLaunch, [&](Runtime& rt, HostThread& t) {
    if (kernel == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtInvokeKernel: kernel is NULL");
    const std::optional<RegisteredKernel> k = KernelRegistry::instance().find(kernel);
    if (!k)
      return t.fail(cnrtErrorInvalidKernel, "cnrtInvokeKernel: " + hex_address(kernel) +
                                                " is not a registered kernel (define kernels with MLUSIM_KERNEL)");
    if (k->arity > 0) {
      if (args == nullptr)
        return t.fail(cnrtErrorArgsInvalid, "cnrtInvokeKernel: kernel '" + k->name + "' takes " + std::to_string(k->arity) +
                                                " arguments but args is NULL");
      if (!host_range_mapped(args, k->arity * sizeof(void*)))
        return t.fail(cnrtErrorArgsInvalid, "cnrtInvokeKernel: args " + hex_address(args) + " is not mapped host memory");
      for (std::size_t i = 0; i < k->arity; ++i)
        if (args[i] == nullptr || !host_range_mapped(args[i], 1))
          return t.fail(cnrtErrorArgsInvalid, "cnrtInvokeKernel: kernel '" + k->name + "': args[" + std::to_string(i) + "] " +
                                                  hex_address(args[i]) + " is NULL or not mapped host memory");
    }
    std::function<void()> body = k->binder(args);  // copies the argument values now
    return launch(rt, t, "cnrtInvokeKernel", k->name, std::move(body), dim, raw_enum(ktype), queue);
  });
}

cnrtRet_t cnrtInvokeHostFunc(cnrtQueue_t queue, cnrtHostFn_t fn, void* userData) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    if (fn == nullptr) return t.fail(cnrtErrorArgsInvalid, "cnrtInvokeHostFunc: fn is NULL");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtInvokeHostFunc");
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return t.fail(cnrtErrorInvalidResourceHandle, "cnrtInvokeHostFunc: queue " + hex_address(queue) + " is not a live queue");
    auto op = std::make_shared<Op>();
    op->kind = OpKind::kHostFunc;
    op->device = q->device;
    op->fn = fn;
    op->user_data = userData;
    op->label = "host function";
    rt.submit(op, q, t);
    return cnrtSuccess;
  });
}

cnrtRet_t mlusimQueueWaitUntil(cnrtQueue_t queue, double ns, const char* name) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    const char* fn = "mlusimQueueWaitUntil";
    if (!(ns >= 0) || !std::isfinite(ns))
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": ns must be finite and >= 0, got " + std::to_string(ns));
    if (name == nullptr || *name == '\0') return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": name is NULL or empty");
    std::lock_guard<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return t.fail(cnrtErrorInvalidResourceHandle, std::string(fn) + ": queue " + hex_address(queue) + " is not a live queue");
    auto op = std::make_shared<Op>();
    op->kind = OpKind::kWaitUntil;
    op->device = q->device;
    op->until = sim::add_ps(rt.epoch(), sim::ceil_ps(ns * 1000.0, "mlusimQueueWaitUntil ns"), "mlusimQueueWaitUntil time");
    op->label = std::string(name).substr(0, 127);
    rt.submit(op, q, t);
    return cnrtSuccess;
  });
}

}  // extern "C"
