#include "common/launch.h"

#include <algorithm>

#include <mlusim_ext.h>

#include "common/error.h"

namespace mlusim::mlu {

Status launch(Handle& h, const std::string& name, std::function<void()> body, cnrtDim3_t dim, cnrtFunctionType_t type) {
  const cnrtRet_t r = driver::invoke_kernel_body(name, std::move(body), dim, type, h.queue());
  MLU_CHECK(r == cnrtSuccess, Status::kExecutionFailed,
            name + ": launch refused: " + cnrtGetErrorName(r) + " (" + cnrtGetErrorStr(r) + ")");
  return Status::kSuccess;
}

cnrtDim3_t block_dim(const Handle& h, std::uint64_t work_items) {
  const std::uint64_t tasks = std::clamp<std::uint64_t>(work_items, 1, h.total_cores());
  return cnrtDim3_t{static_cast<unsigned>(tasks), 1, 1};
}

void record(Handle& h, const char* op, std::uint64_t macs, std::uint64_t bytes, std::uint32_t kernels) {
  h.record_op(OpRecord{op, macs, bytes, kernels});
}

}  // namespace mlusim::mlu
