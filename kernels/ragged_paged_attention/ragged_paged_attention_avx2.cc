// The AVX2+FMA inner loops of ragged_paged_attention's dot form (decode); the panel form uses
// flash_attention's AVX2 loops. Only these functions carry the avx2 target attribute, so the
// library still runs on any x86-64.
//
// Scores: a register tile of R score rows x T keys (R * T = 8 ymm accumulators: 4x2, 2x4, 1x8)
// runs over head_dim with R + T loads per 8 FMAs, and is reduced by one 8-to-1 transposing
// hadd tree (6 hadds + 2 lane permutes + 1 add for 8 dot products). Eight independent chains
// cover the FMA latency (4 cycles x 2 ports); a single dot product with one accumulator chain
// would wait on it every step. P.V: R rows x C 8-float chunks of head_dim (R * C <= 8
// accumulators), one V load per chunk and one broadcast per row per key.
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention_ops.h"

#define BLOCKTUNE_RPA_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::rpa_internal {
namespace {

// Lanes [0, n) of a ymm load/store mask (n in 1..8).
BLOCKTUNE_RPA_AVX2 inline __m256i FirstN(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Lane i of the result is the sum of the 8 lanes of a[i] (see the file comment).
BLOCKTUNE_RPA_AVX2 inline __m256 Reduce8(const __m256 (&a)[8]) {
  const __m256 h0 = _mm256_hadd_ps(a[0], a[1]);
  const __m256 h1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 h2 = _mm256_hadd_ps(a[4], a[5]);
  const __m256 h3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 g0 = _mm256_hadd_ps(h0, h1);  // lanes 0-3: a[0..3] low halves, 4-7: high halves
  const __m256 g1 = _mm256_hadd_ps(h2, h3);  // the same for a[4..7]
  return _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31));
}

// s[r][t] = q_r . k_t for kR rows x kT keys; `valid` of the kT keys are stored. q rows are
// zero-padded to whole chunks (ldq floats apart, 32-byte aligned); the last partial chunk of the
// k rows is read through `tail` (zeros beyond head_dim).
template <int kR, int kT>
BLOCKTUNE_RPA_AVX2 void ScoreTile(const float* q, int64_t ldq, const float* const* k, int64_t full_chunks,
                                  bool has_tail, __m256i tail, float* s, int64_t lds, int valid) {
  static_assert(kR * kT == 8);
  __m256 acc[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  const float* kp[kT];
#pragma GCC unroll 8
  for (int t = 0; t < kT; ++t) kp[t] = k[t];
  for (int64_t c = 0; c < full_chunks; ++c) {
    __m256 qv[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) qv[r] = _mm256_load_ps(q + r * ldq + c * 8);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const __m256 kv = _mm256_loadu_ps(kp[t] + c * 8);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) acc[r * kT + t] = _mm256_fmadd_ps(qv[r], kv, acc[r * kT + t]);
    }
  }
  if (has_tail) {
    const int64_t c = full_chunks;
    __m256 qv[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) qv[r] = _mm256_load_ps(q + r * ldq + c * 8);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const __m256 kv = _mm256_maskload_ps(kp[t] + c * 8, tail);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) acc[r * kT + t] = _mm256_fmadd_ps(qv[r], kv, acc[r * kT + t]);
    }
  }
  alignas(32) float res[8];
  _mm256_store_ps(res, Reduce8(acc));
  for (int r = 0; r < kR; ++r) {
    for (int t = 0; t < valid; ++t) s[r * lds + t] = res[r * kT + t];
  }
}

BLOCKTUNE_RPA_AVX2 void DotScores(const float* q, int64_t ldq, int64_t rows, const float* const* k, int64_t n,
                                  int64_t head_dim, float* s, int64_t lds) {
  const int64_t full_chunks = head_dim / 8;
  const bool has_tail = head_dim % 8 != 0;
  const __m256i tail = FirstN(head_dim % 8);
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) {
    for (int64_t t0 = 0; t0 < n; t0 += 2) {
      ScoreTile<4, 2>(q + r0 * ldq, ldq, k + t0, full_chunks, has_tail, tail, s + r0 * lds + t0, lds,
                      static_cast<int>(std::min<int64_t>(2, n - t0)));
    }
  }
  for (; r0 + 2 <= rows; r0 += 2) {
    for (int64_t t0 = 0; t0 < n; t0 += 4) {
      ScoreTile<2, 4>(q + r0 * ldq, ldq, k + t0, full_chunks, has_tail, tail, s + r0 * lds + t0, lds,
                      static_cast<int>(std::min<int64_t>(4, n - t0)));
    }
  }
  for (; r0 < rows; ++r0) {
    for (int64_t t0 = 0; t0 < n; t0 += 8) {
      ScoreTile<1, 8>(q + r0 * ldq, ldq, k + t0, full_chunks, has_tail, tail, s + r0 * lds + t0, lds,
                      static_cast<int>(std::min<int64_t>(8, n - t0)));
    }
  }
}

BLOCKTUNE_RPA_AVX2 float SoftmaxRow(float* s, int64_t n, int64_t n_valid, float* m, float* l) {
  if (n_valid <= 0) {
    std::fill(s, s + n, 0.0f);
    return 1.0f;
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t full = n_valid / 8 * 8;
  __m256 mx = _mm256_set1_ps(kNegInf);
  for (int64_t t = 0; t < full; t += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + t));
  // The last partial vector through a copy padded with -inf (exp gives exactly 0 there).
  alignas(32) float tail[8];
  const int64_t rest = n_valid - full;
  for (int i = 0; i < 8; ++i) tail[i] = i < rest ? s[full + i] : kNegInf;
  mx = _mm256_max_ps(mx, _mm256_load_ps(tail));
  const float m_new = std::max(*m, vec::ReduceMax(mx));
  const float alpha = *m == kNegInf ? 0.0f : vec::ExpScalar(*m - m_new);
  const __m256 mv = _mm256_set1_ps(m_new);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t t = 0; t < full; t += 8) {
    const __m256 p = vec::Exp(_mm256_sub_ps(_mm256_loadu_ps(s + t), mv));
    sum = _mm256_add_ps(sum, p);
    _mm256_storeu_ps(s + t, p);
  }
  if (rest > 0) {
    const __m256 p = vec::Exp(_mm256_sub_ps(_mm256_load_ps(tail), mv));
    sum = _mm256_add_ps(sum, p);
    _mm256_store_ps(tail, p);
    std::copy(tail, tail + rest, s + full);
  }
  std::fill(s + n_valid, s + n, 0.0f);  // masked keys of this block
  *l = *l * alpha + vec::ReduceAdd(sum);
  *m = m_new;
  return alpha;
}

// o[r][c0 + c] = alpha[r] * o[r][c0 + c] + sum_t p[r][t] * v_t[c0 + c] for kR rows x kC chunks
// of 8; with kTail the last chunk is head_dim's partial one, read through `tail`.
template <int kR, int kC, bool kTail>
BLOCKTUNE_RPA_AVX2 void PvTile(const float* p, int64_t ldp, const float* const* v, int64_t n, float* o, int64_t ldo,
                               const float* alpha, int64_t c0, __m256i tail) {
  __m256 acc[kR][kC];
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
    const __m256 a = _mm256_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) acc[r][c] = _mm256_mul_ps(a, _mm256_load_ps(o + r * ldo + (c0 + c) * 8));
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* vt = v[t] + c0 * 8;
    __m256 vv[kC];
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) {
      vv[c] = kTail && c == kC - 1 ? _mm256_maskload_ps(vt + c * 8, tail) : _mm256_loadu_ps(vt + c * 8);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      const __m256 pb = _mm256_broadcast_ss(p + r * ldp + t);
#pragma GCC unroll 8
      for (int c = 0; c < kC; ++c) acc[r][c] = _mm256_fmadd_ps(pb, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) _mm256_store_ps(o + r * ldo + (c0 + c) * 8, acc[r][c]);
  }
}

using PvFn = void (*)(const float*, int64_t, const float* const*, int64_t, float*, int64_t, const float*, int64_t,
                      __m256i);

// kR rows x nc chunks (nc <= 8 / kR), the last one partial if `tail`.
template <int kR, bool kTail>
BLOCKTUNE_RPA_AVX2 PvFn PickPvT(int64_t nc) {
  if constexpr (kR == 4) {
    return nc == 1 ? &PvTile<4, 1, kTail> : &PvTile<4, 2, kTail>;
  } else if constexpr (kR == 2) {
    switch (nc) {
      case 1: return &PvTile<2, 1, kTail>;
      case 2: return &PvTile<2, 2, kTail>;
      case 3: return &PvTile<2, 3, kTail>;
      default: return &PvTile<2, 4, kTail>;
    }
  } else {
    switch (nc) {
      case 1: return &PvTile<1, 1, kTail>;
      case 2: return &PvTile<1, 2, kTail>;
      case 3: return &PvTile<1, 3, kTail>;
      case 4: return &PvTile<1, 4, kTail>;
      case 5: return &PvTile<1, 5, kTail>;
      case 6: return &PvTile<1, 6, kTail>;
      case 7: return &PvTile<1, 7, kTail>;
      default: return &PvTile<1, 8, kTail>;
    }
  }
}

template <int kR>
BLOCKTUNE_RPA_AVX2 void PvRows(const float* p, int64_t ldp, const float* const* v, int64_t n, int64_t head_dim,
                               float* o, int64_t ldo, const float* alpha) {
  const int64_t chunks = (head_dim + 7) / 8;
  const bool has_tail = head_dim % 8 != 0;
  const __m256i tail = FirstN(head_dim % 8);
  for (int64_t c0 = 0; c0 < chunks; c0 += 8 / kR) {
    const int64_t nc = std::min<int64_t>(8 / kR, chunks - c0);
    const bool last = has_tail && c0 + nc == chunks;
    const PvFn fn = last ? PickPvT<kR, true>(nc) : PickPvT<kR, false>(nc);
    fn(p, ldp, v, n, o, ldo, alpha, c0, tail);
  }
}

BLOCKTUNE_RPA_AVX2 void DotPv(const float* p, int64_t ldp, int64_t rows, const float* const* v, int64_t n,
                              int64_t head_dim, float* o, int64_t ldo, const float* alpha) {
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) PvRows<4>(p + r0 * ldp, ldp, v, n, head_dim, o + r0 * ldo, ldo, alpha + r0);
  for (; r0 + 2 <= rows; r0 += 2) PvRows<2>(p + r0 * ldp, ldp, v, n, head_dim, o + r0 * ldo, ldo, alpha + r0);
  for (; r0 < rows; ++r0) PvRows<1>(p + r0 * ldp, ldp, v, n, head_dim, o + r0 * ldo, ldo, alpha + r0);
}

}  // namespace

const Ops& Ops::Avx2() {
  // Panel form from 8 queries: one full ymm of lanes per panel row (flash_attention's AVX2
  // tiles use one vector for panels of up to 8 queries, so nothing is computed on padding).
  static const Ops kOps{"avx2", &flash_attention_internal::Ops::Avx2(), 8, &DotScores, &SoftmaxRow, &DotPv};
  return kOps;
}

}  // namespace blocktune::kernels::rpa_internal
