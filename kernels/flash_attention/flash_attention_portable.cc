// The portable (plain C++) inner loops of flash_attention, for CPUs without AVX2: the same
// panel layout as the vector files with a 16-query panel, written as simple loops over the
// lanes that the compiler can vectorise for the baseline ISA (SSE2 on x86-64).
#include <algorithm>
#include <cmath>

#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/flash_attention/flash_attention_ops.h"

namespace blocktune::kernels::flash_attention_internal {
namespace {

constexpr int kPanel = kPortablePanel;

// One key row at a time against the whole panel: the 16-lane accumulator stays in registers
// and the unrolled lane loop is what should be vectorised (4 SSE vectors, by SLP). g++'s loop
// vectoriser instead vectorises across d with shuffles (~5x slower), hence its flag off here.
#if defined(__GNUC__) && !defined(__clang__)
#define BLOCKTUNE_FA_LANES_ONLY __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define BLOCKTUNE_FA_LANES_ONLY
#endif

BLOCKTUNE_FA_LANES_ONLY void Scores(const float* k, int64_t ldk, const float* qt, int64_t head_dim, int64_t kb, int,
                                    float* s) {
  for (int64_t j = 0; j < kb; ++j) {
    const float* kr = k + j * ldk;
    float acc[kPanel] = {};
    for (int64_t d = 0; d < head_dim; ++d) {
      const float kv = kr[d];
      const float* q = qt + d * kPanel;
      for (int c = 0; c < kPanel; ++c) acc[c] += kv * q[c];
    }
    std::copy(acc, acc + kPanel, s + j * kPanel);
  }
}

void Softmax(float* s, int64_t kb, int, float* m, float* l, float* alpha, bool masked, int64_t mask_base) {
  constexpr float kNegInf = -INFINITY;
  for (int c = 0; c < kPanel; ++c) {
    float mx = m[c];
    for (int64_t j = 0; j < kb; ++j) {
      float& x = s[j * kPanel + c];
      if (masked && c < j + mask_base) x = kNegInf;
      mx = std::max(mx, x);
    }
    const float m_safe = mx == kNegInf ? 0.0f : mx;
    const float a = m[c] == kNegInf ? 0.0f : vec::ExpScalar(m[c] - m_safe);
    float sum = 0;
    for (int64_t j = 0; j < kb; ++j) {
      float& x = s[j * kPanel + c];
      x = x == kNegInf ? 0.0f : vec::ExpScalar(x - m_safe);
      sum += x;
    }
    l[c] = l[c] * a + sum;
    m[c] = mx;
    alpha[c] = a;
  }
}

BLOCKTUNE_FA_LANES_ONLY void Pv(const float* v, int64_t ldv, const float* p, int64_t kb, int, int64_t head_dim,
                                float* ot, const float* alpha) {
  for (int64_t d = 0; d < head_dim; ++d) {
    float acc[kPanel];
    for (int c = 0; c < kPanel; ++c) acc[c] = alpha[c] * ot[d * kPanel + c];
    for (int64_t j = 0; j < kb; ++j) {
      const float vv = v[j * ldv + d];
      const float* pr = p + j * kPanel;
      for (int c = 0; c < kPanel; ++c) acc[c] += vv * pr[c];
    }
    std::copy(acc, acc + kPanel, ot + d * kPanel);
  }
}

}  // namespace

void PackQPanel16(const float* q, int64_t ldq, int rows, int64_t head_dim, float scale, float* qt) {
  std::fill(qt, qt + head_dim * 16, 0.0f);
  for (int c = 0; c < rows; ++c) {
    for (int64_t d = 0; d < head_dim; ++d) qt[d * 16 + c] = q[c * ldq + d] * scale;
  }
}

void StoreOPanel16(const float* ot, int cols, int64_t head_dim, const float* inv_l, float* o, int64_t ldo) {
  for (int c = 0; c < cols; ++c) {
    for (int64_t d = 0; d < head_dim; ++d) o[c * ldo + d] = ot[d * 16 + c] * inv_l[c];
  }
}

const Ops& Ops::Portable() {
  static const Ops kOps{"portable", kPanel, &Scores, &Softmax, &Pv, &vec::Bf16ToF32, &PackQPanel16, &StoreOPanel16};
  return kOps;
}

}  // namespace blocktune::kernels::flash_attention_internal
