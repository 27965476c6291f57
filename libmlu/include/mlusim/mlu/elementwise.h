// Elementwise ops with PyTorch semantics: numpy broadcasting over the descriptors' dims (a dim of
// size 1 or stride 0 stretches), torch type promotion, and any strides on every operand
// (transposed, sliced, expanded views). Every op is a streaming kernel on the simulated cores:
// tiles sized from NRAM, loaded with strided DMA, double-buffered, computed on the VFU.
//
// Dtypes: fp32, fp16, int32, int8, bool compute directly; int64 is narrowed to int32 on load
// (a value outside int32 faults the kernel: cnrtErrorKernelTrap at the queue sync) and widened
// back on store; fp64 is supported by copy_strided/cast/fill only. bf16 computes like fp16 (in
// fp32, one round-to-nearest-even rounding) on a device that computes it
// (HardwareConfig::computes); elsewhere same-dtype copies and fill (bytes only) work and every
// other op on a bf16 operand returns kNotSupported naming the op and the config.
//
// Type promotion (torch): bool < int8 < int32 < int64 < fp16, bf16 < fp32 < fp64 (fp16 with
// bf16 -> fp32) for tensors of the
// same kind of shape; a zero-dim tensor (ndim 0) only promotes when its category (bool <
// integral < floating) is higher than the dimensioned operands' (fp16 tensor * fp32 0-dim
// tensor -> fp16). The output descriptor may have any dtype the computed dtype can be cast to
// (can_cast: no floating -> integral, no non-bool -> bool); comparisons and logical ops output
// bool (or any dtype: 1/0 is cast). Tensor-scalar ops compute in promote(tensor, output) dtype,
// which is exactly torch's result dtype when the output was allocated with it.
//
// The output may not overlap itself (no stride 0 on a dim > 1); it may alias an input exactly
// (in-place ops). Empty tensors succeed and launch nothing. All ops are asynchronous on the
// handle's queue.
#pragma once

#include <optional>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// ---- type promotion --------------------------------------------------------------------------

DType promote_types(DType a, DType b);
// The dtype torch computes a op b in (zero-dim operands as described above).
DType result_type(const TensorDesc& a, const TensorDesc& b);
// torch.can_cast(from, to): false for floating -> integral/bool and integral -> bool.
bool can_cast(DType from, DType to);

// ---- arithmetic --------------------------------------------------------------------------------

enum class BinaryOp : std::uint8_t {
  kAdd,      // a + alpha * b
  kSub,      // a - alpha * b
  kMul,
  kDiv,      // true division: integral operands compute in fp32 (torch's int / int -> float)
  kPow,
  kMaximum,  // NaN-propagating, as torch.maximum
  kMinimum,
};

// y = a op b with broadcasting. alpha applies to add/sub only (must be integral for integral
// dtypes). y's dims must equal the broadcast shape of a and b.
Status binary(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
              const void* b_ptr, const TensorDesc& y, void* y_ptr, double alpha = 1.0);

// y = a op scalar, or scalar op a when scalar_first (rsub, scalar / a, scalar ** a). Computes in
// promote(a, y) (fp32 at least for kDiv); an integral compute dtype needs an integral scalar.
Status binary_scalar(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, double scalar,
                     const TensorDesc& y, void* y_ptr, bool scalar_first = false);

enum class UnaryOp : std::uint8_t {
  kNeg, kAbs, kSquare, kRelu,  // any numeric dtype
  kExp, kLog, kSqrt, kRsqrt, kSigmoid, kTanh, kSilu, kReciprocal,
  kGelu,      // x * 0.5 * (1 + erf(x / sqrt(2)))  (torch gelu, approximate='none')
  kGeluTanh,  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  (approximate='tanh')
  kSin, kCos,  // radians (rotary position embeddings)
};

// y = op(x). Floating ops on integral x compute in fp32 (torch: exp(int) -> float); y's dims must
// equal x's.
Status unary(Handle* h, UnaryOp op, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
             void* y_ptr);

// ---- backward of activations ---------------------------------------------------------------------

// grad_in = x > threshold ? grad : 0 (torch threshold_backward; relu backward is threshold 0).
Status threshold_backward(Handle* h, const TensorDesc& grad, const void* grad_ptr, const TensorDesc& x,
                          const void* x_ptr, double threshold, const TensorDesc& grad_in, void* grad_in_ptr);

enum class ActivationGrad : std::uint8_t {
  kSigmoid,   // `value` is the forward OUTPUT y: grad * y * (1 - y)
  kTanh,      // `value` is the forward OUTPUT y: grad * (1 - y^2)
  kGelu,      // `value` is the forward INPUT x: grad * (Phi(x) + x * phi(x))
  kGeluTanh,  // `value` is the forward INPUT x: torch's tanh-approximation derivative
  kSilu,      // `value` is the forward INPUT x: grad * s * (1 + x * (1 - s)), s = sigmoid(x)
};

// grad_in = grad * d act / d x, as torch's sigmoid_backward/tanh_backward/gelu_backward/
// silu_backward. Floating dtypes only; fp16 computes in fp32 and rounds once.
Status activation_backward(Handle* h, ActivationGrad act, const TensorDesc& grad, const void* grad_ptr,
                           const TensorDesc& value, const void* value_ptr, const TensorDesc& grad_in,
                           void* grad_in_ptr);

// ---- comparisons and logic ---------------------------------------------------------------------

enum class CompareOp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// y = a op b (1/0; y is normally bool). NaN compares false except kNe.
Status compare(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
               const void* b_ptr, const TensorDesc& y, void* y_ptr);
// y = a op scalar. Integral a with an integral-valued scalar compares exactly in a's dtype;
// otherwise in fp32 (torch promotes int tensor vs float scalar to float).
Status compare_scalar(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, double scalar,
                      const TensorDesc& y, void* y_ptr);

enum class LogicalOp : std::uint8_t { kAnd, kOr, kXor };

// y = (a != 0) op (b != 0).
Status logical(Handle* h, LogicalOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
               const void* b_ptr, const TensorDesc& y, void* y_ptr);
// y = (x == 0).
Status logical_not(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr);

// ---- bitwise ------------------------------------------------------------------------------------

enum class BitwiseOp : std::uint8_t {
  kAnd, kOr, kXor,  // bool or integral operands
  kLeftShift,       // a << b: integral only; wraps modulo 2^W (W = the compute dtype's bits)
  kRightShift,      // a >> b: integral only; arithmetic (sign-filling)
};

// y = a op b with broadcasting, in torch's result type of a and b (result_type above), which must
// be bool (and/or/xor) or integral: kBadParam otherwise, naming the op and dtype. Shift counts
// follow torch's CPU kernels: a count < 0 or >= W gives 0 (left) or the sign (right). int64
// computes in int32 lanes like every int64 op (values outside int32 fault on load): and/or/xor
// and right shifts are exact, left shifts wrap modulo 2^32 where torch wraps modulo 2^64.
// Thread safety and errors as binary().
Status bitwise(Handle* h, BitwiseOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr);

// y = a op scalar, or scalar op a when scalar_first (torch's bitwise_left_shift(2, t)). Computes
// in promote(a, y) as binary_scalar does; the scalar must fit that dtype's VFU lanes (int32 for
// int64, 0/1 for bool): kBadParam naming the value otherwise.
Status bitwise_scalar(Handle* h, BitwiseOp op, const TensorDesc& a, const void* a_ptr, std::int64_t scalar,
                      const TensorDesc& y, void* y_ptr, bool scalar_first = false);

// y = cond ? a : b (cond normally bool; any other dtype reads as != 0; a and b promoted; all three
// broadcast).
Status where(Handle* h, const TensorDesc& cond, const void* cond_ptr, const TensorDesc& a, const void* a_ptr,
             const TensorDesc& b, const void* b_ptr, const TensorDesc& y, void* y_ptr);

// y = min(max(x, lo), hi) with either bound optional (at least one given); NaN propagates, and
// lo > hi gives hi, as torch.clamp. Computes in promote(x, y).
Status clamp(Handle* h, const TensorDesc& x, const void* x_ptr, std::optional<double> lo,
             std::optional<double> hi, const TensorDesc& y, void* y_ptr);

// ---- data movement -------------------------------------------------------------------------------

// y[i] = start + i * step (torch.arange's values) for a 1-d y of any stride: fp32, fp16 (computed
// in fp32: exact while the values are representable there) or int32, int8 (exact in int32; start
// and step integral, no overflow). Other dtypes (int64, fp64): compute in int32/fp32 and cast.
Status arange(Handle* h, double start, double step, const TensorDesc& y, void* y_ptr);

// Every element of y (any strides, any dtype incl. int64/fp64) = value converted to y's dtype.
Status fill(Handle* h, double value, const TensorDesc& y, void* y_ptr);

// dst = src for any two strided views: contiguous, transposed/permuted, sliced, expanded (src
// broadcasts to dst's dims, e.g. stride 0). Converts when the dtypes differ, as torch's copy_:
// floating -> integral truncates toward zero; integral -> narrower integral wraps; -> bool is
// x != 0; int64 -> narrower faults the kernel if a value exceeds int32 (the narrowing check).
Status copy_strided(Handle* h, const TensorDesc& src, const void* src_ptr, const TensorDesc& dst, void* dst_ptr);

// y = x.to(y's dtype): copy_strided with equal dims required.
Status cast(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu
