// Enqueueing kernels on the handle's queue, and choosing launch shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <cnrt.h>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu {

// Enqueues `body` (run once per task on the simulated cores) on h's queue through the driver.
// A refused launch returns kExecutionFailed with the cnrt error in the detail; kernel faults
// surface later, at the queue's sync (as cnrtErrorKernelTrap), like any asynchronous error.
Status launch(Handle& h, const std::string& name, std::function<void()> body, cnrtDim3_t dim, cnrtFunctionType_t type);

// BLOCK launch with one task per core, or fewer when there are fewer work items.
cnrtDim3_t block_dim(const Handle& h, std::uint64_t work_items);

// Appends the op's record: theoretical MACs and minimum DRAM bytes, and its kernel count.
void record(Handle& h, const char* op, std::uint64_t macs, std::uint64_t bytes, std::uint32_t kernels);

}  // namespace mlusim::mlu
