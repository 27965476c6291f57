#include "conv/deinterleave.h"

#include <algorithm>
#include <memory>

#include "conv/row_permute.h"

namespace mlusim::mlu::conv {

std::size_t phase_width(std::size_t w, std::size_t s) { return (w + s - 1) / s; }

SourceImage split_source(const View4& src, std::size_t s, DType dtype) {
  SourceImage g;
  g.dtype = dtype;
  g.rows = static_cast<std::size_t>(src.h());
  g.cols = phase_width(static_cast<std::size_t>(src.w()), s);
  g.phases = s;
  g.col_stride = 1;
  g.row_stride = static_cast<std::int64_t>(g.cols);
  g.phase_stride = static_cast<std::int64_t>(g.rows * g.cols);
  g.c_stride = g.phase_stride * static_cast<std::int64_t>(s);
  g.n_stride = g.c_stride * src.c();
  return g;
}

std::size_t deinterleaved_bytes(const View4& src, std::size_t s, DType dtype) {
  return static_cast<std::size_t>(src.n() * src.c() * src.h()) * s * phase_width(static_cast<std::size_t>(src.w()), s) *
         sim::dtype_size(dtype);
}

Status launch_deinterleave(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                           std::size_t s, std::uint64_t dst, std::uint32_t* kernels) {
  RowPermute p;
  p.src = src_view;
  p.src_base = src;
  const std::size_t w = static_cast<std::size_t>(src_view.w()), qs = phase_width(w, s);
  const std::size_t rows = static_cast<std::size_t>(src_view.h());
  p.out_w = s * qs;
  for (std::size_t q = 0; q < w; ++q) p.ones.emplace_back(q, (q % s) * qs + q / s);
  p.dst_base = dst;
  p.plane_stride = static_cast<std::int64_t>(s * rows * qs);
  p.row_stride = static_cast<std::int64_t>(qs);
  p.pieces = s;
  p.piece_stride = static_cast<std::int64_t>(rows * qs);
  return launch_row_permute(h, name, dtype, p, kernels);
}

}  // namespace mlusim::mlu::conv
