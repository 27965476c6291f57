// What the attention kernels share: the problem as the kernels address it (4-d views, the mask
// broadcast to [B, H, L, S]), the argument checks of forward and backward, the tile planner, and
// the kernel-side pieces (tile copies, the matmul engine choice, the mask and causal bias tiles).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "common/int_math.h"
#include "mlusim/mlu/attention.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::attn {

using sim::Addr;
using sim::DType;

// A 4-d tensor [b, h, row, col] as a kernel addresses it: element strides, 0 = broadcast.
struct View4 {
  std::uint64_t base = 0;
  DType dtype = DType::kFloat32;
  std::array<std::int64_t, 4> strides{};
  std::size_t es() const { return sim::dtype_size(dtype); }
  View4 transposed() const {  // rows and columns swapped (the backward's mask^T)
    View4 t = *this;
    std::swap(t.strides[2], t.strides[3]);
    return t;
  }
};

// How the bias reaches a score tile.
enum class MaskKind : std::uint8_t {
  kNone,
  kFull,           // a tile per block, DMA'd into the score buffer
  kRowBroadcast,   // the same row for every query (stride 0 along L, e.g. a [B, 1, 1, S] padding mask)
};

struct Problem {
  std::int64_t batch = 0, heads = 0, L = 0, S = 0, D = 0, Dv = 0;
  DType in = DType::kFloat32;  // q, k, v, o (and do, dq, dk, dv)
  float scale = 1.0f;
  // Where the scale multiplies. Q once per block (in the input dtype) when that is exact: fp32
  // inputs or a power-of-two scale. Otherwise (fp16/bf16, e.g. 1/sqrt(128)) each fp32 score tile,
  // after the product, as CUDA's flash kernels do: Q x scale rounded to fp16 shifts a score s by
  // up to |s| 2^-11 (0.1 at s = 200, a 10% error in exp), where the fp32 multiply is exact to 2^-24.
  // A float mask is divided by the scale before the product accumulates onto it (bool and causal
  // biases, 0 / -inf, need nothing). Negative scales keep the Q multiply (the causal -inf would
  // change sign).
  bool scale_scores = false;
  bool causal = false;
  MaskKind mask_kind = MaskKind::kNone;
  View4 q, k, v, o, mask;
  View4 lse;  // fp32 [B, H, 1(row = l via strides[2]), -]: strides {b, h, l, 0}
  bool has_lse = false;
  // Backward only.
  View4 d_o, dq, dk, dv;
  std::uint64_t row_terms = 0;  // workspace: fp32 D per (b, h, l), contiguous
  std::int64_t bh() const { return batch * heads; }
};

// The tiling of one kernel: Br query rows and Bc keys per block; on_tfu: the TFU has the input
// dtype (otherwise products run as vec_matmul with every operand in NRAM).
struct Plan {
  std::int64_t br = 0, bc = 0;
  bool on_tfu = true;
};

enum class KernelKind : std::uint8_t { kForward, kBackwardDq, kBackwardDkDv };

// Checks the arguments shared by forward and backward and fills the problem (views, mask kind).
// `op` names the op in messages; check_pointers = false validates descriptors only.
Status make_problem(Handle* h, const char* op, const AttentionParams& p, const TensorDesc& q, const void* q_ptr,
                    const TensorDesc& k, const void* k_ptr, const TensorDesc& v, const void* v_ptr,
                    const TensorDesc* mask, const void* mask_ptr, const TensorDesc& o, const void* o_ptr,
                    Problem* out, bool check_pointers = true);
// The view of a 4-d descriptor at ptr.
View4 view_of(const TensorDesc& d, const void* ptr);

// Picks Br and Bc for `kind` from the engines' cost formulas (the TFU formula for the two products,
// the VFU's per-pass cost, the tasks' load balance) among the tilings whose buffers fit the
// core's NRAM and WRAM. kNotSupported naming the config key when not even the smallest fits.
Status plan_attention(const Handle& h, const char* op, const Problem& pr, KernelKind kind, Plan* plan);

// Buffer bytes of one kernel for a plan (each buffer rounded to 128 bytes): {NRAM, WRAM}.
std::pair<std::size_t, std::size_t> footprint(const Problem& pr, KernelKind kind, std::int64_t br, std::int64_t bc,
                                              bool on_tfu);

// ---- kernel side ----

// An on-chip buffer in `space`, 128-byte aligned.
inline Addr alloc(sim::Space space, std::size_t bytes) { return dev::alloc(space, up128(bytes)); }
inline Addr nram(std::size_t bytes) { return alloc(sim::Space::kNram, bytes); }
inline Addr at(Addr base, std::size_t bytes) { return base.offset(static_cast<std::int64_t>(bytes)); }

// Async copy of tile [r0, r0 + rows) x [c0, c0 + cols) of (b, h) of `v` to or from a dense
// row-major [rows, cols] array at `local` (NRAM or WRAM), as strided DMAs: whole rows as segments
// when the columns are contiguous (one segment when the rows are too), single elements otherwise.
void load_tile_async(const View4& v, std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows,
                     std::int64_t c0, std::int64_t cols, Addr local);
void store_tile_async(const View4& v, std::int64_t b, std::int64_t h, std::int64_t r0, std::int64_t rows,
                      std::int64_t c0, std::int64_t cols, Addr local);

// C[m, n] (+)= A[m, k] x B on the TFU (B in WRAM) or as vec_matmul (B in NRAM).
void product(const Plan& plan, DType in, Addr c, Addr a, Addr b, std::size_t m, std::size_t k, std::size_t n,
             bool b_transposed, bool accumulate);

// The sliding vector of the causal tiles: 2T fp32 values, [0, T) = zero_first ? 0 : -inf and
// [T, 2T) the other, T = causal_half(plan).
std::size_t causal_half(const Plan& plan);
void fill_causal_source(Addr src, std::size_t half, bool zero_first);

// What every attention kernel allocates first in NRAM: `ones` (fp32 1.0 over the widest tile
// dimension, for row broadcasts), the causal tiles' sliding source when pr.causal (filled as
// fill_causal_source(..., zero_first)) and, for a row-broadcast mask, two row buffers of bc fp32
// (double-buffered like the streamed blocks).
struct KernelBuffers {
  Addr ones{}, causal_src{};
  Addr rows[2]{};
  std::size_t half = 0;  // causal_half(plan)
};
KernelBuffers kernel_buffers(const Problem& pr, const Plan& plan, bool zero_first);
// Issues the Move-DMA that writes a [rows, cols] tile whose row r is src[base - r, base - r + cols).
void causal_tile_async(Addr dst, Addr src, std::int64_t base, std::size_t rows, std::size_t cols);

// The mask block of a score tile of queries [q0, q0 + nq) and keys [k0, k0 + nk): `tile` is the
// fp32 score buffer, [nq, nk] (or [nk, nq] when `transposed`, the backward's S^T tiles); a
// narrower mask lands in its upper part. `row` (nk fp32) takes a row-broadcast mask's keys.
// mask_load issues the DMA; mask_apply, once it landed, leaves the fp32 bias in `tile`
// (bool -> log(mask): 0 / -inf; a row-broadcast mask spread over the tile by one VFU pass).
void mask_load(const Problem& pr, std::int64_t b, std::int64_t h, std::int64_t q0, std::int64_t nq, std::int64_t k0,
               std::int64_t nk, bool transposed, Addr tile, Addr row);
void mask_apply(const Problem& pr, Addr tile, Addr row, Addr ones, std::size_t nq, std::size_t nk, bool transposed);

}  // namespace mlusim::mlu::attn
