// Store: blocktune's SQLite database. Opening migrates an older schema forward, refuses a
// newer one, checks integrity, and never rewrites a file that is not ours. Every method is
// one transaction; the store serialises callers on one connection (the daemon has a single
// writer, the job runner, and lookups are served from an in-memory snapshot, not from here).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/result.h"
#include "schema/migrate.h"
#include "schema/sqlite.h"
#include "tuner/measurement.h"
#include "tuner/sweep.h"

namespace blocktune::store {

enum class SweepStatus { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view SweepStatusName(SweepStatus s);
std::optional<SweepStatus> ParseSweepStatus(std::string_view s);

// One bucket of a sweep: the unit the job runner leases (see migration 0006).
struct TaskPlan {
  std::string bucket;
  NamedInts shape;      // dims of the first requested shape in the bucket
  int64_t planned = 0;  // measurements the bucket will record
};

struct TaskRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int ordinal = 0;
  std::string bucket;
  NamedInts shape;
  int64_t planned = 0;
  SweepStatus status = SweepStatus::kQueued;
  int64_t attempts = 0;  // leases; a lease lost to a crash is not a failed config
  std::string error;
};

struct CreatedSweep {
  int64_t id = 0;
  bool created = false;  // false: an earlier request with the same idempotency key made it
};

struct SweepProgress {
  int64_t done = 0;   // measurements committed
  int64_t total = 0;  // measurements planned over all tasks
  std::vector<std::pair<std::string, int64_t>> by_outcome;  // ordered by outcome
  int64_t tasks_done = 0;
  int64_t tasks_total = 0;
  // Mean wall time between committed measurements that ran (outcome != invalid); 0 if < 2.
  double seconds_per_measurement = 0;
};

struct OverrideRecord {
  int64_t id = 0;
  std::string kernel;
  std::string hardware_key;  // a full key or a prefix of one ("x86_64.avx512")
  DType dtype = DType::kF32;
  std::string bucket;
  Config config;
  std::string reason;
  std::string expires_at;  // UTC "YYYY-MM-DDTHH:MM:SS.fffZ"; empty: never
  std::string created_at;
};

struct HardwareRecord {
  int64_t id = 0;
  std::string key;
  HardwareProfile profile;
  std::string first_seen_at;
};

struct StoreStats {
  std::vector<std::pair<std::string, int64_t>> sweeps_by_status;
  std::vector<std::pair<std::string, int64_t>> measurements_by_outcome;
  int64_t db_bytes = 0;
};

struct SweepRecord {
  int64_t id = 0;
  tuner::SweepRequest request;
  std::string hardware_key;
  SweepStatus status = SweepStatus::kQueued;
  int64_t progress_done = 0;
  int64_t progress_total = 0;
  std::string error;
  std::string created_at;
  std::string started_at;
  std::string finished_at;
  tuner::SweepEnvironment environment;  // empty strings until the sweep starts
};

class Store {
 public:
  // Creates the file if missing. Errors: data_loss (not a database, or corrupt),
  // failed_precondition (schema newer than this build), unavailable (locked).
  static Result<std::unique_ptr<Store>> Open(const std::string& path);

  int SchemaVersion();

  Result<int64_t> UpsertHardware(const HardwareProfile& hw);

  Result<int64_t> CreateSweep(const tuner::SweepRequest& request, int64_t hardware_id, int bucket_version,
                              const std::string& tool_version, int64_t progress_total);
  Result<SweepRecord> GetSweep(int64_t id);
  Result<std::vector<SweepRecord>> ListSweeps(std::optional<SweepStatus> status, int64_t limit);
  Status SetSweepStatus(int64_t id, SweepStatus status, const std::string& error = {});
  // Sweeps left running by a daemon that died go back to the queue.
  Status RequeueRunningSweeps();

  // Inserts the measurement and its samples and updates the sweep's progress, atomically.
  Status RecordMeasurement(tuner::Measurement& m, int64_t done, int64_t total);
  Result<std::vector<tuner::Measurement>> ListMeasurements(int64_t sweep_id, const std::string& bucket);
  // The transfer prior of a sweep's task: passing measurements (no samples) of earlier sweeps
  // with this sweep's kernel, dtype, hardware, threads and bucket version, and of this sweep's
  // tasks with an ordinal below `before_ordinal` (0: none of them).
  Result<std::vector<tuner::Measurement>> ListPriorMeasurements(int64_t sweep_id, int before_ordinal = 0);

  // --- Durable sweeps (migration 0006) ---------------------------------------------------------
  // Creates the sweep and its tasks in one transaction. With a non-empty idempotency key, a key
  // seen before returns that sweep (created = false) if `canonical_request` matches, and
  // already_exists if it does not. `admit`, if given, is asked (inside the transaction) only
  // when a new sweep would be created; its error is returned and nothing is stored.
  Result<CreatedSweep> CreateSweepWithTasks(const tuner::SweepRequest& request, int64_t hardware_id,
                                            int bucket_version, const std::string& tool_version,
                                            const std::vector<TaskPlan>& tasks, const std::string& idempotency_key,
                                            const std::string& canonical_request,
                                            const std::function<Status()>& admit = {});
  // Adds tasks to a sweep that has none (sweeps queued before migration 0006).
  Status AddTasks(int64_t sweep_id, const std::vector<TaskPlan>& tasks);
  Result<std::vector<TaskRecord>> ListTasks(int64_t sweep_id);
  // Takes the oldest queued task of a queued or running sweep: task and sweep become running,
  // the task's attempts go up by one. nullopt: nothing to do.
  Result<std::optional<TaskRecord>> LeaseNextTask();
  // Gives a leased task back to the queue (daemon stopping) without touching its measurements.
  Status ReleaseTask(int64_t task_id);
  // Marks a running task done or failed. Then, if the sweep has no queued or running task left,
  // finishes the sweep (failed if any task failed, else done) and returns true.
  Result<bool> FinishTask(int64_t task_id, SweepStatus status, const std::string& error);
  // On start: tasks and sweeps a dead daemon left running go back to the queue.
  Status RequeueInterrupted();
  // Queued or running sweep -> cancelled with its unfinished tasks. failed_precondition if the
  // sweep already finished.
  Result<SweepRecord> CancelSweep(int64_t id);
  // Inserts the measurement with its samples, bumps the sweep's progress and records the task's
  // planned count, in one transaction. The UNIQUE (sweep_id, bucket, config) constraint makes
  // a second insert of one config an error rather than a duplicate.
  Status RecordTaskMeasurement(tuner::Measurement& m, int64_t task_id, int64_t task_total);
  Result<SweepProgress> GetProgress(int64_t sweep_id);
  // Measurements with id > after_id, oldest first, at most `limit`, with their samples.
  Result<std::vector<tuner::Measurement>> ListMeasurementsPage(int64_t sweep_id, int64_t after_id, int64_t limit);
  // Sweeps with id > after_id (and the status, if given), oldest first.
  Result<std::vector<SweepRecord>> ListSweepsPage(std::optional<SweepStatus> status, int64_t after_id, int64_t limit);

  // --- Overrides ----------------------------------------------------------------------------------
  // Insert or replace the override for (kernel, hardware_key, dtype, bucket); returns the row.
  Result<OverrideRecord> UpsertOverride(const OverrideRecord& o);
  Status DeleteOverride(int64_t id);
  Result<std::vector<OverrideRecord>> ListOverrides();

  // --- Operations ---------------------------------------------------------------------------------
  Result<std::vector<HardwareRecord>> ListHardware();
  Result<StoreStats> Stats();
  // Consistent online copy (VACUUM INTO) while the daemon keeps writing; refuses an existing file.
  Status BackupTo(const std::string& path);
  // Full PRAGMA integrity_check: "ok" or SQLite's first complaints.
  Result<std::string> IntegrityCheck();
  // The environment a sweep runs in, captured when it starts (again on each resume).
  Status SetSweepEnvironment(int64_t id, const tuner::SweepEnvironment& env);
  // Replaces the decision round of (sweep, bucket).
  Status RecordFinalRound(const tuner::FinalRound& round);
  // not_found when the bucket has no round (yet).
  Result<tuner::FinalRound> GetFinalRound(int64_t sweep_id, const std::string& bucket);

  Status UpsertTunedEntry(const tuner::TunedEntry& e);
  Result<std::optional<tuner::TunedEntry>> GetTunedEntry(const std::string& kernel, const std::string& hardware_key,
                                                         DType dtype, const std::string& bucket);
  // Ordered by (kernel, hardware_key, dtype, bucket); empty kernel = all kernels.
  Result<std::vector<tuner::TunedEntry>> ListTunedEntries(const std::string& kernel = {});

 private:
  explicit Store(Connection conn) : conn_(std::move(conn)) {}
  Status InTransaction(const std::function<Status()>& body);
  Status InsertMeasurementRows(tuner::Measurement& m);

  std::mutex mu_;
  Connection conn_;
};

// Adapts the store to the tuner's sink interface for one sweep.
class StoreSink : public tuner::SweepSink {
 public:
  StoreSink(Store& store, int64_t sweep_id, std::function<bool()> cancelled = {})
      : store_(store), sweep_id_(sweep_id), cancelled_(std::move(cancelled)) {}
  Result<std::vector<tuner::Measurement>> Existing(const std::string& bucket) override {
    return store_.ListMeasurements(sweep_id_, bucket);
  }
  Status Record(tuner::Measurement& m, int64_t done, int64_t total) override {
    return store_.RecordMeasurement(m, done, total);
  }
  bool Cancelled() override { return cancelled_ && cancelled_(); }
  Result<std::optional<tuner::TunedEntry>> Incumbent(const std::string& kernel, const std::string& hardware_key,
                                                     DType dtype, const std::string& bucket) override {
    return store_.GetTunedEntry(kernel, hardware_key, dtype, bucket);
  }
  Status RecordEnvironment(const tuner::SweepEnvironment& env) override {
    return store_.SetSweepEnvironment(sweep_id_, env);
  }
  Status RecordFinalRound(const tuner::FinalRound& round) override { return store_.RecordFinalRound(round); }
  Result<std::vector<tuner::Measurement>> PriorMeasurements() override {
    return store_.ListPriorMeasurements(sweep_id_);
  }

 private:
  Store& store_;
  int64_t sweep_id_;
  std::function<bool()> cancelled_;
};

}  // namespace blocktune::store
