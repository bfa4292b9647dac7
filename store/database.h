// The one SQLite connection that every table group of the store shares, and its one lock
// (Chromium's sql::Database shared by the history tables). Each public table operation holds
// the lock for its whole duration and is one transaction: InTransaction (BEGIN IMMEDIATE ...
// COMMIT) when it writes more than one statement, SQLite's implicit one otherwise. Within a
// process the job runner is the sweeps' writer; other processes on the file are kept apart by
// the sweeps' owners (executors_table.h) and SQLite's file lock. Lookups are served from
// memory, not from here.
#pragma once

#include <functional>
#include <mutex>

#include "kernels/core/result.h"
#include "store/sqlite.h"

namespace blocktune::store {

class Database {
 public:
  explicit Database(Connection conn) : conn_(std::move(conn)) {}
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Held by every table operation from its first statement to its last.
  [[nodiscard]] std::unique_lock<std::mutex> Lock() { return std::unique_lock<std::mutex>(mu_); }
  // The connection; use it only while holding Lock() (or before the store is shared).
  Connection& conn() { return conn_; }
  // Runs `body` between BEGIN IMMEDIATE and COMMIT, rolling back if it or the COMMIT fails.
  // The caller holds Lock().
  Status InTransaction(const std::function<Status()>& body);

 private:
  std::mutex mu_;
  Connection conn_;
};

}  // namespace blocktune::store
