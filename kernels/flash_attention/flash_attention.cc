// The flash_attention driver: validation, ISA dispatch, the work split over (batch, head,
// query block) items, and the FlashAttention loop of one item (pack Q once, stream kv blocks
// through scores -> online softmax -> P*V, skip causal blocks above the diagonal, normalise)
// around the per-ISA inner loops of flash_attention_<isa>.cc.
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/core/isa_dispatch.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/core/parallel.h"
#include "kernels/core/scratch.h"
#include "kernels/flash_attention/flash_attention_ops.h"

namespace blocktune::kernels {
namespace {

using flash_attention_internal::Ops;

// Dims beyond this are not a real attention call and would overflow the index products.
constexpr int64_t kMaxDim = int64_t{1} << 31;
// Below this many flops per thread, waking a worker (~2-10 us) costs more than it saves
// (2^21 flops is ~10 us on one AVX-512 core), so small problems use fewer threads.
constexpr double kMinFlopsPerThread = double(1 << 21);

thread_local ScratchBuffer t_scratch;

constexpr int64_t RoundUp16(int64_t n) { return (n + 15) / 16 * 16; }

// Scratch sections of one thread, in floats; each a multiple of 16 floats so all stay 64-byte
// aligned. Blocks larger than the sequence are clamped first, so a small problem with large
// blocks does not allocate for the nominal block.
struct ScratchLayout {
  int64_t panels = 0;  // query panels per block
  int64_t qt = 0, ot = 0, s = 0, stats = 0, kv = 0, qrows = 0;
  int64_t Total() const { return qt + ot + s + 3 * stats + 2 * kv + qrows; }
};

ScratchLayout Layout(int panel, const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, DType dtype) {
  ScratchLayout l;
  const int64_t qb = std::min(bs.block_q, shape.seq_q);
  const int64_t kb = std::min(bs.block_kv, shape.seq_kv);
  l.panels = (qb + panel - 1) / panel;
  l.qt = RoundUp16(l.panels * panel * shape.head_dim);
  l.ot = l.qt;
  l.s = RoundUp16(kb * panel);
  l.stats = RoundUp16(l.panels * panel);
  l.kv = dtype == DType::kBF16 ? RoundUp16(kb * shape.head_dim) : 0;
  l.qrows = dtype == DType::kBF16 ? RoundUp16(panel * shape.head_dim) : 0;  // one panel of Q rows in f32
  return l;
}

struct Args {
  const Ops* ops;
  FlashAttentionBlockSizes bs;
  FlashAttentionShape shape;
  DType dtype;
  const void* q;
  const void* k;
  const void* v;
  float* o;
  float* lse;
  float scale;
};

// One work item: query block `qi` of head `h` in batch `b`.
void ProcessItem(const Args& a, const ScratchLayout& lay, int64_t b, int64_t h, int64_t qi, float* scratch) {
  const Ops& ops = *a.ops;
  const FlashAttentionShape& sh = a.shape;
  const int64_t d_len = sh.head_dim;
  const int w = ops.panel;
  const int64_t q0 = qi * a.bs.block_q;
  const int64_t qb = std::min(a.bs.block_q, sh.seq_q - q0);
  const int64_t panels = (qb + w - 1) / w;
  const int64_t kvh = h / (sh.heads / sh.kv_heads);
  const int64_t q_offset = (b * sh.heads + h) * sh.seq_q + q0;  // in rows of head_dim
  const int64_t kv_offset = (b * sh.kv_heads + kvh) * sh.seq_kv;
  // Bottom-right causal alignment: query i sees keys j <= i + diag.
  const int64_t diag = sh.seq_kv - sh.seq_q;
  // Keys beyond the last query's limit are masked for the whole block: never visited.
  const int64_t kv_end = sh.causal ? std::clamp<int64_t>(q0 + qb + diag, 0, sh.seq_kv) : sh.seq_kv;

  float* qt = scratch;
  float* ot = qt + lay.qt;
  float* s = ot + lay.ot;
  float* m = s + lay.s;
  float* l = m + lay.stats;
  float* alpha = l + lay.stats;
  float* kf = alpha + lay.stats;
  float* vf = kf + lay.kv;
  float* qrows = vf + lay.kv;

  // Q once per block: transposed and pre-scaled, so scores come out scaled.
  for (int64_t p = 0; p < panels; ++p) {
    const int rows = static_cast<int>(std::min<int64_t>(w, qb - p * w));
    const float* src;
    if (a.dtype == DType::kF32) {
      src = static_cast<const float*>(a.q) + (q_offset + p * w) * d_len;
    } else {
      ops.bf16_to_f32(static_cast<const uint16_t*>(a.q) + (q_offset + p * w) * d_len, qrows, rows * d_len);
      src = qrows;
    }
    ops.pack_q(src, d_len, rows, d_len, a.scale, qt + p * w * d_len);
  }
  std::fill(ot, ot + panels * w * d_len, 0.0f);
  std::fill(m, m + panels * w, -std::numeric_limits<float>::infinity());
  std::fill(l, l + panels * w, 0.0f);

  for (int64_t k0 = 0; k0 < kv_end; k0 += a.bs.block_kv) {
    const int64_t kb = std::min(a.bs.block_kv, kv_end - k0);
    // Only blocks crossing the diagonal need the mask: the first query of the block may not
    // see this block's last key.
    const bool masked = sh.causal && k0 + kb - 1 > q0 + diag;
    const float* kp;
    const float* vp;
    if (a.dtype == DType::kF32) {
      kp = static_cast<const float*>(a.k) + (kv_offset + k0) * d_len;
      vp = static_cast<const float*>(a.v) + (kv_offset + k0) * d_len;
    } else {
      // Converted once per block, then read by every panel of the block.
      ops.bf16_to_f32(static_cast<const uint16_t*>(a.k) + (kv_offset + k0) * d_len, kf, kb * d_len);
      ops.bf16_to_f32(static_cast<const uint16_t*>(a.v) + (kv_offset + k0) * d_len, vf, kb * d_len);
      kp = kf;
      vp = vf;
    }
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t c0 = p * w;
      const int cols = static_cast<int>(std::min<int64_t>(w, qb - c0));
      const int64_t pw = p * w;
      ops.scores(kp, d_len, qt + pw * d_len, d_len, kb, cols, s);
      // Lane c of key row j is masked iff k0 + j > q0 + c0 + c + diag.
      ops.softmax(s, kb, cols, m + pw, l + pw, alpha + pw, masked, k0 - diag - q0 - c0);
      ops.pv(vp, d_len, s, kb, cols, d_len, ot + pw * d_len, alpha + pw);
    }
  }

  // Normalise and transpose back: O[i][d] = ot[d][c] / l[c]; a query that saw no key gets 0
  // (its ot column is 0: alpha and p were exactly 0 for it). alpha is free now: reuse it for 1/l.
  for (int64_t i = 0; i < qb; ++i) {
    const bool empty = m[i] == -std::numeric_limits<float>::infinity() || !(l[i] > 0.0f);
    alpha[i] = empty ? 0.0f : 1.0f / l[i];
    if (a.lse != nullptr) {
      a.lse[q_offset + i] = empty ? -std::numeric_limits<float>::infinity() : m[i] + std::log(l[i]);
    }
  }
  for (int64_t p = 0; p < panels; ++p) {
    const int cols = static_cast<int>(std::min<int64_t>(w, qb - p * w));
    ops.store_o(ot + p * w * d_len, cols, d_len, alpha + p * w, a.o + (q_offset + p * w) * d_len, d_len);
  }
}

Status Run(const Ops& ops, const HardwareProfile& hw, const FlashAttentionBlockSizes& bs,
           const FlashAttentionShape& shape, DType dtype, const void* q, const void* k, const void* v, float* o,
           float* lse, int threads, std::optional<float> scale) {
  if (auto s = Validate(bs, shape, hw); !s) return s;
  if (threads < 1) return InvalidArgument("threads must be >= 1, got " + std::to_string(threads), "threads");
  if (scale.has_value() && !std::isfinite(*scale)) return InvalidArgument("scale must be finite", "scale");
  const int64_t q_blocks = (shape.seq_q + bs.block_q - 1) / bs.block_q;
  const int64_t bh = shape.batch * shape.heads;
  const int64_t items = bh * q_blocks;
  if (items == 0) return {};
  Args a{&ops, bs, shape, dtype, q,
         k,    v,  o,     lse,   scale.has_value() ? *scale : FlashAttentionDefaultScale(shape.head_dim)};
  const ScratchLayout lay = Layout(ops.panel, bs, shape, dtype);
  const double flops = 4.0 * double(bh) * double(FlashAttentionPairs(shape)) * double(shape.head_dim);
  const int useful =
      static_cast<int>(std::min<double>({std::max(1.0, flops / kMinFlopsPerThread), double(threads), double(items)}));
  // Items are handed out dynamically, most expensive first: under the causal mask the last
  // query blocks see the most keys (up to q_blocks x the first), so a static contiguous split
  // would leave one thread with ~3/4 of the work at 2 threads. Heads are the fastest-varying
  // index so the q heads of one GQA group, which read the same K/V, run close together.
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  ParallelRun(useful, [&](int) {
    // A thread whose scratch cannot be allocated takes no items; the others finish them.
    float* scratch = t_scratch.Get(lay.Total());
    if (scratch == nullptr) return;
    for (;;) {
      const int64_t t = next.fetch_add(1, std::memory_order_relaxed);
      if (t >= items) break;
      const int64_t qi = q_blocks - 1 - t / bh;
      const int64_t head_index = t % bh;
      ProcessItem(a, lay, head_index / shape.heads, head_index % shape.heads, qi, scratch);
      done.fetch_add(1, std::memory_order_relaxed);
    }
  });
  if (done.load() != items) {
    return MakeError(ErrorCode::kResourceExhausted,
                     "cannot allocate " + std::to_string(lay.Total() * 4) + " bytes of scratch", "config.block_q");
  }
  return {};
}

}  // namespace

float FlashAttentionDefaultScale(int64_t head_dim) {
  return head_dim > 0 ? static_cast<float>(1.0 / std::sqrt(double(head_dim))) : 1.0f;
}

int64_t FlashAttentionPairs(const FlashAttentionShape& s) {
  if (!s.causal) return s.seq_q * s.seq_kv;
  // Query i sees clamp(i + diag + 1, 0, seq_kv) keys. With diag = seq_kv - seq_q the upper
  // clamp only touches the last row (which sees exactly seq_kv), so rows from the first one
  // with a key, max(0, -diag), to the last form an arithmetic series ending at seq_kv.
  const int64_t diag = s.seq_kv - s.seq_q;
  const int64_t first_row = std::max<int64_t>(0, -diag);
  const int64_t rows = s.seq_q - first_row;
  if (rows <= 0) return 0;
  const int64_t first_count = first_row + diag + 1;
  return rows * first_count + rows * (rows - 1) / 2;
}

Status Validate(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const HardwareProfile& hw) {
  const std::pair<const char*, int64_t> params[] = {{"block_q", bs.block_q}, {"block_kv", bs.block_kv}};
  for (const auto& [name, value] : params) {
    const std::string path = std::string("config.") + name;
    if (value <= 0) return InvalidArgument(std::string(name) + " must be positive, got " + std::to_string(value), path);
    if (value % kFlashAttentionGranularity != 0) {
      return InvalidArgument(std::string(name) + " must be a multiple of " +
                                 std::to_string(kFlashAttentionGranularity) + " (one AVX-512 vector of f32), got " +
                                 std::to_string(value),
                             path);
    }
    if (value > kFlashAttentionMaxBlock) {
      return InvalidArgument(std::string(name) + " must be at most " + std::to_string(kFlashAttentionMaxBlock) +
                                 ", got " + std::to_string(value),
                             path);
    }
  }
  const std::pair<const char*, int64_t> dims[] = {{"batch", shape.batch},       {"heads", shape.heads},
                                                  {"kv_heads", shape.kv_heads}, {"seq_q", shape.seq_q},
                                                  {"seq_kv", shape.seq_kv},     {"head_dim", shape.head_dim}};
  for (const auto& [name, value] : dims) {
    const std::string path = std::string("shape.") + name;
    if (value < 0) return InvalidArgument(std::string(name) + " must be >= 0, got " + std::to_string(value), path);
    if (value > kMaxDim) {
      return InvalidArgument(std::string(name) + " must be at most 2^31, got " + std::to_string(value), path);
    }
  }
  if (shape.head_dim < 1) return InvalidArgument("head_dim must be >= 1, got 0", "shape.head_dim");
  if (shape.kv_heads < 1) return InvalidArgument("kv_heads must be >= 1, got 0", "shape.kv_heads");
  if (shape.heads % shape.kv_heads != 0) {
    return InvalidArgument("heads (" + std::to_string(shape.heads) + ") must be a multiple of kv_heads (" +
                               std::to_string(shape.kv_heads) + ")",
                           "shape.kv_heads");
  }
  // The per-thread scratch grows with block * head_dim; past 256 MiB it is a typo, not tuning.
  const int64_t scratch = FlashAttentionScratchBytes(bs, shape, DType::kBF16, hw.cpu.isa);
  if (scratch > (int64_t{256} << 20)) {
    return InvalidArgument("per-thread scratch of " + std::to_string(scratch >> 20) + " MiB exceeds 256 MiB",
                           "config.block_q");
  }
  return {};
}

int64_t FlashAttentionScratchBytes(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, DType dtype,
                                   std::string_view isa) {
  const int panel = isa == "avx512" ? flash_attention_internal::kAvx512Panel
                    : isa == "avx2" ? flash_attention_internal::kAvx2Panel
                                    : flash_attention_internal::kPortablePanel;
  return 4 * Layout(panel, bs, shape, dtype).Total();
}

Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const float* q,
                      const float* k, const float* v, float* o, float* lse, int threads, std::optional<float> scale) {
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, DType::kF32, q, k, v, o, lse, threads, scale);
}

Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const uint16_t* q,
                      const uint16_t* k, const uint16_t* v, float* o, float* lse, int threads,
                      std::optional<float> scale) {
  return Run(HostOps<Ops>(), HostHardware(), bs, shape, DType::kBF16, q, k, v, o, lse, threads, scale);
}

Status FlashAttentionWithIsa(std::string_view isa, const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape,
                             DType dtype, const void* q, const void* k, const void* v, float* o, float* lse,
                             int threads, std::optional<float> scale) {
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return Run(*forced->ops, forced->hw, bs, shape, dtype, q, k, v, o, lse, threads, scale);
}

const char* FlashAttentionIsa() { return HostOps<Ops>().name; }

}  // namespace blocktune::kernels
