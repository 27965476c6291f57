#include "softmax/tensor_view.h"

#include <algorithm>
#include <stdexcept>

namespace mlusim::mlu::nn {

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  return n;
}

TensorView make_view(const TensorDesc& d, const void* ptr) {
  TensorView v;
  v.base = reinterpret_cast<std::uintptr_t>(ptr);
  v.dtype = d.dtype();
  v.ndim = d.ndim();
  for (int i = 0; i < d.ndim(); ++i) v.dims[i] = d.dim(i), v.strides[i] = d.stride(i);
  return v;
}

TensorView make_broadcast_view(const TensorDesc& d, const void* ptr, const std::vector<std::int64_t>& dims,
                               const std::vector<int>& map) {
  TensorView v;
  v.base = reinterpret_cast<std::uintptr_t>(ptr);
  v.dtype = d.dtype();
  v.ndim = static_cast<int>(dims.size());
  for (int k = 0; k < v.ndim; ++k) {
    v.dims[k] = dims[k];
    v.strides[k] = map[k] < 0 ? 0 : d.stride(map[k]);
  }
  return v;
}

std::vector<int> coalesce_groups(std::vector<TensorView*> views, const std::vector<int>& splits) {
  if (views.empty() || splits.size() < 2) throw std::logic_error("coalesce_groups: no views or groups");
  const TensorView shape = *views.front();
  std::vector<std::vector<std::int64_t>> dims(1), strides(views.size());
  std::vector<int> starts;
  for (std::size_t g = 0; g + 1 < splits.size(); ++g) {
    starts.push_back(static_cast<int>(dims[0].size()));
    // Walk the group from its innermost dim outwards, merging into the last kept dim when possible.
    const std::size_t group_begin = dims[0].size();
    for (int i = splits[g + 1] - 1; i >= splits[g]; --i) {
      if (shape.dims[i] == 1) continue;
      bool merge = dims[0].size() > group_begin;
      for (std::size_t v = 0; merge && v < views.size(); ++v)
        merge = views[v]->strides[i] == strides[v].back() * dims[0].back();
      if (merge) {
        dims[0].back() *= shape.dims[i];
        continue;
      }
      dims[0].push_back(shape.dims[i]);
      for (std::size_t v = 0; v < views.size(); ++v) strides[v].push_back(views[v]->strides[i]);
    }
    if (dims[0].size() == group_begin) {  // all dims of size 1 (or none): one unit dim
      dims[0].push_back(1);
      for (std::size_t v = 0; v < views.size(); ++v) strides[v].push_back(0);
    }
    // The group was collected inner-first: restore outer-to-inner order.
    std::reverse(dims[0].begin() + static_cast<std::ptrdiff_t>(group_begin), dims[0].end());
    for (auto& s : strides) std::reverse(s.begin() + static_cast<std::ptrdiff_t>(group_begin), s.end());
  }
  const int ndim = static_cast<int>(dims[0].size());
  if (ndim > kMaxViewDims) throw std::logic_error("coalesce_groups: more than kMaxViewDims dims");
  for (std::size_t v = 0; v < views.size(); ++v) {
    views[v]->ndim = ndim;
    for (int i = 0; i < ndim; ++i) views[v]->dims[i] = dims[0][i], views[v]->strides[i] = strides[v][i];
  }
  starts.push_back(ndim);
  return starts;
}

bool writable(const TensorDesc& d) {
  for (int i = 0; i < d.ndim(); ++i)
    if (d.dim(i) > 1 && d.stride(i) == 0) return false;
  return true;
}

}  // namespace mlusim::mlu::nn
