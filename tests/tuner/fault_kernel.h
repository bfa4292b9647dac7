// The fault kernel (test only): a kernel whose chosen configs misbehave in every way a real
// kernel can — segfault, abort, illegal instruction, spin forever, allocate without bound,
// return NaN, write half its output, write past the end of its output, modify its inputs,
// flood stdout, or exit(0) mid-run — while every other config computes out = 2 * in + 1
// correctly at a known cost. It is registered only in the test worker and the tests, never in
// the product registry.
//
// Dims carry the fault plan so it crosses the process boundary with the problem:
//   n       data length (pow2 bucket)
//   fault   which Fault the faulty configs trigger (exact)
//   faulty  how many configs are faulty: config id < faulty (exact, 0..50)
// The only parameter is `id`, 0..49 (50 configs); a correct config costs (id + 1) * 20 us a
// call, so id 0 would win — which is why the faulty ones are the lowest ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"

namespace blocktune::testing {

enum class Fault {
  kNone,
  kSegfault,
  kAbort,
  kIllegalInstruction,
  kSpin,
  kAllocate,
  kNan,
  kHalfOutput,
  kWritePastEnd,
  kModifyInputs,
  kFloodStdout,
  kExitWithoutResult,
};
inline constexpr int kFaultCount = 12;
inline constexpr int64_t kFaultConfigs = 50;

std::string_view FaultName(Fault f);
std::optional<Fault> ParseFault(std::string_view name);

// Makes the fault happen now, in this process (the process-level faults never return).
void TriggerFault(Fault f);

const KernelSpec& FaultSpec();

// Wraps a real kernel so configs matching a rule trigger a process-level fault before running
// (for the daemon end-to-end test, where the daemon plans with the real kernel and only the
// worker misbehaves). Rules come from `spec`: "block_m=48,block_n=128:segfault;block_m=96:spin"
// (a config triggers a rule's fault when it has every listed value). The pseudo-fault "slow"
// runs the config correctly after a fixed busy-wait, for tests that need one config to lose a
// timing comparison without depending on how fast the machine is.
// Returns nullptr if `spec` does not parse.
const KernelSpec* FaultInjected(const KernelSpec& inner, std::string_view spec);

}  // namespace blocktune::testing
