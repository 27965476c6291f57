#include "norm/layer_norm_common.h"

#include <string>

#include "common/error.h"

namespace mlusim::mlu::nn {

Status check_layer_norm_shape(const char* op, int normalized_ndim, const TensorDesc& x, LayerNormShape* s) {
  MLU_CHECK(normalized_ndim >= 1 && normalized_ndim <= x.ndim(), Status::kBadParam,
            std::string(op) + ": normalized_ndim " + std::to_string(normalized_ndim) + " is out of range for x " +
                x.str() + " (expected 1.." + std::to_string(x.ndim()) + ")");
  s->lead = x.ndim() - normalized_ndim;
  s->rows = 1;
  s->n = 1;
  for (int i = 0; i < x.ndim(); ++i) (i < s->lead ? s->rows : s->n) *= x.dim(i);
  return Status::kSuccess;
}

Status check_affine(const char* op, const char* name, const TensorDesc* d, const void* p, const TensorDesc& x,
                    const LayerNormShape& s) {
  if (d == nullptr) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  const std::vector<std::int64_t> want(x.dims().begin() + s.lead, x.dims().end());
  MLU_CHECK(d->dims() == want, Status::kBadParam,
            std::string(op) + ": " + name + " " + d->str() + " must have the normalized dims of x " + x.str());
  return check_ptr(p, *d, op, name);
}

Status check_row_stat(const char* op, const char* name, const TensorDesc* d, const void* p, const LayerNormShape& s) {
  if (d == nullptr) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  MLU_CHECK(
      d->numel() == s.rows, Status::kBadParam,
      std::string(op) + ": " + name + " " + d->str() + " must hold one value per row (" + std::to_string(s.rows) + ")");
  MLU_CHECK(d->contiguous(), Status::kBadParam, std::string(op) + ": " + name + " " + d->str() + " must be contiguous");
  return check_ptr(p, *d, op, name);
}

TensorView affine_view(const TensorDesc& d, const void* p, const TensorDesc& x, const LayerNormShape& s) {
  std::vector<int> map(static_cast<std::size_t>(x.ndim()), -1);
  for (int i = s.lead; i < x.ndim(); ++i) map[i] = i - s.lead;
  return make_broadcast_view(d, p, x.dims(), map);
}

TensorView row_stat_view(const TensorDesc& d, const void* p, const TensorDesc& x, const LayerNormShape& s) {
  TensorView v;
  v.base = reinterpret_cast<std::uintptr_t>(p);
  v.dtype = d.dtype();
  v.ndim = x.ndim();
  std::int64_t stride = 1;
  for (int i = x.ndim() - 1; i >= 0; --i) {
    v.dims[i] = x.dim(i);
    v.strides[i] = i < s.lead ? stride : 0;
    if (i < s.lead) stride *= x.dim(i);
  }
  return v;
}

std::pair<int, int> group_layer_norm_views(std::vector<TensorView*> views, const LayerNormShape& s) {
  const int nd = views.front()->ndim;
  const std::vector<int> starts = coalesce_groups(views, {0, s.lead, nd, nd});
  return {starts[1], starts[2]};
}

}  // namespace mlusim::mlu::nn
