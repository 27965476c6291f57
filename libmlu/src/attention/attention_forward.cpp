// attention_forward: the flash-attention forward kernel (attention.h has the algorithm and its
// cost). One BLOCK task per core walks its share of the work items (a block of query rows of one
// batch and head) as a flat list of steps, one per visible key block, with the next step's copies
// (K and V blocks into WRAM, the mask or causal tile into the other score buffer, the next item's
// Q block) in flight while this step computes.
#include <cfloat>
#include <string>
#include <vector>

#include "attention/attention_common.h"
#include "common/error.h"
#include "common/launch.h"
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
constexpr const char* kOp = "attention_forward";

struct ForwardArgs {
  Problem pr;
  Plan plan;
};

// A query block and its place.
struct Item {
  std::int64_t b, h, r0, nr, last_block;
};

Item item_of(const Problem& pr, const Plan& plan, std::int64_t w) {
  const std::int64_t nqb = (pr.L + plan.br - 1) / plan.br, nkb = (pr.S + plan.bc - 1) / plan.bc;
  const std::int64_t bh = w / nqb, r0 = (w % nqb) * plan.br;
  const std::int64_t nr = std::min(plan.br, pr.L - r0);
  // Causal: key blocks starting past the block's last row are wholly masked.
  const std::int64_t last = pr.causal ? std::min(nkb - 1, (r0 + nr - 1) / plan.bc) : nkb - 1;
  return {bh / pr.heads, bh % pr.heads, r0, nr, last};
}

void forward_kernel(const ForwardArgs& a) {
  const Problem& pr = a.pr;
  const Plan& plan = a.plan;
  const std::int64_t nqb = (pr.L + plan.br - 1) / plan.br;
  const auto [w0, w1] = nn::task_range(static_cast<std::size_t>(pr.bh() * nqb));
  struct Step {
    std::int64_t item, block;
  };
  std::vector<Step> steps;
  for (std::size_t w = w0; w < w1; ++w) {
    const Item it = item_of(pr, plan, static_cast<std::int64_t>(w));
    for (std::int64_t j = 0; j <= it.last_block; ++j) steps.push_back({static_cast<std::int64_t>(w), j});
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
  const Addr oacc = nram(br * Dv * 4), scratch = nram(br * Dv * 4);
  const Addr ostage[2] = {nram(br * Dv * 4), nram(br * Dv * 4)};
  const Addr s[2] = {nram(br * bc * 4), nram(br * bc * 4)};
  Addr m = nram(br * 4), mx = nram(br * 4);
  const Addr l = nram(br * 4), alpha = nram(br * 4), negm = nram(br * 4);
  const Addr lse[2] = {nram(br * 4), nram(br * 4)};
  const Addr kb[2] = {alloc(kv_space, bc * D * es), alloc(kv_space, bc * D * es)};
  const Addr vb[2] = {alloc(kv_space, bc * Dv * es), alloc(kv_space, bc * Dv * es)};

  const auto straddles = [&](const Item& it, std::int64_t c0, std::int64_t nc) {
    return pr.causal && c0 + nc - 1 > it.r0;  // some key of the block lies past some row
  };
  const auto key_block = [&](std::int64_t j) {
    const std::int64_t c0 = j * plan.bc;
    return std::pair{c0, std::min(plan.bc, pr.S - c0)};
  };
  const auto prefetch = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(pr, plan, st.item);
    const int slot = static_cast<int>(i % 2), qslot = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    const auto [c0, nc] = key_block(st.block);
    if (st.block == 0) load_tile_async(pr.q, it.b, it.h, it.r0, it.nr, 0, pr.D, q[qslot]);
    load_tile_async(pr.k, it.b, it.h, c0, nc, 0, pr.D, kb[slot]);
    load_tile_async(pr.v, it.b, it.h, c0, nc, 0, pr.Dv, vb[slot]);
    if (pr.mask_kind != MaskKind::kNone)
      mask_load(pr, it.b, it.h, it.r0, it.nr, c0, nc, false, s[slot], rows[slot]);
    else if (straddles(it, c0, nc))
      causal_tile_async(s[slot], causal_src, static_cast<std::int64_t>(half) + c0 - it.r0 - 1,
                        static_cast<std::size_t>(it.nr), static_cast<std::size_t>(nc));
  };
  const auto compute = [&](std::size_t i) {
    const Step st = steps[i];
    const Item it = item_of(pr, plan, st.item);
    const int slot = static_cast<int>(i % 2), qslot = static_cast<int>((st.item - static_cast<std::int64_t>(w0)) % 2);
    const auto [c0, nc_] = key_block(st.block);
    const auto nr = static_cast<std::size_t>(it.nr), nc = static_cast<std::size_t>(nc_);
    const bool first = st.block == 0, last = st.block == it.last_block;
    const Addr S = s[slot];
    if (first) {
      if (!pr.scale_scores) dev::vec_binary_scalar(VecBinaryOp::kMul, pr.in, q[qslot], q[qslot], pr.scale, nr * D);
      dev::vec_fill(kF32, m, -FLT_MAX, nr);  // finite: exp(S - m) is never inf - inf
      dev::vec_fill(kF32, l, 0.0, nr);
    }
    const bool bias = pr.mask_kind != MaskKind::kNone || straddles(it, c0, nc_);
    if (pr.mask_kind != MaskKind::kNone) mask_apply(pr, S, rows[slot], ones, nr, nc, false);
    product(plan, pr.in, S, q[qslot], kb[slot], nr, D, nc, true, bias);  // S (+)= scale Q K^T
    if (pr.scale_scores) dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, S, S, pr.scale, nr * nc);
    dev::vec_reduce(VecReduceOp::kMax, kF32, mx, S, nr, nc);
    dev::vec_binary(VecBinaryOp::kMax, kF32, mx, mx, m, nr);  // m' = max(m, rowmax)
    dev::vec_binary(VecBinaryOp::kSub, kF32, alpha, m, mx, nr);
    dev::vec_unary(VecUnaryOp::kExp, kF32, alpha, alpha, nr);  // exp(m - m')
    std::swap(m, mx);
    dev::vec_unary(VecUnaryOp::kNeg, kF32, negm, m, nr);
    nn::tile::broadcast_rows(S, negm, ones, nr, nc, true);  // S - m'
    dev::vec_unary(VecUnaryOp::kExp, kF32, S, S, nr * nc);
    dev::vec_reduce(VecReduceOp::kSum, kF32, mx, S, nr, nc);
    dev::vec_binary(VecBinaryOp::kMul, kF32, l, l, alpha, nr);
    dev::vec_binary(VecBinaryOp::kAdd, kF32, l, l, mx, nr);
    if (!first) {
      nn::tile::broadcast_rows(scratch, alpha, ones, nr, Dv, false);
      dev::vec_binary(VecBinaryOp::kMul, kF32, oacc, oacc, scratch, nr * Dv);
    }
    if (pr.in != kF32) dev::vec_cast(pr.in, S, kF32, S, nr * nc);  // P in the TFU's dtype
    product(plan, pr.in, oacc, S, vb[slot], nr, nc, Dv, false, !first);  // O (+)= P V
    if (!last) return;
    const Addr out = ostage[qslot], lse_out = lse[qslot];
    dev::vec_binary_scalar(VecBinaryOp::kMax, kF32, l, l, FLT_MIN, nr);  // 0 (all masked) -> O = 0
    dev::vec_unary(VecUnaryOp::kLog, kF32, lse_out, l, nr);
    dev::vec_binary(VecBinaryOp::kAdd, kF32, lse_out, lse_out, m, nr);
    dev::vec_unary(VecUnaryOp::kRecip, kF32, l, l, nr);
    nn::tile::broadcast_rows(scratch, l, ones, nr, Dv, false);
    dev::vec_binary(VecBinaryOp::kMul, kF32, out, oacc, scratch, nr * Dv);
    if (pr.in != kF32) dev::vec_cast(pr.in, out, kF32, out, nr * Dv);
    store_tile_async(pr.o, it.b, it.h, it.r0, it.nr, 0, pr.Dv, out);
    if (pr.has_lse) store_tile_async(pr.lse, it.b, it.h, it.r0, it.nr, 0, 1, lse_out);
  };

  prefetch(0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    dev::sync_io();  // step i's blocks landed; stores two items back retired
    if (i + 1 < steps.size()) prefetch(i + 1);
    compute(i);
  }
  dev::sync_io();
}

}  // namespace

Status attention_forward(Handle* h, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                         const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                         const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, void* o_ptr,
                         const TensorDesc* lse, void* lse_ptr) {
  ForwardArgs args;
  Problem& pr = args.pr;
  MLU_RETURN_IF_ERROR(make_problem(h, kOp, p, q, q_ptr, k, k_ptr, v, v_ptr, mask, mask_ptr, o, o_ptr, &pr));
  if (lse != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(lse, kOp, "lse"));
    MLU_CHECK(lse->dtype() == DType::kFloat32 && lse->ndim() == 3 && lse->dim(0) == pr.batch &&
                  lse->dim(1) == pr.heads && lse->dim(2) == pr.L,
              Status::kBadParam,
              std::string(kOp) + ": lse " + lse->str() + " must be fp32 [B, H, L] = [" + std::to_string(pr.batch) +
                  ", " + std::to_string(pr.heads) + ", " + std::to_string(pr.L) + "]");
    MLU_CHECK(nn::writable(*lse), Status::kBadParam,
              std::string(kOp) + ": lse " + lse->str() + " has a broadcast (stride 0) dim");
    MLU_RETURN_IF_ERROR(check_ptr(lse_ptr, *lse, kOp, "lse"));
    pr.has_lse = true;
    pr.lse.base = reinterpret_cast<std::uintptr_t>(lse_ptr);
    pr.lse.strides = {lse->stride(0), lse->stride(1), lse->stride(2), 0};
  }
  const auto bytes = [](const TensorDesc* d) { return d ? static_cast<std::uint64_t>(d->numel()) * d->element_size() : 0; };
  if (q.numel() == 0 || o.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(plan_attention(*h, kOp, pr, KernelKind::kForward, &args.plan));
  const std::uint64_t items = static_cast<std::uint64_t>(pr.bh() * ((pr.L + args.plan.br - 1) / args.plan.br));
  MLU_RETURN_IF_ERROR(launch(
      *h, kOp, [args] { forward_kernel(args); }, block_dim(*h, items), cnrtFuncTypeBlock));
  const auto macs = static_cast<std::uint64_t>(pr.bh() * pr.L * pr.S * (pr.D + pr.Dv));
  record(*h, kOp, macs, bytes(&q) + bytes(&k) + bytes(&v) + bytes(mask) + bytes(&o) + bytes(lse), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
