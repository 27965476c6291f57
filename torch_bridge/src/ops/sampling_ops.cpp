// Resampling at computed source positions: F.grid_sample (grid_sampler_2d) and bicubic
// interpolation (upsample_bicubic2d), forward and backward, built from device kernels: the source
// coordinates, tap positions and weights are elementwise programs (run_elementwise_program: one VFU
// streaming kernel each), the taps are read with gather / index_select, weighted and summed with a
// program and the device's sum, and the backwards scatter with scatter_add / index_add. No kernel
// of their own and nothing on the host but shapes. CUDA twins: GridSampler.cu, UpSampleBicubic2d.cu.
//
// grid_sampler_2d(x [N, C, H, W], grid [N, Ho, Wo, 2]) follows aten/src/ATen/native/GridSampler.h:
//   u = unnormalize(g): align_corners ? (g + 1) (S - 1) / 2 : (g + 1) S / 2 - 1/2   (S = W for x, H for y)
//   bilinear / nearest: c = compute_coordinates(u) (border: clip to [0, S - 1]; reflection: reflect
//     about the edges (align_corners: 0 and S - 1; else -1/2 and S - 1/2), then clip); taps
//     floor(c) + {0, 1} with weights 1 - t, t (t = c - floor(c)), or the single tap nearbyint(c)
//     (round half to even) with weight 1;
//   bicubic: c = u; taps floor(c) - 1 + {0, 1, 2, 3}, each through compute_coordinates, with the
//     cubic convolution weights of t (A = -0.75, UpSample.h get_cubic_upsample_coefficients);
//   out[n, c, p] = sum over the Ky x Kx taps of w_y w_x x[n, c, y, x], a tap outside the image
//     reading 0 (zeros padding; with border / reflection every tap is inside).
// Backward: grad_input = scatter_add of grad w_y w_x to the taps (accumulated in fp32);
//   grad_grid = (sum_taps sum_c x grad dw_x w_y, ... w_x dw_y) times d c / d g (the unnormalize
//   scale, times the clip / reflection derivative for bilinear: 0 on a clipped border, -1 where a
//   reflection flips); nearest has no grid gradient (0), as torch.
// upsample_bicubic2d: per spatial dim (W, then H) the source index s = align_corners ? scale o :
//   scale (o + 1/2) - 1/2 (no clamp at 0, UpSample.h area_pixel_compute_source_index with cubic),
//   i = min(floor(s), in - 1), t = clamp(s - i, 0, 1), taps clamp(i - 1 + k, 0, in - 1): four
//   index_selects weighted in one program; the backward index_adds the weighted gradient back.
// fp16 computes in fp32 (coordinates, weights, sums) and rounds once on store, as torch's opmath
// kernels; float32 and float16 only (others raise NotImplementedError naming op and dtype).
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/op_support.h"
#include "ops/program_literal.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// A program literal of a double (a Python float: rounded to fp32 in the program, as torch's float
// opmath rounds its constants).
std::string num(double v) { return program_literal(v); }
std::string num(std::int64_t v) { return num(static_cast<double>(v)); }

void check_float_dtype(const Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ",
                              t.scalar_type(), " is not supported on device mlu (float32, float16)");
}

// Program statements defining `out` = floor(x) for the fp32 name x: the float->int32 cast
// truncates (exact below 2^23, beyond which x is an integer already), then one step down where
// the truncation went up. NaN and inf pass through.
std::string floor_stmt(const std::string& out, const std::string& x) {
  const std::string t = out + "_trunc";
  return t + " = where(lt(abs(" + x + "), 8388608.0), cast_like(cast(" + x + ", i32), " + x + "), " + x + "); " + out +
         " = sub(" + t + ", cast_like(gt(" + t + ", " + x + "), " + x + ")); ";
}

// ---- cubic convolution weights (UpSample.h, A = -0.75) ------------------------------------------

constexpr double kCubicA = -0.75;

// cubic_convolution1(x) = ((A + 2) x - (A + 3)) x x + 1  (|x| <= 1)
std::string cc1(const std::string& x) {
  return "add(mul(mul(sub(mul(" + x + ", " + num(kCubicA + 2) + "), " + num(kCubicA + 3) + "), " + x + "), " + x +
         "), 1.0)";
}
// cubic_convolution2(x) = ((A x - 5 A) x + 8 A) x - 4 A  (1 < |x| < 2)
std::string cc2(const std::string& x) {
  return "sub(mul(add(mul(sub(mul(" + x + ", " + num(kCubicA) + "), " + num(5 * kCubicA) + "), " + x + "), " +
         num(8 * kCubicA) + "), " + x + "), " + num(4 * kCubicA) + ")";
}
// Their derivatives: cc1'(x) = (3 (A + 2) x - 2 (A + 3)) x, cc2'(x) = (3 A x - 10 A) x + 8 A.
std::string dcc1(const std::string& x) {
  return "mul(sub(mul(" + x + ", " + num(3 * (kCubicA + 2)) + "), " + num(2 * (kCubicA + 3)) + "), " + x + ")";
}
std::string dcc2(const std::string& x) {
  return "add(mul(sub(mul(" + x + ", " + num(3 * kCubicA) + "), " + num(10 * kCubicA) + "), " + x + "), " +
         num(8 * kCubicA) + ")";
}
// Statements defining the fp32 name `out` = the weight of tap k (k an fp32 name holding 0..3) at
// fraction t: coefficients cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t); with `derivative`, their
// derivatives with respect to t (cc2'(t + 1), cc1'(t), -cc1'(1 - t), -cc2'(2 - t)).
std::string cubic_weight_stmt(const std::string& out, const std::string& t, const std::string& k, bool derivative) {
  std::string s = out + "_x0 = add(" + t + ", 1.0); " + out + "_x2 = sub(1.0, " + t + "); " + out + "_x3 = sub(2.0, " +
                  t + "); ";
  const std::string w0 = derivative ? dcc2(out + "_x0") : cc2(out + "_x0");
  const std::string w1 = derivative ? dcc1(t) : cc1(t);
  const std::string w2 = derivative ? "neg(" + dcc1(out + "_x2") + ")" : cc1(out + "_x2");
  const std::string w3 = derivative ? "neg(" + dcc2(out + "_x3") + ")" : cc2(out + "_x3");
  return s + out + " = where(eq(" + k + ", 0.0), " + w0 + ", where(eq(" + k + ", 1.0), " + w1 + ", where(eq(" + k +
         ", 2.0), " + w2 + ", " + w3 + "))); ";
}

// ---- grid_sampler_2d ------------------------------------------------------------------------------

enum class Interp : std::int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum class Padding : std::int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

struct GridSpec {
  Interp interp;
  Padding padding;
  bool align;
};

// Statements: `out` = (g + 1) (S - 1) / 2 or (g + 1) S / 2 - 1/2 (the CPU kernel's form), `out_grad`
// its derivative as a literal.
std::string unnormalize_stmt(const std::string& out, const std::string& g, std::int64_t size, bool align) {
  if (align) return out + " = mul(add(" + g + ", 1.0), " + num(static_cast<double>(size - 1) / 2) + "); ";
  return out + " = sub(mul(add(" + g + ", 1.0), " + num(static_cast<double>(size) / 2) + "), 0.5); ";
}
double unnormalize_grad(std::int64_t size, bool align) {
  return align ? static_cast<double>(size - 1) / 2 : static_cast<double>(size) / 2;
}

// Statements: `out` = compute_coordinates(x) (GridSampler.h) and, with `grad`, `out_g` = its
// derivative (clip: 0 at or beyond the borders; reflection: the sign of the reflections).
std::string padding_stmt(const std::string& out, const std::string& x, std::int64_t size, const GridSpec& s, bool grad) {
  const std::string last = num(size - 1);
  // clip to [0, S - 1]; its derivative `out_clip_g` is 0 at or beyond the borders (clip_coordinates_set_grad).
  auto clip = [&](const std::string& v) {
    std::string r = out + " = minimum(maximum(" + v + ", 0.0), " + last + "); ";
    if (grad) r += out + "_clip_g = cast_like(logical_and(gt(" + v + ", 0.0), lt(" + v + ", " + last + ")), " + v + "); ";
    return r;
  };
  if (s.padding == Padding::kZeros) {
    std::string r = out + " = " + x + "; ";
    if (grad) r += out + "_g = cast_like(eq(" + x + ", " + x + "), " + x + "); ";  // 1 (NaN: 0, unused)
    return r;
  }
  if (s.padding == Padding::kBorder) return clip(x) + (grad ? out + "_g = " + out + "_clip_g; " : "");
  // Reflection about [low, high] (twice_low / twice_high in torch's terms).
  const std::int64_t twice_low = s.align ? 0 : -1, twice_high = s.align ? 2 * (size - 1) : 2 * size - 1;
  const std::string r = out + "_refl";
  std::string text;
  if (twice_low == twice_high) {  // a single pixel with align_corners: everything maps to 0
    text = r + " = cast_like(lt(" + x + ", " + x + "), " + x + "); ";
    if (grad) text += r + "_s = " + r + "; ";
  } else {
    const double lo = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
    const std::string d = out + "_d", a = out + "_a", q = out + "_q", fl = out + "_fl", e0 = out + "_e0",
                      neg = out + "_neg", e = out + "_e", fl2 = out + "_fl2", h = out + "_h", hf = out + "_hf",
                      even = out + "_even";
    // extra = |x - lo| mod span (|x - lo| - floor(.. / span) span, exact by Sterbenz, one step back if
    // the quotient rounded up), flips = floor(|x - lo| / span): even flips keep extra + lo.
    text = d + " = sub(" + x + ", " + num(lo) + "); " + a + " = abs(" + d + "); " + q + " = div(" + a + ", " +
           num(span) + "); " + floor_stmt(fl, q) + e0 + " = sub(" + a + ", mul(" + fl + ", " + num(span) + ")); " +
           neg + " = lt(" + e0 + ", 0.0); " + e + " = where(" + neg + ", add(" + e0 + ", " + num(span) + "), " + e0 +
           "); " + fl2 + " = where(" + neg + ", sub(" + fl + ", 1.0), " + fl + "); " + h + " = mul(" + fl2 +
           ", 0.5); " + floor_stmt(hf, h) + even + " = eq(" + h + ", " + hf + "); " + r + " = where(" + even +
           ", add(" + e + ", " + num(lo) + "), add(sub(" + num(span) + ", " + e + "), " + num(lo) + ")); ";
    if (grad)  // (x < lo ? -1 : 1) (even ? 1 : -1)
      text += r + "_s = mul(sub(1.0, mul(cast_like(lt(" + d + ", 0.0), " + d + "), 2.0)), sub(mul(cast_like(" + even +
              ", " + d + "), 2.0), 1.0)); ";
  }
  text += clip(r);
  if (grad) text += out + "_g = mul(" + out + "_clip_g, " + r + "_s); ";
  return text;
}

// One axis of the sampling: the coordinate c of every output position, its taps and weights.
struct Axis {
  Tensor tap;      // fp32 [N, K, P]: each tap's source coordinate (an integer) after padding
  Tensor weight;   // fp32 [N, K, P] or [N, 1, P]
  Tensor dweight;  // fp32 d weight / d c (backward), broadcastable to [N, K, P]
  Tensor mult;     // fp32 [N, 1, P]: d c / d grid (backward)
};

// g: fp32 [N, 1, P], the grid's coordinate for this axis. K = 1 (nearest), 2 (bilinear), 4 (bicubic).
Axis grid_axis(OpScope& op, const Tensor& g, std::int64_t size, const GridSpec& s, bool backward) {
  Axis ax;
  const std::int64_t k = s.interp == Interp::kNearest ? 1 : s.interp == Interp::kBilinear ? 2 : 4;
  const Tensor o = at::arange(k, at::TensorOptions().device(op.device()).dtype(at::kFloat)).view({1, k, 1});
  const bool padded_center = s.interp != Interp::kBicubic;  // bicubic pads each tap instead
  const std::string c_text = unnormalize_stmt("u", "$0", size, s.align) +
                             (padded_center ? padding_stmt("c", "u", size, s, false) + "c" : "u");
  const Tensor c = run_elementwise_program({g}, c_text);
  switch (s.interp) {
    case Interp::kNearest: {
      // nearbyint: f = floor(c + 1/2), one down at a tie (f - c == 1/2) when f is odd.
      ax.tap = run_elementwise_program(
          {c}, "h = add($0, 0.5); " + floor_stmt("f", "h") + "q = mul(f, 0.5); " + floor_stmt("qf", "q") +
                   "where(logical_and(eq(sub(f, $0), 0.5), ne(q, qf)), sub(f, 1.0), f)");
      ax.weight = at::ones({1, 1, 1}, g.options());
      break;
    }
    case Interp::kBilinear:
      ax.tap = run_elementwise_program({c, o}, floor_stmt("f", "$0") + "add(f, $1)");
      ax.weight = run_elementwise_program({c, o}, floor_stmt("f", "$0") + "t = sub($0, f); where(eq($1, 0.0), sub(1.0, t), t)");
      if (backward) ax.dweight = run_elementwise_program({o}, "sub(mul($0, 2.0), 1.0)");
      break;
    case Interp::kBicubic:
      ax.tap = run_elementwise_program({c, o}, floor_stmt("f", "$0") + "x = add(sub(f, 1.0), $1); " +
                                                   padding_stmt("p", "x", size, s, false) + "p");
      ax.weight = run_elementwise_program({c, o}, floor_stmt("f", "$0") + "t = sub($0, f); " +
                                                      cubic_weight_stmt("w", "t", "$1", false) + "w");
      if (backward)
        ax.dweight = run_elementwise_program({c, o}, floor_stmt("f", "$0") + "t = sub($0, f); " +
                                                         cubic_weight_stmt("w", "t", "$1", true) + "w");
      break;
  }
  if (backward) {
    const std::string scale = num(unnormalize_grad(size, s.align));
    ax.mult = padded_center ? run_elementwise_program({g}, unnormalize_stmt("u", "$0", size, s.align) +
                                                                padding_stmt("c", "u", size, s, true) + "mul(c_g, " +
                                                                scale + ")")
                            : at::full({1, 1, 1}, unnormalize_grad(size, s.align), g.options());
  }
  return ax;
}

// The taps of both axes, [N, Ky, Kx, P] flattened to [N, K, P]: flat source index (y W + x; 0 for a
// tap outside the image), validity and weight.
struct Taps {
  std::int64_t k;
  Tensor index;   // int64 [N, 1, K * P]
  Tensor valid;   // bool [N, 1, K, P]
  Tensor weight;  // fp32 [N, 1, K, P]
};

Taps combine(const Axis& y, const Axis& x, std::int64_t n, std::int64_t p, std::int64_t h, std::int64_t w) {
  const std::int64_t ky = y.tap.size(1), kx = x.tap.size(1);
  const Tensor ty = y.tap.unsqueeze(2), tx = x.tap.unsqueeze(1);  // [N, Ky, 1, P], [N, 1, Kx, P]
  const std::string valid = "logical_and(logical_and(ge($0, 0.0), lt($0, " + num(h) + ")), logical_and(ge($1, 0.0), lt($1, " +
                            num(w) + ")))";
  Taps t;
  t.k = ky * kx;
  t.valid = run_elementwise_program({ty, tx}, valid).reshape({n, 1, t.k, p});
  t.index = run_elementwise_program(
                {ty, tx}, "v = " + valid + "; cast(where(v, add(mul(cast($0, i32), " + std::to_string(w) +
                              "), cast($1, i32)), 0), i64)")
                .reshape({n, 1, t.k * p});
  t.weight = run_elementwise_program({y.weight.unsqueeze(2), x.weight.unsqueeze(1)}, "mul($0, $1)")
                 .expand({n, ky, kx, p})
                 .reshape({n, 1, t.k, p});
  return t;
}

void check_grid_sampler_2d(const char* name, const Tensor& input, const Tensor& grid, std::int64_t interp,
                           std::int64_t padding) {
  TORCH_CHECK(input.device() == grid.device(), name, ": expected input and grid to be on same device, but input is on ",
              input.device(), " and grid is on ", grid.device());
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), name,
              ": expected input and grid to have same dtype, but input has ", input.scalar_type(), " and grid has ",
              grid.scalar_type());
  TORCH_CHECK(input.dim() == 4 && grid.dim() == 4, name,
              ": expected 4D input and grid with same number of dimensions, but got input with sizes ", input.sizes(),
              " and grid with sizes ", grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0), name,
              ": expected grid and input to have same batch size, but got input with sizes ", input.sizes(),
              " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(3) == 2, name, ": expected grid to have size 2 in last dimension, but got grid with sizes ",
              grid.sizes());
  for (std::int64_t d = 2; d < 4; ++d)
    TORCH_CHECK(input.size(d) > 0, name, ": expected input to have non-empty spatial dimensions, but input has sizes ",
                input.sizes(), " with dimension ", d, " being empty");
  TORCH_CHECK(interp >= 0 && interp <= 2, name, ": interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ",
              interp);
  TORCH_CHECK(padding >= 0 && padding <= 2, name, ": padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ",
              padding);
  check_float_dtype(input, name);
}

struct GridSetup {
  std::int64_t n, c, h, w, ho, wo, p;
  Axis ax, ay;
  Taps taps;
};

GridSetup grid_setup(OpScope& op, const Tensor& input, const Tensor& grid, const GridSpec& s, bool backward) {
  GridSetup g{input.size(0), input.size(1), input.size(2), input.size(3), grid.size(1), grid.size(2),
              grid.size(1) * grid.size(2), {}, {}, {}};
  const Tensor gf = grid.to(at::kFloat);
  const Tensor gx = gf.select(3, 0).reshape({g.n, 1, g.p}), gy = gf.select(3, 1).reshape({g.n, 1, g.p});
  g.ax = grid_axis(op, gx, g.w, s, backward);
  g.ay = grid_axis(op, gy, g.h, s, backward);
  g.taps = combine(g.ay, g.ax, g.n, g.p, g.h, g.w);
  return g;
}

Tensor mlu_grid_sampler_2d(const Tensor& input, const Tensor& grid, std::int64_t interp, std::int64_t padding,
                           bool align_corners) {
  const char* name = "aten::grid_sampler_2d";
  OpScope op(name, input);
  check_on_device(grid, op.device(), name, "grid");
  check_grid_sampler_2d(name, input, grid, interp, padding);
  const GridSpec s{static_cast<Interp>(interp), static_cast<Padding>(padding), align_corners};
  const std::int64_t n = input.size(0), c = input.size(1), ho = grid.size(1), wo = grid.size(2);
  if (n * c * ho * wo == 0) return at::zeros({n, c, ho, wo}, input.options());
  const GridSetup g = grid_setup(op, input, grid, s, false);
  const Tensor xf = input.reshape({n, c, g.h * g.w});
  const Tensor v = at::gather(xf, 2, g.taps.index.expand({n, c, g.taps.k * g.p})).view({n, c, g.taps.k, g.p});
  // A tap outside the image reads 0 (never x * 0: an inf there must not make NaN).
  const Tensor prod = run_elementwise_program({v, g.taps.valid, g.taps.weight}, "mul(where($1, cast($0, f32), 0.0), $2)");
  return at::sum(prod, {2}).to(input.scalar_type()).view({n, c, ho, wo});
}

std::tuple<Tensor, Tensor> mlu_grid_sampler_2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                                        std::int64_t interp, std::int64_t padding, bool align_corners,
                                                        std::array<bool, 2> output_mask) {
  const char* name = "aten::grid_sampler_2d_backward";
  OpScope op(name, input);
  check_on_device(grid, op.device(), name, "grid");
  check_on_device(grad_output, op.device(), name, "grad_output");
  check_grid_sampler_2d(name, input, grid, interp, padding);
  const GridSpec s{static_cast<Interp>(interp), static_cast<Padding>(padding), align_corners};
  const std::int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3), ho = grid.size(1),
                     wo = grid.size(2);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef({n, c, ho, wo}), name, ": grad_output must have sizes ",
              at::IntArrayRef({n, c, ho, wo}), ", got ", grad_output.sizes());
  Tensor grad_input, grad_grid;
  const bool want_input = output_mask[0], want_grid = output_mask[1];
  if (n * c * ho * wo == 0) {
    if (want_input) grad_input = at::zeros_like(input, at::MemoryFormat::Contiguous);
    if (want_grid) grad_grid = at::zeros_like(grid, at::MemoryFormat::Contiguous);
    return {grad_input, grad_grid};
  }
  const bool grid_needs_taps = want_grid && s.interp != Interp::kNearest;
  const GridSetup g = grid_setup(op, input, grid, s, grid_needs_taps);
  const Taps& t = g.taps;
  const Tensor go = grad_output.reshape({n, c, 1, g.p});
  if (want_input) {
    const Tensor src = run_elementwise_program({go, t.valid, t.weight}, "where($1, mul(cast($0, f32), $2), 0.0)");
    const Tensor acc = at::scatter_add(at::zeros({n, c, h * w}, input.options().dtype(at::kFloat)), 2,
                                       t.index.expand({n, c, t.k * g.p}), src.view({n, c, t.k * g.p}));
    grad_input = acc.to(input.scalar_type()).view({n, c, h, w});
  }
  if (want_grid) {
    if (!grid_needs_taps) {
      grad_grid = at::zeros_like(grid, at::MemoryFormat::Contiguous);
    } else {
      const Tensor xf = input.reshape({n, c, h * w});
      const Tensor v = at::gather(xf, 2, t.index.expand({n, c, t.k * g.p})).view({n, c, t.k, g.p});
      // sum over channels of x(tap) grad: [N, K, P]
      const Tensor gv = at::sum(
          run_elementwise_program({v, go, t.valid}, "where($2, mul(cast($0, f32), cast($1, f32)), 0.0)"), {1});
      const std::int64_t ky = g.ay.tap.size(1), kx = g.ax.tap.size(1);
      auto per_tap = [&](const Tensor& a, const Tensor& b) {  // a over y taps, b over x taps -> [N, K, P]
        return run_elementwise_program({a.unsqueeze(2), b.unsqueeze(1)}, "mul($0, $1)")
            .expand({n, ky, kx, g.p})
            .reshape({n, t.k, g.p});
      };
      const Tensor dx = per_tap(g.ay.weight, g.ax.dweight), dy = per_tap(g.ay.dweight, g.ax.weight);
      const Tensor gix = run_elementwise_program({at::sum(run_elementwise_program({gv, dx}, "mul($0, $1)"), {1}, true), g.ax.mult},
                                                 "mul($0, $1)");
      const Tensor giy = run_elementwise_program({at::sum(run_elementwise_program({gv, dy}, "mul($0, $1)"), {1}, true), g.ay.mult},
                                                 "mul($0, $1)");
      grad_grid = at::stack({gix.view({n, ho, wo}), giy.view({n, ho, wo})}, 3).to(grid.scalar_type());
    }
  }
  return {grad_input, grad_grid};
}

// ---- upsample_bicubic2d -----------------------------------------------------------------------------

struct CubicDim {
  std::int64_t dim, in, out;
  Tensor index;   // int64 [4 * out]: tap k of output o at k * out + o
  Tensor weight;  // fp32 [4 * out], shaped to broadcast along dim by the caller
};

// area_pixel_compute_scale in fp32 (the literal rounds it as torch's opmath float computes it).
double cubic_scale(std::int64_t in, std::int64_t out, bool align, std::optional<double> scale) {
  if (align) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

CubicDim cubic_dim(OpScope& op, std::int64_t dim, std::int64_t in, std::int64_t out, bool align,
                   std::optional<double> scale) {
  const auto f32 = at::TensorOptions().device(op.device()).dtype(at::kFloat);
  const Tensor o = at::arange(out, f32).view({1, out});
  const Tensor k = at::arange(4, f32).view({4, 1});
  const std::string sc = num(cubic_scale(in, out, align, scale)), last = num(in - 1);
  const std::string src = align ? "s = mul($0, " + sc + "); " : "s = sub(mul(add($0, 0.5), " + sc + "), 0.5); ";
  // i = min(floor(s), in - 1), t = clamp(s - i, 0, 1) (UpSample.h guard_index_and_lambda)
  const std::string base = src + floor_stmt("fs", "s") + "i = minimum(fs, " + last + "); ";
  CubicDim d{dim, in, out, Tensor(), Tensor()};
  d.index = run_elementwise_program({o, k}, base + "cast(minimum(maximum(add(sub(i, 1.0), $1), 0.0), " + last + "), i64)")
                .reshape({4 * out});
  d.weight = run_elementwise_program(
                 {o, k}, base + "t = minimum(maximum(sub(s, i), 0.0), 1.0); " + cubic_weight_stmt("w", "t", "$1", false) + "w")
                 .reshape({4 * out});
  return d;
}

std::vector<CubicDim> cubic_dims(OpScope& op, at::IntArrayRef input_size, at::IntArrayRef output_size, bool align,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  TORCH_CHECK(output_size.size() == 2, op.name(), ": expected output_size of 2 values, got ", output_size.size());
  TORCH_CHECK(input_size.size() == 4, op.name(), ": expected a 4-d input (size ", input_size, ")");
  for (std::size_t i = 0; i < 2; ++i)
    TORCH_CHECK(input_size[2 + i] > 0 && output_size[i] > 0, op.name(),
                ": input and output sizes should be greater than 0, but got input (H: ", input_size[2], ", W: ",
                input_size[3], ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
  // W first, then H (the CPU kernel interpolates along W inside each row).
  return {cubic_dim(op, 3, input_size[3], output_size[1], align, scales_w),
          cubic_dim(op, 2, input_size[2], output_size[0], align, scales_h)};
}

// The weights of one dim as [4 * out] along `dim` of a 4-d tensor.
Tensor along(const Tensor& weight, std::int64_t dim) {
  std::vector<std::int64_t> shape(4, 1);
  shape[static_cast<std::size_t>(dim)] = weight.numel();
  return weight.view(shape);
}

Tensor bicubic_forward(const Tensor& self, at::IntArrayRef output_size, bool align, std::optional<double> scales_h,
                       std::optional<double> scales_w) {
  const char* name = "aten::upsample_bicubic2d";
  OpScope op(name, self);
  check_float_dtype(self, name);
  const std::vector<CubicDim> dims = cubic_dims(op, self.sizes(), output_size, align, scales_h, scales_w);
  if (self.numel() == 0)
    return at::zeros({self.size(0), self.size(1), output_size[0], output_size[1]}, self.options());
  Tensor x = self;
  for (const CubicDim& d : dims) {
    // The four taps side by side along dim ([.., 4 out, ..]), weighted, then summed in groups of 4.
    const Tensor taps = at::index_select(x, d.dim, d.index);
    Tensor weighted = run_elementwise_program({taps, along(d.weight, d.dim)}, "mul(cast($0, f32), $1)");
    std::vector<std::int64_t> shape = weighted.sizes().vec();
    shape[static_cast<std::size_t>(d.dim)] = d.out;
    shape.insert(shape.begin() + d.dim, 4);
    x = at::sum(weighted.view(shape), {d.dim});  // fp32 between the dims
  }
  return x.to(self.scalar_type());
}

Tensor bicubic_backward(const Tensor& grad, at::IntArrayRef output_size, at::IntArrayRef input_size, bool align,
                        std::optional<double> scales_h, std::optional<double> scales_w) {
  const char* name = "aten::upsample_bicubic2d_backward";
  OpScope op(name, grad);
  check_float_dtype(grad, name);
  const std::vector<CubicDim> dims = cubic_dims(op, input_size, output_size, align, scales_h, scales_w);
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == input_size[0] && grad.size(1) == input_size[1] &&
                  grad.size(2) == output_size[0] && grad.size(3) == output_size[1],
              name, ": grad_output must have sizes [", input_size[0], ", ", input_size[1], ", ", output_size[0], ", ",
              output_size[1], "], got ", grad.sizes());
  if (grad.numel() == 0) return at::zeros(input_size, grad.options());
  Tensor g = grad;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    // Each output's gradient, weighted per tap, index_added to its tap (fp32 accumulation).
    std::vector<std::int64_t> reps(4, 1);
    reps[static_cast<std::size_t>(it->dim)] = 4;
    const Tensor src = run_elementwise_program({g.repeat(reps), along(it->weight, it->dim)}, "mul(cast($0, f32), $1)");
    std::vector<std::int64_t> shape = g.sizes().vec();
    shape[static_cast<std::size_t>(it->dim)] = it->in;
    g = at::index_add(at::zeros(shape, grad.options().dtype(at::kFloat)), it->dim, it->index, src);
  }
  return g.to(grad.scalar_type());
}

using SymSizes = c10::SymIntArrayRef;
Tensor mlu_upsample_bicubic2d(const Tensor& self, SymSizes output_size, bool align, std::optional<double> sh,
                              std::optional<double> sw) {
  return bicubic_forward(self, C10_AS_INTARRAYREF_SLOW(output_size), align, sh, sw);
}
Tensor& mlu_upsample_bicubic2d_out(const Tensor& self, SymSizes output_size, bool align, std::optional<double> sh,
                                   std::optional<double> sw, Tensor& out) {
  return write_out(mlu_upsample_bicubic2d(self, output_size, align, sh, sw), out, "aten::upsample_bicubic2d");
}
Tensor mlu_upsample_bicubic2d_backward(const Tensor& grad, SymSizes output_size, SymSizes input_size, bool align,
                                       std::optional<double> sh, std::optional<double> sw) {
  return bicubic_backward(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, sh, sw);
}
Tensor& mlu_upsample_bicubic2d_backward_out(const Tensor& grad, SymSizes output_size, SymSizes input_size, bool align,
                                            std::optional<double> sh, std::optional<double> sw, Tensor& gi) {
  return write_out(mlu_upsample_bicubic2d_backward(grad, output_size, input_size, align, sh, sw), gi,
                   "aten::upsample_bicubic2d_backward");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(mlu_grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(mlu_grid_sampler_2d_backward));
  m.impl("upsample_bicubic2d", TORCH_FN(mlu_upsample_bicubic2d));
  m.impl("upsample_bicubic2d.out", TORCH_FN(mlu_upsample_bicubic2d_out));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(mlu_upsample_bicubic2d_backward));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(mlu_upsample_bicubic2d_backward_out));
}

}  // namespace mlusim::bridge::ops
