// The AVX-512 work item of ragged_paged_attention: one (sequence, KV head, query block) with an
// online softmax over KV blocks of kv_pages_per_block pages, read straight out of the page pool
// (f32) or converted per block into a small scratch (bf16). Only these functions carry the avx512
// target attribute, so the library still runs on any x86-64. Two forms, by score rows
// (queries in the item x heads per KV head):
//
// Fewer than 16 rows (decode): dot-product tiles. A register tile of R score rows x T keys
// (R*T = 16 zmm accumulators) runs over head_dim with R + T loads per 16 FMAs and is reduced by
// one 16-to-1 transposing tree (45 shuffles/adds for 16 dot products instead of ~8 per dot product
// with _mm512_reduce_add_ps): at head_dim 128 that is 128 FMAs + 45 shuffles per tile, with no
// packing of K at all (packing K^T for a GEMM micro-kernel would cost more than the dot products
// when there are only 4 rows). P.V: R rows x C 16-float chunks of head_dim (R*C <= 16
// accumulators), one V load per chunk and one broadcast per row per key.
//
// 16 rows or more (prefill): the query-lanes form (see RunItemLanes): rows in the vector lanes,
// K and V elements broadcast, so there are no horizontal reductions and the softmax is vertical.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's AVX-512 headers build some results from _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use (GCC bug 105593); the values are fully defined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define RPA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::rpa_internal {
namespace {

// 64-byte aligned float buffer that only grows (the pool's workers are persistent).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(data_); }
  float* Get(int64_t floats) {
    if (floats > capacity_) {
      std::free(data_);
      const int64_t bytes = ((floats + 16) * 4 + 4095) / 4096 * 4096;
      data_ = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
      if (data_ == nullptr) std::abort();  // out of memory: no exceptions here
      capacity_ = bytes / 4 - 16;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

struct Scratch {
  Buffer q, s, o, stats, k, v, vpack;
  std::vector<const float*> k_rows, v_rows;
};
thread_local Scratch t_scratch;

// exp(x) for 16 lanes: x = n*ln2 + r, |r| <= ln2/2 (Cody-Waite split of ln2 so n*ln2_hi is
// exact), exp(r) by its degree-6 Taylor polynomial (truncation < 2e-7 relative), times 2^n by
// scalef. x is clamped to [-103, 88.7] so -inf gives 0 and nothing overflows. (Kept here rather
// than shared so this kernel does not depend on another header's overload set.)
RPA_AVX512 inline __m512 Exp(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-103.0f)), _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline float ExpScalar(float x) { return std::exp(std::fmin(std::fmax(x, -103.0f), 88.7f)); }

RPA_AVX512 inline __m512 LoadBf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

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
RPA_AVX512 __attribute__((noinline)) void ScoreTile(const float* q, int64_t ldq, const float* const* k, int64_t full_chunks, __mmask16 tail,
                          float* s, int64_t lds, int valid) {
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

// bf16 row -> f32 row (n floats) with zero padding to whole chunks.
RPA_AVX512 void ConvertRow(const uint16_t* src, int64_t n, float* dst) {
  int64_t d = 0;
  for (; d + 16 <= n; d += 16) _mm512_store_ps(dst + d, LoadBf16(src + d));
  if (d < n) {
    const __m256i h = _mm256_maskz_loadu_epi16(TailMask(n - d), src + d);
    _mm512_store_ps(dst + d, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
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
  const float alpha = ExpScalar(*m - m_new);  // m = -inf on the first block gives 0
  const __m512 mv = _mm512_set1_ps(m_new);
  __m512 sum = _mm512_setzero_ps();
  t = 0;
  for (; t + 16 <= n_valid; t += 16) {
    const __m512 p = Exp(_mm512_sub_ps(_mm512_loadu_ps(s + t), mv));
    sum = _mm512_add_ps(sum, p);
    _mm512_storeu_ps(s + t, p);
  }
  if (t < n_valid) {
    const __mmask16 mk = TailMask(n_valid - t);
    const __m512 p = _mm512_maskz_mov_ps(mk, Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + t), mv)));
    sum = _mm512_add_ps(sum, p);
    _mm512_mask_storeu_ps(s + t, TailMask(n - t), p);  // masked keys of this chunk become 0
    t += 16;
  }
  for (; t < n; ++t) s[t] = 0.0f;
  *l = *l * alpha + _mm512_reduce_add_ps(sum);
  *m = m_new;
  return alpha;
}


// --- The query-lanes path (many score rows: prefill) ------------------------------------------
// Score rows live in the lanes: qt[d][r] = scale * q_r[d] (packed once per item, ldr = rows
// rounded up to 16), s[t][r] the score of key t for row r, ot[d][r] the unnormalised output.
// Every product is a broadcast of one K (or V) element times a vector of 16 rows, so K and V are
// read in place with no transpose and no horizontal reduction, and the softmax max/exp/sum are
// vertical: ~16 FMAs per 10 loads in both products, vs ~45 shuffles per 128 FMAs of the
// dot-product tiles above. With fewer than 16 rows (decode) most lanes would idle, so those
// items keep the dot-product path.

// s[t][v*16 + lane] = sum_d k_t[d] * qt[d][v*16 + lane] for kT keys x kV row vectors.
template <int kT, int kV>
RPA_AVX512 __attribute__((noinline)) void ScoreLanes(const float* qt, int64_t ldr, const float* const* k, int64_t d_len, float* s) {
  __m512 acc[kT][kV];
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) acc[t][v] = _mm512_setzero_ps();
  }
  const float* kp[kT];
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) kp[t] = k[t];
  for (int64_t d = 0; d < d_len; ++d) {
    __m512 qv[kV];
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) qv[v] = _mm512_load_ps(qt + d * ldr + v * 16);
#pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) {
      const __m512 kb = _mm512_set1_ps(kp[t][d]);
#pragma GCC unroll 2
      for (int v = 0; v < kV; ++v) acc[t][v] = _mm512_fmadd_ps(kb, qv[v], acc[t][v]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) _mm512_store_ps(s + t * ldr + v * 16, acc[t][v]);
  }
}

// ot[d][rows] = alpha * ot[d][rows] + sum_t v_t[d] * p[t][rows] for kD features x kV row vectors.
// vp is this 8-feature slice of the block's V packed as [t][8], so one pass over the keys reads
// 32 contiguous bytes per key (reading the rows in place would touch a 64-byte line per key per
// slice and cycle the whole V block through L1 once per slice).
template <int kD, int kV>
RPA_AVX512 void PvLanes(const float* p, int64_t ldr, const float* vp, int n, float* ot, const __m512* alpha) {
  __m512 acc[kD][kV];
#pragma GCC unroll 8
  for (int j = 0; j < kD; ++j) {
#pragma GCC unroll 2
    for (int w = 0; w < kV; ++w) acc[j][w] = _mm512_mul_ps(alpha[w], _mm512_load_ps(ot + j * ldr + w * 16));
  }
  for (int t = 0; t < n; ++t) {
    __m512 pv[kV];
#pragma GCC unroll 2
    for (int w = 0; w < kV; ++w) pv[w] = _mm512_load_ps(p + t * ldr + w * 16);
    const float* vt = vp + t * 8;
#pragma GCC unroll 8
    for (int j = 0; j < kD; ++j) {
      const __m512 vb = _mm512_set1_ps(vt[j]);
#pragma GCC unroll 2
      for (int w = 0; w < kV; ++w) acc[j][w] = _mm512_fmadd_ps(vb, pv[w], acc[j][w]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kD; ++j) {
#pragma GCC unroll 2
    for (int w = 0; w < kV; ++w) _mm512_store_ps(ot + j * ldr + w * 16, acc[j][w]);
  }
}

using PvLanesFn = void (*)(const float*, int64_t, const float*, int, float*, const __m512*);

template <int kV>
PvLanesFn PickPvLanes(int64_t d_count) {
  switch (d_count) {
    case 1: return &PvLanes<1, kV>;
    case 2: return &PvLanes<2, kV>;
    case 3: return &PvLanes<3, kV>;
    case 4: return &PvLanes<4, kV>;
    case 5: return &PvLanes<5, kV>;
    case 6: return &PvLanes<6, kV>;
    case 7: return &PvLanes<7, kV>;
    default: return &PvLanes<8, kV>;
  }
}

// Items with at least this many score rows take the query-lanes path.
constexpr int64_t kLanesMinRows = 16;

RPA_AVX512 void RunItemLanes(const Context& ctx, const WorkItem& item) {
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d_len = sh.head_dim;
  const int64_t dp = (d_len + 15) / 16 * 16;
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t s_idx = item.seq;
  const int64_t g = item.kv_head;
  const int64_t q_off = in.cu_q_lens[s_idx];
  const int64_t q_len = in.cu_q_lens[s_idx + 1] - q_off;
  const int64_t first_pos = in.kv_lens[s_idx] - q_len;
  const int64_t rows = (item.q_end - item.q_begin) * group;
  const int64_t ldr = (rows + 15) / 16 * 16;  // whole 16-row vectors (tiles take two, or one at the end)
  const int64_t row_vecs = ldr / 16;
  const int64_t kv_end = first_pos + item.q_end;
  const int64_t block_tokens = std::min(ctx.bs.kv_pages_per_block * sh.page_size, std::max<int64_t>(kv_end, 1));
  const int64_t tok_pad = (block_tokens + 15) / 16 * 16;
  const int32_t* pages = in.page_indices + s_idx * sh.pages_per_seq;

  Scratch& sc = t_scratch;
  float* qt = sc.q.Get(d_len * ldr);
  float* s = sc.s.Get(tok_pad * ldr);
  float* ot = sc.o.Get(d_len * ldr);
  float* stats = sc.stats.Get(4 * ldr);
  float* m = stats;
  float* l = stats + ldr;
  float* alpha = stats + 2 * ldr;
  int32_t* n_valid0 = reinterpret_cast<int32_t*>(stats + 3 * ldr);  // keys row r sees (from position 0)
  if (static_cast<int64_t>(sc.k_rows.size()) < tok_pad + 16) {
    sc.k_rows.resize(static_cast<size_t>(tok_pad + 16));
    sc.v_rows.resize(static_cast<size_t>(tok_pad + 16));
  }
  float* kbuf = bf16 ? sc.k.Get(block_tokens * dp) : nullptr;
  const int64_t d_slices = (d_len + 7) / 8;
  float* vpack = sc.vpack.Get(d_slices * tok_pad * 8);
  float* vrow = sc.v.Get(dp);  // one bf16 V row widened

  const float scale = 1.0f / std::sqrt(static_cast<float>(d_len));
  std::fill(qt, qt + d_len * ldr, 0.0f);
  std::fill(ot, ot + d_len * ldr, 0.0f);
  for (int64_t r = 0; r < ldr; ++r) {
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
    // Padding lanes (r >= rows) see every key: their Q is zero, so they stay finite and unused.
    n_valid0[r] = static_cast<int32_t>(r < rows ? first_pos + item.q_begin + r / group + 1 : kv_end);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    if (bf16) {
      const uint16_t* qh = static_cast<const uint16_t*>(in.q) + src;
      for (int64_t d = 0; d < d_len; ++d) qt[d * ldr + r] = scale * BF16ToFloat(BF16{qh[d]});
    } else {
      const float* qf = static_cast<const float*>(in.q) + src;
      for (int64_t d = 0; d < d_len; ++d) qt[d * ldr + r] = scale * qf[d];
    }
  }

  const float* const kf = static_cast<const float*>(in.k_pages);
  const float* const vf = static_cast<const float*>(in.v_pages);
  const uint16_t* const kh = static_cast<const uint16_t*>(in.k_pages);
  const uint16_t* const vh = static_cast<const uint16_t*>(in.v_pages);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());

  for (int64_t kv0 = 0; kv0 < kv_end; kv0 += block_tokens) {
    const int64_t n = std::min(block_tokens, kv_end - kv0);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t pos = kv0 + t;
      const int64_t page = pages[pos / sh.page_size];
      const int64_t off = ((page * sh.page_size + pos % sh.page_size) * sh.kv_heads + g) * d_len;
      const float* v_src;
      if (bf16) {
        ConvertRow(kh + off, d_len, kbuf + t * dp);
        ConvertRow(vh + off, d_len, vrow);
        sc.k_rows[t] = kbuf + t * dp;
        v_src = vrow;
      } else {
        sc.k_rows[t] = kf + off;
        v_src = vf + off;
      }
      // V slices [d/8][t][8]; the last slice zero-padded past head_dim.
      int64_t j = 0;
      for (; j + 8 <= d_len; j += 8) {
        _mm256_store_ps(vpack + (j / 8 * tok_pad + t) * 8, _mm256_loadu_ps(v_src + j));
      }
      if (j < d_len) {
        _mm256_store_ps(vpack + (j / 8 * tok_pad + t) * 8,
                        _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << (d_len - j)) - 1), v_src + j));
      }
    }
    for (int64_t t = n; t < n + 16; ++t) sc.k_rows[t] = sc.k_rows[n - 1];
    const float* const* kr = sc.k_rows.data();

    // Scores for keys [0, n) (tiles past n compute padding rows of s that are never read).
    for (int64_t v0 = 0; v0 < row_vecs; v0 += 2) {
      if (row_vecs - v0 >= 2) {
        for (int64_t t0 = 0; t0 < n; t0 += 8) ScoreLanes<8, 2>(qt + v0 * 16, ldr, kr + t0, d_len, s + t0 * ldr + v0 * 16);
      } else {
        for (int64_t t0 = 0; t0 < n; t0 += 16) ScoreLanes<16, 1>(qt + v0 * 16, ldr, kr + t0, d_len, s + t0 * ldr + v0 * 16);
      }
    }

    // Online softmax down the key axis, 16 rows per vector; key t of row r is live iff
    // kv0 + t < n_valid0[r]. Every row has a live key in the first block (position 0), so m is
    // finite from then on; a row with no live key in a later block gets alpha 1 and p 0.
    int64_t n_pv = 0;
    for (int64_t v0 = 0; v0 < row_vecs; ++v0) {
      const __m512i nv = _mm512_sub_epi32(_mm512_loadu_si512(n_valid0 + v0 * 16),
                                          _mm512_set1_epi32(static_cast<int32_t>(kv0)));
      n_pv = std::max<int64_t>(n_pv, std::min<int64_t>(n, _mm512_reduce_max_epi32(nv)));
      __m512 mx = neg_inf;
      for (int64_t t = 0; t < n; ++t) {
        const __mmask16 live = _mm512_cmpgt_epi32_mask(nv, _mm512_set1_epi32(static_cast<int32_t>(t)));
        mx = _mm512_mask_max_ps(mx, live, mx, _mm512_load_ps(s + t * ldr + v0 * 16));
      }
      const __m512 m_old = _mm512_load_ps(m + v0 * 16);
      const __m512 m_new = _mm512_max_ps(m_old, mx);
      const __m512 a = Exp(_mm512_sub_ps(m_old, m_new));  // m_old = -inf (first block) gives 0
      __m512 sum = _mm512_setzero_ps();
      for (int64_t t = 0; t < n; ++t) {
        const __mmask16 live = _mm512_cmpgt_epi32_mask(nv, _mm512_set1_epi32(static_cast<int32_t>(t)));
        float* st = s + t * ldr + v0 * 16;
        const __m512 p = _mm512_maskz_mov_ps(live, Exp(_mm512_sub_ps(_mm512_load_ps(st), m_new)));
        sum = _mm512_add_ps(sum, p);
        _mm512_store_ps(st, p);
      }
      _mm512_store_ps(l + v0 * 16, _mm512_fmadd_ps(_mm512_load_ps(l + v0 * 16), a, sum));
      _mm512_store_ps(m + v0 * 16, m_new);
      _mm512_store_ps(alpha + v0 * 16, a);
    }

    // P.V over the keys any row still needs, 8 features x 2 row vectors per tile.
    const int nn = static_cast<int>(n_pv);
    for (int64_t v0 = 0; v0 < row_vecs; v0 += 2) {
      const __m512 al[2] = {_mm512_load_ps(alpha + v0 * 16),
                            row_vecs - v0 >= 2 ? _mm512_load_ps(alpha + v0 * 16 + 16) : _mm512_setzero_ps()};
      for (int64_t d0 = 0; d0 < d_len; d0 += 8) {
        const int64_t dc = std::min<int64_t>(8, d_len - d0);
        const float* vp = vpack + d0 / 8 * tok_pad * 8;
        if (row_vecs - v0 >= 2) {
          PickPvLanes<2>(dc)(s + v0 * 16, ldr, vp, nn, ot + d0 * ldr + v0 * 16, al);
        } else {
          PickPvLanes<1>(dc)(s + v0 * 16, ldr, vp, nn, ot + d0 * ldr + v0 * 16, al);
        }
      }
    }
  }

  // Normalise and transpose back into the output rows.
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = ctx.out + ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    const float inv = 1.0f / l[r];
    for (int64_t d = 0; d < d_len; ++d) dst[d] = ot[d * ldr + r] * inv;
  }
}
}  // namespace

RPA_AVX512 void RunItemAvx512(const Context& ctx, const WorkItem& item) {
  if ((item.q_end - item.q_begin) * (ctx.shape.heads / ctx.shape.kv_heads) >= kLanesMinRows) {
    RunItemLanes(ctx, item);
    return;
  }
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d_len = sh.head_dim;
  const int64_t chunks = (d_len + 15) / 16;
  const int64_t full_chunks = d_len / 16;
  const __mmask16 tail = TailMask(d_len - full_chunks * 16);
  const int64_t dp = chunks * 16;  // padded row length of the scratch rows
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t s_idx = item.seq;
  const int64_t g = item.kv_head;
  const int64_t q_off = in.cu_q_lens[s_idx];
  const int64_t q_len = in.cu_q_lens[s_idx + 1] - q_off;
  const int64_t kv_len = in.kv_lens[s_idx];
  const int64_t first_pos = kv_len - q_len;  // kv position of the sequence's first query
  const int64_t nq = item.q_end - item.q_begin;
  const int64_t rows = nq * group;
  const int64_t kv_end = first_pos + item.q_end;  // keys any query of this item sees
  const int64_t block_tokens = std::min(ctx.bs.kv_pages_per_block * sh.page_size,
                                        std::max<int64_t>(kv_end, 1));
  const int64_t lds = (block_tokens + 15) / 16 * 16;
  const int32_t* pages = in.page_indices + s_idx * sh.pages_per_seq;

  Scratch& sc = t_scratch;
  float* q = sc.q.Get(rows * dp);
  float* s = sc.s.Get(rows * lds);
  float* o = sc.o.Get(rows * dp);
  float* stats = sc.stats.Get(3 * rows);
  float* m = stats;
  float* l = stats + rows;
  float* alpha = stats + 2 * rows;
  if (static_cast<int64_t>(sc.k_rows.size()) < lds + 16) {
    sc.k_rows.resize(static_cast<size_t>(lds + 16));
    sc.v_rows.resize(static_cast<size_t>(lds + 16));
  }
  float* kbuf = bf16 ? sc.k.Get(block_tokens * dp) : nullptr;
  float* vbuf = bf16 ? sc.v.Get(block_tokens * dp) : nullptr;

  // Q rows (query-major: row r is query r / group, head g * group + r % group), scaled by
  // 1/sqrt(head_dim) once here instead of per score, zero-padded to whole chunks.
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_len));
  const __m512 scale_v = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t token = q_off + item.q_begin + r / group;
    const int64_t head = g * group + r % group;
    const int64_t src = (token * sh.heads + head) * d_len;
    float* dst = q + r * dp;
    if (bf16) {
      ConvertRow(static_cast<const uint16_t*>(in.q) + src, d_len, dst);
    } else {
      const float* qs = static_cast<const float*>(in.q) + src;
      for (int64_t c = 0; c < full_chunks; ++c) _mm512_store_ps(dst + c * 16, _mm512_loadu_ps(qs + c * 16));
      if (tail != 0) _mm512_store_ps(dst + full_chunks * 16, _mm512_maskz_loadu_ps(tail, qs + full_chunks * 16));
    }
    for (int64_t c = 0; c < chunks; ++c) _mm512_store_ps(dst + c * 16, _mm512_mul_ps(scale_v, _mm512_load_ps(dst + c * 16)));
    for (int64_t c = 0; c < chunks; ++c) _mm512_store_ps(o + r * dp + c * 16, _mm512_setzero_ps());
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }

  __mmask16 masks[64];
  for (int64_t c = 0; c < chunks && c < 64; ++c) masks[c] = c == chunks - 1 && tail != 0 ? tail : 0xffff;

  const float* const kf = static_cast<const float*>(in.k_pages);
  const float* const vf = static_cast<const float*>(in.v_pages);
  const uint16_t* const kh = static_cast<const uint16_t*>(in.k_pages);
  const uint16_t* const vh = static_cast<const uint16_t*>(in.v_pages);

  for (int64_t kv0 = 0; kv0 < kv_end; kv0 += block_tokens) {
    const int64_t n = std::min(block_tokens, kv_end - kv0);
    // Row pointers of this block's keys and values (pages are scattered; tokens within a page
    // are kv_heads * head_dim floats apart).
    for (int64_t t = 0; t < n; ++t) {
      const int64_t pos = kv0 + t;
      const int64_t page = pages[pos / sh.page_size];
      const int64_t off = ((page * sh.page_size + pos % sh.page_size) * sh.kv_heads + g) * d_len;
      if (bf16) {
        ConvertRow(kh + off, d_len, kbuf + t * dp);
        ConvertRow(vh + off, d_len, vbuf + t * dp);
        sc.k_rows[t] = kbuf + t * dp;
        sc.v_rows[t] = vbuf + t * dp;
      } else {
        sc.k_rows[t] = kf + off;
        sc.v_rows[t] = vf + off;
      }
    }
    // Pad the pointer lists so a partial key tile reads valid memory (results are dropped).
    for (int64_t t = n; t < n + 16; ++t) sc.k_rows[t] = sc.k_rows[n - 1];
    const float* const* kr = sc.k_rows.data();

    // Scores. Rows of a query whose causal limit ends inside this block still get all n
    // scores; the softmax masks them.
    int64_t r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) {
      for (int64_t t0 = 0; t0 < n; t0 += 4) {
        ScoreTile<4, 4>(q + r0 * dp, dp, kr + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                        static_cast<int>(std::min<int64_t>(4, n - t0)));
      }
    }
    for (; r0 + 2 <= rows; r0 += 2) {
      for (int64_t t0 = 0; t0 < n; t0 += 8) {
        ScoreTile<2, 8>(q + r0 * dp, dp, kr + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                        static_cast<int>(std::min<int64_t>(8, n - t0)));
      }
    }
    for (; r0 < rows; ++r0) {
      for (int64_t t0 = 0; t0 < n; t0 += 16) {
        ScoreTile<1, 16>(q + r0 * dp, dp, kr + t0, full_chunks, tail, s + r0 * lds + t0, lds,
                         static_cast<int>(std::min<int64_t>(16, n - t0)));
      }
    }

    // Online softmax; row r sees keys up to position first_pos + q_begin + r / group.
    int64_t n_pv = 0;  // keys any row still needs in P.V
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n_valid = std::min(n, first_pos + item.q_begin + r / group - kv0 + 1);
      alpha[r] = SoftmaxRow(s + r * lds, n, n_valid, m + r, l + r);
      n_pv = std::max(n_pv, n_valid);
    }

    // P.V into the running output rows.
    const float* const* vr = sc.v_rows.data();
    const int nn = static_cast<int>(n_pv);
    r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) {
      for (int64_t c0 = 0; c0 < chunks; c0 += 4) {
        const int64_t nc = std::min<int64_t>(4, chunks - c0);
        PickPv<4>(static_cast<int>(nc))(s + r0 * lds, lds, vr, nn, o + r0 * dp, dp, alpha + r0, c0, masks + c0);
      }
    }
    for (; r0 + 2 <= rows; r0 += 2) {
      for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
        const int64_t nc = std::min<int64_t>(8, chunks - c0);
        PickPv<2>(static_cast<int>(nc))(s + r0 * lds, lds, vr, nn, o + r0 * dp, dp, alpha + r0, c0, masks + c0);
      }
    }
    for (; r0 < rows; ++r0) {
      for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
        const int64_t nc = std::min<int64_t>(8, chunks - c0);
        PickPv<1>(static_cast<int>(nc))(s + r0 * lds, lds, vr, nn, o + r0 * dp, dp, alpha + r0, c0, masks + c0);
      }
    }
  }

  // Normalise into the output rows.
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t token = q_off + item.q_begin + r / group;
    const int64_t head = g * group + r % group;
    float* dst = ctx.out + (token * sh.heads + head) * d_len;
    const __m512 inv = _mm512_set1_ps(1.0f / l[r]);
    for (int64_t c = 0; c < chunks; ++c) {
      _mm512_mask_storeu_ps(dst + c * 16, masks[c], _mm512_mul_ps(inv, _mm512_load_ps(o + r * dp + c * 16)));
    }
  }
}

}  // namespace blocktune::kernels::rpa_internal

#else  // not x86-64: never selected (the driver only picks avx512 on an avx512 host)

namespace blocktune::kernels::rpa_internal {
void RunItemAvx512(const Context& ctx, const WorkItem& item) { RunItemPortable(ctx, item); }
}  // namespace blocktune::kernels::rpa_internal

#endif
