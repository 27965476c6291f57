// Kernel side of the fused activations (mlusim/mlu/activation.h): one recipe of VFU intrinsics
// per activation, applied in place to an fp32 buffer. Shared by the GEMM epilogue and the
// depthwise convolution's output stage.
#pragma once

#include <cstddef>

#include "mlusim/mlu/activation.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu {

bool is_valid_activation(Activation a);
// True when apply_activation needs an fp32 scratch buffer of n elements (the tanh approximation
// of gelu).
bool activation_needs_temp(Activation a);
// VFU passes over the data (a transcendental intrinsic counts `transcendental_factor` passes),
// for planners' cost estimates.
double activation_passes(Activation a, double transcendental_factor);

// x[0, n) = act(x[0, n)), fp32 in NRAM; tmp: fp32 [n] scratch when activation_needs_temp(a).
// gelu_tanh follows torch's operation order (as unary(kGeluTanh) does).
void apply_activation(Activation a, dev::Addr x, dev::Addr tmp, std::size_t n);

}  // namespace mlusim::mlu
