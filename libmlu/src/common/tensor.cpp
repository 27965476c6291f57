#include "mlusim/mlu/tensor.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "common/error.h"

namespace mlusim::mlu {

Status TensorDesc::set(DType dtype, const std::vector<std::int64_t>& dims, Layout layout) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<std::int64_t>(dims[i + 1], 1);
  return set(dtype, dims, strides, layout);
}

Status TensorDesc::set(DType dtype, const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
                       Layout layout) {
  valid_ = false;
  MLU_CHECK(dims.size() <= kMaxDims, Status::kBadParam,
            "tensor descriptor: " + std::to_string(dims.size()) + " dims, at most " + std::to_string(kMaxDims));
  MLU_CHECK(strides.size() == dims.size(), Status::kBadParam,
            "tensor descriptor: " + std::to_string(dims.size()) + " dims but " + std::to_string(strides.size()) + " strides");
  MLU_CHECK(layout == Layout::kND || dims.size() == 4, Status::kBadParam,
            "tensor descriptor: NCHW/NHWC layouts need 4 dims, got " + std::to_string(dims.size()));
  std::int64_t span = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    MLU_CHECK(dims[i] >= 0, Status::kBadParam, "tensor descriptor: dim " + std::to_string(i) + " is negative");
    MLU_CHECK(strides[i] >= 0, Status::kBadParam, "tensor descriptor: stride " + std::to_string(i) + " is negative");
    MLU_CHECK(dims[i] < (std::int64_t{1} << 40) && strides[i] < (std::int64_t{1} << 40), Status::kNumericalOverflow,
              "tensor descriptor: dim or stride " + std::to_string(i) + " is too large");
  }
  // No partial overlap: sorted by stride, each non-broadcast dim must step past the largest
  // offset the dims below it reach (1 + sum of (dim - 1) x stride), so every index has its own
  // element: x[:, ::2] of a [9, 11] tensor (dims [9, 6], strides [11, 2]) is fine.
  std::vector<std::size_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return strides[a] < strides[b]; });
  for (std::size_t i : order) {
    if (dims[i] <= 1 || strides[i] == 0) continue;
    MLU_CHECK(strides[i] >= span, Status::kBadParam,
              "tensor descriptor: stride " + std::to_string(i) + " = " + std::to_string(strides[i]) +
                  " makes elements overlap (needs >= " + std::to_string(span) + ")");
    span += (dims[i] - 1) * strides[i];
  }
  dtype_ = dtype;
  dims_ = dims;
  strides_ = strides;
  layout_ = layout;
  valid_ = true;
  return Status::kSuccess;
}

std::int64_t TensorDesc::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) n *= d;
  return n;
}

bool TensorDesc::contiguous() const {
  std::int64_t expect = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (dims_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= dims_[i];
  }
  return true;
}

std::uint64_t TensorDesc::span_bytes() const {
  if (numel() == 0) return 0;
  std::int64_t last = 0;
  for (int i = 0; i < ndim(); ++i) last += (dims_[i] - 1) * strides_[i];
  return static_cast<std::uint64_t>(last + 1) * element_size();
}

std::string TensorDesc::str() const {
  std::ostringstream s;
  s << sim::dtype_name(dtype_) << '[';
  for (int i = 0; i < ndim(); ++i) s << (i ? "," : "") << dims_[i];
  s << ']';
  if (!contiguous()) {
    s << " strides [";
    for (int i = 0; i < ndim(); ++i) s << (i ? "," : "") << strides_[i];
    s << ']';
  }
  return s.str();
}

}  // namespace mlusim::mlu
