// Tensor descriptors: dtype, layout, dims and strides (in elements) of a tensor in device memory.
// Strides make non-contiguous views (transposes, slices, broadcasts with stride 0) first-class:
// every op accepts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlusim/mlu/status.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu {

using sim::DType;

// What the dims mean. kND: plain row-major N-d tensor. kNCHW / kNHWC: 4-d activations whose dims
// are given in that order (conv, pooling and batch norm read them).
enum class Layout : std::uint8_t { kND, kNCHW, kNHWC };

constexpr int kMaxDims = 8;

class TensorDesc {
 public:
  TensorDesc() = default;
  // Contiguous row-major strides. Dims >= 0 (0 = empty tensor); at most kMaxDims dims.
  Status set(DType dtype, const std::vector<std::int64_t>& dims, Layout layout = Layout::kND);
  // Explicit strides (elements, >= 0; 0 broadcasts). The same element may not be reachable by
  // two indices unless its stride is 0 (i.e. no partial overlap): checked.
  Status set(DType dtype, const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
             Layout layout = Layout::kND);

  bool valid() const { return valid_; }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  int ndim() const { return static_cast<int>(dims_.size()); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::int64_t dim(int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t stride(int i) const { return strides_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const;
  bool contiguous() const;           // row-major dense, no gaps, no broadcast
  std::uint64_t element_size() const { return sim::dtype_size(dtype_); }
  // Bytes from the base pointer to one past the last reachable element (0 when empty).
  std::uint64_t span_bytes() const;
  std::string str() const;           // "fp32[2,3] strides [3,1]" for messages

 private:
  bool valid_ = false;
  DType dtype_ = DType::kFloat32;
  Layout layout_ = Layout::kND;
  std::vector<std::int64_t> dims_, strides_;
};

}  // namespace mlusim::mlu
