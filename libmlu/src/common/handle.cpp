#include "mlusim/mlu/handle.h"

#include "common/error.h"

namespace mlusim::mlu {

Status Handle::create(Handle** out) {
  MLU_CHECK(out != nullptr, Status::kBadParam, "create handle: output pointer is null");
  int dev = 0;
  cnrtRet_t r = cnrtGetDevice(&dev);
  MLU_CHECK(r == cnrtSuccess, Status::kExecutionFailed, std::string("create handle: cnrtGetDevice: ") + cnrtGetErrorStr(r));
  cnrtDeviceProp_t prop{};
  r = cnrtGetDeviceProperties(&prop, dev);
  MLU_CHECK(r == cnrtSuccess, Status::kExecutionFailed,
            std::string("create handle: cnrtGetDeviceProperties: ") + cnrtGetErrorStr(r));
  auto* h = new Handle();
  h->device_ = dev;
  h->nram_bytes_ = static_cast<std::uint64_t>(prop.NramSizePerMcore);
  h->wram_bytes_ = static_cast<std::uint64_t>(prop.WramSizePerMcore);
  h->sram_bytes_ = static_cast<std::uint64_t>(prop.SramSizePerMcore);
  h->clusters_ = static_cast<std::uint32_t>(prop.clusterCount);
  h->cores_per_cluster_ = static_cast<std::uint32_t>(prop.McorePerCluster);
  *out = h;
  return Status::kSuccess;
}

Status Handle::destroy(Handle* handle) {
  MLU_CHECK(handle != nullptr, Status::kNotInitialized, "destroy handle: handle is null");
  delete handle;
  return Status::kSuccess;
}

Status Handle::set_queue(cnrtQueue_t queue) {
  queue_ = queue;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
