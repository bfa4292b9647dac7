// RunSweep: the sweep's phases in order, for every bucket of the plan; the phases themselves are
// in sweep_plan.cc, sweep_prior.cc, sweep_search.cc and sweep_decision.cc (sweep_run.h).
#include "tuner/sweep.h"

#include <memory>

#include "tuner/sweep_run.h"

namespace blocktune::tuner {

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

  SweepRun run{request, sweep_id, spec, hw, sink, options, evaluator, report, bd};
  run.total = PlannedTotal(*plans);

  const timing::SweepEnvironment environment = timing::CaptureEnvironment(options.tool_version);
  {
    PhaseTimer t(bd.store_s);
    if (auto s = sink.RecordEnvironment(environment); !s) return std::unexpected(s.error());
  }

  if (UsesPrior(request.strategy)) {
    if (auto s = LoadTransferPrior(run); !s) return std::unexpected(s.error());
  }

  for (const BucketPlan& plan : *plans) {
    BucketRun bucket(run, plan);
    if (auto s = bucket.Resume(); !s) return std::unexpected(s.error());
    if (auto s = RecordInvalid(bucket); !s) return std::unexpected(s.error());

    if (ShardsItems(request)) {
      auto flow = MeasureShardItems(bucket);
      if (!flow) return std::unexpected(flow.error());
      if (*flow == Flow::kCancelled) return run.winners;
      continue;
    }

    const search::SearchSpace space(spec.params(), plan.valid);
    auto search = StartSearch(bucket, space);
    if (!search) return std::unexpected(search.error());
    auto flow = RunSearch(bucket, space, **search);
    if (!flow) return std::unexpected(flow.error());
    if (*flow == Flow::kCancelled) return run.winners;
    if (UsesPrior(request.strategy)) run.prior.AddBucket(spec, plan.bucket, bucket.results);

    flow = DecideBucket(bucket, space, **search);
    if (!flow) return std::unexpected(flow.error());
    if (*flow == Flow::kCancelled) return run.winners;
  }
  return run.winners;
}

}  // namespace blocktune::tuner
