// Search strategies: which configs of a bucket's valid space a sweep measures, and in what
// order. Deterministic for a given seed on every platform (SplitMix64, own shuffle), so a sweep
// can be replayed and resumed.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/random.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

// Exhaustive: every valid config, in space order (budget ignored).
// Random: `budget` configs drawn without replacement (0 means 32); the default config, when
// valid, is always included first, so a sweep never picks something slower than the default
// it measured.
std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config,
                                Strategy strategy, int64_t budget, uint64_t seed);

}  // namespace blocktune::tuner
