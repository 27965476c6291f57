// Copies that libmlu's copy_strided cannot describe in one call, composed from device kernels
// (copy_kernels.h; copy_in in elementwise_ops.cpp sends them here):
//
//   uint8 / int16 <-> other dtypes. The VFU has neither dtype, so values travel as int32 and the
//     bytes are written as int8 through a dtype view of the same storage:
//       to int32: uint8 = its int8 view + 256 where negative; int16 = its high byte (signed) x 256 +
//                 its low byte (unsigned), from the int8 view of a dense copy;
//       from any: t = the int32 value (floats truncated toward zero, as the float -> int conversion of
//                 torch's CPU copy; NaN, inf and |x| >= 2^31 give INT_MIN, whose low bytes are 0), then
//                 the low 8 / 16 bits of t (t mod 2^b, as the CPU's wrap-around), stored as the signed
//                 bytes with the same bit pattern (int16: low byte, high byte, little-endian).
//     float64 sources are refused (their truncation would need fp64 arithmetic the VFU lacks).
//   A source whose elements overlap (an as_strided view with stride 1 over a [2, 2] window, an
//     unfold): every element's storage offset, sum_d i_d stride_d, by one program over aranges, and
//     index_select of the flat storage span it covers, then the ordinary copy.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/stack.h>

#include "ops/copy_kernels.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

bool narrow_int(at::ScalarType t) { return t == at::kByte || t == at::kShort; }

// int32 values of a uint8 / int16 tensor.
Tensor narrow_to_int32(const Tensor& src) {
  if (src.scalar_type() == at::kByte)
    return run_elementwise_program({src.view(at::kChar)}, "t = cast($0, i32); where(lt(t, 0), add(t, 256), t)");
  const Tensor bytes = src.contiguous().reshape({-1}).view(at::kChar).view({-1, 2});
  return run_elementwise_program({bytes.select(1, 0), bytes.select(1, 1)},
                                 "l = cast($0, i32); add(mul(cast($1, i32), 256), where(lt(l, 0), add(l, 256), l))")
      .view(src.sizes());
}

// Program statements defining the int32 `r` = t mod 2^bits (0 <= r < 2^bits) for the int32 name t:
// q = trunc(t / 2^bits) in fp32 is off by at most one (t rounded to fp32), r = t - q 2^bits in exact
// int32 arithmetic (q clamped so the product cannot overflow), then moved into range.
std::string low_bits_stmt(int bits) {
  const std::string b = std::to_string(std::int64_t{1} << bits);
  const std::string max_q = std::to_string((std::int64_t{1} << (31 - bits)) - 1);
  return "q = minimum(cast(div(t, " + b + ".0), i32), " + max_q + "); r0 = sub(t, mul(q, " + b +
         ")); r1 = where(lt(r0, 0), add(r0, " + b + "), r0); r2 = where(lt(r1, 0), add(r1, " + b +
         "), r1); r3 = where(ge(r2, " + b + "), sub(r2, " + b + "), r2); r = where(ge(r3, " + b + "), sub(r3, " + b +
         "), r3); ";
}

// The signed byte with the bit pattern of the unsigned byte name u (0..255).
std::string signed_byte(const std::string& u) { return "cast(where(ge(" + u + ", 128), sub(" + u + ", 256), " + u + "), i8)"; }

}  // namespace

bool copy_needs_composition(const Tensor& src, const Tensor& dst) {
  const at::ScalarType s = src.scalar_type(), d = dst.scalar_type();
  if (s != d && (narrow_int(s) || narrow_int(d)) && !(s == at::kByte && d == at::kBool) &&
      !(s == at::kBool && d == at::kByte))
    return true;
  return overlaps_itself(src);
}

bool overlaps_itself(const Tensor& t) {
  // libmlu's TensorDesc rule: sorted by stride, each dim of size > 1 and stride > 0 must step past
  // everything the smaller-strided dims reach.
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size)
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) > 0) dims.emplace_back(t.stride(d), t.size(d));
  std::sort(dims.begin(), dims.end());
  std::int64_t span = 1;
  for (const auto& [stride, size] : dims) {
    if (stride < span) return true;
    span += (size - 1) * stride;
  }
  return false;
}

void copy_composed(const Tensor& src, const Tensor& dst, const char* op) {
  if (overlaps_itself(src)) {
    // The storage span the view reaches, as one dense vector, and each element's offset in it.
    std::int64_t span = 1;
    std::vector<Tensor> aranges;
    std::string offset;
    const auto i64 = at::TensorOptions().device(src.device()).dtype(at::kLong);
    for (std::int64_t d = 0; d < src.dim(); ++d) {
      span += (src.size(d) - 1) * src.stride(d);
      std::vector<std::int64_t> shape(static_cast<std::size_t>(src.dim()), 1);
      shape[static_cast<std::size_t>(d)] = src.size(d);
      const std::string term = "mul($" + std::to_string(aranges.size()) + ", " + std::to_string(src.stride(d)) + ")";
      aranges.push_back(at::arange(src.size(d), i64).view(shape));
      offset = offset.empty() ? term : "add(" + offset + ", " + term + ")";
    }
    const Tensor flat = src.as_strided({span}, {1});
    const Tensor offsets = run_elementwise_program(aranges, offset).reshape({-1});
    const Tensor dense = at::index_select(flat, 0, offsets).view(src.sizes());
    return copy_strided_kernel(dense, dst, op);
  }
  const at::ScalarType s = src.scalar_type(), d = dst.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(s != at::kDouble, op, ": copying ", s, " to ", d, " is not supported on device mlu ",
                              "(float64 to uint8/int16 needs fp64 arithmetic; cast to float32 first)");
  // The value as int32.
  Tensor t;
  if (narrow_int(s)) t = narrow_to_int32(src);
  if (!narrow_int(d)) return copy_strided_kernel(t, dst, op);  // int32 converts to every other dtype
  const bool floating = at::isFloatingType(s);
  const std::string to_t = narrow_int(s) ? "t = $0; "
                           : floating    ? "t = where(lt(abs($0), 2147483648.0), cast($0, i32), -2147483648); "
                                         : "t = cast($0, i32); ";
  const Tensor v = narrow_int(s) ? t : src;
  if (d == at::kByte) {
    const Tensor bytes = run_elementwise_program({v}, to_t + low_bits_stmt(8) + signed_byte("r"));
    return copy_strided_kernel(bytes, dst.view(at::kChar), op);
  }
  // int16: r = the low 16 bits, split into its bytes.
  const std::string r16 = to_t + low_bits_stmt(16) + "h = cast(div(r, 256.0), i32); l = sub(r, mul(h, 256)); ";
  const Tensor lo = run_elementwise_program({v}, r16 + signed_byte("l"));
  const Tensor hi = run_elementwise_program({v}, r16 + signed_byte("h"));
  const Tensor words = at::stack({lo.reshape({-1}), hi.reshape({-1})}, 1).view(at::kShort).view(dst.sizes());
  copy_strided_kernel(words, dst, op);
}

}  // namespace mlusim::bridge::ops
