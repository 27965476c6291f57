#include "compute/half_convert.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MLUSIM_HAVE_F16C_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace mlusim::sim::compute {
namespace {

void halves_to_floats_generic(const half* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

void floats_to_halves_generic(const float* src, half* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = half(src[i]);
}

#ifdef MLUSIM_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const half* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  halves_to_floats_generic(src + i, dst + i, n - i);
}

__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* src, half* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  floats_to_halves_generic(src + i, dst + i, n - i);
}

// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no __builtin_cpu_supports("f16c").
// __builtin_cpu_supports("avx") also checks that the OS saves the AVX registers.
bool cpuid_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool host_has_f16c() {
  static const bool has = __builtin_cpu_supports("avx") && cpuid_f16c();
  return has;
}
#endif

}  // namespace

void halves_to_floats(const half* src, float* dst, std::size_t n) {
#ifdef MLUSIM_HAVE_F16C_PATH
  if (host_has_f16c()) return halves_to_floats_f16c(src, dst, n);
#endif
  halves_to_floats_generic(src, dst, n);
}

void floats_to_halves(const float* src, half* dst, std::size_t n) {
#ifdef MLUSIM_HAVE_F16C_PATH
  if (host_has_f16c()) return floats_to_halves_f16c(src, dst, n);
#endif
  floats_to_halves_generic(src, dst, n);
}

void bfloat16s_to_floats(const bfloat16* src, float* dst, std::size_t n) {
  static_assert(sizeof(bfloat16) == 2 && sizeof(float) == 4);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t b;
    std::memcpy(&b, static_cast<const void*>(src + i), 2);
    const std::uint32_t u = std::uint32_t{b} << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

void floats_to_bfloat16s(const float* src, bfloat16* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, src + i, 4);
    std::uint16_t b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      b = static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN: keep the sign, force quiet
    } else {
      // Round to nearest even: add 0x7fff plus the lowest kept bit, then drop 16 bits. A carry
      // into the exponent is the correct next binade (or +-inf past the largest finite).
      b = static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    std::memcpy(static_cast<void*>(dst + i), &b, 2);
  }
}

void float16s_to_floats(DType t, const void* src, float* dst, std::size_t n) {
  if (t == DType::kFloat16) return halves_to_floats(static_cast<const half*>(src), dst, n);
  if (t == DType::kBFloat16) return bfloat16s_to_floats(static_cast<const bfloat16*>(src), dst, n);
  throw std::invalid_argument("float16s_to_floats: dtype '" + std::string(dtype_name(t)) + "' is not a 16-bit float");
}

void floats_to_float16s(DType t, const float* src, void* dst, std::size_t n) {
  if (t == DType::kFloat16) return floats_to_halves(src, static_cast<half*>(dst), n);
  if (t == DType::kBFloat16) return floats_to_bfloat16s(src, static_cast<bfloat16*>(dst), n);
  throw std::invalid_argument("floats_to_float16s: dtype '" + std::string(dtype_name(t)) + "' is not a 16-bit float");
}

}  // namespace mlusim::sim::compute
