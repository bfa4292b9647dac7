// Internal to kernels/matmul: the table of micro-kernels and packing routines one ISA provides,
// so the blocking driver in matmul.cc is written once and each ISA file (compiled with its own
// target attributes) only supplies the innermost loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include "kernels/core/simd.h"  // <immintrin.h>
#endif

namespace blocktune::kernels::matmul_internal {

// Largest micro-tile row count of any ISA (sizes the function tables).
inline constexpr int kMaxTileRows = 16;

// Each ISA's micro-tile (rows x cols; the reasons are in its matmul_<isa>.cc). Here as
// well as in the kernel sets because Validate checks a config for any ISA on any host (an
// avx512 row on an AVX2 or aarch64 machine), and the x86 files are only compiled on x86-64.
inline constexpr int kAvx512TileRows = 12;
inline constexpr int kAvx512TileCols = 32;
inline constexpr int kAvx2TileRows = 6;
inline constexpr int kAvx2TileCols = 16;
inline constexpr int kPortableTileRows = 4;
inline constexpr int kPortableTileCols = 16;

// C[rows x cols] (=|+=) Apanel * Bpanel over kc. `a` is a packed micro-panel (kc steps of
// `tile_rows` floats, rows beyond `rows` unread), `b` a packed micro-panel (kc steps of
// `tile_cols` floats, 64-byte aligned, zero beyond `cols`). accumulate=false overwrites C.
using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols,
                               bool accumulate);

// The same product with A read in place from row-major memory (row r at a + r * lda, k
// contiguous) instead of from a packed micro-panel: for problems where each row of A is used by
// one micro-tile column sweep only (n at most 64), packing A would copy it to read it once.
using MicroKernelRowsFn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                   int cols, bool accumulate);

// The product with A packed and B read from row-major memory (row p of the micro-panel at
// b + p * ldb, `cols` valid floats, the rest read as zeros); when b_pack is not null the kernel
// also writes the B it loaded there as the packed micro-panel (kc steps of tile_cols floats,
// zero beyond `cols`). Pack-and-compute: for skinny m the first row tile's sweep packs B as it
// goes, so B is streamed once instead of packed in one pass and read back in another; with one
// row tile (b_pack null) B is read in place and never packed.
using MicroKernelBRowsFn = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* b_pack, float* c,
                                    int64_t ldc, int cols, bool accumulate);

// Packs rows x kc of row-major A (leading dimension lda) into one micro-panel: dst[p*tile_rows + r].
using PackAFn = void (*)(const float* a, int64_t lda, int rows, int64_t kc, float* dst);

struct Ops {
  const char* name;  // "avx512", "avx2", "portable"
  int tile_rows;     // MR
  int tile_cols;     // NR
  // kernels[half][rows - 1]: half=1 is used when cols <= tile_cols / 2 (computes half the
  // columns, so skinny-n problems do not pay for a padded full tile).
  MicroKernelFn kernels[2][kMaxTileRows];
  // kernels_a_rows[half][rows - 1]: the same tiles reading A in place (MicroKernelRowsFn).
  MicroKernelRowsFn kernels_a_rows[2][kMaxTileRows];
  // kernels_b_rows[half][rows - 1]: the same tiles reading B in place (MicroKernelBRowsFn).
  MicroKernelBRowsFn kernels_b_rows[2][kMaxTileRows];
  PackAFn pack_a;

  // One table per ISA (kernels/core/isa_dispatch.h), each in matmul_<isa>.cc; Avx512 and Avx2
  // exist on x86-64 builds only (kernels/CMakeLists.txt).
  static const Ops& Avx512();
  static const Ops& Avx2();
  static const Ops& Portable();
};

// Packs A for any tile height. 4x4 SSE transposes (baseline on x86-64) move four rows by four
// k at a time: about 0.3 cycles per element instead of ~1 for the scalar loop, which matters
// because A is repacked once per block_n columns (packing/compute ~ 32 * cost / block_n).
template <int kTileRows>
void PackA(const float* a, int64_t lda, int rows, int64_t kc, float* dst) {
  int r = 0;
#if defined(__SSE2__)
  for (; r + 4 <= rows; r += 4) {
    const float* s0 = a + r * lda;
    const float* s1 = s0 + lda;
    const float* s2 = s1 + lda;
    const float* s3 = s2 + lda;
    float* d = dst + r;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      __m128 x0 = _mm_loadu_ps(s0 + p);
      __m128 x1 = _mm_loadu_ps(s1 + p);
      __m128 x2 = _mm_loadu_ps(s2 + p);
      __m128 x3 = _mm_loadu_ps(s3 + p);
      _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
      _mm_storeu_ps(d + (p + 0) * kTileRows, x0);
      _mm_storeu_ps(d + (p + 1) * kTileRows, x1);
      _mm_storeu_ps(d + (p + 2) * kTileRows, x2);
      _mm_storeu_ps(d + (p + 3) * kTileRows, x3);
    }
    for (; p < kc; ++p) {
      d[p * kTileRows + 0] = s0[p];
      d[p * kTileRows + 1] = s1[p];
      d[p * kTileRows + 2] = s2[p];
      d[p * kTileRows + 3] = s3[p];
    }
  }
#endif
  for (; r < rows; ++r) {
    const float* s = a + r * lda;
    for (int64_t p = 0; p < kc; ++p) dst[p * kTileRows + r] = s[p];
  }
}

// Packs kb x nb of row-major B (leading dimension ldb) into micro-panels of tile_cols columns
// (kb steps of tile_cols floats each), zero-padded on the right so the micro-kernel's padded
// lanes multiply zeros, not stale (possibly denormal) floats. Rows of B are read in order,
// each scattered over the nb / tile_cols micro-panels: walking one micro-panel's column strip
// instead touches a new page every tile_cols floats (an 8 KiB stride at n = 2048), which
// measured 5-8% of a 2048^3 product in TLB and prefetcher misses. f32 rows are copied;
// other element types go through widen(src, dst, count).
// PackBRows prefetches the row segment it will copy this many rows later: a block's rows are
// ldb apart (a new page each at n >= 1024), so the hardware prefetcher restarts on every row and
// each row's first lines would otherwise wait for DRAM.
inline constexpr int64_t kPackBAheadRows = 4;

template <typename T, typename Widen>
void PackBRows(const T* b, int64_t ldb, int64_t kb, int64_t nb, int tile_cols, Widen widen, float* dst) {
  const int64_t panel_floats = kb * tile_cols;
  // Whole f32 micro-panel rows are copied with a constant size, which the compiler inlines as
  // two or four vector moves: a libc memcpy call per 64 bytes measured 30% of a 32 x 4096 x 1024
  // product (perf), where B is packed for only 32 rows of work.
  const int64_t full = std::is_same_v<T, float> ? nb / tile_cols * tile_cols : 0;
  for (int64_t p = 0; p < kb; ++p) {
    const T* s = b + p * ldb;
    float* d = dst + p * tile_cols;
    if (p + kPackBAheadRows < kb) {
      const char* ahead = reinterpret_cast<const char*>(s + kPackBAheadRows * ldb);
      const char* ahead_end = reinterpret_cast<const char*>(s + kPackBAheadRows * ldb + nb);
      for (; ahead < ahead_end; ahead += 64) __builtin_prefetch(ahead, 0, 3);
    }
    int64_t j = 0;
    if constexpr (std::is_same_v<T, float>) {
      if (tile_cols == 16) {
        for (; j < full; j += 16, d += panel_floats) std::memcpy(d, s + j, 16 * sizeof(float));
      } else if (tile_cols == 32) {
        for (; j < full; j += 32, d += panel_floats) std::memcpy(d, s + j, 32 * sizeof(float));
      }
    }
    for (; j < nb; j += tile_cols, d += panel_floats) {
      const int64_t cols = std::min<int64_t>(tile_cols, nb - j);
      if constexpr (std::is_same_v<T, float>) {
        std::memcpy(d, s + j, sizeof(float) * static_cast<size_t>(cols));
      } else {
        widen(s + j, d, cols);
      }
      if (cols < tile_cols) std::memset(d + cols, 0, sizeof(float) * static_cast<size_t>(tile_cols - cols));
    }
  }
}

}  // namespace blocktune::kernels::matmul_internal
