// The one list of kernels. Adding a kernel: one line here plus its own folder.
#include "kernels/core/kernel_spec.h"
#include "kernels/matmul/matmul.h"

namespace blocktune {

const std::vector<const KernelSpec*>& AllKernels() {
  static const std::vector<const KernelSpec*> kAll = {
      &kernels::MatmulSpec(),
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
