// The ragged_paged_attention driver: validation of block sizes, shape and metadata, the work
// list of (sequence, KV head, query block) items and its thread schedule, ISA dispatch, and the
// portable / AVX2 work item (one plain C++ body compiled twice, the second time with AVX2+FMA).
//
// Threading: items are sorted by estimated cost (keys streamed x score rows) largest first and
// handed out through one atomic counter, so a batch of many short decodes and a few long
// prefills keeps every thread busy to the end (longest-processing-time-first). Each item writes
// only its own output rows, so results are bitwise identical for every thread count.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/core/parallel.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune::kernels {
namespace {

using rpa_internal::Context;
using rpa_internal::WorkItem;

// Below this many flops per thread waking a pool worker (~2-10 us) costs more than it saves
// (2^21 flops is ~10 us on one AVX-512 core).
constexpr double kMinFlopsPerThread = double(1 << 21);
// Largest head_dim: the AVX-512 path keeps one mask per 16-float chunk in a 64-entry array.
constexpr int64_t kMaxHeadDim = 1024;

using ItemFn = void (*)(const Context&, const WorkItem&);

ItemFn FnForIsa(std::string_view isa) {
  if (isa == "avx512") return &rpa_internal::RunItemAvx512;
  if (isa == "avx2") return &rpa_internal::RunItemAvx2;
  if (isa == "base" || isa == "portable") return &rpa_internal::RunItemPortable;
  return nullptr;
}

const char* HostIsaName() {
  const std::string& host = HostHardware().cpu.isa;
  if (host == "avx512") return "avx512";
  if (host == "avx2") return "avx2";
  return "portable";
}

Status RunWith(ItemFn fn, const HardwareProfile& hw, const RaggedPagedAttentionBlockSizes& bs,
               const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in, float* out,
               int threads) {
  if (auto st = Validate(bs, shape, hw); !st) return st;
  if (threads < 1) return InvalidArgument("threads must be >= 1, got " + std::to_string(threads), "threads");
  if (auto st = ValidateMetadata(shape, in); !st) return st;
  if (shape.total_q_tokens == 0) return {};
  if (in.q == nullptr || in.k_pages == nullptr || in.v_pages == nullptr || out == nullptr) {
    return InvalidArgument("q, k_pages, v_pages and out must be non-null", "inputs");
  }

  const int64_t group = shape.heads / shape.kv_heads;
  std::vector<WorkItem> items;
  std::vector<double> cost;
  double total_pairs = 0;
  for (int64_t s = 0; s < shape.num_seqs; ++s) {
    const int64_t q_len = in.cu_q_lens[s + 1] - in.cu_q_lens[s];
    const int64_t first_pos = in.kv_lens[s] - q_len;
    for (int64_t qb = 0; qb < q_len; qb += bs.queries_per_block) {
      const int64_t qe = std::min(q_len, qb + bs.queries_per_block);
      // Keys streamed (each costs a K and V row read) plus score-row work per key.
      const double keys = double(first_pos + qe);
      const double c = keys * (8.0 + double((qe - qb) * group));
      total_pairs += keys * double(qe - qb);
      for (int64_t g = 0; g < shape.kv_heads; ++g) {
        items.push_back(WorkItem{static_cast<int32_t>(s), static_cast<int32_t>(g), static_cast<int32_t>(qb),
                                 static_cast<int32_t>(qe)});
        cost.push_back(c);
      }
    }
  }
  std::vector<int32_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return cost[a] > cost[b]; });

  const Context ctx{shape, bs, in, out};
  const double flops = 4.0 * double(shape.heads) * double(shape.head_dim) * total_pairs;
  const int useful = static_cast<int>(std::clamp(flops / kMinFlopsPerThread, 1.0, double(threads)));
  const int workers = static_cast<int>(std::min<int64_t>(useful, static_cast<int64_t>(items.size())));
  std::atomic<int64_t> next{0};
  const int64_t num_items = static_cast<int64_t>(items.size());
  ParallelRun(workers, [&](int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < num_items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(ctx, items[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    }
  });
  return {};
}

// --- The portable / AVX2 work item ----------------------------------------------------------------
// One body, force-inlined into two entry points: RunItemPortable (baseline x86-64 or any CPU)
// and RunItemAvx2 (target avx2,fma), so the compiler vectorises the same loops 4- or 8-wide.
// The layout is the AVX-512 lanes path's (score rows innermost: qt[d][r], s[t][r], ot[d][r]), so
// every inner loop is a contiguous, independent loop over rows that auto-vectorises without
// reassociation, and the exp below is branch-free arithmetic that vectorises too.

#define RPA_INLINE inline __attribute__((always_inline))

struct GenericScratch {
  std::vector<float> qt, s, ot, m, l, alpha, mx, sum, k, v;
  std::vector<int32_t> live;
  std::vector<const float*> k_rows, v_rows;
};
thread_local GenericScratch t_generic;

template <typename T>
RPA_INLINE void Grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// exp(x) for x <= 0 (scores minus their running max), same scheme as the AVX-512 Exp: n =
// round(x / ln2) by adding and subtracting 1.5 * 2^23, a degree-6 polynomial on the remainder
// and 2^n through the exponent bits. x is clamped at -87 so 2^n stays a normal float (exp(-87) ~
// 1.6e-38 stands in for 0; masked keys are zeroed explicitly).
RPA_INLINE float ExpNeg(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float shifter = 12582912.0f;  // 1.5 * 2^23
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t e = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &e, sizeof scale);
  return p * scale;
}

RPA_INLINE void Bf16Row(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(&out[i], &u, sizeof u);
  }
}

RPA_INLINE void ItemBodyLanes(const Context& ctx, const WorkItem& item, GenericScratch& sc) {
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d_len = sh.head_dim;
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t s_idx = item.seq;
  const int64_t g = item.kv_head;
  const int64_t q_off = in.cu_q_lens[s_idx];
  const int64_t q_len = in.cu_q_lens[s_idx + 1] - q_off;
  const int64_t first_pos = in.kv_lens[s_idx] - q_len;
  const int64_t rows = (item.q_end - item.q_begin) * group;
  const int64_t ldr = (rows + 7) / 8 * 8;
  const int64_t kv_end = first_pos + item.q_end;
  const int64_t block_tokens = std::min(ctx.bs.kv_pages_per_block * sh.page_size, std::max<int64_t>(kv_end, 1));
  const int32_t* pages = in.page_indices + s_idx * sh.pages_per_seq;

  Grow(sc.qt, d_len * ldr);
  Grow(sc.s, block_tokens * ldr);
  Grow(sc.ot, d_len * ldr);
  for (auto* v : {&sc.m, &sc.l, &sc.alpha, &sc.mx, &sc.sum}) Grow(*v, ldr);
  Grow(sc.live, ldr);
  Grow(sc.k, block_tokens * d_len);
  Grow(sc.v, block_tokens * d_len);
  float* __restrict qt = sc.qt.data();
  float* __restrict s = sc.s.data();
  float* __restrict ot = sc.ot.data();
  float* __restrict m = sc.m.data();
  float* __restrict l = sc.l.data();
  float* __restrict alpha = sc.alpha.data();
  float* __restrict mx = sc.mx.data();
  float* __restrict sum = sc.sum.data();
  int32_t* __restrict live = sc.live.data();

  const float scale = 1.0f / std::sqrt(static_cast<float>(d_len));
  std::fill(qt, qt + d_len * ldr, 0.0f);
  std::fill(ot, ot + d_len * ldr, 0.0f);
  for (int64_t r = 0; r < ldr; ++r) {
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    for (int64_t d = 0; d < d_len; ++d) {
      const float x = bf16 ? BF16ToFloat(BF16{static_cast<const uint16_t*>(in.q)[src + d]})
                           : static_cast<const float*>(in.q)[src + d];
      qt[d * ldr + r] = x * scale;
    }
  }

  for (int64_t kv0 = 0; kv0 < kv_end; kv0 += block_tokens) {
    const int64_t n = std::min(block_tokens, kv_end - kv0);
    // This block's K and V rows, contiguous (and widened for bf16).
    float* __restrict kb = sc.k.data();
    float* __restrict vb = sc.v.data();
    for (int64_t t = 0; t < n; ++t) {
      const int64_t pos = kv0 + t;
      const int64_t off = ((pages[pos / sh.page_size] * sh.page_size + pos % sh.page_size) * sh.kv_heads + g) * d_len;
      if (bf16) {
        Bf16Row(static_cast<const uint16_t*>(in.k_pages) + off, kb + t * d_len, d_len);
        Bf16Row(static_cast<const uint16_t*>(in.v_pages) + off, vb + t * d_len, d_len);
      } else {
        std::memcpy(kb + t * d_len, static_cast<const float*>(in.k_pages) + off, sizeof(float) * size_t(d_len));
        std::memcpy(vb + t * d_len, static_cast<const float*>(in.v_pages) + off, sizeof(float) * size_t(d_len));
      }
    }
    // Keys row r sees in this block (padding rows see all: their q is zero).
    for (int64_t r = 0; r < ldr; ++r) {
      const int64_t seen = r < rows ? first_pos + item.q_begin + r / group + 1 - kv0 : n;
      live[r] = static_cast<int32_t>(std::clamp<int64_t>(seen, 0, n));
      mx[r] = m[r];
      sum[r] = 0.0f;
    }
    // Scores s[t][r] and the running max.
    for (int64_t t = 0; t < n; ++t) {
      float* __restrict st = s + t * ldr;
      const float* __restrict kt = kb + t * d_len;
      for (int64_t r = 0; r < ldr; ++r) st[r] = 0.0f;
      for (int64_t d = 0; d < d_len; ++d) {
        const float kd = kt[d];
        const float* __restrict qd = qt + d * ldr;
        for (int64_t r = 0; r < ldr; ++r) st[r] += kd * qd[r];
      }
      for (int64_t r = 0; r < ldr; ++r) mx[r] = t < live[r] && st[r] > mx[r] ? st[r] : mx[r];
    }
    // p = exp(s - m_new) (0 for masked keys), alpha = exp(m_old - m_new), l = alpha * l + sum p.
    for (int64_t r = 0; r < ldr; ++r) {
      alpha[r] = m[r] == -std::numeric_limits<float>::infinity() ? 0.0f : ExpNeg(m[r] - mx[r]);
      m[r] = mx[r];
    }
    for (int64_t t = 0; t < n; ++t) {
      float* __restrict st = s + t * ldr;
      for (int64_t r = 0; r < ldr; ++r) {
        const float p = t < live[r] ? ExpNeg(st[r] - m[r]) : 0.0f;
        st[r] = p;
        sum[r] += p;
      }
    }
    for (int64_t r = 0; r < ldr; ++r) l[r] = l[r] * alpha[r] + sum[r];
    // ot[d][r] = alpha[r] * ot[d][r] + sum_t v_t[d] * p[t][r].
    for (int64_t d = 0; d < d_len; ++d) {
      float* __restrict od = ot + d * ldr;
      for (int64_t r = 0; r < ldr; ++r) od[r] *= alpha[r];
      for (int64_t t = 0; t < n; ++t) {
        const float vd = vb[t * d_len + d];
        const float* __restrict pt = s + t * ldr;
        for (int64_t r = 0; r < ldr; ++r) od[r] += vd * pt[r];
      }
    }
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* dst = ctx.out + ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    const float inv = 1.0f / l[r];
    for (int64_t d = 0; d < d_len; ++d) dst[d] = ot[d * ldr + r] * inv;
  }
}

// The dot-product form for few score rows (decode): the lanes form would run loops of 4-8 rows.
// Eight independent partial sums per dot product vectorise without reassociating.
RPA_INLINE float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  }
  for (; d < n; ++d) acc[0] += a[d] * b[d];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

RPA_INLINE void ItemBodyDot(const Context& ctx, const WorkItem& item, GenericScratch& sc) {
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d_len = sh.head_dim;
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t s_idx = item.seq;
  const int64_t g = item.kv_head;
  const int64_t q_off = in.cu_q_lens[s_idx];
  const int64_t q_len = in.cu_q_lens[s_idx + 1] - q_off;
  const int64_t first_pos = in.kv_lens[s_idx] - q_len;
  const int64_t rows = (item.q_end - item.q_begin) * group;
  const int64_t kv_end = first_pos + item.q_end;
  const int64_t block_tokens = std::min(ctx.bs.kv_pages_per_block * sh.page_size, std::max<int64_t>(kv_end, 1));
  const int32_t* pages = in.page_indices + s_idx * sh.pages_per_seq;

  Grow(sc.qt, rows * d_len);
  Grow(sc.s, rows * block_tokens);
  Grow(sc.ot, rows * d_len);
  Grow(sc.m, rows);
  Grow(sc.l, rows);
  Grow(sc.k_rows, block_tokens);
  Grow(sc.v_rows, block_tokens);
  if (bf16) {
    Grow(sc.k, block_tokens * d_len);
    Grow(sc.v, block_tokens * d_len);
  }
  float* q = sc.qt.data();
  float* s = sc.s.data();
  float* o = sc.ot.data();

  const float scale = 1.0f / std::sqrt(static_cast<float>(d_len));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    for (int64_t d = 0; d < d_len; ++d) {
      const float x = bf16 ? BF16ToFloat(BF16{static_cast<const uint16_t*>(in.q)[src + d]})
                           : static_cast<const float*>(in.q)[src + d];
      q[r * d_len + d] = x * scale;
      o[r * d_len + d] = 0.0f;
    }
    sc.m[static_cast<size_t>(r)] = -std::numeric_limits<float>::infinity();
    sc.l[static_cast<size_t>(r)] = 0.0f;
  }

  for (int64_t kv0 = 0; kv0 < kv_end; kv0 += block_tokens) {
    const int64_t n = std::min(block_tokens, kv_end - kv0);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t pos = kv0 + t;
      const int64_t off = ((pages[pos / sh.page_size] * sh.page_size + pos % sh.page_size) * sh.kv_heads + g) * d_len;
      if (bf16) {
        Bf16Row(static_cast<const uint16_t*>(in.k_pages) + off, sc.k.data() + t * d_len, d_len);
        Bf16Row(static_cast<const uint16_t*>(in.v_pages) + off, sc.v.data() + t * d_len, d_len);
        sc.k_rows[static_cast<size_t>(t)] = sc.k.data() + t * d_len;
        sc.v_rows[static_cast<size_t>(t)] = sc.v.data() + t * d_len;
      } else {
        sc.k_rows[static_cast<size_t>(t)] = static_cast<const float*>(in.k_pages) + off;
        sc.v_rows[static_cast<size_t>(t)] = static_cast<const float*>(in.v_pages) + off;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* sr = s + r * block_tokens;
      const int64_t n_valid = std::min(n, first_pos + item.q_begin + r / group - kv0 + 1);
      float& m = sc.m[static_cast<size_t>(r)];
      float& l = sc.l[static_cast<size_t>(r)];
      float* orow = o + r * d_len;
      if (n_valid <= 0) continue;  // this query's keys all precede the block
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < n_valid; ++t) {
        sr[t] = Dot(q + r * d_len, sc.k_rows[static_cast<size_t>(t)], d_len);
        mx = std::max(mx, sr[t]);
      }
      const float m_new = std::max(m, mx);
      const float alpha = m == -std::numeric_limits<float>::infinity() ? 0.0f : ExpNeg(m - m_new);
      float sum = 0.0f;
      for (int64_t t = 0; t < n_valid; ++t) {
        sr[t] = ExpNeg(sr[t] - m_new);
        sum += sr[t];
      }
      l = l * alpha + sum;
      m = m_new;
      for (int64_t d = 0; d < d_len; ++d) orow[d] *= alpha;
      for (int64_t t = 0; t < n_valid; ++t) {
        const float p = sr[t];
        const float* v = sc.v_rows[static_cast<size_t>(t)];
        for (int64_t d = 0; d < d_len; ++d) orow[d] += p * v[d];
      }
    }
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* dst = ctx.out + ((q_off + item.q_begin + r / group) * sh.heads + g * group + r % group) * d_len;
    const float inv = 1.0f / sc.l[static_cast<size_t>(r)];
    for (int64_t d = 0; d < d_len; ++d) dst[d] = o[r * d_len + d] * inv;
  }
}

// Items with at least this many score rows use the lanes form (as on AVX-512).
constexpr int64_t kGenericLanesMinRows = 16;

RPA_INLINE void ItemBodyAny(const Context& ctx, const WorkItem& item, GenericScratch& sc) {
  if ((item.q_end - item.q_begin) * (ctx.shape.heads / ctx.shape.kv_heads) >= kGenericLanesMinRows) {
    ItemBodyLanes(ctx, item, sc);
  } else {
    ItemBodyDot(ctx, item, sc);
  }
}

}  // namespace

namespace rpa_internal {

void RunItemPortable(const Context& ctx, const WorkItem& item) { ItemBodyAny(ctx, item, t_generic); }

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void RunItemAvx2(const Context& ctx, const WorkItem& item) {
  ItemBodyAny(ctx, item, t_generic);
}
#else
void RunItemAvx2(const Context& ctx, const WorkItem& item) { ItemBodyAny(ctx, item, t_generic); }
#endif

}  // namespace rpa_internal

Status Validate(const RaggedPagedAttentionBlockSizes& bs, const RaggedPagedAttentionShape& shape,
                const HardwareProfile& hw) {
  (void)hw;  // every ISA path takes any block sizes; the bounds below are memory bounds
  if (bs.kv_pages_per_block <= 0) {
    return InvalidArgument("kv_pages_per_block must be positive, got " + std::to_string(bs.kv_pages_per_block),
                           "config.kv_pages_per_block");
  }
  if (bs.queries_per_block <= 0) {
    return InvalidArgument("queries_per_block must be positive, got " + std::to_string(bs.queries_per_block),
                           "config.queries_per_block");
  }
  if (bs.queries_per_block > kRaggedPagedAttentionMaxQueriesPerBlock) {
    return InvalidArgument("queries_per_block must be at most " +
                               std::to_string(kRaggedPagedAttentionMaxQueriesPerBlock) + ", got " +
                               std::to_string(bs.queries_per_block),
                           "config.queries_per_block");
  }
  const std::pair<const char*, int64_t> dims[] = {
      {"num_seqs", shape.num_seqs},   {"total_q_tokens", shape.total_q_tokens}, {"num_pages", shape.num_pages},
      {"page_size", shape.page_size}, {"pages_per_seq", shape.pages_per_seq},   {"heads", shape.heads},
      {"kv_heads", shape.kv_heads},   {"head_dim", shape.head_dim}};
  for (const auto& [name, value] : dims) {
    const bool may_be_zero = std::string_view(name) == "total_q_tokens" || std::string_view(name) == "num_pages" ||
                             std::string_view(name) == "num_seqs";
    if (value < 0 || (value == 0 && !may_be_zero) || value > (int64_t{1} << 31) - 1) {
      return InvalidArgument(std::string(name) + " must be in [" + (may_be_zero ? "0" : "1") +
                                 ", 2^31), got " + std::to_string(value),
                             std::string("shape.") + name);
    }
  }
  if (shape.head_dim > kMaxHeadDim) {
    return InvalidArgument("head_dim must be at most " + std::to_string(kMaxHeadDim) + ", got " +
                               std::to_string(shape.head_dim),
                           "shape.head_dim");
  }
  if (shape.heads % shape.kv_heads != 0) {
    return InvalidArgument("heads (" + std::to_string(shape.heads) + ") must be a multiple of kv_heads (" +
                               std::to_string(shape.kv_heads) + ")",
                           "shape.heads");
  }
  // Checked after the shape so the product cannot overflow (both factors < 2^31 and the first
  // already bounded by the test below).
  if (bs.kv_pages_per_block > kRaggedPagedAttentionMaxBlockTokens ||
      bs.kv_pages_per_block * shape.page_size > kRaggedPagedAttentionMaxBlockTokens) {
    return InvalidArgument("kv_pages_per_block * page_size = " +
                               std::to_string(bs.kv_pages_per_block) + " * " + std::to_string(shape.page_size) +
                               " exceeds " + std::to_string(kRaggedPagedAttentionMaxBlockTokens) + " keys per block",
                           "config.kv_pages_per_block");
  }
  return {};
}

Status ValidateMetadata(const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in) {
  if (in.kv_lens == nullptr || in.cu_q_lens == nullptr || (shape.num_seqs > 0 && in.page_indices == nullptr)) {
    return InvalidArgument("kv_lens, cu_q_lens and page_indices must be non-null", "inputs");
  }
  if (in.cu_q_lens[0] != 0) return InvalidArgument("cu_q_lens[0] must be 0", "cu_q_lens[0]");
  for (int64_t s = 0; s < shape.num_seqs; ++s) {
    const std::string si = std::to_string(s);
    const int64_t q_len = int64_t{in.cu_q_lens[s + 1]} - in.cu_q_lens[s];
    if (q_len < 0) {
      return InvalidArgument("cu_q_lens must be non-decreasing", "cu_q_lens[" + std::to_string(s + 1) + "]");
    }
    const int64_t kv_len = in.kv_lens[s];
    if (kv_len < q_len || kv_len > shape.pages_per_seq * shape.page_size) {
      return InvalidArgument("kv_lens[" + si + "] = " + std::to_string(kv_len) + " must be in [q_len = " +
                                 std::to_string(q_len) + ", pages_per_seq * page_size = " +
                                 std::to_string(shape.pages_per_seq * shape.page_size) + "]",
                             "kv_lens[" + si + "]");
    }
    const int64_t used = (kv_len + shape.page_size - 1) / shape.page_size;
    for (int64_t j = 0; j < used; ++j) {
      const int64_t page = in.page_indices[s * shape.pages_per_seq + j];
      if (page < 0 || page >= shape.num_pages) {
        return InvalidArgument("page " + std::to_string(page) + " is outside [0, num_pages = " +
                                   std::to_string(shape.num_pages) + ")",
                               "page_indices[" + si + "][" + std::to_string(j) + "]");
      }
    }
  }
  if (in.cu_q_lens[shape.num_seqs] != shape.total_q_tokens) {
    return InvalidArgument("cu_q_lens[num_seqs] = " + std::to_string(in.cu_q_lens[shape.num_seqs]) +
                               " must equal total_q_tokens = " + std::to_string(shape.total_q_tokens),
                           "cu_q_lens[" + std::to_string(shape.num_seqs) + "]");
  }
  return {};
}

Status RaggedPagedAttention(const RaggedPagedAttentionBlockSizes& bs, const RaggedPagedAttentionShape& shape,
                            const RaggedPagedAttentionInputs& in, float* out, int threads) {
  return RunWith(FnForIsa(HostIsaName()), HostHardware(), bs, shape, in, out, threads);
}

Status RaggedPagedAttentionWithIsa(std::string_view isa, const RaggedPagedAttentionBlockSizes& bs,
                                   const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in,
                                   float* out, int threads) {
  const ItemFn fn = FnForIsa(isa);
  if (fn == nullptr) return InvalidArgument("unknown ISA '" + std::string(isa) + "'", "isa");
  if (!HostCanRun(isa)) {
    return MakeError(ErrorCode::kFailedPrecondition, "this CPU cannot run the " + std::string(isa) + " path",
                     "isa");
  }
  return RunWith(fn, HostHardware(), bs, shape, in, out, threads);
}

const char* RaggedPagedAttentionIsa() { return HostIsaName(); }

int64_t RaggedPagedAttentionPairs(const RaggedPagedAttentionShape& shape, const int32_t* kv_lens,
                                  const int32_t* cu_q_lens) {
  int64_t pairs = 0;
  for (int64_t s = 0; s < shape.num_seqs; ++s) {
    const int64_t q_len = cu_q_lens[s + 1] - cu_q_lens[s];
    const int64_t first = kv_lens[s] - q_len;  // keys seen by query 0, minus one
    // Query i sees first + i + 1 keys: sum over i of (first + 1 + i).
    pairs += q_len * (first + 1) + q_len * (q_len - 1) / 2;
  }
  return pairs;
}

}  // namespace blocktune::kernels
