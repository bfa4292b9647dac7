// The AVX2+FMA inner loops of flash_attention: a panel is 16 queries (two ymm per row), tiles
// are 6 rows x 16 queries in 12 accumulators (+ 2 panel vectors + 1 broadcast = 15 of the 16
// ymm registers). Same data layout and algorithm as the AVX-512 file; causal masks are lane
// compares against a float iota because AVX2 has no mask registers.
#include "kernels/flash_attention/flash_attention.h"

#include "kernels/core/simd.h"  // <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention_ops.h"

#define BLOCKTUNE_FA_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::flash_attention_internal {
namespace {

constexpr int kPanel = kAvx2Panel;
constexpr int kTileRows = 6;

using TileFn = void (*)(const float* x, int64_t ldx, const float* panel, int64_t steps, float* out, const float* alpha);

template <int kRows, int kVecs>
BLOCKTUNE_FA_AVX2 void ScoreTile(const float* k, int64_t ldk, const float* qt, int64_t head_dim, float* out,
                                 const float*) {
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < head_dim; ++d) {
    __m256 qv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) qv[v] = _mm256_load_ps(qt + d * kPanel + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 kv = _mm256_broadcast_ss(k + r * ldk + d);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(kv, qv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm256_store_ps(out + r * kPanel + 8 * v, acc[r][v]);
  }
}

template <int kRows, int kVecs>
BLOCKTUNE_FA_AVX2 void PvTile(const float* v, int64_t ldv, const float* p, int64_t kb, float* ot, const float* alpha) {
  __m256 acc[kRows][kVecs];
  __m256 al[kVecs];
#pragma GCC unroll 2
  for (int u = 0; u < kVecs; ++u) al[u] = _mm256_load_ps(alpha + 8 * u);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) acc[r][u] = _mm256_mul_ps(al[u], _mm256_load_ps(ot + r * kPanel + 8 * u));
  }
  for (int64_t j = 0; j < kb; ++j) {
    __m256 pv[kVecs];
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) pv[u] = _mm256_load_ps(p + j * kPanel + 8 * u);
    const float* vr = v + j * ldv;
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 b = _mm256_broadcast_ss(vr + r);
#pragma GCC unroll 2
      for (int u = 0; u < kVecs; ++u) acc[r][u] = _mm256_fmadd_ps(b, pv[u], acc[r][u]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < kVecs; ++u) _mm256_store_ps(ot + r * kPanel + 8 * u, acc[r][u]);
  }
}

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
  const TileFn* fns = ScoreTable().fn[cols > 8 ? 1 : 0];
  for (int64_t j0 = 0; j0 < kb; j0 += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, kb - j0));
    fns[rows - 1](k + j0 * ldk, ldk, qt, head_dim, s + j0 * kPanel, nullptr);
  }
}

void Pv(const float* v, int64_t ldv, const float* p, int64_t kb, int cols, int64_t head_dim, float* ot,
        const float* alpha) {
  const TileFn* fns = PvTable().fn[cols > 8 ? 1 : 0];
  for (int64_t d0 = 0; d0 < head_dim; d0 += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, head_dim - d0));
    fns[rows - 1](v + d0, ldv, p, kb, ot + d0 * kPanel, alpha);
  }
}

template <bool kMasked>
BLOCKTUNE_FA_AVX2 void SoftmaxVec(float* s, int64_t kb, float* m, float* l, float* alpha, int64_t mask_base) {
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 iota = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 m_old = _mm256_load_ps(m);
  __m256 mx0 = m_old, mx1 = neg_inf;
  int64_t j = 0;
  if constexpr (kMasked) {
    for (; j < kb; ++j) {
      // Lane c is masked iff c < j + mask_base; the threshold is clamped into [-1, 9] so the
      // float compare stays exact.
      const float t = static_cast<float>(std::clamp<int64_t>(j + mask_base, -1, 9));
      __m256 x = _mm256_load_ps(s + j * kPanel);
      x = _mm256_blendv_ps(x, neg_inf, _mm256_cmp_ps(iota, _mm256_set1_ps(t), _CMP_LT_OQ));
      _mm256_store_ps(s + j * kPanel, x);
      mx0 = _mm256_max_ps(mx0, x);
    }
  } else {
    for (; j + 2 <= kb; j += 2) {
      mx0 = _mm256_max_ps(mx0, _mm256_load_ps(s + j * kPanel));
      mx1 = _mm256_max_ps(mx1, _mm256_load_ps(s + (j + 1) * kPanel));
    }
    for (; j < kb; ++j) mx0 = _mm256_max_ps(mx0, _mm256_load_ps(s + j * kPanel));
  }
  const __m256 m_new = _mm256_max_ps(mx0, mx1);
  const __m256 m_safe = _mm256_blendv_ps(m_new, zero, _mm256_cmp_ps(m_new, neg_inf, _CMP_EQ_OQ));
  const __m256 a = _mm256_and_ps(_mm256_cmp_ps(m_old, neg_inf, _CMP_NEQ_OQ), vec::Exp(_mm256_sub_ps(m_old, m_safe)));
  __m256 sum0 = zero, sum1 = zero;
  j = 0;
  for (; j + 2 <= kb; j += 2) {
    const __m256 x0 = _mm256_load_ps(s + j * kPanel);
    const __m256 x1 = _mm256_load_ps(s + (j + 1) * kPanel);
    __m256 p0 = vec::Exp(_mm256_sub_ps(x0, m_safe));
    __m256 p1 = vec::Exp(_mm256_sub_ps(x1, m_safe));
    if constexpr (kMasked) {
      p0 = _mm256_and_ps(_mm256_cmp_ps(x0, neg_inf, _CMP_NEQ_OQ), p0);
      p1 = _mm256_and_ps(_mm256_cmp_ps(x1, neg_inf, _CMP_NEQ_OQ), p1);
    }
    _mm256_store_ps(s + j * kPanel, p0);
    _mm256_store_ps(s + (j + 1) * kPanel, p1);
    sum0 = _mm256_add_ps(sum0, p0);
    sum1 = _mm256_add_ps(sum1, p1);
  }
  for (; j < kb; ++j) {
    const __m256 x = _mm256_load_ps(s + j * kPanel);
    __m256 p = vec::Exp(_mm256_sub_ps(x, m_safe));
    if constexpr (kMasked) p = _mm256_and_ps(_mm256_cmp_ps(x, neg_inf, _CMP_NEQ_OQ), p);
    _mm256_store_ps(s + j * kPanel, p);
    sum0 = _mm256_add_ps(sum0, p);
  }
  _mm256_store_ps(l, _mm256_fmadd_ps(_mm256_load_ps(l), a, _mm256_add_ps(sum0, sum1)));
  _mm256_store_ps(m, m_new);
  _mm256_store_ps(alpha, a);
}

void Softmax(float* s, int64_t kb, int cols, float* m, float* l, float* alpha, bool masked, int64_t mask_base) {
  const int vecs = cols > 8 ? 2 : 1;
  for (int u = 0; u < vecs; ++u) {
    const int64_t off = 8 * u;
    if (masked) {
      SoftmaxVec<true>(s + off, kb, m + off, l + off, alpha + off, mask_base - off);
    } else {
      SoftmaxVec<false>(s + off, kb, m + off, l + off, alpha + off, 0);
    }
  }
}

BLOCKTUNE_FA_AVX2 void Bf16ToF32(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, vec::LoadBf16x8(in + i));
  for (; i < n; ++i) out[i] = BF16ToFloat(BF16{in[i]});
}

}  // namespace

const Ops& Ops::Avx2() {
  static const Ops kOps{"avx2", kPanel, &Scores, &Softmax, &Pv, &Bf16ToF32, &PackQPanel16, &StoreOPanel16};
  return kOps;
}

}  // namespace blocktune::kernels::flash_attention_internal
