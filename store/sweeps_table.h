// The sweeps table (with the idempotency keys that create sweeps): a sweep's request, status,
// environment and progress. Creating a sweep also creates its tasks (tasks_table.h), and
// cancelling one cancels them, each in the same transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"
#include "store/executors_table.h"
#include "tuner/sweep.h"

namespace blocktune::store {

enum class SweepStatus { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view SweepStatusName(SweepStatus s);
std::optional<SweepStatus> ParseSweepStatus(std::string_view s);
// This machine's host name (gethostname), recorded with every sweep it creates.
std::string HostName();

// One bucket of a sweep: the unit the job runner leases (see migration 0006).
struct TaskPlan {
  std::string bucket;
  NamedInts shape;      // dims of the first requested shape in the bucket
  int64_t planned = 0;  // measurements the bucket will record
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
  tuner::timing::SweepEnvironment environment;  // empty strings until the sweep starts
  // Provenance (migration 0011): the sweep's identity in every database it is merged into, the
  // host it ran on, its kernel's bucket version, and whether it came from another database
  // (blocktune db merge, POST /v1/results; never run here).
  std::string uid;
  std::string host;
  int bucket_version = 0;
  bool imported = false;
  // Where its wall time went (migration 0014), summed over its tasks and runs; none until a
  // task of it has run here (and never for an imported sweep).
  std::optional<tuner::SweepBreakdown> breakdown;
  // Other hardware profiles its transfer searches drew on (migration 0014); filled by Get only.
  std::vector<tuner::search::ProfileSimilarity> prior_profiles;
  // The executor that runs it (migration 0015, executors_table.h): its id ('' : none) and its
  // row while it has one.
  std::string owner;
  std::optional<ExecutorRecord> executor;
  // The device its runner announced, as external::DeviceIdentityJson wrote it (migration 0016):
  // provenance of a sweep filed under a device key; '' if none was announced.
  std::string device;
};

struct CreatedSweep {
  int64_t id = 0;
  bool created = false;  // false: an earlier request with the same idempotency key made it
};

struct SweepProgress {
  int64_t done = 0;                                         // measurements committed
  int64_t total = 0;                                        // measurements planned over all tasks
  std::vector<std::pair<std::string, int64_t>> by_outcome;  // ordered by outcome
  int64_t tasks_done = 0;
  int64_t tasks_total = 0;
  // Mean wall time between committed measurements that ran (outcome != invalid); 0 if < 2.
  double seconds_per_measurement = 0;
};

class SweepsTable {
 public:
  explicit SweepsTable(Database& db) : db_(db) {}

  // Creates the sweep and its tasks in one transaction. With a non-empty idempotency key, a key
  // seen before returns that sweep (created = false) if `canonical_request` matches, and
  // already_exists if it does not. `admit`, if given, is asked (inside the transaction) only
  // when a new sweep would be created; its error is returned and nothing is stored. The
  // strategy must be one of tuner::kStrategyNames (invalid_argument otherwise). With an `owner`,
  // a new sweep is that executor's from the start (its row registered with expiry now +
  // lease_ms), so no other process claims it before its runner does; without one, any daemon may.
  Result<CreatedSweep> Create(const tuner::SweepRequest& request, int64_t hardware_id, int bucket_version,
                              const std::string& tool_version, const std::vector<TaskPlan>& tasks,
                              const std::string& idempotency_key = {}, const std::string& canonical_request = {},
                              const std::function<Status()>& admit = {}, const ExecutorRecord* owner = nullptr,
                              int64_t lease_ms = 0);
  // not_found for an unknown id; data_loss for a row this build cannot read.
  Result<SweepRecord> Get(int64_t id);
  // Oldest first, at most `limit`, with the status if given.
  Result<std::vector<SweepRecord>> List(std::optional<SweepStatus> status, int64_t limit);
  // Sweeps with id > after_id (and the status, if given), oldest first.
  Result<std::vector<SweepRecord>> ListPage(std::optional<SweepStatus> status, int64_t after_id, int64_t limit);
  // Running stamps started_at once; done, failed and cancelled stamp finished_at.
  Status SetStatus(int64_t id, SweepStatus status, const std::string& error = {});
  // The environment a sweep runs in, captured when it starts (again on each resume).
  Status SetEnvironment(int64_t id, const tuner::timing::SweepEnvironment& env);
  // Queued or running sweep -> cancelled with its unfinished tasks. failed_precondition if the
  // sweep already finished, not_found if there is none.
  Result<SweepRecord> Cancel(int64_t id);
  // Adds one RunSweep call's breakdown to the sweep's (creating it on the first).
  Status AddBreakdown(int64_t id, const tuner::SweepBreakdown& b);
  // Records (replacing per key) the other profiles a bucket's search drew on.
  Status SetPriorProfiles(int64_t id, const std::vector<tuner::search::ProfileSimilarity>& profiles);
  // Committed and planned measurements, per outcome, tasks done, and the pace.
  Result<SweepProgress> Progress(int64_t id);

 private:
  Database& db_;
};

}  // namespace blocktune::store
