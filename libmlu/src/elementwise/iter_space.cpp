#include "elementwise/iter_space.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/error.h"

namespace mlusim::mlu::ew {

std::int64_t IterSpace::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= dims[d];
  return n;
}

Status broadcast_shape(const char* op, const std::vector<NamedDesc>& descs, std::vector<std::int64_t>* shape) {
  int ndim = 0;
  for (const NamedDesc& d : descs) ndim = std::max(ndim, d.desc->ndim());
  shape->assign(static_cast<std::size_t>(ndim), 1);
  std::vector<const char*> owner(static_cast<std::size_t>(ndim), nullptr);
  for (const NamedDesc& d : descs) {
    const int offset = ndim - d.desc->ndim();
    for (int i = 0; i < d.desc->ndim(); ++i) {
      const std::int64_t size = d.desc->dim(i);
      std::int64_t& out = (*shape)[static_cast<std::size_t>(offset + i)];
      if (size == out || size == 1) continue;
      MLU_CHECK(out == 1, Status::kBadParam,
                std::string(op) + ": " + owner[static_cast<std::size_t>(offset + i)] + " and " + d.name + " " +
                    d.desc->str() + " do not broadcast (dim " + std::to_string(i) + ": " + std::to_string(out) +
                    " vs " + std::to_string(size) + ")");
      out = size;
      owner[static_cast<std::size_t>(offset + i)] = d.name;
    }
    for (int i = 0; i < d.desc->ndim(); ++i)
      if (owner[static_cast<std::size_t>(offset + i)] == nullptr) owner[static_cast<std::size_t>(offset + i)] = d.name;
  }
  return Status::kSuccess;
}

IterSpace make_iter_space(const std::vector<std::int64_t>& shape, const std::vector<const TensorDesc*>& descs,
                          const std::vector<const void*>& ptrs) {
  IterSpace s;
  s.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < s.ndim; ++d) s.dims[d] = shape[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < descs.size(); ++i) {
    const TensorDesc& t = *descs[i];
    Operand op;
    op.base = reinterpret_cast<std::uintptr_t>(ptrs[i]);
    op.dtype = t.dtype();
    const int offset = s.ndim - t.ndim();
    for (int d = 0; d < t.ndim(); ++d) op.strides[offset + d] = t.dim(d) == 1 ? 0 : t.stride(d);
    s.operands.push_back(op);
  }
  normalize(&s, /*sort=*/true);
  return s;
}

namespace {

void permute_dims(IterSpace* s, const std::vector<int>& order) {
  IterSpace out = *s;
  for (int i = 0; i < s->ndim; ++i) {
    out.dims[i] = s->dims[order[static_cast<std::size_t>(i)]];
    for (std::size_t k = 0; k < s->operands.size(); ++k)
      out.operands[k].strides[i] = s->operands[k].strides[order[static_cast<std::size_t>(i)]];
  }
  *s = out;
}

// A strided input whose innermost stride is neither 0 nor 1 (a transposed view) loads fastest
// when one of its unit-stride dims is inside the box: move the first such dim next to the
// innermost one, so the tile loader can read contiguous runs and transpose on chip.
void bring_unit_stride_into_box(IterSpace* s) {
  if (s->ndim < 3) return;
  const int inner = s->ndim - 1;
  for (std::size_t k = 1; k < s->operands.size(); ++k) {
    const auto& st = s->operands[k].strides;
    if (st[inner] == 0 || st[inner] == 1) continue;
    if (st[inner - 1] == 1) return;
    for (int j = inner - 2; j >= 0; --j) {
      if (st[j] != 1) continue;
      std::vector<int> order;
      for (int d = 0; d < s->ndim; ++d)
        if (d != j && d != inner) order.push_back(d);
      order.push_back(j);
      order.push_back(inner);
      permute_dims(s, order);
      return;
    }
    return;
  }
}

}  // namespace

void normalize(IterSpace* s, bool sort) {
  // Drop size-1 dims.
  int n = 0;
  for (int d = 0; d < s->ndim; ++d) {
    if (s->dims[d] == 1) continue;
    s->dims[n] = s->dims[d];
    for (Operand& op : s->operands) op.strides[n] = op.strides[d];
    ++n;
  }
  s->ndim = n;
  // Order by operand 0's strides, largest first (stable: ties keep the logical order).
  if (sort && !s->operands.empty() && n > 1) {
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto& st = s->operands[0].strides;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return st[a] > st[b]; });
    permute_dims(s, order);
  }
  // Merge dim d into d+1 when every operand steps across the pair like one dim.
  int out = 0;
  for (int d = 1; d < n; ++d) {
    bool mergeable = true;
    for (const Operand& op : s->operands)
      mergeable = mergeable && op.strides[out] == op.strides[d] * s->dims[d];
    if (mergeable) {
      s->dims[out] *= s->dims[d];
      for (Operand& op : s->operands) op.strides[out] = op.strides[d];
    } else {
      ++out;
      s->dims[out] = s->dims[d];
      for (Operand& op : s->operands) op.strides[out] = op.strides[d];
    }
  }
  s->ndim = n == 0 ? 0 : out + 1;
  if (sort) bring_unit_stride_into_box(s);
  // Pad with leading size-1 dims to kBoxDims.
  if (s->ndim < kBoxDims) {
    const int pad = kBoxDims - s->ndim;
    for (int d = s->ndim - 1; d >= 0; --d) {
      s->dims[d + pad] = s->dims[d];
      for (Operand& op : s->operands) op.strides[d + pad] = op.strides[d];
    }
    for (int d = 0; d < pad; ++d) {
      s->dims[d] = 1;
      for (Operand& op : s->operands) op.strides[d] = 0;
    }
    s->ndim = kBoxDims;
  }
}

TilePlan plan_tiles(const IterSpace& s, std::int64_t max_tile_elems) {
  TilePlan p;
  std::int64_t budget = std::max<std::int64_t>(1, max_tile_elems);
  p.tiles = 1;
  for (int k = 0; k < kBoxDims; ++k) {
    const std::int64_t dim = s.dims[s.ndim - 1 - k];
    p.box[k] = std::max<std::int64_t>(1, std::min(dim, budget));
    budget = std::max<std::int64_t>(1, budget / p.box[k]);
    p.chunks[k] = (dim + p.box[k] - 1) / p.box[k];
    p.tiles *= p.chunks[k];
  }
  for (int d = 0; d < s.ndim - kBoxDims; ++d) p.tiles *= s.dims[d];
  if (s.numel() == 0) p.tiles = 0;
  return p;
}

Tile tile_at(const IterSpace& s, const TilePlan& p, std::int64_t index) {
  Tile t;
  for (int k = 0; k < kBoxDims; ++k) {
    const int d = s.ndim - 1 - k;
    const std::int64_t chunk = index % p.chunks[k];
    index /= p.chunks[k];
    t.origin[d] = chunk * p.box[k];
    t.ext[k] = std::min(p.box[k], s.dims[d] - t.origin[d]);
  }
  for (int d = s.ndim - kBoxDims - 1; d >= 0; --d) {
    t.origin[d] = index % s.dims[d];
    index /= s.dims[d];
  }
  return t;
}

std::int64_t tile_offset(const IterSpace& s, const Operand& op, const Tile& t) {
  std::int64_t off = 0;
  for (int d = 0; d < s.ndim; ++d) off += t.origin[d] * op.strides[d];
  return off;
}

std::array<std::int64_t, kBoxDims> box_strides(const IterSpace& s, const Operand& op) {
  return {op.strides[s.ndim - 1], op.strides[s.ndim - 2], op.strides[s.ndim - 3]};
}

}  // namespace mlusim::mlu::ew
