// Internal to kernels/grouped_matmul: the table of operations one ISA provides, so the driver
// in grouped_matmul.cc (work list, loop nest, direct path) is written once and each
// grouped_matmul_<isa>.cc, under its own target attribute, only supplies the inner loops: the
// matmul micro-kernels of that ISA (kernels/matmul/matmul_ops.h), the bf16 widening, and the
// direct small-group kernels with their shape and the group size up to which they run.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/matmul/matmul_ops.h"

namespace blocktune::kernels::grouped_matmul_internal {

// Groups of at most Ops::direct_max_group_rows rows use the direct kernel (rhs read in place,
// no B packing). Packing writes and re-reads every rhs element, a cost spread over the group's
// rows; the direct kernel instead spills its accumulators to out every kDirectK k steps (~6%
// extra loads/stores, whatever the group size). Each ISA file gives its threshold, measured on
// the zipf_g64 and small_groups_g64 layouts of the bench (1 thread, shared machine).
//
// Rows per direct-kernel call, at most (sizes the tables): AVX-512 runs 12 rows x 2 vectors =
// 24 accumulators + 2 B vectors + 1 broadcast in the 32 zmm registers (the matmul
// micro-kernel's 12x32 shape); AVX2 6 rows x 2 vectors = 12 + 2 + 1 of the 16 ymm registers
// (6x16). Larger groups run ceil(rows / direct_rows) row passes over each B strip while it is
// in L1. Columns per call are two vectors (32 f32 on AVX-512, 16 on AVX2).
inline constexpr int kDirectMaxRows = 12;
// Depth of one direct-kernel call. The strips of a band of kDirectK rhs rows walk each of those
// rows left to right, i.e. kDirectK sequential streams the hardware prefetcher follows (it
// tracks ~32); a deep band (256 rows) instead jumps a 4 KiB page per k step and measured ~1.7x
// slower on 1-30 row groups. Bands of 16 measured ~3% and 64 ~12% slower than 32.
inline constexpr int64_t kDirectK = 32;
// Software prefetch distance along a rhs row, in elements: two strips ahead (256 B of f32)
// measured ~30% faster than none with 32-row bands; 128 and 256 were 15-40% slower.
inline constexpr int64_t kPrefetchCols = 64;

// C[rows x cols] (=|+=) A[rows x kc] (f32, leading dim lda) * B[kc x cols] (leading dim ldb,
// unpacked), cols <= direct_cols (<= direct_cols / 2 in the half variant).
using DirectF32Fn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                             int64_t ldc, int cols, bool accumulate);
using DirectBf16Fn = void (*)(int64_t kc, const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float* c,
                              int64_t ldc, int cols, bool accumulate);
// bf16 -> f32 (a 16-bit shift) of n values.
using ConvertFn = void (*)(const uint16_t* src, float* dst, int64_t n);

// Everything one ISA provides: the matmul micro-kernels plus this kernel's bf16 conversion and
// direct small-group kernels (nullptr where the ISA has none: the packed path then runs).
struct Ops {
  const char* name = nullptr;  // "avx512", "avx2", "portable"
  const matmul_internal::Ops* ks = nullptr;
  ConvertFn convert = nullptr;
  int direct_rows = 0;                // rows per direct-kernel call (the tables' filled height)
  int direct_cols = 0;                // columns per direct-kernel call (the half variant takes half)
  int64_t direct_max_group_rows = 0;  // groups up to this size run direct (0: never)
  // direct_*[half][rows - 1]: half=1 when cols <= direct_cols / 2.
  DirectF32Fn direct_f32[2][kDirectMaxRows] = {};
  DirectBf16Fn direct_bf16[2][kDirectMaxRows] = {};

  // One table per ISA (kernels/core/isa_dispatch.h), each in grouped_matmul_<isa>.cc; Avx512 and Avx2
  // exist on x86-64 builds only (kernels/CMakeLists.txt).
  static const Ops& Avx512();
  static const Ops& Avx2();
  static const Ops& Portable();
};

// The table of an x86 ISA: its micro-kernels, its widening, and direct kernels of 1 ..
// sizeof...(kRows) rows, `Maker<rows, vecs, T>::kFn` being the one of `vecs` vectors of
// columns (2: the full call, 1: the half variant) for rhs elements of type T.
template <template <int, int, typename> class Maker, int... kRows>
Ops MakeDirectOps(const matmul_internal::Ops& ks, ConvertFn convert, int direct_cols, int64_t direct_max_group_rows,
                  std::integer_sequence<int, kRows...>) {
  Ops o;
  o.name = ks.name;
  o.ks = &ks;
  o.convert = convert;
  o.direct_rows = sizeof...(kRows);
  o.direct_cols = direct_cols;
  o.direct_max_group_rows = direct_max_group_rows;
  ((o.direct_f32[0][kRows] = Maker<kRows + 1, 2, float>::kFn), ...);
  ((o.direct_f32[1][kRows] = Maker<kRows + 1, 1, float>::kFn), ...);
  ((o.direct_bf16[0][kRows] = Maker<kRows + 1, 2, uint16_t>::kFn), ...);
  ((o.direct_bf16[1][kRows] = Maker<kRows + 1, 1, uint16_t>::kFn), ...);
  return o;
}

}  // namespace blocktune::kernels::grouped_matmul_internal
