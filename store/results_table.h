// ResultsTable: adds a results batch (store/results.h) to this database, which is how `blocktune
// db merge` and POST /v1/results (`blocktune push`) both write.
//
// Apply is idempotent twice over: a batch id seen before with the same contents (its digest,
// batch_digest.h) is answered from ingest_batches without touching anything (other contents:
// already_exists), and each measurement is keyed by (sweep uid, bucket, config) so a batch cut
// differently (a sweep that grew since the last push) adds only what is new. Winners are never
// copied: after adding a batch, Apply recomputes the tuned entry of every (kernel, dtype,
// hardware key, bucket) the batch touched from all measurements stored for it, from every sweep
// and every host with that hardware key (PoolWinner, pool_winner.h). Hardware keys never mix:
// a profile is one hardware_profiles row, shared by every host that reports that key.
#pragma once

#include <cstdint>

#include "kernels/core/result.h"
#include "store/database.h"
#include "store/results.h"

namespace blocktune::store {

struct ApplyResult {
  int64_t measurements = 0;  // in the batch
  int64_t inserted = 0;      // new here (when it was first applied, for a replay)
  bool replayed = false;     // the batch id was applied before; nothing was written
  int64_t winners = 0;       // tuned entries recomputed
  int64_t sweep_id = 0;      // the sweep's id in this database
};

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

}  // namespace blocktune::store
