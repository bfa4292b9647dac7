// Service's job runner: the thread that claims tasks and runs them (RunTask).
#include "server/service.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <unistd.h>
#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <map>

#include "codegen/codegen.h"
#include "external/spec.h"
#include "store/task_sink.h"
#include "tuner/regret.h"

namespace blocktune::server {

void Service::RunnerLoop() {
  // The runner yields the CPU to HTTP threads (nice +10 for this thread only, Linux): lookups
  // must hold their latency while a sweep writes. A measurement disturbed by load shows it in
  // its CV and is judged by the engine's noise checks like any other.
  const id_t tid = static_cast<id_t>(gettid());
  errno = 0;
  const int nice_now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)setpriority(PRIO_PROCESS, tid, std::min(19, nice_now + 10));
  while (true) {
    {
      std::unique_lock lock(runner_mu_);
      if (stopping_) break;
    }
    auto task = store_->tasks().LeaseNext();
    if (!task) {
      spdlog::error("leasing a task failed error=\"{}\"", task.error().ToString());
    } else if (*task) {
      RunTask(**task);
      continue;
    }
    std::unique_lock lock(runner_mu_);
    // Woken by SubmitSweep; the timeout also picks up sweeps queued by another process.
    runner_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stopping_ || wake_; });
    wake_ = false;
  }
  runner_alive_ = false;
}

void Service::RunTask(const store::TaskRecord& task) {
  auto sweep = store_->sweeps().Get(task.sweep_id);
  if (!sweep) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, sweep.error().ToString());
    return;
  }
  const KernelSpec* spec = FindKernel(sweep->request.kernel);
  if (spec == nullptr) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, "unknown kernel " + sweep->request.kernel);
    return;
  }
  HardwareProfile hw = host_;
  hw.threads = sweep->request.threads;
  // The level the sweep was filed under (its key's second component: x86_64.avx2.amd...): a
  // sweep created with an explicit isa resumes at that level after a restart.
  if (const std::string level(tables::KeyIsa(sweep->hardware_key));
      tables::IsaRank(level) >= 0 && tables::IsaRank(level) <= tables::IsaRank(NativeIsa())) {
    hw.cpu.isa = level;
  }
  // One bucket per task: the engine sees a request with just this bucket's shape, so its
  // planning (and a random strategy's per-bucket seed) is the same as for the whole sweep.
  tuner::SweepRequest request = sweep->request;
  request.shapes = {task.shape};
  // A model-guided shard owns whole buckets, chosen when the sweep was planned: the task's
  // bucket is one of them (a static plan's shard is cut per item, which the engine redoes).
  if (!tuner::ShardsItems(request)) {
    request.shard_index = 0;
    request.shard_count = 1;
  }
  spdlog::info("task started sweep={} task={} bucket={} attempt={}", task.sweep_id, task.id, task.bucket,
               task.attempts);
  current_sweep_ = task.sweep_id;
  cancel_current_ = false;
  // The decision round also faces what a lookup serves this host now (the checked-in table
  // under the database's rows, any fallback level, an override): a new row must beat it.
  const std::string hw_key = hw.Key();
  auto served = [this, spec, hw_key](const std::string&, const Problem& problem) -> Result<std::optional<Config>> {
    const auto index = Index();
    tuner::LookupQuery q;
    q.dtype = problem.dtype;
    q.dims = problem.dims;
    q.hardware_key = hw_key;
    auto answer = tuner::Lookup(*spec, *index, q, tuner::UtcNow());
    if (!answer) return std::unexpected(answer.error());
    if (answer->source == tables::Source::kDefault) return std::optional<Config>();
    return std::optional<Config>(answer->config);
  };
  // The configs other profiles' rows chose for the bucket (the same index), most alike key first by
  // the levels `blocktune regret` measures (tuner::RegretLevelOf: the same CPU at another thread
  // count, another model of the vendor and ISA level, another vendor, another ISA level; another
  // architecture last). At most 8: the table has a handful of profiles, and seeds come out of the
  // search's budget.
  auto seeds = [this, spec, hw_key](const std::string& bucket, const Problem& problem) -> Result<std::vector<Config>> {
    const auto index = Index();
    const tuner::LookupIndex::KernelRows* rows = index->RowsOf(spec->name(), spec->bucket_version());
    if (rows == nullptr) return std::vector<Config>();
    std::vector<std::pair<int, const tuner::LookupIndex::RowView*>> alike;
    for (const auto& row : rows->rows) {
      if (row.bucket != bucket || row.dtype != DTypeName(problem.dtype) || row.hardware == hw_key) continue;
      const auto level = tuner::RegretLevelOf(hw_key, row.hardware);
      alike.emplace_back(level ? static_cast<int>(*level) : tuner::kRegretLevels, &row);
    }
    std::sort(alike.begin(), alike.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->hardware < b.second->hardware;
    });
    std::vector<Config> out;
    for (const auto& [level, row] : alike) {
      if (out.size() == 8) break;
      if (std::find(out.begin(), out.end(), row->entry->config) == out.end()) out.push_back(row->entry->config);
    }
    return out;
  };
  store::TaskSink sink(
      *store_, task, [this] { return cancel_current_.load() || stop_now_.load(); }, served, seeds);
  auto winners = tuner::RunSweep(request, task.sweep_id, *spec, hw, sink, options_.sweep);
  current_sweep_ = 0;
  if (stop_now_) {
    // Draining: the task goes back to the queue; the next start resumes it.
    (void)store_->tasks().Release(task.id);
    spdlog::info("task released for the next start sweep={} task={}", task.sweep_id, task.id);
    return;
  }
  if (cancel_current_) return;  // CancelSweep already marked the sweep and its tasks
  if (!winners) {
    spdlog::error("task failed sweep={} task={} error=\"{}\"", task.sweep_id, task.id, winners.error().ToString());
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, winners.error().ToString());
    return;
  }
  // Winners first: a crash between here and FinishTask re-runs the task, which finds every
  // measurement stored and selects the same winner again.
  for (const auto& w : *winners) {
    if (auto s = store_->tuned().Upsert(w); !s) {
      spdlog::error("storing tuned entry failed sweep={} bucket={} error=\"{}\"", task.sweep_id, w.bucket,
                    s.error().ToString());
    }
  }
  if (auto s = ReloadIndex(); !s) spdlog::error("reloading tuned entries failed error=\"{}\"", s.error().ToString());
  auto finished = store_->tasks().Finish(task.id, store::SweepStatus::kDone, "");
  if (!finished) {
    spdlog::error("finishing task failed task={} error=\"{}\"", task.id, finished.error().ToString());
  } else if (*finished) {
    spdlog::info("sweep done id={}", task.sweep_id);
  }
}

}  // namespace blocktune::server
