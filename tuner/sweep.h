// The sweep engine: for each bucket of a request, prune invalid configs, let the search
// strategy pick which valid ones to measure (ask/tell, within an evaluation and time budget),
// verify each against the reference on a small problem, time it at the bucket's shape, then
// re-time the best few interleaved, together with the incumbent tuned config, and publish a
// new winner only if it beats the incumbent by more than the noise band. It knows nothing of
// SQL, HTTP or JSON: results go to a SweepSink (the Google Benchmark reporter pattern), which
// also tells it what is already measured so a stopped sweep resumes without measuring
// anything twice: the strategy is replayed on the stored results.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "blocktune/version.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/breakdown.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"
#include "tuner/search/profile_prior.h"
#include "tuner/timing/environment.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

// One paired verdict of a decision round: a config against a reference (the default, the
// incumbent row, the served row), from the cycles of the interleaved rounds in which both were
// timed (timing/paired.h). The record says what decided a bucket's row: both figures, the band
// and how many repetitions and rounds it rests on.
struct Verdict {
  Config config;
  std::string against;  // "default", "incumbent" or "served"
  Config reference;
  double config_ns = 0;  // medians over the paired cycles
  double reference_ns = 0;
  double gain = 0;        // 1 - median of the per-cycle ratios config / reference
  double noise_band = 0;  // of this pair: max(min band, 2 standard errors of that median)
  int64_t cycles = 0;     // paired repetitions the verdict rests on
  int64_t dropped = 0;    // cycles left out as disturbed (timing/paired.h)
  int64_t rounds = 0;     // interleaved rounds they came from: the decision round and extra ones
  bool beats = false;     // gain > noise_band, settled (below)
  // A challenger's gain beyond the band by less than one standard error when no extra round was
  // left to settle it (timing::PairedComparison::Close), and not `held` (below): not a win. On
  // the 2-core Zen 4 two rows published on such verdicts (3.0% over a 2.2% band, 4 paired
  // repetitions) were 7-13% slower than the default when `blocktune regret` timed them later.
  bool unsettled = false;
  // A challenger's win still close when the extra rounds ran out, counted all the same: it rests
  // on at least kHeldWinCycles paired repetitions from at least two rounds timed apart, and each
  // of those rounds on its own found the challenger faster (decision.cc). A standard error from
  // 4-5 cycles is itself a guess, which is why a close win from one round stays unsettled; from
  // 10 or more over separate rounds a gain beyond two of them is the ~97.5% one-sided test the
  // band stands for. On the Zen 4 at AVX2 (issue 39, run 5) the default was kept on two such
  // verdicts, grouped_matmul f32 groups64 at 1 and 2 threads (3.7% over a 2.7% band from 15
  // cycles, 11.2% over 7.5% from 13), where `blocktune regret` finds those rows 8-11% faster.
  bool held = false;
};
// Paired repetitions a close win must rest on to be held (Verdict::held).
inline constexpr int64_t kHeldWinCycles = 10;

// The decision round of one bucket: the best configs of the search (and the incumbent) timed
// again with their repetitions interleaved, and what was chosen from it.
struct FinalRound {
  int64_t sweep_id = 0;
  std::string bucket;
  std::vector<Measurement> candidates;  // config, outcome and timing fields; same order as timed
  std::optional<Config> incumbent;      // the tuned config before this sweep, if it took part
  // What the host was served for the bucket before this sweep when that was neither the
  // incumbent nor the default (a row of another CPU model or thread count, an override), if it
  // took part.
  std::optional<Config> served;
  Config chosen;
  double noise_band = 0;  // the band of the verdict that decided (0: none did)
  std::string decision;   // "new", "replaced incumbent ...", "kept incumbent ...", with the figures
  // The verdict that decided the row: for a new row the closest of the verdicts it had to win,
  // for a kept one the best challenger's lost verdict (or the kept row's claim over the default).
  std::optional<Verdict> verdict;
  int64_t rounds = 1;  // interleaved rounds the decision took: 1 + the extra rounds of close verdicts
};

class SweepSink {
 public:
  virtual ~SweepSink() = default;
  // Measurements already stored for this sweep and bucket; their configs are not run again.
  virtual Result<std::vector<Measurement>> Existing(const std::string& bucket) = 0;
  // Persists one measurement together with the sweep's progress; sets m.id.
  virtual Status Record(Measurement& m, int64_t done, int64_t total) = 0;
  // Polled between configs; true stops the sweep (status: cancelled).
  virtual bool Cancelled() { return false; }

  // --- Added with the search/timing work; the defaults keep older sinks working. ---

  // The tuned entry currently published for this key, which a new winner must beat by more
  // than the noise band to replace. Default: none (every winner is new).
  virtual Result<std::optional<TunedEntry>> Incumbent(const std::string& /*kernel*/,
                                                      const std::string& /*hardware_key*/, DType /*dtype*/,
                                                      const std::string& /*bucket*/) {
    return std::optional<TunedEntry>();
  }
  // The conditions the sweep runs under; called once per RunSweep before anything is timed.
  virtual Status RecordEnvironment(const timing::SweepEnvironment& /*environment*/) { return {}; }
  // The decision round of a bucket; a resumed sweep repeats the round and records it again.
  virtual Status RecordFinalRound(const FinalRound& /*round*/) { return {}; }
  // Passing measurements of this sweep's kernel, dtype and threads on this hardware from
  // earlier sweeps, and from buckets of this sweep planned before the ones RunSweep is given
  // (any bucket; `problem` must be the bucket's representative problem): the transfer
  // strategy's prior. RunSweep adds each bucket it finishes to the prior of the next. It must
  // not change while the sweep runs, or a resumed sweep could choose differently. Default:
  // none (transfer then searches like surrogate until a bucket of this run is finished).
  virtual Result<std::vector<Measurement>> PriorMeasurements() { return std::vector<Measurement>{}; }

  // --- Added with the sweep-efficiency and adapt work. ---

  // The config a lookup serves this host for the bucket now (the daemon's resolver: its rows
  // over the checked-in table, fallback levels, overrides), if it is neither the incumbent nor
  // the default. It joins the decision round, and a new row must beat it beyond the noise too.
  // `problem` is the bucket's representative problem. Default: none.
  virtual Result<std::optional<Config>> Served(const std::string& /*bucket*/, const Problem& /*problem*/) {
    return std::optional<Config>();
  }
  // Configs that other hardware profiles' tuned rows chose for this bucket (the checked-in
  // table and the database, any key but this sweep's; most alike key first, by RegretLevelOf).
  // Strategies that use a prior (transfer, auto) measure them before searching: on a machine
  // without rows of its own they are the best first guesses there are. Default: none.
  virtual Result<std::vector<Config>> Seeds(const std::string& /*bucket*/, const Problem& /*problem*/) {
    return std::vector<Config>();
  }
  // Where the wall time of this RunSweep call went; called once as it returns (also when it
  // stops early), so a sweep of many tasks, or one resumed after a kill, adds its parts up.
  virtual Status RecordBreakdown(const SweepBreakdown& /*breakdown*/) { return {}; }
  // The transfer strategy's cross-profile prior (search/profile_prior.h): passing measurements
  // of this kernel and dtype under other hardware keys, from sweeps finished before this one
  // (so it does not change while the sweep runs or resumes). Default: none.
  virtual Result<std::vector<search::ProfileMeasurement>> ProfileMeasurements() {
    return std::vector<search::ProfileMeasurement>{};
  }
  // The other profiles a bucket's search drew on and their measured likeness; called per
  // bucket that had any (the sweep's record names them).
  virtual Status RecordPriorProfiles(const std::vector<search::ProfileSimilarity>& /*profiles*/) { return {}; }
};

struct SweepOptions {
  timing::TimingOptions timing;
  // Where configs run; nullptr = an InProcessEvaluator owned by RunSweep. Not owned.
  Evaluator* evaluator = nullptr;
  // How many of the search's best configs are re-timed interleaved before the winner is
  // chosen (plus the incumbent). 4: the runner-ups of a sweep are usually within a few percent
  // of each other, and 4 x 5 repetitions stay a small fraction of a bucket's time.
  int final_candidates = 4;
  // Smallest noise band: a challenger must beat the incumbent by more than this (and by more
  // than two standard errors of the median difference) to replace it.
  double min_noise_band = 0.02;
  // A verdict within one standard error of its band (timing::PairedComparison::Close) gets its
  // pair timed again, `timing.repetitions` more interleaved cycles a round, at most this many
  // rounds per bucket and `max_extra_rounds_per_config` for any one config's verdicts: the band
  // narrows as 1 / sqrt(cycles), so close calls are settled by evidence and the clear ones cost
  // nothing extra. With 2 per bucket, a served row's close claim over the default took both and
  // left the best challenger's close win unsettled (issue 39, matmul t2 at AVX2: the reference
  // row 3-5% faster than the default that stayed).
  int max_extra_rounds = 4;
  int max_extra_rounds_per_config = 2;
  // An extra round expected to take longer than this (its configs' repetitions at their medians
  // and counts, and a warm call each) is not run: at 0.6 s a call, one more round of a pair is
  // 7 s, a tenth of what adapt gives a whole bucket.
  double extra_round_seconds = 2;
  // With a per-bucket time limit (SweepRequest::budget_seconds), an extra round may take up to
  // this share of it when that is more (ExtraRoundSeconds): adapt's 13-minute run gives a bucket
  // 7.5 s of search, so a pair of 200 ms configs (2.4 s a round) is settled instead of its 6.0%
  // win being left unsettled (flash_attention f32 t1 heads8, 194 ms a call, on the Zen 4).
  double extra_round_budget_share = 0.5;
  // A search measurement whose repetitions spread more than this (robust CV) is timed again
  // before the search is told it, and the quieter of the two (robust CV) is kept: one disturbed
  // measurement (cv 0.09, robust 0.07, at 6.21 ms for a config that runs 7.73 ms) otherwise
  // steers the search and ranks the decision round's candidates. Robust, because one
  // preempted repetition of five (plain cv 0.64, robust 0.01 on the 512^3 sweep) moves neither
  // the median nor anything it steers: re-timing 17 such configs cost 1.9 s of a 24 s sweep.
  // 0: never.
  double retime_cv = 0.05;
  // A search measurement stops after TimingOptions::stop_after (2) repetitions when each was
  // slower than this times the bucket's best median so far: a config 15% behind on its fastest
  // repetition is no contender (CouldContend draws the line at 5%), and its three more
  // repetitions bought nothing. In an adapt run on the Zen 4 (issue 39, run 7) 172 of 803
  // search measurements stopped natively and 180 of 738 at AVX2, one of them a reference row's
  // config that ran 2.1x the best in that run; in a bucket with a time limit the time goes to
  // more configs (at 0.2 s a call, 3 repetitions are 0.6 s). Not for exhaustive sweeps, whose
  // every measurement is the landscape's. 0: never.
  double stop_behind = 1.15;
  std::string tool_version = kToolVersion;  // recorded with the environment
  // The time breakdown is committed in parts at most this often (after a stored measurement),
  // and as RunSweep returns: a SIGKILL loses at most this much of it. One small UPDATE per part.
  double breakdown_flush_seconds = 2;
};

struct BucketPlan {
  std::string bucket;
  Problem problem;              // the bucket's representative problem (what is timed)
  std::vector<Config> invalid;  // with reasons in `invalid_reasons`, same order
  std::vector<std::string> invalid_reasons;
  std::vector<Config> valid;  // every config that passed validation, in space order
  // Configs known to be measured, in order: the whole plan of exhaustive and random, empty
  // for model-guided strategies (they choose as they go).
  std::vector<Config> planned;
  int64_t evaluations = 0;  // configs the search will measure (its evaluation budget)
};

// Configs a sweep of these plans records when it runs to the end: invalid ones plus each
// bucket's evaluation budget (the progress total).
int64_t PlannedTotal(const std::vector<BucketPlan>& plans);

// The relative band inside which two medians are not told apart: two standard errors of the
// difference of two medians of `samples` repetitions with the given CVs (the standard error
// of a median is ~1.25 CV / sqrt(n)), and at least `min_band`. For measurements that were not
// timed side by side (the search's, in `explain`'s ranking). Decisions on configs timed in one
// interleaved round (the decision round, `blocktune regret`, the regression gate) use the
// paired band instead (timing/paired.h, tuner/decision.h), since issue 39 found the decision
// round and regret disagreeing on the same pairs (a 5.2% gain "inside noise band 5.4%" that
// regret timed at 31.7%; a 9.1% band set by the default's cv 0.118) for these reasons in the
// round's code: (1) this band adds each config's own spread, so a slow phase that hits both
// configs of a cycle, the usual noise at two threads on two cores, counts twice against the
// gain instead of cancelling in their ratio; (2) only the round's fastest candidate was judged,
// so one noisy candidate whose median came out lowest set the band and blocked the clean ones
// behind it; (3) the round timed its configs in a fixed order with the default, incumbent and
// served row appended last (regret: the default first), the same slot and predecessor every
// cycle; (4) a config calibrated in the search got a single warm call (regret calibrates every
// config afresh: a warm-up, a single call, growth batches), all before the first cycle, so its
// first repetition came after every other config's calls, colder than regret's;
// (5) five repetitions, with no way to get more when the verdict was close, against regret's
// seven; (6) one search measurement with cv 0.09 ranked the round's candidates unchecked.
double NoiseBand(double cv_a, double cv_b, int64_t samples, double min_band);
// NoiseBand of two measurements of one interleaved round, from their robust CVs (RobustCv:
// MAD-based, like the unstable verdict), since the medians are what is compared: one
// repetition preempted for a few ms would make the plain CV, and with it the band, several
// times wider than the spread the medians actually have.
double NoiseBand(const Measurement& a, const Measurement& b, double min_band);

// The longest an extra round of a decision may be expected to take (SweepOptions::
// extra_round_seconds, extra_round_budget_share).
double ExtraRoundSeconds(const SweepOptions& options, const SweepRequest& request);

// Sharding (SweepRequest::shard_index/shard_count). Item `item` of a bucket's plan (its
// invalid configs, then its planned ones, in order) belongs to shard
// (item + Fnv1a(bucket)) % count: every bucket is striped over the shards, starting at a
// bucket-dependent shard so that small buckets do not all land on shard 0, and the rule needs
// nothing but the bucket, so the daemon's one-bucket tasks apply it as the whole sweep would.
// Model-guided strategies choose as they go and cannot be cut inside a bucket: whole buckets
// go to shard (ordinal % count), ordinal being the bucket's position among the request's
// distinct buckets (PlanSweep drops the others; a task of such a sweep runs with the shard
// cleared, its bucket being already chosen).
bool InShard(const std::string& bucket, size_t item, int shard_index, int shard_count);
// Whether this request cuts buckets into (bucket, config) items (exhaustive or random with
// shard_count > 1): such a shard records measurements only, without a decision round.
bool ShardsItems(const SweepRequest& request);

// Validates the request against the kernel (dims, dtype, threads, budget) and plans every
// bucket. Errors name the offending field ("shapes[1].k").
Result<std::vector<BucketPlan>> PlanSweep(const SweepRequest& request, const KernelSpec& spec,
                                          const HardwareProfile& hw);

// Picks the winner among stored measurements: the lowest median among configs that passed.
const Measurement* SelectWinner(const std::vector<Measurement>& measurements);

// Runs the sweep to completion (or cancellation) and returns the winner of each bucket that
// has at least one passing config. `hw.threads` must equal request.threads.
Result<std::vector<TunedEntry>> RunSweep(const SweepRequest& request, int64_t sweep_id, const KernelSpec& spec,
                                         const HardwareProfile& hw, SweepSink& sink, const SweepOptions& options);

}  // namespace blocktune::tuner
