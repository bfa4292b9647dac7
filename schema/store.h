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
#include "schema/sqlite.h"
#include "tuner/measurement.h"
#include "tuner/sweep.h"

namespace blocktune::store {

// The schema version this build writes: the number of migration files.
int LatestSchemaVersion();

enum class SweepStatus { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view SweepStatusName(SweepStatus s);
std::optional<SweepStatus> ParseSweepStatus(std::string_view s);

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
  Status Migrate();
  Status InTransaction(const std::function<Status()>& body);

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

 private:
  Store& store_;
  int64_t sweep_id_;
  std::function<bool()> cancelled_;
};

}  // namespace blocktune::store
