// sort: a bitonic sorting network on (key, index) pairs (sort.h).
//
// Keys are int32 on the VFU. Floats (fp16 widened to fp32 first) become order-preserving int32
// keys on load: x + 0.0 (-0.0 -> 0.0), NaN -> the canonical positive quiet NaN (its bits are
// above +inf's), then a negative number's bits v -> -v - 1 + INT_MIN (reverses their order below
// every non-negative one); the inverse runs before the values are stored. Integers are keys as
// they are (int8/bool widened, int64 narrowed with the VFU's range check).
//
// A compare-exchange of a stage (merge size k, stride j) gathers the lower elements of every pair
// (position p with p & j == 0) to one NRAM buffer and their partners (p + j) to another with two
// strided NRAM copies, computes on the VFU
//     before = key_hi <op> key_lo | (key_hi == key_lo & index_hi < index_lo)   (op: < or >)
//     swap   = before != descending_block                                        (block: p & k)
// and selects both halves, then scatters them back. Ties are broken by the original index, so the
// network is stable. Padding (to P, a power of two) takes the key that sorts last (INT_MAX
// ascending, INT_MIN descending) and indices >= n, so it ends behind every real element.
//
// Rows with P <= C (the chunk one core holds in NRAM) are packed C / P to a chunk: one launch.
// Longer rows: a launch sorts each chunk (alternating directions, as a bitonic sort's halves),
// then for every merge size k > C the stages with stride j >= C run as launches over pairs of
// GDRAM tiles (a tile is C / 2 elements, its direction one scalar), and one launch runs the
// strides below C within each chunk; the last one converts and stores values and indices.
#include "mlusim/mlu/sort.h"

#include <algorithm>
#include <climits>
#include <cmath>
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
using sim::VecUnaryOp;

constexpr const char* kOp = "sort";
constexpr DType kKey = DType::kInt32;
// NRAM bytes per chunk element (the buffers of Bufs below) and what stays free.
constexpr std::size_t kBytesPerElement = 48;
constexpr std::size_t kReserve = 1024;

struct SortLaunch {
  DType dtype = DType::kFloat32;
  bool floating = true, descending = false;
  std::int64_t rows = 0, n = 0, P = 1, C = 1;
  std::uint64_t x = 0, values = 0, indices = 0, ws_keys = 0, ws_idx = 0;
  std::int32_t pad = INT_MAX;
};

std::int64_t next_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::int64_t chunk_elements(const Handle& h) {
  const std::uint64_t avail = h.nram_bytes() > kReserve ? h.nram_bytes() - kReserve : 0;
  std::int64_t c = 1;
  while (static_cast<std::uint64_t>(c) * 2 * kBytesPerElement <= avail) c <<= 1;
  return c;
}

Addr at(Addr base, std::int64_t elems, std::size_t es) { return base.offset(elems * static_cast<std::int64_t>(es)); }
Addr gdram(std::uint64_t base, std::int64_t elems, std::size_t es) {
  return Addr{sim::Space::kGdram, base + static_cast<std::uint64_t>(elems) * es};
}

// The NRAM buffers of one task: C-element io (8 bytes each), keys K and indices I, the pair halves
// (LK/HK/LI/HI), the selected lower halves (TK/TI), masks, the direction pattern D, and constant
// tiles (ones for D, the pad key, the canonical NaN).
struct Bufs {
  Addr io, K, I, LK, HK, LI, HI, TK, TI, M1, M2, M3, S, D, ones, canon;
  explicit Bufs(std::int64_t C) {
    const auto c = static_cast<std::size_t>(C), h = c / 2 > 0 ? c / 2 : 1;
    auto nram = [](std::size_t bytes) { return dev::alloc(sim::Space::kNram, bytes); };
    io = nram(c * 8);
    K = nram(c * 4), I = nram(c * 4);
    LK = nram(h * 4), HK = nram(h * 4), LI = nram(h * 4), HI = nram(h * 4), TK = nram(h * 4), TI = nram(h * 4);
    M1 = nram(c * 4), M2 = nram(h * 4), M3 = nram(h * 4), S = nram(c), D = nram(h * 4), ones = nram(h * 4);
    canon = nram(c * 4);
    dev::vec_fill(kKey, ones, 1, h);
    dev::vec_fill(kKey, canon, 0x7FC00000, c);  // fp32 quiet NaN bits
  }
};

// before = hi <op> lo | (hi == lo & index_hi < index_lo); swap = before != D (or != dconst);
// the new lower half in TK/TI, the upper one in place in HK/HI.
void compare_exchange(const SortLaunch& L, const Bufs& b, std::size_t m, int dconst) {
  dev::vec_binary(L.descending ? VecBinaryOp::kGt : VecBinaryOp::kLt, kKey, b.M1, b.HK, b.LK, m);
  dev::vec_binary(VecBinaryOp::kEq, kKey, b.M2, b.HK, b.LK, m);
  dev::vec_binary(VecBinaryOp::kLt, kKey, b.M3, b.HI, b.LI, m);
  dev::vec_binary(VecBinaryOp::kAnd, kKey, b.M2, b.M2, b.M3, m);
  dev::vec_binary(VecBinaryOp::kOr, kKey, b.M1, b.M1, b.M2, m);
  if (dconst < 0)
    dev::vec_binary(VecBinaryOp::kNe, kKey, b.M1, b.M1, b.D, m);
  else if (dconst == 1)
    dev::vec_binary_scalar(VecBinaryOp::kEq, kKey, b.M1, b.M1, 0, m);
  dev::vec_cast(DType::kBool, b.S, kKey, b.M1, m);
  dev::vec_select(kKey, b.TK, b.S, b.HK, b.LK, m);
  dev::vec_select(kKey, b.HK, b.S, b.LK, b.HK, m);
  dev::vec_select(kKey, b.TI, b.S, b.HI, b.LI, m);
  dev::vec_select(kKey, b.HI, b.S, b.LI, b.HI, m);
}

// One stage (merge size k, stride j) on the len elements of K/I (len a multiple of 2j, positions
// within a row = offsets in the buffer modulo a multiple of 2k). dconst: the direction of every
// block (0 ascending, 1 descending), or -1 for the pattern of position bit k.
void local_stage(const SortLaunch& L, const Bufs& b, std::int64_t len, std::int64_t j, std::int64_t k, int dconst) {
  const auto m = static_cast<std::size_t>(len / 2);
  const auto pairs = static_cast<std::size_t>(len / (2 * j));
  const auto seg = static_cast<std::size_t>(j * 4);
  const dev::CopyShape gather{seg, pairs, static_cast<std::int64_t>(seg), static_cast<std::int64_t>(2 * seg)};
  const dev::CopyShape scatter{seg, pairs, static_cast<std::int64_t>(2 * seg), static_cast<std::int64_t>(seg)};
  const auto nn = dev::Dir::kNram2Nram;
  dev::memcpy_strided(b.LK, b.K, gather, nn);
  dev::memcpy_strided(b.HK, at(b.K, j, 4), gather, nn);
  dev::memcpy_strided(b.LI, b.I, gather, nn);
  dev::memcpy_strided(b.HI, at(b.I, j, 4), gather, nn);
  if (dconst < 0) {  // in the lower halves' order: runs of k/2 ascending, k/2 descending
    dev::vec_fill(kKey, b.D, 0, m);
    const auto run = static_cast<std::size_t>(k / 2 * 4);
    dev::memcpy_strided(at(b.D, k / 2, 4), b.ones,
                        dev::CopyShape{run, m / static_cast<std::size_t>(k), static_cast<std::int64_t>(2 * run), 0}, nn);
  }
  compare_exchange(L, b, m, dconst);
  dev::memcpy_strided(b.K, b.TK, scatter, nn);
  dev::memcpy_strided(at(b.K, j, 4), b.HK, scatter, nn);
  dev::memcpy_strided(b.I, b.TI, scatter, nn);
  dev::memcpy_strided(at(b.I, j, 4), b.HI, scatter, nn);
}

// I[0, len) = first + (offset modulo period), period a power of two dividing len.
void iota(const Bufs& b, std::int64_t len, std::int64_t period, std::int64_t first) {
  dev::vec_fill(kKey, b.I, static_cast<double>(first), 1);
  for (std::int64_t m = 1; m < period; m *= 2)
    dev::vec_binary_scalar(VecBinaryOp::kAdd, kKey, at(b.I, m, 4), b.I, static_cast<double>(m),
                           static_cast<std::size_t>(std::min(m, period - m)));
  if (len > period)
    dev::memcpy_strided(at(b.I, period, 4), b.I,
                        dev::CopyShape{static_cast<std::size_t>(period * 4), static_cast<std::size_t>(len / period - 1),
                                       period * 4, 0},
                        dev::Dir::kNram2Nram);
}

// io (len elements of x's dtype) -> keys in K.
void to_keys(const SortLaunch& L, const Bufs& b, std::size_t len) {
  if (!L.floating) {
    if (L.dtype == kKey)
      dev::vec_unary(VecUnaryOp::kCopy, kKey, b.K, b.io, len);
    else
      dev::vec_cast(kKey, b.K, L.dtype, b.io, len);
    return;
  }
  const DType f = DType::kFloat32;
  if (L.dtype == f)
    dev::vec_binary_scalar(VecBinaryOp::kAdd, f, b.K, b.io, 0.0, len);  // -0.0 -> 0.0
  else {
    dev::vec_cast(f, b.K, L.dtype, b.io, len);
    dev::vec_binary_scalar(VecBinaryOp::kAdd, f, b.K, b.K, 0.0, len);
  }
  dev::vec_binary(VecBinaryOp::kNe, f, b.M1, b.K, b.K, len);  // NaN
  dev::vec_cast(DType::kBool, b.S, f, b.M1, len);
  dev::vec_select(kKey, b.K, b.S, b.canon, b.K, len);
  dev::vec_binary_scalar(VecBinaryOp::kLt, kKey, b.M1, b.K, 0, len);
  dev::vec_cast(DType::kBool, b.S, kKey, b.M1, len);
  dev::vec_unary(VecUnaryOp::kNeg, kKey, b.M1, b.K, len);
  dev::vec_binary_scalar(VecBinaryOp::kAdd, kKey, b.M1, b.M1, -1, len);
  dev::vec_binary_scalar(VecBinaryOp::kAdd, kKey, b.M1, b.M1, static_cast<double>(INT_MIN), len);
  dev::vec_select(kKey, b.K, b.S, b.M1, b.K, len);
}

// Keys in K -> values of x's dtype in io (the inverse of to_keys; K is overwritten).
void from_keys(const SortLaunch& L, const Bufs& b, std::size_t len) {
  if (!L.floating) {
    if (L.dtype == kKey)
      dev::vec_unary(VecUnaryOp::kCopy, kKey, b.io, b.K, len);
    else
      dev::vec_cast(L.dtype, b.io, kKey, b.K, len);
    return;
  }
  dev::vec_binary_scalar(VecBinaryOp::kLt, kKey, b.M1, b.K, 0, len);
  dev::vec_cast(DType::kBool, b.S, kKey, b.M1, len);
  dev::vec_binary_scalar(VecBinaryOp::kAdd, kKey, b.M1, b.K, static_cast<double>(INT_MAX), len);
  dev::vec_binary_scalar(VecBinaryOp::kAdd, kKey, b.M1, b.M1, 2, len);
  dev::vec_unary(VecUnaryOp::kNeg, kKey, b.M1, b.M1, len);
  dev::vec_select(kKey, b.K, b.S, b.M1, b.K, len);
  if (L.dtype == DType::kFloat32)
    dev::vec_unary(VecUnaryOp::kCopy, DType::kFloat32, b.io, b.K, len);
  else
    dev::vec_cast(L.dtype, b.io, DType::kFloat32, b.K, len);
}

// Loads `count` rows of `n` elements (GDRAM x from element `first`) to rows of `stride` in K,
// as keys; the rest of each row is the pad key.
void load_rows(const SortLaunch& L, const Bufs& b, std::int64_t first, std::int64_t count, std::int64_t n,
               std::int64_t stride) {
  const std::size_t es = sim::dtype_size(L.dtype);
  const auto len = static_cast<std::size_t>(count * stride);
  if (n < stride) dev::vec_fill(DType::kInt8, b.io, 0, len * es);  // defined bytes under the pads
  if (n > 0)
    dev::memcpy_strided(b.io, gdram(L.x, first, es),
                        dev::CopyShape{static_cast<std::size_t>(n) * es, static_cast<std::size_t>(count),
                                       static_cast<std::int64_t>(stride * static_cast<std::int64_t>(es)),
                                       static_cast<std::int64_t>(n * static_cast<std::int64_t>(es))},
                        dev::Dir::kGdram2Nram);
  to_keys(L, b, len);
  if (n < stride) {
    dev::vec_fill(kKey, b.M1, L.pad, static_cast<std::size_t>(stride - n));
    dev::memcpy_strided(at(b.K, n, 4), b.M1,
                        dev::CopyShape{static_cast<std::size_t>((stride - n) * 4), static_cast<std::size_t>(count),
                                       stride * 4, 0},
                        dev::Dir::kNram2Nram);
  }
}

// Stores the first n of each of `count` rows of `stride` (K/I) to values/indices from `first`.
void store_rows(const SortLaunch& L, const Bufs& b, std::int64_t first, std::int64_t count, std::int64_t n,
                std::int64_t stride) {
  if (n <= 0) return;
  const std::size_t es = sim::dtype_size(L.dtype);
  const auto len = static_cast<std::size_t>(count * stride);
  auto shape = [&](std::size_t e) {
    return dev::CopyShape{static_cast<std::size_t>(n) * e, static_cast<std::size_t>(count),
                          static_cast<std::int64_t>(n * static_cast<std::int64_t>(e)),
                          static_cast<std::int64_t>(stride * static_cast<std::int64_t>(e))};
  };
  from_keys(L, b, len);
  dev::memcpy_strided(gdram(L.values, first, es), b.io, shape(es), dev::Dir::kNram2Gdram);
  dev::vec_cast(DType::kInt64, b.io, kKey, b.I, len);
  dev::memcpy_strided(gdram(L.indices, first, 8), b.io, shape(8), dev::Dir::kNram2Gdram);
}

// Rows of P <= C, C / P of them per chunk: the whole network in NRAM.
void packed_body(const SortLaunch& L) {
  const Bufs b(L.C);
  const std::int64_t per = L.C / L.P, batches = (L.rows + per - 1) / per;
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t t = task; t < batches; t += tasks) {
    const std::int64_t r0 = t * per, count = std::min(per, L.rows - r0), len = count * L.P;
    load_rows(L, b, r0 * L.n, count, L.n, L.P);
    iota(b, len, L.P, 0);
    for (std::int64_t k = 2; k <= L.P; k *= 2)
      for (std::int64_t j = k / 2; j >= 1; j /= 2) local_stage(L, b, len, j, k, k == L.P ? 0 : -1);
    store_rows(L, b, r0 * L.n, count, L.n, L.P);
  }
}

// Long rows, first launch: each chunk sorted, in the direction of its block of size C.
void chunk_sort_body(const SortLaunch& L) {
  const Bufs b(L.C);
  const std::int64_t chunks = L.P / L.C, items = L.rows * chunks;
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t w = task; w < items; w += tasks) {
    const std::int64_t r = w / chunks, c = w % chunks, start = c * L.C;
    const std::int64_t real = std::clamp<std::int64_t>(L.n - start, 0, L.C);
    load_rows(L, b, r * L.n + start, 1, real, L.C);
    iota(b, L.C, L.C, start);
    for (std::int64_t k = 2; k <= L.C; k *= 2)
      for (std::int64_t j = k / 2; j >= 1; j /= 2) local_stage(L, b, L.C, j, k, k == L.C ? static_cast<int>(c & 1) : -1);
    const std::int64_t at_ws = r * L.P + start;
    dev::memcpy(gdram(L.ws_keys, at_ws, 4), b.K, static_cast<std::size_t>(L.C * 4), dev::Dir::kNram2Gdram);
    dev::memcpy(gdram(L.ws_idx, at_ws, 4), b.I, static_cast<std::size_t>(L.C * 4), dev::Dir::kNram2Gdram);
  }
}

// Long rows, a stage with stride j >= C: pairs of C/2-element tiles at distance j in the workspace.
void global_stage_body(const SortLaunch& L, std::int64_t k, std::int64_t j) {
  const Bufs b(L.C);
  const std::int64_t h = L.C / 2, tiles = L.P / L.C, items = L.rows * tiles;
  const auto bytes = static_cast<std::size_t>(h * 4);
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t w = task; w < items; w += tasks) {
    const std::int64_t r = w / tiles, t = w % tiles;
    const std::int64_t lo = (t * h) / j * 2 * j + (t * h) % j, base = r * L.P;
    const auto g2n = dev::Dir::kGdram2Nram, n2g = dev::Dir::kNram2Gdram;
    dev::memcpy_async(b.LK, gdram(L.ws_keys, base + lo, 4), bytes, g2n);
    dev::memcpy_async(b.HK, gdram(L.ws_keys, base + lo + j, 4), bytes, g2n);
    dev::memcpy_async(b.LI, gdram(L.ws_idx, base + lo, 4), bytes, g2n);
    dev::memcpy_async(b.HI, gdram(L.ws_idx, base + lo + j, 4), bytes, g2n);
    dev::sync_io();
    compare_exchange(L, b, static_cast<std::size_t>(h), (lo & k) != 0 ? 1 : 0);
    dev::memcpy_async(gdram(L.ws_keys, base + lo, 4), b.TK, bytes, n2g);
    dev::memcpy_async(gdram(L.ws_keys, base + lo + j, 4), b.HK, bytes, n2g);
    dev::memcpy_async(gdram(L.ws_idx, base + lo, 4), b.TI, bytes, n2g);
    dev::memcpy_async(gdram(L.ws_idx, base + lo + j, 4), b.HI, bytes, n2g);
    dev::sync_io();
  }
}

// Long rows, the strides below C of merge size k within each chunk; the last (k == P) stores the
// results.
void chunk_merge_body(const SortLaunch& L, std::int64_t k) {
  const Bufs b(L.C);
  const std::int64_t chunks = L.P / L.C, items = L.rows * chunks;
  const auto bytes = static_cast<std::size_t>(L.C * 4);
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t w = task; w < items; w += tasks) {
    const std::int64_t r = w / chunks, c = w % chunks, start = c * L.C, at_ws = r * L.P + start;
    dev::memcpy_async(b.K, gdram(L.ws_keys, at_ws, 4), bytes, dev::Dir::kGdram2Nram);
    dev::memcpy_async(b.I, gdram(L.ws_idx, at_ws, 4), bytes, dev::Dir::kGdram2Nram);
    dev::sync_io();
    const int dconst = k == L.P ? 0 : ((start & k) != 0 ? 1 : 0);
    for (std::int64_t j = L.C / 2; j >= 1; j /= 2) local_stage(L, b, L.C, j, k, dconst);
    if (k == L.P) {
      store_rows(L, b, r * L.n + start, 1, std::clamp<std::int64_t>(L.n - start, 0, L.C), L.C);
    } else {
      dev::memcpy(gdram(L.ws_keys, at_ws, 4), b.K, bytes, dev::Dir::kNram2Gdram);
      dev::memcpy(gdram(L.ws_idx, at_ws, 4), b.I, bytes, dev::Dir::kNram2Gdram);
    }
  }
}

struct Shape {
  std::int64_t rows = 0, n = 0, P = 1, C = 1;
};
Shape shape_of(const Handle& h, const TensorDesc& x) {
  Shape s;
  s.n = x.ndim() == 0 ? 1 : x.dim(x.ndim() - 1);
  s.rows = s.n == 0 ? 0 : x.numel() / s.n;
  s.P = next_pow2(std::max<std::int64_t>(s.n, 1));
  s.C = chunk_elements(h);
  return s;
}

}  // namespace

std::size_t sort_workspace_bytes(const Handle* h, const TensorDesc& x) {
  if (h == nullptr || !x.valid()) return 0;
  const Shape s = shape_of(*h, x);
  return s.P <= s.C ? 0 : static_cast<std::size_t>(s.rows * s.P) * 8;
}

Status sort(Handle* h, const TensorDesc& x, const void* x_ptr, bool descending, const TensorDesc& values,
            void* values_ptr, const TensorDesc& indices, void* indices_ptr, void* workspace,
            std::size_t workspace_bytes) {
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_RETURN_IF_ERROR(check_desc(&x, kOp, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&values, kOp, "values"));
  MLU_RETURN_IF_ERROR(check_desc(&indices, kOp, "indices"));
  MLU_RETURN_IF_ERROR(check_dtype_in(
      x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kInt8, DType::kBool},
      kOp, "x"));
  MLU_CHECK(x.contiguous() && values.contiguous() && indices.contiguous(), Status::kBadParam,
            std::string(kOp) + ": x " + x.str() + ", values " + values.str() + " and indices " + indices.str() +
                " must be contiguous");
  MLU_CHECK(values.dims() == x.dims() && values.dtype() == x.dtype(), Status::kBadParam,
            std::string(kOp) + ": values " + values.str() + " must have x's dims and dtype (x " + x.str() + ")");
  MLU_CHECK(indices.dims() == x.dims() && indices.dtype() == DType::kInt64, Status::kBadParam,
            std::string(kOp) + ": indices " + indices.str() + " must be int64 with x's dims (x " + x.str() + ")");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, kOp, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(values_ptr, values, kOp, "values"));
  MLU_RETURN_IF_ERROR(check_ptr(indices_ptr, indices, kOp, "indices"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(kOp, "values", values));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(kOp, "indices", indices));
  const Shape s = shape_of(*h, x);
  MLU_CHECK(s.n <= INT_MAX, Status::kNotSupported,
            std::string(kOp) + ": rows of " + std::to_string(s.n) + " elements (int32 indices on the VFU: at most 2^31 - 1)");
  const std::size_t need = sort_workspace_bytes(h, x);
  MLU_CHECK(need == 0 || (workspace != nullptr && workspace_bytes >= need), Status::kBadParam,
            std::string(kOp) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, needs " +
                std::to_string(need) + " (sort_workspace_bytes)");
  if (x.numel() == 0) return Status::kSuccess;

  auto L = std::make_shared<SortLaunch>();
  L->dtype = x.dtype();
  L->floating = sim::dtype_is_float(x.dtype());
  L->descending = descending;
  L->rows = s.rows, L->n = s.n, L->P = s.P, L->C = s.C;
  L->pad = descending ? INT_MIN : INT_MAX;
  L->x = reinterpret_cast<std::uintptr_t>(x_ptr);
  L->values = reinterpret_cast<std::uintptr_t>(values_ptr);
  L->indices = reinterpret_cast<std::uintptr_t>(indices_ptr);
  std::uint32_t kernels = 0;
  auto run = [&](std::int64_t items, std::function<void()> body) -> Status {
    ++kernels;
    return launch(*h, kOp, std::move(body), block_dim(*h, static_cast<std::uint64_t>(items)), CNRT_FUNC_TYPE_BLOCK);
  };
  if (s.P <= s.C) {
    const std::int64_t per = s.C / s.P;
    MLU_RETURN_IF_ERROR(run((s.rows + per - 1) / per, [L] { packed_body(*L); }));
  } else {
    L->ws_keys = reinterpret_cast<std::uintptr_t>(workspace);
    L->ws_idx = L->ws_keys + static_cast<std::uint64_t>(s.rows * s.P) * 4;
    const std::int64_t items = s.rows * (s.P / s.C);
    MLU_RETURN_IF_ERROR(run(items, [L] { chunk_sort_body(*L); }));
    for (std::int64_t k = 2 * s.C; k <= s.P; k *= 2) {
      for (std::int64_t j = k / 2; j >= s.C; j /= 2) MLU_RETURN_IF_ERROR(run(items, [L, k, j] { global_stage_body(*L, k, j); }));
      MLU_RETURN_IF_ERROR(run(items, [L, k] { chunk_merge_body(*L, k); }));
    }
  }
  record(*h, kOp, 0,
         static_cast<std::uint64_t>(x.numel()) * (2 * x.element_size() + indices.element_size()), kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
