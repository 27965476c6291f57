#include "conv/deinterleave.h"

#include <algorithm>
#include <memory>

#include "conv/row_permute.h"
#include "gemm/device_model.h"

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
  // P over the whole row costs the TFU K = w per output fold; a block of s * m columns holds m of
  // each phase, so a blocked P ([s * m, s * m], the row padded to whole blocks) streams only
  // K = s * m. The cheaper of the two by the TFU's formula, for a typical chunk of rows.
  const gemm::DeviceModel d = gemm::device_model(h, dtype);
  std::size_t best_m = 0;
  if (d.on_tfu()) {
    const std::uint64_t n = 4 * d.tfu_rows;
    std::uint64_t best = s * d.matmul_cycles(n, w, qs);
    for (std::size_t m = 1; m <= d.tfu_cols && s * m < w; ++m) {
      const std::size_t nb = (w + s * m - 1) / (s * m);
      const std::uint64_t c = s * d.matmul_cycles(n * nb, s * m, m);
      if (c < best) best = c, best_m = m;
    }
  }
  if (best_m > 0) {
    p.block_w = p.block_out = s * best_m;
    for (std::size_t q = 0; q < s * best_m; ++q) p.ones.emplace_back(q, (q % s) * best_m + q / s);
  } else {
    for (std::size_t q = 0; q < w; ++q) p.ones.emplace_back(q, (q % s) * qs + q / s);
  }
  p.dst_base = dst;
  p.plane_stride = static_cast<std::int64_t>(s * rows * qs);
  p.row_stride = static_cast<std::int64_t>(qs);
  p.pieces = s;
  p.piece_stride = static_cast<std::int64_t>(rows * qs);
  return launch_row_permute(h, name, dtype, p, kernels);
}

View4 subsampled_view(const View4& src, std::size_t sy, std::size_t sx) {
  View4 v;
  const auto out = [](std::int64_t n, std::size_t s) { return n > 0 ? (n - 1) / static_cast<std::int64_t>(s) + 1 : 0; };
  v.dims = {src.n(), src.c(), out(src.h(), sy), out(src.w(), sx)};
  v.strides = {v.dims[1] * v.dims[2] * v.dims[3], v.dims[2] * v.dims[3], v.dims[3], 1};
  return v;
}

std::size_t subsampled_bytes(const View4& src, std::size_t sy, std::size_t sx, DType dtype) {
  const View4 v = subsampled_view(src, sy, sx);
  return static_cast<std::size_t>(v.n() * v.c() * v.h() * v.w()) * sim::dtype_size(dtype);
}

Status launch_subsample(Handle& h, const std::string& name, DType dtype, const View4& src_view, std::uint64_t src,
                        std::size_t sy, std::size_t sx, std::uint64_t dst, std::uint32_t* kernels) {
  const View4 out = subsampled_view(src_view, sy, sx);
  RowPermute p;
  p.src = src_view;  // the rows it keeps, each read whole (its columns then picked on the TFU)
  p.src.dims[2] = out.h();
  p.src.strides[2] *= static_cast<std::int64_t>(sy);
  p.src_base = src;
  p.out_w = static_cast<std::size_t>(out.w());
  for (std::size_t x = 0; x < p.out_w; ++x) p.ones.emplace_back(x * sx, x);
  p.dst_base = dst;
  p.plane_stride = out.strides[1];
  p.row_stride = out.strides[2];
  return launch_row_permute(h, name, dtype, p, kernels);
}

}  // namespace mlusim::mlu::conv
