#include "mlusim/sim/launch.h"

namespace mlusim::sim {

std::uint32_t union_clusters(FunctionType t) {
  switch (t) {
    case FunctionType::kUnion1: return 1;
    case FunctionType::kUnion2: return 2;
    case FunctionType::kUnion4: return 4;
    case FunctionType::kUnion8: return 8;
    case FunctionType::kUnion16: return 16;
    case FunctionType::kBlock: return 0;
  }
  return 0;
}

std::string function_type_name(FunctionType t) {
  if (t == FunctionType::kBlock) return "BLOCK";
  const std::uint32_t n = union_clusters(t);
  return n ? "UNION" + std::to_string(n) : "INVALID(" + std::to_string(static_cast<std::uint32_t>(t)) + ")";
}

}  // namespace mlusim::sim
