// Results from other machines (issue 14: many machines, one database). A ResultsBatch is one
// sweep's identity and provenance (uid, host, hardware profile, tool version, request) with a
// bounded slice of its measurements and every sample: what `blocktune push` sends to POST
// /v1/results and what `blocktune db merge` reads out of another database. This file says what a
// batch holds and what it must satisfy (CheckBatch); results_reader.h cuts another database into
// batches without writing to it, results_table.h adds one to this database (ResultsTable::Apply,
// which both of those write through), batch_digest.h names a batch's contents and pool_winner.h
// chooses a bucket's winner from every sweep's measurements after a batch is added.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/result.h"
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

// Everything Apply checks before it writes (identities, limits, hardware, and every measurement
// against its kernel's spec, tuner::CheckMeasurement), without a database: `db merge` runs it
// over every batch of every input first, so a bad input leaves OUT untouched. Errors:
// invalid_argument with the path "measurements[i].<field>".
Status CheckBatch(const ResultsBatch& batch);

}  // namespace blocktune::store
