// Service's sweeps: planning, submission (rate limit, idempotency), status and measurements.
#include "server/service.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <unistd.h>
#include <cerrno>

#include <filesystem>
#include <map>

#include "codegen/codegen.h"
#include "external/spec.h"
#include "store/task_sink.h"

namespace blocktune::server {

Result<std::vector<store::TaskPlan>> Service::Plan(const KernelSpec& spec, const tuner::SweepRequest& request,
                                                   const HardwareProfile& hw) const {
  auto plans = tuner::PlanSweep(request, spec, hw);
  if (!plans) return std::unexpected(plans.error());
  std::map<std::string, NamedInts> first_shape;
  for (const auto& s : request.shapes) first_shape.emplace(spec.Bucket(Problem{request.dtype, s}).first, s);
  std::vector<store::TaskPlan> tasks;
  int64_t total = 0;
  for (const auto& p : *plans) {
    const int64_t n = static_cast<int64_t>(p.invalid.size()) + p.evaluations;  // tuner::PlannedTotal per bucket
    total += n;
    tasks.push_back({p.bucket, first_shape[p.bucket], n});
  }
  if (total > options_.max_sweep_measurements) {
    return InvalidArgument("sweep plans " + std::to_string(total) + " measurements; the limit is " +
                               std::to_string(options_.max_sweep_measurements) +
                               " (use strategy random with a budget, or fewer shapes)",
                           "shapes");
  }
  return tasks;
}

Status Service::BackfillTasks() {
  // Sweeps queued before migration 0006 have no tasks; plan them now so they run.
  for (auto status : {store::SweepStatus::kQueued, store::SweepStatus::kRunning}) {
    auto sweeps = store_->sweeps().List(status, 1 << 20);
    if (!sweeps) return std::unexpected(sweeps.error());
    for (const auto& s : *sweeps) {
      if (s.imported) continue;  // another machine's sweep, merged in: never run here
      auto tasks = store_->tasks().List(s.id);
      if (!tasks) return std::unexpected(tasks.error());
      if (!tasks->empty()) continue;
      HardwareProfile hw = host_;
      hw.threads = s.request.threads;
      const KernelSpec* spec = FindKernel(s.request.kernel);
      auto plan = spec != nullptr ? Plan(*spec, s.request, hw)
                                  : Result<std::vector<store::TaskPlan>>(
                                        InvalidArgument("unknown kernel '" + s.request.kernel + "'", "kernel"));
      if (!plan) {
        (void)store_->sweeps().SetStatus(s.id, store::SweepStatus::kFailed, plan.error().ToString());
        continue;
      }
      if (auto r = store_->tasks().Add(s.id, *plan); !r) return r;
    }
  }
  return {};
}

bool Service::TakeSweepToken() {
  std::lock_guard lock(rate_mu_);
  const auto now = std::chrono::steady_clock::now();
  const double minutes = std::chrono::duration<double>(now - rate_at_).count() / 60.0;
  rate_at_ = now;
  rate_tokens_ = std::min(options_.sweep_burst, rate_tokens_ + minutes * options_.sweeps_per_minute);
  if (rate_tokens_ < 1) return false;
  rate_tokens_ -= 1;
  return true;
}

Result<store::CreatedSweep> Service::SubmitSweep(const KernelSpec& spec, const tuner::SweepRequest& request,
                                                 const std::string& idempotency_key,
                                                 const std::string& canonical_request) {
  HardwareProfile hw = host_;
  hw.threads = request.threads;
  if (!request.isa.empty()) {
    // Any level the CPU runs, also above the daemon's own --isa: the workers are started with
    // BLOCKTUNE_ISA set to it (tuner/isolation/worker_process.cc).
    if (tables::IsaRank(request.isa) > tables::IsaRank(NativeIsa())) {
      return InvalidArgument("isa " + request.isa + " cannot run on this CPU (it runs " + NativeIsa() + ")", "isa");
    }
    hw.cpu.isa = request.isa;
  }
  auto tasks = Plan(spec, request, hw);
  if (!tasks) return std::unexpected(tasks.error());
  auto hw_id = store_->hardware().Upsert(hw);
  if (!hw_id) return std::unexpected(hw_id.error());
  // The rate limit applies only when a sweep is about to be created: a replayed
  // Idempotency-Key returns the first sweep without a token, so a client retrying after a lost
  // reply is never throttled by its own retries.
  const auto admit = [this]() -> Status {
    if (TakeSweepToken()) return {};
    return MakeError(ErrorCode::kResourceExhausted,
                     "too many sweeps created; at most " +
                         std::to_string(static_cast<int>(options_.sweeps_per_minute)) + " per minute",
                     "");
  };
  // The sweep is this process's from the start: no other daemon or --local process on the file
  // claims it while this one lives (a replayed key returns the sweep as it is, whoever runs it).
  auto created =
      store_->sweeps().Create(request, *hw_id, spec.bucket_version(), options_.tool_version, *tasks, idempotency_key,
                              canonical_request, admit, &self_, static_cast<int64_t>(options_.lease_seconds * 1000));
  if (!created) return std::unexpected(created.error());
  if (options_.own_sweeps_only) {
    std::lock_guard lock(mine_mu_);
    mine_.insert(created->id);  // a replay too: this process finishes it if its owner is gone
  }
  if (created->created && tasks->empty()) {
    // Only a shard can plan nothing (--shard I/N with more shards than this plan has items):
    // done at once, with nothing to run.
    if (auto s = store_->sweeps().SetStatus(created->id, store::SweepStatus::kDone); !s)
      return std::unexpected(s.error());
    spdlog::info("sweep id={} has nothing in shard {}/{}: done", created->id, request.shard_index, request.shard_count);
    return created;
  }
  if (created->created) {
    spdlog::info("sweep queued id={} kernel={} buckets={} threads={} strategy={}", created->id, request.kernel,
                 tasks->size(), request.threads, tuner::StrategyName(request.strategy));
  }
  // A replay wakes the runner too: the sweep may be an orphan this process can finish.
  {
    std::lock_guard lock(runner_mu_);
    wake_ = true;
  }
  runner_cv_.notify_all();
  return created;
}

Result<SweepView> Service::GetSweep(int64_t id) {
  SweepView v;
  auto sweep = store_->sweeps().Get(id);
  if (!sweep) return std::unexpected(sweep.error());
  v.sweep = std::move(*sweep);
  auto progress = store_->sweeps().Progress(id);
  if (!progress) return std::unexpected(progress.error());
  v.progress = std::move(*progress);
  // This process cannot write the file: no unfinished sweep on it advances (whoever runs it,
  // it is the same file), and the pace says nothing about when it will.
  if (v.sweep.status == store::SweepStatus::kRunning || v.sweep.status == store::SweepStatus::kQueued) {
    v.stalled = storage_.Current();
  }
  if (v.stalled) {
    v.eta_seconds = -1;
  } else if (v.sweep.status == store::SweepStatus::kRunning && v.progress.seconds_per_measurement > 0) {
    v.eta_seconds = v.progress.seconds_per_measurement *
                    static_cast<double>(std::max<int64_t>(0, v.progress.total - v.progress.done));
  } else if (v.sweep.status == store::SweepStatus::kDone) {
    v.eta_seconds = 0;
  }
  return v;
}

Result<std::vector<store::SweepRecord>> Service::ListSweeps(std::optional<store::SweepStatus> status, int64_t after_id,
                                                            int64_t limit) {
  return store_->sweeps().ListPage(status, after_id, limit);
}

Result<store::SweepRecord> Service::CancelSweep(int64_t id) {
  auto r = store_->sweeps().Cancel(id);
  if (r && current_sweep_.load() == id) cancel_current_ = true;
  if (r) spdlog::info("sweep cancelled id={}", id);
  return r;
}

Result<std::vector<tuner::Measurement>> Service::ListMeasurements(int64_t sweep_id, int64_t after_id, int64_t limit) {
  if (auto s = store_->sweeps().Get(sweep_id); !s) return std::unexpected(s.error());
  return store_->measurements().ListPage(sweep_id, after_id, limit);
}

}  // namespace blocktune::server
