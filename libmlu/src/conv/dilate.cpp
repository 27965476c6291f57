#include "conv/dilate.h"

#include <algorithm>
#include <memory>

#include "conv/row_permute.h"

namespace mlusim::mlu::conv {

std::size_t dilated_bytes(const View4& src, std::size_t sy, std::size_t sx, DType dtype) {
  const std::size_t rows = static_cast<std::size_t>(std::max<std::int64_t>(src.h() - 1, 0)) * sy + 1;
  const std::size_t cols = static_cast<std::size_t>(std::max<std::int64_t>(src.w() - 1, 0)) * sx + 1;
  return static_cast<std::size_t>(src.n() * src.c()) * rows * cols * sim::dtype_size(dtype);
}

Status launch_dilate(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                     std::size_t sy, std::size_t sx, std::uint64_t dst, std::uint32_t* kernels) {
  RowPermute p;
  p.src = src_view;
  p.src_base = src;
  const std::size_t w = static_cast<std::size_t>(src_view.w());
  const std::size_t rows = static_cast<std::size_t>(std::max<std::int64_t>(src_view.h() - 1, 0)) * sy + 1;
  p.out_w = (w > 0 ? w - 1 : 0) * sx + 1;
  for (std::size_t x = 0; x < w; ++x) p.ones.emplace_back(x, x * sx);
  p.dst_base = dst;
  p.plane_stride = static_cast<std::int64_t>(rows * p.out_w);
  p.row_stride = static_cast<std::int64_t>(sy * p.out_w);
  p.gap_rows = sy - 1;
  return launch_row_permute(h, name, dtype, p, kernels);
}

}  // namespace mlusim::mlu::conv
