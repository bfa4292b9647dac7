// The portable micro-kernel: a 4x16 tile in plain C++ that the compiler vectorises with the
// baseline ISA (SSE2 on x86-64, NEON on aarch64). It is the fallback and the test oracle for
// the blocking logic on machines without AVX2.
//
// Why 4x16: 64 float accumulators = 16 SSE registers' worth, the most that stays in registers
// with baseline SSE2; 4 rows keeps block_m (a multiple of 12) a multiple of it.
#include <utility>

#include "kernels/matmul/matmul_ops.h"

namespace blocktune::kernels::matmul_internal {
namespace {

constexpr int kTileRows = kPortableTileRows;
constexpr int kTileCols = kPortableTileCols;

// kARows: A read in place (row r at a + r * lda) instead of packed. kBRows: B read in place
// (micro-panel row p at b + p * ldb, lanes at or beyond `cols` read as zero) instead of packed,
// and written to b_pack as the packed micro-panel when b_pack is not null.
template <int kRows, int kCols, bool kARows, bool kBRows>
__attribute__((always_inline)) inline void KernelT(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb,
                                                   float* b_pack, float* c, int64_t ldc, int cols, bool accumulate) {
  float acc[kRows][kCols] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b;
    float row[kTileCols] = {};
    if constexpr (kBRows) {
      const int n = cols < kCols ? cols : kCols;
      for (int j = 0; j < n; ++j) row[j] = b[j];
      if (b_pack != nullptr) {
        for (int j = 0; j < kTileCols; ++j) b_pack[j] = row[j];
        b_pack += kTileCols;
      }
      bp = row;
      b += ldb;
    } else {
      b += kTileCols;
    }
    for (int r = 0; r < kRows; ++r) {
      const float av = kARows ? a[r * lda] : a[r];
#pragma GCC unroll 16
      for (int j = 0; j < kCols; ++j) acc[r][j] += av * bp[j];
    }
    a += kARows ? 1 : kTileRows;
  }
  const int n = cols < kCols ? cols : kCols;
  for (int r = 0; r < kRows; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      for (int j = 0; j < n; ++j) cr[j] += acc[r][j];
    } else {
      for (int j = 0; j < n; ++j) cr[j] = acc[r][j];
    }
  }
}

// Packed A (MicroKernelFn), A read in place (MicroKernelRowsFn), B read in place
// (MicroKernelBRowsFn): one body, three entry points.
template <int kRows, int kCols>
void Kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols, bool accumulate) {
  KernelT<kRows, kCols, false, false>(kc, a, 0, b, 0, nullptr, c, ldc, cols, accumulate);
}

template <int kRows, int kCols>
void KernelARows(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, int cols,
                 bool accumulate) {
  KernelT<kRows, kCols, true, false>(kc, a, lda, b, 0, nullptr, c, ldc, cols, accumulate);
}

template <int kRows, int kCols>
void KernelBRows(int64_t kc, const float* a, const float* b, int64_t ldb, float* b_pack, float* c, int64_t ldc,
                 int cols, bool accumulate) {
  KernelT<kRows, kCols, false, true>(kc, a, 0, b, ldb, b_pack, c, ldc, cols, accumulate);
}

template <int kCols, int... kRows>
constexpr void Fill(Ops& s, int half, std::integer_sequence<int, kRows...>) {
  ((s.kernels[half][kRows] = &Kernel<kRows + 1, kCols>), ...);
  ((s.kernels_a_rows[half][kRows] = &KernelARows<kRows + 1, kCols>), ...);
  ((s.kernels_b_rows[half][kRows] = &KernelBRows<kRows + 1, kCols>), ...);
}

Ops MakeSet() {
  Ops s{};
  s.name = "portable";
  s.tile_rows = kTileRows;
  s.tile_cols = kTileCols;
  Fill<kTileCols>(s, 0, std::make_integer_sequence<int, kTileRows>());
  Fill<kTileCols / 2>(s, 1, std::make_integer_sequence<int, kTileRows>());
  s.pack_a = &PackA<kTileRows>;
  return s;
}

}  // namespace

const Ops& Ops::Portable() {
  static const Ops kSet = MakeSet();
  return kSet;
}

}  // namespace blocktune::kernels::matmul_internal
