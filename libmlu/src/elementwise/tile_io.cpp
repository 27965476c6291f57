#include "elementwise/tile_io.h"

#include <algorithm>

namespace mlusim::mlu::tile {

using dev::CopyShape;
using dev::Dir;

void copy_box(Addr dst, Addr src, Dir dir, std::size_t elem_bytes, std::vector<CopyDim> dims, bool async) {
  const auto es = static_cast<std::int64_t>(elem_bytes);
  // Inner-first list of the dims that matter, merged where both sides are contiguous.
  std::vector<CopyDim> m;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (it->extent == 0) return;
    if (it->extent == 1) continue;
    if (!m.empty() && it->dst_stride == m.back().dst_stride * m.back().extent &&
        it->src_stride == m.back().src_stride * m.back().extent) {
      m.back().extent *= it->extent;
    } else {
      m.push_back(*it);
    }
  }
  std::int64_t seg = es;
  std::size_t next = 0;
  if (!m.empty() && m[0].dst_stride == es && m[0].src_stride == es) {
    seg = m[0].extent * es;
    next = 1;
  }
  CopyShape shape;
  shape.seg_bytes = static_cast<std::size_t>(seg);
  if (next < m.size()) {
    shape.n1 = static_cast<std::size_t>(m[next].extent);
    shape.dst_stride1 = m[next].dst_stride;
    shape.src_stride1 = m[next].src_stride;
    ++next;
  }
  if (next < m.size()) {
    shape.n2 = static_cast<std::size_t>(m[next].extent);
    shape.dst_stride2 = m[next].dst_stride;
    shape.src_stride2 = m[next].src_stride;
    ++next;
  }
  // Remaining (outer) dims: an odometer in kernel code, one DMA per position.
  const std::vector<CopyDim> loops(m.begin() + static_cast<std::ptrdiff_t>(next), m.end());
  std::vector<std::int64_t> idx(loops.size(), 0);
  std::int64_t dst_off = 0, src_off = 0;
  while (true) {
    if (async)
      dev::memcpy_strided_async(dst.offset(dst_off), src.offset(src_off), shape, dir);
    else
      dev::memcpy_strided(dst.offset(dst_off), src.offset(src_off), shape, dir);
    std::size_t k = 0;
    for (; k < loops.size(); ++k) {
      dst_off += loops[k].dst_stride;
      src_off += loops[k].src_stride;
      if (++idx[k] < loops[k].extent) break;
      dst_off -= loops[k].dst_stride * loops[k].extent;
      src_off -= loops[k].src_stride * loops[k].extent;
      idx[k] = 0;
    }
    if (k == loops.size()) return;
  }
}

BoxView box_view(const ew::IterSpace& space, const ew::Operand& op, const ew::Tile& t) {
  BoxView v;
  v.dtype = op.dtype;
  v.gdram = op.base + static_cast<std::uint64_t>(ew::tile_offset(space, op, t)) * sim::dtype_size(op.dtype);
  v.ext = t.ext;
  v.stride = ew::box_strides(space, op);
  return v;
}

std::int64_t element_offset(const BoxView& v, std::int64_t j) {
  const std::int64_t i0 = j % v.ext[0], rest = j / v.ext[0];
  return i0 * v.stride[0] + rest % v.ext[1] * v.stride[1] + rest / v.ext[1] * v.stride[2];
}

bool may_need_staging(const std::array<std::int64_t, ew::kBoxDims>& s) {
  const bool has_unit = std::find(s.begin(), s.end(), 1) != s.end();
  return has_unit && s[0] != 1;
}

namespace {

// How one operand's tile is loaded (a pure function of the view, so issue and finish agree).
struct LoadPlan {
  std::array<std::int64_t, ew::kBoxDims> reduced{};  // extents read from GDRAM (1 on broadcast dims)
  std::array<std::int64_t, ew::kBoxDims> target{};   // element strides of the compact tile
  bool staged = false;
  std::vector<int> gdram_order;  // dims with reduced extent > 1, largest GDRAM stride first
};

LoadPlan plan_load(const BoxView& v, bool staging_available) {
  LoadPlan p;
  p.target = {1, v.ext[0], v.ext[0] * v.ext[1]};
  std::vector<int> active;
  for (int k = ew::kBoxDims - 1; k >= 0; --k) {
    p.reduced[k] = v.stride[k] == 0 ? 1 : v.ext[k];
    if (p.reduced[k] > 1) active.push_back(k);
  }
  if (active.empty()) return p;
  // Innermost dim in the tile (smallest target stride) and in GDRAM (smallest stride).
  const int tile_inner = active.back();
  int gdram_inner = active.back();
  for (int k : active)
    if (v.stride[k] < v.stride[gdram_inner]) gdram_inner = k;
  const bool direct_runs = gdram_inner == tile_inner && v.stride[gdram_inner] == 1 && p.target[tile_inner] == 1;
  p.staged = !direct_runs && v.stride[gdram_inner] == 1 && staging_available;
  p.gdram_order = active;
  std::stable_sort(p.gdram_order.begin(), p.gdram_order.end(),
                   [&](int a, int b) { return v.stride[a] > v.stride[b]; });
  return p;
}

bool has_staging(Addr staging) { return staging.value != kNoBuffer.value; }

}  // namespace

void issue_load(const BoxView& v, Addr tile, Addr staging) {
  const auto es = static_cast<std::int64_t>(sim::dtype_size(v.dtype));
  const LoadPlan p = plan_load(v, has_staging(staging));
  const Addr src{sim::Space::kGdram, v.gdram};
  std::vector<CopyDim> dims;
  if (p.staged) {
    // Compact in GDRAM order: contiguous runs of the unit-stride dim.
    std::int64_t compact = 1;
    for (auto it = p.gdram_order.rbegin(); it != p.gdram_order.rend(); ++it) {
      dims.insert(dims.begin(), CopyDim{p.reduced[*it], compact * es, v.stride[*it] * es});
      compact *= p.reduced[*it];
    }
    copy_box(staging, src, Dir::kGdram2Nram, static_cast<std::size_t>(es), dims, true);
    return;
  }
  for (int k = ew::kBoxDims - 1; k >= 0; --k)
    dims.push_back(CopyDim{p.reduced[k], p.target[k] * es, v.stride[k] * es});
  copy_box(tile, src, Dir::kGdram2Nram, static_cast<std::size_t>(es), dims, true);
}

void finish_load(const BoxView& v, Addr tile, Addr staging) {
  const auto es = static_cast<std::int64_t>(sim::dtype_size(v.dtype));
  const LoadPlan p = plan_load(v, has_staging(staging));
  if (p.staged) {
    std::vector<CopyDim> dims;
    std::int64_t compact = 1;
    for (auto it = p.gdram_order.rbegin(); it != p.gdram_order.rend(); ++it) {
      dims.insert(dims.begin(), CopyDim{p.reduced[*it], p.target[*it] * es, compact * es});
      compact *= p.reduced[*it];
    }
    copy_box(tile, staging, Dir::kNram2Nram, static_cast<std::size_t>(es), dims, false);
  }
  // Broadcast dims, innermost first: when dim k expands, the dims inside it are complete and
  // the dims outside it hold their reduced positions only.
  for (int k = 0; k < ew::kBoxDims; ++k) {
    if (p.reduced[k] == v.ext[k]) continue;
    std::vector<CopyDim> outer;
    for (int j = ew::kBoxDims - 1; j > k; --j)
      outer.push_back(CopyDim{p.reduced[j], p.target[j] * es, p.target[j] * es});
    replicate(tile, p.target[k] * es, v.ext[k], outer);
  }
}

void store(const BoxView& v, Addr tile, bool async) {
  const auto es = static_cast<std::int64_t>(sim::dtype_size(v.dtype));
  const std::array<std::int64_t, ew::kBoxDims> target = {1, v.ext[0], v.ext[0] * v.ext[1]};
  std::vector<CopyDim> dims;
  for (int k = ew::kBoxDims - 1; k >= 0; --k) dims.push_back(CopyDim{v.ext[k], v.stride[k] * es, target[k] * es});
  copy_box(Addr{sim::Space::kGdram, v.gdram}, tile, Dir::kNram2Gdram, static_cast<std::size_t>(es), dims, async);
}

void replicate(Addr base, std::int64_t block_bytes, std::int64_t copies, const std::vector<CopyDim>& outer) {
  for (std::int64_t done = 1; done < copies;) {
    const std::int64_t n = std::min(done, copies - done);
    std::vector<CopyDim> dims = outer;
    dims.push_back(CopyDim{n * block_bytes, 1, 1});
    copy_box(base.offset(done * block_bytes), base, Dir::kNram2Nram, 1, dims, false);
    done += n;
  }
}

}  // namespace mlusim::mlu::tile
