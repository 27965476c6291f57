// Unary math. Ops with a VFU intrinsic run as one step (fp16 directly: the VFU computes in fp32
// and rounds once, as torch does); gelu's tanh approximation is composed from VFU steps in fp32
// with torch's operation order.
#include <cmath>
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

using sim::VecBinaryOp;
using sim::VecUnaryOp;

struct UnaryInfo {
  const char* name;
  VecUnaryOp vfu;
  bool floating;  // computes in a floating dtype (integral inputs promote to fp32)
};

UnaryInfo info(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return {"neg", VecUnaryOp::kNeg, false};
    case UnaryOp::kAbs: return {"abs", VecUnaryOp::kAbs, false};
    case UnaryOp::kSquare: return {"square", VecUnaryOp::kSquare, false};
    case UnaryOp::kRelu: return {"relu", VecUnaryOp::kRelu, false};
    case UnaryOp::kExp: return {"exp", VecUnaryOp::kExp, true};
    case UnaryOp::kLog: return {"log", VecUnaryOp::kLog, true};
    case UnaryOp::kSqrt: return {"sqrt", VecUnaryOp::kSqrt, true};
    case UnaryOp::kRsqrt: return {"rsqrt", VecUnaryOp::kRsqrt, true};
    case UnaryOp::kSigmoid: return {"sigmoid", VecUnaryOp::kSigmoid, true};
    case UnaryOp::kTanh: return {"tanh", VecUnaryOp::kTanh, true};
    case UnaryOp::kSilu: return {"silu", VecUnaryOp::kSilu, true};
    case UnaryOp::kReciprocal: return {"reciprocal", VecUnaryOp::kRecip, true};
    case UnaryOp::kGelu: return {"gelu", VecUnaryOp::kGelu, true};
    case UnaryOp::kGeluTanh: return {"gelu_tanh", VecUnaryOp::kGelu, true};
  }
  return {"unary", VecUnaryOp::kCopy, false};
}

bool is_valid_op(UnaryOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(UnaryOp::kGeluTanh); }

// 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x^3))), kBeta = sqrt(2/pi), in torch's order.
ew::ValueId gelu_tanh(ew::Program& p, ew::ValueId x) {
  using ew::ValueId;
  const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
  const ValueId x_cube = p.binary(VecBinaryOp::kMul, p.binary(VecBinaryOp::kMul, x, x), x);
  const ValueId inner = p.binary_scalar(
      VecBinaryOp::kMul, p.binary(VecBinaryOp::kAdd, x, p.binary_scalar(VecBinaryOp::kMul, x_cube, kKappa)), kBeta);
  const ValueId one_plus = p.binary_scalar(VecBinaryOp::kAdd, p.unary(VecUnaryOp::kTanh, inner), 1.0);
  return p.binary(VecBinaryOp::kMul, p.binary_scalar(VecBinaryOp::kMul, x, 0.5), one_plus);
}

}  // namespace

Status unary(Handle* h, UnaryOp op, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(is_valid_op(op), Status::kBadParam, "unary: unknown op " + std::to_string(static_cast<int>(op)));
  const UnaryInfo u = info(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, u.name, {{"x", &x, x_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(x.dims() == y.dims(), Status::kBadParam,
            std::string(u.name) + ": x " + x.str() + " and y " + y.str() + " differ in shape");
  MLU_CHECK(u.floating || x.dtype() != DType::kBool, Status::kNotSupported,
            std::string(u.name) + ": not supported for bool tensors");
  const DType compute = u.floating && !sim::dtype_is_float(x.dtype()) ? DType::kFloat32 : x.dtype();
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(u.name, compute, y));

  ew::Program p;
  ew::ValueId r;
  if (op == UnaryOp::kGeluTanh) {
    r = gelu_tanh(p, ew::load_as(p, 1, x.dtype(), DType::kFloat32));
  } else {
    r = p.unary(u.vfu, ew::load_as(p, 1, x.dtype(), ew::vfu_dtype(compute)));
  }
  p.set_result(ew::convert(p, ew::convert(p, r, compute), y.dtype()));
  return ew::run_elementwise(*h, u.name, y, y_ptr, {&x}, {x_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
