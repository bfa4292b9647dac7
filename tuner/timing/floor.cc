// Physical floor of a kernel call; see floor.h for the peaks and why they are generous.
#include "tuner/timing/floor.h"

#include <algorithm>

namespace blocktune::tuner::timing {

PhysicalPeaks PeaksFor(const std::string& isa, DType dtype, int threads) {
  constexpr double kGhz = 6.0;
  constexpr double kFmaPipes = 2.0;
  const double lanes = isa == "avx512" ? 16.0 : isa == "avx2" ? 8.0 : 4.0;
  double flops_per_ns = kFmaPipes * lanes * 2.0 * kGhz;
  if (dtype == DType::kBF16) flops_per_ns *= 2.0;
  constexpr double kBytesPerNsPerCore = 1000.0;  // 1 TB/s
  const double t = std::max(threads, 1);
  return PhysicalPeaks{flops_per_ns * t, kBytesPerNsPerCore * t};
}

double PhysicalFloorNs(const KernelSpec& spec, const Problem& problem, const PhysicalPeaks& peaks) {
  const double flops = peaks.flops_per_ns > 0 ? spec.Flops(problem) / peaks.flops_per_ns : 0.0;
  const double bytes = peaks.bytes_per_ns > 0 ? spec.Bytes(problem) / peaks.bytes_per_ns : 0.0;
  return std::max(flops, bytes);
}

}  // namespace blocktune::tuner::timing
