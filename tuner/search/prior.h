// The prior of the transfer and auto strategies: what other landscapes of the kernel (other
// buckets, other hardware profiles: profile_prior.h) measured, as each config's cost relative to
// that landscape's best, and how it is laid out over the space being searched.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/search/space.h"

namespace blocktune::tuner::search {

// What other buckets of the same kernel, hardware, dtype and thread count measured: the
// transfer strategy's prior. A bucket is described by its representative problem's dims
// (PriorFeatures) and each passing config's cost relative to the bucket's best.
struct PriorBucket {
  std::string name;  // the bucket id, for Explain
  std::vector<double> features;
  std::map<std::string, double> relative_cost;  // config string -> log(median / best median) >= 0
  // Added to the bucket's log prior weight: 0 for this profile's own buckets; for another
  // hardware profile's, how alike its landscapes are measured to be (profile_prior.h).
  double log_weight = 0;
};
struct SearchPrior {
  std::vector<double> features;  // of the bucket being searched
  std::vector<PriorBucket> buckets;
  bool empty() const { return buckets.empty(); }
};

// log2(1 + value) of each of the kernel's dims, in spec.dims() order (absent dims are 0), so
// sizes compare by ratio and 0/1 flags such as causal stay 0/1.
std::vector<double> PriorFeatures(const KernelSpec& spec, const Problem& problem);
// A prior bucket from (config, median_ns) pairs of passing measurements; several medians of one
// config (from several sweeps) keep the lowest. Empty relative_cost when nothing passed.
PriorBucket MakePriorBucket(std::vector<double> features, const std::vector<std::pair<Config, double>>& medians);
// The prior laid out over `space`, as transfer and auto read it: per prior bucket, its log weight
// (minus the squared distance of its features to the searched bucket's, each feature standardised
// by its spread over all of them, plus the bucket's own log_weight) and its relative cost of each
// config of `space` (infinity where it measured none).
struct PriorLayout {
  std::vector<double> log_prior;
  std::vector<std::vector<double>> relative;
};
PriorLayout LayOutPrior(const SearchPrior& prior, const SearchSpace& space);

}  // namespace blocktune::tuner::search
