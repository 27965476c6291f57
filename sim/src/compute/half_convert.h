// Bulk fp16 <-> fp32 conversion for the compute block's fp16 paths.
//
// Converting element by element through Eigen::half costs ~1 ns per value on a baseline x86-64
// build (bit manipulation, no SIMD); these use the F16C instructions (8 values per instruction)
// when the host CPU has them, chosen once at run time, and Eigen::half's conversion otherwise.
// Both round to nearest even and agree on every finite and infinite value; a NaN stays a NaN
// (its payload bits may differ between the two paths).
#pragma once

#include <cstddef>

#include "mlusim/sim/dtype.h"

namespace mlusim::sim::compute {

void halves_to_floats(const half* src, float* dst, std::size_t n);
void floats_to_halves(const float* src, half* dst, std::size_t n);

// bf16 <-> fp32. Widening is exact (the 16 bits become the top of an fp32). Narrowing rounds to
// nearest even on the 16 dropped bits, as the hardware and torch's c10::BFloat16 do; a NaN stays a
// quiet NaN of the same sign, +-inf stays +-inf, values past bf16's largest finite round to +-inf.
// Plain bit arithmetic in loops the compiler vectorises: no intrinsics needed.
void bfloat16s_to_floats(const bfloat16* src, float* dst, std::size_t n);
void floats_to_bfloat16s(const float* src, bfloat16* dst, std::size_t n);

// The 16-bit float dtypes (fp16, bf16) through one entry: `t` names the storage of src / dst.
// Throws std::invalid_argument for any other dtype (a programming error in the caller).
void float16s_to_floats(DType t, const void* src, float* dst, std::size_t n);
void floats_to_float16s(DType t, const float* src, void* dst, std::size_t n);

}  // namespace mlusim::sim::compute
