// Measuring one bucket of a sweep: what the sweep stored before a restart (replayed, never
// measured again), the invalid configs with their reasons, a shard's slice of a static plan, and
// the search (ask, measure, tell) within the evaluation and time budget; see sweep_run.h.
#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

#include "kernels/core/fingerprint.h"
#include "tuner/search/seeded.h"
#include "tuner/sweep_run.h"

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
  run.evaluator.Measure(eval, c, fresh);
  ++run.bd.measured;
  spdlog::debug("measured kernel={} bucket={} config={} outcome={} median_ns={:.0f} cv={:.3f}", run.spec.name(),
                plan.bucket, c.ToString(), OutcomeName(fresh.outcome), fresh.median_ns, fresh.cv);
  if (auto s = Record(fresh); !s) return std::unexpected(s.error());
  return results.size() - 1;
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
  if (UsesPrior(request.strategy)) prior = run.prior.ForBucket(spec, plan, similarity);
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

Result<Flow> RunSearch(BucketRun& b, const search::SearchSpace& space, search::SearchStrategy& search) {
  SweepRun& run = b.run;
  const BucketPlan& plan = b.plan;
  const auto bucket_start = std::chrono::steady_clock::now();
  int64_t evaluated = 0;
  for (; evaluated < plan.evaluations; ++evaluated) {
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
    auto at = b.MeasureOnce(c);
    if (!at) return std::unexpected(at.error());
    const Measurement& m = b.results[*at];
    PhaseTimer t(run.bd.search_s);
    search.Tell(*next, search::Observation{m.outcome == Outcome::kOk, m.median_ns});
  }
  run.total -= plan.evaluations - evaluated;  // a search that stopped early shrinks the total
  return Flow::kContinue;
}

}  // namespace blocktune::tuner
