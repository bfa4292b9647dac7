// Sweep engine implementation; see sweep.h.
#include "tuner/sweep.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "kernels/core/fingerprint.h"
#include "tuner/check.h"
#include "tuner/search/search.h"
#include "tuner/search/seeded.h"

namespace blocktune::tuner {
namespace {

// FNV-1a over the bucket id rather than std::hash, whose value is implementation-defined:
// a replay (resume, simulate) must draw the same stream, and every machine running a shard
// must cut the same slice, on every standard library.
uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

uint64_t BucketSeed(uint64_t seed, const std::string& bucket) { return seed ^ Fnv1a(bucket); }

bool PlansStatically(Strategy s) { return s == Strategy::kExhaustive || s == Strategy::kRandom; }
// Strategies that read the prior of other buckets' measurements (transfer always, auto when it
// covers half the space).
bool UsesPrior(Strategy s) { return s == Strategy::kTransfer || s == Strategy::kAuto; }

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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
  BreakdownReport(SweepSink& sink, const Evaluator& evaluator, double flush_seconds)
      : sink_(sink),
        evaluator_(evaluator),
        flush_seconds_(flush_seconds),
        start_(Clock::now()),
        last_flush_(start_),
        costs_at_start_(evaluator.costs()) {}
  ~BreakdownReport() { Flush(); }
  void MaybeFlush() {
    if (SecondsSince(last_flush_) >= flush_seconds_) Flush();
  }
  void Flush() {
    SweepBreakdown now = breakdown;
    now.wall_s = SecondsSince(start_);
    now.eval = evaluator_.costs() - costs_at_start_;
    last_flush_ = Clock::now();
    if (auto s = sink_.RecordBreakdown(now - flushed_); !s) {
      spdlog::warn("recording the sweep's time breakdown failed error=\"{}\"", s.error().ToString());
      return;  // the next part carries this one's time too
    }
    flushed_ = now;
  }
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

}  // namespace

bool InShard(const std::string& bucket, size_t item, int shard_index, int shard_count) {
  if (shard_count <= 1) return true;
  const auto n = static_cast<uint64_t>(shard_count);
  return (static_cast<uint64_t>(item) % n + Fnv1a(bucket) % n) % n == static_cast<uint64_t>(shard_index);
}

bool ShardsItems(const SweepRequest& request) { return request.shard_count > 1 && PlansStatically(request.strategy); }

Result<std::vector<BucketPlan>> PlanSweep(const SweepRequest& request, const KernelSpec& spec,
                                          const HardwareProfile& hw) {
  if (request.threads < 1 || request.threads > 1024) {
    return InvalidArgument("threads must be in [1, 1024]", "threads");
  }
  if (request.budget < 0) return InvalidArgument("budget must be >= 0", "budget");
  if (!(request.budget_seconds >= 0)) return InvalidArgument("budget_seconds must be >= 0", "budget_seconds");
  if (request.shapes.empty()) return InvalidArgument("at least one shape is required", "shapes");
  if (request.shard_count < 1 || request.shard_count > 100000) {
    return InvalidArgument("shard count must be in [1, 100000]", "shard");
  }
  if (request.shard_index < 0 || request.shard_index >= request.shard_count) {
    return InvalidArgument("shard index must be in [0, " + std::to_string(request.shard_count) + ")", "shard");
  }
  bool dtype_ok = false;
  for (DType d : spec.dtypes()) dtype_ok |= d == request.dtype;
  if (!dtype_ok) {
    return InvalidArgument(
        "kernel " + std::string(spec.name()) + " does not support dtype " + std::string(DTypeName(request.dtype)),
        "dtype");
  }
  std::vector<BucketPlan> plans;
  std::set<std::string> seen;
  const std::vector<Config> space = spec.ConfigSpace();
  const Config default_config = spec.DefaultConfig();
  for (size_t i = 0; i < request.shapes.size(); ++i) {
    Problem p{request.dtype, request.shapes[i]};
    if (auto s = spec.ValidateProblem(p); !s) {
      return std::unexpected(WithPathPrefix(s.error(), "shapes[" + std::to_string(i) + "]"));
    }
    auto [bucket, rep] = spec.Bucket(p);
    if (!seen.insert(bucket).second) continue;  // two shapes in one bucket: measure it once
    const size_t ordinal = seen.size() - 1;
    if (request.shard_count > 1 && !PlansStatically(request.strategy) &&
        ordinal % static_cast<size_t>(request.shard_count) != static_cast<size_t>(request.shard_index)) {
      continue;  // a model-guided bucket belongs to one shard whole
    }
    BucketPlan plan;
    plan.bucket = bucket;
    plan.problem = rep;
    for (const Config& c : space) {
      // The one config check: what ingest (store/results.cc) and published rows are held to.
      if (auto s = CheckConfig(spec, c, rep, hw); s) {
        plan.valid.push_back(c);
      } else {
        plan.invalid.push_back(c);
        plan.invalid_reasons.push_back(s.error().message);
      }
    }
    plan.evaluations = search::EvaluationBudget(request.strategy, request.budget, plan.valid.size());
    if (request.strategy == Strategy::kExhaustive || request.strategy == Strategy::kRandom) {
      plan.planned = search::PlanConfigs(plan.valid, default_config, request.strategy, request.budget,
                                         BucketSeed(request.seed, bucket));
    }
    if (ShardsItems(request)) {
      // This shard's items: invalid configs are items 0..invalid-1, planned ones follow.
      BucketPlan mine;
      mine.bucket = plan.bucket;
      mine.problem = plan.problem;
      mine.valid = plan.valid;
      size_t item = 0;
      for (size_t j = 0; j < plan.invalid.size(); ++j, ++item) {
        if (!InShard(bucket, item, request.shard_index, request.shard_count)) continue;
        mine.invalid.push_back(plan.invalid[j]);
        mine.invalid_reasons.push_back(plan.invalid_reasons[j]);
      }
      for (size_t j = 0; j < plan.planned.size(); ++j, ++item) {
        if (InShard(bucket, item, request.shard_index, request.shard_count)) mine.planned.push_back(plan.planned[j]);
      }
      mine.evaluations = static_cast<int64_t>(mine.planned.size());
      if (mine.invalid.empty() && mine.planned.empty()) continue;  // nothing of this bucket is ours
      plan = std::move(mine);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

int64_t PlannedTotal(const std::vector<BucketPlan>& plans) {
  int64_t total = 0;
  for (const auto& p : plans) total += static_cast<int64_t>(p.invalid.size()) + p.evaluations;
  return total;
}

double NoiseBand(double cv_a, double cv_b, int64_t samples, double min_band) {
  const double n = static_cast<double>(std::max<int64_t>(samples, 1));
  return std::max(min_band, 2.0 * 1.25 * std::sqrt(cv_a * cv_a + cv_b * cv_b) / std::sqrt(n));
}

double NoiseBand(const Measurement& a, const Measurement& b, double min_band) {
  const auto samples = static_cast<int64_t>(std::min(a.samples_ns.size(), b.samples_ns.size()));
  return NoiseBand(RobustCv(a.samples_ns), RobustCv(b.samples_ns), samples, min_band);
}

const Measurement* SelectWinner(const std::vector<Measurement>& measurements) {
  const Measurement* best = nullptr;
  for (const Measurement& m : measurements) {
    if (m.outcome != Outcome::kOk) continue;
    // Ties broken by the canonical config string so the choice is deterministic.
    if (best == nullptr || m.median_ns < best->median_ns ||
        (m.median_ns == best->median_ns && m.config.ToString() < best->config.ToString())) {
      best = &m;
    }
  }
  return best;
}

Result<std::vector<TunedEntry>> RunSweep(const SweepRequest& request, int64_t sweep_id, const KernelSpec& spec,
                                         const HardwareProfile& hw, SweepSink& sink, const SweepOptions& options) {
  InProcessEvaluator in_process;
  Evaluator& evaluator = options.evaluator != nullptr ? *options.evaluator : in_process;
  BreakdownReport report(sink, evaluator, options.breakdown_flush_seconds);
  SweepBreakdown& bd = report.breakdown;

  Result<std::vector<BucketPlan>> plans;
  {
    PhaseTimer t(bd.search_s);
    plans = PlanSweep(request, spec, hw);
  }
  if (!plans) return std::unexpected(plans.error());

  int64_t total = PlannedTotal(*plans);
  int64_t done = 0;

  const SweepEnvironment environment = CaptureEnvironment(options.tool_version);
  {
    PhaseTimer t(bd.store_s);
    if (auto s = sink.RecordEnvironment(environment); !s) return std::unexpected(s.error());
  }

  // The transfer strategy's prior: the sink's stored landscapes, one PriorBucket per bucket,
  // and each bucket of this run once its search is done.
  std::map<std::string, std::pair<Problem, std::vector<std::pair<Config, double>>>> prior_medians;
  std::map<std::string, search::PriorBucket> prior_buckets;
  std::vector<search::ProfileMeasurement> other_profiles;  // the cross-profile prior, loaded once
  const auto add_to_prior = [&](const Measurement& m) {
    auto& [problem, medians] = prior_medians[m.bucket];
    problem = m.problem;
    medians.emplace_back(m.config, m.median_ns);
  };
  const auto rebuild_prior = [&](const std::string& bucket) {
    const auto& [problem, medians] = prior_medians.at(bucket);
    search::PriorBucket pb = search::MakePriorBucket(search::PriorFeatures(spec, problem), medians);
    pb.name = bucket;
    prior_buckets.insert_or_assign(bucket, std::move(pb));
  };
  if (UsesPrior(request.strategy)) {
    Result<std::vector<Measurement>> prior;
    {
      PhaseTimer t(bd.store_s);
      prior = sink.PriorMeasurements();
    }
    if (!prior) return std::unexpected(prior.error());
    Result<std::vector<search::ProfileMeasurement>> profiles;
    {
      PhaseTimer t(bd.store_s);
      profiles = sink.ProfileMeasurements();
    }
    if (!profiles) return std::unexpected(profiles.error());
    other_profiles = std::move(*profiles);
    PhaseTimer t(bd.search_s);
    for (const Measurement& m : *prior) add_to_prior(m);
    for (const auto& [bucket, _] : prior_medians) rebuild_prior(bucket);
    spdlog::info("transfer prior kernel={} sweep={} buckets={} measurements={}{}", spec.name(), sweep_id,
                 prior_buckets.size(), prior->size(),
                 prior_buckets.empty() ? " (none stored yet: the first bucket searches like surrogate)" : "");
  }

  std::vector<TunedEntry> winners;
  for (const BucketPlan& plan : *plans) {
    Result<std::vector<Measurement>> existing;
    {
      PhaseTimer t(bd.store_s);
      existing = sink.Existing(plan.bucket);
    }
    if (!existing) return std::unexpected(existing.error());
    std::vector<Measurement> results = std::move(*existing);
    std::map<std::string, size_t> measured;  // config string -> index in results
    for (size_t i = 0; i < results.size(); ++i) measured.emplace(results[i].config.ToString(), i);

    auto record = [&](Measurement& m) -> Status {
      ++done;
      PhaseTimer t(bd.store_s);
      if (auto s = sink.Record(m, done, total); !s) return s;
      measured.emplace(m.config.ToString(), results.size());
      results.push_back(m);
      report.MaybeFlush();
      return {};
    };
    auto base = [&](const Config& c) {
      Measurement m;
      m.sweep_id = sweep_id;
      m.bucket = plan.bucket;
      m.problem = plan.problem;
      m.config = c;
      m.fingerprint = std::string(KernelFingerprint(spec.name()));
      return m;
    };

    for (size_t i = 0; i < plan.invalid.size(); ++i) {
      if (measured.count(plan.invalid[i].ToString())) {
        ++done;
        continue;
      }
      Measurement m = base(plan.invalid[i]);
      m.outcome = Outcome::kInvalid;
      m.detail = plan.invalid_reasons[i];
      if (auto s = record(m); !s) return std::unexpected(s.error());
    }

    if (ShardsItems(request)) {
      // A shard of a static plan measures its slice in plan order and decides nothing: the
      // winner of a bucket is chosen from all shards once they are merged (store/ingest.h).
      for (const Config& c : plan.planned) {
        if (sink.Cancelled()) return winners;
        if (measured.count(c.ToString())) {
          ++done;
          continue;
        }
        Measurement fresh = base(c);
        evaluator.Measure(EvalRequest{&spec, plan.problem, request.threads, request.seed, options.timing, hw.cpu.isa},
                          c, fresh);
        ++bd.measured;
        if (auto s = record(fresh); !s) return std::unexpected(s.error());
      }
      continue;
    }

    // The search: ask, measure (or replay what this sweep already stored), tell.
    const EvalRequest eval{&spec, plan.problem, request.threads, request.seed, options.timing, hw.cpu.isa};
    const search::SearchSpace space(spec.params(), plan.valid);
    // The index in `results` of config `c`'s measurement in this sweep: the stored one (a resumed
    // sweep replays what it measured before a restart), or measured now and recorded. The
    // search and the decision round both go through here, so no config is measured twice.
    auto measure_once = [&](const Config& c) -> Result<size_t> {
      if (auto it = measured.find(c.ToString()); it != measured.end()) return it->second;
      Measurement fresh = base(c);
      evaluator.Measure(eval, c, fresh);
      ++bd.measured;
      spdlog::debug("measured kernel={} bucket={} config={} outcome={} median_ns={:.0f} cv={:.3f}", spec.name(),
                    plan.bucket, c.ToString(), OutcomeName(fresh.outcome), fresh.median_ns, fresh.cv);
      if (auto s = record(fresh); !s) return std::unexpected(s.error());
      return results.size() - 1;
    };
    // A bucket's own earlier landscape is left out, as in simulate: the prior says what this
    // bucket should look like from its neighbours, not what an older kernel measured here.
    const auto search_setup = Clock::now();
    search::SearchPrior prior;
    if (UsesPrior(request.strategy)) {
      prior.features = search::PriorFeatures(spec, plan.problem);
      for (const auto& [bucket, pb] : prior_buckets) {
        if (bucket != plan.bucket && !pb.relative_cost.empty()) prior.buckets.push_back(pb);
      }
    }
    // Other hardware profiles' landscapes, each weighted by how alike this profile's it was
    // measured to be on the buckets both swept (this bucket's own earlier landscape included).
    std::vector<search::ProfileSimilarity> similarity;
    if (UsesPrior(request.strategy) && !other_profiles.empty()) {
      std::vector<Measurement> own;
      for (const auto& [bucket, pm] : prior_medians) {
        for (const auto& [config, ns] : pm.second) {
          Measurement m;
          m.bucket = bucket;
          m.config = config;
          m.median_ns = ns;
          own.push_back(std::move(m));
        }
      }
      similarity = search::MeasureProfileSimilarity(own, other_profiles);
      auto extra = search::ProfilePriorBuckets(spec, other_profiles, similarity);
      prior.buckets.insert(prior.buckets.end(), std::make_move_iterator(extra.begin()),
                           std::make_move_iterator(extra.end()));
    }
    auto search = search::MakeSearch(request.strategy, space, space.Find(spec.DefaultConfig()),
                                     BucketSeed(request.seed, plan.bucket), plan.evaluations, prior);
    bd.search_s += SecondsSince(search_setup);
    if (UsesPrior(request.strategy)) {
      Result<std::vector<Config>> seeds;
      {
        PhaseTimer t(bd.store_s);
        seeds = sink.Seeds(plan.bucket, plan.problem);
      }
      if (!seeds) return std::unexpected(seeds.error());
      std::vector<size_t> at;
      for (const Config& c : *seeds) {
        if (auto i = space.Find(c)) at.push_back(*i);  // another profile's row may not fit here
      }
      if (!at.empty()) search = search::MakeSeededSearch(std::move(search), std::move(at));
    }
    if (!similarity.empty()) {
      PhaseTimer t(bd.store_s);
      if (auto s = sink.RecordPriorProfiles(similarity); !s) return std::unexpected(s.error());
    }
    const auto bucket_start = std::chrono::steady_clock::now();
    int64_t evaluated = 0;
    for (; evaluated < plan.evaluations; ++evaluated) {
      if (sink.Cancelled()) return winners;
      std::optional<size_t> next;
      {
        PhaseTimer t(bd.search_s);
        next = search->Ask();
      }
      if (!next) break;
      const Config& c = space.config(*next);
      if (measured.count(c.ToString())) {
        ++done;  // replayed: counted as done when it was first measured, in an earlier run of this sweep
      } else {
        const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - bucket_start).count();
        if (request.budget_seconds > 0 && elapsed_s >= request.budget_seconds) break;
      }
      auto at = measure_once(c);
      if (!at) return std::unexpected(at.error());
      const Measurement& m = results[*at];
      PhaseTimer t(bd.search_s);
      search->Tell(*next, search::Observation{m.outcome == Outcome::kOk, m.median_ns});
    }
    total -= plan.evaluations - evaluated;  // a search that stopped early shrinks the total
    if (UsesPrior(request.strategy)) {
      bool any = false;
      for (const Measurement& m : results) {
        if (m.outcome != Outcome::kOk || !(m.median_ns > 0)) continue;
        add_to_prior(m);
        any = true;
      }
      if (any) rebuild_prior(plan.bucket);
    }

    // The decision round: the best few of the search, and the incumbent, timed interleaved.
    std::vector<const Measurement*> ranked;
    for (const Measurement& m : results) {
      if (m.outcome == Outcome::kOk) ranked.push_back(&m);
    }
    if (ranked.empty()) continue;
    std::sort(ranked.begin(), ranked.end(), [](const Measurement* a, const Measurement* b) {
      return a->median_ns != b->median_ns ? a->median_ns < b->median_ns : a->config.ToString() < b->config.ToString();
    });
    const size_t keep = static_cast<size_t>(std::max(options.final_candidates, 1));
    if (ranked.size() > keep) ranked.resize(keep);
    std::vector<Config> candidates;
    for (const Measurement* m : ranked) candidates.push_back(m->config);
    const size_t searched = candidates.size();

    // Adds `c` to the decision round (measured and verified in this sweep first if the search
    // did not get to it, so it is checked against today's kernel); its index, or none when it
    // did not run ok.
    auto join_round = [&](const Config& c) -> Result<std::optional<size_t>> {
      if (const auto pos = std::find(candidates.begin(), candidates.end(), c); pos != candidates.end()) {
        return static_cast<size_t>(pos - candidates.begin());
      }
      if (!measured.count(c.ToString())) ++total;  // beyond the search's planned evaluations
      auto at = measure_once(c);
      if (!at) return std::unexpected(at.error());
      if (results[*at].outcome != Outcome::kOk) return std::optional<size_t>();
      candidates.push_back(c);
      return candidates.size() - 1;
    };

    Result<std::optional<TunedEntry>> incumbent;
    Result<std::optional<Config>> served;
    {
      PhaseTimer t(bd.store_s);
      incumbent = sink.Incumbent(std::string(spec.name()), hw.Key(), request.dtype, plan.bucket);
      if (incumbent) served = sink.Served(plan.bucket, plan.problem);
    }
    if (!incumbent) return std::unexpected(incumbent.error());
    if (!served) return std::unexpected(served.error());
    std::optional<size_t> incumbent_at;
    // A stale incumbent (measured by another build of the kernel) loses to a fresh row: it gets
    // no incumbent's advantage, the round's winner replaces it.
    const bool stale_incumbent = *incumbent && FreshnessOf(spec.name(), (*incumbent)->fingerprint) == Freshness::kStale;
    if (*incumbent && !stale_incumbent && (*incumbent)->bucket_version == spec.bucket_version() &&
        space.Find((*incumbent)->config)) {
      if (sink.Cancelled()) return winners;
      auto at = join_round((*incumbent)->config);
      if (!at) return std::unexpected(at.error());
      incumbent_at = *at;
    }
    // The kernel's default takes part in every round: a row is published only if it beats what
    // an application gets without the table, side by side and beyond the noise.
    std::optional<size_t> default_at;
    if (space.Find(spec.DefaultConfig())) {
      if (sink.Cancelled()) return winners;
      auto at = join_round(spec.DefaultConfig());
      if (!at) return std::unexpected(at.error());
      default_at = *at;
    }
    // What a lookup serves the host now (another CPU model's row, say): replacing it with a
    // row that is not faster beyond the noise would churn the table for nothing.
    std::optional<size_t> served_at;
    if (*served && space.Find(**served) && (!*incumbent || (*incumbent)->config != **served) &&
        **served != spec.DefaultConfig()) {
      if (sink.Cancelled()) return winners;
      auto at = join_round(**served);
      if (!at) return std::unexpected(at.error());
      served_at = *at;
    }

    FinalRound round;
    round.sweep_id = sweep_id;
    round.bucket = plan.bucket;
    if (incumbent_at) round.incumbent = candidates[*incumbent_at];
    if (served_at) round.served = candidates[*served_at];
    size_t chosen = 0;  // index into candidates
    std::vector<Measurement> retimed;
    if (candidates.size() > 1) {
      if (sink.Cancelled()) return winners;
      {
        PhaseTimer t(bd.decision_s);
        retimed = evaluator.MeasureInterleaved(eval, candidates);
      }
      bool any = false;
      for (size_t i = 0; i < searched; ++i) {
        if (retimed[i].outcome != Outcome::kOk) continue;
        if (!any || retimed[i].median_ns < retimed[chosen].median_ns) chosen = i;
        any = true;
      }
      round.decision = "new";
      if (incumbent_at && chosen != *incumbent_at) {
        const Measurement& ch = retimed[chosen];
        const Measurement& inc = retimed[*incumbent_at];
        if (inc.outcome == Outcome::kOk && any) {
          round.noise_band = NoiseBand(ch, inc, options.min_noise_band);
          const double gain = 1.0 - ch.median_ns / inc.median_ns;
          char buf[160];
          if (gain > round.noise_band) {
            std::snprintf(buf, sizeof buf, "replaced incumbent: %.1f%% faster, noise band %.1f%%", 100 * gain,
                          100 * round.noise_band);
          } else {
            std::snprintf(buf, sizeof buf, "kept incumbent: challenger %.1f%% %s, inside noise band %.1f%%",
                          100 * std::fabs(gain), gain >= 0 ? "faster" : "slower", 100 * round.noise_band);
            chosen = *incumbent_at;
          }
          round.decision = buf;
        }
      } else if (incumbent_at) {
        round.decision = "kept incumbent: fastest again";
      }
      // Against the default, after the incumbent: what is published must beat it beyond the
      // noise band, or the default itself is the bucket's row (with this round as evidence).
      if (default_at && chosen != *default_at && any && retimed[*default_at].outcome == Outcome::kOk) {
        const Measurement& ch = retimed[chosen];
        const Measurement& def = retimed[*default_at];
        const double band = NoiseBand(ch, def, options.min_noise_band);
        const double gain = 1.0 - ch.median_ns / def.median_ns;
        char buf[200];
        if (gain > band) {
          std::snprintf(buf, sizeof buf, "; beats the default by %.1f%%, noise band %.1f%%", 100 * gain, 100 * band);
          round.decision += buf;
        } else {
          std::snprintf(buf, sizeof buf,
                        "kept default: best challenger %.1f%% %s than the default, inside noise band %.1f%%",
                        100 * std::fabs(gain), gain >= 0 ? "faster" : "slower", 100 * band);
          round.decision = buf;
          round.noise_band = band;
          chosen = *default_at;
        }
      } else if (default_at && chosen == *default_at) {
        round.decision += "; the default is fastest";
      }
      // Against what the host is served now, last. When the default stands (it was fastest, or
      // no challenger beat it beyond the noise), the served row stays only if it beats the
      // default beyond the noise: the default is what an application gets without a table, and
      // a row that is not measurably faster than it has no claim, wherever it came from.
      // Otherwise a new row must beat the served one beyond the noise as well, or the served
      // config becomes the host's own row (with this round as evidence), to spare the table churn.
      if (served_at && default_at && chosen == *default_at && any && retimed[*served_at].outcome == Outcome::kOk &&
          retimed[chosen].outcome == Outcome::kOk) {
        const Measurement& sv = retimed[*served_at];
        const Measurement& def = retimed[*default_at];
        const double band = NoiseBand(sv, def, options.min_noise_band);
        const double gain = 1.0 - sv.median_ns / def.median_ns;
        char buf[200];
        if (gain > band) {
          std::snprintf(buf, sizeof buf, "; kept served row: it beats the default by %.1f%%, noise band %.1f%%",
                        100 * gain, 100 * band);
          chosen = *served_at;
        } else {
          std::snprintf(buf, sizeof buf, "; dropped served row: %.1f%% %s than the default, inside noise band %.1f%%",
                        100 * std::fabs(gain), gain >= 0 ? "faster" : "slower", 100 * band);
        }
        round.decision += buf;
        round.noise_band = band;
      } else if (served_at && chosen != *served_at && any && retimed[*served_at].outcome == Outcome::kOk &&
                 retimed[chosen].outcome == Outcome::kOk) {
        const Measurement& ch = retimed[chosen];
        const Measurement& sv = retimed[*served_at];
        const double band = NoiseBand(ch, sv, options.min_noise_band);
        const double gain = 1.0 - ch.median_ns / sv.median_ns;
        char buf[200];
        if (gain > band) {
          std::snprintf(buf, sizeof buf, "; beats the served row by %.1f%%, noise band %.1f%%", 100 * gain, 100 * band);
          round.decision += buf;
        } else {
          std::snprintf(buf, sizeof buf, "; kept served row: %.1f%% %s than it, inside noise band %.1f%%",
                        100 * std::fabs(gain), gain >= 0 ? "faster" : "slower", 100 * band);
          round.decision += buf;
          round.noise_band = band;
          chosen = *served_at;
        }
      }
    } else {
      round.decision = incumbent_at ? "kept incumbent: only candidate" : "new: only candidate";
    }
    // What guided the search (transfer: whose landscapes it followed), so the record says why
    // these were the candidates.
    if (stale_incumbent)
      round.decision += "; the incumbent row was stale (fingerprint " + (*incumbent)->fingerprint + ")";
    if (const std::string how = search->Explain(); !how.empty()) round.decision += "; " + how;
    round.chosen = candidates[chosen];
    for (size_t i = 0; i < retimed.size(); ++i) {
      retimed[i].sweep_id = sweep_id;
      retimed[i].bucket = plan.bucket;
      retimed[i].problem = plan.problem;
      retimed[i].config = candidates[i];
    }
    round.candidates = retimed;
    {
      PhaseTimer t(bd.store_s);
      if (auto s = sink.RecordFinalRound(round); !s) return std::unexpected(s.error());
    }
    spdlog::info("bucket decided kernel={} bucket={} config={} decision=\"{}\"", spec.name(), plan.bucket,
                 round.chosen.ToString(), round.decision);

    if (incumbent_at && chosen == *incumbent_at) {
      winners.push_back(**incumbent);  // unchanged: the published table does not churn
      continue;
    }
    const Measurement& w = results[measured.at(round.chosen.ToString())];
    TunedEntry e;
    e.kernel = std::string(spec.name());
    e.hardware_key = hw.Key();
    e.dtype = request.dtype;
    e.bucket = plan.bucket;
    e.bucket_version = spec.bucket_version();
    e.config = w.config;
    const bool retimed_ok = chosen < retimed.size() && retimed[chosen].outcome == Outcome::kOk;
    e.median_ns = retimed_ok ? retimed[chosen].median_ns : w.median_ns;
    e.samples = static_cast<int64_t>(retimed_ok ? retimed[chosen].samples_ns.size() : w.samples_ns.size());
    e.sweep_id = sweep_id;
    e.measurement_id = w.id;
    e.measured_at = w.created_at;
    // Re-timed in this round by this build: this build's fingerprint; else the measurement's.
    e.fingerprint = retimed_ok ? std::string(KernelFingerprint(spec.name())) : w.fingerprint;
    winners.push_back(std::move(e));
  }
  return winners;
}

}  // namespace blocktune::tuner
