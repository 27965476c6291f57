// Philox4x32-10 for the random op tests, written independently of libmlu's random/philox.h.
#pragma once

#include <array>
#include <cstdint>

namespace mlusim::mlu::testing {

// Philox4x32-10 written from the paper's definition (Random123's philox4x32 with R = 10).
inline std::array<std::uint32_t, 4> philox(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t a = 0xD2511F53ull * c[0], b = 0xCD9E8D57ull * c[2];
    c = {std::uint32_t(b >> 32) ^ c[1] ^ k[0], std::uint32_t(b), std::uint32_t(a >> 32) ^ c[3] ^ k[1],
         std::uint32_t(a)};
    k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
  }
  return c;
}

// Word i % 4 of block first_block + i / 4 under key = seed: element i's random word.
inline std::uint32_t philox_word(std::uint64_t seed, std::uint64_t first_block, std::int64_t i) {
  const std::uint64_t b = first_block + std::uint64_t(i / 4);
  return philox({std::uint32_t(b), std::uint32_t(b >> 32), 0, 0}, {std::uint32_t(seed), std::uint32_t(seed >> 32)})[i % 4];
}

}  // namespace mlusim::mlu::testing
