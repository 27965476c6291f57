#include "compute/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // Array::erf (vectorised), for the exact GELU

#include "compute/half_convert.h"

namespace mlusim::sim::compute {
namespace {

using Index = Eigen::Index;
using ArrF = Eigen::Array<float, Eigen::Dynamic, 1>;
template <class T> using CMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T> using MMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CRowMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Host storage of each DType; bool is a byte whose non-zero values all read as true.
struct Bool {};
template <class T> struct StorageOf { using type = T; };
template <> struct StorageOf<Bool> { using type = std::uint8_t; };
template <class T> using Storage = typename StorageOf<T>::type;

template <class T> constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, half> ||
                                             std::is_same_v<T, bfloat16> || std::is_same_v<T, double>;

// Calls f(T{}) with T the tag of dtype t (float, half, int8_t, int32_t, int64_t, Bool, double,
// bfloat16).
template <class F> decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat16: return f(half{});
    case DType::kInt8: return f(std::int8_t{});
    case DType::kInt32: return f(std::int32_t{});
    case DType::kInt64: return f(std::int64_t{});
    case DType::kBool: return f(Bool{});
    case DType::kFloat64: return f(double{});
    case DType::kBFloat16: return f(bfloat16{});
  }
  throw std::invalid_argument("VFU: invalid dtype");
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

[[noreturn]] void throw_unsupported(std::string_view kind, std::string_view op, DType t) {
  throw std::invalid_argument("VFU " + std::string(kind) + " op " + quoted(op) +
                              " does not support dtype " + quoted(dtype_name(t)));
}

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }
bool is_int(DType t) { return t == DType::kInt32 || t == DType::kInt8; }
bool is_predicate(VecBinaryOp op) {
  switch (op) {
    case VecBinaryOp::kEq: case VecBinaryOp::kNe: case VecBinaryOp::kLt: case VecBinaryOp::kLe:
    case VecBinaryOp::kGt: case VecBinaryOp::kGe: case VecBinaryOp::kAnd: case VecBinaryOp::kOr:
      return true;
    default: return false;
  }
}

// One operand of a binary op: an array, or (ptr == nullptr) a scalar broadcast to every element.
struct Operand {
  const void* ptr = nullptr;
  double scalar = 0.0;  // already converted to a value of the operation's dtype
};

// Converts a user scalar to a value of dtype t (see vec_binary_scalar).
double to_dtype_value(std::string_view what, DType t, double v) {
  auto integral = [&](double lo, double hi) {
    if (!(std::isfinite(v) && v == std::trunc(v) && v >= lo && v <= hi)) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "VFU " << what << ": scalar " << v << " is not representable in dtype "
          << quoted(dtype_name(t));
      throw std::invalid_argument(msg.str());
    }
    return v;
  };
  switch (t) {
    case DType::kFloat32: return static_cast<float>(v);
    case DType::kFloat16: return static_cast<float>(half(static_cast<float>(v)));
    case DType::kBFloat16: return static_cast<float>(bfloat16(static_cast<float>(v)));
    case DType::kInt32:
      return integral(std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
    case DType::kInt8:
      return integral(std::numeric_limits<std::int8_t>::min(), std::numeric_limits<std::int8_t>::max());
    case DType::kBool: return integral(0, 1);
    default: throw std::invalid_argument("VFU " + std::string(what) + " does not support dtype " +
                                         quoted(dtype_name(t)));
  }
}

// ---- floating point: Eigen expressions evaluated in fp32 ----------------------------------------
//
// fp32 operands are mapped directly. fp16 and bf16 operands are widened block by block (kBlock
// elements, fp32 scratch on the stack) with the bulk converter, computed in fp32, and narrowed once
// on store (round to nearest even).

constexpr std::size_t kBlock = 1024;

// Calls store(fn(x, y), offset) with fp32 views x, y of elements [offset, offset + len) of both
// operands of dtype t (fp32, fp16 or bf16); a scalar operand becomes a constant expression.
template <class Fn, class Store>
void float_visit2(DType t, const Operand& a, const Operand& b, std::size_t n, Fn&& fn,
                  Store&& store) {
  if (t == DType::kFloat32) {
    const Index len = static_cast<Index>(n);
    auto arr = [len](const Operand& o) { return CMap<float>(static_cast<const float*>(o.ptr), len); };
    if (a.ptr && b.ptr) store(fn(arr(a), arr(b)), 0);
    else if (a.ptr) store(fn(arr(a), ArrF::Constant(len, static_cast<float>(b.scalar))), 0);
    else store(fn(ArrF::Constant(len, static_cast<float>(a.scalar)), arr(b)), 0);
    return;
  }
  const auto* ha = static_cast<const std::uint16_t*>(a.ptr);
  const auto* hb = static_cast<const std::uint16_t*>(b.ptr);
  float xa[kBlock], xb[kBlock];
  for (std::size_t off = 0; off < n; off += kBlock) {
    const std::size_t cnt = std::min(kBlock, n - off);
    const Index len = static_cast<Index>(cnt);
    if (ha) float16s_to_floats(t, ha + off, xa, cnt);
    if (hb) float16s_to_floats(t, hb + off, xb, cnt);
    const CMap<float> x(xa, len), y(xb, len);
    if (ha && hb) store(fn(x, y), off);
    else if (ha) store(fn(x, ArrF::Constant(len, static_cast<float>(b.scalar))), off);
    else store(fn(ArrF::Constant(len, static_cast<float>(a.scalar)), y), off);
  }
}

// Calls store(fn(x), offset) over fp32 views x of src (dtype fp32, fp16 or bf16), as float_visit2.
template <class Fn, class Store>
void float_visit1(DType t, const void* src, std::size_t n, Fn&& fn, Store&& store) {
  if (t == DType::kFloat32) {
    store(fn(CMap<float>(static_cast<const float*>(src), static_cast<Index>(n))), 0);
    return;
  }
  const auto* h = static_cast<const std::uint16_t*>(src);
  float x[kBlock];
  for (std::size_t off = 0; off < n; off += kBlock) {
    const std::size_t cnt = std::min(kBlock, n - off);
    float16s_to_floats(t, h + off, x, cnt);
    store(fn(CMap<float>(x, static_cast<Index>(cnt))), off);
  }
}

// Stores an fp32 (or bool) expression at dst[offset ...] of dtype t (fp32, fp16 or bf16).
auto float_store(DType t, void* dst) {
  return [t, dst](const auto& e, std::size_t off) {
    const Index len = e.size();
    if (t == DType::kFloat32) {
      MMap<float>(static_cast<float*>(dst) + off, len) = e.template cast<float>();
    } else {
      float out[kBlock];
      MMap<float>(out, len) = e.template cast<float>();
      floats_to_float16s(t, out, static_cast<std::uint16_t*>(dst) + off, static_cast<std::size_t>(len));
    }
  };
}

// Stores a bool expression as 0/1 bytes at dst[offset ...].
auto bool_store(void* dst) {
  return [dst](const auto& e, std::size_t off) {
    MMap<std::uint8_t>(static_cast<std::uint8_t*>(dst) + off, e.size()) = e.template cast<std::uint8_t>();
  };
}

template <class Store>
void float_binary(VecBinaryOp op, DType t, const Operand& a, const Operand& b, std::size_t n,
                  Store&& store) {
  auto run = [&](auto&& fn) { float_visit2(t, a, b, n, fn, store); };
  switch (op) {
    case VecBinaryOp::kAdd: return run([](const auto& x, const auto& y) { return x + y; });
    case VecBinaryOp::kSub: return run([](const auto& x, const auto& y) { return x - y; });
    case VecBinaryOp::kMul: return run([](const auto& x, const auto& y) { return x * y; });
    case VecBinaryOp::kDiv: return run([](const auto& x, const auto& y) { return x / y; });
    case VecBinaryOp::kMax:
      return run([](const auto& x, const auto& y) {
        return x.binaryExpr(y, Eigen::internal::scalar_max_op<float, float, Eigen::PropagateNaN>());
      });
    case VecBinaryOp::kMin:
      return run([](const auto& x, const auto& y) {
        return x.binaryExpr(y, Eigen::internal::scalar_min_op<float, float, Eigen::PropagateNaN>());
      });
    case VecBinaryOp::kPow:
      return run([](const auto& x, const auto& y) {
        return x.binaryExpr(y, [](float p, float q) { return std::pow(p, q); });
      });
    case VecBinaryOp::kEq: return run([](const auto& x, const auto& y) { return x == y; });
    case VecBinaryOp::kNe: return run([](const auto& x, const auto& y) { return x != y; });
    case VecBinaryOp::kLt: return run([](const auto& x, const auto& y) { return x < y; });
    case VecBinaryOp::kLe: return run([](const auto& x, const auto& y) { return x <= y; });
    case VecBinaryOp::kGt: return run([](const auto& x, const auto& y) { return x > y; });
    case VecBinaryOp::kGe: return run([](const auto& x, const auto& y) { return x >= y; });
    case VecBinaryOp::kAnd: case VecBinaryOp::kOr: case VecBinaryOp::kBitAnd: case VecBinaryOp::kBitOr:
    case VecBinaryOp::kBitXor: case VecBinaryOp::kShl: case VecBinaryOp::kShr: break;
  }
  throw_unsupported("binary", op_name(op), t);
}

// ---- integers and bool: loops in 64-bit arithmetic, wrapped to the dtype on store ----------------

template <class T> std::int64_t load_int(Storage<T> v) {
  if constexpr (std::is_same_v<T, Bool>) return v != 0;
  else return v;
}

// dst[i] = f(a[i], b[i]) with operands of storage S and results of type D (modular conversion).
template <class T, class D, class F>
void int_loop2(D* dst, const Operand& a, const Operand& b, std::size_t n, F f) {
  using S = Storage<T>;
  const S* pa = static_cast<const S*>(a.ptr);
  const S* pb = static_cast<const S*>(b.ptr);
  if (pa && pb) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<D>(f(load_int<T>(pa[i]), load_int<T>(pb[i])));
  } else if (pa) {
    const auto s = static_cast<std::int64_t>(b.scalar);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<D>(f(load_int<T>(pa[i]), s));
  } else {
    const auto s = static_cast<std::int64_t>(a.scalar);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<D>(f(s, load_int<T>(pb[i])));
  }
}

// x^y modulo 2^64 (the caller wraps to the dtype); negative y: truncated 1/x^|y|.
std::int64_t int_pow(std::int64_t x, std::int64_t y) {
  if (y < 0) {
    if (x == 1) return 1;
    if (x == -1) return (y % 2 == 0) ? 1 : -1;
    return 0;
  }
  std::uint64_t result = 1;
  auto base = static_cast<std::uint64_t>(x);
  auto e = static_cast<std::uint64_t>(y);
  while (e != 0) {
    if (e & 1u) result *= base;
    base *= base;
    e >>= 1;
  }
  return static_cast<std::int64_t>(result);
}

// Integer/bool binary op on storage of tag T, results stored as D (T's storage, or uint8_t masks).
template <class T, class D>
void int_binary(VecBinaryOp op, DType t, D* dst, const Operand& a, const Operand& b, std::size_t n) {
  using I = std::int64_t;
  auto run = [&](auto f) { int_loop2<T, D>(dst, a, b, n, f); };
  switch (op) {
    case VecBinaryOp::kAdd: return run([](I x, I y) { return x + y; });
    case VecBinaryOp::kSub: return run([](I x, I y) { return x - y; });
    case VecBinaryOp::kMul: return run([](I x, I y) { return x * y; });
    case VecBinaryOp::kDiv: return run([](I x, I y) { return y == 0 ? I{0} : x / y; });
    case VecBinaryOp::kMax: return run([](I x, I y) { return std::max(x, y); });
    case VecBinaryOp::kMin: return run([](I x, I y) { return std::min(x, y); });
    case VecBinaryOp::kPow: return run([](I x, I y) { return int_pow(x, y); });
    case VecBinaryOp::kEq: return run([](I x, I y) { return I{x == y}; });
    case VecBinaryOp::kNe: return run([](I x, I y) { return I{x != y}; });
    case VecBinaryOp::kLt: return run([](I x, I y) { return I{x < y}; });
    case VecBinaryOp::kLe: return run([](I x, I y) { return I{x <= y}; });
    case VecBinaryOp::kGt: return run([](I x, I y) { return I{x > y}; });
    case VecBinaryOp::kGe: return run([](I x, I y) { return I{x >= y}; });
    case VecBinaryOp::kAnd: return run([](I x, I y) { return I{x != 0 && y != 0}; });
    case VecBinaryOp::kOr: return run([](I x, I y) { return I{x != 0 || y != 0}; });
    // Operands are sign-extended to 64 bits, so and/or/xor and the arithmetic right shift of the
    // wide value equal the W-bit ones; the store wraps kShl's result modulo 2^W.
    case VecBinaryOp::kBitAnd: return run([](I x, I y) { return x & y; });
    case VecBinaryOp::kBitOr: return run([](I x, I y) { return x | y; });
    case VecBinaryOp::kBitXor: return run([](I x, I y) { return x ^ y; });
    case VecBinaryOp::kShl: {
      const I width = static_cast<I>(dtype_size(t)) * 8;
      return run([width](I x, I y) {
        return y < 0 || y >= width ? I{0} : static_cast<I>(static_cast<std::uint64_t>(x) << y);
      });
    }
    case VecBinaryOp::kShr: {
      const I width = static_cast<I>(dtype_size(t)) * 8;
      return run([width](I x, I y) { return x >> (y < 0 || y >= width ? width - 1 : y); });
    }
  }
  throw_unsupported("binary", op_name(op), t);
}

// Shared body of vec_binary / vec_binary_scalar / vec_compare*: dst is of dtype t, or a bool mask.
void binary_any(VecBinaryOp op, DType t, void* dst, const Operand& a, const Operand& b,
                std::size_t n, bool mask_out) {
  if (is_float(t)) {
    if (mask_out) float_binary(op, t, a, b, n, bool_store(dst));
    else float_binary(op, t, a, b, n, float_store(t, dst));
    return;
  }
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, Bool>) {
      if (mask_out) int_binary<T>(op, t, static_cast<std::uint8_t*>(dst), a, b, n);
      else int_binary<T>(op, t, static_cast<Storage<T>*>(dst), a, b, n);
    } else {
      throw_unsupported("binary", op_name(op), t);
    }
  });
}

// ---- unary ---------------------------------------------------------------------------------------

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kExpScaledBelow = -87.0f;
constexpr float kSmallestNormal = std::numeric_limits<float>::min();  // 2^-126
constexpr float kLn2Times64 = 44.3614195558365f;                       // 64 ln 2
constexpr float kTwoPow64 = 18446744073709551616.0f;
constexpr float kTwoPowMinus64 = 1.0f / kTwoPow64;

void float_unary(VecUnaryOp op, DType t, void* dst, const void* src, std::size_t n) {
  auto run = [&](auto&& fn) { float_visit1(t, src, n, fn, float_store(t, dst)); };
  switch (op) {
    case VecUnaryOp::kNeg: return run([](const auto& x) { return -x; });
    case VecUnaryOp::kAbs: return run([](const auto& x) { return x.abs(); });
    case VecUnaryOp::kSquare: return run([](const auto& x) { return x.square(); });
    case VecUnaryOp::kRecip: return run([](const auto& x) { return x.inverse(); });
    // exp and log IEEE-correct at the ends of the fp32 range. Eigen's vectorised exp clamps its
    // argument at -88.38 (exp(-inf) and exp(-100) come out as 2.9e-39, not 0 and 3.8e-44) and its
    // log clamps subnormal arguments to the smallest normal (log(1e-40) = -87.34, not -92.1), so
    // a log(sum(exp(-inf))) chain gave -87.3 instead of -inf. Below the normal range both are
    // computed on arguments scaled by 2^64 (exact) and scaled back:
    //   exp(x) = exp(x + 64 ln 2) * 2^-64   for x < -87 (underflows to 0 below -103.97; -inf -> 0)
    //   log(x) = log(x * 2^64) - 64 ln 2    for 0 < x < 2^-126 (log(0) = -inf, log(x < 0) = NaN)
    // exp(+inf) = +inf, log(+inf) = +inf and NaN -> NaN come from Eigen itself.
    // One exp / log per element: the scaling is selected per element (a select between two
    // whole exp() evaluations computed both for every element: twice the host time).
    case VecUnaryOp::kExp:
      return run([](const auto& x) {
        const Index n = x.size();
        return (x + (x < kExpScaledBelow).select(ArrF::Constant(n, kLn2Times64), ArrF::Constant(n, 0.0f))).exp() *
               (x < kExpScaledBelow).select(ArrF::Constant(n, kTwoPowMinus64), ArrF::Constant(n, 1.0f));
      });
    case VecUnaryOp::kLog:
      return run([](const auto& x) {
        const Index n = x.size();
        const auto sub = [&](float then, float otherwise) {
          return (x < kSmallestNormal && x > 0.0f).select(ArrF::Constant(n, then), ArrF::Constant(n, otherwise));
        };
        return (x * sub(kTwoPow64, 1.0f)).log() - sub(kLn2Times64, 0.0f);
      });
    // Square roots element by element with the host's IEEE sqrt (correctly rounded), not Eigen's
    // vectorised sqrt()/rsqrt(): with EIGEN_FAST_MATH (Eigen's default) both start from the x86
    // estimate _mm_rsqrt_ps (12 bits, from tables that differ between Intel and AMD) refined by
    // one Newton step: up to ~3.5 ulp off, denormal inputs flushed to 0, and results that depend
    // on the host's CPU. rsqrt is 1 / sqrt: two correctly rounded steps, under 1.5 ulp (torch's CPU
    // kernel computes it the same way). Batch and layer norm take their 1/std from here.
    case VecUnaryOp::kSqrt:
      return run([](const auto& x) { return x.unaryExpr([](float v) { return std::sqrt(v); }); });
    case VecUnaryOp::kRsqrt:
      return run([](const auto& x) { return x.unaryExpr([](float v) { return 1.0f / std::sqrt(v); }); });
    // 1 / (1 + exp(-x)) on Eigen's vectorised exp (~1 ulp); Eigen's logistic() approximation is
    // off by ~3e-5 relative for x < -6.
    case VecUnaryOp::kSigmoid: return run([](const auto& x) { return (1.0f + (-x).exp()).inverse(); });
    case VecUnaryOp::kTanh: return run([](const auto& x) { return x.tanh(); });
    case VecUnaryOp::kGelu:
      return run([](const auto& x) { return x * 0.5f * (1.0f + (x * kInvSqrt2).erf()); });
    case VecUnaryOp::kSilu: return run([](const auto& x) { return x / (1.0f + (-x).exp()); });
    case VecUnaryOp::kRelu: return run([](const auto& x) { return (x < 0.0f).select(0.0f, x); });
    case VecUnaryOp::kSin: return run([](const auto& x) { return x.sin(); });
    case VecUnaryOp::kCos: return run([](const auto& x) { return x.cos(); });
    case VecUnaryOp::kCopy:
    case VecUnaryOp::kNot: break;
  }
  throw_unsupported("unary", op_name(op), t);
}

template <class T, class F> void int_loop1(void* dst, const void* src, std::size_t n, F f) {
  using S = Storage<T>;
  auto* d = static_cast<S*>(dst);
  const auto* s = static_cast<const S*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<S>(f(load_int<T>(s[i])));
}

template <class T> void int_unary(VecUnaryOp op, DType t, void* dst, const void* src, std::size_t n) {
  using I = std::int64_t;
  auto run = [&](auto f) { int_loop1<T>(dst, src, n, f); };
  switch (op) {
    case VecUnaryOp::kNeg: return run([](I x) { return -x; });
    case VecUnaryOp::kAbs: return run([](I x) { return x < 0 ? -x : x; });
    case VecUnaryOp::kSquare: return run([](I x) { return x * x; });
    case VecUnaryOp::kRelu: return run([](I x) { return x < 0 ? I{0} : x; });
    case VecUnaryOp::kNot: return run([](I x) { return I{x == 0}; });
    default: break;
  }
  throw_unsupported("unary", op_name(op), t);
}

// ---- reductions ----------------------------------------------------------------------------------

template <class Row> float float_reduce_row(VecReduceOp op, const Row& row) {
  switch (op) {
    case VecReduceOp::kSum: return row.sum();
    case VecReduceOp::kSumSquares: return row.squaredNorm();
    case VecReduceOp::kMax: return row.template maxCoeff<Eigen::PropagateNaN>();
    case VecReduceOp::kMin: return row.template minCoeff<Eigen::PropagateNaN>();
  }
  return 0.0f;
}

void float_reduce(VecReduceOp op, DType t, void* dst, const void* src, std::size_t rows,
                  std::size_t n) {
  if (t == DType::kFloat32) {
    CRowMap<float> m(static_cast<const float*>(src), static_cast<Index>(rows), static_cast<Index>(n));
    auto* d = static_cast<float*>(dst);
    for (std::size_t r = 0; r < rows; ++r) d[r] = float_reduce_row(op, m.row(static_cast<Index>(r)));
    return;
  }
  // fp16, bf16: widen one row at a time into reusable scratch, reduce in fp32, round once.
  thread_local std::vector<float> row;
  row.resize(n);
  const auto* s = static_cast<const std::uint16_t*>(src);
  auto* d = static_cast<std::uint16_t*>(dst);
  for (std::size_t r = 0; r < rows; ++r) {
    float16s_to_floats(t, s + r * n, row.data(), n);
    const float v = float_reduce_row(op, Eigen::Map<const Eigen::RowVectorXf>(row.data(), static_cast<Index>(n)));
    floats_to_float16s(t, &v, d + r, 1);
  }
}

template <class T>
void int_reduce(VecReduceOp op, void* dst, const void* src, std::size_t rows, std::size_t n) {
  using S = Storage<T>;
  auto* d = static_cast<S*>(dst);
  const auto* s = static_cast<const S*>(src);
  for (std::size_t r = 0; r < rows; ++r) {
    const S* row = s + r * n;
    std::int64_t acc = 0;
    switch (op) {
      case VecReduceOp::kSum:
        for (std::size_t i = 0; i < n; ++i) acc += load_int<T>(row[i]);
        break;
      case VecReduceOp::kSumSquares:
        // Wrapping sum of squares: unsigned arithmetic keeps the overflow defined.
        {
          std::uint64_t u = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const auto x = static_cast<std::uint64_t>(load_int<T>(row[i]));
            u += x * x;
          }
          acc = static_cast<std::int64_t>(u);
        }
        break;
      case VecReduceOp::kMax:
        acc = load_int<T>(row[0]);
        for (std::size_t i = 1; i < n; ++i) acc = std::max(acc, load_int<T>(row[i]));
        break;
      case VecReduceOp::kMin:
        acc = load_int<T>(row[0]);
        for (std::size_t i = 1; i < n; ++i) acc = std::min(acc, load_int<T>(row[i]));
        break;
    }
    d[r] = static_cast<S>(acc);
  }
}

// ---- casts ---------------------------------------------------------------------------------------

template <class D> constexpr bool kIsInt = std::is_same_v<D, std::int8_t> ||
                                           std::is_same_v<D, std::int32_t> ||
                                           std::is_same_v<D, std::int64_t>;

// float -> integer D: round, saturate, NaN -> 0.
template <class D> D float_to_int(double v, CastRounding rounding) {
  if (std::isnan(v)) return 0;
  v = rounding == CastRounding::kNearestEven ? std::nearbyint(v) : std::trunc(v);
  constexpr auto lo = std::numeric_limits<D>::min();
  constexpr auto hi = std::numeric_limits<D>::max();
  // double(hi) may round up to 2^63 for int64: anything >= it saturates.
  if (v >= static_cast<double>(hi)) return hi;
  if (v <= static_cast<double>(lo)) return lo;
  return static_cast<D>(v);
}

template <class D, class S>
void cast_loop(void* dst, const void* src, std::size_t n, CastRounding rounding) {
  auto* d = static_cast<Storage<D>*>(dst);
  const auto* s = static_cast<const Storage<S>*>(src);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (kIsFloat<S>) {
      const double v = static_cast<double>(s[i]);
      if constexpr (std::is_same_v<D, Bool>) d[i] = v != 0.0;  // NaN != 0 -> true
      else if constexpr (std::is_same_v<D, half>) d[i] = half(static_cast<float>(s[i]));
      else if constexpr (std::is_same_v<D, bfloat16>) d[i] = bfloat16(static_cast<float>(s[i]));
      else if constexpr (kIsFloat<D>) d[i] = static_cast<D>(s[i]);
      else d[i] = float_to_int<D>(v, rounding);
    } else {
      const std::int64_t v = load_int<S>(s[i]);
      if constexpr (std::is_same_v<D, Bool>) {
        d[i] = v != 0;
      } else if constexpr (std::is_same_v<D, half>) {
        d[i] = half(static_cast<float>(v));
      } else if constexpr (std::is_same_v<D, bfloat16>) {
        d[i] = bfloat16(static_cast<float>(v));
      } else if constexpr (kIsFloat<D>) {
        d[i] = static_cast<D>(v);
      } else {
        constexpr auto lo = static_cast<std::int64_t>(std::numeric_limits<D>::min());
        constexpr auto hi = static_cast<std::int64_t>(std::numeric_limits<D>::max());
        if (v < lo || v > hi) {
          if constexpr (std::is_same_v<S, std::int64_t>) {
            throw std::out_of_range("VFU cast int64 -> " + std::string(dtype_name(DTypeOf<D>::value)) +
                                    ": element " + std::to_string(i) + " = " + std::to_string(v) +
                                    " is out of range");
          }
          d[i] = v < lo ? static_cast<D>(lo) : static_cast<D>(hi);
        } else {
          d[i] = static_cast<D>(v);
        }
      }
    }
  }
}

bool ranges_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  return a_bytes != 0 && b_bytes != 0 && std::less<>{}(pa, pb + b_bytes) && std::less<>{}(pb, pa + a_bytes);
}

}  // namespace

// ---- support table -------------------------------------------------------------------------------

bool is_vfu_dtype(DType t) { return is_float(t) || is_int(t) || t == DType::kBool; }

bool vec_supported(VecBinaryOp op, DType t) {
  switch (op) {
    case VecBinaryOp::kAdd: case VecBinaryOp::kSub: case VecBinaryOp::kMul:
    case VecBinaryOp::kDiv: case VecBinaryOp::kPow:
      return is_float(t) || is_int(t);
    case VecBinaryOp::kMax: case VecBinaryOp::kMin:
    case VecBinaryOp::kEq: case VecBinaryOp::kNe: case VecBinaryOp::kLt:
    case VecBinaryOp::kLe: case VecBinaryOp::kGt: case VecBinaryOp::kGe:
      return is_vfu_dtype(t);
    case VecBinaryOp::kAnd: case VecBinaryOp::kOr:
    case VecBinaryOp::kBitAnd: case VecBinaryOp::kBitOr: case VecBinaryOp::kBitXor:
      return is_int(t) || t == DType::kBool;
    case VecBinaryOp::kShl: case VecBinaryOp::kShr:
      return is_int(t);
  }
  return false;
}

bool vec_supported(VecUnaryOp op, DType t) {
  switch (op) {
    case VecUnaryOp::kCopy: return dtype_size(t) > 0;
    case VecUnaryOp::kNeg: case VecUnaryOp::kAbs: case VecUnaryOp::kSquare:
    case VecUnaryOp::kRelu:
      return is_float(t) || is_int(t);
    case VecUnaryOp::kRecip: case VecUnaryOp::kExp: case VecUnaryOp::kLog:
    case VecUnaryOp::kSqrt: case VecUnaryOp::kRsqrt: case VecUnaryOp::kSigmoid:
    case VecUnaryOp::kTanh: case VecUnaryOp::kGelu: case VecUnaryOp::kSilu:
    case VecUnaryOp::kSin: case VecUnaryOp::kCos:
      return is_float(t);
    case VecUnaryOp::kNot: return is_int(t) || t == DType::kBool;
  }
  return false;
}

bool vec_supported(VecReduceOp op, DType t) {
  switch (op) {
    case VecReduceOp::kSum: case VecReduceOp::kSumSquares: return is_float(t) || is_int(t);
    case VecReduceOp::kMax: case VecReduceOp::kMin: return is_vfu_dtype(t);
  }
  return false;
}

bool vec_cast_supported(DType dst_t, DType src_t) {
  auto ok = [](DType t) { return is_vfu_dtype(t) || t == DType::kFloat64 || t == DType::kInt64; };
  return ok(dst_t) && ok(src_t);
}

void check_supported(VecBinaryOp op, DType t) {
  if (!vec_supported(op, t)) throw_unsupported("binary", op_name(op), t);
}
void check_supported(VecUnaryOp op, DType t) {
  if (!vec_supported(op, t)) throw_unsupported("unary", op_name(op), t);
}
void check_supported(VecReduceOp op, DType t) {
  if (!vec_supported(op, t)) throw_unsupported("reduce", op_name(op), t);
}
void check_cast_supported(DType dst_t, DType src_t) {
  if (!vec_cast_supported(dst_t, src_t))
    throw std::invalid_argument("VFU cast from dtype " + quoted(dtype_name(src_t)) + " to dtype " +
                                quoted(dtype_name(dst_t)) + " is not supported");
}
void check_vfu_dtype(std::string_view what, DType t) {
  if (!is_vfu_dtype(t))
    throw std::invalid_argument("VFU " + std::string(what) + " does not support dtype " +
                                quoted(dtype_name(t)));
}

// ---- entry points --------------------------------------------------------------------------------

void vec_binary(VecBinaryOp op, DType t, void* dst, const void* a, const void* b, std::size_t n) {
  check_supported(op, t);
  if (n == 0) return;
  binary_any(op, t, dst, Operand{a}, Operand{b}, n, /*mask_out=*/false);
}

void vec_binary_scalar(VecBinaryOp op, DType t, void* dst, const void* a, double scalar,
                       std::size_t n, bool scalar_first) {
  check_supported(op, t);
  const Operand s{nullptr, to_dtype_value("binary op '" + std::string(op_name(op)) + "'", t, scalar)};
  if (n == 0) return;
  if (scalar_first) binary_any(op, t, dst, s, Operand{a}, n, false);
  else binary_any(op, t, dst, Operand{a}, s, n, false);
}

void vec_compare(VecBinaryOp op, DType t, void* dst_bool, const void* a, const void* b,
                 std::size_t n) {
  check_supported(op, t);
  if (!is_predicate(op)) throw_unsupported("compare", op_name(op), t);
  if (n == 0) return;
  binary_any(op, t, dst_bool, Operand{a}, Operand{b}, n, /*mask_out=*/true);
}

void vec_compare_scalar(VecBinaryOp op, DType t, void* dst_bool, const void* a, double scalar,
                        std::size_t n, bool scalar_first) {
  check_supported(op, t);
  if (!is_predicate(op)) throw_unsupported("compare", op_name(op), t);
  const Operand s{nullptr, to_dtype_value("compare op '" + std::string(op_name(op)) + "'", t, scalar)};
  if (n == 0) return;
  if (scalar_first) binary_any(op, t, dst_bool, s, Operand{a}, n, true);
  else binary_any(op, t, dst_bool, Operand{a}, s, n, true);
}

void vec_unary(VecUnaryOp op, DType t, void* dst, const void* src, std::size_t n) {
  check_supported(op, t);
  if (n == 0) return;
  if (op == VecUnaryOp::kCopy) {
    if (dst != src) std::memmove(dst, src, n * dtype_size(t));
    return;
  }
  if (is_float(t)) return float_unary(op, t, dst, src, n);
  switch (t) {
    case DType::kInt32: return int_unary<std::int32_t>(op, t, dst, src, n);
    case DType::kInt8: return int_unary<std::int8_t>(op, t, dst, src, n);
    case DType::kBool: return int_unary<Bool>(op, t, dst, src, n);
    default: throw_unsupported("unary", op_name(op), t);
  }
}

void vec_reduce(VecReduceOp op, DType t, void* dst, const void* src, std::size_t rows,
                std::size_t n) {
  check_supported(op, t);
  if (rows == 0) return;
  if (n == 0) {
    if (op == VecReduceOp::kMax || op == VecReduceOp::kMin)
      throw std::invalid_argument("VFU reduce op " + quoted(op_name(op)) +
                                  " of an empty row (n = 0)");
    vec_fill(t, dst, 0.0, rows);
    return;
  }
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: return float_reduce(op, t, dst, src, rows, n);
    case DType::kInt32: return int_reduce<std::int32_t>(op, dst, src, rows, n);
    case DType::kInt8: return int_reduce<std::int8_t>(op, dst, src, rows, n);
    case DType::kBool: return int_reduce<Bool>(op, dst, src, rows, n);
    default: throw_unsupported("reduce", op_name(op), t);
  }
}

void vec_cast(DType dst_t, void* dst, DType src_t, const void* src, std::size_t n,
              CastRounding rounding) {
  check_cast_supported(dst_t, src_t);
  if (n == 0) return;
  const std::size_t src_bytes = n * dtype_size(src_t);
  const std::size_t dst_bytes = n * dtype_size(dst_t);
  if (dst_t == src_t) {
    std::memmove(dst, src, src_bytes);
    return;
  }
  // Element i of dst overwrites source bytes still to be read unless the ranges coincide exactly
  // with equal element sizes; any other overlap converts from a copy.
  std::vector<unsigned char> copy;
  if (ranges_overlap(dst, dst_bytes, src, src_bytes) &&
      !(dst == src && dtype_size(dst_t) == dtype_size(src_t))) {
    copy.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + src_bytes);
    src = copy.data();
  }
  if (src_t == DType::kFloat16 && dst_t == DType::kFloat32)
    return halves_to_floats(static_cast<const half*>(src), static_cast<float*>(dst), n);
  if (src_t == DType::kFloat32 && dst_t == DType::kFloat16)
    return floats_to_halves(static_cast<const float*>(src), static_cast<half*>(dst), n);
  if (src_t == DType::kBFloat16 && dst_t == DType::kFloat32)
    return bfloat16s_to_floats(static_cast<const bfloat16*>(src), static_cast<float*>(dst), n);
  if (src_t == DType::kFloat32 && dst_t == DType::kBFloat16)
    return floats_to_bfloat16s(static_cast<const float*>(src), static_cast<bfloat16*>(dst), n);
  dispatch(src_t, [&](auto s_tag) {
    dispatch(dst_t, [&](auto d_tag) {
      cast_loop<decltype(d_tag), decltype(s_tag)>(dst, src, n, rounding);
    });
  });
}

void vec_fill(DType t, void* dst, double value, std::size_t n) {
  check_vfu_dtype("fill", t);
  const double v = to_dtype_value("fill", t, value);
  switch (t) {
    case DType::kFloat32: std::fill_n(static_cast<float*>(dst), n, static_cast<float>(v)); return;
    case DType::kFloat16: std::fill_n(static_cast<half*>(dst), n, half(static_cast<float>(v))); return;
    case DType::kBFloat16: std::fill_n(static_cast<bfloat16*>(dst), n, bfloat16(static_cast<float>(v))); return;
    case DType::kInt32: std::fill_n(static_cast<std::int32_t*>(dst), n, static_cast<std::int32_t>(v)); return;
    case DType::kInt8: std::fill_n(static_cast<std::int8_t*>(dst), n, static_cast<std::int8_t>(v)); return;
    case DType::kBool: std::fill_n(static_cast<std::uint8_t*>(dst), n, static_cast<std::uint8_t>(v)); return;
    default: check_vfu_dtype("fill", t);
  }
}

namespace {
template <class U>
void select_loop(void* dst, const void* cond, const void* a, const void* b, std::size_t n) {
  auto* d = static_cast<U*>(dst);
  const auto* c = static_cast<const std::uint8_t*>(cond);
  const auto* pa = static_cast<const U*>(a);
  const auto* pb = static_cast<const U*>(b);
  for (std::size_t i = 0; i < n; ++i) d[i] = c[i] != 0 ? pa[i] : pb[i];
}
}  // namespace

void vec_select(DType t, void* dst, const void* cond, const void* a, const void* b, std::size_t n) {
  check_vfu_dtype("select", t);
  switch (dtype_size(t)) {
    case 1: return select_loop<std::uint8_t>(dst, cond, a, b, n);
    case 2: return select_loop<std::uint16_t>(dst, cond, a, b, n);
    case 4: return select_loop<std::uint32_t>(dst, cond, a, b, n);
    default: check_vfu_dtype("select", t);
  }
}

}  // namespace mlusim::sim::compute
