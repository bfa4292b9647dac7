// The one list of kernels. Adding a kernel: one line here plus its own folder.
#include "kernels/core/kernel_spec.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune {

namespace {

std::vector<const KernelSpec*>& MutableKernels() {
  static std::vector<const KernelSpec*> kAll = {
      &kernels::MatmulSpec(),
      &kernels::FlashAttentionSpec(),
      &kernels::FusedCrossEntropySpec(),
      &kernels::GroupedMatmulSpec(),
      &kernels::RaggedPagedAttentionSpec(),
  };
  return kAll;
}

}  // namespace

const std::vector<const KernelSpec*>& AllKernels() { return MutableKernels(); }

Status RegisterKernel(std::unique_ptr<const KernelSpec> spec) {
  if (spec == nullptr) return InvalidArgument("no kernel to register");
  if (FindKernel(spec->name()) != nullptr) {
    return InvalidArgument("kernel '" + std::string(spec->name()) + "' is already registered" +
                               (spec->source_file().empty() ? "" : " (" + std::string(spec->source_file()) + ")"),
                           "name");
  }
  // Registered specs live as long as the process: AllKernels hands out raw pointers.
  static std::vector<std::unique_ptr<const KernelSpec>> owned;
  MutableKernels().push_back(spec.get());
  owned.push_back(std::move(spec));
  return {};
}

const KernelSpec* FindKernel(std::string_view name) {
  for (const KernelSpec* k : AllKernels()) {
    if (k->name() == name) return k;
  }
  return nullptr;
}

}  // namespace blocktune
