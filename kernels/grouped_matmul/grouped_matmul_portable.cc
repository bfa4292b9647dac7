// The portable (plain C++) operations of grouped_matmul, for CPUs without AVX2: the portable
// matmul micro-kernels and bf16 widening. No direct small-group kernel: every group is packed.
#include "kernels/core/vec_math.h"
#include "kernels/grouped_matmul/grouped_matmul_ops.h"

namespace blocktune::kernels::grouped_matmul_internal {

const Ops& Ops::Portable() {
  static const Ops kOps = [] {
    Ops o;
    o.name = "portable";
    o.ks = &matmul_internal::Ops::Portable();
    o.convert = &vec::Bf16ToF32;
    return o;
  }();
  return kOps;
}

}  // namespace blocktune::kernels::grouped_matmul_internal
