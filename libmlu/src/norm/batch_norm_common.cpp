#include "norm/batch_norm_common.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace mlusim::mlu::nn {

Status check_batch_norm_input(const char* op, const TensorDesc& x, BatchNormShape* s) {
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "x"));
  MLU_CHECK(x.ndim() >= 2, Status::kBadParam,
            std::string(op) + ": x " + x.str() + " needs at least 2 dims ([N, C, ...])");
  s->channel_dim = x.layout() == Layout::kNHWC ? 3 : 1;
  s->channels = x.dim(s->channel_dim);
  s->per_channel = s->channels == 0 ? 0 : x.numel() / s->channels;
  // Channel-last memory when the channel stride is the smallest of the non-unit dims.
  bool channel_last = true;
  for (int i = 0; i < x.ndim(); ++i)
    if (i != s->channel_dim && x.dim(i) > 1 && x.stride(i) < x.stride(s->channel_dim)) channel_last = false;
  s->order.clear();
  if (!channel_last) s->order.push_back(s->channel_dim);
  for (int i = 0; i < x.ndim(); ++i)
    if (i != s->channel_dim) s->order.push_back(i);
  if (channel_last) s->order.push_back(s->channel_dim);
  s->r_begin = channel_last ? 0 : 1;
  s->r_end = s->r_begin + x.ndim() - 1;
  return Status::kSuccess;
}

Status check_channel_tensor(const char* op, const char* name, const TensorDesc* d, const void* p,
                            const BatchNormShape& s) {
  if (d == nullptr) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  MLU_CHECK(d->ndim() == 1 && d->dim(0) == s.channels, Status::kBadParam,
            std::string(op) + ": " + name + " " + d->str() + " must be [" + std::to_string(s.channels) + "]");
  return check_ptr(p, *d, op, name);
}

TensorView permuted_view(const TensorDesc& d, const void* p, const BatchNormShape& s) {
  TensorView v;
  v.base = reinterpret_cast<std::uintptr_t>(p);
  v.dtype = d.dtype();
  v.ndim = d.ndim();
  for (int k = 0; k < v.ndim; ++k) v.dims[k] = d.dim(s.order[k]), v.strides[k] = d.stride(s.order[k]);
  return v;
}

TensorView channel_view(const TensorDesc& d, const void* p, const TensorDesc& x, const BatchNormShape& s) {
  std::vector<std::int64_t> dims;
  std::vector<int> map;
  for (int i : s.order) dims.push_back(x.dim(i)), map.push_back(i == s.channel_dim ? 0 : -1);
  return make_broadcast_view(d, p, dims, map);
}

std::pair<int, int> group_batch_norm_views(std::vector<TensorView*> views, const BatchNormShape& s) {
  const int nd = views.front()->ndim;
  const std::vector<int> starts = coalesce_groups(views, {0, s.r_begin, s.r_end, nd});
  return {starts[1], starts[2]};
}

}  // namespace mlusim::mlu::nn
