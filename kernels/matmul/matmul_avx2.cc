// The AVX2+FMA micro-kernel: a 6x16 tile of C in 12 ymm accumulators (two 8-float vectors per
// row), for x86-64 CPUs without AVX-512. Only these functions carry the avx2 target attribute.
//
// Why 6x16: 12 accumulators + 2 B vectors + 1 broadcast fit in 16 ymm registers, and 12
// independent FMA chains cover the 4-5 cycle FMA latency on 2 ports (>= 10 needed).
#include "kernels/matmul/matmul_ops.h"

#include <utility>

#include "kernels/core/simd.h"  // <immintrin.h>

#define BLOCKTUNE_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::matmul_internal {
namespace {

constexpr int kTileRows = kAvx2TileRows;
constexpr int kTileCols = kAvx2TileCols;
constexpr int kBRowsPrefetchSteps = 16;

// Lane i is enabled (sign bit set) iff i < cols.
BLOCKTUNE_AVX2 inline __m256i ColMask(int cols) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lanes);
}

// kARows: A read in place (row r at a + r * lda) instead of packed. kBRows: B read in place
// (micro-panel row p at b + p * ldb) instead of packed, with masked loads when kMaskB (lanes at
// or beyond `cols` read as zero: C's right edge); with kStoreB it is also written to b_pack as
// the packed micro-panel.
template <int kRows, int kVecs, bool kARows, bool kBRows, bool kStoreB, bool kMaskB>
BLOCKTUNE_AVX2 __attribute__((always_inline)) inline void KernelT(int64_t kc, const float* a, int64_t lda,
                                                                  const float* b, int64_t ldb, float* b_pack, float* c,
                                                                  int64_t ldc, int cols, bool accumulate) {
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  // Bring C's tile toward L1 while the k loop runs (its lines are needed only at the end).
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kVecs * 8 - 1), _MM_HINT_T0);
  }
  __m256i b_mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) b_mask[v] = ColMask(cols - 8 * v);
    // Unrolled 4 steps: the loop's counter, pointer bumps and branch are then paid once per 48
    // FMAs instead of 12 (1024^3 .. 2048^3 at 1 thread +1-10% in one interleaved A/B, within the
    // noise at 2 threads).
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[kVecs];
    if constexpr (kBRows) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        bv[v] = kMaskB ? _mm256_maskload_ps(b + v * 8, b_mask[v]) : _mm256_loadu_ps(b + v * 8);
      }
      // Row-major B: each k step is a new row (16 KiB apart at n = 4096, a new page), which the
      // hardware prefetchers do not follow across pages. Fetch the row segment into L1 16 steps
      // ahead (~100-200 cycles of this loop), and the same rows of the next micro-panel (the
      // next 64 bytes of each row) into L2 one whole panel ahead: a panel's sweep (kc steps,
      // ~1500 cycles at kc 256) hides a DRAM trip with room to spare, and unlike a fixed
      // distance down this panel it also covers the next panel's first rows. Side by side
      // against the previous 64-steps-down prefetch (Zen 4, AVX2, 3 interleaved runs):
      // 32 x 4096 x 1024 at 1 thread 0.89x -> 0.96x OpenBLAS, 64 x 1024 x 4096 0.95x -> 0.97x.
      _mm_prefetch(reinterpret_cast<const char*>(b + kBRowsPrefetchSteps * ldb), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + kBRowsPrefetchSteps * ldb + kVecs * 8 - 1), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + kTileCols), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(b + 2 * kTileCols - 1), _MM_HINT_T1);
      if constexpr (kStoreB) {
        static_assert(kTileCols == 16);  // a half tile (kVecs 1) zeroes the panel's second vector
        _mm256_store_ps(b_pack, bv[0]);
        _mm256_store_ps(b_pack + 8, kVecs == 2 ? bv[kVecs - 1] : _mm256_setzero_ps());
        b_pack += kTileCols;
      }
      b += ldb;
    } else {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_load_ps(b + v * 8);
      // B's micro-panel streams from L2 (see matmul.cc's loop order); one line per k step,
      // fetched 16 steps (~100 cycles) ahead.
      _mm_prefetch(reinterpret_cast<const char*>(b + 16 * kTileCols), _MM_HINT_T0);
      b += kTileCols;
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(kARows ? a + r * lda : a + r);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += kARows ? 1 : kTileRows;
  }
  // Whole tiles store with plain moves: VMASKMOVPS is microcoded on AMD Zen (a masked store
  // costs ~10x a plain one there), and 12 of them per tile were a measurable share of a
  // 256-deep tile. Only the right edge of C pays for masks.
  if (cols >= kVecs * 8) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      float* cr = c + r * ldc;
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        __m256 x = acc[r][v];
        if (accumulate) x = _mm256_add_ps(x, _mm256_loadu_ps(cr + 8 * v));
        _mm256_storeu_ps(cr + 8 * v, x);
      }
    }
    return;
  }
  __m256i mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) mask[v] = ColMask(cols - 8 * v);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m256 x = acc[r][v];
      if (accumulate) x = _mm256_add_ps(x, _mm256_maskload_ps(cr + 8 * v, mask[v]));
      _mm256_maskstore_ps(cr + 8 * v, mask[v], x);
    }
  }
}

// Packed A (MicroKernelFn), A read in place (MicroKernelRowsFn), B read in place
// (MicroKernelBRowsFn): one body, three entry points.
template <int kRows, int kVecs>
BLOCKTUNE_AVX2 void Kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols,
                           bool accumulate) {
  KernelT<kRows, kVecs, false, false, false, false>(kc, a, 0, b, 0, nullptr, c, ldc, cols, accumulate);
}

template <int kRows, int kVecs>
BLOCKTUNE_AVX2 void KernelARows(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                int cols, bool accumulate) {
  KernelT<kRows, kVecs, true, false, false, false>(kc, a, lda, b, 0, nullptr, c, ldc, cols, accumulate);
}

// VMASKMOVPS loads are cheap, but a plain load is cheaper still: only C's right edge masks.
template <int kRows, int kVecs>
BLOCKTUNE_AVX2 void KernelBRows(int64_t kc, const float* a, const float* b, int64_t ldb, float* b_pack, float* c,
                                int64_t ldc, int cols, bool accumulate) {
  const bool full = cols >= kVecs * 8;
  if (b_pack != nullptr) {
    if (full) {
      KernelT<kRows, kVecs, false, true, true, false>(kc, a, 0, b, ldb, b_pack, c, ldc, cols, accumulate);
    } else {
      KernelT<kRows, kVecs, false, true, true, true>(kc, a, 0, b, ldb, b_pack, c, ldc, cols, accumulate);
    }
  } else if (full) {
    KernelT<kRows, kVecs, false, true, false, false>(kc, a, 0, b, ldb, nullptr, c, ldc, cols, accumulate);
  } else {
    KernelT<kRows, kVecs, false, true, false, true>(kc, a, 0, b, ldb, nullptr, c, ldc, cols, accumulate);
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
  s.name = "avx2";
  s.tile_rows = kTileRows;
  s.tile_cols = kTileCols;
  Fill<2>(s, 0, std::make_integer_sequence<int, kTileRows>());
  Fill<1>(s, 1, std::make_integer_sequence<int, kTileRows>());
  s.pack_a = &PackA<kTileRows>;
  return s;
}

}  // namespace

const Ops& Ops::Avx2() {
  static const Ops kSet = MakeSet();
  return kSet;
}

}  // namespace blocktune::kernels::matmul_internal
