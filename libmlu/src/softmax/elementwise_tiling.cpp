#include "softmax/elementwise_tiling.h"

#include <algorithm>

namespace mlusim::mlu::nn {
namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

std::int64_t ElementwiseTiling::tiles() const {
  std::int64_t n = ceil_div(dims[ndim - 2], rows) * ceil_div(dims[ndim - 1], cols);
  for (int i = 0; i < ndim - 2; ++i) n *= dims[i];
  return n;
}

Box ElementwiseTiling::box(std::int64_t tile) const {
  Box b;
  const std::int64_t col_blocks = ceil_div(dims[ndim - 1], cols), row_blocks = ceil_div(dims[ndim - 2], rows);
  b.start[ndim - 1] = tile % col_blocks * cols;
  tile /= col_blocks;
  b.start[ndim - 2] = tile % row_blocks * rows;
  tile /= row_blocks;
  for (int i = ndim - 3; i >= 0; --i) b.start[i] = tile % dims[i], b.extent[i] = 1, tile /= dims[i];
  b.extent[ndim - 1] = std::min(cols, dims[ndim - 1] - b.start[ndim - 1]);
  b.extent[ndim - 2] = std::min(rows, dims[ndim - 2] - b.start[ndim - 2]);
  return b;
}

std::int64_t ElementwiseTiling::flat_index(const Box& b, std::int64_t r) const {
  std::int64_t flat = 0;
  for (int i = 0; i < ndim; ++i) flat = flat * dims[i] + b.start[i] + (i == ndim - 2 ? r : 0);
  return flat;
}

ElementwiseTiling plan_elementwise(std::vector<TensorView*> views, std::int64_t max_elements) {
  coalesce_groups(views, {0, views.front()->ndim});
  for (TensorView* v : views) {
    if (v->ndim >= 2) continue;
    v->dims[1] = v->dims[0], v->strides[1] = v->strides[0];
    v->dims[0] = 1, v->strides[0] = 0;
    v->ndim = 2;
  }
  ElementwiseTiling t;
  t.ndim = views.front()->ndim;
  t.dims = views.front()->dims;
  max_elements = std::max<std::int64_t>(max_elements, 1);
  t.cols = std::min(t.dims[t.ndim - 1], max_elements);
  t.rows = t.cols == t.dims[t.ndim - 1] ? std::clamp<std::int64_t>(max_elements / t.cols, 1, t.dims[t.ndim - 2]) : 1;
  return t;
}

}  // namespace mlusim::mlu::nn
