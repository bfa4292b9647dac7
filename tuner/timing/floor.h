// The physical floor of one kernel call: no correct run can beat the time the machine needs to
// do the arithmetic at peak FMA throughput, nor the time to move the minimum bytes at a
// generous bandwidth. A timing below it means the measurement is broken (the kernel skipped
// work, the timer lied, the compiler deleted the call), so the config is recorded `invalid`
// with detail "below physical floor" instead of winning.
#pragma once

#include <string>

#include "kernels/core/kernel_spec.h"

namespace blocktune::tuner::timing {

struct PhysicalPeaks {
  double flops_per_ns = 0;  // all threads together
  double bytes_per_ns = 0;
};

// Generous on purpose (a false "invalid" would discard a real winner): per core, two FMA
// pipes of the ISA's f32 vector width at 6 GHz (avx512: 2 x 16 lanes x 2 flops x 6 = 384
// GFLOP/s, vs the ~225 measured on this host class; avx2 192; base 96), doubled for bf16
// inputs (dot-product instructions); and 1 TB/s of bandwidth per core, which no level past
// L1 reaches. Times the thread count.
PhysicalPeaks PeaksFor(const std::string& isa, DType dtype, int threads);

// max(flops / peak flops, bytes / peak bandwidth) in ns.
double PhysicalFloorNs(const KernelSpec& spec, const Problem& problem, const PhysicalPeaks& peaks);

}  // namespace blocktune::tuner::timing
