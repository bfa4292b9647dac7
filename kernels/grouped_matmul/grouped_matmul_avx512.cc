// The AVX-512 inner loops of grouped_matmul: bf16 widening and the direct kernel for small
// groups (12 rows x 32 columns per call, the matmul micro-kernel's shape), beside the AVX-512
// matmul micro-kernels. Only these functions carry the avx512 target attribute, so the library
// runs on any x86-64.
#include "kernels/grouped_matmul/grouped_matmul_ops.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <cstdint>
#include <utility>

#define GMM_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::grouped_matmul_internal {
namespace {

// Groups up to 32 rows run direct (Intel, 12x32 calls): threshold 32 beat 24 and 48 by ~10% on
// zipf_g64 and ~5% on small groups; 96 lost ~15%, and direct-for-all lost ~4x on 200+ row groups
// (the spilled out rows then leave L1).
constexpr int64_t kDirectMaxGroupRows = 32;
constexpr int kDirectRows = 12;

// ---------------------------------------------------------------------------------------------
// bf16 -> f32 conversion (a 16-bit shift).

GMM_AVX512 void Convert(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

// ---------------------------------------------------------------------------------------------
// The AVX-512 direct kernel for small groups: kRows (1-12) x (16 * kVecs) accumulators over
// kc <= kDirectK steps, B loaded straight from rhs (masked at the column edge, so no padding and
// no out-of-bounds reads; bf16 widened in registers), A broadcast per row. The caller walks a
// band of kDirectK rhs rows strip by strip, so each row is read left to right; the prefetch
// runs kPrefetchCols ahead along the row.

template <typename T>
GMM_AVX512 inline __m512 LoadB(const T* b, __mmask16 m) {
  if constexpr (sizeof(T) == 4) {
    return _mm512_maskz_loadu_ps(m, b);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, b);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

GMM_AVX512 inline __mmask16 ColMask(int cols) {
  return cols >= 16  ? static_cast<__mmask16>(0xffff)
         : cols <= 0 ? static_cast<__mmask16>(0)
                     : static_cast<__mmask16>((1u << cols) - 1);
}

template <int kRows, int kVecs, typename T>
GMM_AVX512 void DirectKernel(int64_t kc, const float* a, int64_t lda, const T* b, int64_t ldb, float* c, int64_t ldc,
                             int cols, bool accumulate) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  __mmask16 mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) mask[v] = ColMask(cols - 16 * v);
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * ldb;
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols), _MM_HINT_T0);
    if constexpr (sizeof(T) == 4 && kVecs == 2) {
      _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols + 16), _MM_HINT_T0);
    }
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = LoadB(bp + 16 * v, mask[v]);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v));
      _mm512_mask_storeu_ps(cr + 16 * v, mask[v], x);
    }
  }
}

template <int kRows, int kVecs, typename T>
struct DirectMaker {
  static constexpr auto kFn = &DirectKernel<kRows, kVecs, T>;
};

}  // namespace

const Ops& Ops::Avx512() {
  static const Ops kOps = MakeDirectOps<DirectMaker>(matmul_internal::Ops::Avx512(), &Convert, 32, kDirectMaxGroupRows,
                                                     std::make_integer_sequence<int, kDirectRows>());
  return kOps;
}

}  // namespace blocktune::kernels::grouped_matmul_internal
