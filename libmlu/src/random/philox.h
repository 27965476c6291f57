// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; the
// generator of Random123, cuRAND and torch's CUDA backend): a counter-based generator, so the
// words for counter c depend only on (key, c), never on which core computes them or in what order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace mlusim::mlu::nn {

using PhiloxWords = std::array<std::uint32_t, 4>;

inline PhiloxWords philox4x32_10(PhiloxWords ctr, std::array<std::uint32_t, 2> key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
  constexpr std::uint32_t kBump0 = 0x9E3779B9u, kBump1 = 0xBB67AE85u;  // Weyl key schedule
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key[0] += kBump0, key[1] += kBump1;
    const std::uint64_t p0 = std::uint64_t{kMul0} * ctr[0], p1 = std::uint64_t{kMul1} * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return ctr;
}

// The random words of elements [flat, flat + len) of a call whose stream starts at Philox block
// `first_block`: element i is word i % 4 of block first_block + i / 4 (the numbering dropout and
// the random fills share). Calls emit(begin, end, words) once per block, with [begin, end) the
// elements of the range that block covers, so a kernel stores one block's values at once.
template <class Emit>
void for_each_philox_block(std::array<std::uint32_t, 2> key, std::uint64_t first_block, std::int64_t flat,
                           std::int64_t len, Emit&& emit) {
  for (std::int64_t i = flat; i < flat + len;) {
    const std::uint64_t block = first_block + static_cast<std::uint64_t>(i / 4);
    const PhiloxWords w =
        philox4x32_10({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0, 0}, key);
    const std::int64_t end = std::min(flat + len, (i / 4 + 1) * 4);
    emit(i, end, w);
    i = end;
  }
}

}  // namespace mlusim::mlu::nn
