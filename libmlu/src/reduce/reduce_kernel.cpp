#include "reduce/reduce_kernel.h"

#include <algorithm>
#include <limits>

#include "elementwise/tile_io.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::red {

using dev::Addr;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;

ew::Tile ReduceKernel::tile(std::int64_t block, std::int64_t step) const {
  ew::Tile t;
  t.ext = {1, 1, 1};
  const int nd = space.ndim;
  auto apply = [&](const std::vector<Coord>& coords, std::int64_t index) {
    for (auto it = coords.rbegin(); it != coords.rend(); ++it) {
      const std::int64_t i = index % it->count;
      index /= it->count;
      const int d = it->dim;
      if (d >= nd - ew::kBoxDims) {
        const int k = nd - 1 - d;
        t.origin[d] = i * box[k];
        t.ext[k] = std::min(box[k], space.dims[d] - t.origin[d]);
      } else {
        t.origin[d] = i;
      }
    }
  };
  apply(block_coords, block);
  apply(step_coords, step);
  return t;
}

void finish_plan(ReduceKernel* k) {
  k->block_coords.clear();
  k->step_coords.clear();
  k->blocks = k->steps = 1;
  const int nd = k->space.ndim;
  for (int d = 0; d < nd; ++d) {
    const std::int64_t size = k->space.dims[d];
    const std::int64_t count = d >= nd - ew::kBoxDims ? (size + k->box[nd - 1 - d] - 1) / k->box[nd - 1 - d] : size;
    (k->reduced[d] ? k->step_coords : k->block_coords).push_back({d, count});
    (k->reduced[d] ? k->steps : k->blocks) *= count;
  }
}

std::size_t ReduceKernel::bytes_per_element() const {
  const std::size_t xes = sim::dtype_size(space.operands[kX].dtype);
  const bool x_staging = tile::may_need_staging(ew::box_strides(space, space.operands[kX]));
  std::size_t b = xes * (x_staging ? 3 : 2) + 4;  // x tiles (+ staging), converted work tile
  if (has_mean) b += 4 * 3;
  if (index_from_input) b += 4 * 3;
  if (with_index) b += 4 + 4 + 4 + 4 + 4 + 4;  // cmp, masks (4 bools), itile, iota, big, mexp
  if (combine == Combine::kProd && !column) b += 4;  // transposed work tile
  // Per-output vectors (at most one per tile element): acc, partial, converted output. The
  // output buffer is sized for at least the 4-byte accumulation dtype: phase 1 of a split
  // reduction (run_reduce) reuses this plan but stores raw fp32/int32 partials.
  b += 4 + 4 + std::max<std::size_t>(sim::dtype_size(space.operands[kOut].dtype), 4);
  if (with_index) b += 4 + 4 + 8;
  return b;
}

namespace {

VecBinaryOp binary_of(Combine c) {
  switch (c) {
    case Combine::kSum: return VecBinaryOp::kAdd;
    case Combine::kProd: return VecBinaryOp::kMul;
    case Combine::kMax: return VecBinaryOp::kMax;
    case Combine::kMin: return VecBinaryOp::kMin;
  }
  return VecBinaryOp::kAdd;
}

// One task's walk: (block, part, step) of every tile it owns, in order.
struct Item {
  std::int64_t block, part, step;
  bool first, last;
};

std::vector<Item> task_items(const ReduceKernel& k) {
  std::vector<Item> items;
  const std::int64_t units = k.blocks * k.parts, tasks = dev::task_dim(), task = dev::task_id();
  for (std::int64_t u = units * task / tasks; u < units * (task + 1) / tasks; ++u) {
    const std::int64_t block = u / k.parts, part = u % k.parts;
    const std::int64_t s0 = k.steps * part / k.parts, s1 = k.steps * (part + 1) / k.parts;
    for (std::int64_t s = s0; s < s1; ++s) items.push_back({block, part, s, s == s0, s == s1 - 1});
  }
  return items;
}

class ReduceTask {
 public:
  explicit ReduceTask(const ReduceKernel& k) : k_(k) {
    const auto e = static_cast<std::size_t>(k.tile_elems());
    auto nram = [&](std::size_t bytes) { return dev::alloc(sim::Space::kNram, bytes); };
    auto load_buffers = [&](int slot, Addr* buf, Addr* stage) {
      const std::size_t es = sim::dtype_size(k.space.operands[slot].dtype);
      buf[0] = nram(e * es);
      buf[1] = nram(e * es);
      *stage = tile::may_need_staging(ew::box_strides(k.space, k.space.operands[slot])) ? nram(e * es) : tile::kNoBuffer;
    };
    load_buffers(kX, x_, &x_stage_);
    if (k.has_mean) load_buffers(kMean, mean_, &mean_stage_);
    if (k.index_from_input) load_buffers(kInIndex, in_idx_, &in_idx_stage_);
    work_ = nram(e * 4);
    if (k.combine == Combine::kProd && !k.column) transposed_ = nram(e * 4);
    acc_v_ = nram(e * 4);
    part_v_ = nram(e * 4);
    out_v_ = nram(e * sim::dtype_size(k.space.operands[kOut].dtype));
    if (k.with_index) {
      cmp_ = nram(e * 4);
      for (Addr& m : mask_) m = nram(e);
      itile_ = nram(e * 4);
      iota_ = nram(e * 4);
      big_ = nram(e * 4);
      mexp_ = nram(e * 4);
      acc_i_ = nram(e * 4);
      part_i_ = nram(e * 4);
      out_i_ = nram(e * 8);
      build_iota(e);
      dev::vec_fill(DType::kInt32, big_, std::numeric_limits<std::int32_t>::max(), e);
    }
  }

  void run() {
    const std::vector<Item> items = task_items(k_);
    if (!items.empty()) issue(items[0], 0);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const int set = static_cast<int>(i % 2);
      dev::sync_io();
      const ew::Tile t = k_.tile(items[i].block, items[i].step);
      finish(t, set);
      if (i + 1 < items.size()) issue(items[i + 1], 1 - set);
      process(t, set, items[i].first);
      if (items[i].last) finalize(t, items[i].part);
    }
    dev::sync_io();
  }

 private:
  tile::BoxView view(int slot, const ew::Tile& t) const { return tile::box_view(k_.space, k_.space.operands[slot], t); }

  void issue(const Item& it, int set) {
    const ew::Tile t = k_.tile(it.block, it.step);
    tile::issue_load(view(kX, t), x_[set], x_stage_);
    if (k_.has_mean) tile::issue_load(view(kMean, t), mean_[set], mean_stage_);
    if (k_.index_from_input) tile::issue_load(view(kInIndex, t), in_idx_[set], in_idx_stage_);
  }

  void finish(const ew::Tile& t, int set) {
    tile::finish_load(view(kX, t), x_[set], x_stage_);
    if (k_.has_mean) tile::finish_load(view(kMean, t), mean_[set], mean_stage_);
    if (k_.index_from_input) tile::finish_load(view(kInIndex, t), in_idx_[set], in_idx_stage_);
  }

  // iota_[i] = i for i < n: one scalar store, then doubling adds.
  void build_iota(std::size_t n) {
    const std::int32_t zero = 0;
    dev::store_bytes(iota_, &zero, 4);
    for (std::size_t done = 1; done < n; done *= 2)
      dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, iota_.offset(static_cast<std::int64_t>(done * 4)), iota_,
                             static_cast<double>(done), std::min(done, n - done));
  }

  bool reduced_box_dim(int k) const { return k_.reduced[static_cast<std::size_t>(k_.space.ndim - 1 - k)]; }

  // Origin of the tile along the (single) reduced dim, for index reductions.
  std::int64_t reduced_origin(const ew::Tile& t) const {
    for (int d = 0; d < k_.space.ndim; ++d)
      if (k_.reduced[static_cast<std::size_t>(d)]) return t.origin[d];
    return 0;
  }

  Addr at(Addr base, std::int64_t elems) const { return base.offset(elems * 4); }

  void process(const ew::Tile& t, int set, bool first) {
    const auto total = static_cast<std::size_t>(t.elems());
    const DType xt = k_.space.operands[kX].dtype;
    Addr w = x_[set];
    if (xt != k_.acc) {
      dev::vec_cast(k_.acc, work_, xt, x_[set], total);
      w = work_;
    }
    apply_pre_op(w, set, total);
    if (k_.column) {
      const std::int64_t kc = t.ext[0];
      column_tile(w, t, set, t.elems() / kc, kc, first);
    } else {
      std::int64_t n = 1;
      for (int k = 0; k < ew::kBoxDims; ++k)
        if (reduced_box_dim(k)) n *= t.ext[k];
      row_tile(w, t, set, t.elems() / n, n, first);
    }
  }

  void apply_pre_op(Addr w, int set, std::size_t n) {
    switch (k_.pre) {
      case PreOp::kNone: break;
      case PreOp::kAbs: dev::vec_unary(VecUnaryOp::kAbs, k_.acc, w, w, n); break;
      case PreOp::kSquare:
        if (k_.column || k_.combine != Combine::kSum) dev::vec_unary(VecUnaryOp::kSquare, k_.acc, w, w, n);
        break;
      case PreOp::kAbsPow:
        dev::vec_unary(VecUnaryOp::kAbs, k_.acc, w, w, n);
        dev::vec_binary_scalar(VecBinaryOp::kPow, k_.acc, w, w, k_.pre_scalar, n);
        break;
      case PreOp::kNonZero: dev::vec_binary_scalar(VecBinaryOp::kNe, k_.acc, w, w, 0.0, n); break;
      case PreOp::kSubMeanSquare:
        dev::vec_binary(VecBinaryOp::kSub, k_.acc, w, w, mean_[set], n);
        if (k_.column) dev::vec_unary(VecUnaryOp::kSquare, k_.acc, w, w, n);
        break;
    }
  }

  bool squares_fused() const {
    return !k_.column && k_.combine == Combine::kSum && (k_.pre == PreOp::kSquare || k_.pre == PreOp::kSubMeanSquare);
  }

  // [rows, n] tile, one output per row.
  void row_tile(Addr w, const ew::Tile& t, int set, std::int64_t rows, std::int64_t n, bool first) {
    const auto r = static_cast<std::size_t>(rows), nn = static_cast<std::size_t>(n);
    if (k_.combine == Combine::kProd) {
      // No product reduction on the VFU: transpose to [n, rows] and fold columns.
      tile::copy_box(transposed_, w, dev::Dir::kNram2Nram, 4, {{rows, 4, n * 4}, {n, rows * 4, 4}}, false);
      column_fold(transposed_, n, rows, first);
      return;
    }
    if (k_.with_index) {
      row_index_tile(w, t, set, rows, n, first);
      return;
    }
    VecReduceOp op = VecReduceOp::kSum;
    if (k_.combine == Combine::kMax) op = VecReduceOp::kMax;
    if (k_.combine == Combine::kMin) op = VecReduceOp::kMin;
    if (squares_fused()) op = VecReduceOp::kSumSquares;
    dev::vec_reduce(op, k_.acc, first ? acc_v_ : part_v_, w, r, nn);
    if (!first) dev::vec_binary(binary_of(k_.combine), k_.acc, acc_v_, acc_v_, part_v_, r);
  }

  void row_index_tile(Addr w, const ew::Tile& t, int set, std::int64_t rows, std::int64_t n, bool first) {
    const auto r = static_cast<std::size_t>(rows), total = static_cast<std::size_t>(rows * n);
    const VecReduceOp op = k_.combine == Combine::kMax ? VecReduceOp::kMax : VecReduceOp::kMin;
    const Addr m = first ? acc_v_ : part_v_, idx = first ? acc_i_ : part_i_;
    dev::vec_reduce(op, k_.acc, m, w, r, static_cast<std::size_t>(n));
    // Each row's extreme broadcast along the row, then the first position equal to it (or NaN).
    tile::copy_box(mexp_, m, dev::Dir::kNram2Nram, 4, {{rows, n * 4, 4}}, false);
    tile::replicate(mexp_, 4, n, {{rows, n * 4, n * 4}});
    dev::vec_binary(VecBinaryOp::kEq, k_.acc, cmp_, w, mexp_, total);
    dev::vec_cast(DType::kBool, mask_[0], k_.acc, cmp_, total);
    if (sim::dtype_is_float(k_.acc)) {
      dev::vec_binary(VecBinaryOp::kNe, k_.acc, cmp_, w, w, total);
      dev::vec_cast(DType::kBool, mask_[1], k_.acc, cmp_, total);
      dev::vec_binary(VecBinaryOp::kOr, DType::kBool, mask_[0], mask_[0], mask_[1], total);
    }
    Addr candidates = in_idx_[set];
    if (!k_.index_from_input) {
      tile::copy_box(itile_, iota_, dev::Dir::kNram2Nram, 4, {{rows, n * 4, 0}, {n, 4, 4}}, false);
      candidates = itile_;
    }
    dev::vec_select(DType::kInt32, itile_, mask_[0], candidates, big_, total);
    dev::vec_reduce(VecReduceOp::kMin, DType::kInt32, idx, itile_, r, static_cast<std::size_t>(n));
    if (!k_.index_from_input)
      dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, idx, idx, static_cast<double>(reduced_origin(t)), r);
    if (!first) merge_indexed(acc_v_, acc_i_, part_v_, part_i_, r);
  }

  // [R, kc] tile with the reduced dims outer: fold rows pairwise, then accumulate.
  void column_tile(Addr w, const ew::Tile& t, int set, std::int64_t rows, std::int64_t kc, bool first) {
    if (!k_.with_index) {
      column_fold(w, rows, kc, first);
      return;
    }
    Addr idx = in_idx_[set];
    if (!k_.index_from_input) {
      // itile[i][j] = origin + i: scatter 0..R-1 to the row starts, replicate along rows.
      tile::copy_box(itile_, iota_, dev::Dir::kNram2Nram, 4, {{rows, kc * 4, 4}}, false);
      tile::replicate(itile_, 4, kc, {{rows, kc * 4, kc * 4}});
      dev::vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt32, itile_, itile_, static_cast<double>(reduced_origin(t)),
                             static_cast<std::size_t>(rows * kc));
      idx = itile_;
    }
    for (std::int64_t r = rows; r > 1;) {
      const std::int64_t half = r / 2;
      merge_indexed(w, idx, at(w, (r - half) * kc), at(idx, (r - half) * kc), static_cast<std::size_t>(half * kc));
      r -= half;
    }
    const auto n = static_cast<std::size_t>(kc);
    if (first) {
      dev::vec_unary(VecUnaryOp::kCopy, k_.acc, acc_v_, w, n);
      dev::vec_unary(VecUnaryOp::kCopy, DType::kInt32, acc_i_, idx, n);
    } else {
      merge_indexed(acc_v_, acc_i_, w, idx, n);
    }
  }

  void column_fold(Addr w, std::int64_t rows, std::int64_t kc, bool first) {
    const VecBinaryOp op = binary_of(k_.combine);
    for (std::int64_t r = rows; r > 1;) {
      const std::int64_t half = r / 2;
      dev::vec_binary(op, k_.acc, w, w, at(w, (r - half) * kc), static_cast<std::size_t>(half * kc));
      r -= half;
    }
    const auto n = static_cast<std::size_t>(kc);
    if (first)
      dev::vec_unary(VecUnaryOp::kCopy, k_.acc, acc_v_, w, n);
    else
      dev::vec_binary(op, k_.acc, acc_v_, acc_v_, w, n);
  }

  // (av, ai) := the better of (av, ai) and (bv, bi), elementwise: the more extreme value; on equal
  // values or two NaNs the smaller index; a NaN beats a number.
  void merge_indexed(Addr av, Addr ai, Addr bv, Addr bi, std::size_t n) {
    const VecBinaryOp better = k_.combine == Combine::kMax ? VecBinaryOp::kGt : VecBinaryOp::kLt;
    const DType t = k_.acc;
    auto mask_of = [&](VecBinaryOp op, DType dt, Addr a, Addr b, Addr mask) {
      dev::vec_binary(op, dt, cmp_, a, b, n);
      dev::vec_cast(DType::kBool, mask, dt, cmp_, n);
    };
    Addr pick = mask_[0], tmp = mask_[1], earlier = mask_[2], tmp2 = mask_[3];
    mask_of(better, t, bv, av, pick);
    mask_of(VecBinaryOp::kEq, t, bv, av, tmp);
    mask_of(VecBinaryOp::kLt, DType::kInt32, bi, ai, earlier);
    dev::vec_binary(VecBinaryOp::kAnd, DType::kBool, tmp, tmp, earlier, n);
    dev::vec_binary(VecBinaryOp::kOr, DType::kBool, pick, pick, tmp, n);
    if (sim::dtype_is_float(t)) {
      mask_of(VecBinaryOp::kNe, t, bv, bv, tmp);     // b is NaN
      mask_of(VecBinaryOp::kEq, t, av, av, tmp2);    // a is not NaN
      dev::vec_binary(VecBinaryOp::kOr, DType::kBool, tmp2, tmp2, earlier, n);
      dev::vec_binary(VecBinaryOp::kAnd, DType::kBool, tmp, tmp, tmp2, n);
      dev::vec_binary(VecBinaryOp::kOr, DType::kBool, pick, pick, tmp, n);
    }
    dev::vec_select(t, av, pick, bv, av, n);
    dev::vec_select(DType::kInt32, ai, pick, bi, ai, n);
  }

  void finalize(const ew::Tile& t, std::int64_t part) {
    tile::BoxView out = view(kOut, t), out_idx = view(kOutIndex, t);
    for (int k = 0; k < ew::kBoxDims; ++k) {
      if (!reduced_box_dim(k)) continue;
      out.ext[k] = 1;
      out_idx.ext[k] = 1;
    }
    const auto n = static_cast<std::size_t>(out.ext[0] * out.ext[1] * out.ext[2]);
    const bool values = k_.space.operands[kOut].base != 0, indices = k_.with_index && k_.space.operands[kOutIndex].base != 0;
    if (k_.parts > 1) {
      // Raw partials (accumulation dtype) into the workspace, part p after the others.
      out.gdram += static_cast<std::uint64_t>(part * k_.part_elems) * 4;
      out_idx.gdram += static_cast<std::uint64_t>(part * k_.part_elems) * 4;
      tile::store(out, acc_v_, true);
      if (k_.with_index) tile::store(out_idx, acc_i_, true);
      return;
    }
    if (values) {
      switch (k_.post) {
        case PostOp::kNone: break;
        case PostOp::kDivide:
        case PostOp::kDivideSqrt:
          dev::vec_binary_scalar(VecBinaryOp::kDiv, k_.acc, acc_v_, acc_v_, k_.post_scalar, n);
          if (k_.post == PostOp::kDivideSqrt) dev::vec_unary(VecUnaryOp::kSqrt, k_.acc, acc_v_, acc_v_, n);
          break;
        case PostOp::kSqrt: dev::vec_unary(VecUnaryOp::kSqrt, k_.acc, acc_v_, acc_v_, n); break;
        case PostOp::kPow: dev::vec_binary_scalar(VecBinaryOp::kPow, k_.acc, acc_v_, acc_v_, k_.post_scalar, n); break;
      }
      Addr src = acc_v_;
      if (out.dtype != k_.acc) {
        dev::vec_cast(out.dtype, out_v_, k_.acc, acc_v_, n);
        src = out_v_;
      }
      tile::store(out, src, true);
    }
    if (indices) {
      Addr src = acc_i_;
      if (out_idx.dtype != DType::kInt32) {
        dev::vec_cast(out_idx.dtype, out_i_, DType::kInt32, acc_i_, n);
        src = out_i_;
      }
      tile::store(out_idx, src, true);
    }
  }

  const ReduceKernel& k_;
  Addr x_[2], x_stage_, mean_[2], mean_stage_, in_idx_[2], in_idx_stage_;
  Addr work_, transposed_, acc_v_, part_v_, out_v_;
  Addr cmp_, mask_[4], itile_, iota_, big_, mexp_, acc_i_, part_i_, out_i_;
};

}  // namespace

void reduce_body(const ReduceKernel& k) { ReduceTask(k).run(); }

}  // namespace mlusim::mlu::red
