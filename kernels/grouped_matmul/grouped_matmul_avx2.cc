// The AVX2+FMA inner loops of grouped_matmul: bf16 widening and the direct kernel for small
// groups (6 rows x 16 columns per call, the matmul micro-kernel's shape), beside the AVX2
// matmul micro-kernels. Only these functions carry the avx2 target attribute, so the library
// runs on any x86-64.
#include "kernels/grouped_matmul/grouped_matmul_ops.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/core/dtype.h"

#define GMM_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::grouped_matmul_internal {
namespace {

// Groups up to 12 rows run direct (Zen 3, 6x16 calls: half the registers of AVX-512, so twice
// the row passes per B strip): threshold 12 gave small_groups_g64 25.5 GFLOP/s against 24.0 for
// none (every group packed), 24.0 for 24 and 24.4 for 6 (OpenBLAS per group: 24.3-25.1),
// zipf_g64 within noise (58.6-60.3) for all.
constexpr int64_t kDirectMaxGroupRows = 12;
constexpr int kDirectRows = 6;

// ---------------------------------------------------------------------------------------------
// bf16 -> f32 conversion (a 16-bit shift).

GMM_AVX2 void Convert(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; i < n; ++i) dst[i] = BF16ToFloat(BF16{src[i]});
}

// ---------------------------------------------------------------------------------------------
// The AVX2 direct kernel: grouped_matmul_avx512.cc's loop on 8-float vectors, kRows (1-6) x
// (8 * kVecs). AVX2 has no masked 16-bit load, so a partial bf16 vector (only at the rhs column
// edge) is staged through a zero-padded 8-element buffer; f32 uses vmaskmovps, which does not
// touch masked-out addresses.

GMM_AVX2 inline __m256i ColMask8(int cols) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
}

template <typename T>
GMM_AVX2 inline __m256 LoadB8(const T* b, int cols, __m256i mask) {
  if constexpr (sizeof(T) == 4) {
    if (cols >= 8) return _mm256_loadu_ps(b);
    return _mm256_maskload_ps(b, mask);
  } else {
    __m128i h;
    if (cols >= 8) {
      h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    } else {
      alignas(16) uint16_t tmp[8] = {};
      for (int j = 0; j < cols; ++j) tmp[j] = b[j];
      h = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <int kRows, int kVecs, typename T>
GMM_AVX2 void DirectKernel(int64_t kc, const float* a, int64_t lda, const T* b, int64_t ldb, float* c, int64_t ldc,
                           int cols, bool accumulate) {
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  int vcols[kVecs];
  __m256i mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    vcols[v] = std::clamp(cols - 8 * v, 0, 8);
    mask[v] = ColMask8(vcols[v]);
  }
  const bool full = cols >= 8 * kVecs;
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * ldb;
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols), _MM_HINT_T0);
    __m256 bv[kVecs];
    if (full) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = LoadB8(bp + 8 * v, 8, mask[v]);
    } else {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v)
        bv[v] = vcols[v] > 0 ? LoadB8(bp + 8 * v, vcols[v], mask[v]) : _mm256_setzero_ps();
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m256 x = acc[r][v];
      if (full) {
        if (accumulate) x = _mm256_add_ps(x, _mm256_loadu_ps(cr + 8 * v));
        _mm256_storeu_ps(cr + 8 * v, x);
      } else if (vcols[v] > 0) {
        if (accumulate) x = _mm256_add_ps(x, _mm256_maskload_ps(cr + 8 * v, mask[v]));
        _mm256_maskstore_ps(cr + 8 * v, mask[v], x);
      }
    }
  }
}

template <int kRows, int kVecs, typename T>
struct DirectMaker {
  static constexpr auto kFn = &DirectKernel<kRows, kVecs, T>;
};

}  // namespace

const Ops& Ops::Avx2() {
  static const Ops kOps = MakeDirectOps<DirectMaker>(matmul_internal::Ops::Avx2(), &Convert, 16, kDirectMaxGroupRows,
                                                     std::make_integer_sequence<int, kDirectRows>());
  return kOps;
}

}  // namespace blocktune::kernels::grouped_matmul_internal
