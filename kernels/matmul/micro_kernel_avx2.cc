// The AVX2+FMA micro-kernel: a 6x16 tile of C in 12 ymm accumulators (two 8-float vectors per
// row), for x86-64 CPUs without AVX-512. Only these functions carry the avx2 target attribute.
//
// Why 6x16: 12 accumulators + 2 B vectors + 1 broadcast fit in 16 ymm registers, and 12
// independent FMA chains cover the 4-5 cycle FMA latency on 2 ports (>= 10 needed).
#include "kernels/matmul/micro_kernel.h"

#include <utility>

#include "kernels/core/simd.h"  // <immintrin.h>

#define BLOCKTUNE_AVX2 __attribute__((target("avx2,fma")))

namespace blocktune::kernels::matmul_internal {
namespace {

constexpr int kTileRows = kAvx2TileRows;
constexpr int kTileCols = kAvx2TileCols;

// Lane i is enabled (sign bit set) iff i < cols.
BLOCKTUNE_AVX2 inline __m256i ColMask(int cols) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lanes);
}

template <int kRows, int kVecs, bool kARows>
BLOCKTUNE_AVX2 __attribute__((always_inline)) inline void KernelT(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                            int cols, bool accumulate) {
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_load_ps(b + v * 8);
    // B's micro-panel streams from L2 (see matmul.cc's loop order); one line per k step,
    // fetched 16 steps (~100 cycles) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(b + 16 * kTileCols), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(kARows ? a + r * lda : a + r);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += kARows ? 1 : kTileRows;
    b += kTileCols;
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

// Packed A (MicroKernelFn) and A read in place (MicroKernelRowsFn): one body, two entry points.
template <int kRows, int kVecs>
BLOCKTUNE_AVX2 void Kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols, bool accumulate) {
  KernelT<kRows, kVecs, false>(kc, a, 0, b, c, ldc, cols, accumulate);
}

template <int kRows, int kVecs>
BLOCKTUNE_AVX2 void KernelARows(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, int cols,
                                bool accumulate) {
  KernelT<kRows, kVecs, true>(kc, a, lda, b, c, ldc, cols, accumulate);
}

template <int kVecs, int... kRows>
constexpr void Fill(MicroKernelFn* out, MicroKernelRowsFn* out_rows, std::integer_sequence<int, kRows...>) {
  ((out[kRows] = &Kernel<kRows + 1, kVecs>), ...);
  ((out_rows[kRows] = &KernelARows<kRows + 1, kVecs>), ...);
}

MicroKernelSet MakeSet() {
  MicroKernelSet s{};
  s.name = "avx2";
  s.tile_rows = kTileRows;
  s.tile_cols = kTileCols;
  Fill<2>(s.kernels[0], s.kernels_a_rows[0], std::make_integer_sequence<int, kTileRows>());
  Fill<1>(s.kernels[1], s.kernels_a_rows[1], std::make_integer_sequence<int, kTileRows>());
  s.pack_a = &PackA<kTileRows>;
  return s;
}

}  // namespace

const MicroKernelSet& Avx2Kernels() {
  static const MicroKernelSet kSet = MakeSet();
  return kSet;
}

}  // namespace blocktune::kernels::matmul_internal
