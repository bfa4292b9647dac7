// Scoring search strategies without running a kernel: replay a strategy against the stored
// medians of an exhaustive sweep (the oracle answers each config with what was measured,
// stored_buckets.h), and report, per bucket, best-found over optimum against the number of
// evaluations, next to random search at the same budget. Deterministic: the same data and seeds
// give the same figures on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/core/config.h"
#include "tuner/measurement.h"
#include "tuner/search/stored_buckets.h"

namespace blocktune::tuner::search {

struct SimulateOptions {
  Strategy strategy = Strategy::kAuto;
  double budget_fraction = 0.1;  // evaluations = ceil(fraction * valid configs of the bucket)
  // Evaluations per bucket when > 0 (capped at the bucket's space), instead of the fraction:
  // the fixed budgets the literature reports (25 ... 800 evaluations).
  int64_t budget = 0;
  int seeds = 20;  // runs per bucket, seeds first_seed .. first_seed + seeds - 1
  uint64_t first_seed = 1;
  double threshold = 0.98;  // best-found / optimum counted as a hit at or above this
  // Transfer's prior. false: every other bucket of the same kernel, hardware and dtype in the
  // data, fully measured (a sweep after an exhaustive one). true: only the buckets before this
  // one in the data, and of those only what this replay's own search measured (one sweep of
  // every bucket on a machine with nothing stored).
  bool sequential_prior = false;
  // Landscapes from elsewhere (other devices' exhaustive sweeps of the same kernel, `simulate
  // --prior`): every one of the same kernel and dtype joins the prior of transfer and auto for
  // every bucket, whatever its hardware and bucket id.
  std::vector<StoredBucket> prior;
};

struct StrategyScore {
  double mean_ratio = 0;    // optimum_ns / best_found_ns, averaged over seeds (1 = optimum found)
  double min_ratio = 0;     // worst seed
  double hit_fraction = 0;  // seeds whose ratio >= threshold
  // Mean ratio after 1, 2, ..., budget evaluations.
  std::vector<double> curve;
  std::vector<double> best_ns;  // per seed, the best median found within the budget
  // The methodology score of Willemsen et al. (FGCS 2024): (R(e) - S(e)) / (R(e) - optimum),
  // with S(e) the mean over seeds of the best median after e evaluations and R(e) the exact
  // expectation of random search's best after e draws without replacement (failed configs
  // drawn too, scored as the slowest passing one); 1 = the optimum at once, 0 = no better than
  // random. `score` averages it over e = 1 .. budget, `score_at_budget` is its value at e = budget.
  double score = 0;
  double score_at_budget = 0;
};

// R(e) above for e = 1 .. budget: the expected best median of `e` configs drawn without
// replacement from `medians` (failed configs as the slowest passing median).
std::vector<double> ExpectedRandomBest(std::vector<double> medians, int64_t budget);

struct BucketSimulation {
  std::string kernel;
  std::string hardware_key;
  DType dtype = DType::kF32;
  std::string bucket;
  int64_t space_size = 0;  // configs that passed validation
  int64_t budget = 0;      // evaluations
  double optimum_ns = 0;
  double random_expected_ns = 0;  // R(budget): random search's expected best at this budget
  Config optimum;
  StrategyScore strategy;
  StrategyScore random;
};

struct SimulateReport {
  SimulateOptions options;
  std::vector<BucketSimulation> buckets;
  // Buckets whose mean ratio is >= threshold, as a fraction of all buckets.
  double strategy_bucket_fraction = 0;
  double random_bucket_fraction = 0;
  // Mean over buckets of the mean ratio.
  double strategy_mean_ratio = 0;
  double random_mean_ratio = 0;
  // Mean over buckets of StrategyScore::score (random search's own is 0 by definition, up to
  // the seeds' luck).
  double strategy_score = 0;
  double random_score = 0;
  // (bucket, seed) runs at or above the threshold, as a fraction of all runs.
  double strategy_run_fraction = 0;
  double random_run_fraction = 0;
};

// Buckets of kernels not in the registry, or without a passing config, are errors.
Result<SimulateReport> Simulate(const std::vector<StoredBucket>& buckets, const SimulateOptions& options);

}  // namespace blocktune::tuner::search
