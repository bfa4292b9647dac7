// The grouped-matmul driver: validation, ISA dispatch, the work list that balances skewed groups
// over threads, and per work item the GotoBLAS loop nest (tile_k depth, pack B -> tile_m rows,
// pack A -> micro-kernels of kernels/matmul/matmul_ops.h). Small groups (at most 32 rows on
// AVX-512, 12 on AVX2) skip the B packing and run a direct kernel that reads rhs in place; the
// per-ISA pieces (micro-kernels, bf16 widening, direct kernels and their shape) are one Ops
// table (grouped_matmul_ops.h, filled in by grouped_matmul_<isa>.cc) chosen once, and the loop
// nest below is shared.
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
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/core/isa_dispatch.h"
#include "kernels/core/parallel.h"
#include "kernels/core/scratch.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/grouped_matmul/grouped_matmul_ops.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {
namespace {

using grouped_matmul_internal::kDirectK;
using grouped_matmul_internal::Ops;
using MatmulOps = matmul_internal::Ops;

// Below this many flops per thread a worker wake-up (~2-10 us) costs more than it saves.
constexpr double kMinFlopsPerThread = double(1 << 21);
// Cost of fetching (and packing) one rhs element, in multiply-adds of one row: streaming B from
// memory at ~8 B/cycle is ~0.5 cycle per f32 element = 16 FMA lanes.
constexpr int64_t kBCostRows = 16;
// Work items per thread the splitter aims for (largest first): the final straggler is then at
// most ~1/4 of a thread's share.
constexpr int64_t kItemsPerThread = 4;

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
void RunItem(const Ops& ops, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const Operands<T>& op,
             const Item& it) {
  const MatmulOps& ks = *ops.ks;
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
double ItemCost(const Ops& ops, int64_t group_rows, int64_t rows, int64_t cols, int64_t k) {
  const int mr = ops.ks->tile_rows;
  const bool direct = group_rows <= ops.direct_max_group_rows;
  const int64_t padded = direct ? rows : (rows + mr - 1) / mr * mr;
  return double(padded + kBCostRows) * double(cols) * double(k);
}

// The work list: per non-empty group and column tile, the group's rows cut into chunks of whole
// tile_m tiles so that no item costs more than total / (kItemsPerThread * threads); largest
// first. One thread gets whole groups (no chunking: chunking only repeats the B packing).
void BuildItems(const Ops& ops, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
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
Status Run(const Ops& ops, const HardwareProfile& hw, const GroupedMatmulBlockSizes& bs,
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
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return Run(*forced->ops, forced->hw, bs, shape, group_sizes, lhs, rhs, out, threads);
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
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, group_sizes, lhs, rhs, out, threads);
}

Status GroupedMatmul(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const int32_t* group_sizes,
                     const uint16_t* lhs, const uint16_t* rhs, float* out, int threads) {
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, group_sizes, lhs, rhs, out, threads);
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
