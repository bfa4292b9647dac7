// The digest of a results batch (SHA-256 over its contents): what ingest_batches records for a
// batch id, so that ResultsTable::Apply can tell a replay (the same id with the same contents:
// answered without writing) from an id reused for other data (refused, already_exists).
#pragma once

#include <string>

#include "store/results.h"

namespace blocktune::store {

// What a batch id names: the sweep's identity, the hardware key and every measurement with its
// samples, each field length-prefixed and doubles in hex (%a: exact), so two batches with one
// digest carry the same data. The sweep's status, progress and times are left out: a sweep
// pushed while it ran and again when it finished sends its first batches unchanged. 64
// lowercase hex digits.
std::string BatchDigest(const ResultsBatch& b);

}  // namespace blocktune::store
