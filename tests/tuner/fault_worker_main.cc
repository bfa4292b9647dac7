// blocktune-fault-worker (test only): blocktune-worker plus the fault kernel. With
// BLOCKTUNE_FAULT_INJECT set (e.g. "block_m=48:segfault;block_m=96:spin") the product kernels
// are wrapped so matching configs fault, which lets a real daemon be tested against crashing,
// hanging and vanishing workers while it plans with the real kernels.
#include <cstdlib>

#include "tests/tuner/fault_kernel.h"
#include "tuner/isolation/worker.h"

int main(int argc, char** argv) {
  const char* inject = std::getenv("BLOCKTUNE_FAULT_INJECT");
  return blocktune::tuner::isolation::RunWorker(argc, argv,
                                                [inject](std::string_view name) -> const blocktune::KernelSpec* {
                                                  if (name == blocktune::testing::FaultSpec().name())
                                                    return &blocktune::testing::FaultSpec();
                                                  const blocktune::KernelSpec* spec = blocktune::FindKernel(name);
                                                  if (spec != nullptr && inject != nullptr && *inject != '\0')
                                                    return blocktune::testing::FaultInjected(*spec, inject);
                                                  return spec;
                                                });
}
