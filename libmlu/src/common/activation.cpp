#include "common/activation.h"

#include <cmath>

namespace mlusim::mlu {

using sim::DType;
using sim::VecBinaryOp;
using sim::VecUnaryOp;

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kRelu6:
      return "relu6";
    case Activation::kGelu:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kSilu:
      return "silu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
  }
  return "invalid";
}

bool is_valid_activation(Activation a) {
  return static_cast<std::uint8_t>(a) <= static_cast<std::uint8_t>(Activation::kTanh);
}

bool activation_needs_temp(Activation a) { return a == Activation::kGeluTanh; }

double activation_passes(Activation a, double transcendental_factor) {
  switch (a) {
    case Activation::kNone:
      return 0;
    case Activation::kRelu:
      return 1;
    case Activation::kRelu6:
      return 2;
    case Activation::kGeluTanh:
      return 8 + transcendental_factor;
    default:
      return transcendental_factor;
  }
}

void apply_activation(Activation a, dev::Addr x, dev::Addr tmp, std::size_t n) {
  constexpr DType f32 = DType::kFloat32;
  switch (a) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      dev::vec_unary(VecUnaryOp::kRelu, f32, x, x, n);
      return;
    case Activation::kRelu6:
      // As clamp(x, 0, 6).
      dev::vec_binary_scalar(VecBinaryOp::kMax, f32, x, x, 0.0, n);
      dev::vec_binary_scalar(VecBinaryOp::kMin, f32, x, x, 6.0, n);
      return;
    case Activation::kGelu:
      dev::vec_unary(VecUnaryOp::kGelu, f32, x, x, n);
      return;
    case Activation::kSilu:
      dev::vec_unary(VecUnaryOp::kSilu, f32, x, x, n);
      return;
    case Activation::kSigmoid:
      dev::vec_unary(VecUnaryOp::kSigmoid, f32, x, x, n);
      return;
    case Activation::kTanh:
      dev::vec_unary(VecUnaryOp::kTanh, f32, x, x, n);
      return;
    case Activation::kGeluTanh: {
      // 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x^3))), kBeta = sqrt(2/pi).
      const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
      dev::vec_binary(VecBinaryOp::kMul, f32, tmp, x, x, n);
      dev::vec_binary(VecBinaryOp::kMul, f32, tmp, tmp, x, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, f32, tmp, tmp, kKappa, n);
      dev::vec_binary(VecBinaryOp::kAdd, f32, tmp, x, tmp, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, f32, tmp, tmp, kBeta, n);
      dev::vec_unary(VecUnaryOp::kTanh, f32, tmp, tmp, n);
      dev::vec_binary_scalar(VecBinaryOp::kAdd, f32, tmp, tmp, 1.0, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, f32, x, x, 0.5, n);
      dev::vec_binary(VecBinaryOp::kMul, f32, x, x, tmp, n);
      return;
    }
  }
}

}  // namespace mlusim::mlu
