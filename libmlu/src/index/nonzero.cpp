// nonzero: stream compaction in two launches. Each task owns a contiguous run of x's elements
// (one "part"); per chunk it loads the run to NRAM, turns it into int32 flags on the VFU
// (x != 0, one compare; int64 as two int32 halves and a max per pair; NaN != 0 is true) and then
//   count: sums the flags (one VFU reduce per chunk) and stores its part's total;
//   fill:  walks the flags with the scalar unit and writes the multi-index of each set flag
//          (ndim int64 per element, divisions by the dims) to an NRAM row buffer, which one DMA
//          puts at the part's rows of y (offsets from the host, after it read the counts).
// The scalar walk costs one scalar access per element plus ndim stores per nonzero element: a
// compaction without a VFU collect instruction.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {
namespace {

using dev::Addr;

struct NonzeroLaunch {
  std::uint64_t x = 0, counts = 0, y = 0;
  DType dtype = DType::kFloat32;
  std::int64_t numel = 0, chunk = 0;
  std::vector<std::int64_t> dims, offsets;
};

// Per-element NRAM bytes: raw (<= 8), compare scratch (<= 8: int64 as two int32), int32 flags and,
// for fill, one output row of ndim int64.
std::size_t nram_per_element(std::size_t ndim) { return 8 + 8 + 4 + 8 * std::max<std::size_t>(ndim, 1); }

struct Buffers {
  Addr raw, scratch, flags, rows, sum;
  explicit Buffers(const NonzeroLaunch& L) {
    const auto c = static_cast<std::size_t>(L.chunk);
    raw = dev::alloc(sim::Space::kNram, c * 8);
    scratch = dev::alloc(sim::Space::kNram, c * 8);
    flags = dev::alloc(sim::Space::kNram, c * 4);
    rows = dev::alloc(sim::Space::kNram, c * 8 * std::max<std::size_t>(L.dims.size(), 1));
    sum = dev::alloc(sim::Space::kNram, 4);
  }
};

// Elements [i0, i0 + n) of x -> int32 flags (1 = nonzero) at b.flags.
void load_flags(const NonzeroLaunch& L, const Buffers& b, std::int64_t i0, std::size_t n) {
  const std::size_t es = sim::dtype_size(L.dtype);
  dev::memcpy(b.raw, Addr{sim::Space::kGdram, L.x + static_cast<std::uint64_t>(i0) * es}, n * es, dev::Dir::kGdram2Nram);
  switch (L.dtype) {
    case DType::kInt64:  // nonzero iff either 32-bit half is
      dev::vec_binary_scalar(sim::VecBinaryOp::kNe, DType::kInt32, b.scratch, b.raw, 0.0, 2 * n);
      dev::vec_reduce(sim::VecReduceOp::kMax, DType::kInt32, b.flags, b.scratch, n, 2);
      return;
    case DType::kInt32:
      dev::vec_binary_scalar(sim::VecBinaryOp::kNe, DType::kInt32, b.flags, b.raw, 0.0, n);
      return;
    default:
      dev::vec_binary_scalar(sim::VecBinaryOp::kNe, L.dtype, b.scratch, b.raw, 0.0, n);
      dev::vec_cast(DType::kInt32, b.flags, L.dtype, b.scratch, n);
  }
}

std::pair<std::int64_t, std::int64_t> my_part(const NonzeroLaunch& L) {
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  return {L.numel * task / tasks, L.numel * (task + 1) / tasks};
}

void count_body(const NonzeroLaunch& L) {
  const Buffers b(L);
  const auto [first, last] = my_part(L);
  std::int64_t count = 0;
  for (std::int64_t i0 = first; i0 < last; i0 += L.chunk) {
    const auto n = static_cast<std::size_t>(std::min(L.chunk, last - i0));
    load_flags(L, b, i0, n);
    dev::vec_reduce(sim::VecReduceOp::kSum, DType::kInt32, b.sum, b.flags, 1, n);
    count += dev::load(dev::Nram<std::int32_t>(b.sum.value));
  }
  dev::store(dev::Nram<std::int64_t>(b.rows.value), count);
  dev::memcpy(Addr{sim::Space::kGdram, L.counts + static_cast<std::uint64_t>(dev::task_id()) * 8}, b.rows, 8,
              dev::Dir::kNram2Gdram);
}

void fill_body(const NonzeroLaunch& L) {
  const Buffers b(L);
  const auto [first, last] = my_part(L);
  const auto ndim = static_cast<std::int64_t>(L.dims.size());
  std::int64_t row = L.offsets[dev::task_id()];
  for (std::int64_t i0 = first; i0 < last; i0 += L.chunk) {
    const auto n = static_cast<std::size_t>(std::min(L.chunk, last - i0));
    load_flags(L, b, i0, n);
    std::int64_t found = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (dev::load(dev::Nram<std::int32_t>(b.flags.value) + static_cast<std::int64_t>(j)) == 0) continue;
      std::int64_t flat = i0 + static_cast<std::int64_t>(j);
      for (std::int64_t d = ndim - 1; d >= 0; --d) {  // row-major: the last dim varies fastest
        const std::int64_t size = L.dims[static_cast<std::size_t>(d)];
        dev::store(dev::Nram<std::int64_t>(b.rows.value) + (found * ndim + d), flat % size);
        flat /= size;
      }
      ++found;
    }
    if (found > 0 && ndim > 0) {
      const auto bytes = static_cast<std::size_t>(found * ndim * 8);
      dev::memcpy(Addr{sim::Space::kGdram, L.y + static_cast<std::uint64_t>(row * ndim * 8)}, b.rows, bytes,
                  dev::Dir::kNram2Gdram);
    }
    row += found;
  }
}

Status check_x(Handle* h, const TensorDesc& x, const void* x_ptr, const char* op) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_CHECK(x.contiguous(), Status::kBadParam, std::string(op) + ": x " + x.str() + " must be contiguous");
  MLU_CHECK(x.dtype() != DType::kFloat64, Status::kNotSupported,
            std::string(op) + ": x " + x.str() + ": float64 has no VFU compare (narrow it to float32 first)");
  return check_ptr(x_ptr, x, op, "x");
}

std::shared_ptr<NonzeroLaunch> make_launch(const Handle& h, const TensorDesc& x, const void* x_ptr) {
  auto L = std::make_shared<NonzeroLaunch>();
  L->x = reinterpret_cast<std::uintptr_t>(x_ptr);
  L->dtype = x.dtype();
  L->numel = x.numel();
  L->dims = x.dims();
  const auto per_chunk = static_cast<std::int64_t>((h.nram_bytes() / 2) / nram_per_element(L->dims.size()));
  L->chunk = std::clamp<std::int64_t>(per_chunk, 1, 4096);
  return L;
}

}  // namespace

std::int64_t nonzero_parts(const Handle* h, const TensorDesc& x) {
  return h == nullptr ? 0 : static_cast<std::int64_t>(block_dim(*h, static_cast<std::uint64_t>(x.numel())).x);
}

Status nonzero_count(Handle* h, const TensorDesc& x, const void* x_ptr, void* counts_ptr) {
  const char* op = "nonzero_count";
  MLU_RETURN_IF_ERROR(check_x(h, x, x_ptr, op));
  MLU_CHECK(counts_ptr != nullptr, Status::kBadParam, std::string(op) + ": counts is null");
  auto L = make_launch(*h, x, x_ptr);
  L->counts = reinterpret_cast<std::uintptr_t>(counts_ptr);
  const cnrtDim3_t dim = block_dim(*h, static_cast<std::uint64_t>(x.numel()));
  if (x.numel() == 0) return Status::kSuccess;  // the caller reads no counts (one part of 0)
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { count_body(*L); }, dim, CNRT_FUNC_TYPE_BLOCK));
  record(*h, op, 0, static_cast<std::uint64_t>(x.numel()) * x.element_size() + dim.x * 8ULL, 1);
  return Status::kSuccess;
}

Status nonzero_fill(Handle* h, const TensorDesc& x, const void* x_ptr, const std::vector<std::int64_t>& offsets,
                    const TensorDesc& y, void* y_ptr) {
  const char* op = "nonzero_fill";
  MLU_RETURN_IF_ERROR(check_x(h, x, x_ptr, op));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  const cnrtDim3_t dim = block_dim(*h, static_cast<std::uint64_t>(x.numel()));  // one task per part
  const auto parts = static_cast<std::int64_t>(dim.x);
  MLU_CHECK(static_cast<std::int64_t>(offsets.size()) == parts, Status::kBadParam,
            std::string(op) + ": " + std::to_string(offsets.size()) + " offsets for " + std::to_string(parts) + " parts");
  MLU_CHECK(y.dtype() == DType::kInt64 && y.ndim() == 2 && y.dim(1) == x.ndim() && y.contiguous(), Status::kBadParam,
            std::string(op) + ": y " + y.str() + " must be contiguous int64 [count, " + std::to_string(x.ndim()) + "]");
  for (std::size_t p = 0; p < offsets.size(); ++p)
    MLU_CHECK(offsets[p] >= 0 && offsets[p] <= y.dim(0) && (p == 0 || offsets[p] >= offsets[p - 1]), Status::kBadParam,
              std::string(op) + ": offsets[" + std::to_string(p) + "] = " + std::to_string(offsets[p]) +
                  " is not a running count within y's " + std::to_string(y.dim(0)) + " rows");
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "y", y));
  if (x.numel() == 0 || y.numel() == 0) return Status::kSuccess;
  auto L = make_launch(*h, x, x_ptr);
  L->y = reinterpret_cast<std::uintptr_t>(y_ptr);
  L->offsets = offsets;
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { fill_body(*L); }, dim, CNRT_FUNC_TYPE_BLOCK));
  record(*h, op, 0, static_cast<std::uint64_t>(x.numel()) * x.element_size() + static_cast<std::uint64_t>(y.numel()) * 8, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
