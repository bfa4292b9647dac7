// The ragged_paged_attention driver and its one algorithm: validation of block sizes, shape and
// metadata, the work list of (sequence, KV head, query block) items and its thread schedule, ISA
// dispatch (one Ops table per ISA, kernels/core/isa_dispatch.h), and the work item in its two
// forms (see ragged_paged_attention_ops.h) around the per-ISA inner loops of ragged_paged_attention_<isa>.cc
// and flash_attention_<isa>.cc.
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

#include "kernels/core/isa_dispatch.h"
#include "kernels/core/parallel.h"
#include "kernels/core/scratch.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention_ops.h"

namespace blocktune::kernels {
namespace {

using rpa_internal::Ops;
namespace fa = flash_attention_internal;

// Below this many flops per thread waking a pool worker (~2-10 us) costs more than it saves
// (2^21 flops is ~10 us on one AVX-512 core).
constexpr double kMinFlopsPerThread = double(1 << 21);
// Largest head_dim: beyond any real model (256 is the largest in use), and it keeps a dot-form
// row of q or o (4 KiB) and a panel of qt (32 x 1024 floats) small scratch.
constexpr int64_t kMaxHeadDim = 1024;

constexpr int64_t RoundUp16(int64_t n) { return (n + 15) / 16 * 16; }

// One unit of parallel work: queries [q_begin, q_end) (indices within the sequence) of
// sequence `seq` for all query heads of KV head `kv_head`.
struct WorkItem {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int32_t q_begin = 0;
  int32_t q_end = 0;
};

struct Context {
  const Ops* ops = nullptr;
  RaggedPagedAttentionShape shape;
  RaggedPagedAttentionBlockSizes bs;
  RaggedPagedAttentionInputs in;
  float* out = nullptr;
};

// Per-thread scratch (the pool's workers persist, so after the first call nothing allocates).
// Every section starts 4 KiB-aligned, which the vector loads of both forms rely on.
struct Scratch {
  ScratchBuffer q, o, s, stats, k, v, rows;
  std::vector<const float*> k_rows, v_rows;
};
thread_local Scratch t_scratch;

// Where the work item's sequence sits.
struct ItemGeometry {
  int64_t q_off;      // first query token of the sequence in q / out
  int64_t first_pos;  // kv position of the sequence's first query (query i sees <= first_pos + i)
  int64_t kv_end;     // keys any query of the item sees
  int64_t block_tokens;
  const int32_t* pages;
};

ItemGeometry Geometry(const Context& ctx, const WorkItem& item) {
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  ItemGeometry g;
  g.q_off = in.cu_q_lens[item.seq];
  g.first_pos = in.kv_lens[item.seq] - (in.cu_q_lens[item.seq + 1] - g.q_off);
  g.kv_end = g.first_pos + item.q_end;
  g.block_tokens = std::min(ctx.bs.kv_pages_per_block * sh.page_size, std::max<int64_t>(g.kv_end, 1));
  g.pages = in.page_indices + int64_t{item.seq} * sh.pages_per_seq;
  return g;
}

// Offset (in elements) of KV head g's row of kv position pos in the page pools.
inline int64_t KvOffset(const RaggedPagedAttentionShape& sh, const int32_t* pages, int64_t pos, int64_t g) {
  return ((pages[pos / sh.page_size] * sh.page_size + pos % sh.page_size) * sh.kv_heads + g) * sh.head_dim;
}

// Asks for the K and V rows of kv positions [begin, end) of KV head kv_head to be brought into
// L2 (prefetcht1). The panel form calls it one block ahead of its packing loop: a block's panels
// take ~100 us (4 panels x 128 keys at head_dim 128), ample time for the next block's 256 rows
// scattered over 8 pages, which the hardware prefetchers do not follow across pages (f32 prefill
// batch on AVX2: 1.03x -> 1.06x of gather + flash_attention). The dot form (decode) gained
// nothing from it, in bursts or interleaved with its score tiles, and does not call it.
void PrefetchKv(const RaggedPagedAttentionShape& sh, const RaggedPagedAttentionInputs& in, const int32_t* pages,
                int64_t kv_head, int64_t begin, int64_t end) {
  const int64_t elem = DTypeBytes(in.dtype);
  const int64_t row_bytes = sh.head_dim * elem;
  const char* kp = static_cast<const char*>(in.k_pages);
  const char* vp = static_cast<const char*>(in.v_pages);
  for (int64_t pos = begin; pos < end; ++pos) {
    const int64_t off = KvOffset(sh, pages, pos, kv_head) * elem;
    for (int64_t b = 0; b < row_bytes; b += 64) {
      __builtin_prefetch(kp + off + b, 0, 2);
      __builtin_prefetch(vp + off + b, 0, 2);
    }
  }
}

// K and V rows of kv positions [kv0, kv0 + n) of KV head kv_head, packed contiguous (head_dim
// floats apart) into kb / vb: f32 copied, bf16 widened. Both forms read their block from here.
// Copying whole rows in order lets the hardware prefetchers stream each 512-byte row (head_dim
// 128, f32); the decode tiles reading the rows in place instead ran 20% slower on AVX2 (f32
// decode batch: 2.0x -> 2.4x of gather + flash_attention after packing), as their column sweeps
// over the V rows touch one cache line per row at a time.
void PackKvBlock(const fa::Ops& po, const RaggedPagedAttentionShape& sh, const RaggedPagedAttentionInputs& in,
                 const int32_t* pages, int64_t kv_head, int64_t kv0, int64_t n, float* kb, float* vb) {
  const int64_t d = sh.head_dim;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t off = KvOffset(sh, pages, kv0 + t, kv_head);
    if (in.dtype == DType::kBF16) {
      po.bf16_to_f32(static_cast<const uint16_t*>(in.k_pages) + off, kb + t * d, d);
      po.bf16_to_f32(static_cast<const uint16_t*>(in.v_pages) + off, vb + t * d, d);
    } else {
      std::memcpy(kb + t * d, static_cast<const float*>(in.k_pages) + off, sizeof(float) * static_cast<size_t>(d));
      std::memcpy(vb + t * d, static_cast<const float*>(in.v_pages) + off, sizeof(float) * static_cast<size_t>(d));
    }
  }
}

// --- Panel form (prefill) ------------------------------------------------------------------------
// Panel (h, p) holds query head g * group + h for the item's queries [q_begin + p * w, +cols).
// Per KV block: K and V rows are packed contiguous (f32 copied, bf16 widened: once per block,
// read by every panel of the item, so GQA heads share them from L1/L2), then each panel runs
// scores -> online softmax -> P.V, skipping keys past its last query and masking only the block
// that crosses its diagonal.
void RunPanelItem(const Context& ctx, const WorkItem& item, Scratch& sc) {
  const fa::Ops& po = *ctx.ops->panel;
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d = sh.head_dim;
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t w = po.panel;
  const int64_t nq = item.q_end - item.q_begin;
  const int64_t qpanels = (nq + w - 1) / w;
  const int64_t panels = group * qpanels;
  const int64_t pd = w * d;  // floats per panel of qt / ot (a multiple of 16: w is 16 or 32)
  const ItemGeometry geo = Geometry(ctx, item);
  const int64_t ld_tok = sh.heads * d;  // between consecutive tokens of one head in q / out

  float* qt = sc.q.Get(panels * pd);
  float* ot = sc.o.Get(panels * pd);
  float* s = sc.s.Get(geo.block_tokens * w);
  float* m = sc.stats.Get(3 * RoundUp16(panels * w));
  float* l = m + RoundUp16(panels * w);
  float* alpha = l + RoundUp16(panels * w);
  float* kb = sc.k.Get(geo.block_tokens * d);
  float* vb = sc.v.Get(geo.block_tokens * d);
  float* qrows = bf16 ? sc.rows.Get(w * d) : nullptr;

  // Q once per item: transposed and pre-scaled, so scores come out scaled.
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < group; ++h) {
    for (int64_t p = 0; p < qpanels; ++p) {
      const int64_t qa = item.q_begin + p * w;
      const int cols = static_cast<int>(std::min<int64_t>(w, item.q_end - qa));
      const int64_t src = ((geo.q_off + qa) * sh.heads + item.kv_head * group + h) * d;
      float* panel_qt = qt + (h * qpanels + p) * pd;
      if (bf16) {
        for (int c = 0; c < cols; ++c)
          po.bf16_to_f32(static_cast<const uint16_t*>(in.q) + src + c * ld_tok, qrows + c * d, d);
        po.pack_q(qrows, d, cols, d, scale, panel_qt);
      } else {
        po.pack_q(static_cast<const float*>(in.q) + src, ld_tok, cols, d, scale, panel_qt);
      }
    }
  }
  std::fill(ot, ot + panels * pd, 0.0f);
  std::fill(m, m + panels * w, -std::numeric_limits<float>::infinity());
  std::fill(l, l + panels * w, 0.0f);

  for (int64_t kv0 = 0; kv0 < geo.kv_end; kv0 += geo.block_tokens) {
    const int64_t n = std::min(geo.block_tokens, geo.kv_end - kv0);
    PackKvBlock(po, sh, in, geo.pages, item.kv_head, kv0, n, kb, vb);
    PrefetchKv(sh, in, geo.pages, item.kv_head, kv0 + n, std::min(kv0 + n + geo.block_tokens, geo.kv_end));
    for (int64_t h = 0; h < group; ++h) {
      for (int64_t p = 0; p < qpanels; ++p) {
        const int64_t qa = item.q_begin + p * w;
        const int cols = static_cast<int>(std::min<int64_t>(w, item.q_end - qa));
        // Lane c (query qa + c) sees kv positions <= first_pos + qa + c.
        const int64_t limit = geo.first_pos + qa + cols;  // keys the panel's last query sees
        if (kv0 >= limit) continue;
        const int64_t kbp = std::min(n, limit - kv0);
        const bool masked = kv0 + kbp - 1 > geo.first_pos + qa;
        const int64_t pi = h * qpanels + p;
        po.scores(kb, d, qt + pi * pd, d, kbp, cols, s);
        // flash_attention's mask: lane c of key row j is masked iff c < j + mask_base, i.e.
        // kv0 + j > first_pos + qa + c.
        po.softmax(s, kbp, cols, m + pi * w, l + pi * w, alpha + pi * w, masked, kv0 - geo.first_pos - qa);
        po.pv(vb, d, s, kbp, cols, d, ot + pi * pd, alpha + pi * w);
      }
    }
  }

  // Normalise and transpose back. Every query saw key 0, so l > 0.
  for (int64_t i = 0; i < panels * w; ++i) alpha[i] = 1.0f / l[i];
  for (int64_t h = 0; h < group; ++h) {
    for (int64_t p = 0; p < qpanels; ++p) {
      const int64_t qa = item.q_begin + p * w;
      const int cols = static_cast<int>(std::min<int64_t>(w, item.q_end - qa));
      const int64_t pi = h * qpanels + p;
      po.store_o(ot + pi * pd, cols, d, alpha + pi * w,
                 ctx.out + ((geo.q_off + qa) * sh.heads + item.kv_head * group + h) * d, ld_tok);
    }
  }
}

// --- Dot form (decode) ---------------------------------------------------------------------------
// Score row r is query q_begin + r / group of head kv_head * group + r % group (the GQA heads of
// a query are adjacent, so a decode item's rows are its group's heads). K and V are packed per
// block like the panel form's.
void RunDotItem(const Context& ctx, const WorkItem& item, Scratch& sc) {
  const Ops& ops = *ctx.ops;
  const RaggedPagedAttentionShape& sh = ctx.shape;
  const RaggedPagedAttentionInputs& in = ctx.in;
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d = sh.head_dim;
  const int64_t dp = RoundUp16(d);
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t rows = (item.q_end - item.q_begin) * group;
  const ItemGeometry geo = Geometry(ctx, item);
  const int64_t lds = RoundUp16(geo.block_tokens);

  float* q = sc.q.Get(rows * dp);
  float* o = sc.o.Get(rows * dp);
  float* s = sc.s.Get(rows * lds);
  float* m = sc.stats.Get(3 * rows);
  float* l = m + rows;
  float* alpha = l + rows;
  float* kbuf = sc.k.Get(geo.block_tokens * d);
  float* vbuf = sc.v.Get(geo.block_tokens * d);
  if (static_cast<int64_t>(sc.k_rows.size()) < geo.block_tokens + 16) {
    sc.k_rows.resize(static_cast<size_t>(geo.block_tokens + 16));
    sc.v_rows.resize(static_cast<size_t>(geo.block_tokens + 16));
  }
  const float** k_rows = sc.k_rows.data();
  const float** v_rows = sc.v_rows.data();

  // Q rows scaled by 1/sqrt(head_dim) once here instead of per score, zero-padded to dp.
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::fill(q, q + rows * dp, 0.0f);
  std::fill(o, o + rows * dp, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = ((geo.q_off + item.q_begin + r / group) * sh.heads + item.kv_head * group + r % group) * d;
    float* qr = q + r * dp;
    if (bf16) {
      ops.panel->bf16_to_f32(static_cast<const uint16_t*>(in.q) + src, qr, d);
    } else {
      std::memcpy(qr, static_cast<const float*>(in.q) + src, sizeof(float) * static_cast<size_t>(d));
    }
    for (int64_t i = 0; i < d; ++i) qr[i] *= scale;
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }

  for (int64_t kv0 = 0; kv0 < geo.kv_end; kv0 += geo.block_tokens) {
    const int64_t n = std::min(geo.block_tokens, geo.kv_end - kv0);
    PackKvBlock(*ops.panel, sh, in, geo.pages, item.kv_head, kv0, n, kbuf, vbuf);
    for (int64_t t = 0; t < n; ++t) {
      k_rows[t] = kbuf + t * d;
      v_rows[t] = vbuf + t * d;
    }
    for (int64_t t = n; t < n + 16; ++t) k_rows[t] = k_rows[n - 1];  // partial key tiles read valid rows
    ops.dot_scores(q, dp, rows, k_rows, n, d, s, lds);
    // Row r sees positions <= first_pos + q_begin + r / group; later keys of the block are masked.
    int64_t n_pv = 0;  // keys any row still needs in P.V
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n_valid = std::min(n, geo.first_pos + item.q_begin + r / group - kv0 + 1);
      alpha[r] = ops.softmax_row(s + r * lds, n, n_valid, m + r, l + r);
      n_pv = std::max(n_pv, n_valid);
    }
    ops.dot_pv(s, lds, rows, v_rows, n_pv, d, o, dp, alpha);
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* dst = ctx.out + ((geo.q_off + item.q_begin + r / group) * sh.heads + item.kv_head * group + r % group) * d;
    const float inv = 1.0f / l[r];
    for (int64_t i = 0; i < d; ++i) dst[i] = o[r * dp + i] * inv;
  }
}

void RunItem(const Context& ctx, const WorkItem& item) {
  if (item.q_end - item.q_begin >= ctx.ops->panel_min_queries) {
    RunPanelItem(ctx, item, t_scratch);
  } else {
    RunDotItem(ctx, item, t_scratch);
  }
}

Status RunWith(const Ops& ops, const HardwareProfile& hw, const RaggedPagedAttentionBlockSizes& bs,
               const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in, float* out, int threads) {
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
  // Costliest first, ties in index order (what stable_sort gives, without its temporary buffer).
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return cost[a] != cost[b] ? cost[a] > cost[b] : a < b; });

  const Context ctx{&ops, shape, bs, in, out};
  const double flops = 4.0 * double(shape.heads) * double(shape.head_dim) * total_pairs;
  const int useful = static_cast<int>(std::clamp(flops / kMinFlopsPerThread, 1.0, double(threads)));
  const int workers = static_cast<int>(std::min<int64_t>(useful, static_cast<int64_t>(items.size())));
  std::atomic<int64_t> next{0};
  const int64_t num_items = static_cast<int64_t>(items.size());
  ParallelRun(workers, [&](int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < num_items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      RunItem(ctx, items[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    }
  });
  return {};
}

}  // namespace

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
      {"num_seqs", shape.num_seqs},           {"total_q_tokens", shape.total_q_tokens},
      {"num_pages", shape.num_pages},         {"page_size", shape.page_size},
      {"pages_per_seq", shape.pages_per_seq}, {"heads", shape.heads},
      {"kv_heads", shape.kv_heads},           {"head_dim", shape.head_dim}};
  for (const auto& [name, value] : dims) {
    const bool may_be_zero = std::string_view(name) == "total_q_tokens" || std::string_view(name) == "num_pages" ||
                             std::string_view(name) == "num_seqs";
    if (value < 0 || (value == 0 && !may_be_zero) || value > (int64_t{1} << 31) - 1) {
      return InvalidArgument(
          std::string(name) + " must be in [" + (may_be_zero ? "0" : "1") + ", 2^31), got " + std::to_string(value),
          std::string("shape.") + name);
    }
  }
  if (shape.head_dim > kMaxHeadDim) {
    return InvalidArgument(
        "head_dim must be at most " + std::to_string(kMaxHeadDim) + ", got " + std::to_string(shape.head_dim),
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
    return InvalidArgument("kv_pages_per_block * page_size = " + std::to_string(bs.kv_pages_per_block) + " * " +
                               std::to_string(shape.page_size) + " exceeds " +
                               std::to_string(kRaggedPagedAttentionMaxBlockTokens) + " keys per block",
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
      return InvalidArgument(
          "kv_lens[" + si + "] = " + std::to_string(kv_len) + " must be in [q_len = " + std::to_string(q_len) +
              ", pages_per_seq * page_size = " + std::to_string(shape.pages_per_seq * shape.page_size) + "]",
          "kv_lens[" + si + "]");
    }
    const int64_t used = (kv_len + shape.page_size - 1) / shape.page_size;
    for (int64_t j = 0; j < used; ++j) {
      const int64_t page = in.page_indices[s * shape.pages_per_seq + j];
      if (page < 0 || page >= shape.num_pages) {
        return InvalidArgument(
            "page " + std::to_string(page) + " is outside [0, num_pages = " + std::to_string(shape.num_pages) + ")",
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
  return RunWith(HostOps<Ops>(), HostHardware(), bs, shape, in, out, threads);
}

Status RaggedPagedAttentionWithIsa(std::string_view isa, const RaggedPagedAttentionBlockSizes& bs,
                                   const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in,
                                   float* out, int threads) {
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return RunWith(*forced->ops, forced->hw, bs, shape, in, out, threads);
}

const char* RaggedPagedAttentionIsa() { return HostOps<Ops>().name; }

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
