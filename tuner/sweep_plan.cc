// Planning a sweep: the request checked against the kernel, each bucket's configs split into
// valid and invalid, the static strategies' plans drawn, and a shard's slice cut; see sweep.h.
#include "tuner/sweep.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/check.h"
#include "tuner/search/search.h"
#include "tuner/sweep_run.h"

namespace blocktune::tuner {

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

uint64_t BucketSeed(uint64_t seed, const std::string& bucket) { return seed ^ Fnv1a(bucket); }

bool PlansStatically(Strategy s) { return s == Strategy::kExhaustive || s == Strategy::kRandom; }

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

}  // namespace blocktune::tuner
