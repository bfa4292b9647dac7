// Sweep engine implementation; see sweep.h.
#include "tuner/sweep.h"

#include <map>
#include <memory>
#include <set>
#include <spdlog/spdlog.h>

#include "tuner/search/search.h"

namespace blocktune::tuner {
namespace {

// Reference outputs for verification problems, reused across configs that share a problem
// (many configs differ only in a block size the verification shape does not depend on).
class ReferenceCache {
 public:
  KernelInstance* Get(const KernelSpec& spec, const Problem& p) {
    const std::string key = p.ToString();
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    if (cache_.size() >= 16) cache_.clear();  // verification problems are small; 16 bounds memory
    auto inst = spec.MakeInstance(p, /*seed=*/0x5eed);
    inst->RunReference();
    return (cache_[key] = std::move(inst)).get();
  }

 private:
  std::map<std::string, std::unique_ptr<KernelInstance>> cache_;
};

thread_local ReferenceCache* tl_reference_cache = nullptr;

std::string Describe(const VerifyReport& r) {
  return "elements=" + std::to_string(r.elements) + " mismatches=" + std::to_string(r.mismatches) +
         " non_finite=" + std::to_string(r.non_finite) + " max_abs_err=" + std::to_string(r.max_abs_err) +
         " max_err_over_tolerance=" + std::to_string(r.max_rel_err);
}

}  // namespace

Result<std::vector<BucketPlan>> PlanSweep(const SweepRequest& request, const KernelSpec& spec,
                                          const HardwareProfile& hw) {
  if (request.threads < 1 || request.threads > 1024) {
    return InvalidArgument("threads must be in [1, 1024]", "threads");
  }
  if (request.budget < 0) return InvalidArgument("budget must be >= 0", "budget");
  if (request.shapes.empty()) return InvalidArgument("at least one shape is required", "shapes");
  bool dtype_ok = false;
  for (DType d : spec.dtypes()) dtype_ok |= d == request.dtype;
  if (!dtype_ok) {
    return InvalidArgument("kernel " + std::string(spec.name()) + " does not support dtype " +
                               std::string(DTypeName(request.dtype)),
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
    BucketPlan plan{bucket, rep, {}, {}, {}};
    std::vector<Config> valid;
    for (const Config& c : space) {
      if (auto s = spec.ValidateConfig(c, rep, hw); s) {
        valid.push_back(c);
      } else {
        plan.invalid.push_back(c);
        plan.invalid_reasons.push_back(s.error().message);
      }
    }
    plan.planned = PlanConfigs(valid, default_config, request.strategy, request.budget,
                               request.seed ^ std::hash<std::string>{}(bucket));
    plans.push_back(std::move(plan));
  }
  return plans;
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

bool VerifyConfig(const KernelSpec& spec, const Config& config, const Problem& bucket_problem, int threads,
                  Measurement& m) {
  ReferenceCache local;
  ReferenceCache* cache = tl_reference_cache != nullptr ? tl_reference_cache : &local;
  KernelInstance* inst = cache->Get(spec, spec.VerificationProblem(config, bucket_problem));
  inst->PoisonOutputs();
  if (auto s = inst->Run(config, threads); !s) {
    m.outcome = Outcome::kInvalid;
    m.detail = s.error().message;
    return false;
  }
  const VerifyReport r = inst->Verify();
  m.max_abs_err = r.max_abs_err;
  m.max_rel_err = r.max_rel_err;
  if (r.ok) return true;
  m.outcome = r.non_finite > 0 ? Outcome::kNan : Outcome::kWrongResult;
  m.detail = "verification failed: " + Describe(r);
  return false;
}

Result<std::vector<TunedEntry>> RunSweep(const SweepRequest& request, int64_t sweep_id, const KernelSpec& spec,
                                         const HardwareProfile& hw, SweepSink& sink, const SweepOptions& options) {
  auto plans = PlanSweep(request, spec, hw);
  if (!plans) return std::unexpected(plans.error());

  int64_t total = 0;
  for (const auto& p : *plans) total += static_cast<int64_t>(p.invalid.size() + p.planned.size());
  int64_t done = 0;

  ReferenceCache references;
  tl_reference_cache = &references;
  struct Reset {
    ~Reset() { tl_reference_cache = nullptr; }
  } reset;

  std::vector<TunedEntry> winners;
  for (const BucketPlan& plan : *plans) {
    auto existing = sink.Existing(plan.bucket);
    if (!existing) return std::unexpected(existing.error());
    std::vector<Measurement> results = std::move(*existing);
    std::set<std::string> measured;
    for (const auto& m : results) measured.insert(m.config.ToString());

    auto record = [&](Measurement& m) -> Status {
      ++done;
      if (auto s = sink.Record(m, done, total); !s) return s;
      results.push_back(m);
      return {};
    };
    auto base = [&](const Config& c) {
      Measurement m;
      m.sweep_id = sweep_id;
      m.bucket = plan.bucket;
      m.problem = plan.problem;
      m.config = c;
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

    std::unique_ptr<KernelInstance> timed;  // allocated on first use: resumed buckets may need none
    for (const Config& c : plan.planned) {
      if (sink.Cancelled()) return winners;
      if (measured.count(c.ToString())) {
        ++done;
        continue;
      }
      Measurement m = base(c);
      if (VerifyConfig(spec, c, plan.problem, request.threads, m)) {
        if (!timed) timed = spec.MakeInstance(plan.problem, request.seed);
        auto t = TimeRepeated([&] { return timed->Run(c, request.threads); }, options.timing);
        if (!t) {
          m.outcome = Outcome::kInvalid;
          m.detail = t.error().message;
        } else {
          m.outcome = Outcome::kOk;
          m.samples_ns = std::move(t->samples_ns);
          m.iterations = t->iterations;
          m.median_ns = t->median_ns;
          m.cv = t->cv;
        }
      }
      spdlog::debug("measured kernel={} bucket={} config={} outcome={} median_ns={:.0f} cv={:.3f}", spec.name(),
                    plan.bucket, c.ToString(), OutcomeName(m.outcome), m.median_ns, m.cv);
      if (auto s = record(m); !s) return std::unexpected(s.error());
    }

    if (const Measurement* w = SelectWinner(results)) {
      TunedEntry e;
      e.kernel = std::string(spec.name());
      e.hardware_key = hw.Key();
      e.dtype = request.dtype;
      e.bucket = plan.bucket;
      e.bucket_version = spec.bucket_version();
      e.config = w->config;
      e.median_ns = w->median_ns;
      e.samples = static_cast<int64_t>(w->samples_ns.size());
      e.sweep_id = sweep_id;
      e.measurement_id = w->id;
      e.measured_at = w->created_at;
      winners.push_back(std::move(e));
    }
  }
  return winners;
}

}  // namespace blocktune::tuner
