#include "softmax/box_copy.h"

#include <algorithm>

namespace mlusim::mlu::nn {
namespace {

using dev::CopyShape;
using dev::Dir;
using sim::Addr;
using sim::DType;
using sim::Space;

// One level of a box copy: `n` repetitions with byte strides on the GDRAM and NRAM sides.
struct Level {
  std::int64_t n, gdram_stride, nram_stride;
};

// Levels of box b from the innermost dim outwards; unit dims vanish and dims that are contiguous
// on both sides merge, so a dense box of a dense tensor is a single level. Returns the level count
// (-1 for an empty box) and sets the GDRAM address of the box's first element.
// nram_strides: element strides of the NRAM array per dim, or null for dense row-major.
int box_levels(const TensorView& v, const Box& b, std::array<Level, kMaxViewDims>& lv, std::uint64_t& gdram,
               const NramStrides* nram_strides = nullptr) {
  const auto es = static_cast<std::int64_t>(v.elem_size());
  gdram = v.base;
  for (int i = 0; i < v.ndim; ++i) gdram += static_cast<std::uint64_t>(b.start[i] * v.strides[i] * es);
  int k = 0;
  std::int64_t dense = es;
  for (int i = v.ndim - 1; i >= 0; --i) {
    const std::int64_t e = b.extent[i];
    if (e == 0) return -1;
    const std::int64_t ns = nram_strides ? (*nram_strides)[i] * es : dense;
    dense *= e;
    if (e == 1) continue;
    const std::int64_t gs = v.strides[i] * es;
    if (k > 0 && lv[k - 1].gdram_stride * lv[k - 1].n == gs && lv[k - 1].nram_stride * lv[k - 1].n == ns)
      lv[k - 1].n *= e;
    else
      lv[k++] = Level{e, gs, ns};
  }
  return k;
}

// Calls issue(gdram_offset, nram_offset) once per position of levels [from, k) (an odometer).
template <class Issue>
void for_each_position(const std::array<Level, kMaxViewDims>& lv, int from, int k, Issue&& issue) {
  std::array<std::int64_t, kMaxViewDims> idx{};
  for (;;) {
    std::int64_t goff = 0, noff = 0;
    for (int l = from; l < k; ++l) goff += idx[l] * lv[l].gdram_stride, noff += idx[l] * lv[l].nram_stride;
    issue(goff, noff);
    int l = from;
    while (l < k && ++idx[l] == lv[l].n) idx[l++] = 0;
    if (l == k) break;
  }
}

void copy_box(const TensorView& v, const Box& b, Addr nram, bool load, const NramStrides* nram_strides = nullptr) {
  const auto es = static_cast<std::int64_t>(v.elem_size());
  std::array<Level, kMaxViewDims> lv{};
  std::uint64_t gdram = 0;
  const int k = box_levels(v, b, lv, gdram, nram_strides);
  if (k < 0) return;
  // The segment: the innermost level when it is contiguous on both sides, else single elements.
  std::int64_t seg = es;
  int first = 0;
  if (k > 0 && lv[0].gdram_stride == es && lv[0].nram_stride == es) seg = lv[0].n * es, first = 1;
  CopyShape shape;
  shape.seg_bytes = static_cast<std::size_t>(seg);
  int loop_from = first;
  if (loop_from < k) {
    shape.n1 = static_cast<std::size_t>(lv[loop_from].n);
    (load ? shape.src_stride1 : shape.dst_stride1) = lv[loop_from].gdram_stride;
    (load ? shape.dst_stride1 : shape.src_stride1) = lv[loop_from].nram_stride;
    ++loop_from;
  }
  if (loop_from < k) {
    shape.n2 = static_cast<std::size_t>(lv[loop_from].n);
    (load ? shape.src_stride2 : shape.dst_stride2) = lv[loop_from].gdram_stride;
    (load ? shape.dst_stride2 : shape.src_stride2) = lv[loop_from].nram_stride;
    ++loop_from;
  }
  // Remaining levels: an odometer in kernel code, one strided copy per position.
  for_each_position(lv, loop_from, k, [&](std::int64_t goff, std::int64_t noff) {
    const Addr g{Space::kGdram, gdram + static_cast<std::uint64_t>(goff)};
    const Addr n = nram.offset(noff);
    if (load)
      dev::memcpy_strided_async(n, g, shape, Dir::kGdram2Nram);
    else
      dev::memcpy_strided_async(g, n, shape, Dir::kNram2Gdram);
  });
}

// Where a tile's data of element size `es` lands: the upper part of the fp32 buffer.
Addr staging(Addr tile, std::size_t count, std::size_t es) {
  return tile.offset(static_cast<std::int64_t>(count * (4 - es)));
}

}  // namespace

void load_box_async(const TensorView& v, const Box& b, Addr nram) { copy_box(v, b, nram, true); }
void store_box_async(const TensorView& v, const Box& b, Addr nram) { copy_box(v, b, nram, false); }
void load_box_async(const TensorView& v, const Box& b, Addr nram, const NramStrides& nram_strides) {
  copy_box(v, b, nram, true, &nram_strides);
}
void store_box_async(const TensorView& v, const Box& b, Addr nram, const NramStrides& nram_strides) {
  copy_box(v, b, nram, false, &nram_strides);
}

void fill_box_async(const TensorView& v, const Box& b, Addr src, std::size_t src_bytes) {
  const auto es = static_cast<std::int64_t>(v.elem_size());
  std::array<Level, kMaxViewDims> lv{};
  std::uint64_t gdram = 0;
  const int k = box_levels(v, b, lv, gdram);
  if (k < 0) return;
  std::int64_t seg = es;
  int first = 0;
  if (k > 0 && lv[0].gdram_stride == es) seg = lv[0].n * es, first = 1;
  const std::int64_t piece_max = std::max<std::int64_t>(es, static_cast<std::int64_t>(src_bytes) / es * es);
  // Up to two outer levels per copy, both re-reading the source (stride 0).
  CopyShape shape;
  int loop_from = first;
  if (loop_from < k) {
    shape.n1 = static_cast<std::size_t>(lv[loop_from].n);
    shape.dst_stride1 = lv[loop_from++].gdram_stride;
  }
  if (loop_from < k) {
    shape.n2 = static_cast<std::size_t>(lv[loop_from].n);
    shape.dst_stride2 = lv[loop_from++].gdram_stride;
  }
  for_each_position(lv, loop_from, k, [&](std::int64_t goff, std::int64_t) {
    for (std::int64_t off = 0; off < seg; off += piece_max) {
      shape.seg_bytes = static_cast<std::size_t>(std::min(piece_max, seg - off));
      dev::memcpy_strided_async(Addr{Space::kGdram, gdram + static_cast<std::uint64_t>(goff + off)}, src, shape,
                                Dir::kNram2Gdram);
    }
  });
}

void load_f32_async(const TensorView& v, const Box& b, Addr tile, std::size_t count) {
  dev::kassert(v.elem_size() <= 4, "fp32 tile: element wider than 4 bytes");
  load_box_async(v, b, staging(tile, count, v.elem_size()));
}

void widen_f32(DType src, Addr tile, std::size_t count) {
  if (src != DType::kFloat32)
    dev::vec_cast(DType::kFloat32, tile, src, staging(tile, count, sim::dtype_size(src)), count);
}

void store_f32_async(const TensorView& v, const Box& b, Addr tile, std::size_t count) {
  dev::kassert(v.elem_size() <= 4, "fp32 tile: element wider than 4 bytes");
  if (v.dtype != DType::kFloat32) dev::vec_cast(v.dtype, tile, DType::kFloat32, tile, count);
  store_box_async(v, b, tile);
}

}  // namespace mlusim::mlu::nn
