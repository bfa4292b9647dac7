// The transfer prior of a sweep: the landscapes of buckets measured before (stored, and this
// run's as each finishes) and, weighted by measured likeness, other hardware profiles'; see
// sweep_run.h.
#include <spdlog/spdlog.h>

#include <iterator>

#include "tuner/sweep_run.h"

namespace blocktune::tuner {

bool UsesPrior(Strategy s) { return s == Strategy::kTransfer || s == Strategy::kAuto; }

void TransferPrior::Add(const Measurement& m) {
  auto& [problem, landscape] = medians[m.bucket];
  problem = m.problem;
  landscape.emplace_back(m.config, m.median_ns);
}

void TransferPrior::Rebuild(const KernelSpec& spec, const std::string& bucket) {
  const auto& [problem, landscape] = medians.at(bucket);
  search::PriorBucket pb = search::MakePriorBucket(search::PriorFeatures(spec, problem), landscape);
  pb.name = bucket;
  buckets.insert_or_assign(bucket, std::move(pb));
}

Status LoadTransferPrior(SweepRun& run) {
  SweepSink& sink = run.sink;
  SweepBreakdown& bd = run.bd;
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
  run.prior.other_profiles = std::move(*profiles);
  PhaseTimer t(bd.search_s);
  for (const Measurement& m : *prior) run.prior.Add(m);
  for (const auto& [bucket, _] : run.prior.medians) run.prior.Rebuild(run.spec, bucket);
  spdlog::info("transfer prior kernel={} sweep={} buckets={} measurements={}{}", run.spec.name(), run.sweep_id,
               run.prior.buckets.size(), prior->size(),
               run.prior.buckets.empty() ? " (none stored yet: the first bucket searches like surrogate)" : "");
  return {};
}

search::SearchPrior TransferPrior::ForBucket(const KernelSpec& spec, const BucketPlan& plan,
                                             std::vector<search::ProfileSimilarity>& similarity) const {
  // A bucket's own earlier landscape is left out, as in simulate: the prior says what this
  // bucket should look like from its neighbours, not what an older kernel measured here.
  search::SearchPrior prior;
  prior.features = search::PriorFeatures(spec, plan.problem);
  for (const auto& [bucket, pb] : buckets) {
    if (bucket != plan.bucket && !pb.relative_cost.empty()) prior.buckets.push_back(pb);
  }
  // Other hardware profiles' landscapes, each weighted by how alike this profile's it was
  // measured to be on the buckets both swept (this bucket's own earlier landscape included).
  if (!other_profiles.empty()) {
    std::vector<Measurement> own;
    for (const auto& [bucket, pm] : medians) {
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
  return prior;
}

void TransferPrior::AddBucket(const KernelSpec& spec, const std::string& bucket,
                              const std::vector<Measurement>& results) {
  bool any = false;
  for (const Measurement& m : results) {
    if (m.outcome != Outcome::kOk || !(m.median_ns > 0)) continue;
    Add(m);
    any = true;
  }
  if (any) Rebuild(spec, bucket);
}

}  // namespace blocktune::tuner
