// The AVX-512 row passes of fused_cross_entropy (16 floats per vector, masked tails), beside the
// AVX-512 matmul micro-kernels. Only these functions carry the avx512 target attribute, so the
// library runs on any x86-64.
#include "kernels/fused_cross_entropy/fused_cross_entropy_ops.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/core/vec_math.h"

#define BLOCKTUNE_FCE_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::fused_cross_entropy_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

BLOCKTUNE_FCE_AVX512 void TileStats(const float* tile, int64_t ld, int rows, int64_t cols, float* m_run, float* s_run) {
  const int64_t full = cols / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols - full)) - 1);
  for (int r = 0; r < rows; ++r) {
    const float* row = tile + r * ld;
    __m512 mx = _mm512_set1_ps(kNegInf);
    for (int64_t j = 0; j < full; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(row + j));
    if (tail != 0) mx = _mm512_mask_max_ps(mx, tail, mx, _mm512_maskz_loadu_ps(tail, row + full));
    const float m_new = std::max(m_run[r], vec::ReduceMax(mx));
    const __m512 mv = _mm512_set1_ps(m_new);
    // Two accumulators: the exp polynomial is a long chain, two rows of it keep both FMA ports busy.
    __m512 acc0 = _mm512_setzero_ps();
    __m512 acc1 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= full; j += 32) {
      acc0 = _mm512_add_ps(acc0, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j), mv)));
      acc1 = _mm512_add_ps(acc1, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j + 16), mv)));
    }
    for (; j < full; j += 16) acc0 = _mm512_add_ps(acc0, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j), mv)));
    if (tail != 0) {
      acc1 = _mm512_mask_add_ps(acc1, tail, acc1, vec::Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + full), mv)));
    }
    s_run[r] = s_run[r] * vec::ExpScalar(m_run[r] - m_new) + vec::ReduceAdd(_mm512_add_ps(acc0, acc1));
    m_run[r] = m_new;
  }
}

BLOCKTUNE_FCE_AVX512 void TileDlogits(float* tile, int64_t ld, int rows, int64_t cols, const float* lse,
                                      const float* scale) {
  const int64_t full = cols / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols - full)) - 1);
  for (int r = 0; r < rows; ++r) {
    float* row = tile + r * ld;
    const __m512 l = _mm512_set1_ps(lse[r]);
    const __m512 sc = _mm512_set1_ps(scale[r]);
    for (int64_t j = 0; j < full; j += 16) {
      _mm512_storeu_ps(row + j, _mm512_mul_ps(sc, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j), l))));
    }
    if (tail != 0) {
      const __m512 e = vec::Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + full), l));
      _mm512_mask_storeu_ps(row + full, tail, _mm512_mul_ps(sc, e));
    }
  }
}

}  // namespace

const Ops& Ops::Avx512() {
  static const Ops kOps{"avx512", &matmul_internal::Ops::Avx512(), &TileStats, &TileDlogits};
  return kOps;
}

}  // namespace blocktune::kernels::fused_cross_entropy_internal
