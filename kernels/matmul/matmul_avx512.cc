// The AVX-512 micro-kernel: a 12x32 tile of C in 24 zmm accumulators (two 16-float vectors per
// row), one broadcast of A per row and two aligned loads of B per k step. Only these functions
// carry the avx512 target attribute, so the library still runs on any x86-64.
//
// Why 12x32: 24 accumulators + 2 B vectors + 1 broadcast fit the 32 zmm registers; 24 FMAs per
// 14 loads keeps both FMA ports busy (2 loads/cycle needed: 7 cycles of loads per 12 of FMA),
// and 12 rows keep block_m a multiple of the AVX2 (6) and portable (4) tile heights too.
#include "kernels/matmul/matmul_ops.h"

#include <utility>

#include "kernels/core/simd.h"  // <immintrin.h>

#define BLOCKTUNE_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace blocktune::kernels::matmul_internal {
namespace {

constexpr int kTileRows = kAvx512TileRows;
constexpr int kTileCols = kAvx512TileCols;
constexpr int kPrefetchSteps = 8;
constexpr int kBRowsPrefetchSteps = 16;

BLOCKTUNE_AVX512 inline __mmask16 ColMask(int cols) {
  return cols >= 16  ? static_cast<__mmask16>(0xffff)
         : cols <= 0 ? static_cast<__mmask16>(0)
                     : static_cast<__mmask16>((1u << cols) - 1);
}

// kARows: A read in place (row r at a + r * lda) instead of packed. kBRows: B read in place
// (micro-panel row p at b + p * ldb, lanes at or beyond `cols` read as zero) instead of packed;
// with kStoreB it is also written to b_pack as the packed micro-panel.
template <int kRows, int kVecs, bool kARows, bool kBRows, bool kStoreB>
BLOCKTUNE_AVX512 __attribute__((always_inline)) inline void KernelT(int64_t kc, const float* a, int64_t lda,
                                                                    const float* b, int64_t ldb, float* b_pack,
                                                                    float* c, int64_t ldc, int cols, bool accumulate) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  // Bring C's tile toward L1 while the k loop runs (its lines are needed only at the end).
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kVecs * 16 - 1), _MM_HINT_T0);
  }
  __mmask16 mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) mask[v] = ColMask(cols - 16 * v);
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[kVecs];
    if constexpr (kBRows) {
      // Masked loads cost what plain ones do and stop at C's right edge (no read past B's row).
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_maskz_loadu_ps(mask[v], b + v * 16);
      // Row-major B: each k step is a new row (16 KiB apart at n = 4096, a new page), which the
      // hardware prefetchers do not follow across pages; fetch the row segment (up to three
      // lines when unaligned) into L1 16 steps ahead, ~200-400 cycles of this loop, and into L2
      // 64 steps ahead (+2-12% at 16/32 x 4096 x 1024 and 64 x 1024 x 4096, alternated A/B).
      _mm_prefetch(reinterpret_cast<const char*>(b + kBRowsPrefetchSteps * ldb), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + kBRowsPrefetchSteps * ldb + kVecs * 16 - 1), _MM_HINT_T0);
      if constexpr (kVecs == 2) {
        _mm_prefetch(reinterpret_cast<const char*>(b + kBRowsPrefetchSteps * ldb + 16), _MM_HINT_T0);
      }
      _mm_prefetch(reinterpret_cast<const char*>(b + 4 * kBRowsPrefetchSteps * ldb), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(b + 4 * kBRowsPrefetchSteps * ldb + kVecs * 16 - 1), _MM_HINT_T1);
      if constexpr (kStoreB) {
        static_assert(kTileCols == 32);  // a half tile (kVecs 1) zeroes the panel's second vector
        _mm512_store_ps(b_pack, bv[0]);
        _mm512_store_ps(b_pack + 16, kVecs == 2 ? bv[kVecs - 1] : _mm512_setzero_ps());
        b_pack += kTileCols;
      }
      b += ldb;
    } else {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_load_ps(b + v * 16);
      // B's micro-panel streams from L2 (matmul.cc keeps A's micro-panel in L1 and walks B's
      // block), two lines per k step; fetching them 8 steps (~100 cycles) ahead measured +2-3% at
      // 2048^3 over the hardware prefetcher alone (A's panel, already in L1, needs none).
      _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * kTileCols), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * kTileCols + 16), _MM_HINT_T0);
      b += kTileCols;
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(kARows ? a[r * lda] : a[r]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += kARows ? 1 : kTileRows;
  }
#pragma GCC unroll 16
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

// Packed A (MicroKernelFn), A read in place (MicroKernelRowsFn), B read in place
// (MicroKernelBRowsFn): one body, three entry points.
template <int kRows, int kVecs>
BLOCKTUNE_AVX512 void Kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols,
                             bool accumulate) {
  KernelT<kRows, kVecs, false, false, false>(kc, a, 0, b, 0, nullptr, c, ldc, cols, accumulate);
}

template <int kRows, int kVecs>
BLOCKTUNE_AVX512 void KernelARows(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                  int cols, bool accumulate) {
  KernelT<kRows, kVecs, true, false, false>(kc, a, lda, b, 0, nullptr, c, ldc, cols, accumulate);
}

template <int kRows, int kVecs>
BLOCKTUNE_AVX512 void KernelBRows(int64_t kc, const float* a, const float* b, int64_t ldb, float* b_pack, float* c,
                                  int64_t ldc, int cols, bool accumulate) {
  if (b_pack != nullptr) {
    KernelT<kRows, kVecs, false, true, true>(kc, a, 0, b, ldb, b_pack, c, ldc, cols, accumulate);
  } else {
    KernelT<kRows, kVecs, false, true, false>(kc, a, 0, b, ldb, nullptr, c, ldc, cols, accumulate);
  }
}

template <int kVecs, int... kRows>
constexpr void Fill(Ops& s, int half, std::integer_sequence<int, kRows...>) {
  ((s.kernels[half][kRows] = &Kernel<kRows + 1, kVecs>), ...);
  ((s.kernels_a_rows[half][kRows] = &KernelARows<kRows + 1, kVecs>), ...);
  ((s.kernels_b_rows[half][kRows] = &KernelBRows<kRows + 1, kVecs>), ...);
}

Ops MakeSet() {
  Ops s{};
  s.name = "avx512";
  s.tile_rows = kTileRows;
  s.tile_cols = kTileCols;
  Fill<2>(s, 0, std::make_integer_sequence<int, kTileRows>());
  Fill<1>(s, 1, std::make_integer_sequence<int, kTileRows>());
  s.pack_a = &PackA<kTileRows>;
  return s;
}

}  // namespace

const Ops& Ops::Avx512() {
  static const Ops kSet = MakeSet();
  return kSet;
}

}  // namespace blocktune::kernels::matmul_internal
