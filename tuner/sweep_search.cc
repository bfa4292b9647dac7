// Measuring one bucket of a sweep: what the sweep stored before a restart (replayed, never
// measured again), the invalid configs with their reasons, a shard's slice of a static plan, and
// the search (ask, measure, tell) within the evaluation and time budget; see sweep_run.h.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "kernels/core/fingerprint.h"
#include "tuner/search/seeded.h"
#include "tuner/sweep_run.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

BucketRun::BucketRun(SweepRun& run, const BucketPlan& plan)
    : run(run), plan(plan), eval{&run.spec,        plan.problem,       run.request.threads,
                                 run.request.seed, run.options.timing, run.hw.cpu.isa} {}

Status BucketRun::Resume() {
  Result<std::vector<Measurement>> existing;
  {
    PhaseTimer t(run.bd.store_s);
    existing = run.sink.Existing(plan.bucket);
  }
  if (!existing) return std::unexpected(existing.error());
  results = std::move(*existing);
  for (size_t i = 0; i < results.size(); ++i) measured.emplace(results[i].config.ToString(), i);
  return {};
}

Status BucketRun::Record(Measurement& m) {
  ++run.done;
  PhaseTimer t(run.bd.store_s);
  if (auto s = run.sink.Record(m, run.done, run.total); !s) return s;
  measured.emplace(m.config.ToString(), results.size());
  results.push_back(m);
  run.report.MaybeFlush();
  return {};
}

Measurement BucketRun::Base(const Config& c) const {
  Measurement m;
  m.sweep_id = run.sweep_id;
  m.bucket = plan.bucket;
  m.problem = plan.problem;
  m.config = c;
  m.fingerprint = std::string(KernelFingerprint(run.spec.name()));
  return m;
}

Result<size_t> BucketRun::MeasureOnce(const Config& c) {
  if (auto it = measured.find(c.ToString()); it != measured.end()) return it->second;
  Measurement fresh = Base(c);
  // The bucket's best median so far (0: none yet): the line a far-behind config stops at, and
  // the one a noisy config must come near to get a second look.
  const Measurement* best = SelectWinner(results);
  const double best_ns = best != nullptr && best->median_ns > 0 ? best->median_ns : 0;
  EvalRequest request = eval;
  if (run.options.stop_behind > 0 && run.request.strategy != Strategy::kExhaustive && best_ns > 0) {
    request.timing.stop_above_ns = run.options.stop_behind * best_ns;
  }
  run.evaluator.Measure(request, c, fresh);
  ++run.bd.measured;
  if (fresh.outcome == Outcome::kOk && run.options.retime_cv > 0 &&
      timing::RobustCv(fresh.samples_ns) > run.options.retime_cv && CouldContend(fresh, best_ns)) {
    Retime(fresh);
  }
  spdlog::debug("measured kernel={} bucket={} config={} outcome={} median_ns={:.0f} cv={:.3f}", run.spec.name(),
                plan.bucket, c.ToString(), OutcomeName(fresh.outcome), fresh.median_ns, fresh.cv);
  if (auto s = Record(fresh); !s) return std::unexpected(s.error());
  return results.size() - 1;
}

bool BucketRun::CouldContend(const Measurement& m, double best_ns) {
  // Interference only adds time: a config whose fastest repetition is more than 5% slower than
  // the bucket's best median so far is no contender however its repetitions spread, and a second
  // look would not make it one. On the 2-core Zen 4 (2026-12-07) 123 of 857 search measurements of
  // an adapt run spread more than retime_cv, most of them configs far behind the best.
  if (!(best_ns > 0) || m.samples_ns.empty()) return true;
  return *std::min_element(m.samples_ns.begin(), m.samples_ns.end()) < 1.05 * best_ns;
}

void BucketRun::Retime(Measurement& m) {
  // Interleaved timing of the one config: it keeps the count it was just calibrated to and gets
  // one warm call, so the second look costs its repetitions and little else.
  const std::vector<Measurement> again = run.evaluator.MeasureInterleaved(eval, {m.config});
  if (again.size() == 1 && TakeForeignDevice(m, again[0])) return;  // refused with it, neither look stored
  if (again.size() != 1 || again[0].outcome != Outcome::kOk || again[0].samples_ns.empty()) return;
  const double first = timing::RobustCv(m.samples_ns);
  const double second = timing::RobustCv(again[0].samples_ns);
  const bool take = second < first;
  char buf[200];
  std::snprintf(
      buf, sizeof buf,
      "re-timed: cv %.3f (robust %.3f, median %.0f ns), then cv %.3f (robust %.3f, median %.0f ns); kept the %s", m.cv,
      first, m.median_ns, again[0].cv, second, again[0].median_ns, take ? "second" : "first");
  if (take) {
    m.samples_ns = again[0].samples_ns;
    m.median_ns = again[0].median_ns;
    m.cv = again[0].cv;
    if (again[0].iterations > 0) m.iterations = again[0].iterations;
  }
  m.detail = buf;
}

Status RecordInvalid(BucketRun& b) {
  const BucketPlan& plan = b.plan;
  for (size_t i = 0; i < plan.invalid.size(); ++i) {
    if (b.measured.count(plan.invalid[i].ToString())) {
      ++b.run.done;
      continue;
    }
    Measurement m = b.Base(plan.invalid[i]);
    m.outcome = Outcome::kInvalid;
    m.detail = plan.invalid_reasons[i];
    if (auto s = b.Record(m); !s) return s;
  }
  return {};
}

Result<Flow> MeasureShardItems(BucketRun& b) {
  // A shard of a static plan measures its slice in plan order and decides nothing: the
  // winner of a bucket is chosen from all shards once they are merged (store/results_table.h).
  for (const Config& c : b.plan.planned) {
    if (b.run.sink.Cancelled()) return Flow::kCancelled;
    if (b.measured.count(c.ToString())) {
      ++b.run.done;
      continue;
    }
    Measurement fresh = b.Base(c);
    b.run.evaluator.Measure(b.eval, c, fresh);
    ++b.run.bd.measured;
    if (auto s = b.Record(fresh); !s) return std::unexpected(s.error());
  }
  return Flow::kContinue;
}

Result<std::unique_ptr<search::SearchStrategy>> StartSearch(BucketRun& b, const search::SearchSpace& space) {
  SweepRun& run = b.run;
  const SweepRequest& request = run.request;
  const KernelSpec& spec = run.spec;
  const BucketPlan& plan = b.plan;
  const auto search_setup = Clock::now();
  search::SearchPrior prior;
  std::vector<search::ProfileSimilarity> similarity;
  if (UsesPrior(request.strategy)) {
    prior = run.prior.ForBucket(spec, plan, similarity);
    // Transfer's own rule for searching as surrogate: the prior ranks less than half the space.
    size_t covered = 0;
    if (!prior.empty()) {
      const search::PriorLayout layout = search::LayOutPrior(prior, space);
      for (size_t i = 0; i < space.size(); ++i) {
        for (const auto& relative : layout.relative) {
          if (std::isfinite(relative[i])) {
            ++covered;
            break;
          }
        }
      }
    }
    b.thin_prior = 2 * covered < space.size();
  }
  auto search = search::MakeSearch(request.strategy, space, space.Find(spec.DefaultConfig()),
                                   BucketSeed(request.seed, plan.bucket), plan.evaluations, prior);
  run.bd.search_s += SecondsSince(search_setup);
  if (UsesPrior(request.strategy)) {
    Result<std::vector<Config>> seeds;
    {
      PhaseTimer t(run.bd.store_s);
      seeds = run.sink.Seeds(plan.bucket, plan.problem);
    }
    if (!seeds) return std::unexpected(seeds.error());
    std::vector<size_t> at;
    for (const Config& c : *seeds) {
      if (auto i = space.Find(c)) at.push_back(*i);  // another profile's row may not fit here
    }
    if (!at.empty()) search = search::MakeSeededSearch(std::move(search), std::move(at));
  }
  if (!similarity.empty()) {
    PhaseTimer t(run.bd.store_s);
    if (auto s = run.sink.RecordPriorProfiles(similarity); !s) return std::unexpected(s.error());
  }
  return search;
}

SearchBudget BudgetOf(const SweepRequest& request, const BucketPlan& plan, bool thin_prior) {
  SearchBudget b;
  b.planned = b.floor = b.cap = plan.evaluations;
  if (request.strategy != Strategy::kTransfer || request.budget != 0 || plan.evaluations <= 0) return b;
  b.adaptive = true;
  // One and a half plans at most; three quarters of it (at least 8, the strategy's own minimum)
  // before a bucket that stopped improving may stop (with up to 8 seeds from other profiles'
  // rows first, half a plan of 18 would leave the model one evaluation), the whole plan first
  // where the prior is thin. Patience a third of a plan: with half a plan and a cap of two, adapt
  // measured 40% more configs than the fixed plan (509 against 365 on 31 buckets, 22% more wall
  // time); with these, 17-23% more (427-448), 18-20% more wall time, and 31 and 30 of the 31
  // buckets within 2% of the reference (docs/tuning.md, the Intel Xeon table).
  b.cap = std::min<int64_t>(static_cast<int64_t>(plan.valid.size()), plan.evaluations + plan.evaluations / 2);
  b.floor =
      thin_prior ? plan.evaluations : std::max(std::min<int64_t>(plan.evaluations, 8), (3 * plan.evaluations + 3) / 4);
  b.patience = std::max<int64_t>(4, (plan.evaluations + 2) / 3);
  return b;
}

Result<Flow> RunSearch(BucketRun& b, const search::SearchSpace& space, search::SearchStrategy& search) {
  SweepRun& run = b.run;
  const BucketPlan& plan = b.plan;
  const SearchBudget budget = BudgetOf(run.request, plan, b.thin_prior);
  const std::string default_key = run.spec.DefaultConfig().ToString();
  const double min_band = run.options.min_noise_band;
  const auto bucket_start = std::chrono::steady_clock::now();
  double best_ns = 0, default_ns = 0;
  int64_t last_gain = 0;               // evaluations done when the best last improved by over 1%
  int64_t counted = plan.evaluations;  // evaluations the progress total holds for this bucket
  int64_t evaluated = 0;
  for (; evaluated < budget.cap; ++evaluated) {
    if (budget.adaptive && evaluated >= budget.floor) {
      const double gain = default_ns > 0 && best_ns > 0 ? 1.0 - best_ns / default_ns : 0.0;
      const bool close = gain > 0.5 * min_band && gain < 3 * min_band;
      const int64_t patience = budget.patience * (b.thin_prior || close ? 2 : 1);
      if (evaluated - last_gain >= patience) break;
    }
    if (run.sink.Cancelled()) return Flow::kCancelled;
    std::optional<size_t> next;
    {
      PhaseTimer t(run.bd.search_s);
      next = search.Ask();
    }
    if (!next) break;
    const Config& c = space.config(*next);
    if (b.measured.count(c.ToString())) {
      ++run.done;  // replayed: counted as done when it was first measured, in an earlier run of this sweep
    } else {
      const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - bucket_start).count();
      if (run.request.budget_seconds > 0 && elapsed_s >= run.request.budget_seconds) break;
    }
    if (evaluated >= counted) {  // beyond the plan: the progress total grows with the search
      ++run.total;
      ++counted;
    }
    auto at = b.MeasureOnce(c);
    if (!at) return std::unexpected(at.error());
    const Measurement& m = b.results[*at];
    if (m.outcome == Outcome::kOk && m.median_ns > 0) {
      if (m.config.ToString() == default_key) default_ns = m.median_ns;
      if (best_ns == 0 || m.median_ns < 0.99 * best_ns) last_gain = evaluated + 1;
      if (best_ns == 0 || m.median_ns < best_ns) best_ns = m.median_ns;
    }
    PhaseTimer t(run.bd.search_s);
    search.Tell(*next, search::Observation{m.outcome == Outcome::kOk, m.median_ns});
  }
  run.total -= counted - evaluated;  // a search that stopped early shrinks the total
  return Flow::kContinue;
}

}  // namespace blocktune::tuner
