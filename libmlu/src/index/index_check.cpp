#include "index/index_check.h"

#include <limits>
#include <string>

#include "elementwise/tile_io.h"

namespace mlusim::mlu::idx {

using sim::VecBinaryOp;

IndexChecker::IndexChecker(std::size_t capacity, DType index_dtype) : dtype_(index_dtype) {
  raw_ = dev::alloc(sim::Space::kNram, capacity * sim::dtype_size(index_dtype));
  values_ = index_dtype == DType::kInt32 ? raw_ : dev::alloc(sim::Space::kNram, capacity * 4);
  flags_ = dev::alloc(sim::Space::kNram, capacity * 4);
  flags2_ = dev::alloc(sim::Space::kNram, capacity * 4);
  any_ = dev::alloc(sim::Space::kNram, 4);
}

std::size_t IndexChecker::bytes_per_index(DType index_dtype) {
  return sim::dtype_size(index_dtype) + (index_dtype == DType::kInt32 ? 0 : 4) + 8;
}

Addr IndexChecker::check(Addr src, std::size_t count, const IndexBound& bound) const {
  Addr values = src;
  if (dtype_ != DType::kInt32) {
    dev::vec_cast(DType::kInt32, values_, dtype_, src, count);  // int64 beyond int32 faults here
    values = values_;
  }
  if (count == 0) return values;
  dev::vec_binary_scalar(VecBinaryOp::kLt, DType::kInt32, flags_, values, 0.0, count);
  if (bound.size <= std::numeric_limits<std::int32_t>::max()) {
    dev::vec_binary_scalar(VecBinaryOp::kGe, DType::kInt32, flags2_, values, static_cast<double>(bound.size), count);
    dev::vec_binary(VecBinaryOp::kMax, DType::kInt32, flags_, flags_, flags2_, count);
  }
  dev::vec_reduce(sim::VecReduceOp::kMax, DType::kInt32, any_, flags_, 1, count);
  if (dev::load(dev::Nram<std::int32_t>(any_.value)) == 0) return values;
  // Report the first offender (the kernel stops here).
  for (std::size_t i = 0; i < count; ++i) {
    if (dev::load(dev::Nram<std::int32_t>(flags_.value) + static_cast<std::int64_t>(i)) == 0) continue;
    dev::trap(std::string(bound.op) + ": index " + std::to_string(index_at(values, i)) + " is out of range for dim " +
              std::to_string(bound.dim) + " of size " + std::to_string(bound.size));
  }
  return values;
}

Addr IndexChecker::load(std::uint64_t gdram, std::int64_t stride, std::size_t count, const IndexBound& bound) const {
  const auto es = static_cast<std::int64_t>(sim::dtype_size(dtype_));
  tile::copy_box(raw_, Addr{sim::Space::kGdram, gdram}, dev::Dir::kGdram2Nram, static_cast<std::size_t>(es),
                 {{static_cast<std::int64_t>(count), es, stride * es}}, false);
  return check(raw_, count, bound);
}

std::int64_t index_at(Addr values, std::size_t i) {
  return dev::load(dev::Nram<std::int32_t>(values.value) + static_cast<std::int64_t>(i));
}

}  // namespace mlusim::mlu::idx
