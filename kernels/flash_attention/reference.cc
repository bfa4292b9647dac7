// The flash_attention oracle: for every (batch, head, query) row, the scaled scores against its
// unmasked keys in double, their max, exp and sum, and the weighted sum of V rows in double,
// so its own rounding (~1e-16 relative) is negligible next to the f32 kernel's. It keeps one
// row of scores at a time (never the whole matrix) and writes O and LSE like the kernel.
// Dot products use four interleaved partial sums (a fixed order, so results are deterministic)
// to break the add-latency chain: the reference is the cost of checking every config.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/flash_attention/flash_attention.h"

namespace blocktune::kernels {
namespace {

#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
double
Dot(const float* a, const float* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += double(a[i]) * double(b[i]);
    s1 += double(a[i + 1]) * double(b[i + 1]);
    s2 += double(a[i + 2]) * double(b[i + 2]);
    s3 += double(a[i + 3]) * double(b[i + 3]);
  }
  for (; i < n; ++i) s0 += double(a[i]) * double(b[i]);
  return (s0 + s1) + (s2 + s3);
}

#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void Axpy(double w, const float* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * double(x[i]);
}

}  // namespace

void FlashAttentionReference(const FlashAttentionShape& shape, const float* q, const float* k, const float* v, float* o,
                             float* lse, std::optional<float> scale) {
  // A shape the kernel rejects (Validate) has no defined output; write nothing.
  if (shape.kv_heads < 1 || shape.heads % shape.kv_heads != 0 || shape.head_dim < 1) return;
  const int64_t d_len = shape.head_dim;
  const double sc = scale.has_value() ? double(*scale) : 1.0 / std::sqrt(double(d_len));
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t diag = shape.seq_kv - shape.seq_q;
  std::vector<double> scores(static_cast<size_t>(shape.seq_kv));
  std::vector<double> acc(static_cast<size_t>(d_len));
  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.heads; ++h) {
      const int64_t kvh = h / group;
      const float* kh = k + (b * shape.kv_heads + kvh) * shape.seq_kv * d_len;
      const float* vh = v + (b * shape.kv_heads + kvh) * shape.seq_kv * d_len;
      for (int64_t i = 0; i < shape.seq_q; ++i) {
        const int64_t row = (b * shape.heads + h) * shape.seq_q + i;
        const float* qi = q + row * d_len;
        // Keys 0 .. n-1 are unmasked (all of them without the causal mask).
        const int64_t n = shape.causal ? std::clamp<int64_t>(i + diag + 1, 0, shape.seq_kv) : shape.seq_kv;
        float* oi = o + row * d_len;
        if (n == 0) {
          std::fill(oi, oi + d_len, 0.0f);
          if (lse != nullptr) lse[row] = -std::numeric_limits<float>::infinity();
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          scores[size_t(j)] = sc * Dot(qi, kh + j * d_len, d_len);
          mx = std::max(mx, scores[size_t(j)]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const double p = std::exp(scores[size_t(j)] - mx);
          sum += p;
          Axpy(p, vh + j * d_len, acc.data(), d_len);
        }
        for (int64_t d = 0; d < d_len; ++d) oi[d] = static_cast<float>(acc[size_t(d)] / sum);
        if (lse != nullptr) lse[row] = static_cast<float>(mx + std::log(sum));
      }
    }
  }
}

}  // namespace blocktune::kernels
