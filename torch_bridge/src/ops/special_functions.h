// Special functions other op families build on (special_ops.cpp).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace mlusim::bridge::ops {

// polygamma(n, x) for 2 <= n <= 33 as torch computes it: (-1)^(n+1) n! zeta(n + 1, x), one
// elementwise program (Hurwitz zeta, special_ops.cpp); NotImplementedError for other n.
at::Tensor polygamma_by_zeta(std::int64_t n, const at::Tensor& self);

}  // namespace mlusim::bridge::ops
