// The prior of transfer and auto from other landscapes: features, relative costs, and the
// layout over a search space; see prior.h.
#include "tuner/search/prior.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace blocktune::tuner::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

std::vector<double> PriorFeatures(const KernelSpec& spec, const Problem& problem) {
  std::vector<double> f;
  for (const DimSpec& d : spec.dims()) {
    f.push_back(std::log2(1.0 + static_cast<double>(std::max<int64_t>(problem.Dim(d.bucket.name), 0))));
  }
  return f;
}

PriorBucket MakePriorBucket(std::vector<double> features, const std::vector<std::pair<Config, double>>& medians) {
  PriorBucket b;
  b.features = std::move(features);
  std::map<std::string, double> lowest;
  for (const auto& [config, median] : medians) {
    if (!(median > 0)) continue;
    auto [it, fresh] = lowest.emplace(config.ToString(), median);
    if (!fresh) it->second = std::min(it->second, median);
  }
  double best = kInf;
  for (const auto& [_, m] : lowest) best = std::min(best, m);
  for (const auto& [key, m] : lowest) b.relative_cost.emplace(key, std::log(m / best));
  return b;
}

PriorLayout LayOutPrior(const SearchPrior& prior, const SearchSpace& space) {
  const size_t nb = prior.buckets.size();
  // Standardise each feature by its spread over the prior and this bucket; a feature that is
  // the same everywhere carries no information and drops out.
  const size_t nf = prior.features.size();
  std::vector<double> sd(nf, 0.0);
  for (size_t f = 0; f < nf; ++f) {
    double mean = prior.features[f];
    for (const PriorBucket& b : prior.buckets) mean += f < b.features.size() ? b.features[f] : 0.0;
    mean /= static_cast<double>(nb + 1);
    double var = (prior.features[f] - mean) * (prior.features[f] - mean);
    for (const PriorBucket& b : prior.buckets) {
      const double x = f < b.features.size() ? b.features[f] : 0.0;
      var += (x - mean) * (x - mean);
    }
    sd[f] = std::sqrt(var / static_cast<double>(nb + 1));
  }
  PriorLayout layout;
  layout.log_prior.assign(nb, 0.0);
  layout.relative.assign(nb, std::vector<double>(space.size(), kInf));
  for (size_t b = 0; b < nb; ++b) {
    const PriorBucket& pb = prior.buckets[b];
    double d2 = 0;
    for (size_t f = 0; f < nf; ++f) {
      if (sd[f] <= 0) continue;
      const double x = f < pb.features.size() ? pb.features[f] : 0.0;
      d2 += (x - prior.features[f]) * (x - prior.features[f]) / (sd[f] * sd[f]);
    }
    layout.log_prior[b] = -d2 + pb.log_weight;
    for (size_t i = 0; i < space.size(); ++i) {
      if (auto it = pb.relative_cost.find(space.config(i).ToString()); it != pb.relative_cost.end()) {
        layout.relative[b][i] = it->second;
      }
    }
  }
  return layout;
}

}  // namespace blocktune::tuner::search
