// The AVX-512 inner loops of ragged_paged_attention's dot form (decode); the panel form uses
// flash_attention's AVX-512 loops. Only these functions carry the avx512 target attribute, so the
// library still runs on any x86-64. The same tiles as the AVX2 file, twice as wide:
//
// Scores: a register tile of R score rows x T keys (R*T = 16 zmm accumulators: 4x4, 2x8, 1x16)
// runs over head_dim with R + T loads per 16 FMAs and is reduced by one 16-to-1 transposing tree
// (45 shuffles/adds for 16 dot products instead of ~8 per dot product with
// _mm512_reduce_add_ps): at head_dim 128 that is 128 FMAs + 45 shuffles per tile, with no
// transpose of K (packing K^T for a GEMM micro-kernel would cost more than the dot products when
// there are only 4 rows). P.V: R rows x C 16-float chunks of head_dim (R*C <= 16 accumulators),
// one V load per chunk and one broadcast per row per key.
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention_ops.h"

// GCC 12's AVX-512 headers build some results from _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use (GCC bug 105593); the values are fully defined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define RPA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::rpa_internal {
namespace {

RPA_AVX512 inline __mmask16 TailMask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// Lane i of the result is the sum of the 16 lanes of a[i] (see the file comment).
RPA_AVX512 inline __m512 Reduce16(const __m512 (&a)[16]) {
  __m512 b[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  }
  __m512 c[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d x = _mm512_castps_pd(b[2 * i]);
    const __m512d y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  const __m512 d0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88), _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
  const __m512 d1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], 0x88), _mm512_shuffle_f32x4(c[2], c[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d0, d1, 0x88), _mm512_shuffle_f32x4(d0, d1, 0xdd));
}

// s[r][t] = q_r . k_t for kR rows x kT keys. q rows are zero-padded to whole chunks (ldq floats
// apart); k rows are read through pointers, the last partial chunk with `tail` (zeros beyond).
template <int kR, int kT>
RPA_AVX512 __attribute__((noinline)) void ScoreTile(const float* q, int64_t ldq, const float* const* k,
                                                    int64_t full_chunks, __mmask16 tail, float* s, int64_t lds,
                                                    int valid) {
  static_assert(kR * kT == 16);
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  const float* kp[kT];
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) kp[t] = k[t];
  for (int64_t c = 0; c < full_chunks; ++c) {
    __m512 qv[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) qv[r] = _mm512_load_ps(q + r * ldq + c * 16);
#pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) {
      const __m512 kv = _mm512_loadu_ps(kp[t] + c * 16);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) acc[r * kT + t] = _mm512_fmadd_ps(qv[r], kv, acc[r * kT + t]);
    }
  }
  if (tail != 0) {
    const int64_t c = full_chunks;
    __m512 qv[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) qv[r] = _mm512_load_ps(q + r * ldq + c * 16);
#pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) {
      const __m512 kv = _mm512_maskz_loadu_ps(tail, kp[t] + c * 16);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) acc[r * kT + t] = _mm512_fmadd_ps(qv[r], kv, acc[r * kT + t]);
    }
  }
  alignas(64) float res[16];
  _mm512_store_ps(res, Reduce16(acc));
  for (int r = 0; r < kR; ++r) {
    for (int t = 0; t < valid; ++t) s[r * lds + t] = res[r * kT + t];
  }
}

// o[r][chunks] = alpha[r] * o[r][chunks] + sum_t p[r][t] * v_t[chunks] for kR rows x kC chunks
// starting at chunk c0; masks[c] guards the last (partial) chunk of head_dim.
template <int kR, int kC>
RPA_AVX512 void PvTile(const float* p, int64_t ldp, const float* const* v, int n, float* o, int64_t ldo,
                       const float* alpha, int64_t c0, const __mmask16* masks) {
  __m512 acc[kR][kC];
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) acc[r][c] = _mm512_mul_ps(a, _mm512_load_ps(o + r * ldo + (c0 + c) * 16));
  }
  for (int t = 0; t < n; ++t) {
    const float* vt = v[t] + c0 * 16;
    __m512 vv[kC];
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) vv[c] = _mm512_maskz_loadu_ps(masks[c], vt + c * 16);
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      const __m512 pb = _mm512_set1_ps(p[r * ldp + t]);
#pragma GCC unroll 8
      for (int c = 0; c < kC; ++c) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) _mm512_store_ps(o + r * ldo + (c0 + c) * 16, acc[r][c]);
  }
}

using PvFn = void (*)(const float*, int64_t, const float* const*, int, float*, int64_t, const float*, int64_t,
                      const __mmask16*);

// kR = 4 runs 4 chunks (16 accumulators), kR = 2 and 1 run up to 8 (16 and 8 accumulators).
template <int kR>
PvFn PickPv(int chunks) {
  if constexpr (kR == 4) {
    switch (chunks) {
      case 1: return &PvTile<4, 1>;
      case 2: return &PvTile<4, 2>;
      case 3: return &PvTile<4, 3>;
      default: return &PvTile<4, 4>;
    }
  } else {
    switch (chunks) {
      case 1: return &PvTile<kR, 1>;
      case 2: return &PvTile<kR, 2>;
      case 3: return &PvTile<kR, 3>;
      case 4: return &PvTile<kR, 4>;
      case 5: return &PvTile<kR, 5>;
      case 6: return &PvTile<kR, 6>;
      case 7: return &PvTile<kR, 7>;
      default: return &PvTile<kR, 8>;
    }
  }
}

// One row of the online softmax over n scores (n_valid of them unmasked); returns alpha.
RPA_AVX512 float SoftmaxRow(float* s, int64_t n, int64_t n_valid, float* m, float* l) {
  if (n_valid <= 0) {
    for (int64_t t = 0; t < n; ++t) s[t] = 0.0f;
    return 1.0f;
  }
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t t = 0;
  for (; t + 16 <= n_valid; t += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + t));
  if (t < n_valid) mx = _mm512_mask_max_ps(mx, TailMask(n_valid - t), mx, _mm512_loadu_ps(s + t));
  const float m_new = std::max(*m, _mm512_reduce_max_ps(mx));
  // A row's first live block: alpha 0 (its l and o are still 0).
  const float alpha = *m == -std::numeric_limits<float>::infinity() ? 0.0f : vec::ExpScalar(*m - m_new);
  const __m512 mv = _mm512_set1_ps(m_new);
  __m512 sum = _mm512_setzero_ps();
  t = 0;
  for (; t + 16 <= n_valid; t += 16) {
    const __m512 p = vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(s + t), mv));
    sum = _mm512_add_ps(sum, p);
    _mm512_storeu_ps(s + t, p);
  }
  if (t < n_valid) {
    const __mmask16 mk = TailMask(n_valid - t);
    const __m512 p = _mm512_maskz_mov_ps(mk, vec::Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + t), mv)));
    sum = _mm512_add_ps(sum, p);
    _mm512_mask_storeu_ps(s + t, TailMask(n - t), p);  // masked keys of this chunk become 0
    t += 16;
  }
  for (; t < n; ++t) s[t] = 0.0f;
  *l = *l * alpha + _mm512_reduce_add_ps(sum);
  *m = m_new;
  return alpha;
}

void DotScores(const float* q, int64_t ldq, int64_t rows, const float* const* k, int64_t n, int64_t head_dim, float* s,
               int64_t lds) {
  const int64_t full_chunks = head_dim / 16;
  const __mmask16 tail = TailMask(head_dim - full_chunks * 16);
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) {
    for (int64_t t0 = 0; t0 < n; t0 += 4) {
      ScoreTile<4, 4>(q + r0 * ldq, ldq, k + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                      static_cast<int>(std::min<int64_t>(4, n - t0)));
    }
  }
  for (; r0 + 2 <= rows; r0 += 2) {
    for (int64_t t0 = 0; t0 < n; t0 += 8) {
      ScoreTile<2, 8>(q + r0 * ldq, ldq, k + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                      static_cast<int>(std::min<int64_t>(8, n - t0)));
    }
  }
  for (; r0 < rows; ++r0) {
    for (int64_t t0 = 0; t0 < n; t0 += 16) {
      ScoreTile<1, 16>(q + r0 * ldq, ldq, k + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                       static_cast<int>(std::min<int64_t>(16, n - t0)));
    }
  }
}

void DotPv(const float* p, int64_t ldp, int64_t rows, const float* const* v, int64_t n, int64_t head_dim, float* o,
           int64_t ldo, const float* alpha) {
  const int64_t chunks = (head_dim + 15) / 16;
  const __mmask16 tail = TailMask(head_dim - head_dim / 16 * 16);
  __mmask16 masks[64];  // head_dim <= 1024 (the driver's bound)
  for (int64_t c = 0; c < chunks && c < 64; ++c) masks[c] = c == chunks - 1 && tail != 0 ? tail : 0xffff;
  const int nn = static_cast<int>(n);
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) {
    for (int64_t c0 = 0; c0 < chunks; c0 += 4) {
      const int64_t nc = std::min<int64_t>(4, chunks - c0);
      PickPv<4>(static_cast<int>(nc))(p + r0 * ldp, ldp, v, nn, o + r0 * ldo, ldo, alpha + r0, c0, masks + c0);
    }
  }
  for (; r0 + 2 <= rows; r0 += 2) {
    for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
      const int64_t nc = std::min<int64_t>(8, chunks - c0);
      PickPv<2>(static_cast<int>(nc))(p + r0 * ldp, ldp, v, nn, o + r0 * ldo, ldo, alpha + r0, c0, masks + c0);
    }
  }
  for (; r0 < rows; ++r0) {
    for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
      const int64_t nc = std::min<int64_t>(8, chunks - c0);
      PickPv<1>(static_cast<int>(nc))(p + r0 * ldp, ldp, v, nn, o + r0 * ldo, ldo, alpha + r0, c0, masks + c0);
    }
  }
}

}  // namespace

const Ops& Ops::Avx512() {
  // Panel form from 16 queries: one full zmm of lanes per panel row (flash_attention's AVX-512
  // tiles use one vector for panels of up to 16 queries).
  static const Ops kOps{"avx512", &flash_attention_internal::Ops::Avx512(), 16, &DotScores, &SoftmaxRow, &DotPv};
  return kOps;
}

}  // namespace blocktune::kernels::rpa_internal
