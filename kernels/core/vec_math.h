// Vectorised math shared by the kernels: exp for softmax-style kernels and bf16 <-> f32
// conversion, for AVX-512, AVX2+FMA and plain C++. Each function carries its own target
// attribute, so callers compiled with the same attribute inline it and the library as a whole
// still builds for baseline x86-64 (ISA choice happens at run time in each kernel).
//
// Exp: x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2 so n*ln2_hi is exact), exp(r)
// by a degree-6 polynomial (Taylor coefficients; truncation error < 2e-7 relative over the
// interval), then scaled by 2^n. Inputs are clamped to [-103, 88.7] (exp(88.7) is just below
// FLT_MAX), and anything below -103 (a masked -inf score included) returns exactly 0: the
// polynomial at the clamp would give a denormal ~1e-45, not 0, and never NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/core/dtype.h"

#if defined(__x86_64__)
#include "kernels/core/simd.h"  // <immintrin.h>
#endif

namespace blocktune::vec {

inline constexpr float kExpMax = 88.7f;
inline constexpr float kExpMin = -103.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;     // 8 significant bits: n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;  // ln2 - kLn2Hi
// 1/k! for k = 6..2 (Horner order).
inline constexpr float kC6 = 1.0f / 720.0f, kC5 = 1.0f / 120.0f, kC4 = 1.0f / 24.0f, kC3 = 1.0f / 6.0f, kC2 = 0.5f;

inline float ExpScalar(float x) {
  if (!(x >= kExpMin)) return 0.0f;
  return std::exp(std::fmin(x, kExpMax));
}

#if defined(__x86_64__)

__attribute__((target("avx512f"))) inline __m512 Exp(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpMin)), _mm512_set1_ps(kExpMax));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kC6);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow), _mm512_scalef_ps(p, n));  // p * 2^n
}

__attribute__((target("avx2,fma"))) inline __m256 Exp(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_GE_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpMin)), _mm256_set1_ps(kExpMax));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kC6);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n through the exponent field; n in [-149, 128] after clamping, so split it in two
  // halves to stay within the normal exponent range on both ends.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i rest = _mm256_sub_epi32(ni, half);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(rest, _mm256_set1_epi32(127)), 23));
  return _mm256_and_ps(_mm256_mul_ps(_mm256_mul_ps(p, s1), s2), keep);
}

__attribute__((target("avx512f"))) inline float ReduceMax(__m512 v) { return _mm512_reduce_max_ps(v); }
__attribute__((target("avx512f"))) inline float ReduceAdd(__m512 v) { return _mm512_reduce_add_ps(v); }

__attribute__((target("avx2,fma"))) inline float ReduceMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
__attribute__((target("avx2,fma"))) inline float ReduceAdd(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// bf16 -> f32 is a 16-bit shift: 16 values (AVX-512) or 8 values (AVX2) at a time.
__attribute__((target("avx512f"))) inline __m512 LoadBf16x16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
__attribute__((target("avx2,fma"))) inline __m256 LoadBf16x8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

#endif  // __x86_64__

// Whole-array conversions for packing (dtype.h's rounding: nearest even, NaN stays NaN).
inline void Bf16ToF32(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = BF16ToFloat(BF16{in[i]});
}

inline void F32ToBf16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = FloatToBF16(in[i]).bits;
}

}  // namespace blocktune::vec
