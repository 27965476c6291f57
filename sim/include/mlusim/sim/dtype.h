// Element types known to the simulated chip, and their host representation.
//
// The VFU computes on fp32, fp16, int32, int8 and bool, and on bf16 where the config says the
// chip has it (`vfu.bf16`); the TFU on fp32, fp16, bf16 and int8 (int32 accumulate) where the
// config gives it an array for that dtype. int64 exists only as storage that libmlu narrows to
// int32 on load; float64 is storage, copy and cast only. bf16 is storage and byte copies on every
// chip; any bf16 arithmetic or conversion on a chip without it is an error naming op and config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with correct rounding, used for fp16 storage.

namespace mlusim::sim {

// Values are indices (statistics arrays, mlusimKernelRecord_t::macs_by_dtype): append only.
enum class DType : std::uint8_t { kFloat32, kFloat16, kInt8, kInt32, kInt64, kBool, kFloat64, kBFloat16 };
constexpr std::size_t kDTypeCount = 8;

using half = Eigen::half;
// bfloat16 (8 exponent, 7 mantissa bits): conversion from float rounds to nearest even.
using bfloat16 = Eigen::bfloat16;

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kFloat64: return 8;
    case DType::kBFloat16: return 2;
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64 || t == DType::kBFloat16;
}

// Short lower-case names, as used in configs, traces and error messages ("fp32", "int8", "bf16", ...).
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

// Maps a host element type to its DType (for typed device pointers and tests).
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<half> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<std::int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<bfloat16> { static constexpr DType value = DType::kBFloat16; };

}  // namespace mlusim::sim
