// Service: the daemon's state behind the HTTP routes. It owns the store, an in-memory lookup
// index (the checked-in table overlaid with this database's tuned rows, plus the overrides), so
// a lookup never waits on SQLite or on a sweep's write transaction, and the job runner: one
// background thread that leases the tasks (one per bucket) of the sweeps this process owns or
// takes over (store/tasks_table.h: one executor per sweep, so several daemons and --local
// processes share one database file) and runs each through tuner::RunSweep. Every measurement
// is committed with its progress in one transaction that checks the sweep is still this
// process's; a task interrupted by a crash is taken over (or requeued on the next start) and
// resumes from the measurements already committed. A write the storage refuses (disk full)
// stalls the sweep, visibly, until a write succeeds again (server/storage_health.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "blocktune/version.h"
#include "server/misses.h"
#include "server/storage_health.h"
#include "store/store.h"
#include "tuner/lookup.h"
#include "tuner/sweep.h"

namespace blocktune::server {

struct ServiceOptions {
  tuner::SweepOptions sweep;
  std::string tool_version = kToolVersion;
  std::string backup_dir;  // where POST /v1/backup writes; empty: "backups" beside the database
  // A sweep may plan at most this many measurements (configs x buckets): 100,000 configs at
  // ~20 ms each is already over half an hour of machine time.
  int64_t max_sweep_measurements = 100000;
  // Sweep creation is rate limited by a token bucket: `sweep_burst` at once, refilled at
  // `sweeps_per_minute`. Sweeps are long; a client creating more than one a second is broken.
  double sweeps_per_minute = 30;
  double sweep_burst = 10;
  // Lookup misses (server/misses.h) are added to the store this often, and at Stop().
  double miss_flush_seconds = 5;
  size_t max_pending_misses = 10000;  // distinct buckets counted between two flushes
  // The --kernel-dir folders, read again by ReloadKernels; and what to do when they changed
  // (the daemon restarts its worker, which loaded the specs at its start).
  std::vector<std::string> kernel_dirs;
  std::function<void()> on_kernels_changed;
  // The checked-in rows under the database's (tuned_entries.jsonl text); empty: the table built
  // into this binary. `blocktune adapt --local --tables DIR` passes DIR's, so the table that
  // names its buckets is also the one that serves the decision round and seeds the searches.
  std::string checked_in_jsonl;
  // This process as an executor of sweeps (store/executors_table.h): "daemon" runs its own
  // sweeps and any it may take over; "local" (`sweep --local`, `adapt --local`) only the sweeps
  // it submitted, and exits when they finish.
  std::string executor_kind = "daemon";
  bool own_sweeps_only = false;
  // How long a claim on a sweep lasts unless renewed (renewed every sixth of it while held).
  // Another machine's executor takes a sweep over only after this; one of this machine takes
  // it over as soon as the owner's process is gone.
  double lease_seconds = 30;
  // The runner's wait between two polls for work (a sweep submitted here wakes it at once).
  double poll_seconds = 2;
  // Lookups of a device key may be answered by another model's row of the same architecture
  // (tuner::LookupQuery::device_same_arch; --device-fallback same-arch). Off until `blocktune
  // regret` has measured what it costs (docs/accelerators.md#fallback).
  bool device_same_arch = false;
};

struct KernelReload {
  std::vector<std::string> added;
  std::vector<std::string> replaced;
  int64_t unchanged = 0;
  int64_t tuned_rows = 0;  // rows lookups serve after the reload
};

struct SweepView {
  store::SweepRecord sweep;
  store::SweepProgress progress;
  double eta_seconds = -1;  // -1: unknown (not running, stalled, or fewer than two timed measurements)
  // Set while the sweep is unfinished and this process cannot write its database: what stops it.
  std::optional<StorageFault> stalled;
};

class Service {
 public:
  Service(std::unique_ptr<store::Store> store, std::string db_path, ServiceOptions options);
  ~Service();  // stops the runner after the config it is measuring

  // Requeues work a previous process left running and starts the runner thread.
  Status Start();
  // Drains: the config being measured finishes and is committed, its task goes back to the
  // queue, the runner exits.
  void Stop();
  bool Ready() const { return runner_alive_.load(); }
  // What this process's last writes found (a current fault: the database cannot be written).
  const StorageHealth& storage() const { return storage_; }
  // This process as an executor (its id owns the sweeps it runs).
  const store::ExecutorRecord& executor() const { return self_; }

  // Validates the request fully (dims, threads, space size) before anything is stored. `spec` is
  // the request's kernel, as the codec found it (wire::DecodeSweepSubmission).
  Result<store::CreatedSweep> SubmitSweep(const KernelSpec& spec, const tuner::SweepRequest& request,
                                          const std::string& idempotency_key, const std::string& canonical_request);
  Result<SweepView> GetSweep(int64_t id);
  // Blocks until the runner finishes a task (a sweep's bucket, or its last) or `seconds` pass:
  // `sweep --local` waits on this between progress lines instead of sleeping, so its command
  // ends when the sweep does, not up to a poll interval (0.5 s) later.
  void WaitForTask(double seconds);
  Result<std::vector<store::SweepRecord>> ListSweeps(std::optional<store::SweepStatus> status, int64_t after_id,
                                                     int64_t limit);
  Result<store::SweepRecord> CancelSweep(int64_t id);
  Result<std::vector<tuner::Measurement>> ListMeasurements(int64_t sweep_id, int64_t after_id, int64_t limit);

  // Resolves against the index. An empty hardware key means this host at `threads`.
  Result<tuner::LookupAnswer> Lookup(const KernelSpec& spec, tuner::LookupQuery query, int threads) const;
  // The same with the hardware key filled in (HostKey(threads) for this host).
  Result<tuner::LookupAnswer> Lookup(const KernelSpec& spec, const tuner::LookupQuery& query) const;
  // Counts the answer to `query` (whose hardware key is filled in) as a miss if its source is
  // tuned_fallback, nearest or default; in memory only, see server/misses.h.
  void CountLookup(const KernelSpec& spec, const tuner::LookupQuery& query, const tuner::LookupAnswer& answer) {
    misses_.Count(spec.name(), query.dtype, query.hardware_key, answer.bucket, answer.source, query.dims);
  }
  // Adds the counted misses to the store (one transaction). The flusher thread calls it.
  Status FlushMisses();
  // Stored misses, most counted first, after flushing what is pending, each with the source its
  // bucket gets now.
  Result<std::vector<MissView>> ListMisses(const store::MissFilter& filter);
  int64_t MissesDropped() const { return misses_.dropped(); }
  // Tuned rows the lookups serve, filtered (empty filter: all).
  std::vector<tuner::TunedEntry> Tuned(const std::string& kernel, const std::string& hardware_prefix,
                                       const std::string& dtype) const;

  Result<store::OverrideRecord> PutOverride(const store::OverrideRecord& o);
  Status DeleteOverride(int64_t id);
  Result<std::vector<store::OverrideRecord>> ListOverrides() { return store_->overrides().List(); }

  Result<std::vector<store::HardwareRecord>> ListHardware() { return store_->hardware().List(); }
  const HardwareProfile& host() const { return host_; }
  std::string HostKey(int threads) const;

  // The generated C++ header for a kernel over the rows lookups serve.
  Result<std::string> TableHeader(const KernelSpec& spec) const;

  // Adds a batch of another database's results (POST /v1/results) and, if it changed any
  // tuned entry, reloads the lookup index.
  Result<store::ApplyResult> IngestResults(const store::ResultsBatch& batch);

  // POST /v1/kernels/reload and SIGHUP: the kernel folders (external::ReloadKernelDirs, all or
  // nothing) and then the tuned rows from the database. Serialized: one reload at a time.
  Result<KernelReload> ReloadKernels();

  // Online backup into the backup directory; returns the file written.
  Result<std::string> Backup();
  Result<store::StoreStats> Stats() { return store_->maintenance().Stats(); }
  store::Store& store() { return *store_; }

 private:
  Status ReloadIndex();
  Status BackfillTasks();
  Result<std::vector<store::TaskPlan>> Plan(const KernelSpec& spec, const tuner::SweepRequest& request,
                                            const HardwareProfile& hw) const;
  bool TakeSweepToken();
  void RunnerLoop();
  void FlusherLoop();
  void LeaseLoop();
  // Runs a leased task; false if it stopped on a storage fault (the task stays this process's
  // and is leased again once a write succeeds).
  bool RunTask(const store::TaskRecord& task);
  store::Claimant Claimant();
  // Why this process no longer runs the sweep ("" if it still does): taken over, or finished.
  std::string ClaimLost(int64_t sweep_id);
  void StorageFailed(const std::string& source, const Error& e, int64_t sweep_id = 0);
  void StorageOk(const std::string& source);
  // The key an external kernel's sweep is filed under: the device its runner announces, asked
  // once per task before anything is measured (service_device.cc); sets hw.device_key for an
  // accelerator. Errors (path "device"): an invalid identity, a device other than the one the
  // sweep is filed under.
  Result<std::string> SettleDevice(const store::SweepRecord& sweep, const KernelSpec& spec,
                                   const tuner::SweepRequest& request, HardwareProfile& hw);
  std::shared_ptr<const tuner::LookupIndex> Index() const;

  std::unique_ptr<store::Store> store_;
  std::string db_path_;
  ServiceOptions options_;
  store::ExecutorRecord self_;
  StorageHealth storage_;
  std::mutex mine_mu_;
  std::set<int64_t> mine_;              // the sweeps a "local" executor submitted (own_sweeps_only)
  HardwareProfile host_;                // detected once at start; threads set per sweep
  std::vector<std::string> host_keys_;  // HostKey(t) for t in [0, 256], built once

  std::vector<tuner::TunedEntry> checked_in_;  // tables/tuned_entries.jsonl as built in
  mutable std::shared_mutex index_mu_;
  std::shared_ptr<const tuner::LookupIndex> index_;

  std::mutex skipped_mu_;
  std::set<std::string> skipped_rows_;  // tuned rows ReloadIndex refused to serve, logged once each

  std::mutex reload_mu_;
  std::mutex rate_mu_;
  double rate_tokens_ = 0;
  std::chrono::steady_clock::time_point rate_at_;

  std::mutex runner_mu_;
  std::condition_variable runner_cv_;
  bool stopping_ = false;
  bool wake_ = false;  // set by SubmitSweep so a notification between polls is not lost
  std::atomic<bool> stop_now_{false};
  std::atomic<int64_t> current_sweep_{0};
  std::atomic<bool> cancel_current_{false};
  std::atomic<bool> runner_alive_{false};
  std::thread runner_;
  std::condition_variable task_cv_;  // notified (under runner_mu_) after each task the runner ran
  int64_t tasks_run_ = 0;
  std::thread leaser_;  // LeaseLoop: renews the claims, notices a sweep taken over or cancelled elsewhere

  MissCounter misses_;
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  bool flush_stopping_ = false;
  std::thread flusher_;
};

}  // namespace blocktune::server
