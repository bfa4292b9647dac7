// RAII handles over the SQLite C API: a connection and a prepared statement with typed binds
// and reads. The only header in blocktune that includes <sqlite3.h>'s names is sqlite.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/core/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace blocktune::store {

class Statement;

class Connection {
 public:
  // Opens (creating if `create`) the file. A file that is not a SQLite database is reported
  // as data_loss and left untouched.
  static Result<Connection> Open(const std::string& path, bool create);
  // Opens the file read-only (SQLITE_OPEN_READONLY): nothing through this connection can
  // change it. `immutable` (SQLite's immutable=1 URI parameter) also promises that no one else
  // writes it, so SQLite takes no locks and creates no -wal/-shm files beside it: only for a
  // file without a -wal, i.e. closed cleanly by its last writer.
  static Result<Connection> OpenReadOnly(const std::string& path, bool immutable);
  Connection() = default;
  Connection(Connection&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Connection& operator=(Connection&& o) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Runs one or more statements without results (migrations, PRAGMAs).
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  int64_t LastInsertId() const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  // Defines an SQL function of one text argument on this connection (deterministic): NULL in,
  // or nullopt out, is NULL. Migrations use it for what SQL cannot say (migrate.cc).
  using TextFunction = std::optional<std::string> (*)(std::string_view);
  Status DefineTextFunction(const char* name, TextFunction fn);
  std::string ErrorMessage() const;
  sqlite3* raw() const { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement() = default;
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds are 1-based like SQLite's `?` parameters.
  Statement& Bind(int index, int64_t v);
  Statement& Bind(int index, int v) { return Bind(index, static_cast<int64_t>(v)); }
  Statement& Bind(int index, double v);
  Statement& Bind(int index, std::string_view v);
  Statement& Bind(int index, const char* v) { return Bind(index, std::string_view(v)); }
  Statement& Bind(int index, const std::string& v) { return Bind(index, std::string_view(v)); }
  Statement& BindNull(int index);

  // true: a row is available; false: done. Errors carry SQLite's message.
  Result<bool> Step();
  // Runs a statement that returns no rows.
  Status Run();
  void Reset();

  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  bool IsNull(int col) const;

 private:
  friend class Connection;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace blocktune::store
