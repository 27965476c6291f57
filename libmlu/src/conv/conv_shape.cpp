#include "conv/conv_shape.h"

#include <string>

#include "common/error.h"

namespace mlusim::mlu::conv {

View4 logical_view(const TensorDesc& d) {
  View4 v;
  for (int i = 0; i < 4; ++i) v.dims[i] = d.dim(i), v.strides[i] = d.stride(i);
  if (d.layout() == Layout::kNHWC) {  // dims [N, H, W, C] -> [N, C, H, W]
    const int order[4] = {0, 3, 1, 2};
    for (int i = 0; i < 4; ++i) v.dims[i] = d.dim(order[i]), v.strides[i] = d.stride(order[i]);
  }
  return v;
}

Status check_bias(const char* op, const TensorDesc* bias, std::size_t channels, DType dtype) {
  if (bias == nullptr) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(check_desc(bias, op, "bias"));
  MLU_CHECK(bias->dtype() == dtype && bias->ndim() == 1 && bias->dim(0) == static_cast<std::int64_t>(channels),
            Status::kBadParam,
            std::string(op) + ": bias " + bias->str() + " must be 1-d [" + std::to_string(channels) +
                "] of the input's dtype");
  return Status::kSuccess;
}

std::uint64_t tensor_bytes(const TensorDesc& d) {
  if (d.numel() == 0) return 0;
  std::uint64_t n = 1;
  for (int i = 0; i < d.ndim(); ++i) n *= d.stride(i) == 0 ? 1 : static_cast<std::uint64_t>(d.dim(i));
  return n * d.element_size();
}

namespace {
std::string dims_str(const View4& v) {
  return "[" + std::to_string(v.dims[0]) + "," + std::to_string(v.dims[1]) + "," + std::to_string(v.dims[2]) + "," +
         std::to_string(v.dims[3]) + "]";
}
}  // namespace

Status check_conv(const char* op, const Handle* h, const ConvParams& p, const TensorDesc& x, const char* x_name,
                  const TensorDesc& w, const char* w_name, const TensorDesc& y, const char* y_name, ConvShape* s,
                  View4* xv, View4* wv, View4* yv) {
  const std::string o(op);
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, x_name));
  MLU_RETURN_IF_ERROR(check_desc(&w, op, w_name));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, y_name));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, x_name));
  MLU_CHECK(w.dtype() == x.dtype() && y.dtype() == x.dtype(), Status::kBadParam,
            o + ": " + x_name + " " + x.str() + ", " + w_name + " " + w.str() + " and " + y_name + " " + y.str() +
                " must share one dtype");
  MLU_CHECK(x.ndim() == 4 && w.ndim() == 4 && y.ndim() == 4, Status::kBadParam,
            o + ": " + x_name + ", " + w_name + " and " + y_name + " must be 4-d");
  MLU_CHECK(p.stride_h >= 1 && p.stride_w >= 1, Status::kBadParam, o + ": stride must be >= 1");
  MLU_CHECK(p.dilation_h >= 1 && p.dilation_w >= 1, Status::kBadParam, o + ": dilation must be >= 1");
  MLU_CHECK(p.pad_h >= 0 && p.pad_w >= 0, Status::kBadParam, o + ": padding must be >= 0");
  MLU_CHECK(p.groups >= 1, Status::kBadParam, o + ": groups must be >= 1");
  *xv = logical_view(x);
  *wv = logical_view(w);
  *yv = logical_view(y);
  const std::int64_t g = p.groups;
  MLU_CHECK(xv->c() % g == 0 && wv->n() % g == 0, Status::kBadParam,
            o + ": channels " + std::to_string(xv->c()) + " in and " + std::to_string(wv->n()) +
                " out must be divisible by groups " + std::to_string(g));
  MLU_CHECK(
      wv->c() * g == xv->c(), Status::kBadParam,
      o + ": " + w_name + " " + dims_str(*wv) + " needs C/groups = " + std::to_string(xv->c() / g) + " input channels");
  MLU_CHECK(wv->h() >= 1 && wv->w() >= 1, Status::kBadParam, o + ": empty kernel " + dims_str(*wv));
  const std::int64_t eff_h = p.dilation_h * (wv->h() - 1) + 1, eff_w = p.dilation_w * (wv->w() - 1) + 1;
  const std::int64_t oh = (xv->h() + 2 * p.pad_h - eff_h) / p.stride_h + 1;
  const std::int64_t ow = (xv->w() + 2 * p.pad_w - eff_w) / p.stride_w + 1;
  MLU_CHECK(xv->h() + 2 * p.pad_h >= eff_h && xv->w() + 2 * p.pad_w >= eff_w, Status::kBadParam,
            o + ": the kernel (dilated) is larger than the padded input " + dims_str(*xv));
  MLU_CHECK(yv->n() == xv->n() && yv->c() == wv->n() && yv->h() == oh && yv->w() == ow, Status::kBadParam,
            o + ": " + y_name + " " + dims_str(*yv) + " must be [" + std::to_string(xv->n()) + "," +
                std::to_string(wv->n()) + "," + std::to_string(oh) + "," + std::to_string(ow) + "]");
  s->n = static_cast<std::size_t>(xv->n());
  s->c = static_cast<std::size_t>(xv->c());
  s->h = static_cast<std::size_t>(xv->h());
  s->w = static_cast<std::size_t>(xv->w());
  s->oc = static_cast<std::size_t>(wv->n());
  s->kh = static_cast<std::size_t>(wv->h());
  s->kw = static_cast<std::size_t>(wv->w());
  s->oh = static_cast<std::size_t>(oh);
  s->ow = static_cast<std::size_t>(ow);
  s->groups = static_cast<std::size_t>(g);
  s->cg = s->c / s->groups;
  s->ocg = s->oc / s->groups;
  s->p = p;
  s->dtype = x.dtype();
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
