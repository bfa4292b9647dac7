// Planning `blocktune adapt`; see adapt.h.
#include "tuner/adapt.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "kernels/core/kernel_spec.h"

namespace blocktune::tuner {
namespace {

// FNV-1a, for a short stable digest of the bucket list inside the idempotency key: a changed
// checked-in table is a new plan, not a resume of the old one.
uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace

Result<AdaptPlan> PlanAdapt(const std::vector<TunedEntry>& checked_in, const AdaptOptions& options) {
  if (!(options.budget_minutes > 0)) return InvalidArgument("the budget must be > 0 minutes", "budget_minutes");
  if (options.threads.empty()) return InvalidArgument("at least one thread count is required", "threads");
  for (int t : options.threads) {
    if (t < 1 || t > 1024) return InvalidArgument("threads must be in [1, 1024]", "threads");
  }
  for (const std::string& k : options.kernels) {
    if (FindKernel(k) == nullptr) return InvalidArgument("unknown kernel '" + k + "'", "kernels");
  }
  // (kernel, dtype) -> canonical bucket ids of the kernel's current bucket version.
  std::map<std::pair<std::string, DType>, std::set<std::string>> buckets;
  for (const TunedEntry& e : checked_in) {
    const KernelSpec* spec = FindKernel(e.kernel);
    if (spec == nullptr || e.bucket_version != spec->bucket_version()) continue;  // nothing a lookup serves
    if (!options.kernels.empty() &&
        std::find(options.kernels.begin(), options.kernels.end(), e.kernel) == options.kernels.end()) {
      continue;
    }
    if (!options.dtypes.empty() &&
        std::find(options.dtypes.begin(), options.dtypes.end(), e.dtype) == options.dtypes.end()) {
      continue;
    }
    buckets[{e.kernel, e.dtype}].insert(e.bucket);
  }
  AdaptPlan plan;
  for (const auto& [key, ids] : buckets)
    plan.buckets += static_cast<int64_t>(ids.size()) * static_cast<int64_t>(options.threads.size());
  if (plan.buckets == 0)
    return InvalidArgument("no checked-in bucket matches the kernels and dtypes asked for", "kernels");
  plan.seconds_per_bucket = options.budget_minutes * 60.0 * options.search_share / static_cast<double>(plan.buckets);

  // Thread counts outermost: every kernel's one-thread landscapes are measured before any
  // two-thread bucket, so the second thread count's transfer prior can draw on the first's.
  for (int threads : options.threads) {
    for (const auto& [key, ids] : buckets) {
      const KernelSpec* spec = FindKernel(key.first);
      AdaptUnit unit;
      unit.request.kernel = key.first;
      unit.request.dtype = key.second;
      unit.request.threads = threads;
      unit.request.strategy = options.strategy;
      unit.request.budget = options.budget;
      unit.request.budget_seconds = plan.seconds_per_bucket;
      unit.request.seed = options.seed;
      unit.request.isa = options.isa;
      std::string joined;
      for (const std::string& id : ids) {
        auto problem = spec->ProblemFromBucket(key.second, id);
        if (!problem)
          return InvalidArgument("bucket '" + id + "' of " + key.first + ": " + problem.error().message, "buckets");
        unit.request.shapes.push_back(problem->dims);
        unit.buckets.push_back(id);
        joined += id + ";";
      }
      char digest[17];
      std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(Fnv1a(joined)));
      char budget[32];
      std::snprintf(budget, sizeof budget, "%.3f", plan.seconds_per_bucket);
      unit.idempotency_key = "adapt/" + (options.isa.empty() ? std::string("native") : options.isa) + "/" + key.first +
                             "/" + std::string(DTypeName(key.second)) + "/t" + std::to_string(threads) + "/" +
                             std::string(StrategyName(options.strategy)) + "/b" + std::to_string(options.budget) +
                             "/s" + budget + "/seed" + std::to_string(options.seed) + "/" + digest;
      plan.units.push_back(std::move(unit));
    }
  }
  return plan;
}

}  // namespace blocktune::tuner
