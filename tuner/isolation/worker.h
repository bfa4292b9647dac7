// The body of a worker process (blocktune-worker, and test workers that add kernels): set up
// the process's own safety limits, then serve measure requests from the channel descriptor
// with an InProcessEvaluator until the parent closes it. A config that crashes, hangs or
// exhausts memory takes only this process down; the parent turns that into an outcome.
#pragma once

#include <functional>
#include <string_view>

#include "kernels/core/kernel_spec.h"

namespace blocktune::tuner::isolation {

// Finds a kernel by name: FindKernel for the product worker; a test worker adds its own.
using KernelLookup = std::function<const KernelSpec*(std::string_view name)>;

// argv: --parent-pid PID [--memory-limit-bytes N]. Before serving it asks the kernel to
// SIGKILL it when its parent dies and exits if that parent is already gone, sets RLIMIT_CORE
// to 0 (a crashing config must not write gigabytes of core files) and RLIMIT_AS to N when
// N > 0, and installs a new_handler that reports out_of_memory on the channel and exits with
// kWorkerExitOutOfMemory. Returns the process exit code.
int RunWorker(int argc, char** argv, const KernelLookup& lookup);

}  // namespace blocktune::tuner::isolation
