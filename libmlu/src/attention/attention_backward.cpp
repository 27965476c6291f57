// attention_backward: the flash-attention backward as two kernels (attention.h has the algorithm).
//   attention_backward_dq:   work items = query blocks; per item D = rowsum(dO ∘ O) (also written
//                            to the workspace), then per visible key block P (recomputed from the
//                            logsumexp), dP = dO V^T, dS = P ∘ (dP - D), dQ += dS K; dQ x scale.
//   attention_backward_dkdv: work items = key blocks (K scaled, V resident); per visible query block
//                            P^T = exp(K Q^T - lse), dV += P^T dO, dP^T = V dO^T,
//                            dS^T = P^T ∘ (dP^T - D), dK += dS^T Q; dK x scale.
// Both stream the other side's blocks through WRAM, double buffered, as the forward does.
#include <cfloat>
#include <string>
#include <vector>

#include "attention/attention_common.h"
#include "common/error.h"
#include "common/launch.h"
#include "softmax/box_copy.h"
#include "softmax/pipeline.h"
#include "softmax/tensor_view.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu {
namespace {

using namespace attn;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;
constexpr DType kF32 = DType::kFloat32;
constexpr const char* kOp = "attention_backward";

struct BackwardArgs {
  Problem pr;
  Plan plan;
};

// The row terms D in the workspace: fp32 [B, H, L] contiguous, addressed as [b, h, l, 0].
View4 row_terms_view(const Problem& pr) {
  View4 v;
  v.base = pr.row_terms;
  v.strides = {pr.heads * pr.L, pr.L, 1, 0};
  return v;
}

// One step of a task's walk: work item `item`, streamed block `block` (-1: an item with nothing
// visible, which stores zeros), and whether it opens / closes its item.
struct Step {
  std::int64_t item, block;
  bool first, last;
};

// Stores acc x factor (fp32) through `stage` (cast in place to the output dtype).
void store_scaled(const Problem& pr, Addr acc, Addr stage, double factor, std::size_t n, const View4& dst,
                  std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows, std::int64_t cols) {
  if (factor != 1.0)
    dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, stage, acc, factor, n);
  else
    dev::vec_unary(VecUnaryOp::kCopy, kF32, stage, acc, n);
  if (pr.in != kF32) dev::vec_cast(pr.in, stage, kF32, stage, n);
  store_tile_async(dst, b, h, r0, rows, 0, cols, stage);
}

void dq_kernel(const BackwardArgs& a) {
  const Problem& pr = a.pr;
  const Plan& plan = a.plan;
  const std::int64_t nqb = (pr.L + plan.br - 1) / plan.br, nkb = (pr.S + plan.bc - 1) / plan.bc;
  struct Item {
    std::int64_t b, h, r0, nr, last;
  };
  const auto item_of = [&](std::int64_t w) {
    const std::int64_t bh = w / nqb, r0 = (w % nqb) * plan.br, nr = std::min(plan.br, pr.L - r0);
    const std::int64_t last = pr.causal ? std::min(nkb - 1, (r0 + nr - 1) / plan.bc) : nkb - 1;
    return Item{bh / pr.heads, bh % pr.heads, r0, nr, last};
  };
  const auto [w0, w1] = nn::task_range(static_cast<std::size_t>(pr.bh() * nqb));
  std::vector<Step> steps;
  for (std::size_t w = w0; w < w1; ++w) {
    const Item it = item_of(static_cast<std::int64_t>(w));
    for (std::int64_t j = 0; j <= it.last; ++j) steps.push_back({static_cast<std::int64_t>(w), j, j == 0, j == it.last});
  }
  if (steps.empty()) return;

  const auto es = sim::dtype_size(pr.in);
  const std::size_t br = static_cast<std::size_t>(plan.br), bc = static_cast<std::size_t>(plan.bc);
  const std::size_t D = static_cast<std::size_t>(pr.D), Dv = static_cast<std::size_t>(pr.Dv);
  const Space kv_space = plan.on_tfu ? Space::kWram : Space::kNram;
  const KernelBuffers shared = kernel_buffers(pr, plan, true);
  const Addr ones = shared.ones, causal_src = shared.causal_src;
  const Addr* rows = shared.rows;
  const std::size_t half = shared.half;
  const Addr q[2] = {nram(br * D * es), nram(br * D * es)};
  const Addr dO[2] = {nram(br * Dv * es), nram(br * Dv * es)};
  const Addr o32[2] = {nram(br * Dv * 4), nram(br * Dv * 4)}, scratch = nram(br * Dv * 4);
  const Addr dqacc = nram(br * D * 4);
  const Addr dqstage[2] = {nram(br * D * 4), nram(br * D * 4)};
  const Addr s[2] = {nram(br * bc * 4), nram(br * bc * 4)};
  const Addr dp = nram(br * bc * 4);
  const Addr negl[2] = {nram(br * 4), nram(br * 4)};
  const Addr negd = nram(br * 4);
  const Addr dstage[2] = {nram(br * 4), nram(br * 4)};
  const Addr kb[2] = {alloc(kv_space, bc * D * es), alloc(kv_space, bc * D * es)};
  const Addr vb[2] = {alloc(kv_space, bc * Dv * es), alloc(kv_space, bc * Dv * es)};
  const View4 terms = row_terms_view(pr);

  const auto key_block = [&](std::int64_t j) {
    const std::int64_t c0 = j * plan.bc;
    return std::pair{c0, std::min(plan.bc, pr.S - c0)};
  };
  const auto prefetch = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(st.item);
    const int slot = static_cast<int>(i % 2), qs = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    const auto [c0, nc] = key_block(st.block);
    if (st.first) {
      load_tile_async(pr.q, it.b, it.h, it.r0, it.nr, 0, pr.D, q[qs]);
      load_tile_async(pr.d_o, it.b, it.h, it.r0, it.nr, 0, pr.Dv, dO[qs]);
      load_tile_async(pr.o, it.b, it.h, it.r0, it.nr, 0, pr.Dv,
                      at(o32[qs], static_cast<std::size_t>(it.nr) * Dv * (4 - es)));
      load_tile_async(pr.lse, it.b, it.h, it.r0, it.nr, 0, 1, negl[qs]);
    }
    load_tile_async(pr.k, it.b, it.h, c0, nc, 0, pr.D, kb[slot]);
    load_tile_async(pr.v, it.b, it.h, c0, nc, 0, pr.Dv, vb[slot]);
    if (pr.mask_kind != MaskKind::kNone)
      mask_load(pr, it.b, it.h, it.r0, it.nr, c0, nc, false, s[slot], rows[slot]);
    else if (pr.causal && c0 + nc - 1 > it.r0)
      causal_tile_async(s[slot], causal_src, static_cast<std::int64_t>(half) + c0 - it.r0 - 1,
                        static_cast<std::size_t>(it.nr), static_cast<std::size_t>(nc));
  };
  const auto compute = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(st.item);
    const int slot = static_cast<int>(i % 2), qs = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    const auto [c0, nc_] = key_block(st.block);
    const auto nr = static_cast<std::size_t>(it.nr), nc = static_cast<std::size_t>(nc_);
    const Addr S = s[slot];
    if (st.first) {
      if (!pr.scale_scores) dev::vec_binary_scalar(VecBinaryOp::kMul, pr.in, q[qs], q[qs], pr.scale, nr * D);
      dev::vec_unary(VecUnaryOp::kNeg, kF32, negl[qs], negl[qs], nr);
      // D = rowsum(dO ∘ O), in fp32.
      nn::widen_f32(pr.in, o32[qs], nr * Dv);
      if (pr.in == kF32)
        dev::vec_unary(VecUnaryOp::kCopy, kF32, scratch, dO[qs], nr * Dv);
      else
        dev::vec_cast(kF32, scratch, pr.in, dO[qs], nr * Dv);
      dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, scratch, o32[qs], nr * Dv);
      dev::vec_reduce(VecReduceOp::kSum, kF32, dstage[qs], scratch, nr, Dv);
      dev::vec_unary(VecUnaryOp::kNeg, kF32, negd, dstage[qs], nr);
      store_tile_async(terms, it.b, it.h, it.r0, it.nr, 0, 1, dstage[qs]);
    }
    const bool bias = pr.mask_kind != MaskKind::kNone || (pr.causal && c0 + nc_ - 1 > it.r0);
    if (pr.mask_kind != MaskKind::kNone) mask_apply(pr, S, rows[slot], ones, nr, nc, false);
    product(plan, pr.in, S, q[qs], kb[slot], nr, D, nc, true, bias);  // S (+)= scale Q K^T
    if (pr.scale_scores) dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, S, S, pr.scale, nr * nc);
    nn::tile::broadcast_rows(S, negl[qs], ones, nr, nc, true);      // S - lse
    dev::vec_unary(VecUnaryOp::kExp, kF32, S, S, nr * nc);          // P
    product(plan, pr.in, dp, dO[qs], vb[slot], nr, Dv, nc, true, false);  // dP = dO V^T
    nn::tile::broadcast_rows(dp, negd, ones, nr, nc, true);              // dP - D
    dev::vec_binary(VecBinaryOp::kMul, kF32, dp, dp, S, nr * nc);        // dS
    if (pr.in != kF32) dev::vec_cast(pr.in, dp, kF32, dp, nr * nc);
    product(plan, pr.in, dqacc, dp, kb[slot], nr, nc, D, false, !st.first);  // dQ (+)= dS K
    if (st.last) store_scaled(pr, dqacc, dqstage[qs], pr.scale, nr * D, pr.dq, it.b, it.h, it.r0, it.nr, pr.D);
  };

  prefetch(0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    dev::sync_io();
    if (i + 1 < steps.size()) prefetch(i + 1);
    compute(i);
  }
  dev::sync_io();
}

void dkdv_kernel(const BackwardArgs& a) {
  const Problem& pr = a.pr;
  const Plan& plan = a.plan;
  const std::int64_t nqb = (pr.L + plan.br - 1) / plan.br, nkb = (pr.S + plan.bc - 1) / plan.bc;
  struct Item {
    std::int64_t b, h, k0, nk, first;  // first visible query block (nqb: none)
  };
  const auto item_of = [&](std::int64_t w) {
    const std::int64_t bh = w / nkb, k0 = (w % nkb) * plan.bc, nk = std::min(plan.bc, pr.S - k0);
    // Causal: query blocks ending before the first key see none of the block.
    const std::int64_t first = pr.causal ? std::min(nqb, k0 / plan.br) : 0;
    return Item{bh / pr.heads, bh % pr.heads, k0, nk, first};
  };
  const auto [w0, w1] = nn::task_range(static_cast<std::size_t>(pr.bh() * nkb));
  std::vector<Step> steps;
  for (std::size_t w = w0; w < w1; ++w) {
    const Item it = item_of(static_cast<std::int64_t>(w));
    if (it.first >= nqb) steps.push_back({static_cast<std::int64_t>(w), -1, true, true});
    for (std::int64_t i = it.first; i < nqb; ++i)
      steps.push_back({static_cast<std::int64_t>(w), i, i == it.first, i + 1 == nqb});
  }
  if (steps.empty()) return;

  const auto es = sim::dtype_size(pr.in);
  const std::size_t br = static_cast<std::size_t>(plan.br), bc = static_cast<std::size_t>(plan.bc);
  const std::size_t D = static_cast<std::size_t>(pr.D), Dv = static_cast<std::size_t>(pr.Dv);
  const Space qd_space = plan.on_tfu ? Space::kWram : Space::kNram;
  const KernelBuffers shared = kernel_buffers(pr, plan, false);
  const Addr ones = shared.ones, causal_src = shared.causal_src;
  const Addr* rows = shared.rows;
  const std::size_t half = shared.half;
  const Addr kr[2] = {nram(bc * D * es), nram(bc * D * es)};
  const Addr vr[2] = {nram(bc * Dv * es), nram(bc * Dv * es)};
  const Addr dkacc = nram(bc * D * 4), dvacc = nram(bc * Dv * 4);
  const Addr dkstage[2] = {nram(bc * D * 4), nram(bc * D * 4)};
  const Addr dvstage[2] = {nram(bc * Dv * 4), nram(bc * Dv * 4)};
  const Addr st_[2] = {nram(br * bc * 4), nram(br * bc * 4)};
  const Addr dpt = nram(br * bc * 4);
  const Addr p16 = es != 4 ? nram(br * bc * es) : Addr{};
  const Addr negl[2] = {nram(br * 4), nram(br * 4)};
  const Addr negd[2] = {nram(br * 4), nram(br * 4)};
  const Addr qw[2] = {alloc(qd_space, br * D * es), alloc(qd_space, br * D * es)};
  const Addr dow[2] = {alloc(qd_space, br * Dv * es), alloc(qd_space, br * Dv * es)};
  const View4 terms = row_terms_view(pr);

  const auto query_block = [&](std::int64_t i) {
    const std::int64_t q0 = i * plan.br;
    return std::pair{q0, std::min(plan.br, pr.L - q0)};
  };
  const auto prefetch = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(st.item);
    const int slot = static_cast<int>(i % 2), ks = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    if (st.first) {
      load_tile_async(pr.k, it.b, it.h, it.k0, it.nk, 0, pr.D, kr[ks]);
      load_tile_async(pr.v, it.b, it.h, it.k0, it.nk, 0, pr.Dv, vr[ks]);
    }
    if (st.block < 0) return;
    const auto [q0, nq] = query_block(st.block);
    load_tile_async(pr.q, it.b, it.h, q0, nq, 0, pr.D, qw[slot]);
    load_tile_async(pr.d_o, it.b, it.h, q0, nq, 0, pr.Dv, dow[slot]);
    load_tile_async(pr.lse, it.b, it.h, q0, nq, 0, 1, negl[slot]);
    load_tile_async(terms, it.b, it.h, q0, nq, 0, 1, negd[slot]);
    if (pr.mask_kind != MaskKind::kNone)
      mask_load(pr, it.b, it.h, q0, nq, it.k0, it.nk, true, st_[slot], rows[slot]);
    else if (pr.causal && it.k0 + it.nk - 1 > q0)  // some key of the block lies past some query
      causal_tile_async(st_[slot], causal_src, static_cast<std::int64_t>(half) + q0 - it.k0,
                        static_cast<std::size_t>(it.nk), static_cast<std::size_t>(nq));
  };
  const auto compute = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(st.item);
    const int slot = static_cast<int>(i % 2), ks = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    const auto nk = static_cast<std::size_t>(it.nk);
    if (st.block < 0) {  // no query sees these keys: zero gradients
      dev::vec_fill(kF32, dkacc, 0.0, nk * D);
      dev::vec_fill(kF32, dvacc, 0.0, nk * Dv);
    } else {
      const auto [q0, nq_] = query_block(st.block);
      const auto nq = static_cast<std::size_t>(nq_);
      const Addr ST = st_[slot];
      if (st.first && !pr.scale_scores)
        dev::vec_binary_scalar(VecBinaryOp::kMul, pr.in, kr[ks], kr[ks], pr.scale, nk * D);
      dev::vec_unary(VecUnaryOp::kNeg, kF32, negl[slot], negl[slot], nq);
      dev::vec_unary(VecUnaryOp::kNeg, kF32, negd[slot], negd[slot], nq);
      const bool bias = pr.mask_kind != MaskKind::kNone || (pr.causal && it.k0 + it.nk - 1 > q0);
      if (pr.mask_kind != MaskKind::kNone) mask_apply(pr, ST, rows[slot], ones, nq, nk, true);
      product(a.plan, pr.in, ST, kr[ks], qw[slot], nk, D, nq, true, bias);  // S^T (+)= scale K Q^T
      if (pr.scale_scores) dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, ST, ST, pr.scale, nk * nq);
      nn::tile::broadcast_cols(ST, ones, negl[slot], nk, nq, true);         // S^T - lse
      dev::vec_unary(VecUnaryOp::kExp, kF32, ST, ST, nk * nq);              // P^T
      Addr pt = ST;
      if (pr.in != kF32) dev::vec_cast(pr.in, p16, kF32, ST, nk * nq), pt = p16;
      product(a.plan, pr.in, dvacc, pt, dow[slot], nk, nq, Dv, false, !st.first);  // dV (+)= P^T dO
      product(a.plan, pr.in, dpt, vr[ks], dow[slot], nk, Dv, nq, true, false);     // dP^T = V dO^T
      nn::tile::broadcast_cols(dpt, ones, negd[slot], nk, nq, true);               // dP^T - D
      dev::vec_binary(VecBinaryOp::kMul, kF32, dpt, dpt, ST, nk * nq);             // dS^T
      if (pr.in != kF32) dev::vec_cast(pr.in, dpt, kF32, dpt, nk * nq);
      product(a.plan, pr.in, dkacc, dpt, qw[slot], nk, nq, D, false, !st.first);  // dK (+)= dS^T Q
    }
    if (!st.last) return;
    store_scaled(pr, dkacc, dkstage[ks], pr.scale, nk * D, pr.dk, it.b, it.h, it.k0, it.nk, pr.D);
    store_scaled(pr, dvacc, dvstage[ks], 1.0, nk * Dv, pr.dv, it.b, it.h, it.k0, it.nk, pr.Dv);
  };

  prefetch(0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    dev::sync_io();
    if (i + 1 < steps.size()) prefetch(i + 1);
    compute(i);
  }
  dev::sync_io();
}

Status check_like(const TensorDesc& d, const TensorDesc& like, const char* name, const char* like_name, bool output) {
  MLU_RETURN_IF_ERROR(check_desc(&d, kOp, name));
  MLU_CHECK(d.dtype() == like.dtype() && d.dims() == like.dims(), Status::kBadParam,
            std::string(kOp) + ": " + name + " " + d.str() + " must have " + like_name + "'s dtype and dims " +
                like.str());
  MLU_CHECK(!output || nn::writable(d), Status::kBadParam,
            std::string(kOp) + ": " + name + " " + d.str() + " has a broadcast (stride 0) dim");
  return Status::kSuccess;
}

}  // namespace

Status get_attention_backward_workspace_size(Handle* h, const TensorDesc& q, std::size_t* bytes) {
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_RETURN_IF_ERROR(check_desc(&q, kOp, "q"));
  MLU_CHECK(q.ndim() == 4, Status::kBadParam, std::string(kOp) + ": q " + q.str() + " must be 4-d [B, H, L, D]");
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(kOp) + ": bytes is null");
  *bytes = static_cast<std::size_t>(q.dim(0) * q.dim(1) * q.dim(2)) * 4;
  return Status::kSuccess;
}

Status attention_backward(Handle* h, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                          const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                          const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, const void* o_ptr,
                          const TensorDesc& d_o, const void* do_ptr, const TensorDesc& lse, const void* lse_ptr,
                          const TensorDesc& dq, void* dq_ptr, const TensorDesc& dk, void* dk_ptr,
                          const TensorDesc& dv, void* dv_ptr, void* workspace, std::size_t workspace_bytes) {
  BackwardArgs args;
  Problem& pr = args.pr;
  MLU_RETURN_IF_ERROR(make_problem(h, kOp, p, q, q_ptr, k, k_ptr, v, v_ptr, mask, mask_ptr, o, o_ptr, &pr));
  MLU_RETURN_IF_ERROR(check_like(d_o, o, "do", "o", false));
  MLU_RETURN_IF_ERROR(check_like(dq, q, "dq", "q", true));
  MLU_RETURN_IF_ERROR(check_like(dk, k, "dk", "k", true));
  MLU_RETURN_IF_ERROR(check_like(dv, v, "dv", "v", true));
  MLU_RETURN_IF_ERROR(check_desc(&lse, kOp, "lse"));
  MLU_CHECK(lse.dtype() == DType::kFloat32 && lse.ndim() == 3 && lse.dim(0) == pr.batch && lse.dim(1) == pr.heads &&
                lse.dim(2) == pr.L,
            Status::kBadParam,
            std::string(kOp) + ": lse " + lse.str() + " must be fp32 [B, H, L] = [" + std::to_string(pr.batch) + ", " +
                std::to_string(pr.heads) + ", " + std::to_string(pr.L) + "]");
  for (const auto& [d, ptr, name] : {std::tuple{&d_o, do_ptr, "do"}, std::tuple{&lse, lse_ptr, "lse"},
                                     std::tuple{&dq, static_cast<const void*>(dq_ptr), "dq"},
                                     std::tuple{&dk, static_cast<const void*>(dk_ptr), "dk"},
                                     std::tuple{&dv, static_cast<const void*>(dv_ptr), "dv"}})
    MLU_RETURN_IF_ERROR(check_ptr(ptr, *d, kOp, name));
  std::size_t need = 0;
  MLU_RETURN_IF_ERROR(get_attention_backward_workspace_size(h, q, &need));
  MLU_CHECK(workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
            std::string(kOp) + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(need) + ")");
  pr.d_o = view_of(d_o, do_ptr);
  pr.dq = view_of(dq, dq_ptr), pr.dk = view_of(dk, dk_ptr), pr.dv = view_of(dv, dv_ptr);
  pr.lse.base = reinterpret_cast<std::uintptr_t>(lse_ptr);
  pr.lse.strides = {lse.stride(0), lse.stride(1), lse.stride(2), 0};
  pr.has_lse = true;
  pr.row_terms = reinterpret_cast<std::uintptr_t>(workspace);
  if (q.numel() == 0 && k.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  BackwardArgs dq_args = args, kv_args = args;
  std::uint32_t kernels = 0;
  if (q.numel() > 0) {
    MLU_RETURN_IF_ERROR(plan_attention(*h, kOp, pr, KernelKind::kBackwardDq, &dq_args.plan));
    const auto items = static_cast<std::uint64_t>(pr.bh() * ((pr.L + dq_args.plan.br - 1) / dq_args.plan.br));
    MLU_RETURN_IF_ERROR(launch(
        *h, "attention_backward_dq", [dq_args] { dq_kernel(dq_args); }, block_dim(*h, items), cnrtFuncTypeBlock));
    ++kernels;
  }
  if (k.numel() > 0) {
    MLU_RETURN_IF_ERROR(plan_attention(*h, kOp, pr, KernelKind::kBackwardDkDv, &kv_args.plan));
    const auto items = static_cast<std::uint64_t>(pr.bh() * ((pr.S + kv_args.plan.bc - 1) / kv_args.plan.bc));
    MLU_RETURN_IF_ERROR(launch(
        *h, "attention_backward_dkdv", [kv_args] { dkdv_kernel(kv_args); }, block_dim(*h, items), cnrtFuncTypeBlock));
    ++kernels;
  }
  const auto bytes = [](const TensorDesc* d) { return d ? static_cast<std::uint64_t>(d->numel()) * d->element_size() : 0; };
  const auto macs = static_cast<std::uint64_t>(pr.bh() * pr.L * pr.S * (pr.D + pr.Dv)) * 5 / 2;
  record(*h, kOp, macs,
         bytes(&q) + bytes(&k) + bytes(&v) + bytes(mask) + bytes(&o) + bytes(&d_o) + bytes(&lse) + bytes(&dq) +
             bytes(&dk) + bytes(&dv),
         kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
