// Kernel-side moves of a box (a rectangular block of a strided tensor view) between GDRAM and a
// dense row-major NRAM array, and the fp32 working tiles built on them. Every move is a DMA on the
// issuing core: each box becomes strided copies of up to three levels (BANG's 3-D __memcpy),
// looping in kernel code over any further dims; the contiguous segment is the innermost dim when
// its stride is 1, one element otherwise.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mlusim/sim/kernel_api.h"
#include "softmax/tensor_view.h"

namespace mlusim::mlu::nn {

struct Box {
  std::array<std::int64_t, kMaxViewDims> start{};
  std::array<std::int64_t, kMaxViewDims> extent{};
  std::int64_t count(int ndim) const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= extent[i];
    return n;
  }
};

// Issue async copies of box `b` of `v` into (load) or out of (store) a dense row-major NRAM array.
void load_box_async(const TensorView& v, const Box& b, sim::Addr nram);
void store_box_async(const TensorView& v, const Box& b, sim::Addr nram);

// The same with an NRAM array of explicit element strides per dim of `v` (padded or pitched
// layouts); elements are v's dtype.
using NramStrides = std::array<std::int64_t, kMaxViewDims>;
void load_box_async(const TensorView& v, const Box& b, sim::Addr nram, const NramStrides& nram_strides);
void store_box_async(const TensorView& v, const Box& b, sim::Addr nram, const NramStrides& nram_strides);

// Issue async stores writing `src` (src_bytes of NRAM, e.g. zeros) over every element of box b
// of v: the NRAM side is re-read (stride 0) for every contiguous GDRAM segment, which is split
// into pieces of at most src_bytes (a multiple of the element size).
void fill_box_async(const TensorView& v, const Box& b, sim::Addr src, std::size_t src_bytes);

// fp32 tiles: a tile buffer holds `count` fp32 values. A view of a narrower dtype (fp16, int32,
// int8, bool) lands in the upper part of the tile and widen_f32 converts it in place once the copy
// has landed (after sync_io); store_f32_async narrows in place first. So one fp32 buffer serves
// every dtype and the DMA moves only the tensor's own bytes.
void load_f32_async(const TensorView& v, const Box& b, sim::Addr tile, std::size_t count);
void widen_f32(sim::DType src, sim::Addr tile, std::size_t count);
void store_f32_async(const TensorView& v, const Box& b, sim::Addr tile, std::size_t count);

}  // namespace mlusim::mlu::nn
