// The measurements and samples tables: every config a sweep tried, with its outcome and every
// timed repetition. UNIQUE (sweep_id, bucket, config) makes a second insert of one config an
// error rather than a duplicate, which is what makes a resumed sweep exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"
#include "tuner/measurement.h"
#include "tuner/search/profile_prior.h"

namespace blocktune::store {

class MeasurementsTable {
 public:
  explicit MeasurementsTable(Database& db) : db_(db) {}
  // Inserts the measurement with its samples (setting m.id and m.created_at), bumps the
  // sweep's progress and records the task's planned count (the engine's own total, which may
  // be below the estimate made at submission), in one transaction. With an `owner`, only while
  // that executor owns the sweep and it is unfinished (LostClaim otherwise, nothing written).
  Status Record(tuner::Measurement& m, int64_t task_id, int64_t task_total, const std::string& owner = {});
  // One bucket of a sweep, oldest first, with samples unless `with_samples` is false (the
  // dashboard's aggregates, server/dashboard.h, read 20,000-measurement buckets without them).
  Result<std::vector<tuner::Measurement>> ListBucket(int64_t sweep_id, const std::string& bucket,
                                                     bool with_samples = true);
  // Measurements with id > after_id, oldest first, at most `limit`, with their samples.
  Result<std::vector<tuner::Measurement>> ListPage(int64_t sweep_id, int64_t after_id, int64_t limit);
  // The transfer prior of a sweep's task: passing measurements (no samples) of earlier sweeps
  // with this sweep's kernel, dtype, hardware, threads and bucket version, and of this sweep's
  // tasks with an ordinal below `before_ordinal` (0: none of them).
  Result<std::vector<tuner::Measurement>> ListPrior(int64_t sweep_id, int before_ordinal = 0);
  // The cross-profile prior of a sweep: passing measurements (no samples) of earlier sweeps
  // with this sweep's kernel, dtype and bucket version under any other hardware key, with
  // that key. Earlier sweeps only, so it does not change while this one runs or resumes.
  Result<std::vector<tuner::search::ProfileMeasurement>> ListOtherProfiles(int64_t sweep_id);

 private:
  Database& db_;
};

}  // namespace blocktune::store
