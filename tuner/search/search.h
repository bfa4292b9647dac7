// Search strategies: which configs of a bucket's valid space a sweep measures, and in what
// order. Deterministic for a given seed on every platform (own PRNG, own shuffle), so a sweep
// can be replayed and resumed.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/core/config.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

// SplitMix64: tiny, fast, and its output is fully specified (std::mt19937 is too, but the
// standard distributions and std::shuffle are not).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, bound) by rejection, bound > 0.
  uint64_t Below(uint64_t bound);

 private:
  uint64_t state_;
};

// Exhaustive: every valid config, in space order (budget ignored).
// Random: `budget` configs drawn without replacement (0 means 32); the default config, when
// valid, is always included first, so a sweep never picks something slower than the default
// it measured.
std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config,
                                Strategy strategy, int64_t budget, uint64_t seed);

}  // namespace blocktune::tuner
