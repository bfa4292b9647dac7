// Search strategies: which configs of a bucket's valid space a sweep measures, and in what
// order, as an ask/tell loop: the strategy proposes the next config given every observation so
// far, the driver (sweep_search.cc, or simulate.cc against stored medians) measures it and tells the
// result back. Every strategy is deterministic for a seed and its observation history
// (SplitMix64, own shuffles, no clocks), so a stopped sweep resumes by feeding its stored
// measurements back in the order the strategy asks for them, and a stored exhaustive sweep can
// replay any strategy without running a kernel.
//
// This header is the strategies' interface and registry (MakeSearch); each strategy lives in its
// own file (strategies.h lists them), the space they search in space.h, their prior in prior.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/config.h"
#include "tuner/measurement.h"
#include "tuner/search/prior.h"
#include "tuner/search/space.h"

namespace blocktune::tuner::search {

struct Observation {
  bool ok = false;       // passed verification and was timed
  double median_ns = 0;  // meaningful when ok
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // The index of the next config to measure, never one asked before; nullopt when the
  // strategy has nothing left to propose (the budget is the driver's to enforce).
  virtual std::optional<size_t> Ask() = 0;
  // The result for the config last returned by Ask.
  virtual void Tell(size_t index, const Observation& observation) = 0;
  // What guided the search, for the decision round's record (empty when nothing worth saying:
  // the static and the single-bucket strategies).
  virtual std::string Explain() const { return {}; }
};

// Evaluations a bucket of `space_size` valid configs gets for `requested` (0 = the strategy's
// default, see SweepRequest::budget); never more than the space.
int64_t EvaluationBudget(Strategy strategy, int64_t requested, size_t space_size);

// `start` is the default config's index when valid (every strategy measures it first, so a
// sweep never publishes something slower than the default it measured). `budget` is the
// evaluation budget; model-guided strategies shift from exploring to exploiting as it runs out.
// `prior` is read by the transfer strategy only (copied; when it is empty or measured less than
// half of this space, transfer searches like surrogate).
std::unique_ptr<SearchStrategy> MakeSearch(Strategy strategy, const SearchSpace& space, std::optional<size_t> start,
                                           uint64_t seed, int64_t budget, const SearchPrior& prior = {});

// The static plans of exhaustive and random, in the order they ask: the default config first,
// then a seeded random order; exhaustive takes every config, random the first `budget` (0
// means 32), i.e. a uniform sample without replacement.
std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config, Strategy strategy,
                                int64_t budget, uint64_t seed);

}  // namespace blocktune::tuner::search
