// The one list of built-in kernels. Adding a kernel: one line here plus its own folder. It sits
// above core/ (whose registry.cc takes the list from here) and the kernel folders it includes,
// so every include points down.
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune {

std::vector<const KernelSpec*> BuiltinKernels() {
  return {
      &kernels::MatmulSpec(),        &kernels::FlashAttentionSpec(),       &kernels::FusedCrossEntropySpec(),
      &kernels::GroupedMatmulSpec(), &kernels::RaggedPagedAttentionSpec(),
  };
}

}  // namespace blocktune
