// The matmul driver: validation, ISA dispatch, the thread split, and the GotoBLAS/BLIS loop
// nest (block_n columns -> block_k depth, pack B -> block_m rows, pack A -> micro-tile rows ->
// micro-tile columns) around the micro-kernels of matmul_*.cc.
//
// The innermost loop walks B's packed block (block_k x block_n, in L2) under one A micro-panel
// (tile_rows x block_k, in L1), as BLIS does with its broadcast operand: the L1-resident panel
// is the small one (12 KiB at block_k 256) and the streamed one is read at ~11 bytes a cycle,
// well inside L2 bandwidth. The opposite order (B's 32 KiB micro-panel in a 48 KiB L1, A
// streamed) measured 3-8% slower at 2048^3 on one core, side by side in one process.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/core/isa_dispatch.h"
#include "kernels/core/parallel.h"
#include "kernels/core/scratch.h"
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/matmul_ops.h"

namespace blocktune::kernels {
namespace {

using matmul_internal::Ops;

// A packed panel larger than this is a typo, not a tuning choice: 64 MiB is 32x the L2 and
// would need a 64 MiB allocation per thread.
constexpr int64_t kMaxPanelBytes = int64_t{64} << 20;
// Below this many flops per thread, waking a worker (~2-10 us) costs more than it saves
// (2^21 flops is ~10 us on one AVX-512 core), so small problems use fewer threads.
constexpr double kMinFlopsPerThread = double(1 << 21);
// A thread whose columns are at most this many reads A in place, and one whose rows are at
// most this many streams B once, packing it during its first row tile (see ComputeBlock).
constexpr int64_t kSkinnyCols = 64;
constexpr int64_t kSkinnyRows = 64;

thread_local ScratchBuffer t_a_buffer;
thread_local ScratchBuffer t_b_buffer;

// Loads one element as f32: bf16 inputs are widened while packing, so the micro-kernels only
// ever see f32 and bf16 costs one conversion per packed element, not one per multiply-add.
inline float Widen(float x) { return x; }
inline float Widen(BF16 x) { return BF16ToFloat(x); }

// B's packing (matmul_internal::PackBRows); bf16 is widened element by element.
template <typename T>
void PackB(const T* b, int64_t ldb, int64_t kb, int64_t nb, int tile_cols, float* dst) {
  matmul_internal::PackBRows(
      b, ldb, kb, nb, tile_cols,
      [](const T* src, float* d, int64_t n) {
        for (int64_t q = 0; q < n; ++q) d[q] = Widen(src[q]);
      },
      dst);
}

// Packs rows x kc of A into one micro-panel (dst[p*tile_rows + r]); f32 uses the ISA's packer.
void PackA(const Ops& ks, const float* a, int64_t lda, int rows, int64_t kc, float* dst) {
  ks.pack_a(a, lda, rows, kc, dst);
}
void PackA(const Ops& ks, const BF16* a, int64_t lda, int rows, int64_t kc, float* dst) {
  const int mr = ks.tile_rows;
  for (int r = 0; r < rows; ++r) {
    const BF16* s = a + r * lda;
    for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = Widen(s[p]);
  }
}

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

// Calls f(t, first_row, rows) for the micro-tile rows of a block of mb rows: whole tiles of mr,
// except that a remainder of at most half a tile is merged with the last whole tile and the pair
// split evenly. A tile of 1-3 rows has 2-6 accumulator chains, fewer than the FMA latency times
// the FMA ports needs (8 on Zen 4 and Skylake), so it costs as much per k step as a 4-row tile:
// 32 rows on AVX2 as 6,6,6,6,6,2 took 34 tile-row-steps of time, as 6,6,6,6,4,4 it takes 32.
// Tile t's packed A micro-panel starts at t * mr * kb either way (the buffer holds ceil(mb/mr)).
template <typename F>
void ForEachRowTile(int64_t mb, int mr, F&& f) {
  const int64_t whole = mb / mr;
  const int rest = static_cast<int>(mb % mr);
  const bool split = rest > 0 && whole > 0 && 2 * rest <= mr;
  const int64_t plain = split ? whole - 1 : whole;
  for (int64_t t = 0; t < plain; ++t) f(t, t * mr, mr);
  if (split) {
    const int pair = mr + rest;
    const int first = (pair + 1) / 2;
    f(plain, plain * mr, first);
    f(plain + 1, plain * mr + first, pair - first);
  } else if (rest > 0) {
    f(plain, plain * mr, rest);
  }
}

// One thread's C[rows, cols] block with the full k reduction; no synchronisation needed.
template <typename T>
void ComputeBlock(const Ops& ks, const MatmulBlockSizes& bs, const MatmulShape& shape, Range rows, Range cols,
                  const T* a, const T* b, float* c) {
  const int mr = ks.tile_rows;
  const int nr = ks.tile_cols;
  const int64_t lda = shape.k;
  const int64_t ldb = shape.n;
  const int64_t ldc = shape.n;
  const int64_t mc = bs.block_m;
  const int64_t nc = bs.block_n;
  const int64_t kc = bs.block_k;
  if (shape.k == 0) {
    for (int64_t i = rows.begin; i < rows.end; ++i) {
      std::fill(c + i * ldc + cols.begin, c + i * ldc + cols.end, 0.0f);
    }
    return;
  }

  // The buffers need only cover this block (a small problem with large block sizes must not
  // allocate the full panels).
  const int64_t m_extent = std::min(mc, (rows.end - rows.begin + mr - 1) / mr * mr);
  const int64_t n_extent = std::min(nc, (cols.end - cols.begin + nr - 1) / nr * nr);
  const int64_t k_extent = std::min(kc, shape.k);
  // Skinny n: when this thread's columns fit one micro-tile sweep (n at most 64), every row of
  // A is read by one row of micro-tiles only, so packing it copies A to read it once. The
  // micro-kernels then read A in place (4096 x 64 x 1024 on AVX2: 55 -> 69 GFLOP/s, OpenBLAS
  // 65). bf16 still packs: packing is where it is widened.
  const bool a_in_place = std::is_same_v<T, float> && cols.end - cols.begin <= kSkinnyCols;
  // Skinny m: when this thread has at most 64 rows (up to 6 row tiles), each element of B is
  // used by so few micro-tiles that packing it in a pass of its own (a load, a store and a
  // read back per element) cost as much as its multiply-adds (perf: 38% of 32 x 4096 x 1024 on
  // AVX2). The first row tile instead reads B's rows in place and writes the packed panel as it
  // goes (pack-and-compute), so B is streamed once and the later row tiles read the packed copy;
  // with a single row tile nothing is packed at all. bf16 still packs: packing is where it is
  // widened, and with A in place (n at most 64 too) B is the small operand.
  const bool b_fused = std::is_same_v<T, float> && !a_in_place && rows.end - rows.begin <= kSkinnyRows;
  const bool b_single_pass = b_fused && rows.end - rows.begin <= mr;
  float* a_pack = a_in_place ? nullptr : t_a_buffer.Get(m_extent * k_extent);
  float* b_pack = b_single_pass ? nullptr : t_b_buffer.Get(n_extent * k_extent);
  // out of memory: no exceptions here
  if ((a_pack == nullptr && !a_in_place) || (b_pack == nullptr && !b_single_pass)) std::abort();

  for (int64_t jc = cols.begin; jc < cols.end; jc += nc) {
    const int64_t nb = std::min(nc, cols.end - jc);
    for (int64_t pc = 0; pc < shape.k; pc += kc) {
      const int64_t kb = std::min(kc, shape.k - pc);
      const bool accumulate = pc > 0;
      if (!b_fused) PackB(b + pc * ldb + jc, ldb, kb, nb, nr, b_pack);
      for (int64_t ic = rows.begin; ic < rows.end; ic += mc) {
        const int64_t mb = std::min(mc, rows.end - ic);
        const auto tile = [&](int64_t t, int64_t ir, int m_rows, int64_t jr) {
          const int n_cols = static_cast<int>(std::min<int64_t>(nr, nb - jr));
          const int half = n_cols * 2 <= nr ? 1 : 0;
          float* ct = c + (ic + ir) * ldc + jc + jr;
          float* at = a_in_place ? nullptr : a_pack + t * mr * kb;  // null: A is read in place
          if constexpr (std::is_same_v<T, float>) {
            if (b_fused && ic == rows.begin && t == 0) {  // the first row tile streams and packs B
              ks.kernels_b_rows[half][m_rows - 1](kb, at, b + pc * ldb + jc + jr, ldb,
                                                  b_single_pass ? nullptr : b_pack + jr * kb, ct, ldc, n_cols,
                                                  accumulate);
              return;
            }
            if (a_in_place) {
              ks.kernels_a_rows[half][m_rows - 1](kb, a + (ic + ir) * lda + pc, lda, b_pack + jr * kb, ct, ldc, n_cols,
                                                  accumulate);
              return;
            }
          }
          ks.kernels[half][m_rows - 1](kb, at, b_pack + jr * kb, ct, ldc, n_cols, accumulate);
        };
        if (!a_in_place) {
          ForEachRowTile(mb, mr, [&](int64_t t, int64_t ir, int m_rows) {
            PackA(ks, a + (ic + ir) * lda + pc, lda, m_rows, kb, a_pack + t * mr * kb);
          });
        }
        ForEachRowTile(mb, mr, [&](int64_t t, int64_t ir, int m_rows) {
          for (int64_t jr = 0; jr < nb; jr += nr) tile(t, ir, m_rows, jr);
        });
      }
    }
  }
}

// Chooses a tm x tn grid of threads (tm * tn <= threads) minimising one thread's work: its
// padded tile area plus the packing it repeats (each thread packs its own A and B; a packed
// element costs about as much as 10 multiply-adds).
void ChooseGrid(const Ops& ks, const MatmulBlockSizes& bs, const MatmulShape& shape, int threads, int* grid_m,
                int* grid_n) {
  const int64_t m_tiles = (shape.m + ks.tile_rows - 1) / ks.tile_rows;
  const int64_t n_tiles = (shape.n + ks.tile_cols - 1) / ks.tile_cols;
  const double flops = 2.0 * double(shape.m) * double(shape.n) * double(shape.k);
  const int useful = static_cast<int>(std::clamp(flops / kMinFlopsPerThread, 1.0, double(threads)));
  double best = -1;
  *grid_m = 1;
  *grid_n = 1;
  for (int tm = 1; tm <= useful && tm <= m_tiles; ++tm) {
    for (int tn = 1; tm * tn <= useful && tn <= n_tiles; ++tn) {
      const double rows = double((m_tiles + tm - 1) / tm * ks.tile_rows);
      const double cols = double((n_tiles + tn - 1) / tn * ks.tile_cols);
      const double a_packs = double((int64_t(cols) + bs.block_n - 1) / bs.block_n);
      const double cost = rows * cols + 10.0 * (cols + rows * a_packs);
      if (best < 0 || cost < best * 0.999) {
        best = cost;
        *grid_m = tm;
        *grid_n = tn;
      }
    }
  }
}

template <typename T>
Status Run(const Ops& ks, const HardwareProfile& hw, const MatmulBlockSizes& bs, const MatmulShape& shape, const T* a,
           const T* b, float* c, int threads) {
  if (auto s = Validate(bs, shape, hw); !s) return s;
  if (threads < 1) return InvalidArgument("threads must be >= 1, got " + std::to_string(threads), "threads");
  if (shape.m == 0 || shape.n == 0) return {};
  int grid_m = 1;
  int grid_n = 1;
  ChooseGrid(ks, bs, shape, threads, &grid_m, &grid_n);
  const int64_t m_tiles = (shape.m + ks.tile_rows - 1) / ks.tile_rows;
  const int64_t n_tiles = (shape.n + ks.tile_cols - 1) / ks.tile_cols;
  ParallelRun(grid_m * grid_n, [&](int thread) {
    const int64_t i = thread / grid_n;
    const int64_t j = thread % grid_n;
    const Range rows{std::min(shape.m, m_tiles * i / grid_m * ks.tile_rows),
                     std::min(shape.m, m_tiles * (i + 1) / grid_m * ks.tile_rows)};
    const Range cols{std::min(shape.n, n_tiles * j / grid_n * ks.tile_cols),
                     std::min(shape.n, n_tiles * (j + 1) / grid_n * ks.tile_cols)};
    if (rows.begin < rows.end && cols.begin < cols.end) ComputeBlock(ks, bs, shape, rows, cols, a, b, c);
  });
  return {};
}

}  // namespace

MatmulTile MatmulTileFor(std::string_view isa) {
  if (isa == "avx512") return MatmulTile{matmul_internal::kAvx512TileRows, matmul_internal::kAvx512TileCols};
  if (isa == "avx2") return MatmulTile{matmul_internal::kAvx2TileRows, matmul_internal::kAvx2TileCols};
  return MatmulTile{matmul_internal::kPortableTileRows, matmul_internal::kPortableTileCols};
}

Status ValidateGemmBlocking(const GemmBlocking& g, const HardwareProfile& hw) {
  const MatmulTile tile = MatmulTileFor(hw.cpu.isa);
  const std::pair<const char*, int64_t> params[] = {
      {g.rows_name, g.rows}, {g.cols_name, g.cols}, {g.depth_name, g.depth}};
  for (const auto& [name, value] : params) {
    if (value <= 0) {
      return InvalidArgument(std::string(name) + " must be positive, got " + std::to_string(value),
                             std::string("config.") + name);
    }
    // Bounds the products below well inside int64 and the panels inside kMaxPanelBytes.
    if (value > (int64_t{1} << 24)) {
      return InvalidArgument(std::string(name) + " must be at most 16777216, got " + std::to_string(value),
                             std::string("config.") + name);
    }
  }
  // A block that is not a whole number of micro-tiles leaves a partial tile in every block, not
  // just at the matrix edge: the kernel stays correct but wastes up to a tile per block.
  if (g.rows % tile.rows != 0) {
    return InvalidArgument(std::string(g.rows_name) + " must be a multiple of the " + hw.cpu.isa +
                               " micro-tile rows (" + std::to_string(tile.rows) + "), got " + std::to_string(g.rows),
                           std::string("config.") + g.rows_name);
  }
  if (g.cols % tile.cols != 0) {
    return InvalidArgument(std::string(g.cols_name) + " must be a multiple of the " + hw.cpu.isa +
                               " micro-tile columns (" + std::to_string(tile.cols) + "), got " + std::to_string(g.cols),
                           std::string("config.") + g.cols_name);
  }
  int64_t limit = kMaxPanelBytes;
  if (hw.l3_bytes > 0) limit = std::min(limit, hw.l3_bytes);
  const std::string limit_text = std::to_string(limit >> 10) + " KiB";
  if (g.depth * g.cols * 4 > limit) {
    return InvalidArgument("packed B panel " + std::string(g.depth_name) + "*" + g.cols_name +
                               "*4 = " + std::to_string(g.depth * g.cols * 4 >> 10) + " KiB exceeds " + limit_text +
                               " (min of L3 and 64 MiB)",
                           std::string("config.") + g.cols_name);
  }
  if (g.rows * g.depth * 4 > limit) {
    return InvalidArgument("packed A panel " + std::string(g.rows_name) + "*" + g.depth_name +
                               "*4 = " + std::to_string(g.rows * g.depth * 4 >> 10) + " KiB exceeds " + limit_text +
                               " (min of L3 and 64 MiB)",
                           std::string("config.") + g.rows_name);
  }
  return {};
}

Status Validate(const MatmulBlockSizes& bs, const MatmulShape& shape, const HardwareProfile& hw) {
  if (auto s = ValidateGemmBlocking({"block_m", bs.block_m, "block_n", bs.block_n, "block_k", bs.block_k}, hw); !s) {
    return s;
  }
  const std::pair<const char*, int64_t> dims[] = {{"m", shape.m}, {"n", shape.n}, {"k", shape.k}};
  for (const auto& [name, value] : dims) {
    if (value < 0) {
      return InvalidArgument(std::string(name) + " must be >= 0, got " + std::to_string(value),
                             std::string("shape.") + name);
    }
  }
  return {};
}

Status Matmul(const MatmulBlockSizes& bs, const MatmulShape& shape, const float* a, const float* b, float* c,
              int threads) {
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, a, b, c, threads);
}

Status Matmul(const MatmulBlockSizes& bs, const MatmulShape& shape, const BF16* a, const BF16* b, float* c,
              int threads) {
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, a, b, c, threads);
}

template <typename T>
Status MatmulWithIsaT(std::string_view isa, const MatmulBlockSizes& bs, const MatmulShape& shape, const T* a,
                      const T* b, float* c, int threads) {
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return Run(*forced->ops, forced->hw, bs, shape, a, b, c, threads);
}

Status MatmulWithIsa(std::string_view isa, const MatmulBlockSizes& bs, const MatmulShape& shape, const float* a,
                     const float* b, float* c, int threads) {
  return MatmulWithIsaT(isa, bs, shape, a, b, c, threads);
}

Status MatmulWithIsa(std::string_view isa, const MatmulBlockSizes& bs, const MatmulShape& shape, const BF16* a,
                     const BF16* b, float* c, int threads) {
  return MatmulWithIsaT(isa, bs, shape, a, b, c, threads);
}

const char* MatmulIsa() { return HostOps<Ops>().name; }

}  // namespace blocktune::kernels
