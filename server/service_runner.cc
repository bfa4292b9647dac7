// Service's job runner: the thread that claims tasks and runs them (RunTask), and the thread that
// renews this process's claims (LeaseLoop).
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

store::Claimant Service::Claimant() {
  store::Claimant who;
  who.self = self_;
  who.lease_ms = static_cast<int64_t>(options_.lease_seconds * 1000);
  if (options_.own_sweeps_only) {
    std::lock_guard lock(mine_mu_);
    who.only = mine_;
  }
  // A sweep of a kernel this process did not load (another daemon's --kernel-dir) is left to
  // the processes that have it.
  who.can_run = [](const std::string& kernel) { return FindKernel(kernel) != nullptr; };
  return who;
}

void Service::StorageFailed(const std::string& source, const Error& e, int64_t sweep_id) {
  if (storage_.Fail(source, e, sweep_id)) {
    spdlog::error(
        "storage fault: {} cannot write the database (work waits and resumes once it can) sweep={} "
        "error=\"{}\"",
        source, sweep_id, e.ToString());
  }
}

void Service::StorageOk(const std::string& source) {
  if (storage_.Ok(source)) spdlog::info("storage writable again: {} resumes", source);
}

std::string Service::ClaimLost(int64_t sweep_id) {
  auto sweep = store_->sweeps().Get(sweep_id);
  if (!sweep) return "";  // cannot tell: keep going, the next commit checks again
  if (sweep->status != store::SweepStatus::kRunning && sweep->status != store::SweepStatus::kQueued) {
    return "the sweep is " + std::string(store::SweepStatusName(sweep->status));
  }
  if (sweep->owner != self_.id) {
    return "taken over by " + (sweep->executor        ? store::Describe(*sweep->executor)
                               : sweep->owner.empty() ? std::string("no one yet")
                                                      : "executor " + sweep->owner.substr(0, 8));
  }
  return "";
}

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
    auto task = store_->tasks().LeaseNext(Claimant());
    if (!task) {
      if (IsStorageFault(task.error())) {
        StorageFailed("runner", task.error());
      } else {
        spdlog::error("leasing a task failed error=\"{}\"", task.error().ToString());
      }
    } else {
      StorageOk("runner");
      if (*task) {
        if (!(*task)->taken_from.empty()) {
          spdlog::warn("sweep taken over sweep={} from=\"{}\" (its committed measurements are kept)", (*task)->sweep_id,
                       (*task)->taken_from);
        }
        const bool ran = RunTask(**task);
        {
          std::lock_guard lock(runner_mu_);
          ++tasks_run_;
        }
        task_cv_.notify_all();
        if (ran) continue;
      }
    }
    std::unique_lock lock(runner_mu_);
    // Woken by SubmitSweep; the timeout also picks up sweeps queued by another process, and
    // retries after a storage fault.
    runner_cv_.wait_for(lock, std::chrono::duration<double>(options_.poll_seconds), [&] { return stopping_ || wake_; });
    wake_ = false;
  }
  runner_alive_ = false;
}

void Service::WaitForTask(double seconds) {
  std::unique_lock lock(runner_mu_);
  const int64_t seen = tasks_run_;
  task_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return tasks_run_ != seen || stopping_; });
}

void Service::LeaseLoop() {
  const auto period = std::chrono::duration<double>(std::max(0.05, options_.lease_seconds / 6));
  const int64_t lease_ms = static_cast<int64_t>(options_.lease_seconds * 1000);
  while (true) {
    {
      std::unique_lock lock(runner_mu_);
      if (runner_cv_.wait_for(lock, period, [&] { return stopping_; })) break;
    }
    if (auto held = store_->executors().Renew(self_, lease_ms); !held) {
      if (IsStorageFault(held.error())) StorageFailed("lease", held.error());
    } else {
      StorageOk("lease");
    }
    // Another process cancelled the sweep, or took it over (this one stalled past its lease):
    // stop between configs; the commit would refuse the next one anyway.
    const int64_t current = current_sweep_.load();
    if (current != 0 && !cancel_current_.load()) {
      if (const std::string why = ClaimLost(current); !why.empty()) {
        spdlog::warn("stopping sweep={}: {}", current, why);
        cancel_current_ = true;
      }
    }
  }
}

bool Service::RunTask(const store::TaskRecord& task) {
  auto sweep = store_->sweeps().Get(task.sweep_id);
  if (!sweep) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, sweep.error().ToString(), self_.id);
    return true;
  }
  const KernelSpec* spec = FindKernel(sweep->request.kernel);
  if (spec == nullptr) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, "unknown kernel " + sweep->request.kernel,
                                 self_.id);
    return true;
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
  // An external kernel's runner names the device it measures on: the sweep is filed under that
  // device's key, and fails (with its unfinished tasks) if the device changes.
  const auto fail_sweep = [&](const Error& e) {
    current_sweep_ = 0;
    spdlog::error("sweep failed on its device sweep={} task={} error=\"{}\"", task.sweep_id, task.id, e.message);
    (void)store_->devices().Fail(task.sweep_id, e.ToString());
    return true;
  };
  if (auto device = SettleDevice(*sweep, *spec, request, hw); !device) {
    if (device.error().path == "device") return fail_sweep(device.error());
    current_sweep_ = 0;
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, device.error().ToString(), self_.id);
    return true;
  }
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
  sink.set_owner(self_.id);
  sink.ExpectDevice(hw.Key());
  auto winners = tuner::RunSweep(request, task.sweep_id, *spec, hw, sink, options_.sweep);
  current_sweep_ = 0;
  if (stop_now_) {
    // Draining: the task goes back to the queue; the next start resumes it.
    (void)store_->tasks().Release(task.id);
    spdlog::info("task released for the next start sweep={} task={}", task.sweep_id, task.id);
    return true;
  }
  // Cancelled here (CancelSweep already marked the sweep and its tasks), or elsewhere, or taken
  // over by another executor: the task is not this process's to finish.
  if (const std::string why = (cancel_current_ || !winners) ? ClaimLost(task.sweep_id) : ""; !why.empty()) {
    spdlog::info("task given up sweep={} task={}: {}", task.sweep_id, task.id, why);
    return true;
  }
  if (cancel_current_) return true;
  // A write the storage refused (disk full): the task stays this process's, nothing committed is
  // lost, and the runner leases it again (resuming after the last commit) once writes succeed.
  const auto stall = [&](const Error& e) {
    StorageFailed("runner", e, task.sweep_id);
    return false;
  };
  if (!winners && winners.error().path == "device") return fail_sweep(winners.error());
  if (!winners) {
    if (sink.store_error() && IsStorageFault(*sink.store_error())) return stall(*sink.store_error());
    spdlog::error("task failed sweep={} task={} error=\"{}\"", task.sweep_id, task.id, winners.error().ToString());
    if (auto f = store_->tasks().Finish(task.id, store::SweepStatus::kFailed, winners.error().ToString(), self_.id);
        !f && IsStorageFault(f.error())) {
      return stall(f.error());
    }
    return true;
  }
  // Winners first: a crash between here and FinishTask re-runs the task, which finds every
  // measurement stored and selects the same winner again.
  for (const auto& w : *winners) {
    if (auto s = store_->tuned().Upsert(w); !s) {
      if (IsStorageFault(s.error())) return stall(s.error());
      spdlog::error("storing tuned entry failed sweep={} bucket={} error=\"{}\"", task.sweep_id, w.bucket,
                    s.error().ToString());
    }
  }
  if (auto s = ReloadIndex(); !s) spdlog::error("reloading tuned entries failed error=\"{}\"", s.error().ToString());
  auto finished = store_->tasks().Finish(task.id, store::SweepStatus::kDone, "", self_.id);
  if (!finished) {
    if (IsStorageFault(finished.error())) return stall(finished.error());
    spdlog::error("finishing task failed task={} error=\"{}\"", task.id, finished.error().ToString());
  } else if (*finished) {
    spdlog::info("sweep done id={}", task.sweep_id);
  }
  return true;
}

}  // namespace blocktune::server
