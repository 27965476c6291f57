// Copies and memsets: pointer/direction validation shared by the synchronous and asynchronous
// forms, then one op on a queue (synchronous forms: the device's default queue, then wait).
#include <cstring>

#include "api_support.h"
#include "host_range.h"

using namespace mlusim::driver;
namespace sim = mlusim::sim;

namespace {

constexpr std::uintptr_t kLowestHostAddress = 4096;  // the NULL page: never a valid host buffer

const char* dir_name(long long dir) {
  switch (dir) {
    case cnrtMemcpyHostToDev: return "cnrtMemcpyHostToDev";
    case cnrtMemcpyDevToDev: return "cnrtMemcpyDevToDev";
    case cnrtMemcpyDevToHost: return "cnrtMemcpyDevToHost";
    case cnrtMemcpyHostToHost: return "cnrtMemcpyHostToHost";
    case cnrtMemcpyPeerToPeer: return "cnrtMemcpyPeerToPeer";
    case cnrtMemcpyNoDirection: return "cnrtMemcpyNoDirection";
    default: return "?";
  }
}

bool overlap(std::uintptr_t a, std::uintptr_t b, std::size_t n) { return a < b + n && b < a + n; }

std::string range_text(const void* p, std::size_t bytes) { return "[" + hex_address(p) + ", +" + std::to_string(bytes) + ")"; }

// Checks one pointer of a copy; mu held.
cnrtRet_t check_pointer(Runtime& rt, HostThread& t, const std::string& fn, const char* role, const void* p,
                        std::size_t bytes, PointerClass* out) {
  if (p == nullptr) return t.fail(cnrtErrorArgsInvalid, fn + ": " + role + " is NULL");
  *out = rt.classify(p, bytes);
  if (out->kind == PointerClass::kBadDevice)
    return t.fail(cnrtErrorArgsInvalid, fn + ": " + role + " range " + range_text(p, bytes) +
                                            " is not inside a live allocation of mlu" + std::to_string(out->device) +
                                            " (freed, never allocated, or past the end of its allocation)");
  if (out->kind == PointerClass::kHost &&
      (reinterpret_cast<std::uintptr_t>(p) < kLowestHostAddress || !host_range_mapped(p, bytes)))
    return t.fail(cnrtErrorArgsInvalid, fn + ": " + role + " " + range_text(p, bytes) + " is not mapped host memory");
  return cnrtSuccess;
}

// Validates a copy of bytes (> 0) and builds its op (nullptr op: nothing to do). mu held.
cnrtRet_t plan_copy(Runtime& rt, HostThread& t, const std::string& fn, void* dst, const void* src, std::size_t bytes,
                    long long dir, OpPtr* out) {
  *out = nullptr;
  if (dir < cnrtMemcpyHostToDev || dir > cnrtMemcpyNoDirection)
    return t.fail(cnrtErrorMemcpyDirectionInvalid, fn + ": direction " + std::to_string(dir) + " is not a cnrtMemTransDir_t value");
  if (bytes == 0) return cnrtSuccess;
  PointerClass d, s;
  if (cnrtRet_t r = check_pointer(rt, t, fn, "destination", dst, bytes, &d); r != cnrtSuccess) return r;
  if (cnrtRet_t r = check_pointer(rt, t, fn, "source", src, bytes, &s); r != cnrtSuccess) return r;
  const bool dst_dev = d.kind == PointerClass::kDevice, src_dev = s.kind == PointerClass::kDevice;
  auto mismatch = [&](const char* wants) {
    return t.fail(cnrtErrorMemcpyDirectionInvalid, fn + ": " + dir_name(dir) + " needs " + wants + ", got a " +
                                                       (src_dev ? "device" : "host") + " source and a " +
                                                       (dst_dev ? "device" : "host") + " destination");
  };
  switch (dir) {
    case cnrtMemcpyHostToDev:
      if (src_dev || !dst_dev) return mismatch("a host source and a device destination");
      break;
    case cnrtMemcpyDevToHost:
      if (!src_dev || dst_dev) return mismatch("a device source and a host destination");
      break;
    case cnrtMemcpyHostToHost:
      if (src_dev || dst_dev) return mismatch("host source and destination");
      break;
    case cnrtMemcpyDevToDev:
    case cnrtMemcpyPeerToPeer:
      if (!src_dev || !dst_dev) return mismatch("device source and destination");
      break;
    default: break;  // NoDirection: inferred below
  }
  const auto da = reinterpret_cast<std::uintptr_t>(dst), sa = reinterpret_cast<std::uintptr_t>(src);
  const bool same_space = dst_dev == src_dev && (!dst_dev || d.device == s.device);
  if (same_space && overlap(da, sa, bytes))
    return t.fail(cnrtErrorArgsInvalid, fn + ": source " + range_text(src, bytes) + " and destination " + range_text(dst, bytes) + " overlap");

  auto op = std::make_shared<Op>();
  op->copy.bytes = bytes;
  const std::string size = std::to_string(bytes) + " B";
  if (!src_dev && !dst_dev) {
    op->kind = OpKind::kHostToHost;
    op->host_dst = dst;
    op->host_src = src;
    op->bytes = bytes;
    op->device = t.device;
    op->label = "memcpy HtoH " + size;
  } else if (!src_dev) {
    op->kind = OpKind::kCopy;
    op->device = d.device;
    op->copy.kind = sim::HostCopy::Kind::kHostToDevice;
    op->copy.device_dst = da;
    op->copy.host_src = src;
    op->copy.pinned = rt.pinned().contains(src, bytes);
    op->label = std::string("memcpy HtoD ") + size + (op->copy.pinned ? " pinned" : " pageable");
  } else if (!dst_dev) {
    op->kind = OpKind::kCopy;
    op->device = s.device;
    op->copy.kind = sim::HostCopy::Kind::kDeviceToHost;
    op->copy.device_src = sa;
    op->copy.host_dst = dst;
    op->copy.pinned = rt.pinned().contains(dst, bytes);
    op->label = std::string("memcpy DtoH ") + size + (op->copy.pinned ? " pinned" : " pageable");
  } else if (d.device == s.device) {
    op->kind = OpKind::kCopy;
    op->device = s.device;
    op->copy.kind = sim::HostCopy::Kind::kDeviceToDevice;
    op->copy.device_src = sa;
    op->copy.device_dst = da;
    op->label = "memcpy DtoD " + size;
  } else {
    op->kind = OpKind::kPeerCopy;
    op->device = s.device;
    op->peer_device = d.device;
    op->copy.device_src = sa;
    op->peer_dst = da;
    op->label = "memcpy peer mlu" + std::to_string(s.device) + "->mlu" + std::to_string(d.device) + " " + size;
  }
  op->copy.label = op->label;
  *out = op;
  return cnrtSuccess;
}

// Enqueues `op` on `q` and, for a synchronous call, waits and reports the queue's fault. mu held.
cnrtRet_t enqueue(Runtime& rt, HostThread& t, std::unique_lock<std::mutex>& lk, const std::string& fn, const OpPtr& op,
                  const QueuePtr& q, bool synchronous) {
  rt.submit(op, q, t);
  if (!synchronous) return cnrtSuccess;
  rt.wait(lk, {op}, t, fn.c_str());
  std::string message;
  const cnrtRet_t fault = rt.take_fault(*q, &message);
  if (fault != cnrtSuccess)
    return t.fail(fault, fn + ": an earlier kernel on the default queue of mlu" + std::to_string(q->device) + " faulted: " + message);
  return cnrtSuccess;
}

cnrtRet_t memcpy_async(const char* fn, void* dst, void* src, size_t bytes, cnrtQueue_t queue, long long dir) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    QueuePtr q = rt.find_queue(queue, t);
    if (!q) return t.fail(cnrtErrorInvalidResourceHandle, std::string(fn) + ": queue " + hex_address(queue) + " is not a live queue");
    OpPtr op;
    if (cnrtRet_t r = plan_copy(rt, t, fn, dst, src, bytes, dir, &op); r != cnrtSuccess || !op) return r;
    return enqueue(rt, t, lk, fn, op, q, false);
  });
}

cnrtRet_t memcpy_peer(const char* fn, void* dst, int dstDev, void* src, int srcDev, size_t bytes, cnrtQueue_t queue,
                      bool synchronous) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    const std::string name = fn;
    std::unique_lock<std::mutex> lk(rt.mu);
    const int n = rt.device_count();
    if (dstDev < 0 || dstDev >= n || srcDev < 0 || srcDev >= n)
      return t.fail(cnrtErrorDeviceInvalid, name + ": device " + std::to_string(srcDev) + " or " + std::to_string(dstDev) +
                                                " does not exist (" + std::to_string(n) + " devices)");
    QueuePtr q;
    if (synchronous) {
      q = rt.device(srcDev).default_queue;
    } else {
      q = rt.find_queue(queue, t);
      if (!q) return t.fail(cnrtErrorInvalidResourceHandle, name + ": queue " + hex_address(queue) + " is not a live queue");
    }
    if (bytes == 0) return cnrtSuccess;
    if (dst == nullptr || src == nullptr) return t.fail(cnrtErrorArgsInvalid, name + ": dst or src is NULL");
    const PointerClass s = rt.classify(src, bytes), d = rt.classify(dst, bytes);
    if (s.kind != PointerClass::kDevice || s.device != srcDev)
      return t.fail(cnrtErrorArgsInvalid, name + ": source " + range_text(src, bytes) + " is not inside a live allocation of mlu" +
                                              std::to_string(srcDev));
    if (d.kind != PointerClass::kDevice || d.device != dstDev)
      return t.fail(cnrtErrorArgsInvalid, name + ": destination " + range_text(dst, bytes) + " is not inside a live allocation of mlu" +
                                              std::to_string(dstDev));
    OpPtr op;
    if (cnrtRet_t r = plan_copy(rt, t, name, dst, src, bytes, cnrtMemcpyPeerToPeer, &op); r != cnrtSuccess || !op) return r;
    return enqueue(rt, t, lk, name, op, q, synchronous);
  });
}

cnrtRet_t memset_impl(const char* fn, void* ptr, int value, size_t bytes, cnrtQueue_t queue, bool synchronous) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    const std::string name = fn;
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, fn);
    QueuePtr q;
    if (!synchronous) {
      q = rt.find_queue(queue, t);
      if (!q) return t.fail(cnrtErrorInvalidResourceHandle, name + ": queue " + hex_address(queue) + " is not a live queue");
    }
    if (bytes == 0) return cnrtSuccess;
    if (ptr == nullptr) return t.fail(cnrtErrorArgsInvalid, name + ": ptr is NULL");
    const PointerClass c = rt.classify(ptr, bytes);
    if (c.kind != PointerClass::kDevice)
      return t.fail(cnrtErrorArgsInvalid, name + ": range " + range_text(ptr, bytes) +
                                              " is not inside a live device allocation (freed, never allocated, past its end, or host memory)");
    if (synchronous) q = rt.device(c.device).default_queue;
    auto op = std::make_shared<Op>();
    op->kind = OpKind::kCopy;
    op->device = c.device;
    op->copy.kind = sim::HostCopy::Kind::kMemset;
    op->copy.device_dst = reinterpret_cast<std::uint64_t>(ptr);
    op->copy.bytes = bytes;
    op->copy.memset_value = value;
    op->label = "memset " + std::to_string(bytes) + " B";
    op->copy.label = op->label;
    return enqueue(rt, t, lk, name, op, q, synchronous);
  });
}

}  // namespace

extern "C" {

cnrtRet_t cnrtMemcpy(void* dst, void* src, size_t bytes, cnrtMemTransDir_t dir) {
  return api_call(HostCost::kApiCall, [&](Runtime& rt, HostThread& t) {
    std::unique_lock<std::mutex> lk(rt.mu);
    if (no_device(rt)) return fail_no_device(t, "cnrtMemcpy");
    OpPtr op;
    if (cnrtRet_t r = plan_copy(rt, t, "cnrtMemcpy", dst, src, bytes, raw_enum(dir), &op); r != cnrtSuccess || !op) return r;
    if (op->kind == OpKind::kHostToHost) {  // plain host memory: the calling thread copies
      lk.unlock();
      std::memmove(dst, src, bytes);
      return cnrtSuccess;
    }
    return enqueue(rt, t, lk, "cnrtMemcpy", op, rt.device(op->device).default_queue, true);
  });
}

cnrtRet_t cnrtMemcpyAsync(void* dst, void* src, size_t bytes, cnrtQueue_t queue, cnrtMemTransDir_t dir) {
  return memcpy_async("cnrtMemcpyAsync", dst, src, bytes, queue, raw_enum(dir));
}
cnrtRet_t cnrtMemcpyAsync_V2(void* dst, void* src, size_t bytes, cnrtQueue_t queue, cnrtMemTransDir_t dir) {
  return memcpy_async("cnrtMemcpyAsync_V2", dst, src, bytes, queue, raw_enum(dir));
}
cnrtRet_t cnrtMemcpyAsync_V3(void* dst, void* src, size_t bytes, cnrtQueue_t queue, cnrtMemTransDir_t dir) {
  return memcpy_async("cnrtMemcpyAsync_V3", dst, src, bytes, queue, raw_enum(dir));
}

cnrtRet_t cnrtMemcpyPeer(void* dst, int dstDev, void* src, int srcDev, size_t bytes) {
  return memcpy_peer("cnrtMemcpyPeer", dst, dstDev, src, srcDev, bytes, nullptr, true);
}
cnrtRet_t cnrtMemcpyPeerAsync(void* dst, int dstDev, void* src, int srcDev, size_t bytes, cnrtQueue_t queue) {
  return memcpy_peer("cnrtMemcpyPeerAsync", dst, dstDev, src, srcDev, bytes, queue, false);
}

cnrtRet_t cnrtMemset(void* ptr, int value, size_t bytes) {
  return memset_impl("cnrtMemset", ptr, value, bytes, nullptr, true);
}
cnrtRet_t cnrtMemsetAsync(void* ptr, int value, size_t bytes, cnrtQueue_t queue) {
  return memset_impl("cnrtMemsetAsync", ptr, value, bytes, queue, false);
}

}  // extern "C"
