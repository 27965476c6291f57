// The argument checks every scatter-family kernel shares (scatter, scatter_add, scatter_reduce,
// index_copy, index_fill, put_ through libmlu's scatter/scatter_add), torch's
// scatter_gather_dtype_check and scatter_shape_check (ATen/native/ScatterGatherChecks.h), and
// the 0-dim-as-1-d view libmlu's index ops take. One definition, so the ops cannot drift apart.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace mlusim::bridge::ops {

// 0-dim tensors are described as 1-d of one element (libmlu's index ops take dims >= 1).
inline at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// torch's ensure_nonempty_dim / ensure_nonempty_size: a 0-dim tensor counts as 1-d of size 1.
inline std::int64_t nonempty_dim(const at::Tensor& t) { return t.dim() == 0 ? 1 : t.dim(); }
inline std::int64_t nonempty_size(const at::Tensor& t, std::int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

// Raises RuntimeError "<method>(): ..." as torch does unless: a non-empty index is int32 or int64; src (when
// given) has self's dtype; a non-empty index has self's number of dims (and src's), and is no
// larger than src in any dim and no larger than self in every dim but `dim` (already wrapped).
// src null: a value broadcast over the index (scatter.value, index_fill), with no shape of its
// own to check.
inline void check_scatter_args(const char* method, const at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                               const at::Tensor* src) {
  // As torch: an empty index may have any dtype (gather's backward scatters with the forward's).
  TORCH_CHECK(index.numel() == 0 || index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, method,
              "(): Expected dtype int32/int64 for index");
  if (src != nullptr)
    TORCH_CHECK(src->scalar_type() == self.scalar_type(), method, "(): Expected self.dtype to be equal to src.dtype");
  if (index.numel() == 0) return;
  TORCH_CHECK(nonempty_dim(self) == nonempty_dim(index), method,
              "(): Index tensor must have the same number of dimensions as self tensor");
  if (src != nullptr)
    TORCH_CHECK(nonempty_dim(*src) == nonempty_dim(index), method,
                "(): Index tensor must have the same number of dimensions as src tensor");
  bool ok = true;
  for (std::int64_t d = 0; d < nonempty_dim(self); ++d) {
    const std::int64_t i = nonempty_size(index, d);
    ok = ok && (src == nullptr || i <= nonempty_size(*src, d)) && (d == dim || i <= nonempty_size(self, d));
  }
  if (!ok) {
    std::ostringstream msg;
    msg << method << "(): Expected index " << index.sizes() << " to be smaller than self " << self.sizes()
        << " apart from dimension " << dim;
    if (src != nullptr) msg << " and to be smaller size than src " << src->sizes();
    TORCH_CHECK(false, msg.str());
  }
}

}  // namespace mlusim::bridge::ops
