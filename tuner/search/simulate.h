// Scoring search strategies without running a kernel: replay a strategy against the stored
// medians of an exhaustive sweep (the oracle answers each config with what was measured), and
// report, per bucket, best-found over optimum against the number of evaluations, next to
// random search at the same budget. Deterministic: the same data and seeds give the same
// figures on every machine. Also compares the winners of two independent sweeps.
//
// Stored data travel as tab-separated lines (kernel, hardware, dtype, bucket, config, outcome,
// median_ns), the form checked in under tests/data/ for the simulation test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"

namespace blocktune::tuner::search {

// The detail prefix of an `invalid` outcome for a config that ran but timed faster than
// physics allows (see timing/floor.h): it passed validation, so it belongs to the search space.
inline constexpr std::string_view kBelowFloorDetail = "below physical floor";

struct StoredConfig {
  Config config;
  Outcome outcome = Outcome::kOk;
  std::string detail;
  double median_ns = 0;  // when ok
};

// Every config of one (kernel, hardware, dtype, bucket) from one exhaustive sweep.
struct StoredBucket {
  std::string kernel;
  std::string hardware_key;
  DType dtype = DType::kF32;
  std::string bucket;
  int64_t sweep_id = 0;
  std::vector<StoredConfig> configs;
};

// Groups measurements of exhaustive sweeps into buckets; when several sweeps measured one
// bucket, the latest (highest sweep id) wins. `sweep_id` is taken from each measurement.
std::vector<StoredBucket> GroupMeasurements(const std::string& kernel, const std::string& hardware_key, DType dtype,
                                            const std::vector<Measurement>& measurements);

// Several exhaustive sweeps of the same key combined into one oracle: per config, the lowest
// of the passing sweeps' medians (ok if any sweep passed it; otherwise the first sweep's
// outcome). Interference from other processes only ever adds time, so of two medians of the
// same config the lower is the closer to its own speed (the rule the timing retries follow);
// a config that was measured in a noisy minute in one sweep gets its quiet value from the
// other. Buckets must share the key.
StoredBucket CombineSweeps(const std::vector<StoredBucket>& runs);

std::string FormatStoredBuckets(const std::vector<StoredBucket>& buckets);
// Errors name the line ("line 12: ...").
Result<std::vector<StoredBucket>> ParseStoredBuckets(std::string_view text);

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

// Two independent sweeps of the same buckets: for each bucket both measured, how much slower
// A's chosen config is than B's, judged by B's own measurements (B measured A's choice), else
// by A's. `chosen_a` / `chosen_b` are the configs each sweep published, one per bucket id.
struct BucketAgreement {
  std::string bucket;
  Config chosen_a;
  Config chosen_b;
  double slowdown = 0;   // median(A's choice) / median(B's choice) - 1 on the judging sweep; may be < 0
  char judged_by = 'B';  // 'A', 'B', or 'R': re-timed side by side (RemeasureChoices)
  bool within = false;   // |slowdown| <= tolerance
};

struct AgreementReport {
  double tolerance = 0.03;
  std::vector<BucketAgreement> buckets;
  double within_fraction = 0;
  std::vector<std::string> unjudged;  // buckets where neither sweep measured the other's choice
};

AgreementReport CompareChoices(const std::vector<StoredBucket>& a,
                               const std::vector<std::pair<std::string, Config>>& chosen_a,
                               const std::vector<StoredBucket>& b,
                               const std::vector<std::pair<std::string, Config>>& chosen_b, double tolerance);

// The same comparison judged by timing both choices again, side by side in this process with
// their repetitions interleaved (Evaluator::MeasureInterleaved at each bucket's representative
// problem), so neither sweep's noisy minute decides it. Buckets whose problem cannot be
// rebuilt from the id, or whose re-timing fails, are listed as unjudged.
AgreementReport RemeasureChoices(const KernelSpec& spec, DType dtype, int threads,
                                 const std::vector<std::pair<std::string, Config>>& chosen_a,
                                 const std::vector<std::pair<std::string, Config>>& chosen_b, Evaluator& evaluator,
                                 const TimingOptions& timing, double tolerance);

}  // namespace blocktune::tuner::search
