// Scans (inclusive prefix operations) along the rows of a contiguous [rows, n] tensor, as
// torch.cumsum, torch.cumprod, torch.cummax and torch.cummin compute them along a dim:
//
//   kSum   y[r, j] = x[r, 0] + ... + x[r, j]         float32/float16 accumulated in fp32; integers
//                                                    in int32, wrapping past 2^31 (the caller
//                                                    bounds them: torch sums integers in int64)
//   kProd  y[r, j] = x[r, 0] * ... * x[r, j]         float32/float16, accumulated in fp32
//   kMax   y[r, j] = max(x[r, 0..j]), indices[r, j] = the position of that value: among equal
//          values the last one, and once a NaN appears it is the value, its position the index,
//          until the next NaN (torch's cummax: x[j] replaces the running value when x[j] is NaN or
//          x[j] >= it, unless the running value is NaN)
//   kMin   the same with <= (torch's cummin)
//
// kSum/kMax/kMin take float32, float16, bfloat16 (where the config computes it), int32, int64
// (narrowed to int32 with the VFU's range check: a value beyond int32 faults the kernel naming the
// cast), int8 and bool; indices (optional for kMax/kMin, none for kSum/kProd) are int64. y has x's
// dtype; fp16/bf16 results are the fp32 running values rounded once each, as torch's CPU kernel
// (an fp32 accumulator, each output rounded).
// NaN and inf propagate forward only (an element never sees a later one).
//
// Kernel: one BLOCK launch. A row of n <= C elements (C: the chunk one core's NRAM holds) is
// scanned in NRAM with C / n rows packed per chunk, by the Hillis-Steele doubling scan: for
// s = 1, 2, 4, ... < n every element is combined with the one s places before it in its row (a
// strided NRAM copy shifts the rows, heads take the operation's identity), ceil(log2 n) VFU
// passes over the chunk. Longer rows go through chunks of C in order on one core, each chunk
// scanned as above and then combined with the carry (the previous chunk's last running value and
// index, broadcast by a stride-0 NRAM copy). Rows are spread over the cores; a long row stays on
// one core (its chunks depend on each other). Sum order is the doubling tree's, not the
// sequential loop's: fp32 rounding differs by a few ulps, as CUDA's tree scan.
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

enum class ScanOp : std::uint8_t { kSum, kProd, kMax, kMin };

const char* scan_op_name(ScanOp op);  // "cumsum", "cumprod", "cummax", "cummin"

// y = the scan of every row of x (see above). x, y contiguous with equal dims ([rows, n]: the
// last dim is scanned; a 0-d or 1-d x is one row); indices: null, or int64 contiguous with x's
// dims (kMax/kMin only). Empty x: nothing launched.
// kBadParam: layouts, dims or dtypes that differ as above, indices with kSum/kProd.
// kNotSupported: a dtype the op does not take (float64, bf16, integer products).
Status scan(Handle* h, ScanOp op, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr,
            const TensorDesc* indices, void* indices_ptr);

// Elements of one row chunk (C above) on this handle's cores: rows up to this long are scanned in
// one piece; the tests use it to reach the chunked path.
std::int64_t scan_chunk_elements(const Handle* h);

}  // namespace mlusim::mlu
