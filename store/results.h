// Results from other machines (issue 14: many machines, one database). A ResultsBatch is one
// sweep's identity and provenance (uid, host, hardware profile, tool version, request) with a
// bounded slice of its measurements and every sample; ResultsReader cuts another database into
// such batches without writing to it, and ResultsTable::Apply adds one to this database, which is
// how `blocktune db merge` and POST /v1/results (`blocktune push`) both write.
//
// Apply is idempotent twice over: a batch id seen before with the same contents (its digest) is
// answered from ingest_batches without touching anything (other contents: already_exists), and each measurement is
// keyed by (sweep uid, bucket, config) so a batch cut differently (a sweep that grew since the last push) adds only
// what is new. Winners are never copied: after adding a batch, Apply recomputes the tuned entry of every (kernel,
// dtype, hardware key, bucket) the batch touched from all measurements stored for it, from
// every sweep and every host with that hardware key (PoolWinner). Hardware keys never mix:
// a profile is one hardware_profiles row, shared by every host that reports that key.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/result.h"
#include "store/database.h"
#include "store/sweeps_table.h"
#include "tuner/measurement.h"

namespace blocktune::store {

struct ResultsBatch {
  // Chosen by the sender; the same id again is a replay. ResultsReader uses
  // "<sweep uid>:<first source measurement id>-<last>" ("<uid>:empty" for a sweep without any).
  std::string batch_id;
  // id, progress_done and imported are ignored; uid (32 hex digits) is required.
  SweepRecord sweep;
  HardwareProfile hardware;                      // its Key() must equal sweep.hardware_key
  std::vector<tuner::Measurement> measurements;  // with samples; id and sweep_id ignored
};

// Limits a batch must respect (the HTTP route's too).
inline constexpr size_t kMaxBatchMeasurements = 1000;  // JSON arrays are capped at 1024 items
inline constexpr size_t kMaxSamplesPerMeasurement = 1000;

struct ApplyResult {
  int64_t measurements = 0;  // in the batch
  int64_t inserted = 0;      // new here (when it was first applied, for a replay)
  bool replayed = false;     // the batch id was applied before; nothing was written
  int64_t winners = 0;       // tuned entries recomputed
  int64_t sweep_id = 0;      // the sweep's id in this database
};

// The winner of a pool: every measurement of one (kernel, dtype, hardware key, bucket) from
// every sweep. A config is out if any of its measurements failed verification or did not run
// (crashed, nan, wrong_result, invalid, out_of_memory, worker_lost, compile_failed,
// runtime_failed); the others with at least
// one ok measurement compete on the median of all their ok samples pooled (hosts with one
// hardware key are one machine type). Lowest median wins, ties by config string. The entry's
// measurement is the chosen config's ok measurement with the lowest median.
std::optional<tuner::TunedEntry> PoolWinner(const std::vector<tuner::Measurement>& pool);

// Everything Apply checks before it writes (identities, limits, hardware, and every measurement
// against its kernel's spec, tuner::CheckMeasurement), without a database: `db merge` runs it
// over every batch of every input first, so a bad input leaves OUT untouched. Errors:
// invalid_argument with the path "measurements[i].<field>".
Status CheckBatch(const ResultsBatch& batch);

class ResultsTable {
 public:
  explicit ResultsTable(Database& db) : db_(db) {}
  // Adds the batch in one transaction (see above). Errors: invalid_argument naming the field for
  // a malformed batch (CheckBatch; nothing written), already_exists for a batch id applied
  // before with other contents (nothing written), or the store's.
  Result<ApplyResult> Apply(const ResultsBatch& batch);

 private:
  Database& db_;
};

// Another blocktune database, opened read-only (its bytes are never changed). One at this
// build's schema version is read in place; an older one is copied (VACUUM INTO a temporary
// file) and the copy migrated; a newer one is refused (failed_precondition), as is a file that
// is not a blocktune database (data_loss).
class ResultsReader {
 public:
  static Result<std::unique_ptr<ResultsReader>> Open(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  // Every sweep in id order, each as batches of at most `batch_size` measurements in id order
  // (a sweep without measurements as one empty batch). Stops at the first error of `emit`.
  Status ForEachBatch(int64_t batch_size, const std::function<Status(const ResultsBatch&)>& emit);
  // Measurements and sweeps in the file.
  Result<std::pair<int64_t, int64_t>> Counts();
  int schema_version() const { return version_; }

 private:
  ResultsReader() = default;
  Connection conn_;
  std::string temp_path_;  // the migrated copy of an older file, removed on destruction
  int version_ = 0;
};

}  // namespace blocktune::store
