// torchvision's detection ops for the PrivateUse1 key (torchvision dispatches them through the
// dispatcher: torch.ops.torchvision.*), built from device kernels as torchvision's CUDA kernels
// compute them:
//
//   nms(dets, scores, iou_threshold)   boxes sorted by score (the device's stable sort, descending),
//                                      the IoU of every pair > threshold as one elementwise program
//                                      over [N, 1] x [1, N] (fp32), then the greedy pass over that
//                                      mask on the host, as torchvision's CUDA nms does with its
//                                      bit mask (one device-to-host copy of N x N flags)
//   roi_align(input, rois, ...)         torchvision's roi_align_kernel.cu semantics: per roi its
//                                      start, bin size and sampling grid (sampling_ratio, or
//                                      ceil(roi size / pooled size) per roi: the grid is padded to
//                                      the largest, read back once, and the extra samples masked),
//                                      each sample's bilinear taps (a sample beyond [-1, size] reads
//                                      0; clamped at 0 and size - 1) as programs. Bilinear sampling
//                                      is separable (a sample's weight is wy(y) wx(x), its validity
//                                      valid_y valid_x), so the bin averages of roi k are
//                                      out[k, c] = Ay[k] F[b_k, c] Ax[k]^T / count[k], with Ay [ph, H]
//                                      and Ax [pw, W] the per-axis sums of the taps' weights: two
//                                      GEMMs per image's rois (the TPU formulation of crop-and-resize,
//                                      no per-element gathers); _roi_align_backward is the transposed
//                                      pair, Ay^T G Ax summed over the image's rois by the GEMM's depth
//
// The schema comes from torchvision's library (loaded by `import torchvision`); registering the
// implementation first is allowed by the dispatcher.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/index_copy.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/max.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/sort.h>
#include <torch/library.h>

#include "ops/op_support.h"
#include "ops/program_literal.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// A program literal of a double.
std::string literal(double v) { return program_literal(v); }

Tensor mlu_nms(const Tensor& dets, const Tensor& scores, double iou_threshold) {
  const char* name = "torchvision::nms";
  OpScope op(name, dets);
  TORCH_CHECK(dets.dim() == 2, "boxes should be a 2d tensor, got ", dets.dim(), "D");
  TORCH_CHECK(dets.size(1) == 4, "boxes should have 4 elements in dimension 1, got ", dets.size(1));
  TORCH_CHECK(scores.dim() == 1, "scores should be a 1d tensor, got ", scores.dim(), "D");
  TORCH_CHECK(dets.size(0) == scores.size(0), "boxes and scores should have same number of elements in dimension 0, got ",
              dets.size(0), " and ", scores.size(0));
  TORCH_CHECK(dets.scalar_type() == scores.scalar_type(), "boxes and scores should have the same type");
  check_on_device(scores, op.device(), name, "scores");
  TORCH_CHECK_NOT_IMPLEMENTED(dets.scalar_type() == at::kFloat || dets.scalar_type() == at::kHalf, name, ": dtype ",
                              dets.scalar_type(), " is not supported on device mlu (float32, float16)");
  const int64_t n = dets.size(0);
  if (n == 0) return empty_on(op.device(), {0}, at::kLong);
  const Tensor order = std::get<1>(at::sort(scores, /*stable=*/true, /*dim=*/0, /*descending=*/true));
  const Tensor b = at::index_select(dets, 0, order);
  const Tensor x1 = b.select(1, 0), y1 = b.select(1, 1), x2 = b.select(1, 2), y2 = b.select(1, 3);
  // Operands $0..$3: box i's corners as [N, 1]; $4..$7: box j's as [1, N]; all read as fp32 (the
  // IoU arithmetic of torchvision's kernels for float boxes).
  auto c = [](int k) { return "cast($" + std::to_string(k) + ", f32)"; };
  const std::string area_i = "mul(sub(" + c(2) + ", " + c(0) + "), sub(" + c(3) + ", " + c(1) + "))";
  const std::string area_j = "mul(sub(" + c(6) + ", " + c(4) + "), sub(" + c(7) + ", " + c(5) + "))";
  const std::string w = "maximum(sub(minimum(" + c(2) + ", " + c(6) + "), maximum(" + c(0) + ", " + c(4) + ")), 0.0)";
  const std::string h = "maximum(sub(minimum(" + c(3) + ", " + c(7) + "), maximum(" + c(1) + ", " + c(5) + ")), 0.0)";
  const std::string text = "inter = mul(" + w + ", " + h + "); gt(div(inter, sub(add(" + area_i + ", " + area_j +
                           "), inter)), " + literal(iou_threshold) + ")";
  const Tensor over = run_elementwise_program(
      {x1.view({n, 1}), y1.view({n, 1}), x2.view({n, 1}), y2.view({n, 1}), x1.view({1, n}), y1.view({1, n}),
       x2.view({1, n}), y2.view({1, n})},
      text);
  // The greedy pass on the host over the flags (torchvision's CUDA nms: the same loop over its mask).
  const Tensor flags = over.to(at::kCPU);
  const bool* f = flags.data_ptr<bool>();
  std::vector<char> removed(static_cast<std::size_t>(n), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (removed[static_cast<std::size_t>(i)]) continue;
    keep.push_back(i);
    for (int64_t j = i + 1; j < n; ++j)
      if (f[i * n + j]) removed[static_cast<std::size_t>(j)] = 1;
  }
  Tensor kept = empty_on(op.device(), {static_cast<int64_t>(keep.size())}, at::kLong);
  kept.copy_(at::from_blob(keep.data(), {static_cast<int64_t>(keep.size())}, at::kLong));
  return at::index_select(order, 0, kept);
}

// ---- roi_align ----------------------------------------------------------------------------------------

// The sampling of every roi: per axis the taps [K, P, G, 2] (coordinate, weight, usable) of the
// G (padded) samples of each of the P bins, the roi's batch index and sample count.
struct RoiSampling {
  int64_t k, ph, pw, gh, gw;
  Tensor batch;                 // f32 [K]
  Tensor ytap, yw, yok;         // [K, ph, gh, 2]
  Tensor xtap, xw, xok;         // [K, pw, gw, 2]
  Tensor count;                 // f32 [K]: max(grid_h grid_w, 1)
};

// Program statements: `out` = floor(x) for the fp32 name x (the truncating int32 cast, exact below 2^23).
std::string floor_of(const std::string& out, const std::string& x) {
  return out + "_t = where(lt(abs(" + x + "), 8388608.0), cast_like(cast(" + x + ", i32), " + x + "), " + x + "); " +
         out + " = sub(" + out + "_t, cast_like(gt(" + out + "_t, " + x + "), " + x + ")); ";
}

RoiSampling roi_sampling(OpScope& op, const Tensor& rois, double scale, int64_t ph, int64_t pw, int64_t ratio,
                         bool aligned, int64_t height, int64_t width) {
  RoiSampling r{rois.size(0), ph, pw, 0, 0, {}, {}, {}, {}, {}, {}, {}, {}};
  const Tensor b = rois.to(at::kFloat);
  auto col = [&](int64_t i) { return b.select(1, i).contiguous(); };
  const std::string off = aligned ? "0.5" : "0.0", sc = literal(scale);
  // start and (unclamped) size of one axis from the roi's two edges $0, $1
  const std::string start = "sub(mul($0, " + sc + "), " + off + ")";
  const std::string size = "sz = sub(sub(mul($1, " + sc + "), " + off + "), " + start + "); " +
                           (aligned ? std::string("s = sz; ") : std::string("s = maximum(sz, 1.0); "));
  r.batch = col(0);
  struct AxisGeom {
    Tensor start, bin, grid;
  };
  auto geometry = [&](int64_t lo, int64_t hi, int64_t pooled) {
    AxisGeom g;
    g.start = run_elementwise_program({col(lo)}, start);
    g.bin = run_elementwise_program({col(lo), col(hi)}, size + "div(s, " + literal(static_cast<double>(pooled)) + ")");
    g.grid = ratio > 0 ? at::full({r.k}, static_cast<double>(ratio), b.options())
                       : run_elementwise_program({col(lo), col(hi)}, size + "q = neg(div(s, " +
                                                                        literal(static_cast<double>(pooled)) + ")); " +
                                                                        floor_of("f", "q") + "neg(f)");
    return g;
  };
  const AxisGeom y = geometry(2, 4, ph), x = geometry(1, 3, pw);
  auto grid_max = [&](const Tensor& g) {
    if (ratio > 0) return ratio;
    return r.k == 0 ? int64_t{1} : std::max<int64_t>(static_cast<int64_t>(at::max(g).item<float>()), 1);
  };
  r.gh = grid_max(y.grid);
  r.gw = grid_max(x.grid);
  r.count = run_elementwise_program({y.grid, x.grid}, "maximum(mul($0, $1), 1.0)");
  const auto f32 = b.options();
  // sample c = start + p bin + (i + 1/2) bin / grid (torchvision's order), then bilinear_interpolate's taps
  auto taps = [&](const AxisGeom& g, int64_t pooled, int64_t grid, int64_t n, Tensor* tap, Tensor* w, Tensor* ok) {
    const std::vector<Tensor> in = {g.start.view({r.k, 1, 1, 1}), g.bin.view({r.k, 1, 1, 1}), g.grid.view({r.k, 1, 1, 1}),
                                    at::arange(pooled, f32).view({1, pooled, 1, 1}),
                                    at::arange(grid, f32).view({1, 1, grid, 1}), at::arange(2, f32).view({1, 1, 1, 2})};
    const std::string last = literal(static_cast<double>(n - 1));
    const std::string c = "c = add(add($0, mul($3, $1)), div(mul(add($4, 0.5), $1), $2)); ";
    const std::string t = c + "cc = where(le(c, 0.0), 0.0, c); " + floor_of("lo", "cc") + "top = ge(lo, " +
                          last + "); lo2 = where(top, " + last + ", lo); hi = where(top, " + last +
                          ", add(lo, 1.0)); l = sub(where(top, lo2, cc), lo2); ";
    *tap = run_elementwise_program(in, t + "where(eq($5, 0.0), lo2, hi)");
    *w = run_elementwise_program(in, t + "where(eq($5, 0.0), sub(1.0, l), l)");
    *ok = run_elementwise_program(in, c + "logical_and(logical_and(lt($4, $2), eq($5, $5)), logical_and(ge(c, -1.0), le(c, " +
                                          literal(static_cast<double>(n)) + ")))");
  };
  taps(y, ph, r.gh, height, &r.ytap, &r.yw, &r.yok);
  taps(x, pw, r.gw, width, &r.xtap, &r.xw, &r.xok);
  return r;
}

// The per-axis interpolation matrix [K, P, S] (S = the axis' size): entry (k, p, s) sums the
// weights of the taps at coordinate s over the usable samples of bin p of roi k.
Tensor axis_matrix(const Tensor& tap, const Tensor& w, const Tensor& ok, int64_t k, int64_t pooled, int64_t taps,
                   int64_t size) {
  const Tensor at_s = at::arange(size, tap.options()).view({1, 1, 1, size});
  const Tensor hits = run_elementwise_program({tap.view({k, pooled, taps, 1}), w.view({k, pooled, taps, 1}),
                                               ok.view({k, pooled, taps, 1}), at_s},
                                              "where(logical_and($2, eq($0, $3)), $1, 0.0)");
  return at::sum(hits, {2});
}

// The rois of each image, in chunks whose GEMM intermediates ([C H, Kb pw] and [Kb, C ph, W]
// fp32) stay under 8 Mi elements.
struct RoiChunk {
  int64_t image;
  std::vector<int64_t> rois;
};
std::vector<RoiChunk> roi_chunks(const char* name, const Tensor& batch, int64_t images, int64_t c, int64_t h,
                                 int64_t w, int64_t ph, int64_t pw) {
  const Tensor b = batch.to(at::kCPU).contiguous();
  const float* idx = b.data_ptr<float>();
  const int64_t per_roi = std::max<int64_t>(c * std::max(h * pw, ph * w), 1);
  const int64_t chunk = std::max<int64_t>(1, (int64_t{8} << 20) / per_roi);
  std::vector<std::vector<int64_t>> by_image(static_cast<std::size_t>(images));
  for (int64_t i = 0; i < b.numel(); ++i) {
    const auto n = static_cast<int64_t>(idx[i]);
    TORCH_CHECK(n >= 0 && n < images, name, ": roi ", i, " names batch index ", idx[i],
                " of an input with ", images, " images");
    by_image[static_cast<std::size_t>(n)].push_back(i);
  }
  std::vector<RoiChunk> chunks;
  for (int64_t n = 0; n < images; ++n) {
    const auto& rois = by_image[static_cast<std::size_t>(n)];
    for (std::size_t a = 0; a < rois.size(); a += static_cast<std::size_t>(chunk)) {
      const std::size_t e = std::min(rois.size(), a + static_cast<std::size_t>(chunk));
      chunks.push_back({n, std::vector<int64_t>(rois.begin() + static_cast<std::ptrdiff_t>(a),
                                                rois.begin() + static_cast<std::ptrdiff_t>(e))});
    }
  }
  return chunks;
}

// The two axis matrices of every roi, the 1 / count folded into Ay.
struct RoiMatrices {
  Tensor ay, ax;  // f32 [K, ph, H], [K, pw, W]
  Tensor batch;
};
RoiMatrices roi_matrices(OpScope& op, const Tensor& rois, double scale, int64_t ph, int64_t pw, int64_t ratio,
                         bool aligned, int64_t height, int64_t width) {
  const RoiSampling r = roi_sampling(op, rois, scale, ph, pw, ratio, aligned, height, width);
  RoiMatrices m;
  m.ay = run_elementwise_program({axis_matrix(r.ytap, r.yw, r.yok, r.k, ph, r.gh * 2, height),
                                  r.count.view({r.k, 1, 1})},
                                 "div($0, $1)");
  m.ax = axis_matrix(r.xtap, r.xw, r.xok, r.k, pw, r.gw * 2, width);
  m.batch = r.batch;
  return m;
}

// A chunk's rows of a [K, ...] tensor: a view when its rois are consecutive (torchvision passes
// each image's rois in order), else an index_select; `put` writes them back the same way.
class ChunkRows {
 public:
  ChunkRows(const OpScope& op, const std::vector<int64_t>& rois)
      : first_(rois.front()), count_(static_cast<int64_t>(rois.size())) {
    if (rois.back() - rois.front() + 1 == count_) return;
    index_ = empty_on(op.device(), {count_}, at::kLong);
    index_.copy_(at::from_blob(const_cast<int64_t*>(rois.data()), {count_}, at::kLong));
  }
  Tensor of(const Tensor& t) const { return index_.defined() ? at::index_select(t, 0, index_) : t.narrow(0, first_, count_); }
  void put(Tensor& dst, const Tensor& src) const {
    if (index_.defined())
      dst.index_copy_(0, index_, src);
    else
      dst.narrow(0, first_, count_).copy_(src);
  }

 private:
  int64_t first_, count_;
  Tensor index_;
};

void check_roi_align(const char* name, OpScope& op, const Tensor& rois, int64_t ph, int64_t pw) {
  check_on_device(rois, op.device(), name, "rois");
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, name, ": rois must have shape [K, 5], got ", rois.sizes());
  TORCH_CHECK(ph > 0 && pw > 0, name, ": pooled size must be positive, got ", ph, " x ", pw);
}

Tensor mlu_roi_align(const Tensor& input, const Tensor& rois, double spatial_scale, int64_t ph, int64_t pw,
                     int64_t sampling_ratio, bool aligned) {
  const char* name = "torchvision::roi_align";
  OpScope op(name, input);
  check_roi_align(name, op, rois, ph, pw);
  TORCH_CHECK(input.dim() == 4, name, ": input must be [N, C, H, W], got ", input.sizes());
  TORCH_CHECK(input.scalar_type() == rois.scalar_type(), name, ": input and rois must have the same dtype");
  TORCH_CHECK_NOT_IMPLEMENTED(input.scalar_type() == at::kFloat || input.scalar_type() == at::kHalf, name, ": dtype ",
                              input.scalar_type(), " is not supported on device mlu (float32, float16)");
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3), k = rois.size(0);
  if (k == 0 || c == 0 || n * h * w == 0) return at::zeros({k, c, ph, pw}, input.options());
  const RoiMatrices m = roi_matrices(op, rois, spatial_scale, ph, pw, sampling_ratio, aligned, h, w);
  Tensor out = at::empty({k, c, ph, pw}, input.options().dtype(at::kFloat));
  for (const RoiChunk& chunk : roi_chunks(name, m.batch, n, c, h, w, ph, pw)) {
    const auto kb = static_cast<int64_t>(chunk.rois.size());
    const ChunkRows rows(op, chunk.rois);
    const Tensor ay = rows.of(m.ay), ax = rows.of(m.ax);
    const Tensor f = input.select(0, chunk.image).to(at::kFloat);
    // T = F Ax^T over the columns: [C H, W] x [W, Kb pw], then per roi Ay [ph, H] x T_k [H, C pw].
    const Tensor t = at::matmul(f.reshape({c * h, w}), ax.reshape({kb * pw, w}).t());
    const Tensor tk = t.view({c, h, kb, pw}).permute({2, 1, 0, 3}).reshape({kb, h, c * pw});
    const Tensor o = at::bmm(ay, tk).view({kb, ph, c, pw}).permute({0, 2, 1, 3});
    rows.put(out, o);
  }
  return out.to(input.scalar_type()).contiguous();
}

Tensor mlu_roi_align_backward(const Tensor& grad, const Tensor& rois, double spatial_scale, int64_t ph, int64_t pw,
                              int64_t batch, int64_t channels, int64_t height, int64_t width, int64_t sampling_ratio,
                              bool aligned) {
  const char* name = "torchvision::_roi_align_backward";
  OpScope op(name, grad);
  check_roi_align(name, op, rois, ph, pw);
  TORCH_CHECK_NOT_IMPLEMENTED(grad.scalar_type() == at::kFloat || grad.scalar_type() == at::kHalf, name, ": dtype ",
                              grad.scalar_type(), " is not supported on device mlu (float32, float16)");
  const int64_t k = rois.size(0);
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == k && grad.size(1) == channels && grad.size(2) == ph &&
                  grad.size(3) == pw,
              name, ": grad must be [", k, ", ", channels, ", ", ph, ", ", pw, "], got ", grad.sizes());
  const int64_t c = channels, h = height, w = width;
  Tensor acc = at::zeros({batch, c, h, w}, grad.options().dtype(at::kFloat));
  if (k > 0 && c > 0 && batch * h * w > 0) {
    const RoiMatrices m = roi_matrices(op, rois, spatial_scale, ph, pw, sampling_ratio, aligned, h, w);
    for (const RoiChunk& chunk : roi_chunks(name, m.batch, batch, c, h, w, ph, pw)) {
      const auto kb = static_cast<int64_t>(chunk.rois.size());
      const ChunkRows rows(op, chunk.rois);
      const Tensor ay = rows.of(m.ay), ax = rows.of(m.ax);
      const Tensor g = rows.of(grad).to(at::kFloat);
      // V_k = G_k Ax_k: [C ph, pw] x [pw, W]; dF = sum_k Ay_k^T V_k as one GEMM over the rois' bins.
      const Tensor v = at::bmm(g.reshape({kb, c * ph, pw}), ax);
      const Tensor vcat = v.view({kb, c, ph, w}).permute({0, 2, 1, 3}).reshape({kb * ph, c * w});
      const Tensor df = at::matmul(ay.permute({2, 0, 1}).reshape({h, kb * ph}), vcat);  // [H, C W]
      acc.select(0, chunk.image).add_(df.view({h, c, w}).permute({1, 0, 2}));
    }
  }
  return acc.to(grad.scalar_type()).contiguous();
}

}  // namespace

TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) {
  m.impl("nms", TORCH_FN(mlu_nms));
  m.impl("roi_align", TORCH_FN(mlu_roi_align));
  m.impl("_roi_align_backward", TORCH_FN(mlu_roi_align_backward));
}

}  // namespace mlusim::bridge::ops
