// SQLite C API wrappers; error codes map onto blocktune's ErrorCode here and nowhere else.
#include "store/sqlite.h"

#include <sqlite3.h>

#include <cstdio>

namespace blocktune::store {
namespace {

ErrorCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return ErrorCode::kDataLoss;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return ErrorCode::kUnavailable;
    case SQLITE_FULL:
    case SQLITE_NOMEM: return ErrorCode::kResourceExhausted;
    case SQLITE_CONSTRAINT: return ErrorCode::kAlreadyExists;
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM: return ErrorCode::kFailedPrecondition;
    default: return ErrorCode::kInternal;
  }
}

std::unexpected<Error> SqlError(sqlite3* db, int rc, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return MakeError(CodeFor(rc), std::move(msg));
}

}  // namespace

Result<Connection> Connection::Open(const std::string& path, bool create) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    auto err = SqlError(db, rc, "cannot open " + path);
    sqlite3_close(db);
    return err;
  }
  sqlite3_extended_result_codes(db, 1);
  // Another process (a CLI --local sweep, a backup) may hold the write lock briefly.
  sqlite3_busy_timeout(db, 5000);
  return Connection(db);
}

Result<Connection> Connection::OpenReadOnly(const std::string& path, bool immutable) {
  // A URI names the file ("file:" + the path with '%', '?' and '#' escaped) so the mode can
  // travel with it.
  std::string uri = "file:";
  for (const char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(ch));
      uri += buf;
    } else {
      uri += ch;
    }
  }
  uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    auto err = SqlError(db, rc, "cannot open " + path + " read-only");
    sqlite3_close(db);
    return err;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  return Connection(db);
}

Connection& Connection::operator=(Connection&& o) noexcept {
  if (this != &o) {
    if (db_ != nullptr) sqlite3_close(db_);
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

Connection::~Connection() {
  if (db_ != nullptr) sqlite3_close(db_);
}

Status Connection::DefineTextFunction(const char* name, TextFunction fn) {
  const auto call = [](sqlite3_context* ctx, int, sqlite3_value** args) {
    const auto f = reinterpret_cast<TextFunction>(sqlite3_user_data(ctx));
    if (sqlite3_value_type(args[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
    const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(args[0]));
    const auto out =
        f(std::string_view(text != nullptr ? text : "", static_cast<size_t>(sqlite3_value_bytes(args[0]))));
    if (!out) return sqlite3_result_null(ctx);
    sqlite3_result_text(ctx, out->data(), static_cast<int>(out->size()), SQLITE_TRANSIENT);
  };
  const int rc = sqlite3_create_function_v2(db_, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                            reinterpret_cast<void*>(fn), +call, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Internal(std::string("defining SQL function ") + name + ": " + sqlite3_errstr(rc));
  return {};
}

Status Connection::Exec(std::string_view sql) {
  char* err = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return MakeError(CodeFor(rc), "sql exec failed: " + msg);
  }
  return {};
}

Result<Statement> Connection::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqlError(db_, rc, "prepare failed");
  return Statement(db_, stmt);
}

int64_t Connection::LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
int64_t Connection::Changes() const { return sqlite3_changes64(db_); }
std::string Connection::ErrorMessage() const { return sqlite3_errmsg(db_); }

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = o.db_;
    stmt_ = o.stmt_;
    o.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::Bind(int index, int64_t v) {
  sqlite3_bind_int64(stmt_, index, v);
  return *this;
}
Statement& Statement::Bind(int index, double v) {
  sqlite3_bind_double(stmt_, index, v);
  return *this;
}
Statement& Statement::Bind(int index, std::string_view v) {
  sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqlError(db_, rc, "step failed");
}

Status Statement::Run() {
  auto r = Step();
  if (!r) return std::unexpected(r.error());
  return {};
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::Double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p != nullptr ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
}
bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

}  // namespace blocktune::store
