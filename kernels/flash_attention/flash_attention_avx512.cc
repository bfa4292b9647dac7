// The AVX-512 inner loops of flash_attention: a panel is 32 queries (two zmm per row), tiles
// are 8 rows (keys for the scores, head_dim entries for P*V) x 32 queries in 16 accumulators.
// Only these functions carry the avx512 target attribute, so the library runs on any x86-64.
//
// Why 8 x 32: per reduction step a tile does 16 FMAs for 2 vector loads + 8 broadcasts (0.63
// loads per FMA, inside the 2 loads/cycle the two FMA ports can consume), 16 independent
// accumulators cover the 4-cycle FMA latency on 2 ports, and 8 divides the usual head_dim
// (40, 64, 128) and every block size (multiples of 16), so remainder tiles appear only at the
// end of the key sequence.
#include "kernels/flash_attention/flash_attention.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention_ops.h"

#define BLOCKTUNE_FA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::flash_attention_internal {
namespace {

constexpr int kPanel = kAvx512Panel;
constexpr int kTileRows = 8;

using TileFn = void (*)(const float* x, int64_t ldx, const float* panel, int64_t steps, float* out, const float* alpha);

// Scores: out[r][c] = sum_d k[r*ldk + d] * qt[d][c], r < kRows.
template <int kRows, int kVecs>
BLOCKTUNE_FA_AVX512 void ScoreTile(const float* k, int64_t ldk, const float* qt, int64_t head_dim, float* out,
                                   const float*) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t d = 0; d < head_dim; ++d) {
    __m512 qv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) qv[v] = _mm512_load_ps(qt + d * kPanel + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 kv = _mm512_set1_ps(k[r * ldk + d]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(kv, qv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm512_store_ps(out + r * kPanel + 16 * v, acc[r][v]);
  }
}

// P*V: ot[r][c] = alpha[c] * ot[r][c] + sum_j v[j*ldv + r] * p[j][c], r < kRows (rows of ot are
// head_dim entries). The rescale by alpha is fused into the accumulator load.
template <int kRows, int kVecs>
BLOCKTUNE_FA_AVX512 void PvTile(const float* v, int64_t ldv, const float* p, int64_t kb, float* ot,
                                const float* alpha) {
  __m512 acc[kRows][kVecs];
  __m512 al[kVecs];
#pragma GCC unroll 2
  for (int u = 0; u < kVecs; ++u) al[u] = _mm512_load_ps(alpha + 16 * u);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) acc[r][u] = _mm512_mul_ps(al[u], _mm512_load_ps(ot + r * kPanel + 16 * u));
  }
  for (int64_t j = 0; j < kb; ++j) {
    __m512 pv[kVecs];
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) pv[u] = _mm512_load_ps(p + j * kPanel + 16 * u);
    const float* vr = v + j * ldv;
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 b = _mm512_set1_ps(vr[r]);
#pragma GCC unroll 2
      for (int u = 0; u < kVecs; ++u) acc[r][u] = _mm512_fmadd_ps(b, pv[u], acc[r][u]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) _mm512_store_ps(ot + r * kPanel + 16 * u, acc[r][u]);
  }
}

// tiles[vecs - 1][rows - 1]
struct TileTable {
  TileFn fn[2][kTileRows];
};

template <template <int, int> class Maker, int kVecs, int... kRows>
constexpr void FillRow(TileFn* out, std::integer_sequence<int, kRows...>) {
  ((out[kRows] = Maker<kRows + 1, kVecs>::kFn), ...);
}

template <int kRows, int kVecs>
struct ScoreMaker {
  static constexpr TileFn kFn = &ScoreTile<kRows, kVecs>;
};
template <int kRows, int kVecs>
struct PvMaker {
  static constexpr TileFn kFn = &PvTile<kRows, kVecs>;
};

template <template <int, int> class Maker>
TileTable MakeTable() {
  TileTable t{};
  FillRow<Maker, 1>(t.fn[0], std::make_integer_sequence<int, kTileRows>());
  FillRow<Maker, 2>(t.fn[1], std::make_integer_sequence<int, kTileRows>());
  return t;
}

const TileTable& ScoreTable() {
  static const TileTable kTable = MakeTable<ScoreMaker>();
  return kTable;
}
const TileTable& PvTable() {
  static const TileTable kTable = MakeTable<PvMaker>();
  return kTable;
}

void Scores(const float* k, int64_t ldk, const float* qt, int64_t head_dim, int64_t kb, int cols, float* s) {
  const TileFn* fns = ScoreTable().fn[cols > 16 ? 1 : 0];
  for (int64_t j0 = 0; j0 < kb; j0 += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, kb - j0));
    fns[rows - 1](k + j0 * ldk, ldk, qt, head_dim, s + j0 * kPanel, nullptr);
  }
}

void Pv(const float* v, int64_t ldv, const float* p, int64_t kb, int cols, int64_t head_dim, float* ot,
        const float* alpha) {
  const TileFn* fns = PvTable().fn[cols > 16 ? 1 : 0];
  for (int64_t d0 = 0; d0 < head_dim; d0 += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, head_dim - d0));
    fns[rows - 1](v + d0, ldv, p, kb, ot + d0 * kPanel, alpha);
  }
}

// Lanes [0, t) of a 16-lane vector: the masked queries of a key row (see Ops::softmax).
BLOCKTUNE_FA_AVX512 inline __mmask16 PrefixMask(int64_t t) {
  if (t <= 0) return 0;
  if (t >= 16) return static_cast<__mmask16>(0xffff);
  return static_cast<__mmask16>((1u << t) - 1);
}

template <bool kMasked>
BLOCKTUNE_FA_AVX512 void SoftmaxVec(float* s, int64_t kb, float* m, float* l, float* alpha, int64_t mask_base) {
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  const __m512 m_old = _mm512_load_ps(m);
  // Pass 1: mask (diagonal blocks only) and the new row max, four independent max chains.
  __m512 mx0 = m_old, mx1 = neg_inf, mx2 = neg_inf, mx3 = neg_inf;
  int64_t j = 0;
  if constexpr (kMasked) {
    for (; j < kb; ++j) {
      __m512 x = _mm512_load_ps(s + j * kPanel);
      x = _mm512_mask_mov_ps(x, PrefixMask(j + mask_base), neg_inf);
      _mm512_store_ps(s + j * kPanel, x);
      mx0 = _mm512_max_ps(mx0, x);
    }
  } else {
    for (; j + 4 <= kb; j += 4) {
      mx0 = _mm512_max_ps(mx0, _mm512_load_ps(s + (j + 0) * kPanel));
      mx1 = _mm512_max_ps(mx1, _mm512_load_ps(s + (j + 1) * kPanel));
      mx2 = _mm512_max_ps(mx2, _mm512_load_ps(s + (j + 2) * kPanel));
      mx3 = _mm512_max_ps(mx3, _mm512_load_ps(s + (j + 3) * kPanel));
    }
    for (; j < kb; ++j) mx0 = _mm512_max_ps(mx0, _mm512_load_ps(s + j * kPanel));
  }
  const __m512 m_new = _mm512_max_ps(_mm512_max_ps(mx0, mx1), _mm512_max_ps(mx2, mx3));
  // A row with no unmasked key yet keeps m = -inf; subtract 0 instead so no -inf - -inf = NaN.
  const __m512 m_safe = _mm512_mask_mov_ps(m_new, _mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ), _mm512_setzero_ps());
  // alpha = exp(m_old - m_new), exactly 0 for a row that had no key before (vec::Exp(-inf) is a
  // denormal, not 0, and denormals can cost microcode assists).
  const __m512 a =
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m_old, neg_inf, _CMP_NEQ_OQ), vec::Exp(_mm512_sub_ps(m_old, m_safe)));
  // Pass 2: p = exp(s - m) in place and the row sums, two independent add chains.
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  j = 0;
  for (; j + 2 <= kb; j += 2) {
    const __m512 x0 = _mm512_load_ps(s + j * kPanel);
    const __m512 x1 = _mm512_load_ps(s + (j + 1) * kPanel);
    __m512 p0 = vec::Exp(_mm512_sub_ps(x0, m_safe));
    __m512 p1 = vec::Exp(_mm512_sub_ps(x1, m_safe));
    if constexpr (kMasked) {
      p0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x0, neg_inf, _CMP_NEQ_OQ), p0);
      p1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x1, neg_inf, _CMP_NEQ_OQ), p1);
    }
    _mm512_store_ps(s + j * kPanel, p0);
    _mm512_store_ps(s + (j + 1) * kPanel, p1);
    sum0 = _mm512_add_ps(sum0, p0);
    sum1 = _mm512_add_ps(sum1, p1);
  }
  for (; j < kb; ++j) {
    const __m512 x = _mm512_load_ps(s + j * kPanel);
    __m512 p = vec::Exp(_mm512_sub_ps(x, m_safe));
    if constexpr (kMasked) p = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, neg_inf, _CMP_NEQ_OQ), p);
    _mm512_store_ps(s + j * kPanel, p);
    sum0 = _mm512_add_ps(sum0, p);
  }
  _mm512_store_ps(l, _mm512_fmadd_ps(_mm512_load_ps(l), a, _mm512_add_ps(sum0, sum1)));
  _mm512_store_ps(m, m_new);
  _mm512_store_ps(alpha, a);
}

void Softmax(float* s, int64_t kb, int cols, float* m, float* l, float* alpha, bool masked, int64_t mask_base) {
  const int vecs = cols > 16 ? 2 : 1;
  for (int u = 0; u < vecs; ++u) {
    const int64_t off = 16 * u;
    if (masked) {
      SoftmaxVec<true>(s + off, kb, m + off, l + off, alpha + off, mask_base - off);
    } else {
      SoftmaxVec<false>(s + off, kb, m + off, l + off, alpha + off, 0);
    }
  }
}

BLOCKTUNE_FA_AVX512 void Bf16ToF32(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, vec::LoadBf16x16(in + i));
  for (; i < n; ++i) out[i] = BF16ToFloat(BF16{in[i]});
}

// In-register 16x16 transpose (r[i] lane j <-> r[j] lane i): 64 shuffles per 256 floats,
// ~4x cheaper than the scalar strided copy that took ~8% of a 512-token causal call.
BLOCKTUNE_FA_AVX512 inline void Transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + i + 4], 0x88);
      t[8 * h + i + 4] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + i + 4], 0xdd);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

BLOCKTUNE_FA_AVX512 inline __mmask16 FirstN(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

BLOCKTUNE_FA_AVX512 void PackQ(const float* q, int64_t ldq, int rows, int64_t head_dim, float scale, float* qt) {
  const __m512 sc = _mm512_set1_ps(scale);
  for (int c0 = 0; c0 < rows; c0 += 16) {
    const int nr = std::min(16, rows - c0);
    for (int64_t d0 = 0; d0 < head_dim; d0 += 16) {
      const int nd = static_cast<int>(std::min<int64_t>(16, head_dim - d0));
      const __mmask16 dm = FirstN(nd);
      __m512 r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        r[i] = i < nr ? _mm512_maskz_loadu_ps(dm, q + (c0 + i) * ldq + d0) : _mm512_setzero_ps();
      }
      Transpose16(r);
      for (int j = 0; j < nd; ++j) _mm512_store_ps(qt + (d0 + j) * kPanel + c0, _mm512_mul_ps(r[j], sc));
    }
  }
}

BLOCKTUNE_FA_AVX512 void StoreO(const float* ot, int cols, int64_t head_dim, const float* inv_l, float* o,
                                int64_t ldo) {
  for (int c0 = 0; c0 < cols; c0 += 16) {
    const int nc = std::min(16, cols - c0);
    for (int64_t d0 = 0; d0 < head_dim; d0 += 16) {
      const int nd = static_cast<int>(std::min<int64_t>(16, head_dim - d0));
      const __mmask16 dm = FirstN(nd);
      __m512 r[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) r[j] = j < nd ? _mm512_load_ps(ot + (d0 + j) * kPanel + c0) : _mm512_setzero_ps();
      Transpose16(r);
      for (int i = 0; i < nc; ++i) {
        _mm512_mask_storeu_ps(o + (c0 + i) * ldo + d0, dm, _mm512_mul_ps(r[i], _mm512_set1_ps(inv_l[c0 + i])));
      }
    }
  }
}

}  // namespace

const Ops& Ops::Avx512() {
  static const Ops kOps{"avx512", kPanel, &Scores, &Softmax, &Pv, &Bf16ToF32, &PackQ, &StoreO};
  return kOps;
}

}  // namespace blocktune::kernels::flash_attention_internal
