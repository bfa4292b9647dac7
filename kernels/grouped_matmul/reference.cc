// The grouped-matmul oracle: for each group, MatmulReference (an i-k-j loop accumulating in
// double, so its own rounding ~k * 1e-16 is negligible next to the f32 kernel's) on the group's
// contiguous rows and its rhs[g]; rows past the sum of the group sizes are zero, as in the kernel.
#include <algorithm>

#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {

void GroupedMatmulReference(const GroupedMatmulShape& shape, const int32_t* group_sizes, const float* lhs,
                            const float* rhs, float* out) {
  int64_t row = 0;
  for (int64_t g = 0; g < shape.groups; ++g) {
    const int64_t size = group_sizes[g];
    if (size > 0) {
      MatmulReference(MatmulShape{size, shape.n, shape.k}, lhs + row * shape.k, rhs + g * shape.k * shape.n,
                      out + row * shape.n);
    }
    row += size;
  }
  std::fill(out + row * shape.n, out + shape.m * shape.n, 0.0f);
}

}  // namespace blocktune::kernels
