// scan: cumsum / cumprod / cummax / cummin along the rows of a contiguous [rows, n] tensor (scan.h).
//
// Per chunk of NRAM (C elements): load (and widen to the compute type: fp32 for floats, int32 for
// integers), the Hillis-Steele doubling passes, for a long row's later chunks the combine with
// the carry, narrow and store. One doubling pass over `len` elements of rows of length n:
//   TV = identity; TV[r, s:] = V[r, :n-s] (a strided NRAM copy; TI likewise for indices)
//   V = combine(TV, V)   (TV holds the earlier elements)
// where combine is an add or a multiply, or for max/min (torch's cummax/cummin order)
//   later = V >= TV (<= for min) | V != V (a NaN is always taken)
//   V = later ? V : TV;  I = later ? I : TI
// (V >= TV is false when TV is NaN, so a NaN running value stays until the next NaN.) The
// identities (0, 1, -inf/INT_MIN, +inf/INT_MAX) make a row's head keep its own element.
// VFU passes per chunk: ceil(log2(min(n, C))) doubling passes of 2 (sum, prod) or 5-7 (max, min)
// intrinsics over the chunk, plus the loads, casts and stores; DMA: x read once, y (and indices)
// written once.
#include "mlusim/mlu/scan.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/streaming_kernel.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;
using sim::VecBinaryOp;

// NRAM bytes per chunk element: io (8: int64 staging), V, TV, I, TI, M1, M2 (4 each), S (1).
constexpr std::size_t kBytesPerElement = 8 + 6 * 4 + 1;
constexpr std::size_t kReserve = 1024;  // the carry buffers and alignment

struct ScanLaunch {
  ScanOp op = ScanOp::kSum;
  DType dtype = DType::kFloat32, ct = DType::kFloat32;  // x's dtype, the compute dtype
  bool floating = true, with_indices = false;
  std::int64_t rows = 0, n = 0, C = 1;
  std::uint64_t x = 0, y = 0, indices = 0;
};

Addr nram_at(Addr base, std::int64_t elems, std::size_t es) {
  return base.offset(elems * static_cast<std::int64_t>(es));
}
Addr gdram(std::uint64_t base, std::int64_t elems, std::size_t es) {
  return Addr{sim::Space::kGdram, base + static_cast<std::uint64_t>(elems) * es};
}

double identity(const ScanLaunch& L) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (L.op) {
    case ScanOp::kSum: return 0.0;
    case ScanOp::kProd: return 1.0;
    case ScanOp::kMax: return L.floating ? -inf : static_cast<double>(INT_MIN);
    case ScanOp::kMin: return L.floating ? inf : static_cast<double>(INT_MAX);
  }
  return 0.0;
}

struct Bufs {
  Addr io, V, TV, I, TI, M1, M2, S, carry_v, carry_i;
  explicit Bufs(std::int64_t C) {
    const auto c = static_cast<std::size_t>(C);
    auto nram = [](std::size_t bytes) { return dev::alloc(sim::Space::kNram, bytes); };
    io = nram(c * 8);
    V = nram(c * 4), TV = nram(c * 4), I = nram(c * 4), TI = nram(c * 4), M1 = nram(c * 4), M2 = nram(c * 4);
    S = nram(c);
    carry_v = nram(4), carry_i = nram(4);
  }
};

bool loads_direct(const ScanLaunch& L) { return L.dtype == L.ct; }  // fp32 or int32: no staging

// V[0, len) = x[first, first + len) in the compute dtype.
void load(const ScanLaunch& L, const Bufs& b, std::int64_t first, std::int64_t len) {
  const std::size_t es = sim::dtype_size(L.dtype);
  const auto bytes = static_cast<std::size_t>(len) * es;
  if (loads_direct(L)) {
    dev::memcpy(b.V, gdram(L.x, first, es), bytes, dev::Dir::kGdram2Nram);
    return;
  }
  dev::memcpy(b.io, gdram(L.x, first, es), bytes, dev::Dir::kGdram2Nram);
  dev::vec_cast(L.ct, b.V, L.dtype, b.io, static_cast<std::size_t>(len));
}

// y[first, first + len) = V (narrowed to x's dtype), indices likewise from I.
void store(const ScanLaunch& L, const Bufs& b, std::int64_t first, std::int64_t len) {
  const std::size_t es = sim::dtype_size(L.dtype);
  const auto n = static_cast<std::size_t>(len);
  if (loads_direct(L)) {
    dev::memcpy(gdram(L.y, first, es), b.V, n * es, dev::Dir::kNram2Gdram);
  } else {
    dev::vec_cast(L.dtype, b.io, L.ct, b.V, n);
    dev::memcpy(gdram(L.y, first, es), b.io, n * es, dev::Dir::kNram2Gdram);
  }
  if (L.with_indices) {
    dev::vec_cast(DType::kInt64, b.io, DType::kInt32, b.I, n);
    dev::memcpy(gdram(L.indices, first, 8), b.io, n * 8, dev::Dir::kNram2Gdram);
  }
}

// I[0, len) = first + (offset modulo period), period dividing len.
void iota(const Bufs& b, std::int64_t len, std::int64_t period, std::int64_t first) {
  dev::vec_fill(DType::kInt32, b.I, static_cast<double>(first), 1);
  for (std::int64_t m = 1; m < period; m *= 2)
    dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, nram_at(b.I, m, 4), b.I, static_cast<double>(m),
                           static_cast<std::size_t>(std::min(m, period - m)));
  if (len > period)
    dev::memcpy_strided(nram_at(b.I, period, 4), b.I,
                        dev::CopyShape{static_cast<std::size_t>(period * 4), static_cast<std::size_t>(len / period - 1),
                                       period * 4, 0},
                        dev::Dir::kNram2Nram);
}

// V (and I) = combine(TV (and TI): the earlier elements, V: the later ones) over len elements.
void combine(const ScanLaunch& L, const Bufs& b, std::size_t len) {
  switch (L.op) {
    case ScanOp::kSum: dev::vec_binary(VecBinaryOp::kAdd, L.ct, b.V, b.TV, b.V, len); return;
    case ScanOp::kProd: dev::vec_binary(VecBinaryOp::kMul, L.ct, b.V, b.TV, b.V, len); return;
    case ScanOp::kMax:
    case ScanOp::kMin: break;
  }
  dev::vec_binary(L.op == ScanOp::kMax ? VecBinaryOp::kGe : VecBinaryOp::kLe, L.ct, b.M1, b.V, b.TV, len);
  if (L.floating) {
    dev::vec_binary(VecBinaryOp::kNe, L.ct, b.M2, b.V, b.V, len);  // NaN: always taken
    dev::vec_binary(VecBinaryOp::kMax, L.ct, b.M1, b.M1, b.M2, len);
  }
  dev::vec_cast(DType::kBool, b.S, L.ct, b.M1, len);
  dev::vec_select(L.ct, b.V, b.S, b.V, b.TV, len);
  if (L.with_indices) dev::vec_select(DType::kInt32, b.I, b.S, b.I, b.TI, len);
}

// The doubling scan of `count` rows of n elements packed at V (and I).
void scan_rows(const ScanLaunch& L, const Bufs& b, std::int64_t count, std::int64_t n) {
  const auto len = static_cast<std::size_t>(count * n);
  for (std::int64_t s = 1; s < n; s *= 2) {
    const dev::CopyShape shift{static_cast<std::size_t>((n - s) * 4), static_cast<std::size_t>(count), n * 4, n * 4};
    dev::vec_fill(L.ct, b.TV, identity(L), len);
    dev::memcpy_strided(nram_at(b.TV, s, 4), b.V, shift, dev::Dir::kNram2Nram);
    if (L.with_indices) dev::memcpy_strided(nram_at(b.TI, s, 4), b.I, shift, dev::Dir::kNram2Nram);
    combine(L, b, len);
  }
}

void scan_body(const ScanLaunch& L) {
  const Bufs b(L.C);
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  if (L.n <= L.C) {  // C / n whole rows per chunk
    const std::int64_t per = L.C / L.n, batches = (L.rows + per - 1) / per;
    for (std::int64_t t = task; t < batches; t += tasks) {
      const std::int64_t r0 = t * per, count = std::min(per, L.rows - r0), len = count * L.n;
      load(L, b, r0 * L.n, len);
      if (L.with_indices) iota(b, len, L.n, 0);
      scan_rows(L, b, count, L.n);
      store(L, b, r0 * L.n, len);
    }
    return;
  }
  for (std::int64_t r = task; r < L.rows; r += tasks) {  // a long row: its chunks in order
    for (std::int64_t start = 0; start < L.n; start += L.C) {
      const std::int64_t m = std::min(L.C, L.n - start), first = r * L.n + start;
      load(L, b, first, m);
      if (L.with_indices) iota(b, m, m, start);
      scan_rows(L, b, 1, m);
      if (start > 0) {  // combine with the carry, broadcast over the chunk
        const dev::CopyShape bcast{4, static_cast<std::size_t>(m), 4, 0};
        dev::memcpy_strided(b.TV, b.carry_v, bcast, dev::Dir::kNram2Nram);
        if (L.with_indices) dev::memcpy_strided(b.TI, b.carry_i, bcast, dev::Dir::kNram2Nram);
        combine(L, b, static_cast<std::size_t>(m));
      }
      dev::memcpy(b.carry_v, nram_at(b.V, m - 1, 4), 4, dev::Dir::kNram2Nram);
      if (L.with_indices) dev::memcpy(b.carry_i, nram_at(b.I, m - 1, 4), 4, dev::Dir::kNram2Nram);
      store(L, b, first, m);
    }
  }
}

}  // namespace

const char* scan_op_name(ScanOp op) {
  switch (op) {
    case ScanOp::kSum: return "cumsum";
    case ScanOp::kProd: return "cumprod";
    case ScanOp::kMax: return "cummax";
    case ScanOp::kMin: return "cummin";
  }
  return "scan";
}

std::int64_t scan_chunk_elements(const Handle* h) {
  if (h == nullptr) return 0;
  const std::uint64_t avail = h->nram_bytes() > kReserve ? h->nram_bytes() - kReserve : 0;
  return static_cast<std::int64_t>(avail / kBytesPerElement / 32 * 32);
}

Status scan(Handle* h, ScanOp op, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr,
            const TensorDesc* indices, void* indices_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, "scan"));
  const char* name = scan_op_name(op);
  MLU_CHECK(op == ScanOp::kSum || op == ScanOp::kProd || op == ScanOp::kMax || op == ScanOp::kMin, Status::kBadParam,
            "scan: unknown op " + std::to_string(static_cast<int>(op)));
  MLU_RETURN_IF_ERROR(check_desc(&x, name, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, name, "y"));
  const bool extreme = op == ScanOp::kMax || op == ScanOp::kMin;
  if (op == ScanOp::kProd)
    MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16}, name, "x"));
  else
    MLU_RETURN_IF_ERROR(check_dtype_in(
        x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kInt8, DType::kBool},
        name, "x"));
  MLU_CHECK(y.dtype() == x.dtype() && y.dims() == x.dims(), Status::kBadParam,
            std::string(name) + ": y " + y.str() + " must have x's dims and dtype (x " + x.str() + ")");
  MLU_CHECK(x.contiguous() && y.contiguous(), Status::kBadParam,
            std::string(name) + ": x " + x.str() + " and y " + y.str() + " must be contiguous");
  MLU_CHECK(indices == nullptr || extreme, Status::kBadParam,
            std::string(name) + ": takes no indices (only cummax and cummin have them)");
  if (indices != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(indices, name, "indices"));
    MLU_CHECK(indices->dtype() == DType::kInt64 && indices->dims() == x.dims() && indices->contiguous(),
              Status::kBadParam,
              std::string(name) + ": indices " + indices->str() + " must be contiguous int64 with x's dims (x " +
                  x.str() + ")");
    MLU_RETURN_IF_ERROR(check_ptr(indices_ptr, *indices, name, "indices"));
  }
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, name, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, name, "y"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(name, "y", y));
  const std::int64_t n = x.ndim() == 0 ? 1 : x.dim(x.ndim() - 1);
  MLU_CHECK(n <= INT_MAX, Status::kNotSupported,
            std::string(name) + ": rows of " + std::to_string(n) + " elements (int32 indices on the VFU: at most 2^31 - 1)");
  const std::int64_t C = scan_chunk_elements(h);
  MLU_CHECK(C >= 32, Status::kNotSupported, std::string(name) + ": NRAM too small for a scan chunk");
  if (x.numel() == 0) {
    record(*h, name, 0, 0, 0);
    return Status::kSuccess;
  }

  auto L = std::make_shared<ScanLaunch>();
  L->op = op;
  L->dtype = x.dtype();
  L->floating = sim::dtype_is_float(x.dtype());
  L->ct = L->floating ? DType::kFloat32 : DType::kInt32;
  L->with_indices = indices != nullptr;
  L->n = n;
  L->rows = x.numel() / n;
  L->C = C;
  L->x = reinterpret_cast<std::uintptr_t>(x_ptr);
  L->y = reinterpret_cast<std::uintptr_t>(y_ptr);
  L->indices = reinterpret_cast<std::uintptr_t>(indices_ptr);
  const std::int64_t items = n <= C ? (L->rows + C / n - 1) / (C / n) : L->rows;
  MLU_RETURN_IF_ERROR(launch(*h, name, [L] { scan_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(items)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, name, 0,
         static_cast<std::uint64_t>(x.numel()) * (x.element_size() + y.element_size() + (indices ? 8 : 0)), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
