#include "attention/attention_common.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include <mlusim_ext.h>

#include "common/error.h"
#include "gemm/device_model.h"
#include "mlusim/sim/engine_costs.h"
#include "softmax/box_copy.h"
#include "softmax/tensor_view.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu::attn {

using dev::CopyShape;
using dev::Dir;
using sim::Space;

namespace {

std::string dims_str(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ", " + std::to_string(d) + "]";
}

Status check_4d(const TensorDesc& d, const char* op, const char* name, const std::string& want,
                const std::vector<std::int64_t>& dims) {
  MLU_CHECK(d.ndim() == 4, Status::kBadParam,
            std::string(op) + ": " + name + " " + d.str() + " must be 4-d " + want);
  MLU_CHECK(d.dims() == dims, Status::kBadParam,
            std::string(op) + ": " + name + " " + d.str() + " must be " + want + " = " +
                dims_str(dims[0], dims[1], dims[2], dims[3]));
  return Status::kSuccess;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

View4 view_of(const TensorDesc& d, const void* ptr) {
  View4 v;
  v.base = reinterpret_cast<std::uintptr_t>(ptr);
  v.dtype = d.dtype();
  for (int i = 0; i < 4; ++i) v.strides[static_cast<std::size_t>(i)] = d.stride(i);
  return v;
}

Status make_problem(Handle* h, const char* op, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                    const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                    const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, const void* o_ptr,
                    Problem* out, bool check_pointers) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&q, op, "q"));
  MLU_RETURN_IF_ERROR(check_desc(&k, op, "k"));
  MLU_RETURN_IF_ERROR(check_desc(&v, op, "v"));
  MLU_RETURN_IF_ERROR(check_desc(&o, op, "o"));
  MLU_RETURN_IF_ERROR(check_dtype_in(q, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "q"));
  for (const auto& [d, name] : {std::pair{&k, "k"}, std::pair{&v, "v"}, std::pair{&o, "o"}})
    MLU_CHECK(d->dtype() == q.dtype(), Status::kBadParam,
              std::string(op) + ": " + name + " " + d->str() + " must have q's dtype " +
                  std::string(sim::dtype_name(q.dtype())));
  MLU_CHECK(q.ndim() == 4, Status::kBadParam, std::string(op) + ": q " + q.str() + " must be 4-d [B, H, L, D]");
  Problem& pr = *out;
  pr.batch = q.dim(0), pr.heads = q.dim(1), pr.L = q.dim(2), pr.D = q.dim(3);
  MLU_CHECK(k.ndim() == 4, Status::kBadParam, std::string(op) + ": k " + k.str() + " must be 4-d [B, H, S, D]");
  pr.S = k.dim(2);
  MLU_CHECK(v.ndim() == 4, Status::kBadParam, std::string(op) + ": v " + v.str() + " must be 4-d [B, H, S, Dv]");
  pr.Dv = v.dim(3);
  MLU_RETURN_IF_ERROR(check_4d(k, op, "k", "[B, H, S, D]", {pr.batch, pr.heads, pr.S, pr.D}));
  MLU_RETURN_IF_ERROR(check_4d(v, op, "v", "[B, H, S, Dv]", {pr.batch, pr.heads, pr.S, pr.Dv}));
  MLU_RETURN_IF_ERROR(check_4d(o, op, "o", "[B, H, L, Dv]", {pr.batch, pr.heads, pr.L, pr.Dv}));
  MLU_CHECK(nn::writable(o), Status::kBadParam, std::string(op) + ": o " + o.str() + " has a broadcast (stride 0) dim");
  MLU_CHECK(std::isfinite(p.scale) && p.scale != 0.0, Status::kBadParam,
            std::string(op) + ": scale " + std::to_string(p.scale) + " must be finite and non-zero");
  MLU_CHECK(!(p.causal && mask != nullptr), Status::kBadParam,
            std::string(op) + ": causal and an explicit mask together (torch allows only one)");
  MLU_CHECK(pr.S > 0 || pr.L == 0 || pr.bh() == 0, Status::kNotSupported,
            std::string(op) + ": k " + k.str() + " has no key positions (S = 0)");
  if (check_pointers) {
    MLU_RETURN_IF_ERROR(check_ptr(q_ptr, q, op, "q"));
    MLU_RETURN_IF_ERROR(check_ptr(k_ptr, k, op, "k"));
    MLU_RETURN_IF_ERROR(check_ptr(v_ptr, v, op, "v"));
    MLU_RETURN_IF_ERROR(check_ptr(o_ptr, o, op, "o"));
  }
  pr.in = q.dtype();
  pr.scale = static_cast<float>(p.scale);
  int exponent = 0;
  const bool power_of_two = std::frexp(p.scale, &exponent) == 0.5;
  pr.scale_scores = q.dtype() != DType::kFloat32 && p.scale > 0.0 && !power_of_two;
  pr.causal = p.causal;
  pr.q = view_of(q, q_ptr), pr.k = view_of(k, k_ptr), pr.v = view_of(v, v_ptr), pr.o = view_of(o, o_ptr);
  pr.mask_kind = MaskKind::kNone;
  if (mask != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(mask, op, "mask"));
    MLU_CHECK(mask->dtype() == DType::kBool || mask->dtype() == q.dtype() || mask->dtype() == DType::kFloat32,
              Status::kNotSupported,
              std::string(op) + ": mask " + mask->str() + " must be bool, fp32 or q's dtype " +
                  std::string(sim::dtype_name(q.dtype())));
    MLU_RETURN_IF_ERROR(check_computes(mask->dtype(), op, "mask"));
    const int nd = mask->ndim();
    MLU_CHECK(nd >= 1 && nd <= 4, Status::kBadParam,
              std::string(op) + ": mask " + mask->str() + " must have 1 to 4 dims (broadcast to [B, H, L, S])");
    const std::int64_t target[4] = {pr.batch, pr.heads, pr.L, pr.S};
    View4 mv;
    mv.base = reinterpret_cast<std::uintptr_t>(mask_ptr);
    mv.dtype = mask->dtype();
    for (int i = 0; i < 4; ++i) {
      const int j = i - (4 - nd);
      const std::int64_t size = j < 0 ? 1 : mask->dim(j);
      MLU_CHECK(size == target[i] || size == 1, Status::kBadParam,
                std::string(op) + ": mask " + mask->str() + " does not broadcast to [B, H, L, S] = " +
                    dims_str(pr.batch, pr.heads, pr.L, pr.S));
      mv.strides[static_cast<std::size_t>(i)] = (j < 0 || size == 1) ? 0 : mask->stride(j);
    }
    if (check_pointers) MLU_RETURN_IF_ERROR(check_ptr(mask_ptr, *mask, op, "mask"));
    pr.mask = mv;
    pr.mask_kind = mv.strides[2] == 0 ? MaskKind::kRowBroadcast : MaskKind::kFull;
  }
  return Status::kSuccess;
}

// ---- planning ----

}  // namespace mlusim::mlu::attn

namespace mlusim::mlu {

Status attention_check(Handle* h, const AttentionParams& p, const TensorDesc& q, const TensorDesc& k,
                       const TensorDesc& v, const TensorDesc* mask) {
  constexpr const char* op = "attention_check";
  attn::Problem pr;
  TensorDesc o;
  MLU_CHECK(q.valid() && v.valid() && q.ndim() == 4 && v.ndim() == 4, Status::kBadParam,
            std::string(op) + ": q and v must be valid 4-d descriptors");
  MLU_RETURN_IF_ERROR(o.set(q.dtype(), {q.dim(0), q.dim(1), q.dim(2), v.dim(3)}));
  MLU_RETURN_IF_ERROR(attn::make_problem(h, op, p, q, nullptr, k, nullptr, v, nullptr, mask, nullptr, o, nullptr, &pr,
                                         false));
  if (q.numel() == 0 || k.numel() == 0) return Status::kSuccess;
  attn::Plan plan;
  for (auto kind : {attn::KernelKind::kForward, attn::KernelKind::kBackwardDq, attn::KernelKind::kBackwardDkDv})
    MLU_RETURN_IF_ERROR(attn::plan_attention(*h, op, pr, kind, &plan));
  return Status::kSuccess;
}

}  // namespace mlusim::mlu

namespace mlusim::mlu::attn {

std::pair<std::size_t, std::size_t> footprint(const Problem& pr, KernelKind kind, std::int64_t br, std::int64_t bc,
                                              bool on_tfu) {
  const auto es = sim::dtype_size(pr.in);
  const auto B = [](std::int64_t n, std::size_t bytes) { return up128(static_cast<std::size_t>(n) * bytes); };
  const std::int64_t D = pr.D, Dv = pr.Dv;
  std::size_t nram = 0, streamed = 0;
  const bool row_mask = pr.mask_kind == MaskKind::kRowBroadcast;
  const std::int64_t wide = std::max({br, bc, D, Dv});
  nram += B(wide, 4);                                  // ones
  if (pr.causal) nram += B(4 * (br + bc), 4);          // causal source (2T, T = br + bc)
  if (row_mask) nram += 2 * B(bc, 4);                  // mask rows
  if (kind == KernelKind::kForward) {
    nram += 2 * B(br * D, es);                         // Q blocks (next item's prefetched)
    nram += 2 * B(br * Dv, 4);                         // O accumulator + rescale scratch
    nram += 2 * B(br * Dv, 4);                         // O staging (stores in flight)
    nram += 2 * B(br * bc, 4);                         // score tiles (next block's mask prefetched)
    nram += 5 * B(br, 4) + 2 * B(br, 4);               // m, l, rowmax, alpha, -m; lse staging
    streamed = 2 * (B(bc * D, es) + B(bc * Dv, es));   // K, V blocks
  } else if (kind == KernelKind::kBackwardDq) {
    nram += 2 * (B(br * D, es) + B(br * Dv, es));      // Q, dO blocks
    nram += 3 * B(br * Dv, 4);                         // O (row terms; next item's prefetched) + scratch
    nram += B(br * D, 4) + 2 * B(br * D, 4);           // dQ accumulator, staging
    nram += 2 * B(br * bc, 4) + B(br * bc, 4);         // score tiles, dP
    nram += 2 * B(br, 4) + 3 * B(br, 4);               // -lse (x2), -D, D staging (x2)
    streamed = 2 * (B(bc * D, es) + B(bc * Dv, es));   // K, V blocks
  } else {
    // Resident: the key block (br here is the streamed query block, bc the resident key block).
    nram += 2 * (B(bc * D, es) + B(bc * Dv, es));      // K (scaled), V blocks (next item's prefetched)
    nram += B(bc * D, 4) + B(bc * Dv, 4);              // dK, dV accumulators
    nram += 2 * (B(bc * D, 4) + B(bc * Dv, 4));        // dK, dV staging
    nram += 2 * B(br * bc, 4) + B(br * bc, 4);         // S^T tiles, dP^T
    if (es != 4) nram += B(br * bc, es);               // P^T in the input dtype
    nram += 4 * B(br, 4);                              // -lse, -D (x2)
    streamed = 2 * (B(br * D, es) + B(br * Dv, es));   // Q, dO blocks
  }
  return on_tfu ? std::pair{nram, streamed} : std::pair{nram + streamed, std::size_t{0}};
}

Status plan_attention(const Handle& h, const char* op, const Problem& pr, KernelKind kind, Plan* plan) {
  const gemm::DeviceModel dm = gemm::device_model(h, pr.in);
  const sim::HardwareConfig& cfg = dm.config;
  const bool on_tfu = dm.on_tfu();
  const std::int64_t D = pr.D, Dv = pr.Dv;
  const auto es = static_cast<double>(sim::dtype_size(pr.in));
  const double t = std::max<std::uint32_t>(cfg.vfu_transcendental_factor, 1);
  const auto vfu = [&](std::int64_t n) { return static_cast<double>(dm.vfu_cycles_fp32(static_cast<std::uint64_t>(n))); };
  const auto mm = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
    return static_cast<double>(dm.matmul_cycles(static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k),
                                                static_cast<std::uint64_t>(n)));
  };
  const double cores = static_cast<double>(h.total_cores());
  // The resident side (rows of a work item) and the streamed side (keys, or queries for dK/dV).
  const bool by_keys = kind == KernelKind::kBackwardDkDv;
  const std::int64_t resident = by_keys ? pr.S : pr.L, streamed = by_keys ? pr.L : pr.S;
  const std::int64_t io_extra = pr.mask_kind == MaskKind::kNone ? 0 : 1;
  double best = -1;
  for (std::int64_t r = 16; r <= std::min<std::int64_t>(256, ceil_div(std::max<std::int64_t>(resident, 1), 16) * 16); r += 16) {
    for (std::int64_t c = 16; c <= std::min<std::int64_t>(512, ceil_div(std::max<std::int64_t>(streamed, 1), 16) * 16); c += 16) {
      // br = query rows and bc = keys per block, whichever side is resident.
      const std::int64_t br = by_keys ? c : r, bc = by_keys ? r : c;
      const auto [nram, wram] = footprint(pr, kind, br, bc, on_tfu);
      if (nram > h.nram_bytes() || wram > h.wram_bytes()) continue;
      const std::int64_t nr = std::max<std::int64_t>(1, std::min(r, resident)), nc = std::max<std::int64_t>(1, std::min(c, streamed));
      double block = 0, bytes = 0;
      const double passes =
          (kind == KernelKind::kForward ? 3 : 4) + t + io_extra + (es != 4 ? 1 : 0) + (pr.scale_scores ? 1 : 0);
      if (kind == KernelKind::kForward) {
        block = mm(nr, D, nc) + mm(nr, nc, Dv) + passes * vfu(nr * nc) + 2 * vfu(nr * Dv);
        bytes = static_cast<double>(nc * (D + Dv)) * es;
      } else if (kind == KernelKind::kBackwardDq) {
        block = mm(nr, D, nc) + mm(nr, Dv, nc) + mm(nr, nc, D) + passes * vfu(nr * nc);
        bytes = static_cast<double>(nc * (D + Dv)) * es;
      } else {
        block = mm(nr, D, nc) + mm(nr, nc, Dv) + mm(nr, Dv, nc) + mm(nr, nc, D) + passes * vfu(nr * nc);
        bytes = static_cast<double>(nc * (D + Dv)) * es + static_cast<double>(nc) * 8;
      }
      // A core's DMA streams its blocks while it computes: the slower of the two per block, the
      // DMA at its engine's rate or its fair share of DRAM when every core streams.
      block = std::max(block, dm.io_latency_cycles + bytes / std::min(dm.io_dma_bpc, dm.dram_bpc / cores));
      const double items = static_cast<double>(pr.bh() * ceil_div(resident, r));
      const double blocks = static_cast<double>(ceil_div(streamed, c));
      // The first step's copies (its resident block and first streamed block) have no compute to
      // hide behind, and every core issues them at once.
      const double first = (static_cast<double>(nr * (by_keys ? D + Dv : D)) * es + bytes) /
                           std::min(dm.io_dma_bpc, dm.dram_bpc / cores);
      const double per_core = std::ceil(items / cores) * blocks * block + first;
      const double dram = items * blocks * bytes / dm.dram_bpc;  // all cores share DRAM
      const double cost = std::max(per_core, dram);
      if (best < 0 || cost < best) best = cost, plan->br = br, plan->bc = bc;
    }
  }
  plan->on_tfu = on_tfu;
  if (best >= 0) return Status::kSuccess;
  const auto [nram, wram] = footprint(pr, kind, 16, 16, on_tfu);
  return fail(Status::kNotSupported,
              std::string(op) + ": head_dim D = " + std::to_string(D) + ", Dv = " + std::to_string(Dv) +
                  " does not fit on chip: the smallest tiling (16 x 16) needs " + std::to_string(nram) +
                  " bytes of NRAM and " + std::to_string(wram) + " of WRAM, config '" + cfg.name +
                  "' has core.nram_bytes = " + std::to_string(h.nram_bytes()) +
                  " and core.wram_bytes = " + std::to_string(h.wram_bytes()));
}

// ---- kernel side ----

namespace {

void copy_tile(const View4& v, std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows, std::int64_t c0,
               std::int64_t cols, Addr local, bool load) {
  const auto es = static_cast<std::int64_t>(v.es());
  const auto& s = v.strides;
  const Addr g{Space::kGdram, v.base + static_cast<std::uint64_t>((b * s[0] + h * s[1] + r0 * s[2] + c0 * s[3]) * es)};
  Dir dir;
  if (local.space == Space::kWram)
    dir = load ? Dir::kGdram2Wram : Dir::kWram2Gdram;
  else
    dir = load ? Dir::kGdram2Nram : Dir::kNram2Gdram;
  CopyShape shape;
  const std::int64_t gs1 = s[2] * es, ls1 = cols * es;
  if (s[3] == 1 || cols == 1) {
    if (rows == 1 || s[2] == cols) {
      shape.seg_bytes = static_cast<std::size_t>(rows * cols * es);
    } else {
      shape.seg_bytes = static_cast<std::size_t>(cols * es);
      shape.n1 = static_cast<std::size_t>(rows);
      shape.src_stride1 = load ? gs1 : ls1;
      shape.dst_stride1 = load ? ls1 : gs1;
    }
  } else {
    shape.seg_bytes = static_cast<std::size_t>(es);
    shape.n1 = static_cast<std::size_t>(cols);
    shape.src_stride1 = load ? s[3] * es : es;
    shape.dst_stride1 = load ? es : s[3] * es;
    shape.n2 = static_cast<std::size_t>(rows);
    shape.src_stride2 = load ? gs1 : ls1;
    shape.dst_stride2 = load ? ls1 : gs1;
  }
  if (load)
    dev::memcpy_strided_async(local, g, shape, dir);
  else
    dev::memcpy_strided_async(g, local, shape, dir);
}

// Where a narrower tile of `count` elements lands in an fp32 buffer (softmax/box_copy.h's rule).
Addr staging(Addr tile, std::size_t count, std::size_t es) { return at(tile, count * (4 - es)); }

}  // namespace

void load_tile_async(const View4& v, std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows,
                     std::int64_t c0, std::int64_t cols, Addr local) {
  copy_tile(v, b, h, r0, rows, c0, cols, local, true);
}

void store_tile_async(const View4& v, std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows,
                      std::int64_t c0, std::int64_t cols, Addr local) {
  copy_tile(v, b, h, r0, rows, c0, cols, local, false);
}

void product(const Plan& plan, DType in, Addr c, Addr a, Addr b, std::size_t m, std::size_t k, std::size_t n,
             bool b_transposed, bool accumulate) {
  if (plan.on_tfu)
    dev::matmul(in, DType::kFloat32, c, a, b, m, k, n, b_transposed, accumulate);
  else
    dev::vec_matmul(in, DType::kFloat32, c, a, b, m, k, n, b_transposed, accumulate);
}

std::size_t causal_half(const Plan& plan) { return static_cast<std::size_t>(2 * (plan.br + plan.bc)); }

void fill_causal_source(Addr src, std::size_t half, bool zero_first) {
  const double inf = std::numeric_limits<double>::infinity();
  dev::vec_fill(DType::kFloat32, src, zero_first ? 0.0 : -inf, half);
  dev::vec_fill(DType::kFloat32, at(src, half * 4), zero_first ? -inf : 0.0, half);
}

KernelBuffers kernel_buffers(const Problem& pr, const Plan& plan, bool zero_first) {
  KernelBuffers k;
  const std::size_t bc = static_cast<std::size_t>(plan.bc);
  const std::size_t wide = std::max({static_cast<std::size_t>(plan.br), bc, static_cast<std::size_t>(pr.D),
                                     static_cast<std::size_t>(pr.Dv)});
  k.ones = nram(wide * 4);
  dev::vec_fill(DType::kFloat32, k.ones, 1.0, wide);
  k.half = causal_half(plan);
  if (pr.causal) {
    k.causal_src = nram(2 * k.half * 4);
    fill_causal_source(k.causal_src, k.half, zero_first);
  }
  if (pr.mask_kind == MaskKind::kRowBroadcast) k.rows[0] = nram(bc * 4), k.rows[1] = nram(bc * 4);
  return k;
}

void causal_tile_async(Addr dst, Addr src, std::int64_t base, std::size_t rows, std::size_t cols) {
  CopyShape shape;
  shape.seg_bytes = cols * 4;
  shape.n1 = rows;
  shape.dst_stride1 = static_cast<std::int64_t>(cols * 4);
  shape.src_stride1 = -4;
  dev::memcpy_strided_async(dst, at(src, static_cast<std::size_t>(base) * 4), shape, Dir::kNram2Nram);
}

void mask_load(const Problem& pr, std::int64_t b, std::int64_t h, std::int64_t q0, std::int64_t nq, std::int64_t k0,
               std::int64_t nk, bool transposed, Addr tile, Addr row) {
  const std::size_t es = pr.mask.es();
  if (pr.mask_kind == MaskKind::kRowBroadcast) {
    load_tile_async(pr.mask, b, h, 0, 1, k0, nk, staging(row, static_cast<std::size_t>(nk), es));
  } else if (!transposed) {
    load_tile_async(pr.mask, b, h, q0, nq, k0, nk, staging(tile, static_cast<std::size_t>(nq * nk), es));
  } else {
    load_tile_async(pr.mask.transposed(), b, h, k0, nk, q0, nq, staging(tile, static_cast<std::size_t>(nq * nk), es));
  }
}

void mask_apply(const Problem& pr, Addr tile, Addr row, Addr ones, std::size_t nq, std::size_t nk, bool transposed) {
  const bool boolean = pr.mask.dtype == DType::kBool;
  const auto to_bias = [&](Addr buf, std::size_t n) {
    nn::widen_f32(pr.mask.dtype, buf, n);
    if (boolean)
      dev::vec_unary(sim::VecUnaryOp::kLog, DType::kFloat32, buf, buf, n);  // 1 -> 0, 0 -> -inf
    else if (pr.scale_scores)  // the tile is multiplied by the scale after the product
      dev::vec_binary_scalar(sim::VecBinaryOp::kDiv, DType::kFloat32, buf, buf, pr.scale, n);
  };
  if (pr.mask_kind == MaskKind::kRowBroadcast) {
    to_bias(row, nk);
    if (!transposed)
      nn::tile::broadcast_cols(tile, ones, row, nq, nk, false);  // tile[r, c] = row[c]
    else
      nn::tile::broadcast_rows(tile, row, ones, nk, nq, false);  // tile[r, c] = row[r]
  } else {
    to_bias(tile, nq * nk);
  }
}

}  // namespace mlusim::mlu::attn
