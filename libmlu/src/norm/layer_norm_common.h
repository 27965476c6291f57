// What layer_norm_forward and layer_norm_backward share: argument checks and the views of every
// tensor over x's dims, coalesced as [rows | normalized dims | unit], so that one
// ReductionTiling drives all of them (weight/bias broadcast over rows, mean/rstd over the
// normalized dims).
#pragma once

#include <cstdint>

#include "mlusim/mlu/norm.h"
#include "softmax/reduction_tiling.h"
#include "softmax/tensor_view.h"

namespace mlusim::mlu::nn {

struct LayerNormShape {
  int lead = 0;           // leading (row) dims of x
  std::int64_t rows = 0;  // product of the leading dims
  std::int64_t n = 0;     // elements per row (product of the normalized dims)
};

// normalized_ndim in [1, x.ndim]; sets the shape.
Status check_layer_norm_shape(const char* op, int normalized_ndim, const TensorDesc& x, LayerNormShape* shape);
// weight / bias: the normalized dims of x, fp32 or fp16.
Status check_affine(const char* op, const char* name, const TensorDesc* d, const void* p, const TensorDesc& x,
                    const LayerNormShape& s);
// mean / rstd: `rows` elements, contiguous, fp32 or fp16.
Status check_row_stat(const char* op, const char* name, const TensorDesc* d, const void* p, const LayerNormShape& s);

// A [normalized dims] tensor as a view over x's dims (stride 0 over the rows).
TensorView affine_view(const TensorDesc& d, const void* p, const TensorDesc& x, const LayerNormShape& s);
// A contiguous per-row statistic as a view over x's dims (stride 0 over the normalized dims).
TensorView row_stat_view(const TensorDesc& d, const void* p, const TensorDesc& x, const LayerNormShape& s);

// Coalesces the views jointly as [rows | normalized | unit]; returns {r_begin, i_begin}.
std::pair<int, int> group_layer_norm_views(std::vector<TensorView*> views, const LayerNormShape& s);

}  // namespace mlusim::mlu::nn
