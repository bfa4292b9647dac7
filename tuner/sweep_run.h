// One RunSweep call's state, shared by the files that carry out its phases (internal to tuner/;
// sweep.h is the interface). RunSweep (sweep.cc) runs them in order: plan the request
// (sweep_plan.cc), load the transfer prior (sweep_prior.cc), then per bucket pick up what the
// sweep stored before a restart, record the invalid configs and run the search
// (sweep_search.cc), and hold the decision round that chooses the winner (sweep_decision.cc).
// The time breakdown goes to the sink in parts as it goes (sweep_report.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/breakdown.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"
#include "tuner/search/profile_prior.h"
#include "tuner/search/search.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {

// --- Planning (sweep_plan.cc) ---

// FNV-1a over the bucket id rather than std::hash, whose value is implementation-defined:
// a replay (resume, simulate) must draw the same stream, and every machine running a shard
// must cut the same slice, on every standard library.
uint64_t Fnv1a(const std::string& text);
// The seed of one bucket's search and plan.
uint64_t BucketSeed(uint64_t seed, const std::string& bucket);
// Exhaustive and random: the whole plan is known before anything is measured.
bool PlansStatically(Strategy s);

// --- The time breakdown (sweep_report.cc) ---

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start);

// Adds the wall time of a scope to a phase of the breakdown.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& slot) : slot_(slot), start_(Clock::now()) {}
  ~PhaseTimer() { slot_ += SecondsSince(start_); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& slot_;
  Clock::time_point start_;
};

// Hands the sink the breakdown of one RunSweep call in parts, each what accumulated since the
// last (the sink adds them up): every SweepOptions::breakdown_flush_seconds after a stored measurement, and as RunSweep
// returns however it returns (done, cancelled, failed), so a SIGKILL loses only the last part. Each part holds the
// evaluator's phases, the wall clock, and what the engine timed.
class BreakdownReport {
 public:
  BreakdownReport(SweepSink& sink, const Evaluator& evaluator, double flush_seconds);
  ~BreakdownReport() { Flush(); }
  void MaybeFlush();
  void Flush();
  BreakdownReport(const BreakdownReport&) = delete;
  BreakdownReport& operator=(const BreakdownReport&) = delete;

  SweepBreakdown breakdown;

 private:
  SweepSink& sink_;
  const Evaluator& evaluator_;
  double flush_seconds_;
  Clock::time_point start_;
  Clock::time_point last_flush_;
  EvalCosts costs_at_start_;
  SweepBreakdown flushed_;  // the sum of the parts recorded so far
};

// --- The transfer prior (sweep_prior.cc) ---

// Strategies that read the prior of other buckets' measurements (transfer always, auto when it
// covers half the space).
bool UsesPrior(Strategy s);

// The transfer strategy's prior: the sink's stored landscapes, one PriorBucket per bucket,
// and each bucket of this run once its search is done.
struct TransferPrior {
  // Adds one passing measurement to its bucket's landscape (Rebuild makes it count).
  void Add(const Measurement& m);
  // The bucket's PriorBucket, from its landscape as it stands.
  void Rebuild(const KernelSpec& spec, const std::string& bucket);
  // Adds the passing measurements of a bucket this run searched, and rebuilds it if any.
  void AddBucket(const KernelSpec& spec, const std::string& bucket, const std::vector<Measurement>& results);
  // The prior of one bucket's search; `similarity` gets the other profiles it drew on.
  search::SearchPrior ForBucket(const KernelSpec& spec, const BucketPlan& plan,
                                std::vector<search::ProfileSimilarity>& similarity) const;

  std::map<std::string, std::pair<Problem, std::vector<std::pair<Config, double>>>> medians;
  std::map<std::string, search::PriorBucket> buckets;
  std::vector<search::ProfileMeasurement> other_profiles;  // the cross-profile prior, loaded once
};

// --- The run and its buckets ---

// What RunSweep's phases share: the call's arguments, the evaluator, the progress counters, the
// prior and the winners so far.
struct SweepRun {
  const SweepRequest& request;
  int64_t sweep_id;
  const KernelSpec& spec;
  const HardwareProfile& hw;
  SweepSink& sink;
  const SweepOptions& options;
  Evaluator& evaluator;
  BreakdownReport& report;
  SweepBreakdown& bd;  // report.breakdown
  int64_t total = 0;   // the progress total: planned, shrunk by searches that stop early
  int64_t done = 0;
  TransferPrior prior{};
  std::vector<TunedEntry> winners{};
};

// Loads the transfer prior (the sink's prior measurements and other profiles' landscapes).
Status LoadTransferPrior(SweepRun& run);

// One bucket of the run: every measurement this sweep holds for it, stored before a restart or
// measured now (sweep_search.cc).
struct BucketRun {
  BucketRun(SweepRun& run, const BucketPlan& plan);

  // The measurements the sink already stored for this sweep and bucket: a resumed sweep
  // replays them instead of measuring anything twice.
  Status Resume();
  // Persists `m` with the sweep's progress and adds it to `results`.
  Status Record(Measurement& m);
  // A measurement of `c` with this sweep's and bucket's identity filled in.
  Measurement Base(const Config& c) const;
  // The index in `results` of config `c`'s measurement in this sweep: the stored one (a resumed
  // sweep replays what it measured before a restart), or measured now and recorded. The
  // search and the decision round both go through here, so no config is measured twice. A
  // measurement noisier than SweepOptions::retime_cv is timed again first (Retime) when it
  // could contend for the bucket's best (CouldContend).
  Result<size_t> MeasureOnce(const Config& c);
  // Whether `m`'s fastest repetition is within 5% of `best_ns`, the best median the bucket had
  // before it (or it has none yet: 0).
  static bool CouldContend(const Measurement& m, double best_ns);
  // Times an ok measurement's config again (interleaved timing, at its calibrated count) and
  // keeps the quieter of the two by robust CV; `detail` says so.
  void Retime(Measurement& m);

  SweepRun& run;
  const BucketPlan& plan;
  const EvalRequest eval;
  std::vector<Measurement> results;
  std::map<std::string, size_t> measured;  // config string -> index in results
  // The search's prior covers less than half of this bucket's valid configs (or there is none):
  // transfer searches like surrogate, and the adaptive budget is more patient (SearchBudget).
  bool thin_prior = false;
};

// How many evaluations a bucket's search gets. Fixed (the plan's) unless the strategy is
// transfer with its default budget (what `blocktune adapt` runs), where it is spent where it
// pays: at least `floor` evaluations (three quarters of the plan, the whole plan where the prior
// is thin), then the search goes on while it is still finding better
// configs, stopping once `patience` evaluations in a row brought no gain over 1%, at most
// `cap`. The patience doubles for a bucket whose prior is thin or whose best so far beats the
// default by a close margin (between half the smallest band and three times it): there the
// row's verdict depends on configs the prior did not point at. Deterministic in the results,
// so a resumed sweep replays it.
struct SearchBudget {
  int64_t planned = 0;  // the plan's evaluations (BucketPlan::evaluations)
  int64_t floor = 0;
  int64_t cap = 0;
  int64_t patience = 0;
  bool adaptive = false;
};
SearchBudget BudgetOf(const SweepRequest& request, const BucketPlan& plan, bool thin_prior);

// What a phase tells RunSweep: go on, or the sink cancelled the sweep (RunSweep returns the
// winners so far).
enum class Flow { kContinue, kCancelled };

// --- Measuring a bucket (sweep_search.cc) ---

// Records the plan's invalid configs (those not stored yet) with their reasons.
Status RecordInvalid(BucketRun& b);
// A shard of a static plan: measures its slice of the bucket, decides nothing.
Result<Flow> MeasureShardItems(BucketRun& b);
// The bucket's search: its prior, the strategy and the seeds other profiles' rows suggest.
Result<std::unique_ptr<search::SearchStrategy>> StartSearch(BucketRun& b, const search::SearchSpace& space);
// Ask, measure (or replay what this sweep already stored), tell, within the evaluation and time
// budget.
Result<Flow> RunSearch(BucketRun& b, const search::SearchSpace& space, search::SearchStrategy& search);

// --- The decision round (sweep_decision.cc) ---

// Re-times the best few of the search with the incumbent, the default and the served config,
// records the round and adds the bucket's winner to run.winners.
Result<Flow> DecideBucket(BucketRun& b, const search::SearchSpace& space, const search::SearchStrategy& search);

}  // namespace blocktune::tuner
