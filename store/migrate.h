// Brings a database's schema up to this build's. The schema version is the number in the name
// of the last migration file applied (PRAGMA user_version); PRAGMA application_id marks the
// file as blocktune's. Databases written by builds up to 9620d5f, which recorded a migration's
// position in the sorted file list instead (0001-0003 and 0005-0007 existed, so 0007 applied
// read as 6), are carried over to the file numbers once, the first time this build opens them.
#pragma once

#include <cstdint>

#include "kernels/core/result.h"
#include "store/sqlite.h"

namespace blocktune::store {

// SQLite's header field for "which application's file is this": 'b' 'l' 'k' 't'.
inline constexpr int32_t kApplicationId = 0x626c6b74;

// The schema version this build writes: the number of the last migration file.
int LatestSchemaVersion();

// Runs once on a freshly opened connection, before anything else touches the schema. Each
// step (the carry-over, each migration) is one transaction that re-reads the version inside
// it, so two processes opening one file at once apply nothing twice. Errors, each leaving the
// file as it was: data_loss (another application's file, or an old-numbered version its tables
// contradict), failed_precondition (newer than this build), internal (a migration failed and was rolled back).
// `target_version` below the latest stops early (tests use it to look at the carry-over before later migrations run).
Status Migrate(Connection& conn, int target_version = LatestSchemaVersion());

}  // namespace blocktune::store
