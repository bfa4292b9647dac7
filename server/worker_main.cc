// blocktune-worker: the process blocktuned runs every config in (see tuner/isolation/). It
// knows the product's kernels plus the external ones of every --kernel-dir it is given (the
// daemon passes its own); tests build a twin that also knows the fault kernel.
#include <cstdio>
#include <string_view>
#include <vector>

#include "external/runner.h"
#include "external/spec.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/isolation/protocol.h"
#include "tuner/isolation/worker.h"

int main(int argc, char** argv) {
  // The tuner runs external kernels through external/'s runner (installed here, above both).
  blocktune::tuner::SetRunnerMeasurerFactory(&blocktune::external::MakeRunnerMeasurer);
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--kernel-dir" && i + 1 < argc) {
      if (auto names = blocktune::external::LoadKernelDir(argv[++i]); !names) {
        std::fprintf(stderr, "%s: %s\n", argv[0], names.error().message.c_str());
        return blocktune::tuner::isolation::kWorkerExitUsage;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  rest.push_back(nullptr);
  return blocktune::tuner::isolation::RunWorker(static_cast<int>(rest.size()) - 1, rest.data(),
                                                [](std::string_view name) { return blocktune::FindKernel(name); });
}
