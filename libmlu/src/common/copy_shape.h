// Issuing strided copies in as few segments as their layout allows.
//
// The DMA moves every segment of a strided copy in whole bursts (sim core/dma_path.h:
// effective bytes = segments x roundup(segment bytes, dma.burst_bytes)), so a copy of many short
// segments costs up to burst / segment times its bytes: a 7-pixel fp16 row (14 bytes) costs a
// 64-byte burst. Where consecutive segments sit back to back in both the source and the
// destination they are one run of memory, and issuing them as one segment moves the same bytes
// at full rate. Kernels build their shapes from the tensor geometry and pass them through
// coalesce() before issuing them.
#pragma once

#include <cstdint>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu {

// The same copy (same bytes, same order) with contiguous levels merged into the segment, and a
// level 2 that continues level 1's strides merged into level 1.
inline dev::CopyShape coalesce(dev::CopyShape s) {
  auto drop_level1 = [&s] {  // level 2 becomes level 1
    s.n1 = s.n2, s.dst_stride1 = s.dst_stride2, s.src_stride1 = s.src_stride2;
    s.n2 = 1, s.dst_stride2 = s.src_stride2 = 0;
  };
  auto contiguous = [&s] {
    const auto seg = static_cast<std::int64_t>(s.seg_bytes);
    return s.n1 > 1 && s.dst_stride1 == seg && s.src_stride1 == seg;
  };
  if (s.seg_bytes == 0) return s;
  if (s.n1 == 1) drop_level1();
  if (contiguous()) {  // level 1 is one run: it becomes the segment, level 2 level 1
    s.seg_bytes *= s.n1;
    drop_level1();
    if (contiguous()) s.seg_bytes *= s.n1, s.n1 = 1, s.dst_stride1 = s.src_stride1 = 0;
  } else if (s.n2 > 1 && s.dst_stride2 == s.dst_stride1 * static_cast<std::int64_t>(s.n1) &&
             s.src_stride2 == s.src_stride1 * static_cast<std::int64_t>(s.n1)) {
    s.n1 *= s.n2, s.n2 = 1, s.dst_stride2 = s.src_stride2 = 0;  // level 2 continues level 1
  }
  if (s.n1 == 1) s.dst_stride1 = s.src_stride1 = 0;
  return s;
}

}  // namespace mlusim::mlu
