// The AVX2+FMA row passes of fused_cross_entropy (8 floats per vector, scalar tails), beside
// the AVX2 matmul micro-kernels. Only these functions carry the avx2 target attribute, so the
// library runs on any x86-64.
#include "kernels/fused_cross_entropy/fused_cross_entropy_ops.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/core/vec_math.h"

#define BLOCKTUNE_FCE_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::fused_cross_entropy_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

BLOCKTUNE_FCE_AVX2 void TileStats(const float* tile, int64_t ld, int rows, int64_t cols, float* m_run, float* s_run) {
  const int64_t full = cols / 8 * 8;
  for (int r = 0; r < rows; ++r) {
    const float* row = tile + r * ld;
    __m256 mx = _mm256_set1_ps(kNegInf);
    for (int64_t j = 0; j < full; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(row + j));
    float m_tile = vec::ReduceMax(mx);
    for (int64_t j = full; j < cols; ++j) m_tile = std::max(m_tile, row[j]);
    const float m_new = std::max(m_run[r], m_tile);
    const __m256 mv = _mm256_set1_ps(m_new);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < full; j += 8)
      acc = _mm256_add_ps(acc, vec::Exp(_mm256_sub_ps(_mm256_loadu_ps(row + j), mv)));
    float s = vec::ReduceAdd(acc);
    for (int64_t j = full; j < cols; ++j) s += vec::ExpScalar(row[j] - m_new);
    s_run[r] = s_run[r] * vec::ExpScalar(m_run[r] - m_new) + s;
    m_run[r] = m_new;
  }
}

BLOCKTUNE_FCE_AVX2 void TileDlogits(float* tile, int64_t ld, int rows, int64_t cols, const float* lse,
                                    const float* scale) {
  const int64_t full = cols / 8 * 8;
  for (int r = 0; r < rows; ++r) {
    float* row = tile + r * ld;
    const __m256 l = _mm256_set1_ps(lse[r]);
    const __m256 sc = _mm256_set1_ps(scale[r]);
    for (int64_t j = 0; j < full; j += 8) {
      _mm256_storeu_ps(row + j, _mm256_mul_ps(sc, vec::Exp(_mm256_sub_ps(_mm256_loadu_ps(row + j), l))));
    }
    for (int64_t j = full; j < cols; ++j) row[j] = scale[r] * vec::ExpScalar(row[j] - lse[r]);
  }
}

}  // namespace

const Ops& Ops::Avx2() {
  static const Ops kOps{"avx2", &matmul_internal::Ops::Avx2(), &TileStats, &TileDlogits};
  return kOps;
}

}  // namespace blocktune::kernels::fused_cross_entropy_internal
