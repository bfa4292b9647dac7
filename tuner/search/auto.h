// The `auto` strategy's searches (auto.cc and its phases' auto_*.cc), reached through MakeSearch in search.h:
// feasibility- aware Bayesian optimisation followed by a genetic local search for large spaces, and the same search
// steered by a prior from other landscapes of the kernel (other buckets, or other devices). Kept out of search.h
// because nothing but MakeSearch and the tests construct them directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tuner/search/search.h"

namespace blocktune::tuner::search {

// Which search `auto` runs for this space, budget and prior (docs/search.md#auto):
//   kPrior:     the prior covers >= half of the space: its ranking first, blended with local
//               steps around the incumbent.
//   kSurrogate: small, low-dimensional spaces (<= 1,024 configs, <= 4 parameters: our CPU
//               kernels' buckets, where the quadratic model was tuned; docs/tuning.md).
//   kLocal:     everything else (the 4,000-20,000-config spaces of external GPU kernels): the
//               model phase, then the local search.
enum class AutoPlan { kPrior, kSurrogate, kLocal };
AutoPlan ChooseAutoPlan(const SearchSpace& space, int64_t budget, const SearchPrior& prior);

// A random start, Gaussian-process Bayesian optimisation with a feasibility model for up to 60%
// of the budget (80% below 100 evaluations; at most 100 evaluations), then (at 100 evaluations and more) a genetic
// local search (children of the best configs, a mutated child outside the space's restrictions moved to the nearest
// valid config; steps to the best's neighbours, episodes of iterated local search when the best stalls; the iterated
// local search alone below 100), with every fifth ask from the 400th evaluation on the Gaussian process's again; with a
// non-empty prior, prior-ranked picks interleaved with local steps instead. See auto.cc and auto_search.h.
std::unique_ptr<SearchStrategy> MakeLocalSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                int64_t budget, const SearchPrior& prior);

// The share of the space SearchPrior's buckets measured (the coverage test of kPrior).
double PriorCoverage(const SearchSpace& space, const SearchPrior& prior);

}  // namespace blocktune::tuner::search
