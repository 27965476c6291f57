// Activation functions that fused output stages apply (matmul's MatmulParams::activation, the
// fused convolution of fused.h). They run on the VFU in fp32 on the on-chip result, before its
// one rounding to the output dtype, with the formulas of the matching UnaryOp (elementwise.h).
#pragma once

#include <cstdint>

namespace mlusim::mlu {

enum class Activation : std::uint8_t {
  kNone,
  kRelu,      // max(x, 0)
  kRelu6,     // min(max(x, 0), 6), as clamp(x, 0, 6)
  kGelu,      // x * 0.5 * (1 + erf(x / sqrt(2)))            (UnaryOp::kGelu)
  kGeluTanh,  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  (UnaryOp::kGeluTanh)
  kSilu,      // x * sigmoid(x)
  kSigmoid,
  kTanh,
};

// "relu", "gelu_tanh", ...; "invalid" for a value outside the enum.
const char* activation_name(Activation a);

}  // namespace mlusim::mlu
