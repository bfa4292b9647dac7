// ragged_paged_attention: causal attention of a ragged batch of query tokens (decode, prefill
// and chunked prefill in one call) against a paged KV cache, as JAX's Pallas TPU
// ragged_paged_attention. Sequence s owns page_indices[s, 0..pages_per_seq) of the page pools
// k_pages / v_pages [num_pages, page_size, kv_heads, head_dim]; its q_len = cu_q_lens[s+1] -
// cu_q_lens[s] query tokens are the LAST q_len of its kv_lens[s] tokens, so query i attends to kv
// positions <= kv_len - q_len + i. Work items are (sequence, kv head, block of queries_per_block
// queries); each streams its sequence's KV kv_pages_per_block pages at a time straight out of the
// page pool with an online softmax, so no sequence's KV is ever gathered and no score matrix
// larger than (queries_per_block * heads/kv_heads) x (kv_pages_per_block * page_size) exists.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

// The concrete call shape. q is [total_q_tokens, heads, head_dim], k_pages/v_pages are
// [num_pages, page_size, kv_heads, head_dim], page_indices is [num_seqs, pages_per_seq], kv_lens
// is [num_seqs], cu_q_lens is [num_seqs + 1]; the output is [total_q_tokens, heads, head_dim] f32.
struct RaggedPagedAttentionShape {
  int64_t num_seqs = 0;
  int64_t total_q_tokens = 0;
  int64_t num_pages = 0;
  int64_t page_size = 0;
  int64_t pages_per_seq = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

// The tensors of one call. q/k_pages/v_pages point at float for DType::kF32 and at uint16_t
// bf16 bits for DType::kBF16.
struct RaggedPagedAttentionInputs {
  DType dtype = DType::kF32;
  const void* q = nullptr;
  const void* k_pages = nullptr;
  const void* v_pages = nullptr;
  const int32_t* kv_lens = nullptr;
  const int32_t* page_indices = nullptr;
  const int32_t* cu_q_lens = nullptr;
};

struct RaggedPagedAttentionBlockSizes {
  int64_t kv_pages_per_block = 8;  // KV pages per online-softmax step (8 x 16-token pages = 128 keys)
  int64_t queries_per_block = 16;  // query tokens per work item (times heads/kv_heads score rows)

  static constexpr std::array<ParamField<RaggedPagedAttentionBlockSizes>, 2> kParams{{
      {"kv_pages_per_block", &RaggedPagedAttentionBlockSizes::kv_pages_per_block},
      {"queries_per_block", &RaggedPagedAttentionBlockSizes::queries_per_block},
  }};
  friend bool operator==(const RaggedPagedAttentionBlockSizes&, const RaggedPagedAttentionBlockSizes&) = default;
};

// Largest KV block in tokens (kv_pages_per_block * page_size): a block's score rows and its
// bf16-converted K and V (2 * 4096 * 256 * 4 B = 8 MiB at head_dim 256) must stay a scratch
// buffer, not a second copy of a whole sequence.
inline constexpr int64_t kRaggedPagedAttentionMaxBlockTokens = 4096;
// Largest queries_per_block: 1024 queries x 16 heads per KV head is already 16384 score rows.
inline constexpr int64_t kRaggedPagedAttentionMaxQueriesPerBlock = 1024;

// Why these block sizes cannot run this shape (one reason; Error::path "config.<param>" for the
// block sizes, "shape.<dim>" for the shape); ok if they can. Blocks larger than the problem are
// fine: the kernel clamps them.
Status Validate(const RaggedPagedAttentionBlockSizes& bs, const RaggedPagedAttentionShape& shape,
                const HardwareProfile& hw);

// Checks the metadata arrays against the shape: cu_q_lens starts at 0, is non-decreasing and
// ends at total_q_tokens; 0 <= q_len <= kv_len <= pages_per_seq * page_size; every page a
// sequence uses is in [0, num_pages). Paths: "cu_q_lens[i]", "kv_lens[s]", "page_indices[s][j]".
Status ValidateMetadata(const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in);

// The tuned kernel: validates, then writes out[total_q_tokens, heads, head_dim].
Status RaggedPagedAttention(const RaggedPagedAttentionBlockSizes& bs, const RaggedPagedAttentionShape& shape,
                            const RaggedPagedAttentionInputs& in, float* out, int threads);

// The same with a forced code path ("avx512", "avx2", "portable"/"base"); an error if this CPU
// cannot run it. For tests and benchmarks.
Status RaggedPagedAttentionWithIsa(std::string_view isa, const RaggedPagedAttentionBlockSizes& bs,
                                   const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in,
                                   float* out, int threads);

// The code path the host runs: "avx512", "avx2" or "portable".
const char* RaggedPagedAttentionIsa();

// The plain oracle: per (sequence, head, query) scores and softmax in double over the attended
// keys, reading pages through the page table. Metadata must be valid (see ValidateMetadata).
void RaggedPagedAttentionReference(const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in,
                                   float* out);

// Verification tolerance (see spec.cc for the reasoning).
Tolerance RaggedPagedAttentionTolerance(int64_t max_kv_len);

// --- The summary problem of the spec and the batch it stands for ---------------------------------

// The dims the tuner buckets on; MakeRaggedPagedAttentionBatch turns them into a concrete batch.
struct RaggedPagedAttentionProblem {
  int64_t num_seqs = 1;
  int64_t max_kv_len = 1;
  int64_t prefill_q_len = 0;  // 0 (or 1): an all-decode batch
  int64_t page_size = 16;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t head_dim = 1;
};

// A concrete batch with its data. For bf16 the f32 vectors hold the bf16-rounded values the
// bf16 vectors store, so the reference sees exactly what the kernel sees.
struct RaggedPagedAttentionBatch {
  RaggedPagedAttentionShape shape;
  DType dtype = DType::kF32;
  std::vector<int32_t> kv_lens, cu_q_lens, page_indices;
  std::vector<float> q, k_pages, v_pages;
  std::vector<uint16_t> q_bf16, k_pages_bf16, v_pages_bf16;

  // Kernel inputs in the batch's dtype.
  RaggedPagedAttentionInputs Inputs() const;
  // f32 inputs (the rounded values for bf16); what the reference reads.
  RaggedPagedAttentionInputs F32Inputs() const;
};

// Lengths: sequence 0 has kv_len = max_kv_len, the others a kv_len drawn uniformly from
// [1, max_kv_len]; every 4th sequence (s % 4 == 0, so at least one) is a prefill with
// q_len = min(prefill_q_len, kv_len) when prefill_q_len > 1, the rest decode with q_len = 1.
// The lengths depend only on the dims (a fixed internal seed), so Flops/Bytes of a problem are
// exact for every instance; `seed` draws the page layout (a random permutation of all pages, so a
// sequence's pages are scattered) and the values (q, k, v uniform in [-1, 1)).
RaggedPagedAttentionBatch MakeRaggedPagedAttentionBatch(const RaggedPagedAttentionProblem& p, DType dtype,
                                                        uint64_t seed);

// The batch from explicit lengths (tests): q_lens[s] <= kv_lens[s]; same page and value drawing.
RaggedPagedAttentionBatch MakeRaggedPagedAttentionBatchFromLens(const std::vector<int32_t>& kv_lens,
                                                                const std::vector<int32_t>& q_lens, int64_t page_size,
                                                                int64_t heads, int64_t kv_heads, int64_t head_dim,
                                                                DType dtype, uint64_t seed);

// Attended (query, key) pairs of a batch: sum over sequences and their queries of the keys each
// query sees. Flops = 4 * heads * head_dim * this.
int64_t RaggedPagedAttentionPairs(const RaggedPagedAttentionShape& shape, const int32_t* kv_lens,
                                  const int32_t* cu_q_lens);

const KernelSpec& RaggedPagedAttentionSpec();

}  // namespace blocktune::kernels
