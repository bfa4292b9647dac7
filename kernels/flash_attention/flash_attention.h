// flash_attention: O = softmax(scale * Q K^T [+ causal mask]) V and its logsumexp, computed
// FlashAttention-style: queries in blocks of block_q, keys/values streamed in blocks of block_kv
// with a running max and sum per query row, so the [seq_q, seq_kv] score matrix is never
// materialised (scratch per thread is O((block_q + block_kv) * head_dim)). Grouped-query and
// multi-query attention: q head h reads kv head h / (heads / kv_heads). Inputs f32 or bf16
// (storage only, f32 arithmetic); outputs f32.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

// Q [batch, heads, seq_q, head_dim]; K, V [batch, kv_heads, seq_kv, head_dim]; O like Q;
// LSE [batch, heads, seq_q]. All row-major and contiguous.
struct FlashAttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  int64_t head_dim = 64;
  // Causal mask aligned bottom-right (FlashAttention-2): query i attends to keys
  // j <= i + seq_kv - seq_q. A query with no key left outputs 0 and logsumexp -inf.
  bool causal = false;
};

struct FlashAttentionBlockSizes {
  int64_t block_q = 128;   // queries per work item (multiple of kFlashAttentionGranularity)
  int64_t block_kv = 128;  // keys/values per streamed block (multiple of kFlashAttentionGranularity)

  static constexpr std::array<ParamField<FlashAttentionBlockSizes>, 2> kParams{{
      {"block_q", &FlashAttentionBlockSizes::block_q},
      {"block_kv", &FlashAttentionBlockSizes::block_kv},
  }};
  friend bool operator==(const FlashAttentionBlockSizes&, const FlashAttentionBlockSizes&) = default;
};

// Block sizes must be multiples of 16: one AVX-512 vector of queries (two AVX2 vectors), and
// whole micro-tiles of keys (8 rows on AVX-512, so 16 leaves no partial tile inside a block).
inline constexpr int64_t kFlashAttentionGranularity = 16;
// Larger blocks than this are typos: 4096 is already 2x the longest sequence bucket we tune
// for one block and would make the per-thread scratch tens of MiB at head_dim 256.
inline constexpr int64_t kFlashAttentionMaxBlock = 4096;

// 1 / sqrt(head_dim), the scale used when the caller passes none.
float FlashAttentionDefaultScale(int64_t head_dim);

// Why these block sizes cannot run this shape on this hardware (one reason; Error::path is
// "config.block_q"/"config.block_kv" for block sizes, "shape.<dim>" for the shape, e.g.
// "shape.kv_heads" when heads is not a multiple of kv_heads); ok if they can. Blocks larger
// than the sequence are fine (the kernel clamps them).
Status Validate(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const HardwareProfile& hw);

// The tuned kernel on the host's best ISA. `lse` may be null (not written). `scale` defaults to
// 1/sqrt(head_dim). Returns the Validate error (or a bad `threads`) without writing anything.
Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const float* q,
                      const float* k, const float* v, float* o, float* lse, int threads,
                      std::optional<float> scale = std::nullopt);
// bf16 inputs given as raw bf16 bit patterns (see dtype.h); outputs f32.
Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const uint16_t* q,
                      const uint16_t* k, const uint16_t* v, float* o, float* lse, int threads,
                      std::optional<float> scale = std::nullopt);

// The same with a forced ISA ("avx512", "avx2", "portable"/"base") and a run-time dtype (q, k, v
// point at float or bf16 bits). An error if this CPU cannot run that ISA. For tests/benchmarks.
Status FlashAttentionWithIsa(std::string_view isa, const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape,
                             DType dtype, const void* q, const void* k, const void* v, float* o, float* lse,
                             int threads, std::optional<float> scale = std::nullopt);

// The plain oracle: per query row, scores in double, max, exp, sum and the weighted sum of V in
// double. f32 inputs (bf16 callers convert their rounded values first).
void FlashAttentionReference(const FlashAttentionShape& shape, const float* q, const float* k, const float* v, float* o,
                             float* lse, std::optional<float> scale = std::nullopt);

// Bytes of scratch one thread allocates for these block sizes (the kernel's whole extra memory
// per thread; compare with the 4 * seq_q * seq_kv bytes of a materialised score matrix).
int64_t FlashAttentionScratchBytes(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, DType dtype,
                                   std::string_view isa);

// The ISA in use on this CPU: "avx512", "avx2" or "portable".
const char* FlashAttentionIsa();

// Unmasked (query, key) pairs of one head: seq_q * seq_kv, or fewer under the causal mask.
int64_t FlashAttentionPairs(const FlashAttentionShape& shape);

// Verification tolerance for outputs of this shape (see spec.cc for the reasoning).
Tolerance FlashAttentionTolerance(const FlashAttentionShape& shape);

const KernelSpec& FlashAttentionSpec();

}  // namespace blocktune::kernels
