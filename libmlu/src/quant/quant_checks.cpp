#include "quant/quant_checks.h"

#include <cmath>
#include <string>

#include <mlusim_ext.h>

#include "common/error.h"

namespace mlusim::mlu::quant {

Status check_int8_tfu(const char* op) {
  const sim::HardwareConfig cfg = driver::loaded_config();
  MLU_CHECK(cfg.tfu_array(DType::kInt8).supported(), Status::kNotSupported,
            std::string(op) + ": config '" + cfg.name + "' has no int8 TFU array (tfu.int8 is 0x0)");
  return Status::kSuccess;
}

Status check_per_tensor(double scale, std::int64_t zero_point, std::int64_t quant_min, std::int64_t quant_max,
                        const char* op, const char* what) {
  const std::string pre = std::string(op) + ": " + (*what ? std::string(what) + " " : std::string());
  MLU_CHECK(quant_min >= -128 && quant_max <= 127 && quant_min <= quant_max, Status::kBadParam,
            pre + "quant_min/quant_max " + std::to_string(quant_min) + "/" + std::to_string(quant_max) +
                " must satisfy -128 <= quant_min <= quant_max <= 127 (int8)");
  MLU_CHECK(std::isfinite(scale) && scale > 0.0, Status::kBadParam,
            pre + "scale " + std::to_string(scale) + " must be finite and > 0");
  MLU_CHECK(zero_point >= quant_min && zero_point <= quant_max, Status::kBadParam,
            pre + "zero point " + std::to_string(zero_point) + " is outside [" + std::to_string(quant_min) +
                ", " + std::to_string(quant_max) + "]");
  return Status::kSuccess;
}

Status check_channel_vector(const TensorDesc* d, const void* p, DType t, std::int64_t n, const char* op,
                            const char* name) {
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  MLU_CHECK(d->dtype() == t, Status::kBadParam,
            std::string(op) + ": " + name + " must be " + std::string(sim::dtype_name(t)) + ", got " + d->str());
  MLU_CHECK(d->ndim() == 1 && d->dim(0) == n && d->contiguous(), Status::kBadParam,
            std::string(op) + ": " + name + " must be contiguous 1-d [" + std::to_string(n) + "], got " + d->str());
  return check_ptr(p, *d, op, name);
}

Status check_quant_params(const QuantParams& q, const TensorDesc& x, const char* op) {
  if (q.axis < 0) return check_per_tensor(q.scale, q.zero_point, q.quant_min, q.quant_max, op, "");
  MLU_CHECK(q.axis < x.ndim(), Status::kBadParam,
            std::string(op) + ": axis " + std::to_string(q.axis) + " is out of range for " + x.str());
  // The per-channel values themselves live in device memory: the kernel checks them as it reads them.
  MLU_RETURN_IF_ERROR(check_per_tensor(1.0, q.quant_min, q.quant_min, q.quant_max, op, "per-channel"));
  const std::int64_t c = x.dim(q.axis);
  MLU_RETURN_IF_ERROR(check_channel_vector(q.scales, q.scales_ptr, DType::kFloat32, c, op, "scales"));
  return check_channel_vector(q.zero_points, q.zero_points_ptr, DType::kInt32, c, op, "zero_points");
}

bool nhwc_dense(const TensorDesc& t) {
  if (t.ndim() != 4) return false;
  if (t.layout() == Layout::kNHWC) return t.contiguous();
  const auto& s = t.strides();
  const std::int64_t c = t.dim(1), h = t.dim(2), w = t.dim(3);
  return (c == 1 || s[1] == 1) && (w == 1 || s[3] == c) && (h == 1 || s[2] == w * c) &&
         (t.dim(0) == 1 || s[0] == h * w * c);
}

std::int64_t nchw_dim(const TensorDesc& t, int i) {
  static constexpr int kFromNhwc[4] = {0, 3, 1, 2};
  return t.layout() == Layout::kNHWC ? t.dim(kFromNhwc[i]) : t.dim(i);
}

}  // namespace mlusim::mlu::quant
