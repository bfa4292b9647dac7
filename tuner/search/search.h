// Search strategies: which configs of a bucket's valid space a sweep measures, and in what
// order, as an ask/tell loop: the strategy proposes the next config given every observation so
// far, the driver (sweep.cc, or simulate.cc against stored medians) measures it and tells the
// result back. Every strategy is deterministic for a seed and its observation history
// (SplitMix64, own shuffles, no clocks), so a stopped sweep resumes by feeding its stored
// measurements back in the order the strategy asks for them, and a stored exhaustive sweep can
// replay any strategy without running a kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/random.h"
#include "tuner/measurement.h"

namespace blocktune::tuner::search {

// A bucket's valid configs with their coordinates: the index of each parameter's value in the
// kernel's candidate list. Neighbours are configs one parameter away, moved to the next valid
// value up or down its list (skipping values that are invalid for this bucket, so a
// constrained space stays connected).
class SearchSpace {
 public:
  SearchSpace() = default;
  // `valid` must contain only configs drawn from `params`' candidates.
  SearchSpace(const std::vector<ParamSpec>& params, std::vector<Config> valid);

  size_t size() const { return configs_.size(); }
  const Config& config(size_t i) const { return configs_[i]; }
  const std::vector<Config>& configs() const { return configs_; }
  const std::vector<int>& coords(size_t i) const { return coords_[i]; }
  size_t dims() const { return values_.size(); }
  // Candidate count of parameter d.
  size_t levels(size_t d) const { return values_[d].size(); }
  // log2 of config i's value of parameter d, scaled to [0, 1] over the candidate range.
  double Scaled(size_t i, size_t d) const;
  std::optional<size_t> Find(const Config& c) const;
  std::optional<size_t> Find(const std::vector<int>& coords) const;
  // The nearest valid config from i moving parameter d in direction `dir` (-1 or +1) with the
  // other parameters fixed; nullopt at the end of the list.
  std::optional<size_t> Step(size_t i, size_t d, int dir) const;
  // Up to 2 * dims() neighbours, in (parameter, down, up) order; for a categorical parameter
  // every other value (with the rest fixed) that is valid.
  std::vector<size_t> Neighbours(size_t i) const;

 private:
  std::vector<std::vector<int64_t>> values_;
  // Per parameter: unordered values (ParamSpec::categorical) are modelled by their index and
  // every other value is a neighbour; ordered values below 1 (a 0/1 flag not marked
  // categorical) are modelled by index too, since log2 cannot tell them apart.
  std::vector<bool> categorical_;
  std::vector<bool> by_index_;
  std::vector<Config> configs_;
  std::vector<std::vector<int>> coords_;
  std::map<std::vector<int>, size_t> by_coords_;
};

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
