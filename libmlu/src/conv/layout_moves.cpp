#include "conv/layout_moves.h"

#include "common/error.h"

#include "gemm/strided_copy.h"

namespace mlusim::mlu::conv {

std::array<std::int64_t, 4> dense_strides(const std::array<std::int64_t, 4>& dims) {
  std::array<std::int64_t, 4> s{};
  s[3] = 1;
  for (int i = 2; i >= 0; --i) s[i] = s[i + 1] * std::max<std::int64_t>(dims[i + 1], 1);
  return s;
}

namespace {

// The tensor as a batch of matrices: [N] x [C, H*W] when H and W flatten (h stride = W x w
// stride), else [N, C] x [H, W].
struct Matrices {
  std::size_t batches = 0, rows = 0, cols = 0;
  gemm::MatrixView strided, dense;
};
Matrices as_matrices(const View4& v, std::uint64_t strided, std::uint64_t dense) {
  Matrices m;
  const auto& d = v.dims;
  const auto& s = v.strides;
  if (s[2] == d[3] * s[3] || d[2] == 1) {
    m.batches = static_cast<std::size_t>(d[0]);
    m.rows = static_cast<std::size_t>(d[1]);
    m.cols = static_cast<std::size_t>(d[2] * d[3]);
    m.strided = gemm::MatrixView{strided, gemm::BatchIndexer{{d[0]}, {s[0]}}, s[1], s[3]};
    m.dense = gemm::dense_view(dense, {d[0]}, m.rows, m.cols);
  } else {
    m.batches = static_cast<std::size_t>(d[0] * d[1]);
    m.rows = static_cast<std::size_t>(d[2]);
    m.cols = static_cast<std::size_t>(d[3]);
    m.strided = gemm::MatrixView{strided, gemm::BatchIndexer{{d[0], d[1]}, {s[0], s[1]}}, s[2], s[3]};
    m.dense = gemm::dense_view(dense, {d[0], d[1]}, m.rows, m.cols);
  }
  return m;
}

}  // namespace

Status to_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t src, const View4& view,
                std::uint64_t dst, std::uint32_t* kernels) {
  const Matrices m = as_matrices(view, src, dst);
  return gemm::launch_strided_copy(h, name, dtype, m.batches, m.rows, m.cols, m.strided, m.dense, kernels);
}

Status from_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t src, const View4& view,
                  std::uint64_t dst, std::uint32_t* kernels) {
  const Matrices m = as_matrices(view, dst, src);
  return gemm::launch_strided_copy(h, name, dtype, m.batches, m.rows, m.cols, m.dense, m.strided, kernels);
}

Status move_to_dense(Handle& h, const std::string& name, DType dtype, std::uint64_t dst, std::uint64_t* base,
                     View4* view, std::uint32_t* kernels) {
  std::uint32_t k = 0;
  MLU_RETURN_IF_ERROR(to_dense(h, name, dtype, *base, *view, dst, &k));
  *kernels += k;
  *base = dst;
  view->strides = dense_strides(view->dims);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
