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

}  // namespace mlusim::sim::compute
