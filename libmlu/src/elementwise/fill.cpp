// fill: every element of a strided tensor = one value, for every dtype (int64 and fp64 too).
//
// The kernel builds one tile of the value on chip (one scalar store of the element's bytes,
// then doubling NRAM->NRAM copies up to the tile size) and streams it out to every tile of y
// with async strided stores. The value is converted to y's dtype as torch's fill_ converts a
// Scalar (integral dtypes truncate and must not overflow; bool is value != 0).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/fill.h"
#include "elementwise/iter_space.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "elementwise/tile_io.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

// Tiles this large amortise the store latency; NRAM bounds them too.
constexpr std::int64_t kMinFillTileElems = 4096;

struct FillLaunch {
  ew::IterSpace space;  // operand 0 = y
  ew::TilePlan plan;
  std::uint64_t pattern = 0;  // the element's bytes (little-endian), dtype_size(y) of them used
};

void fill_body(const FillLaunch& L) {
  const std::size_t es = sim::dtype_size(L.space.operands[0].dtype);
  const auto n = static_cast<std::int64_t>(L.plan.max_elems());
  const dev::Addr buf = dev::alloc(sim::Space::kNram, static_cast<std::size_t>(n) * es);
  dev::store_bytes(buf, &L.pattern, es);
  tile::replicate(buf, static_cast<std::int64_t>(es), n, {});
  const std::int64_t tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t first = L.plan.tiles * task / tasks, last = L.plan.tiles * (task + 1) / tasks;
  for (std::int64_t t = first; t < last; ++t)
    tile::store(tile::box_view(L.space, L.space.operands[0], ew::tile_at(L.space, L.plan, t)), buf, true);
  dev::sync_io();
}

template <class T> std::uint64_t bytes_of(T v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

Status integral_pattern(double value, DType t, std::uint64_t* out) {
  MLU_CHECK(std::isfinite(value), Status::kBadParam,
            "fill: value " + std::to_string(value) + " cannot be converted to " + std::string(sim::dtype_name(t)));
  const double v = std::trunc(value);
  const double lo = t == DType::kInt8 ? -128.0 : t == DType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = t == DType::kInt8 ? 127.0 : t == DType::kInt32 ? 2147483647.0 : 9223372036854775807.0;
  MLU_CHECK(v >= lo && v <= hi, Status::kBadParam,
            "fill: value " + std::to_string(value) + " cannot be converted to " + std::string(sim::dtype_name(t)) +
                " without overflow");
  if (t == DType::kInt8) *out = bytes_of(static_cast<std::int8_t>(v));
  if (t == DType::kInt32) *out = bytes_of(static_cast<std::int32_t>(v));
  if (t == DType::kInt64) *out = bytes_of(v >= hi ? INT64_MAX : static_cast<std::int64_t>(v));
  return Status::kSuccess;
}

Status element_pattern(double value, DType t, std::uint64_t* out) {
  switch (t) {
    case DType::kFloat32:
      MLU_CHECK(!std::isfinite(value) || std::fabs(value) <= 3.4028234663852886e38, Status::kBadParam,
                "fill: value " + std::to_string(value) + " overflows fp32");
      *out = bytes_of(static_cast<float>(value));
      return Status::kSuccess;
    case DType::kFloat16:
      MLU_CHECK(!std::isfinite(value) || std::fabs(value) <= 65504.0, Status::kBadParam,
                "fill: value " + std::to_string(value) + " overflows fp16");
      *out = bytes_of(sim::half(static_cast<float>(value)));
      return Status::kSuccess;
    case DType::kBFloat16:
      MLU_CHECK(!std::isfinite(value) || std::fabs(value) <= 3.3895313892515355e38, Status::kBadParam,
                "fill: value " + std::to_string(value) + " overflows bf16");
      *out = bytes_of(sim::bfloat16(static_cast<float>(value)));
      return Status::kSuccess;
    case DType::kFloat64: *out = bytes_of(value); return Status::kSuccess;
    case DType::kBool: *out = value != 0.0 ? 1 : 0; return Status::kSuccess;
    case DType::kInt8: case DType::kInt32: case DType::kInt64: return integral_pattern(value, t, out);
  }
  return fail(Status::kNotSupported, "fill: unknown dtype");
}

}  // namespace

namespace ew {

Status launch_fill(Handle& h, double value, const TensorDesc& y, void* y_ptr) {
  auto L = std::make_shared<FillLaunch>();
  MLU_RETURN_IF_ERROR(element_pattern(value, y.dtype(), &L->pattern));
  if (y.numel() == 0) return Status::kSuccess;
  L->space = make_iter_space(y.dims(), {&y}, {y_ptr});
  const auto nram_elems = static_cast<std::int64_t>((h.nram_bytes() - 128) / y.element_size());
  const std::int64_t per_task = (y.numel() + h.total_cores() - 1) / h.total_cores();
  L->plan = plan_tiles(L->space, std::min(nram_elems, std::max(kMinFillTileElems, per_task)));
  return launch(h, "fill", [L] { fill_body(*L); }, block_dim(h, static_cast<std::uint64_t>(L->plan.tiles)),
                CNRT_FUNC_TYPE_BLOCK);
}

}  // namespace ew

Status fill(Handle* h, double value, const TensorDesc& y, void* y_ptr) {
  const char* name = "fill";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {}, {"y", &y, y_ptr}, /*bytes_only=*/true));
  MLU_RETURN_IF_ERROR(ew::launch_fill(*h, value, y, y_ptr));
  if (y.numel() > 0) record(*h, name, 0, static_cast<std::uint64_t>(y.numel()) * y.element_size(), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
