// Store::Open: checks the file, migrates it, then sets the connection up; see store.h.
#include "store/store.h"

namespace blocktune::store {
namespace {

constexpr char kQuickCheckSql[] = "PRAGMA integrity_check(1)";
constexpr char kConnectionSetupSql[] =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;";

}  // namespace

Store::Store(Connection conn) : db_(std::move(conn)) {}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  auto conn = Connection::Open(path, /*create=*/true);
  if (!conn) return std::unexpected(conn.error());
  // The first read is where SQLite notices a file that is not a database (SQLITE_NOTADB):
  // report it and leave the file exactly as it was.
  {
    auto check = conn->Prepare(kQuickCheckSql);
    if (!check) {
      return MakeError(ErrorCode::kDataLoss, path + " is not a readable SQLite database (" + check.error().message +
                                                 "); refusing to touch it");
    }
    auto row = check->Step();
    if (!row) {
      return MakeError(ErrorCode::kDataLoss,
                       path + " is not a readable SQLite database (" + row.error().message + "); refusing to touch it");
    }
    if (*row && check->Text(0) != "ok") {
      return MakeError(ErrorCode::kDataLoss, path + " failed its integrity check: " + check->Text(0));
    }
  }
  // Migrating first: a file refused there (another application's, or newer) must be left
  // byte for byte as it was, and switching to WAL rewrites the header.
  if (auto s = Migrate(*conn); !s) return std::unexpected(s.error());
  if (auto s = conn->Exec(kConnectionSetupSql); !s) return std::unexpected(s.error());
  return std::unique_ptr<Store>(new Store(std::move(*conn)));
}

}  // namespace blocktune::store
