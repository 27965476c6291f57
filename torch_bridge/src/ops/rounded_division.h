// div with rounding_mode "trunc" / "floor" (and floor_divide): one elementwise program
// (program_ops.cpp), shared with elementwise_ops.cpp's div overloads, which do true division.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

namespace mlusim::bridge::ops {

// a / b rounded toward zero (mode "trunc") or down ("floor"), in torch's result dtype for a / b
// with integers staying integers; `name` names the ATen op in errors and the cycle report.
at::Tensor rounded_division(const char* name, const at::Tensor& a, const at::Tensor& b, c10::string_view mode);

}  // namespace mlusim::bridge::ops
