// The matmul oracle: C = A*B by a plain i-k-j triple loop accumulating each row of C in double,
// so its own rounding error (~k * 1e-16) is negligible next to the f32 kernel's. The i-k-j
// order streams rows of B and lets the compiler vectorise the inner loop, which keeps the
// per-config verification of the tuner cheap. target_clones builds AVX2 and AVX-512 copies of
// the loop chosen at load time (ifunc), and four k steps per pass cut the row traffic: 0.54 ->
// ~0.22 ns per multiply-add measured here, so the largest verification problem of the config
// space (397 x 1037 x 525) checks in ~48 ms instead of ~117 ms.
#include <algorithm>
#include <vector>

#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {

#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void MatmulReference(const MatmulShape& shape, const float* a, const float* b, float* c) {
  std::vector<double> row(static_cast<size_t>(shape.n));
  for (int64_t i = 0; i < shape.m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    int64_t p = 0;
    // Four k steps per pass over the row: a quarter of the loads/stores of the double row.
    for (; p + 4 <= shape.k; p += 4) {
      const float* ar = a + i * shape.k + p;
      const double a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];
      const float* b0 = b + p * shape.n;
      const float* b1 = b0 + shape.n;
      const float* b2 = b1 + shape.n;
      const float* b3 = b2 + shape.n;
      for (int64_t j = 0; j < shape.n; ++j) {
        row[static_cast<size_t>(j)] +=
            a0 * double(b0[j]) + a1 * double(b1[j]) + a2 * double(b2[j]) + a3 * double(b3[j]);
      }
    }
    for (; p < shape.k; ++p) {
      const double av = a[i * shape.k + p];
      const float* br = b + p * shape.n;
      for (int64_t j = 0; j < shape.n; ++j) row[static_cast<size_t>(j)] += av * double(br[j]);
    }
    for (int64_t j = 0; j < shape.n; ++j) c[i * shape.n + j] = static_cast<float>(row[static_cast<size_t>(j)]);
  }
}

}  // namespace blocktune::kernels
