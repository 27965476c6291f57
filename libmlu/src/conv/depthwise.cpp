#include "conv/depthwise.h"

#include <algorithm>
#include <memory>

#include "common/activation.h"
#include "common/channel_affine.h"
#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "conv/dilate.h"
#include "conv/image_columns.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;
using sim::VecBinaryOp;

namespace {

// A band of output rows [y0, y1) and the padded input band it reads: input row lo + r and column
// x_lo + q sit at band element r * pitch + q (zeros outside the input). An accumulator with the
// same pitch holds output (y, x) at ((y - y0) * stride_y) * pitch + x * stride_x, so tap (i, j)
// reads the input band from offset tap_offset(i, j) on, contiguously.
struct Band {
  std::int64_t min_y = 0, max_y = 0, min_x = 0, max_x = 0;  // taps' reach
  std::int64_t lo = 0, x_lo = 0;
  std::size_t rows = 0, pitch = 0, acc_rows = 0;
  Band(const Taps& t, std::size_t out_w, std::size_t y0, std::size_t y1) {
    min_y = std::min<std::int64_t>(0, i64(t.kh - 1) * t.step_y),
    max_y = std::max<std::int64_t>(0, i64(t.kh - 1) * t.step_y);
    min_x = std::min<std::int64_t>(0, i64(t.kw - 1) * t.step_x),
    max_x = std::max<std::int64_t>(0, i64(t.kw - 1) * t.step_x);
    lo = i64(y0) * t.stride_y + min_y + t.off_y;
    x_lo = min_x + t.off_x;
    acc_rows = (y1 - 1 - y0) * static_cast<std::size_t>(t.stride_y) + 1;
    rows = acc_rows + static_cast<std::size_t>(max_y - min_y);
    pitch = (out_w - 1) * static_cast<std::size_t>(t.stride_x) + static_cast<std::size_t>(max_x - min_x) + 1;
  }
  std::size_t input_elems() const { return rows * pitch + static_cast<std::size_t>(max_x - min_x); }
  std::size_t acc_elems() const { return acc_rows * pitch; }
  std::int64_t tap_offset(const Taps& t, std::size_t tap) const {
    const std::int64_t i = i64(tap / t.kw), j = i64(tap % t.kw);
    return (i * t.step_y - min_y) * i64(pitch) + (j * t.step_x - min_x);
  }
};

struct CorrJob {
  DType dtype = DType::kFloat32;
  View4 in, out, w;  // in: source planes; out: result planes; w: [O', 1, KH, KW]
  std::uint64_t in_base = 0, out_base = 0, w_base = 0, bias_base = 0;
  std::int64_t bias_stride = 0;
  OutputStage stage;      // forward only
  std::size_t mult = 1;   // output channels per input channel of the forward conv
  bool backward = false;  // out plane c sums sources c*m .. c*m + m - 1
  Taps taps;
  std::size_t band_rows = 1;
};

Addr gaddr(std::uint64_t base, std::int64_t elements, std::size_t es) {
  return Addr{Space::kGdram, base + static_cast<std::uint64_t>(elements * i64(es))};
}

// Input plane (n, c) rows of band `b` into `raw` (zero padding around), then fp32 into `f32`.
void load_band(const View4& in, std::uint64_t base, DType dtype, std::size_t n, std::size_t c, const Band& b, Addr raw,
               Addr f32) {
  const std::size_t es = sim::dtype_size(dtype);
  vec_fill(dtype, raw, 0.0, b.input_elems());
  const std::int64_t r0 = std::max<std::int64_t>(0, b.lo), r1 = std::min<std::int64_t>(in.h(), b.lo + i64(b.rows));
  const std::int64_t q0 = std::max<std::int64_t>(0, b.x_lo), q1 = std::min<std::int64_t>(in.w(), b.x_lo + i64(b.pitch));
  if (r1 > r0 && q1 > q0) {
    const Addr dst = raw.offset(((r0 - b.lo) * i64(b.pitch) + (q0 - b.x_lo)) * i64(es));
    const Addr src =
        gaddr(base, i64(n) * in.strides[0] + i64(c) * in.strides[1] + r0 * in.strides[2] + q0 * in.strides[3], es);
    const std::size_t nr = static_cast<std::size_t>(r1 - r0), nq = static_cast<std::size_t>(q1 - q0);
    if (in.strides[3] == 1 || nq == 1)
      memcpy_strided(dst, src, CopyShape{nq * es, nr, i64(b.pitch * es), in.strides[2] * i64(es)}, Dir::kGdram2Nram);
    else
      memcpy_strided(
          dst, src, CopyShape{es, nq, i64(es), in.strides[3] * i64(es), nr, i64(b.pitch * es), in.strides[2] * i64(es)},
          Dir::kGdram2Nram);
  }
  vec_cast(DType::kFloat32, f32, dtype, raw, b.input_elems());
}

// The KH x KW weights of output channel o, as fp32.
void load_weights(const View4& w, std::uint64_t base, DType dtype, std::size_t o, const Taps& t, Addr raw, Addr f32) {
  const std::size_t es = sim::dtype_size(dtype);
  const Addr src = gaddr(base, i64(o) * w.strides[0], es);
  if (w.strides[3] == 1 && w.strides[2] == i64(t.kw))
    memcpy(raw, src, t.count() * es, Dir::kGdram2Nram);
  else
    memcpy_strided(raw, src,
                   CopyShape{es, t.kw, i64(es), w.strides[3] * i64(es), t.kh, i64(t.kw * es), w.strides[2] * i64(es)},
                   Dir::kGdram2Nram);
  vec_cast(DType::kFloat32, f32, dtype, raw, t.count());
}

std::size_t bands_of(std::size_t out_h, std::size_t band_rows) { return (out_h + band_rows - 1) / band_rows; }

void correlation_kernel(const CorrJob& j) {
  const std::size_t es = sim::dtype_size(j.dtype), taps = j.taps.count();
  const std::size_t oh = static_cast<std::size_t>(j.out.h()), ow = static_cast<std::size_t>(j.out.w());
  const std::size_t bands = bands_of(oh, j.band_rows);
  const std::size_t units = static_cast<std::size_t>(j.out.n() * j.out.c()) * bands;
  const Band full(j.taps, ow, 0, std::min(oh, j.band_rows));
  const Addr raw = alloc(Space::kNram, full.input_elems() * es), in32 = alloc(Space::kNram, full.input_elems() * 4);
  const Addr acc = alloc(Space::kNram, full.acc_elems() * 4), tmp = alloc(Space::kNram, full.acc_elems() * 4);
  const Addr stage = alloc(Space::kNram, full.acc_elems() * es);
  const Addr w_raw = alloc(Space::kNram, taps * es), w32 = alloc(Space::kNram, taps * 4);
  const std::size_t sources = j.backward ? j.mult : 1;
  const bool affine = j.stage.affine.enabled;
  const AffineBuffers affine_bufs = affine ? alloc_affine_buffers(1, 0) : AffineBuffers{};
  for (std::size_t u = task_id(); u < units; u += task_dim()) {
    const std::size_t plane = u / bands, band = u % bands;
    const std::size_t n = plane / static_cast<std::size_t>(j.out.c()), o = plane % static_cast<std::size_t>(j.out.c());
    if (affine) load_affine_async(j.stage.affine, o, 1, affine_bufs);  // lands during the taps
    const std::size_t y0 = band * j.band_rows, y1 = std::min(oh, y0 + j.band_rows);
    const Band b(j.taps, ow, y0, y1);
    const std::size_t len = b.acc_elems();
    for (std::size_t s = 0; s < sources; ++s) {
      const std::size_t src_c = j.backward ? o * j.mult + s : o / j.mult, w_o = j.backward ? o * j.mult + s : o;
      load_weights(j.w, j.w_base, j.dtype, w_o, j.taps, w_raw, w32);
      load_band(j.in, j.in_base, j.dtype, n, src_c, b, raw, in32);
      for (std::size_t t = 0; t < taps; ++t) {
        const float wt = load(sim::Nram<float>(w32.value) + i64(t));
        const Addr window = in32.offset(b.tap_offset(j.taps, t) * 4);
        if (s == 0 && t == 0) {
          vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, acc, window, wt, len);
        } else {
          vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, tmp, window, wt, len);
          vec_binary(VecBinaryOp::kAdd, DType::kFloat32, acc, acc, tmp, len);
        }
      }
    }
    if (j.bias_base) {
      memcpy(w_raw, gaddr(j.bias_base, i64(o) * j.bias_stride, es), es, Dir::kGdram2Nram);
      vec_cast(DType::kFloat32, w32, j.dtype, w_raw, 1);
      vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, acc, acc, load(sim::Nram<float>(w32.value)), len);
    }
    if (affine) {
      sync_io();
      fold_affine(j.stage.affine, 1, affine_bufs);
      apply_row_affine(affine_bufs, acc, 1, len);
    }
    apply_activation(j.stage.act, acc, tmp, len);
    vec_cast(j.dtype, stage, DType::kFloat32, acc, len);
    // Output (y, x) is at stage ((y - y0) * stride_y) * pitch + x * stride_x.
    const Addr dst =
        gaddr(j.out_base, i64(n) * j.out.strides[0] + i64(o) * j.out.strides[1] + i64(y0) * j.out.strides[2], es);
    const std::int64_t src_row = j.taps.stride_y * i64(b.pitch * es);
    if (j.taps.stride_x == 1 && (j.out.strides[3] == 1 || ow == 1))
      memcpy_strided_async(dst, stage, CopyShape{ow * es, y1 - y0, j.out.strides[2] * i64(es), src_row},
                           Dir::kNram2Gdram);
    else
      memcpy_strided_async(dst, stage,
                           CopyShape{es, ow, j.out.strides[3] * i64(es), j.taps.stride_x * i64(es), y1 - y0,
                                     j.out.strides[2] * i64(es), src_row},
                           Dir::kNram2Gdram);
    sync_io();
  }
}

// Rows per band that fit NRAM (0 if a single row does not): in_bytes per input band element,
// acc_bytes per accumulator element, plus the taps' weights (raw and fp32).
std::size_t band_rows_for(const Handle& h, const Taps& t, std::size_t out_h, std::size_t out_w, std::size_t es,
                          std::size_t in_bytes, std::size_t acc_bytes) {
  const std::size_t budget = h.nram_bytes() - std::min<std::size_t>(h.nram_bytes(), 4096);
  std::size_t best = 0;
  for (std::size_t rows = 1; rows <= out_h; rows = rows < 8 ? rows + 1 : rows * 2) {
    const Band b(t, out_w, 0, rows);
    if (b.input_elems() * in_bytes + b.acc_elems() * acc_bytes + t.count() * (es + 4) > budget) break;
    best = rows;
  }
  // Prefer equal bands: the smallest band count at this size.
  if (best > 0) best = (out_h + bands_of(out_h, best) - 1) / bands_of(out_h, best);
  return best;
}

Status run_correlation(Handle& h, const std::string& name, std::shared_ptr<CorrJob> job, std::uint32_t* kernels) {
  const std::size_t es = sim::dtype_size(job->dtype);
  job->band_rows = band_rows_for(h, job->taps, static_cast<std::size_t>(job->out.h()),
                                 static_cast<std::size_t>(job->out.w()), es, es + 4, 8 + es);
  MLU_CHECK(job->band_rows > 0, Status::kNotSupported,
            name + ": a row of " + std::to_string(job->out.w()) + " outputs does not fit this device's NRAM");
  const std::size_t units = static_cast<std::size_t>(job->out.n() * job->out.c()) *
                            bands_of(static_cast<std::size_t>(job->out.h()), job->band_rows);
  MLU_RETURN_IF_ERROR(launch(
      h, name, [job] { correlation_kernel(*job); }, block_dim(h, units), cnrtFuncTypeBlock));
  *kernels += 1;
  return Status::kSuccess;
}

Taps forward_taps(const ConvShape& s) {
  return Taps{s.kh, s.kw, s.p.stride_h, s.p.stride_w, s.p.dilation_h, s.p.dilation_w, -s.p.pad_h, -s.p.pad_w};
}

struct WgradJob {
  DType dtype = DType::kFloat32;
  View4 x, dy, dw;
  std::uint64_t x_base = 0, dy_base = 0, dw_base = 0;
  std::size_t mult = 1;
  Taps taps;
  std::size_t band_rows = 1;
};

void weight_grad_kernel(const WgradJob& j) {
  const std::size_t es = sim::dtype_size(j.dtype), taps = j.taps.count();
  const std::size_t oh = static_cast<std::size_t>(j.dy.h()), ow = static_cast<std::size_t>(j.dy.w());
  const std::size_t bands = bands_of(oh, j.band_rows), images = static_cast<std::size_t>(j.dy.n());
  const Band full(j.taps, ow, 0, std::min(oh, j.band_rows));
  const Addr raw = alloc(Space::kNram, full.input_elems() * es), in32 = alloc(Space::kNram, full.input_elems() * 4);
  const Addr g_raw = alloc(Space::kNram, full.acc_elems() * es), g32 = alloc(Space::kNram, full.acc_elems() * 4);
  const Addr tmp = alloc(Space::kNram, full.acc_elems() * 4);
  const Addr sums = alloc(Space::kNram, taps * 4), one = alloc(Space::kNram, 128), out = alloc(Space::kNram, taps * es);
  const std::size_t outs = static_cast<std::size_t>(j.dy.c());
  for (std::size_t o = task_id(); o < outs; o += task_dim()) {
    vec_fill(DType::kFloat32, sums, 0.0, taps);
    for (std::size_t n = 0; n < images; ++n)
      for (std::size_t band = 0; band < bands; ++band) {
        const std::size_t y0 = band * j.band_rows, y1 = std::min(oh, y0 + j.band_rows);
        const Band b(j.taps, ow, y0, y1);
        const std::size_t len = b.acc_elems();
        load_band(j.x, j.x_base, j.dtype, n, o / j.mult, b, raw, in32);
        // dy (y, x) spread to the accumulator layout, zeros between (strided outputs).
        vec_fill(j.dtype, g_raw, 0.0, len);
        const Addr src =
            gaddr(j.dy_base, i64(n) * j.dy.strides[0] + i64(o) * j.dy.strides[1] + i64(y0) * j.dy.strides[2], es);
        const std::int64_t dst_row = j.taps.stride_y * i64(b.pitch * es);
        if (j.taps.stride_x == 1 && (j.dy.strides[3] == 1 || ow == 1))
          memcpy_strided(g_raw, src, CopyShape{ow * es, y1 - y0, dst_row, j.dy.strides[2] * i64(es)}, Dir::kGdram2Nram);
        else
          memcpy_strided(g_raw, src,
                         CopyShape{es, ow, j.taps.stride_x * i64(es), j.dy.strides[3] * i64(es), y1 - y0, dst_row,
                                   j.dy.strides[2] * i64(es)},
                         Dir::kGdram2Nram);
        vec_cast(DType::kFloat32, g32, j.dtype, g_raw, len);
        for (std::size_t t = 0; t < taps; ++t) {
          vec_binary(VecBinaryOp::kMul, DType::kFloat32, tmp, g32, in32.offset(b.tap_offset(j.taps, t) * 4), len);
          vec_reduce(sim::VecReduceOp::kSum, DType::kFloat32, one, tmp, 1, len);
          vec_binary(VecBinaryOp::kAdd, DType::kFloat32, sums.offset(i64(t) * 4), sums.offset(i64(t) * 4), one, 1);
        }
      }
    vec_cast(j.dtype, out, DType::kFloat32, sums, taps);
    const Addr dst = gaddr(j.dw_base, i64(o) * j.dw.strides[0], es);
    if (j.dw.strides[3] == 1 && j.dw.strides[2] == i64(j.taps.kw))
      memcpy(dst, out, taps * es, Dir::kNram2Gdram);
    else
      memcpy_strided(dst, out,
                     CopyShape{es, j.taps.kw, j.dw.strides[3] * i64(es), i64(es), j.taps.kh, j.dw.strides[2] * i64(es),
                               i64(j.taps.kw * es)},
                     Dir::kNram2Gdram);
  }
}

}  // namespace

Status depthwise_forward(Handle& h, const ConvShape& s, const View4& xv, std::uint64_t x, const View4& wv,
                         std::uint64_t w, std::int64_t bias_stride, std::uint64_t bias, const OutputStage& stage,
                         const View4& yv, std::uint64_t y, std::uint32_t* kernels) {
  auto job = std::make_shared<CorrJob>();
  job->dtype = s.dtype;
  job->in = xv, job->out = yv, job->w = wv;
  job->in_base = x, job->out_base = y, job->w_base = w;
  job->bias_base = bias, job->bias_stride = bias_stride;
  job->stage = stage;
  job->mult = s.ocg;
  job->taps = forward_taps(s);
  *kernels = 0;
  return run_correlation(h, "conv2d_forward_depthwise", job, kernels);
}

std::size_t depthwise_backward_data_workspace(const ConvShape& s) {
  if (s.p.stride_h == 1 && s.p.stride_w == 1) return 0;
  View4 dy;
  dy.dims = {static_cast<std::int64_t>(s.n), static_cast<std::int64_t>(s.oc), static_cast<std::int64_t>(s.oh),
             static_cast<std::int64_t>(s.ow)};
  return dilated_bytes(dy, static_cast<std::size_t>(s.p.stride_h), static_cast<std::size_t>(s.p.stride_w), s.dtype);
}

Status depthwise_backward_data(Handle& h, const ConvShape& s, const View4& dyv, std::uint64_t dy, const View4& wv,
                               std::uint64_t w, std::int64_t bias_stride, std::uint64_t bias, const View4& dxv,
                               std::uint64_t dx, std::uint64_t workspace, std::size_t workspace_bytes,
                               std::uint32_t* kernels) {
  *kernels = 0;
  auto job = std::make_shared<CorrJob>();
  job->dtype = s.dtype;
  job->in = dyv, job->in_base = dy;
  if (s.p.stride_h > 1 || s.p.stride_w > 1) {  // the gradient zero-interleaved, dense, in the workspace
    const std::size_t need = depthwise_backward_data_workspace(s);
    MLU_CHECK(workspace_bytes >= need && workspace != 0, Status::kBadParam,
              "conv2d_backward_data: workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                  std::to_string(need) + ")");
    std::uint32_t k = 0;
    MLU_RETURN_IF_ERROR(launch_dilate(h, "conv2d_backward_data_dilate", s.dtype, dyv, dy,
                                      static_cast<std::size_t>(s.p.stride_h), static_cast<std::size_t>(s.p.stride_w),
                                      workspace, &k));
    *kernels += k;
    View4 dil = dyv;
    dil.dims[2] = (dyv.h() - 1) * s.p.stride_h + 1;
    dil.dims[3] = (dyv.w() - 1) * s.p.stride_w + 1;
    dil.strides = {dil.dims[1] * dil.dims[2] * dil.dims[3], dil.dims[2] * dil.dims[3], dil.dims[3], 1};
    job->in = dil, job->in_base = workspace;
  }
  job->out = dxv, job->out_base = dx;
  job->w = wv, job->w_base = w;
  job->bias_base = bias, job->bias_stride = bias_stride;
  job->mult = s.ocg;
  job->backward = true;
  // dx[c, y, x] = sum_taps w[tap] * dy_dilated[y + pad - i * dil, x + pad - j * dil].
  job->taps = Taps{s.kh, s.kw, 1, 1, -s.p.dilation_h, -s.p.dilation_w, s.p.pad_h, s.p.pad_w};
  return run_correlation(h, "conv2d_backward_data_depthwise", job, kernels);
}

Status depthwise_backward_weight(Handle& h, const ConvShape& s, const View4& xv, std::uint64_t x, const View4& dyv,
                                 std::uint64_t dy, const View4& dwv, std::uint64_t dw, std::uint32_t* kernels) {
  auto job = std::make_shared<WgradJob>();
  job->dtype = s.dtype;
  job->x = xv, job->dy = dyv, job->dw = dwv;
  job->x_base = x, job->dy_base = dy, job->dw_base = dw;
  job->mult = s.ocg;
  job->taps = forward_taps(s);
  const std::size_t es = sim::dtype_size(s.dtype);
  job->band_rows = band_rows_for(h, job->taps, s.oh, s.ow, es, es + 4, 8 + es);
  MLU_CHECK(job->band_rows > 0, Status::kNotSupported,
            "conv2d_backward_weight: a row of " + std::to_string(s.ow) + " outputs does not fit this device's NRAM");
  MLU_RETURN_IF_ERROR(launch(
      h, "conv2d_backward_weight_depthwise", [job] { weight_grad_kernel(*job); }, block_dim(h, s.oc),
      cnrtFuncTypeBlock));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
