// Operations on the whole database rather than a table group: online backup, integrity check,
// counts for /metrics, and the schema version.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

struct StoreStats {
  std::vector<std::pair<std::string, int64_t>> sweeps_by_status;
  std::vector<std::pair<std::string, int64_t>> measurements_by_outcome;
  int64_t db_bytes = 0;
};

class Maintenance {
 public:
  explicit Maintenance(Database& db) : db_(db) {}
  Result<StoreStats> Stats();
  // Consistent online copy (VACUUM INTO) while the daemon keeps writing; refuses an existing file.
  Status BackupTo(const std::string& path);
  // Full PRAGMA integrity_check: "ok" or SQLite's first complaints.
  Result<std::string> IntegrityCheck();
  // The number of the last migration applied (store/migrate.h); -1 if unreadable.
  int SchemaVersion();

 private:
  Database& db_;
};

}  // namespace blocktune::store
