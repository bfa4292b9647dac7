// blocktune-worker: the process blocktuned runs every config in (see tuner/isolation/). It
// knows the product's kernels; tests build a twin that also knows the fault kernel.
#include "kernels/core/kernel_spec.h"
#include "tuner/isolation/worker.h"

int main(int argc, char** argv) {
  return blocktune::tuner::isolation::RunWorker(argc, argv, [](std::string_view name) { return blocktune::FindKernel(name); });
}
