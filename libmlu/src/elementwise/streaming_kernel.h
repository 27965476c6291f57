// The streaming elementwise kernel shared by every op of the family: walks the output's
// iteration space tile by tile, loads each input's tile (strided DMA, broadcast expansion,
// on-chip transposition: tile_io.h), runs the op's VFU program and stores the result.
//
// Tiling: the tile is the largest box whose buffers (program.bytes_per_element() plus staging)
// fit NRAM (read from the handle's device properties), capped so every core gets >= 2 tiles
// when the tensor is big enough. BLOCK launch, one task per core (fewer for small tensors);
// task i owns a contiguous run of tiles, so each core streams one region and all cores together
// spread over every DRAM channel.
//
// Pipeline per task (double buffering): the next tile's loads are issued right after the sync
// that completes the current one, so DMA-in of tile t+1 and DMA-out of tile t overlap the
// compute of tile t; one sync_io per tile.
#pragma once

#include <vector>

#include "elementwise/iter_space.h"
#include "elementwise/vfu_program.h"
#include "mlusim/mlu/handle.h"

namespace mlusim::mlu::ew {

// Fails with kBadParam when y would write one element twice (stride 0 on a dim of size > 1).
Status check_output_writable(const char* op, const char* name, const TensorDesc& y);

// Runs `program` with y as operand 0 and inputs as operands 1.. (each must broadcast to y's
// dims; the caller validated dtypes and shapes). Empty y: success, nothing launched. Records the
// op with 0 MACs and bytes = every input's elements read once + y written once.
Status run_elementwise(Handle& h, const char* op, const TensorDesc& y, void* y_ptr,
                       const std::vector<const TensorDesc*>& inputs, const std::vector<const void*>& input_ptrs,
                       Program program);

// Launches the streaming kernel (one kernel; none for an empty space) over a prepared space:
// operand 0 is stored, the program's inputs name the other operands. Does not record the op.
Status launch_stream(Handle& h, const char* name, IterSpace space, Program program);

}  // namespace mlusim::mlu::ew
