// The fused cross-entropy oracle: one row at a time, the full logits row in double (i-k-j loop
// over w's rows, vectorisable), then lse, loss and, when dloss is given, the dlogits row, dx by
// dot products and dw accumulated in a double [h, v] buffer. Rounding error ~1e-16 relative, so
// the comparison measures only the kernel's f32 error. target_clones builds AVX2 / AVX-512
// copies of the loops (chosen at load time); the largest verification problem of the config
// space (197 x 259 x 519, backward) is three such passes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/fused_cross_entropy/fused_cross_entropy.h"

namespace blocktune::kernels {

#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void FusedCrossEntropyReference(const FusedCrossEntropyShape& shape, const float* x, const float* w,
                                const int32_t* labels, float z_loss_weight, float* loss, float* lse,
                                const float* dloss, float* dx, float* dw, double* dx_row_mass,
                                double* dw_col_mass) {
  const int64_t B = shape.b, H = shape.h, V = shape.v;
  const double z = z_loss_weight;
  const bool backward = dloss != nullptr && dx != nullptr && dw != nullptr;
  std::vector<double> row(static_cast<size_t>(V));
  std::vector<double> dw_acc(backward ? static_cast<size_t>(H * V) : 0, 0.0);
  // sum of |c * p| + |dloss * onehot| per row and per column (the tolerance's scale).
  std::vector<double> col_mass(backward ? static_cast<size_t>(V) : 0, 0.0);
  double row_mass = 0;
  for (int64_t b = 0; b < B; ++b) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t h = 0; h < H; ++h) {
      const double xv = x[b * H + h];
      const float* wr = w + h * V;
      for (int64_t v = 0; v < V; ++v) row[static_cast<size_t>(v)] += xv * double(wr[v]);
    }
    double m = row[0];
    for (int64_t v = 1; v < V; ++v) m = std::max(m, row[static_cast<size_t>(v)]);
    double s = 0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(row[static_cast<size_t>(v)] - m);
    const double l = m + std::log(s);
    const int32_t lab = labels[b];
    lse[b] = static_cast<float>(l);
    loss[b] = lab < 0 ? 0.0f : static_cast<float>(l - row[static_cast<size_t>(lab)] + z * l * l);
    if (!backward) continue;
    if (lab < 0) {
      std::fill(dx + b * H, dx + (b + 1) * H, 0.0f);
      continue;
    }
    const double c = double(dloss[b]) * (1.0 + 2.0 * z * l);
    for (int64_t v = 0; v < V; ++v) row[static_cast<size_t>(v)] = c * std::exp(row[static_cast<size_t>(v)] - l);
    for (int64_t v = 0; v < V; ++v) col_mass[static_cast<size_t>(v)] += std::fabs(row[static_cast<size_t>(v)]);
    col_mass[static_cast<size_t>(lab)] += std::fabs(double(dloss[b]));
    row_mass = std::max(row_mass, std::fabs(c) + std::fabs(double(dloss[b])));
    row[static_cast<size_t>(lab)] -= dloss[b];
    for (int64_t h = 0; h < H; ++h) {
      const float* wr = w + h * V;
      // Four partial sums: independent chains the compiler can keep in flight.
      double acc[4] = {0, 0, 0, 0};
      int64_t v = 0;
      for (; v + 4 <= V; v += 4) {
        for (int i = 0; i < 4; ++i) acc[i] += row[static_cast<size_t>(v + i)] * double(wr[v + i]);
      }
      for (; v < V; ++v) acc[0] += row[static_cast<size_t>(v)] * double(wr[v]);
      dx[b * H + h] = static_cast<float>((acc[0] + acc[1]) + (acc[2] + acc[3]));
      const double xv = x[b * H + h];
      double* dr = dw_acc.data() + h * V;
      for (int64_t v2 = 0; v2 < V; ++v2) dr[v2] += xv * row[static_cast<size_t>(v2)];
    }
  }
  if (backward) {
    for (int64_t i = 0; i < H * V; ++i) dw[i] = static_cast<float>(dw_acc[static_cast<size_t>(i)]);
  }
  if (dx_row_mass != nullptr) *dx_row_mass = row_mass;
  if (dw_col_mass != nullptr)
    *dw_col_mass = col_mass.empty() ? 0.0 : *std::max_element(col_mass.begin(), col_mass.end());
}

}  // namespace blocktune::kernels
