// The decision round of a bucket: the best few configs of the search re-timed with their
// repetitions interleaved, together with the incumbent row, the kernel's default and the config
// the host is served now, and a new row published only where it wins beyond the noise band;
// see sweep.h (NoiseBand, SelectWinner) and sweep_run.h.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "kernels/core/fingerprint.h"
#include "tuner/decision.h"
#include "tuner/sweep.h"
#include "tuner/sweep_run.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

double NoiseBand(double cv_a, double cv_b, int64_t samples, double min_band) {
  const double n = static_cast<double>(std::max<int64_t>(samples, 1));
  return std::max(min_band, 2.0 * 1.25 * std::sqrt(cv_a * cv_a + cv_b * cv_b) / std::sqrt(n));
}

double NoiseBand(const Measurement& a, const Measurement& b, double min_band) {
  const auto samples = static_cast<int64_t>(std::min(a.samples_ns.size(), b.samples_ns.size()));
  return NoiseBand(timing::RobustCv(a.samples_ns), timing::RobustCv(b.samples_ns), samples, min_band);
}

double ExtraRoundSeconds(const SweepOptions& options, const SweepRequest& request) {
  return std::max(options.extra_round_seconds, options.extra_round_budget_share * request.budget_seconds);
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

Result<Flow> DecideBucket(BucketRun& b, const search::SearchSpace& space, const search::SearchStrategy& search) {
  SweepRun& run = b.run;
  const SweepRequest& request = run.request;
  const KernelSpec& spec = run.spec;
  const HardwareProfile& hw = run.hw;
  SweepSink& sink = run.sink;
  const SweepOptions& options = run.options;
  SweepBreakdown& bd = run.bd;
  const int64_t sweep_id = run.sweep_id;
  const BucketPlan& plan = b.plan;
  const EvalRequest& eval = b.eval;
  std::vector<Measurement>& results = b.results;
  const std::map<std::string, size_t>& measured = b.measured;
  int64_t& total = run.total;
  std::vector<TunedEntry>& winners = run.winners;
  const auto measure_once = [&b](const Config& c) { return b.MeasureOnce(c); };

  // The decision round: the best few of the search, and the incumbent, timed interleaved.
  std::vector<const Measurement*> ranked;
  for (const Measurement& m : results) {
    if (m.outcome == Outcome::kOk) ranked.push_back(&m);
  }
  if (ranked.empty()) return Flow::kContinue;
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
    if (sink.Cancelled()) return Flow::kCancelled;
    auto at = join_round((*incumbent)->config);
    if (!at) return std::unexpected(at.error());
    incumbent_at = *at;
  }
  // The kernel's default takes part in every round: a row is published only if it beats what
  // an application gets without the table, side by side and beyond the noise.
  std::optional<size_t> default_at;
  if (space.Find(spec.DefaultConfig())) {
    if (sink.Cancelled()) return Flow::kCancelled;
    auto at = join_round(spec.DefaultConfig());
    if (!at) return std::unexpected(at.error());
    default_at = *at;
  }
  // What a lookup serves the host now (another CPU model's row, say): replacing it with a
  // row that is not faster beyond the noise would churn the table for nothing.
  std::optional<size_t> served_at;
  if (*served && space.Find(**served) && (!*incumbent || (*incumbent)->config != **served) &&
      **served != spec.DefaultConfig()) {
    if (sink.Cancelled()) return Flow::kCancelled;
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
    if (sink.Cancelled()) return Flow::kCancelled;
    // Every verdict is a pair judged by the spread of its own per-cycle ratios (decision.h); a
    // close one gets its pair timed again. Why this and not each config's own spread: the
    // comment at NoiseBand in sweep.h and docs/tuning.md#choosing-the-winner.
    const RoundRoles roles{candidates, searched, incumbent_at, default_at, served_at};
    const RetimeFn more = [&](const std::vector<size_t>& which) {
      std::vector<Config> configs;
      double expected_ns = 0;
      for (size_t i : which) {
        configs.push_back(candidates[i]);
        const Measurement& m = retimed[i];
        expected_ns +=
            m.median_ns * static_cast<double>(std::max<int64_t>(m.iterations, 1) * eval.timing.repetitions + 1);
      }
      if (expected_ns * 1e-9 > ExtraRoundSeconds(options, request)) return std::vector<Measurement>{};
      return run.evaluator.MeasureInterleaved(eval, configs);
    };
    RoundDecision d;
    {
      PhaseTimer t(bd.decision_s);
      retimed = run.evaluator.MeasureInterleaved(eval, candidates);
      d = DecideRound(roles, retimed, more, options.min_noise_band, options.max_extra_rounds,
                      options.max_extra_rounds_per_config);
    }
    chosen = d.chosen;
    round.decision = std::move(d.text);
    round.noise_band = d.noise_band;
    round.verdict = std::move(d.verdict);
    round.rounds = d.rounds;
    retimed = std::move(d.timed);
  } else {
    round.decision = incumbent_at ? "kept incumbent: only candidate" : "new: only candidate";
  }
  // What guided the search (transfer: whose landscapes it followed), so the record says why
  // these were the candidates.
  if (stale_incumbent)
    round.decision += "; the incumbent row was stale (fingerprint " + (*incumbent)->fingerprint + ")";
  if (const std::string how = search.Explain(); !how.empty()) round.decision += "; " + how;
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
    return Flow::kContinue;
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
  return Flow::kContinue;
}

}  // namespace blocktune::tuner
