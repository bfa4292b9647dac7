// Sweep engine implementation; see sweep.h.
#include "tuner/sweep.h"

#include <set>
#include <spdlog/spdlog.h>

#include "tuner/search/search.h"

namespace blocktune::tuner {

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

Result<std::vector<TunedEntry>> RunSweep(const SweepRequest& request, int64_t sweep_id, const KernelSpec& spec,
                                         const HardwareProfile& hw, SweepSink& sink, const SweepOptions& options) {
  auto plans = PlanSweep(request, spec, hw);
  if (!plans) return std::unexpected(plans.error());

  int64_t total = 0;
  for (const auto& p : *plans) total += static_cast<int64_t>(p.invalid.size() + p.planned.size());
  int64_t done = 0;

  InProcessEvaluator in_process;
  Evaluator& evaluator = options.evaluator != nullptr ? *options.evaluator : in_process;

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

    const EvalRequest eval{&spec, plan.problem, request.threads, request.seed, options.timing};
    for (const Config& c : plan.planned) {
      if (sink.Cancelled()) return winners;
      if (measured.count(c.ToString())) {
        ++done;
        continue;
      }
      Measurement m = base(c);
      evaluator.Measure(eval, c, m);
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
