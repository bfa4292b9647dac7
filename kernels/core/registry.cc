// The one list of kernels. Adding a kernel: one line here plus its own folder.
#include "kernels/core/kernel_spec.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune {

const std::vector<const KernelSpec*>& AllKernels() {
  static const std::vector<const KernelSpec*> kAll = {
      &kernels::MatmulSpec(),
      &kernels::FlashAttentionSpec(),
      &kernels::FusedCrossEntropySpec(),
      &kernels::GroupedMatmulSpec(),
      &kernels::RaggedPagedAttentionSpec(),
  };
  return kAll;
}

const KernelSpec* FindKernel(std::string_view name) {
  for (const KernelSpec* k : AllKernels()) {
    if (k->name() == name) return k;
  }
  return nullptr;
}

}  // namespace blocktune
