// The reduction kernel of the collectives: dst[i] = dst[i] OP src[i] for i < count, both in the
// GDRAM of the queue's device.
//
// BLOCK launch, one task per compute core (fewer when there are fewer than 64 elements per core);
// task t owns a contiguous run. Per tile: two GDRAM->NRAM loads, one vec_binary, one store, double
// buffered (the next tile's loads overlap this tile's compute and store). Tile = the largest
// multiple of 64 elements for which four buffers (two stages of dst and src) fit NRAM.
// Time: what those DMAs and VFU intrinsics cost on the simulated cores (no formula of its own).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cnrt.h>

#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::cncl {

// Enqueues the kernel on `queue`; `compute_cores` is the device's core count. cnrt result of the
// launch (faults surface at the queue's sync like any kernel's).
cnrtRet_t launch_reduce(cnrtQueue_t queue, std::uint32_t compute_cores, sim::DType dtype, sim::VecBinaryOp op,
                        std::uint64_t dst, std::uint64_t src, std::size_t count);

}  // namespace mlusim::cncl
