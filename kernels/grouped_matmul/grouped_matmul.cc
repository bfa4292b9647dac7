// The grouped-matmul driver: validation, ISA dispatch, the work list that balances skewed groups
// over threads, and per work item the GotoBLAS loop nest (tile_k depth, pack B -> tile_m rows,
// pack A -> micro-kernels of kernels/matmul/micro_kernel.h). Small groups (at most 32 rows on
// AVX-512, 12 on AVX2) skip the B packing and run a direct kernel that reads rhs in place; the
// per-ISA pieces (micro-kernels, bf16 widening, direct kernels and their shape) are one IsaOps
// table chosen once, and the loop nest below is shared.
//
// Work items are (group, row chunk, column tile of tile_n), never whole groups: with 2 threads
// and a head group holding 40% of the rows, whole-group scheduling would leave one thread with
// >= 40% + its share; items are cut to about 1/(4 * threads) of the total cost each and handed
// out largest first from an atomic counter (LPT order), so the last item to finish is small.
// Every output element is computed by one item with the same k order, so results are bitwise
// independent of the thread count and of the chunking.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <tuple>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/scratch.h"
#include "kernels/core/parallel.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/micro_kernel.h"


#if defined(__x86_64__)
#include "kernels/core/simd.h"  // <immintrin.h>
// GCC 12 reports the intrinsics' internal _mm512_undefined operands of cvtepu16/slli as
// "maybe uninitialized" once inlined; they are fully overwritten.
#if defined(__GNUC__) && !defined(__clang__)  // GCC-only warning names
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define GMM_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define GMM_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace blocktune::kernels {
namespace {

using matmul_internal::MicroKernelSet;

// Below this many flops per thread a worker wake-up (~2-10 us) costs more than it saves.
constexpr double kMinFlopsPerThread = double(1 << 21);
// Groups of at most IsaOps::direct_max_group_rows rows use the direct kernel (rhs read in
// place, no B packing). Packing writes and re-reads every rhs element, a cost spread over the
// group's rows; the direct kernel instead spills its accumulators to out every kDirectK k steps
// (~6% extra loads/stores, whatever the group size). Measured on the zipf_g64 and
// small_groups_g64 layouts of the bench (1 thread, shared machine). AVX-512 (Intel, 12x32
// calls): threshold 32 beat 24 and 48 by ~10% on zipf_g64 and ~5% on small groups; 96 lost
// ~15%, and direct-for-all lost ~4x on 200+ row groups (the spilled out rows then leave L1).
// AVX2 (Zen 3, 6x16 calls: half the registers, so twice the row passes per B strip): threshold
// 12 gave small_groups_g64 25.5 GFLOP/s against 24.0 for none (every group packed), 24.0 for
// 24 and 24.4 for 6 (OpenBLAS per group: 24.3-25.1), zipf_g64 within noise (58.6-60.3) for all.
constexpr int64_t kDirectMaxGroupRowsAvx512 = 32;
constexpr int64_t kDirectMaxGroupRowsAvx2 = 12;
// Rows per direct-kernel call, at most (sizes the tables): AVX-512 runs 12 rows x 2 vectors =
// 24 accumulators + 2 B vectors + 1 broadcast in the 32 zmm registers (the matmul
// micro-kernel's 12x32 shape); AVX2 6 rows x 2 vectors = 12 + 2 + 1 of the 16 ymm registers
// (6x16). Larger groups run ceil(rows / direct_rows) row passes over each B strip while it is
// in L1. Columns per call are two vectors (32 f32 on AVX-512, 16 on AVX2).
constexpr int kDirectMaxRows = 12;
// Depth of one direct-kernel call. The strips of a band of kDirectK rhs rows walk each of those
// rows left to right, i.e. kDirectK sequential streams the hardware prefetcher follows (it
// tracks ~32); a deep band (256 rows) instead jumps a 4 KiB page per k step and measured ~1.7x
// slower on 1-30 row groups. Bands of 16 measured ~3% and 64 ~12% slower than 32.
constexpr int64_t kDirectK = 32;
// Software prefetch distance along a rhs row, in elements: two strips ahead (256 B of f32)
// measured ~30% faster than none with 32-row bands; 128 and 256 were 15-40% slower.
constexpr int64_t kPrefetchCols = 64;
// Cost of fetching (and packing) one rhs element, in multiply-adds of one row: streaming B from
// memory at ~8 B/cycle is ~0.5 cycle per f32 element = 16 FMA lanes.
constexpr int64_t kBCostRows = 16;
// Work items per thread the splitter aims for (largest first): the final straggler is then at
// most ~1/4 of a thread's share.
constexpr int64_t kItemsPerThread = 4;

// C[rows x cols] (=|+=) A[rows x kc] (f32, leading dim lda) * B[kc x cols] (leading dim ldb,
// unpacked), cols <= 32 (<= 16 in the half variant).
using DirectF32Fn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                             int64_t ldc, int cols, bool accumulate);
using DirectBf16Fn = void (*)(int64_t kc, const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float* c,
                              int64_t ldc, int cols, bool accumulate);
using ConvertFn = void (*)(const uint16_t* src, float* dst, int64_t n);

// Everything one ISA provides: the matmul micro-kernels plus this kernel's bf16 conversion and
// direct small-group kernels (nullptr where the ISA has none: the packed path then runs).
struct IsaOps {
  const MicroKernelSet* ks = nullptr;
  ConvertFn convert = nullptr;
  int direct_rows = 0;  // rows per direct-kernel call (the tables' filled height)
  int direct_cols = 0;  // columns per direct-kernel call (the half variant takes half)
  int64_t direct_max_group_rows = 0;  // groups up to this size run direct (0: never)
  DirectF32Fn direct_f32[2][kDirectMaxRows] = {};
  DirectBf16Fn direct_bf16[2][kDirectMaxRows] = {};
};

// ---------------------------------------------------------------------------------------------
// bf16 -> f32 conversion (a 16-bit shift), per ISA.

void ConvertPortable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToFloat(BF16{src[i]});
}

#if defined(__x86_64__)
GMM_AVX512 void ConvertAvx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

GMM_AVX2 void ConvertAvx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; i < n; ++i) dst[i] = BF16ToFloat(BF16{src[i]});
}

// ---------------------------------------------------------------------------------------------
// The AVX-512 direct kernel for small groups: kRows (1-12) x (16 * kVecs) accumulators over
// kc <= kDirectK steps, B loaded straight from rhs (masked at the column edge, so no padding and
// no out-of-bounds reads; bf16 widened in registers), A broadcast per row. The caller walks a
// band of kDirectK rhs rows strip by strip, so each row is read left to right; the prefetch
// runs kPrefetchCols ahead along the row.

template <typename T>
GMM_AVX512 inline __m512 LoadB(const T* b, __mmask16 m) {
  if constexpr (sizeof(T) == 4) {
    return _mm512_maskz_loadu_ps(m, b);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, b);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

GMM_AVX512 inline __mmask16 ColMask(int cols) {
  return cols >= 16 ? static_cast<__mmask16>(0xffff)
                    : cols <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << cols) - 1);
}

template <int kRows, int kVecs, typename T>
GMM_AVX512 void DirectKernel(int64_t kc, const float* a, int64_t lda, const T* b, int64_t ldb, float* c,
                             int64_t ldc, int cols, bool accumulate) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  __mmask16 mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) mask[v] = ColMask(cols - 16 * v);
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * ldb;
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols), _MM_HINT_T0);
    if constexpr (sizeof(T) == 4 && kVecs == 2) {
      _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols + 16), _MM_HINT_T0);
    }
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = LoadB(bp + 16 * v, mask[v]);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
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

template <typename T, typename Fn, int... kRows>
void FillDirect(Fn (&out)[2][kDirectMaxRows], std::integer_sequence<int, kRows...>) {
  ((out[0][kRows] = &DirectKernel<kRows + 1, 2, T>), ...);
  ((out[1][kRows] = &DirectKernel<kRows + 1, 1, T>), ...);
}

// ---------------------------------------------------------------------------------------------
// The AVX2 direct kernel: the same loop as the AVX-512 one on 8-float vectors, kRows (1-6) x
// (8 * kVecs). AVX2 has no masked 16-bit load, so a partial bf16 vector (only at the rhs column
// edge) is staged through a zero-padded 8-element buffer; f32 uses vmaskmovps, which does not
// touch masked-out addresses.

GMM_AVX2 inline __m256i ColMask8(int cols) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
}

template <typename T>
GMM_AVX2 inline __m256 LoadB8(const T* b, int cols, __m256i mask) {
  if constexpr (sizeof(T) == 4) {
    if (cols >= 8) return _mm256_loadu_ps(b);
    return _mm256_maskload_ps(b, mask);
  } else {
    __m128i h;
    if (cols >= 8) {
      h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    } else {
      alignas(16) uint16_t tmp[8] = {};
      for (int j = 0; j < cols; ++j) tmp[j] = b[j];
      h = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <int kRows, int kVecs, typename T>
GMM_AVX2 void DirectKernelAvx2(int64_t kc, const float* a, int64_t lda, const T* b, int64_t ldb, float* c,
                               int64_t ldc, int cols, bool accumulate) {
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  int vcols[kVecs];
  __m256i mask[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    vcols[v] = std::clamp(cols - 8 * v, 0, 8);
    mask[v] = ColMask8(vcols[v]);
  }
  const bool full = cols >= 8 * kVecs;
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * ldb;
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchCols), _MM_HINT_T0);
    __m256 bv[kVecs];
    if (full) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = LoadB8(bp + 8 * v, 8, mask[v]);
    } else {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bv[v] = vcols[v] > 0 ? LoadB8(bp + 8 * v, vcols[v], mask[v]) : _mm256_setzero_ps();
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m256 x = acc[r][v];
      if (full) {
        if (accumulate) x = _mm256_add_ps(x, _mm256_loadu_ps(cr + 8 * v));
        _mm256_storeu_ps(cr + 8 * v, x);
      } else if (vcols[v] > 0) {
        if (accumulate) x = _mm256_add_ps(x, _mm256_maskload_ps(cr + 8 * v, mask[v]));
        _mm256_maskstore_ps(cr + 8 * v, mask[v], x);
      }
    }
  }
}

template <typename T, typename Fn, int... kRows>
void FillDirectAvx2(Fn (&out)[2][kDirectMaxRows], std::integer_sequence<int, kRows...>) {
  ((out[0][kRows] = &DirectKernelAvx2<kRows + 1, 2, T>), ...);
  ((out[1][kRows] = &DirectKernelAvx2<kRows + 1, 1, T>), ...);
}
#endif  // __x86_64__

IsaOps MakeOps(std::string_view isa) {
  IsaOps ops;
#if defined(__x86_64__)
  if (isa == "avx512") {
    ops.ks = &matmul_internal::Avx512Kernels();
    ops.convert = &ConvertAvx512;
    ops.direct_rows = 12;
    ops.direct_cols = 32;
    ops.direct_max_group_rows = kDirectMaxGroupRowsAvx512;
    FillDirect<float>(ops.direct_f32, std::make_integer_sequence<int, 12>());
    FillDirect<uint16_t>(ops.direct_bf16, std::make_integer_sequence<int, 12>());
    return ops;
  }
  if (isa == "avx2") {
    ops.ks = &matmul_internal::Avx2Kernels();
    ops.convert = &ConvertAvx2;
    ops.direct_rows = 6;
    ops.direct_cols = 16;
    ops.direct_max_group_rows = kDirectMaxGroupRowsAvx2;
    FillDirectAvx2<float>(ops.direct_f32, std::make_integer_sequence<int, 6>());
    FillDirectAvx2<uint16_t>(ops.direct_bf16, std::make_integer_sequence<int, 6>());
    return ops;
  }
#endif
  if (isa == "base" || isa == "portable") {
    ops.ks = &matmul_internal::PortableKernels();
    ops.convert = &ConvertPortable;
  }
  return ops;
}

const IsaOps* OpsForIsa(std::string_view isa) {
  static const IsaOps kAvx512 = MakeOps("avx512");
  static const IsaOps kAvx2 = MakeOps("avx2");
  static const IsaOps kPortable = MakeOps("portable");
  if (isa == "avx512") return kAvx512.ks != nullptr ? &kAvx512 : nullptr;
  if (isa == "avx2") return kAvx2.ks != nullptr ? &kAvx2 : nullptr;
  if (isa == "base" || isa == "portable") return &kPortable;
  return nullptr;
}

const IsaOps& HostOps() {
  static const IsaOps* kOps = [] {
    const IsaOps* o = OpsForIsa(HostHardware().cpu.isa);
    return o != nullptr ? o : OpsForIsa("portable");
  }();
  return *kOps;
}

thread_local ScratchBuffer t_a_pack;
thread_local ScratchBuffer t_b_pack;
thread_local ScratchBuffer t_a_f32;  // bf16 lhs rows widened to f32 before packing

// One unit of work: rows [row_begin, row_end) of one group times columns [col_begin, col_end).
struct Item {
  int64_t group = 0;
  int64_t row_begin = 0;
  int64_t row_end = 0;
  int64_t col_begin = 0;
  int64_t col_end = 0;
  bool direct = false;  // the group (not just this chunk) is small: keeps results chunking-independent
  double cost = 0;
};

template <typename T>
struct Operands {
  const T* lhs;
  const T* rhs;
  float* out;
};

template <typename T>
void RunItem(const IsaOps& ops, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
             const Operands<T>& op, const Item& it) {
  const MicroKernelSet& ks = *ops.ks;
  const int mr = ks.tile_rows;
  const int nr = ks.tile_cols;
  const int64_t k = shape.k;
  const int64_t n = shape.n;
  const int64_t rows = it.row_end - it.row_begin;
  const int64_t nb = it.col_end - it.col_begin;
  const int64_t kc = std::min(bs.tile_k, k);
  const T* a = op.lhs + it.row_begin * k;
  const T* b = op.rhs + it.group * k * n + it.col_begin;
  float* c = op.out + it.row_begin * n + it.col_begin;
  constexpr bool kBf16 = sizeof(T) == 2;

  // Small groups: no packing, rhs read in place.
  if (it.direct) {
    const int64_t kd = std::min<int64_t>(kDirectK, k);
    const int64_t dcols = ops.direct_cols;
    const int64_t passes = (rows + ops.direct_rows - 1) / ops.direct_rows;
    float* a_f32 = kBf16 ? t_a_f32.Get(rows * kd) : nullptr;
    if (kBf16 && a_f32 == nullptr) std::abort();  // out of memory: no exceptions here
    for (int64_t pc = 0; pc < k; pc += kd) {
      const int64_t kb = std::min(kd, k - pc);
      const float* ap = nullptr;
      int64_t lda = k;
      if constexpr (kBf16) {
        for (int64_t r = 0; r < rows; ++r) ops.convert(a + r * k + pc, a_f32 + r * kb, kb);
        ap = a_f32;
        lda = kb;
      } else {
        ap = a + pc;
      }
      for (int64_t j = 0; j < nb; j += dcols) {
        const int cols = static_cast<int>(std::min(dcols, nb - j));
        const int half = cols <= dcols / 2 ? 1 : 0;
        // Row passes of <= direct_rows (even split) share this B strip from L1.
        for (int64_t pass = 0; pass < passes; ++pass) {
          const int64_t r0 = rows * pass / passes;
          const int64_t r1 = rows * (pass + 1) / passes;
          float* cp = c + r0 * n + j;
          if constexpr (kBf16) {
            ops.direct_bf16[half][r1 - r0 - 1](kb, ap + r0 * lda, lda, b + pc * n + j, n, cp, n, cols, pc > 0);
          } else {
            ops.direct_f32[half][r1 - r0 - 1](kb, ap + r0 * lda, lda, b + pc * n + j, n, cp, n, cols, pc > 0);
          }
        }
      }
    }
    return;
  }

  // Buffers cover this item only (a small group with large tiles must not allocate full panels).
  const int64_t m_extent = std::min(bs.tile_m, (rows + mr - 1) / mr * mr);
  const int64_t n_extent = (nb + nr - 1) / nr * nr;
  float* a_pack = t_a_pack.Get(m_extent * kc);
  float* b_pack = t_b_pack.Get(n_extent * kc);
  float* a_f32 = kBf16 ? t_a_f32.Get(m_extent * kc) : nullptr;
  if (a_pack == nullptr || b_pack == nullptr || (kBf16 && a_f32 == nullptr)) std::abort();

  for (int64_t pc = 0; pc < k; pc += kc) {
    const int64_t kb = std::min(kc, k - pc);
    const bool accumulate = pc > 0;
    matmul_internal::PackBRows(b + pc * n, n, kb, nb, nr, ops.convert, b_pack);  // bf16: the ISA's widener
    for (int64_t ic = 0; ic < rows; ic += bs.tile_m) {
      const int64_t mb = std::min(bs.tile_m, rows - ic);
      for (int64_t ir = 0; ir < mb; ir += mr) {
        const int m_rows = static_cast<int>(std::min<int64_t>(mr, mb - ir));
        if constexpr (kBf16) {
          float* tmp = a_f32 + ir * kb;
          for (int r = 0; r < m_rows; ++r) ops.convert(a + (ic + ir + r) * k + pc, tmp + r * kb, kb);
          ks.pack_a(tmp, kb, m_rows, kb, a_pack + ir * kb);
        } else {
          ks.pack_a(a + (ic + ir) * k + pc, k, m_rows, kb, a_pack + ir * kb);
        }
      }
      // A micro-panel in L1, B's packed block streamed from L2 (matmul.cc explains the order).
      for (int64_t ir = 0; ir < mb; ir += mr) {
        const int m_rows = static_cast<int>(std::min<int64_t>(mr, mb - ir));
        for (int64_t jr = 0; jr < nb; jr += nr) {
          const int n_cols = static_cast<int>(std::min<int64_t>(nr, nb - jr));
          const int half = n_cols * 2 <= nr ? 1 : 0;
          ks.kernels[half][m_rows - 1](kb, a_pack + ir * kb, b_pack + jr * kb, c + (ic + ir) * n + jr, n, n_cols,
                                       accumulate);
        }
      }
    }
  }
}

// Cost in row-multiply-adds x columns x k: padded rows (the micro-kernel computes whole
// micro-tiles) plus the cost of streaming this item's rhs block.
double ItemCost(const IsaOps& ops, int64_t group_rows, int64_t rows, int64_t cols, int64_t k) {
  const int mr = ops.ks->tile_rows;
  const bool direct = group_rows <= ops.direct_max_group_rows;
  const int64_t padded = direct ? rows : (rows + mr - 1) / mr * mr;
  return double(padded + kBCostRows) * double(cols) * double(k);
}

// The work list: per non-empty group and column tile, the group's rows cut into chunks of whole
// tile_m tiles so that no item costs more than total / (kItemsPerThread * threads); largest
// first. One thread gets whole groups (no chunking: chunking only repeats the B packing).
void BuildItems(const IsaOps& ops, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                const int32_t* group_sizes, int threads, std::vector<Item>* items) {
  items->clear();
  const int64_t tile_n = bs.tile_n;
  double total = 0;
  for (int64_t g = 0; g < shape.groups; ++g) {
    if (group_sizes[g] > 0) total += ItemCost(ops, group_sizes[g], group_sizes[g], shape.n, shape.k);
  }
  const double target = threads > 1 ? total / double(kItemsPerThread * threads) : total;
  int64_t row = 0;
  for (int64_t g = 0; g < shape.groups; ++g) {
    const int64_t size = group_sizes[g];
    if (size == 0) continue;
    for (int64_t j = 0; j < shape.n; j += tile_n) {
      const int64_t cols = std::min(tile_n, shape.n - j);
      // Largest chunk (whole tiles) whose cost stays under the target; at least one tile.
      const double per_row = double(cols) * double(shape.k);
      const int64_t max_rows = static_cast<int64_t>(target / per_row) - kBCostRows;
      const int64_t tiles = (size + bs.tile_m - 1) / bs.tile_m;
      const int64_t max_tiles = std::clamp<int64_t>(max_rows / bs.tile_m, 1, tiles);
      const int64_t chunks = (tiles + max_tiles - 1) / max_tiles;
      for (int64_t ch = 0; ch < chunks; ++ch) {
        // Even split of the tiles over the chunks (sizes differ by at most one tile).
        const int64_t t0 = tiles * ch / chunks;
        const int64_t t1 = tiles * (ch + 1) / chunks;
        Item it;
        it.group = g;
        it.row_begin = row + t0 * bs.tile_m;
        it.row_end = row + std::min(size, t1 * bs.tile_m);
        it.col_begin = j;
        it.col_end = j + cols;
        it.direct = size <= ops.direct_max_group_rows;
        it.cost = ItemCost(ops, size, it.row_end - it.row_begin, cols, shape.k);
        items->push_back(it);
      }
    }
    row += size;
  }
  if (threads > 1) {
    // Costliest first; ties keep the creation order (group, column, rows), as stable_sort would,
    // without the temporary buffer stable_sort allocates on every call.
    std::sort(items->begin(), items->end(), [](const Item& x, const Item& y) {
      if (x.cost != y.cost) return x.cost > y.cost;
      return std::tie(x.group, x.col_begin, x.row_begin) < std::tie(y.group, y.col_begin, y.row_begin);
    });
  }
}

template <typename T>
Status Run(const IsaOps& ops, const HardwareProfile& hw, const GroupedMatmulBlockSizes& bs,
           const GroupedMatmulShape& shape, const int32_t* group_sizes, const T* lhs, const T* rhs, float* out,
           int threads) {
  if (auto s = Validate(bs, shape, hw); !s) return s;
  if (shape.groups > 0 && group_sizes == nullptr) return InvalidArgument("group_sizes is null", "group_sizes");
  if (auto s = ValidateGroupSizes(shape, group_sizes); !s) return s;
  if (threads < 1) return InvalidArgument("threads must be >= 1, got " + std::to_string(threads), "threads");
  if (shape.m == 0 || shape.n == 0) return {};
  int64_t used = 0;
  for (int64_t g = 0; g < shape.groups; ++g) used += group_sizes[g];
  // Rows past the groups, and every row when k == 0 (an empty sum), are zero.
  const int64_t zero_from = shape.k == 0 ? 0 : used;
  std::memset(out + zero_from * shape.n, 0, sizeof(float) * static_cast<size_t>((shape.m - zero_from) * shape.n));
  if (shape.k == 0 || used == 0) return {};

  const double flops = 2.0 * double(used) * double(shape.k) * double(shape.n);
  const int useful = static_cast<int>(std::clamp(flops / kMinFlopsPerThread, 1.0, double(threads)));
  thread_local std::vector<Item> items;
  BuildItems(ops, bs, shape, group_sizes, useful, &items);
  const int workers = static_cast<int>(std::min<int64_t>(useful, static_cast<int64_t>(items.size())));
  const Operands<T> op{lhs, rhs, out};
  const Item* list = items.data();
  const int64_t count = static_cast<int64_t>(items.size());
  if (workers <= 1) {
    for (int64_t i = 0; i < count; ++i) RunItem(ops, bs, shape, op, list[i]);
    return {};
  }
  std::atomic<int64_t> next{0};
  ParallelRun(workers, [&](int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < count;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      RunItem(ops, bs, shape, op, list[i]);
    }
  });
  return {};
}

template <typename T>
Status RunWithIsa(std::string_view isa, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                  const int32_t* group_sizes, const T* lhs, const T* rhs, float* out, int threads) {
  const IsaOps* ops = OpsForIsa(isa);
  if (ops == nullptr && isa != "avx512" && isa != "avx2") {
    return InvalidArgument("unknown ISA '" + std::string(isa) + "'", "isa");
  }
  if (ops == nullptr || !HostCanRun(isa)) {
    return MakeError(ErrorCode::kFailedPrecondition, "this CPU cannot run the " + std::string(isa) + " kernel",
                     "isa");
  }
  HardwareProfile hw = HostHardware();
  hw.cpu.isa = isa == "portable" ? "base" : std::string(isa);
  return Run(*ops, hw, bs, shape, group_sizes, lhs, rhs, out, threads);
}

}  // namespace

Status Validate(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const HardwareProfile& hw) {
  if (auto s = ValidateGemmBlocking({"tile_m", bs.tile_m, "tile_n", bs.tile_n, "tile_k", bs.tile_k}, hw); !s) return s;
  const std::pair<const char*, int64_t> dims[] = {
      {"m", shape.m}, {"k", shape.k}, {"n", shape.n}, {"groups", shape.groups}};
  for (const auto& [name, value] : dims) {
    if (value < 0) {
      return InvalidArgument(std::string(name) + " must be >= 0, got " + std::to_string(value),
                             std::string("shape.") + name);
    }
  }
  return {};
}

Status ValidateGroupSizes(const GroupedMatmulShape& shape, const int32_t* group_sizes) {
  int64_t sum = 0;
  for (int64_t g = 0; g < shape.groups; ++g) {
    const std::string path = "group_sizes[" + std::to_string(g) + "]";
    if (group_sizes[g] < 0) {
      return InvalidArgument("group sizes must be >= 0, got " + std::to_string(group_sizes[g]), path);
    }
    sum += group_sizes[g];
    if (sum > shape.m) {
      return InvalidArgument("group sizes up to group " + std::to_string(g) + " sum to " + std::to_string(sum) +
                                 " > m = " + std::to_string(shape.m),
                             path);
    }
  }
  return {};
}

Status GroupedMatmul(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const int32_t* group_sizes,
                     const float* lhs, const float* rhs, float* out, int threads) {
  return Run(HostOps(), HostHardware(), bs, shape, group_sizes, lhs, rhs, out, threads);
}

Status GroupedMatmul(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const int32_t* group_sizes,
                     const uint16_t* lhs, const uint16_t* rhs, float* out, int threads) {
  return Run(HostOps(), HostHardware(), bs, shape, group_sizes, lhs, rhs, out, threads);
}

Status GroupedMatmulWithIsa(std::string_view isa, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                            const int32_t* group_sizes, const float* lhs, const float* rhs, float* out, int threads) {
  return RunWithIsa(isa, bs, shape, group_sizes, lhs, rhs, out, threads);
}

Status GroupedMatmulWithIsa(std::string_view isa, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                            const int32_t* group_sizes, const uint16_t* lhs, const uint16_t* rhs, float* out,
                            int threads) {
  return RunWithIsa(isa, bs, shape, group_sizes, lhs, rhs, out, threads);
}

}  // namespace blocktune::kernels
