#include "mlusim/sim/dtype.h"

#include <array>
#include <utility>

namespace mlusim::sim {
namespace {
constexpr std::array<std::pair<DType, std::string_view>, kDTypeCount> kNames = {{
    {DType::kFloat32, "fp32"}, {DType::kFloat16, "fp16"}, {DType::kInt8, "int8"},
    {DType::kInt32, "int32"}, {DType::kInt64, "int64"}, {DType::kBool, "bool"},
    {DType::kFloat64, "fp64"}, {DType::kBFloat16, "bf16"},
}};
}  // namespace

std::string_view dtype_name(DType t) {
  for (const auto& [dt, name] : kNames)
    if (dt == t) return name;
  return "invalid";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& [dt, n] : kNames)
    if (n == name) return dt;
  return std::nullopt;
}

}  // namespace mlusim::sim
