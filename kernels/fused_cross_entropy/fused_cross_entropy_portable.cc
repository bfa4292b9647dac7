// The portable (plain C++) row passes of fused_cross_entropy, for CPUs without AVX2, beside the
// portable matmul micro-kernels.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/core/vec_math.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy_ops.h"

namespace blocktune::kernels::fused_cross_entropy_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void TileStats(const float* tile, int64_t ld, int rows, int64_t cols, float* m_run, float* s_run) {
  for (int r = 0; r < rows; ++r) {
    const float* row = tile + r * ld;
    float mx = kNegInf;
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, row[j]);
    const float m_new = std::max(m_run[r], mx);
    float s = s_run[r] * vec::ExpScalar(m_run[r] - m_new);
    for (int64_t j = 0; j < cols; ++j) s += vec::ExpScalar(row[j] - m_new);
    m_run[r] = m_new;
    s_run[r] = s;
  }
}

void TileDlogits(float* tile, int64_t ld, int rows, int64_t cols, const float* lse, const float* scale) {
  for (int r = 0; r < rows; ++r) {
    float* row = tile + r * ld;
    for (int64_t j = 0; j < cols; ++j) row[j] = scale[r] * vec::ExpScalar(row[j] - lse[r]);
  }
}

}  // namespace

const Ops& Ops::Portable() {
  static const Ops kOps{"portable", &matmul_internal::Ops::Portable(), &TileStats, &TileDlogits};
  return kOps;
}

}  // namespace blocktune::kernels::fused_cross_entropy_internal
