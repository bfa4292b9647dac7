// The ragged_paged_attention oracle: for every sequence, query token and head, the scores of all
// attended keys (read through the page table) in double, a two-pass softmax in double and the
// weighted sum of the values, so its own rounding (~1e-16 relative) is negligible next to the
// f32 kernel's. Reads f32 or bf16 inputs (bf16 widened exactly).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune::kernels {
namespace {

double Load(const void* base, bool bf16, int64_t i) {
  return bf16 ? double(BF16ToFloat(BF16{static_cast<const uint16_t*>(base)[i]}))
              : double(static_cast<const float*>(base)[i]);
}

}  // namespace

void RaggedPagedAttentionReference(const RaggedPagedAttentionShape& shape, const RaggedPagedAttentionInputs& in,
                                   float* out) {
  const bool bf16 = in.dtype == DType::kBF16;
  const int64_t d_len = shape.head_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const double scale = 1.0 / std::sqrt(double(d_len));
  std::vector<double> q(static_cast<size_t>(d_len)), acc(static_cast<size_t>(d_len)), scores;
  std::vector<int64_t> rows;  // element offset of each key's row (for one KV head: + g * d_len)
  for (int64_t s = 0; s < shape.num_seqs; ++s) {
    const int64_t q_off = in.cu_q_lens[s];
    const int64_t q_len = in.cu_q_lens[s + 1] - q_off;
    const int64_t kv_len = in.kv_lens[s];
    rows.resize(static_cast<size_t>(kv_len));
    for (int64_t pos = 0; pos < kv_len; ++pos) {
      const int64_t page = in.page_indices[s * shape.pages_per_seq + pos / shape.page_size];
      rows[static_cast<size_t>(pos)] = (page * shape.page_size + pos % shape.page_size) * shape.kv_heads * d_len;
    }
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t keys = kv_len - q_len + i + 1;  // causal: positions 0 .. kv_len - q_len + i
      scores.resize(static_cast<size_t>(keys));
      for (int64_t h = 0; h < shape.heads; ++h) {
        const int64_t g = h / group;
        const int64_t q_base = ((q_off + i) * shape.heads + h) * d_len;
        for (int64_t d = 0; d < d_len; ++d) q[static_cast<size_t>(d)] = Load(in.q, bf16, q_base + d);
        double mx = -INFINITY;
        for (int64_t t = 0; t < keys; ++t) {
          const int64_t k_base = rows[static_cast<size_t>(t)] + g * d_len;
          double dot = 0;
          for (int64_t d = 0; d < d_len; ++d) dot += q[static_cast<size_t>(d)] * Load(in.k_pages, bf16, k_base + d);
          scores[static_cast<size_t>(t)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double sum = 0;
        for (int64_t t = 0; t < keys; ++t) {
          const double p = std::exp(scores[static_cast<size_t>(t)] - mx);
          sum += p;
          const int64_t v_base = rows[static_cast<size_t>(t)] + g * d_len;
          for (int64_t d = 0; d < d_len; ++d) acc[static_cast<size_t>(d)] += p * Load(in.v_pages, bf16, v_base + d);
        }
        float* dst = out + ((q_off + i) * shape.heads + h) * d_len;
        for (int64_t d = 0; d < d_len; ++d) dst[d] = static_cast<float>(acc[static_cast<size_t>(d)] / sum);
      }
    }
  }
}

}  // namespace blocktune::kernels
