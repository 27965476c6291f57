// qmax_pool2d (quant.h): int8 max pooling over NHWC rows on the VFU. Work items are output rows
// (image, oh), dealt round-robin to one BLOCK task per core. Per row: each of the kernel's input
// rows that lies inside the image is copied into a [W + 2 pad_w, C] NRAM row whose padding columns
// hold -128 (the int8 minimum: it never beats a real value, and every window has one); then per
// tap one strided NRAM copy gathers the tap's [OW, C] pixels (source stride stride_w x C) and one
// vector max folds them into the output row, which is stored with one copy.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "mlusim/mlu/quant.h"
#include "mlusim/sim/kernel_api.h"
#include "quant/quant_checks.h"

namespace mlusim::mlu {

using namespace mlusim::dev;

namespace {

struct PoolJob {
  std::size_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1,
              dw = 1;
  std::uint64_t x = 0, y = 0;
};

void pool_kernel(const PoolJob& j) {
  const std::size_t wp = j.w + 2 * j.pw;
  const Addr row = alloc(Space::kNram, wp * j.c), tap = alloc(Space::kNram, j.ow * j.c),
             out = alloc(Space::kNram, j.ow * j.c);
  if (j.pw > 0) vec_fill(DType::kInt8, row, -128.0, wp * j.c);  // the padding columns stay -128
  for (std::size_t it = task_id(); it < j.n * j.oh; it += task_dim()) {
    const std::size_t img = it / j.oh, o = it % j.oh;
    bool first = true;
    for (std::size_t r = 0; r < j.kh; ++r) {
      const std::int64_t ih = i64(o * j.sh + r * j.dh) - i64(j.ph);
      if (ih < 0 || ih >= i64(j.h)) continue;
      memcpy(row.offset(i64(j.pw * j.c)), Addr{Space::kGdram, j.x + ((img * j.h + static_cast<std::size_t>(ih)) * j.w) * j.c},
             j.w * j.c, Dir::kGdram2Nram);
      for (std::size_t s = 0; s < j.kw; ++s) {
        const Addr dst = first ? out : tap;
        memcpy_strided(dst, row.offset(i64(s * j.dw * j.c)), CopyShape{j.c, j.ow, i64(j.c), i64(j.sw * j.c)},
                       Dir::kNram2Nram);
        if (!first) vec_binary(sim::VecBinaryOp::kMax, DType::kInt8, out, out, tap, j.ow * j.c);
        first = false;
      }
    }
    memcpy(Addr{Space::kGdram, j.y + ((img * j.oh + o) * j.ow) * j.c}, out, j.ow * j.c, Dir::kNram2Gdram);
  }
}

}  // namespace

Status qmax_pool2d(Handle* h, const QPoolParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                   void* y_ptr) {
  constexpr const char* op = "qmax_pool2d";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kInt8}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kInt8}, op, "y"));
  MLU_CHECK(quant::nhwc_dense(x) && quant::nhwc_dense(y), Status::kBadParam,
            std::string(op) + ": x " + x.str() + " and y " + y.str() + " must be 4-d and NHWC-dense (channels_last)");
  MLU_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 &&
                p.dilation_w > 0 && p.pad_h >= 0 && p.pad_w >= 0 && 2 * p.pad_h <= p.kernel_h && 2 * p.pad_w <= p.kernel_w,
            Status::kBadParam,
            std::string(op) + ": kernel, stride and dilation must be >= 1 and padding in [0, kernel / 2]");
  PoolJob j;
  j.n = static_cast<std::size_t>(quant::nchw_dim(x, 0)), j.c = static_cast<std::size_t>(quant::nchw_dim(x, 1));
  j.h = static_cast<std::size_t>(quant::nchw_dim(x, 2)), j.w = static_cast<std::size_t>(quant::nchw_dim(x, 3));
  j.kh = static_cast<std::size_t>(p.kernel_h), j.kw = static_cast<std::size_t>(p.kernel_w);
  j.sh = static_cast<std::size_t>(p.stride_h), j.sw = static_cast<std::size_t>(p.stride_w);
  j.ph = static_cast<std::size_t>(p.pad_h), j.pw = static_cast<std::size_t>(p.pad_w);
  j.dh = static_cast<std::size_t>(p.dilation_h), j.dw = static_cast<std::size_t>(p.dilation_w);
  const std::int64_t eh = i64(j.h + 2 * j.ph) - i64(j.dh * (j.kh - 1) + 1), ew = i64(j.w + 2 * j.pw) - i64(j.dw * (j.kw - 1) + 1);
  MLU_CHECK(eh >= 0 && ew >= 0, Status::kBadParam, std::string(op) + ": the window is larger than the padded input " + x.str());
  j.oh = static_cast<std::size_t>(eh) / j.sh + 1, j.ow = static_cast<std::size_t>(ew) / j.sw + 1;
  MLU_CHECK(quant::nchw_dim(y, 0) == i64(j.n) && quant::nchw_dim(y, 1) == i64(j.c) && quant::nchw_dim(y, 2) == i64(j.oh) && quant::nchw_dim(y, 3) == i64(j.ow),
            Status::kBadParam,
            std::string(op) + ": y " + y.str() + " must be [" + std::to_string(j.n) + ", " + std::to_string(j.c) + ", " +
                std::to_string(j.oh) + ", " + std::to_string(j.ow) + "] (NCHW dims)");
  MLU_CHECK((j.w + 2 * j.pw + 2 * j.ow) * j.c <= h->nram_bytes(), Status::kNotSupported,
            std::string(op) + ": an input row of " + x.str() + " does not fit NRAM");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  j.x = reinterpret_cast<std::uintptr_t>(x_ptr), j.y = reinterpret_cast<std::uintptr_t>(y_ptr);
  const std::uint64_t bytes = j.n * j.h * j.w * j.c + j.n * j.oh * j.ow * j.c;
  if (j.n * j.oh * j.ow * j.c == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(launch(*h, op, [j] { pool_kernel(j); }, block_dim(*h, j.n * j.oh), cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
