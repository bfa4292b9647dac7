// Exhaustive and seeded random sampling over a bucket's valid configs.
#include "tuner/search/search.h"

#include <algorithm>

namespace blocktune::tuner {

std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config,
                                Strategy strategy, int64_t budget, uint64_t seed) {
  if (strategy == Strategy::kExhaustive) return valid_space;
  const size_t want = std::min<size_t>(valid_space.size(), budget > 0 ? static_cast<size_t>(budget) : 32);
  std::vector<Config> pool = valid_space;
  std::vector<Config> plan;
  plan.reserve(want);
  if (auto it = std::find(pool.begin(), pool.end(), default_config); it != pool.end() && want > 0) {
    plan.push_back(*it);
    pool.erase(it);
  }
  // Partial Fisher-Yates: the first `want` positions become a uniform sample.
  SplitMix64 rng(seed);
  for (size_t i = 0; plan.size() < want && i < pool.size(); ++i) {
    const size_t j = i + rng.Below(pool.size() - i);
    std::swap(pool[i], pool[j]);
    plan.push_back(pool[i]);
  }
  return plan;
}

}  // namespace blocktune::tuner
