// The portable micro-kernel: a 4x16 tile in plain C++ that the compiler vectorises with the
// baseline ISA (SSE2 on x86-64, NEON on aarch64). It is the fallback and the test oracle for
// the blocking logic on machines without AVX2.
//
// Why 4x16: 64 float accumulators = 16 SSE registers' worth, the most that stays in registers
// with baseline SSE2; 4 rows keeps block_m (a multiple of 12) a multiple of it.
#include <utility>

#include "kernels/matmul/micro_kernel.h"

namespace blocktune::kernels::matmul_internal {
namespace {

constexpr int kTileRows = kPortableTileRows;
constexpr int kTileCols = kPortableTileCols;

template <int kRows, int kCols, bool kARows>
__attribute__((always_inline)) inline void KernelT(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                            int cols, bool accumulate) {
  float acc[kRows][kCols] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int r = 0; r < kRows; ++r) {
      const float av = kARows ? a[r * lda] : a[r];
#pragma GCC unroll 16
      for (int j = 0; j < kCols; ++j) acc[r][j] += av * b[j];
    }
    a += kARows ? 1 : kTileRows;
    b += kTileCols;
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

// Packed A (MicroKernelFn) and A read in place (MicroKernelRowsFn): one body, two entry points.
template <int kRows, int kCols>
void Kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int cols, bool accumulate) {
  KernelT<kRows, kCols, false>(kc, a, 0, b, c, ldc, cols, accumulate);
}

template <int kRows, int kCols>
void KernelARows(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, int cols,
                 bool accumulate) {
  KernelT<kRows, kCols, true>(kc, a, lda, b, c, ldc, cols, accumulate);
}

template <int kCols, int... kRows>
constexpr void Fill(MicroKernelFn* out, MicroKernelRowsFn* out_rows, std::integer_sequence<int, kRows...>) {
  ((out[kRows] = &Kernel<kRows + 1, kCols>), ...);
  ((out_rows[kRows] = &KernelARows<kRows + 1, kCols>), ...);
}

MicroKernelSet MakeSet() {
  MicroKernelSet s{};
  s.name = "portable";
  s.tile_rows = kTileRows;
  s.tile_cols = kTileCols;
  Fill<kTileCols>(s.kernels[0], s.kernels_a_rows[0], std::make_integer_sequence<int, kTileRows>());
  Fill<kTileCols / 2>(s.kernels[1], s.kernels_a_rows[1], std::make_integer_sequence<int, kTileRows>());
  s.pack_a = &PackA<kTileRows>;
  return s;
}

}  // namespace

const MicroKernelSet& PortableKernels() {
  static const MicroKernelSet kSet = MakeSet();
  return kSet;
}

}  // namespace blocktune::kernels::matmul_internal
