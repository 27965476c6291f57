// Validation and canonical views shared by the three convolution entry points: every tensor is
// seen as logical NCHW (weights OIHW) with its own strides, whatever its layout says.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::conv {

// A 4-d tensor in logical NCHW order (OIHW for weights): dims and element strides.
struct View4 {
  std::array<std::int64_t, 4> dims{}, strides{};
  std::int64_t n() const { return dims[0]; }
  std::int64_t c() const { return dims[1]; }
  std::int64_t h() const { return dims[2]; }
  std::int64_t w() const { return dims[3]; }
  // The H x W plane is dense (w stride 1, h stride W): pixels are one contiguous run per channel.
  bool plane_dense() const { return (strides[3] == 1 || dims[3] == 1) && (strides[2] == dims[3] || dims[2] == 1); }
  // Each output channel's (C, H, W) block is dense (weights whose rows are k-contiguous).
  bool rows_dense() const { return plane_dense() && (strides[1] == dims[2] * dims[3] || dims[1] == 1); }
};
View4 logical_view(const TensorDesc& d);  // reorders NHWC dims/strides to NCHW

struct ConvShape {
  std::size_t n = 0, c = 0, h = 0, w = 0;   // input
  std::size_t oc = 0, kh = 0, kw = 0;       // weights [OC, C/groups, KH, KW]
  std::size_t oh = 0, ow = 0;               // output
  std::size_t groups = 1, cg = 0, ocg = 0;  // per group
  ConvParams p;
  DType dtype = DType::kFloat32;
  std::size_t taps() const { return kh * kw; }
  bool depthwise() const { return cg == 1 && groups > 1; }
  std::uint64_t macs() const { return static_cast<std::uint64_t>(n) * oc * oh * ow * cg * kh * kw; }
};

// Checks handle, descriptors, dtypes, parameters and that x/w/y (in that role: input, weights,
// output) agree; fills the shape and the logical views. `op` names the entry point in messages.
Status check_conv(const char* op, const Handle* h, const ConvParams& p, const TensorDesc& x, const char* x_name,
                  const TensorDesc& w, const char* w_name, const TensorDesc& y, const char* y_name, ConvShape* shape,
                  View4* xv, View4* wv, View4* yv);

// A bias, when given (nullptr: none): a valid 1-d descriptor of `channels` elements of `dtype`
// (any stride). kBadParam naming `op` otherwise.
Status check_bias(const char* op, const TensorDesc* bias, std::size_t channels, DType dtype);

// Bytes of a tensor's distinct elements (what an op must read or write once).
std::uint64_t tensor_bytes(const TensorDesc& d);

// Consecutive regions of the caller's workspace (256-byte aligned).
class WorkspaceLayout {
 public:
  std::size_t add(std::size_t bytes) {
    const std::size_t at = size_;
    size_ += (bytes + 255) / 256 * 256;
    return at;
  }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
};

}  // namespace mlusim::mlu::conv
