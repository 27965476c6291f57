// quantize, dequantize, qadd and int8_weight_sums (quant.h): streaming VFU kernels, one BLOCK task per
// core. The tensor is a list of runs [outer x C runs of `inner` elements] (one run of all elements
// per tensor), cut into chunks of at most kChunk elements; task t takes chunks t, t + T, ...
// Per chunk: one copy in, the VFU steps of quant.h's formula, one copy out. Per-channel scales
// and zero points are read by the scalar unit (one GDRAM load each per chunk) and checked there.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "mlusim/mlu/quant.h"
#include "mlusim/sim/kernel_api.h"
#include "quant/quant_checks.h"

namespace mlusim::mlu {

using namespace mlusim::dev;
using sim::VecBinaryOp;

namespace {

// Elements per chunk: fp32 + int32 + int8 staging = 36 KiB of NRAM, a few VFU passes of
// startup cost amortised over 4096 elements.
constexpr std::size_t kChunk = 4096;

struct StreamJob {
  bool quantize = true;
  bool add = false;  // qadd: x and x2 dequantized, added (relu), quantized with (y_scale, y_zero_point)
  std::uint64_t x2 = 0;
  double scale2 = 1.0, y_scale = 1.0;
  std::int64_t zero_point2 = 0, y_zero_point = 0;
  bool relu = false;
  std::uint64_t x = 0, y = 0;
  std::size_t outer = 1, channels = 1, inner = 0;
  bool per_channel = false;
  double scale = 1.0;  // per tensor: quantize multiplies by fp32(1 / scale), dequantize by fp32(scale)
  std::int64_t zero_point = 0;
  std::uint64_t scales = 0, zero_points = 0;  // per channel: fp32 [C], int32 [C]
  std::int64_t quant_min = -128, quant_max = 127;
  std::size_t chunks_per_run() const { return std::max<std::size_t>(1, ceil_div(inner, kChunk)); }
  std::size_t items() const { return outer * channels * chunks_per_run(); }
};

void stream_kernel(const StreamJob& j) {
  const Addr f32 = alloc(Space::kNram, kChunk * 4), i32 = alloc(Space::kNram, kChunk * 4),
             i8 = alloc(Space::kNram, kChunk);
  Addr f32b, i8b;
  if (j.add) f32b = alloc(Space::kNram, kChunk * 4), i8b = alloc(Space::kNram, kChunk);
  const std::size_t cpr = j.chunks_per_run();
  for (std::size_t it = task_id(); it < j.items(); it += task_dim()) {
    const std::size_t run = it / cpr, e0 = (it % cpr) * kChunk, n = std::min(kChunk, j.inner - e0);
    if (n == 0) continue;
    const std::size_t c = run % j.channels;
    double scale = j.scale;
    std::int64_t zp = j.zero_point;
    if (j.per_channel) {
      const float s = load(sim::Gdram<float>(j.scales) + static_cast<std::int64_t>(c));
      zp = load(sim::Gdram<std::int32_t>(j.zero_points) + static_cast<std::int64_t>(c));
      if (!(std::isfinite(s) && s > 0.0f))
        trap((j.quantize ? "quantize: scales[" : "dequantize: scales[") + std::to_string(c) + "] = " +
             std::to_string(s) + " must be finite and > 0");
      if (zp < j.quant_min || zp > j.quant_max)
        trap((j.quantize ? "quantize: zero_points[" : "dequantize: zero_points[") + std::to_string(c) + "] = " +
             std::to_string(zp) + " is outside [" + std::to_string(j.quant_min) + ", " + std::to_string(j.quant_max) +
             "]");
      scale = j.quantize ? static_cast<double>(1.0f / s) : static_cast<double>(s);  // fp32 reciprocal (torch's 1.0 / scales)
    } else if (j.quantize) {
      scale = 1.0 / j.scale;  // in double, as Python computes it; the VFU rounds the scalar to fp32
    }
    const std::uint64_t off = run * j.inner + e0;
    if (j.add) {
      memcpy(i8, Addr{Space::kGdram, j.x + off}, n, Dir::kGdram2Nram);
      memcpy(i8b, Addr{Space::kGdram, j.x2 + off}, n, Dir::kGdram2Nram);
      vec_cast(DType::kFloat32, f32, DType::kInt8, i8, n);
      vec_binary_scalar(VecBinaryOp::kSub, DType::kFloat32, f32, f32, static_cast<double>(j.zero_point), n);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, f32, f32, j.scale, n);
      vec_cast(DType::kFloat32, f32b, DType::kInt8, i8b, n);
      vec_binary_scalar(VecBinaryOp::kSub, DType::kFloat32, f32b, f32b, static_cast<double>(j.zero_point2), n);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, f32b, f32b, j.scale2, n);
      vec_binary(VecBinaryOp::kAdd, DType::kFloat32, f32, f32, f32b, n);
      if (j.relu) vec_unary(sim::VecUnaryOp::kRelu, DType::kFloat32, f32, f32, n);
      scale = 1.0 / j.y_scale;
      zp = j.y_zero_point;
    } else if (j.quantize) {
      memcpy(f32, Addr{Space::kGdram, j.x + off * 4}, n * 4, Dir::kGdram2Nram);
    }
    if (j.quantize || j.add) {
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, f32, f32, scale, n);
      vec_cast(DType::kInt32, i32, DType::kFloat32, f32, n);  // round half to even, saturating
      vec_binary_scalar(VecBinaryOp::kMax, DType::kInt32, i32, i32, static_cast<double>(j.quant_min - zp), n);
      vec_binary_scalar(VecBinaryOp::kMin, DType::kInt32, i32, i32, static_cast<double>(j.quant_max - zp), n);
      vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, i32, i32, static_cast<double>(zp), n);
      vec_cast(DType::kInt8, i8, DType::kInt32, i32, n);
      memcpy(Addr{Space::kGdram, j.y + off}, i8, n, Dir::kNram2Gdram);
    } else {
      memcpy(i8, Addr{Space::kGdram, j.x + off}, n, Dir::kGdram2Nram);
      vec_cast(DType::kFloat32, f32, DType::kInt8, i8, n);
      vec_binary_scalar(VecBinaryOp::kSub, DType::kFloat32, f32, f32, static_cast<double>(zp), n);
      vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, f32, f32, scale, n);
      memcpy(Addr{Space::kGdram, j.y + off * 4}, f32, n * 4, Dir::kNram2Gdram);
    }
  }
}

Status run_stream(Handle* h, bool quantize, const QuantParams& q, const TensorDesc& x, const void* x_ptr,
                  const TensorDesc& y, void* y_ptr) {
  const char* op = quantize ? "quantize" : "dequantize";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {quantize ? DType::kFloat32 : DType::kInt8}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {quantize ? DType::kInt8 : DType::kFloat32}, op, "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_RETURN_IF_ERROR(quant::check_quant_params(q, x, op));
  MLU_CHECK(x.strides() == y.strides() && (x.contiguous() || (q.axis < 0 && x.span_bytes() == x.numel() * x.element_size())),
            Status::kBadParam,
            std::string(op) + ": x " + x.str() + " and y " + y.str() +
                " must be contiguous (per tensor: dense with the same strides)");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  StreamJob j;
  j.quantize = quantize;
  j.x = reinterpret_cast<std::uintptr_t>(x_ptr);
  j.y = reinterpret_cast<std::uintptr_t>(y_ptr);
  j.inner = static_cast<std::size_t>(x.numel());
  j.scale = q.scale;
  j.zero_point = q.zero_point;
  j.quant_min = q.quant_min;
  j.quant_max = q.quant_max;
  if (q.axis >= 0) {
    j.per_channel = true;
    j.channels = static_cast<std::size_t>(x.dim(q.axis));
    j.outer = 1;
    for (int i = 0; i < q.axis; ++i) j.outer *= static_cast<std::size_t>(x.dim(i));
    j.inner = j.channels == 0 || j.outer == 0 ? 0 : static_cast<std::size_t>(x.numel()) / (j.outer * j.channels);
    j.scales = reinterpret_cast<std::uintptr_t>(q.scales_ptr);
    j.zero_points = reinterpret_cast<std::uintptr_t>(q.zero_points_ptr);
  }
  const std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * 5;
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(launch(*h, op, [j] { stream_kernel(j); }, block_dim(*h, j.items()), cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

Status run_qadd(Handle* h, const QAddParams& p, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
                const void* b_ptr, const TensorDesc& y, void* y_ptr) {
  constexpr const char* op = "qadd";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&a, op, "a"));
  MLU_RETURN_IF_ERROR(check_desc(&b, op, "b"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(a, {DType::kInt8}, op, "a"));
  MLU_RETURN_IF_ERROR(check_dtype_in(b, {DType::kInt8}, op, "b"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kInt8}, op, "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(a, b, op, "a", "b"));
  MLU_RETURN_IF_ERROR(check_same_shape(a, y, op, "a", "y"));
  for (const QuantParams* q : {&p.a, &p.b, &p.y}) {
    MLU_CHECK(q->axis < 0, Status::kBadParam, std::string(op) + ": per-tensor quantization only");
    const char* what = q == &p.a ? "a" : q == &p.b ? "b" : "y";
    MLU_RETURN_IF_ERROR(quant::check_per_tensor(q->scale, q->zero_point, q->quant_min, q->quant_max, op, what));
  }
  MLU_CHECK(p.y.quant_min == -128 && p.y.quant_max == 127, Status::kBadParam,
            std::string(op) + ": y's quant_min/quant_max must be -128/127");
  MLU_CHECK(a.strides() == b.strides() && a.strides() == y.strides() &&
                a.span_bytes() == static_cast<std::uint64_t>(a.numel()),
            Status::kBadParam,
            std::string(op) + ": a " + a.str() + ", b " + b.str() + " and y " + y.str() +
                " must be dense with the same strides");
  MLU_RETURN_IF_ERROR(check_ptr(a_ptr, a, op, "a"));
  MLU_RETURN_IF_ERROR(check_ptr(b_ptr, b, op, "b"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  StreamJob j;
  j.quantize = false, j.add = true, j.relu = p.relu;
  j.x = reinterpret_cast<std::uintptr_t>(a_ptr), j.x2 = reinterpret_cast<std::uintptr_t>(b_ptr);
  j.y = reinterpret_cast<std::uintptr_t>(y_ptr);
  j.inner = static_cast<std::size_t>(a.numel());
  j.scale = p.a.scale, j.zero_point = p.a.zero_point, j.scale2 = p.b.scale, j.zero_point2 = p.b.zero_point;
  j.y_scale = p.y.scale, j.y_zero_point = p.y.zero_point;
  if (a.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(launch(*h, op, [j] { stream_kernel(j); }, block_dim(*h, j.items()), cnrtFuncTypeBlock));
  record(*h, op, 0, static_cast<std::uint64_t>(a.numel()) * 3, 1);
  return Status::kSuccess;
}

// int8_weight_sums: blocks of whole rows (rows x len <= kChunk), or one row in column pieces.
struct SumsJob {
  std::uint64_t w = 0, sums = 0;
  std::size_t rows = 0, len = 0;
  std::size_t rows_per_block() const { return std::max<std::size_t>(1, kChunk / std::max<std::size_t>(len, 1)); }
};

void sums_kernel(const SumsJob& j) {
  const Addr i8 = alloc(Space::kNram, kChunk), i32 = alloc(Space::kNram, kChunk * 4),
             part = alloc(Space::kNram, kChunk * 4), total = alloc(Space::kNram, kChunk * 4);
  const std::size_t rb = j.rows_per_block(), blocks = ceil_div(j.rows, rb);
  for (std::size_t b = task_id(); b < blocks; b += task_dim()) {
    const std::size_t r0 = b * rb, nr = std::min(rb, j.rows - r0);
    vec_fill(DType::kInt32, total, 0.0, nr);
    for (std::size_t k0 = 0; k0 < j.len; k0 += kChunk) {
      const std::size_t kc = std::min(kChunk, j.len - k0);
      // nr rows of kc bytes (nr > 1 only when a whole row fits: kc == len).
      memcpy_strided(i8, Addr{Space::kGdram, j.w + r0 * j.len + k0},
                     CopyShape{kc, nr, static_cast<std::int64_t>(kc), static_cast<std::int64_t>(j.len)},
                     Dir::kGdram2Nram);
      vec_cast(DType::kInt32, i32, DType::kInt8, i8, nr * kc);
      vec_reduce(sim::VecReduceOp::kSum, DType::kInt32, part, i32, nr, kc);
      vec_binary(VecBinaryOp::kAdd, DType::kInt32, total, total, part, nr);
    }
    memcpy(Addr{Space::kGdram, j.sums + r0 * 4}, total, nr * 4, Dir::kNram2Gdram);
  }
}

}  // namespace

Status quantize(Handle* h, const QuantParams& q, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                void* y_ptr) {
  return run_stream(h, true, q, x, x_ptr, y, y_ptr);
}

Status dequantize(Handle* h, const QuantParams& q, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                  void* y_ptr) {
  return run_stream(h, false, q, x, x_ptr, y, y_ptr);
}

Status qadd(Handle* h, const QAddParams& p, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
            const void* b_ptr, const TensorDesc& y, void* y_ptr) {
  return run_qadd(h, p, a, a_ptr, b, b_ptr, y, y_ptr);
}

Status int8_weight_sums(Handle* h, const TensorDesc& w, const void* w_ptr, const TensorDesc& sums, void* sums_ptr) {
  constexpr const char* op = "int8_weight_sums";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&w, op, "w"));
  MLU_RETURN_IF_ERROR(check_dtype_in(w, {DType::kInt8}, op, "w"));
  MLU_CHECK(w.ndim() >= 1 && w.contiguous(), Status::kBadParam,
            std::string(op) + ": w must be contiguous with at least one dim, got " + w.str());
  MLU_RETURN_IF_ERROR(check_ptr(w_ptr, w, op, "w"));
  MLU_RETURN_IF_ERROR(quant::check_channel_vector(&sums, sums_ptr, DType::kInt32, w.dim(0), op, "sums"));
  SumsJob j;
  j.w = reinterpret_cast<std::uintptr_t>(w_ptr);
  j.sums = reinterpret_cast<std::uintptr_t>(sums_ptr);
  j.rows = static_cast<std::size_t>(w.dim(0));
  j.len = j.rows == 0 ? 0 : static_cast<std::size_t>(w.numel()) / j.rows;
  if (j.rows == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  const std::size_t blocks = ceil_div(j.rows, j.rows_per_block());
  MLU_RETURN_IF_ERROR(launch(*h, op, [j] { sums_kernel(j); }, block_dim(*h, blocks), cnrtFuncTypeBlock));
  record(*h, op, 0, static_cast<std::uint64_t>(w.numel()) + j.rows * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
