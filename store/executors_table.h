// The executors table (migration 0015): every process that runs sweeps on this database, and
// the rule that says whether one still holds the sweeps it owns. A process is an executor with
// a random id; its claim on a sweep lapses when its row expires (it renews it while it holds
// work), when the row is gone, or at once when the row names a process of this machine (same
// host and boot) that no longer runs. The rule only decides how soon another executor takes
// over: exactly-once never depends on it, because every measurement is committed in a
// transaction that checks the sweep's owner (MeasurementsTable::Record).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

struct ExecutorRecord {
  std::string id;    // 32 hex characters
  std::string kind;  // "daemon", "local" or "import"
  std::string host;
  std::string boot_id;
  int64_t pid = 0;
  int64_t pid_start = 0;  // /proc/PID/stat starttime; 0 where unreadable
  std::string started_at;
  int64_t expires_ms = 0;
};

// This process as an executor of `kind`, with a fresh random id.
ExecutorRecord ThisProcess(const std::string& kind);
// Unix time in milliseconds (the clock every executor of a machine shares).
int64_t NowMs();
// Whether `e` still holds its sweeps at `now_ms`: not if its row expired, nor if it ran on this
// machine (same host and boot id) and its process is gone or its pid now names another process.
bool Holds(const ExecutorRecord& e, int64_t now_ms);
// "daemon pid 1234 on host" (log lines, the sweep's JSON).
std::string Describe(const ExecutorRecord& e);

// The error of a write refused because the writer no longer owns the sweep (another executor
// took it over) or the sweep finished (cancelled): failed_precondition at path "owner".
std::unexpected<Error> LostClaim(int64_t sweep_id, const std::string& holder, const std::string& status);
bool IsLostClaim(const Error& e);

class ExecutorsTable {
 public:
  explicit ExecutorsTable(Database& db) : db_(db) {}
  // Renews `self`'s row (expiry now + lease_ms) if it owns an unfinished sweep; an idle
  // executor writes nothing. Returns whether it holds any.
  Result<bool> Renew(const ExecutorRecord& self, int64_t lease_ms);
  // A clean stop: the executor's unfinished sweeps have no owner (any daemon may claim them at
  // once), their running tasks go back to the queue, and its row is deleted.
  Status Unregister(const std::string& id);
  // nullopt: no such row.
  Result<std::optional<ExecutorRecord>> Get(const std::string& id);

 private:
  Database& db_;
};

// Inside the caller's transaction, lock held: inserts or renews `self`'s row (expiry now +
// lease_ms). Creating or claiming a sweep registers its owner this way.
Status UpsertExecutor(Connection& conn, const ExecutorRecord& self, int64_t lease_ms);
// Reads an executor row from a statement whose columns from `first` are the table's, in its
// order (id, kind, host, boot_id, pid, pid_start, started_at, expires_ms).
ExecutorRecord ReadExecutor(const Statement& st, int first);

}  // namespace blocktune::store
