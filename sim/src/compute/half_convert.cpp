#include "compute/half_convert.h"

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

}  // namespace mlusim::sim::compute
