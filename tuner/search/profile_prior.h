// Transfer across hardware profiles: a search prior for a bucket built from the same kernel's
// (and dtype's) measurements under *other* hardware keys (other CPU models, the other ISA
// level, the other thread count; for external kernels, other devices). A profile counts for as
// much as its landscapes are measured to resemble this profile's, never by what its key says:
// on buckets both profiles measured, the Spearman rank correlation of the configs both timed.
// A profile with no shared evidence yet starts at a neutral weight, and the transfer strategy's
// own posterior (misranked pairs against what this bucket measures) corrects it as the search
// goes. The result is PriorBuckets (search.h) named "<hardware key>:<bucket>", which the
// transfer strategy weights with their log_weight on top of its feature likeness.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/measurement.h"
#include "tuner/search/search.h"

namespace blocktune::tuner::search {

// One passing measurement and the hardware key it was measured under.
struct ProfileMeasurement {
  std::string hardware_key;
  Measurement measurement;  // bucket, problem, config, median_ns
};

// How alike another profile's landscapes are to this profile's, and what that makes its weight.
struct ProfileSimilarity {
  std::string hardware_key;
  double correlation = 0;  // mean Spearman rho over shared buckets (weighted by shared configs); 0 if none
  int64_t shared = 0;      // (bucket, config) pairs both profiles measured
  double log_weight = 0;   // added to each of its prior buckets' log prior weight
};

// Spearman rank correlation of two equally long series (average ranks for ties); 0 for fewer
// than three points or a constant series.
double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b);

// Similarities of every other profile in `others` to `own` (this profile's measurements, any
// bucket). With fewer than kMinShared shared configs a profile gets the neutral weight.
inline constexpr int64_t kMinShared = 6;
std::vector<ProfileSimilarity> MeasureProfileSimilarity(const std::vector<Measurement>& own,
                                                        const std::vector<ProfileMeasurement>& others);

// The prior buckets other profiles contribute for a search: every (profile, bucket) landscape
// in `others` with its profile's log_weight, named "<key>:<bucket>". Profiles whose landscapes
// anti-correlate with this one's (rho <= 0 on enough shared configs) are left out.
std::vector<PriorBucket> ProfilePriorBuckets(const KernelSpec& spec, const std::vector<ProfileMeasurement>& others,
                                             const std::vector<ProfileSimilarity>& similarity);

}  // namespace blocktune::tuner::search
