// torch's type promotion lattice restricted to the dtypes the simulator knows.
#include "elementwise/emit.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

// Position in the promotion order bool < int8 < int32 < int64 < fp16, bf16 < fp32 < fp64. Apart
// from fp16 with bf16 (-> fp32, promote_types) torch's table is a total order on these dtypes, so
// promotion is the max of the ranks.
int rank(DType t) {
  switch (t) {
    case DType::kBool: return 0;
    case DType::kInt8: return 1;
    case DType::kInt32: return 2;
    case DType::kInt64: return 3;
    case DType::kFloat16: return 4;
    case DType::kBFloat16: return 4;
    case DType::kFloat32: return 5;
    case DType::kFloat64: return 6;
  }
  return 0;
}

// bool < integral < floating: the categories torch compares for zero-dim operands.
int category(DType t) {
  if (t == DType::kBool) return 0;
  return sim::dtype_is_float(t) ? 2 : 1;
}

}  // namespace

DType promote_types(DType a, DType b) {
  if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16))
    return DType::kFloat32;
  return rank(a) >= rank(b) ? a : b;
}

DType ew::result_type(DType a, bool a_zero, DType b, bool b_zero) {
  if (a_zero == b_zero) return promote_types(a, b);
  const DType dimensioned = a_zero ? b : a;
  const DType zero_dim = a_zero ? a : b;
  return category(zero_dim) > category(dimensioned) ? promote_types(dimensioned, zero_dim) : dimensioned;
}

DType result_type(const TensorDesc& a, const TensorDesc& b) {
  return ew::result_type(a.dtype(), a.ndim() == 0, b.dtype(), b.ndim() == 0);
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

}  // namespace mlusim::mlu
