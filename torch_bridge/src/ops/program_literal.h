// A number as a literal of the elementwise program text (fused_ops.cpp's format, the one of
// torch.ops.mlu.elementwise), for the ops that build programs (program_ops.cpp, special_ops.cpp, ...).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace mlusim::bridge::ops {

// `v` as a Python float literal: 17 significant digits (round-trips a double; the program rounds
// it to its constant's dtype), always with a '.' or an exponent so that it parses as a float, and
// nan / inf / -inf by name.
inline std::string program_literal(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s(text);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace mlusim::bridge::ops
