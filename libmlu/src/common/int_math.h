// Integer arithmetic of tile planning, shared by libmlu's kernels and planners. Sizes and counts
// are std::size_t; the device API's offsets and strides are std::int64_t.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlusim::mlu {

// A size as the device API's signed offset type (sizes here never exceed 2^63).
constexpr std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

// ceil(a / b) for b > 0.
constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// a rounded up to a multiple of unit (unit > 0).
constexpr std::size_t round_up(std::size_t a, std::size_t unit) { return ceil_div(a, unit) * unit; }

// Bytes rounded up to 128: on-chip buffers are carved at 128-byte boundaries (the DMA burst).
constexpr std::size_t up128(std::size_t bytes) { return round_up(bytes, 128); }

}  // namespace mlusim::mlu
