// The portable (plain C++) inner loops of ragged_paged_attention's dot form, for CPUs without
// AVX2 (and every non-x86 build): dot products with eight independent partial sums, so the
// compiler vectorises them for the baseline ISA without reassociating, a scalar online-softmax
// row and P.V as axpy loops over head_dim. The panel form uses flash_attention's portable loops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention_ops.h"

namespace blocktune::kernels::rpa_internal {
namespace {

float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  }
  for (; d < n; ++d) acc[0] += a[d] * b[d];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void DotScores(const float* q, int64_t ldq, int64_t rows, const float* const* k, int64_t n, int64_t head_dim, float* s,
               int64_t lds) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < n; ++t) s[r * lds + t] = Dot(q + r * ldq, k[t], head_dim);
  }
}

float SoftmaxRow(float* s, int64_t n, int64_t n_valid, float* m, float* l) {
  if (n_valid <= 0) {
    std::fill(s, s + n, 0.0f);
    return 1.0f;
  }
  float mx = *m;
  for (int64_t t = 0; t < n_valid; ++t) mx = std::max(mx, s[t]);
  const float alpha = *m == -std::numeric_limits<float>::infinity() ? 0.0f : vec::ExpScalar(*m - mx);
  float sum = 0.0f;
  for (int64_t t = 0; t < n_valid; ++t) {
    s[t] = vec::ExpScalar(s[t] - mx);
    sum += s[t];
  }
  std::fill(s + n_valid, s + n, 0.0f);
  *l = *l * alpha + sum;
  *m = mx;
  return alpha;
}

void DotPv(const float* p, int64_t ldp, int64_t rows, const float* const* v, int64_t n, int64_t head_dim, float* o,
           int64_t ldo, const float* alpha) {
  for (int64_t r = 0; r < rows; ++r) {
    float* orow = o + r * ldo;
    const float a = alpha[r];
    for (int64_t d = 0; d < head_dim; ++d) orow[d] *= a;
    for (int64_t t = 0; t < n; ++t) {
      const float pt = p[r * ldp + t];
      const float* vt = v[t];
      for (int64_t d = 0; d < head_dim; ++d) orow[d] += pt * vt[d];
    }
  }
}

}  // namespace

const Ops& Ops::Portable() {
  // Panel form from 8 queries: a 16-lane panel half full still beats scalar-ish dot products.
  static const Ops kOps{"portable", &flash_attention_internal::Ops::Portable(), 8, &DotScores, &SoftmaxRow, &DotPv};
  return kOps;
}

}  // namespace blocktune::kernels::rpa_internal
