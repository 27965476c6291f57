// adaptive_avg_pool2d forward and backward. Output (i, j) averages input rows
// [floor(i*H/OH), ceil((i+1)*H/OH)) and columns [floor(j*W/OW), ceil((j+1)*W/OW)) (torch's bins).
// When OH divides H and OW divides W the bins are a plain average pool (kernel = stride = H/OH)
// and the avg_pool kernels run. Otherwise bins have uneven sizes and overlap, and a BLOCK kernel
// over whole planes applies the bin matrices on the VFU (fp32):
//   forward  Y = Bh x (X x Bw) / counts          Bh [OH, H], Bw [W, OW] hold 0/1 membership
//   backward dX = Bh^T x (dY / counts) x Bw^T
// The matrices come from the kernel's scalar code (one store per entry, once per task). Caveat of
// this general path: a product 0 * inf is NaN, so a non-finite input spreads NaN to every output
// sharing its rows or columns of bins (torch keeps it to the bins that contain it).
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "pool/avg_pool.h"
#include "pool/pool_band.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using namespace nn::pool;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;

constexpr DType kF32 = DType::kFloat32;

std::int64_t bin_start(std::int64_t i, std::int64_t in, std::int64_t out) { return i * in / out; }
std::int64_t bin_end(std::int64_t i, std::int64_t in, std::int64_t out) { return ((i + 1) * in + out - 1) / out; }

struct Shape {
  std::int64_t h, w, oh, ow;
};

// NRAM for pb planes: input planes and output planes per set, one intermediate, the four bin
// matrices and the counts.
std::size_t footprint(const Shape& s, std::int64_t pb) {
  const auto p = static_cast<std::size_t>(pb);
  const auto in = static_cast<std::size_t>(s.h * s.w), out = static_cast<std::size_t>(s.oh * s.ow);
  const auto mid = static_cast<std::size_t>(std::max(s.h * s.ow, s.oh * s.w));
  return 3 * (align128(p * in * 4) + align128(p * out * 4)) + align128(p * std::max(mid, out) * 4) +
         2 * align128(static_cast<std::size_t>(s.h * s.oh) * 4) +
         2 * align128(static_cast<std::size_t>(s.w * s.ow) * 4) + align128(out * 4) +
         2 * align128(static_cast<std::size_t>(std::max(s.oh, s.ow)) * 4);
}

struct Args {
  bool backward = false;
  TensorView in, out;  // forward: x -> y; backward: dy -> dx (views [planes, H, W])
  Shape s;
  std::int64_t planes = 0, pb = 1;
};

void kernel(const Args& a) {
  const Shape& s = a.s;
  const auto pb = static_cast<std::size_t>(a.pb);
  const auto h = static_cast<std::size_t>(s.h), w = static_cast<std::size_t>(s.w), oh = static_cast<std::size_t>(s.oh),
             ow = static_cast<std::size_t>(s.ow);
  const std::size_t in_n = a.backward ? oh * ow : h * w, out_n = a.backward ? h * w : oh * ow;
  const auto alloc = [](std::size_t bytes) { return dev::alloc(Space::kNram, std::max<std::size_t>(bytes, 1)); };
  Addr src[kPipelineBuffers], dst[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) src[k] = alloc(pb * in_n * 4), dst[k] = alloc(pb * out_n * 4);
  const Addr mid = alloc(pb * std::max({h * ow, oh * w, oh * ow}) * 4);
  const Addr bh = alloc(oh * h * 4), bh_t = alloc(h * oh * 4), bw = alloc(w * ow * 4), bw_t = alloc(ow * w * 4);
  const Addr counts = alloc(oh * ow * 4), rc = alloc(std::max(oh, ow) * 4), cc = alloc(std::max(oh, ow) * 4);
  // Bin matrices and counts, from the kernel's scalar code.
  std::vector<float> vbh(oh * h, 0.0f), vbh_t(h * oh, 0.0f), vbw(w * ow, 0.0f), vbw_t(ow * w, 0.0f), r(oh), c(ow);
  for (std::size_t i = 0; i < oh; ++i) {
    const std::int64_t b0 = bin_start(std::int64_t(i), s.h, s.oh), b1 = bin_end(std::int64_t(i), s.h, s.oh);
    r[i] = float(b1 - b0);
    for (std::int64_t k = b0; k < b1; ++k) vbh[i * h + std::size_t(k)] = vbh_t[std::size_t(k) * oh + i] = 1.0f;
  }
  for (std::size_t j = 0; j < ow; ++j) {
    const std::int64_t b0 = bin_start(std::int64_t(j), s.w, s.ow), b1 = bin_end(std::int64_t(j), s.w, s.ow);
    c[j] = float(b1 - b0);
    for (std::int64_t k = b0; k < b1; ++k) vbw[std::size_t(k) * ow + j] = vbw_t[j * w + std::size_t(k)] = 1.0f;
  }
  store_scalars(bh, vbh);
  store_scalars(bh_t, vbh_t);
  store_scalars(bw, vbw);
  store_scalars(bw_t, vbw_t);
  store_scalars(rc, r);
  store_scalars(cc, c);
  dev::vec_matmul(kF32, kF32, counts, rc, cc, oh, 1, ow, false, false);

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>((a.planes + a.pb - 1) / a.pb));
  auto box = [&](std::size_t step, bool input) {
    const std::int64_t p0 = static_cast<std::int64_t>(range.first + step) * a.pb;
    Box b;
    b.start[0] = p0, b.extent[0] = std::min(a.pb, a.planes - p0);
    b.extent[1] = input == a.backward ? s.oh : s.h;
    b.extent[2] = input == a.backward ? s.ow : s.w;
    return b;
  };
  run_pipelined(
      range.second - range.first,
      [&](std::size_t st, int k) {
        const Box b = box(st, true);
        load_f32_async(a.in, b, src[k], static_cast<std::size_t>(b.count(3)));
      },
      [&](std::size_t st, int k) {
        const Box b = box(st, true);
        const auto planes = static_cast<std::size_t>(b.extent[0]);
        widen_f32(a.in.dtype, src[k], static_cast<std::size_t>(b.count(3)));
        if (!a.backward) {
          dev::vec_matmul(kF32, kF32, mid, src[k], bw, planes * h, w, ow, false, false);  // [p*H, OW]
          for (std::size_t p = 0; p < planes; ++p)
            dev::vec_matmul(kF32, kF32, dst[k].offset(std::int64_t(p * oh * ow * 4)), bh,
                            mid.offset(std::int64_t(p * h * ow * 4)), oh, h, ow, false, false);
          for (std::size_t p = 0; p < planes; ++p) {
            const Addr y = dst[k].offset(std::int64_t(p * oh * ow * 4));
            dev::vec_binary(VecBinaryOp::kDiv, kF32, y, y, counts, oh * ow);
          }
          return;
        }
        for (std::size_t p = 0; p < planes; ++p) {  // dY / counts, then Bh^T x (.)
          const Addr g = src[k].offset(std::int64_t(p * oh * ow * 4));
          dev::vec_binary(VecBinaryOp::kDiv, kF32, g, g, counts, oh * ow);
          dev::vec_matmul(kF32, kF32, mid.offset(std::int64_t(p * h * ow * 4)), bh_t, g, h, oh, ow, false, false);
        }
        dev::vec_matmul(kF32, kF32, dst[k], mid, bw_t, planes * h, ow, w, false, false);  // [p*H, W]
      },
      [&](std::size_t st, int k) {
        const Box b = box(st, false);
        store_f32_async(a.out, b, dst[k], static_cast<std::size_t>(b.count(3)));
      });
}

// View of a pooling tensor as [planes, H, W] (planes need not be contiguous: two plane dims
// become one only when they merge; otherwise each N is its own run, handled by the box).
Status launch_general(Handle* h, const char* op, bool backward, const TensorDesc& in, const void* in_ptr,
                      const TensorDesc& out, void* out_ptr, const TensorDesc& big, const TensorDesc& small) {
  const int nd = big.ndim();
  Args args;
  args.backward = backward;
  args.s = {big.dim(nd - 2), big.dim(nd - 1), small.dim(nd - 2), small.dim(nd - 1)};
  PoolViews pv = make_pool_views({&in, &out}, {in_ptr, out_ptr});
  MLU_CHECK(pv.plane_dims == 1, Status::kNotSupported,
            std::string(op) + ": uneven bins need the N and C dims to merge (a plain NCHW or NHWC-strided tensor)");
  args.in = pv.views[0];
  args.out = pv.views[1];
  args.planes = pv.planes;
  std::int64_t pb = 1;
  MLU_CHECK(footprint(args.s, 1) <= h->nram_bytes(), Status::kNotSupported,
            std::string(op) + ": a plane of " + big.str() + " with uneven bins does not fit NRAM");
  const std::int64_t want = std::max<std::int64_t>(1, args.planes / (std::int64_t{4} * h->total_cores()));
  while (pb * 2 <= want && footprint(args.s, pb * 2) <= h->nram_bytes()) pb *= 2;
  args.pb = pb;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { kernel(args); }, block_dim(*h, static_cast<std::uint64_t>((args.planes + pb - 1) / pb)),
      cnrtFuncTypeBlock));
  record(*h, op, 0,
         static_cast<std::uint64_t>(in.numel()) * in.element_size() +
             static_cast<std::uint64_t>(out.numel()) * out.element_size(),
         1);
  return Status::kSuccess;
}

// Adaptive pooling as a plain average pool when the bins are even.
bool even_bins(const TensorDesc& big, const TensorDesc& small, Pool2dParams* p) {
  const int nd = big.ndim();
  const std::int64_t h = big.dim(nd - 2), w = big.dim(nd - 1), oh = small.dim(nd - 2), ow = small.dim(nd - 1);
  if (oh <= 0 || ow <= 0 || h % oh != 0 || w % ow != 0) return false;
  p->kernel_h = p->stride_h = h / oh;
  p->kernel_w = p->stride_w = w / ow;
  return true;
}

Status check_adaptive(Handle* h, const char* op, const TensorDesc& big, const char* big_name, const void* big_ptr,
                      const TensorDesc& small, const char* small_name, const void* small_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, big_name, big, big_ptr));
  MLU_RETURN_IF_ERROR(check_pool_tensor(op, small_name, small, small_ptr));
  MLU_RETURN_IF_ERROR(check_same_planes(op, big, big_name, small, small_name));
  const int nd = big.ndim();
  MLU_CHECK((small.dim(nd - 2) >= 1 && small.dim(nd - 1) >= 1) || small.numel() == 0, Status::kBadParam,
            std::string(op) + ": output size must be positive, got " + small.str());
  return Status::kSuccess;
}

}  // namespace

Status adaptive_avg_pool2d_forward(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y,
                                   void* y_ptr) {
  const char* op = "adaptive_avg_pool2d_forward";
  MLU_RETURN_IF_ERROR(check_adaptive(h, op, x, "x", x_ptr, y, "y", y_ptr));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast dim");
  Pool2dParams p;
  if (even_bins(x, y, &p)) return nn::avg_pool_forward(h, op, p, x, x_ptr, y, y_ptr);
  if (y.numel() == 0 || x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  return launch_general(h, op, false, x, x_ptr, y, y_ptr, x, y);
}

Status adaptive_avg_pool2d_backward(Handle* h, const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dx,
                                    void* dx_ptr) {
  const char* op = "adaptive_avg_pool2d_backward";
  MLU_RETURN_IF_ERROR(check_adaptive(h, op, dx, "dx", dx_ptr, dy, "dy", dy_ptr));
  MLU_CHECK(writable(dx), Status::kBadParam, std::string(op) + ": dx " + dx.str() + " has a broadcast dim");
  Pool2dParams p;
  if (even_bins(dx, dy, &p)) return nn::avg_pool_backward(h, op, p, dy, dy_ptr, dx, dx_ptr);
  if (dx.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  return launch_general(h, op, true, dy, dy_ptr, dx, dx_ptr, dx, dy);
}

}  // namespace mlusim::mlu
