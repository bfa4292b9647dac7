// Schema migration and the one-time carry-over of the old position numbering; see migrate.h.
#include "store/migrate.h"

#include <spdlog/spdlog.h>

#include <array>
#include <string>

#include "store/migrations.h"
#include "tuner/device_models.h"

namespace blocktune::store {
namespace {

// The migration files that existed, in sorted order, while the version was a position: a
// legacy user_version p means the first p of these were applied, i.e. file number
// kLegacyFileNumbers[p - 1]. Frozen: no later build writes the old numbering.
constexpr std::array<int, 6> kLegacyFileNumbers = {1, 2, 3, 5, 6, 7};

constexpr char kReadHeaderSql[] =
    "SELECT application_id, user_version FROM pragma_application_id(), pragma_user_version()";
// What the tables of a legacy database say was applied: the five tables of 0001, final_rounds
// (0005), sweep_tasks (0006) and the 'transfer' strategy in sweeps' CHECK (0007). Checked
// before a legacy version is trusted, because branch builds once applied 0006 before 0005
// existed and recorded it as position 4 too.
constexpr char kLegacyShapeSql[] =
    "SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('hardware_profiles', 'sweeps', "
    "'measurements', 'samples', 'tuned_entries')), "
    "(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'final_rounds'), "
    "(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sweep_tasks'), "
    "(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sweeps' AND sql LIKE '%''transfer''%')";
constexpr char kForeignKeyCheckSql[] = "PRAGMA foreign_key_check";

struct Header {
  int64_t application_id = 0;
  int64_t version = 0;
};

Result<Header> ReadHeader(Connection& conn) {
  auto st = conn.Prepare(kReadHeaderSql);
  if (!st) return std::unexpected(st.error());
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return Internal("reading the database header returned no row");
  return Header{st->Int(0), st->Int(1)};
}

// true when the tables match what legacy file number `number` leaves behind.
Result<bool> LegacyShapeMatches(Connection& conn, int number) {
  auto st = conn.Prepare(kLegacyShapeSql);
  if (!st) return std::unexpected(st.error());
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return false;
  return st->Int(0) == 5 && (st->Int(1) == 1) == (number >= 5) && (st->Int(2) == 1) == (number >= 6) &&
         (st->Int(3) == 1) == (number >= 7);
}

Status Rollback(Connection& conn, Status s) {
  (void)conn.Exec("ROLLBACK");
  return s;
}

// The carry-over: for a legacy database, one transaction that re-reads the header, checks the
// tables, rewrites the version to the file number and stamps the application id. Stamped
// databases (and empty new ones) are left alone, so running it again does nothing.
Status CarryOver(Connection& conn) {
  // Read first without a write lock: the common case (ours already, or a new empty file)
  // must not need one, so a read-only file or a busy daemon's database still opens.
  auto before = ReadHeader(conn);
  if (!before) return std::unexpected(before.error());
  if (before->application_id == kApplicationId || (before->application_id == 0 && before->version == 0)) return {};
  if (before->application_id != 0) {
    return MakeError(ErrorCode::kDataLoss, "the database belongs to another application (application_id " +
                                               std::to_string(before->application_id) + "); it was not modified");
  }
  if (auto s = conn.Exec("BEGIN IMMEDIATE"); !s) return s;
  auto h = ReadHeader(conn);
  if (!h) return Rollback(conn, std::unexpected(h.error()));
  if (h->application_id == kApplicationId) return conn.Exec("COMMIT");  // another process carried it over
  if (h->version < 1 || h->version > static_cast<int64_t>(kLegacyFileNumbers.size())) {
    return Rollback(conn, MakeError(ErrorCode::kDataLoss,
                                    "schema version " + std::to_string(h->version) +
                                        " without blocktune's application id: no blocktune build wrote it (the old "
                                        "numbering never passed 6); the database was not modified"));
  }
  const int number = kLegacyFileNumbers[static_cast<size_t>(h->version - 1)];
  auto shape = LegacyShapeMatches(conn, number);
  if (!shape) return Rollback(conn, std::unexpected(shape.error()));
  if (!*shape) {
    return Rollback(conn,
                    MakeError(ErrorCode::kDataLoss, "schema version " + std::to_string(h->version) +
                                                        " (old numbering) but the tables are not those of migration " +
                                                        std::to_string(number) + "; the database was not modified"));
  }
  const std::string rewrite = "PRAGMA user_version = " + std::to_string(number) +
                              "; PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
  if (auto s = conn.Exec(rewrite); !s) return Rollback(conn, s);
  if (auto s = conn.Exec("COMMIT"); !s) return Rollback(conn, s);
  spdlog::info("carried over schema numbering old_version={} schema_version={}", h->version, number);
  return {};
}

// Applies `m` unless another process already did: the version is re-read inside the
// transaction. A crash leaves either the old schema or the new one.
Status Apply(Connection& conn, const Migration& m) {
  if (auto s = conn.Exec("BEGIN IMMEDIATE"); !s) return s;
  auto h = ReadHeader(conn);
  if (!h) return Rollback(conn, std::unexpected(h.error()));
  if (h->version >= m.version) return conn.Exec("COMMIT");
  std::string sql(m.sql);
  sql += "\nPRAGMA user_version = " + std::to_string(m.version) + ";";
  sql += "\nPRAGMA application_id = " + std::to_string(kApplicationId) + ";";
  Status applied = conn.Exec(sql);
  if (applied) {
    auto check = conn.Prepare(kForeignKeyCheckSql);
    auto row = check ? check->Step() : Result<bool>(std::unexpected(check.error()));
    if (!row) {
      applied = std::unexpected(row.error());
    } else if (*row) {
      applied = Internal("foreign key violation in table " + check->Text(0) + " after the migration");
    }
  }
  if (applied) applied = conn.Exec("COMMIT");
  if (!applied) {
    return Rollback(conn, MakeError(ErrorCode::kInternal,
                                    "migration " + std::string(m.name) + " failed: " + applied.error().message));
  }
  spdlog::info("applied migration name={} schema_version={}", m.name, m.version);
  return {};
}

}  // namespace

int LatestSchemaVersion() { return Migrations().empty() ? 0 : Migrations().back().version; }

Status Migrate(Connection& conn, int target_version) {
  if (auto s = CarryOver(conn); !s) return s;
  auto h = ReadHeader(conn);
  if (!h) return std::unexpected(h.error());
  const int latest = LatestSchemaVersion();
  if (h->version > latest) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "database schema version " + std::to_string(h->version) + " is newer than this build supports (" +
                         std::to_string(latest) + "); upgrade blocktune, the database was not modified");
  }
  if (h->version >= target_version) return {};
  // Migration 0016 rewrites the keys imports wrote before device keys with the C++ mapping.
  if (auto s = conn.DefineTextFunction("blocktune_legacy_device_key",
                                       [](std::string_view key) { return tuner::LegacyDeviceKey(key); });
      !s) {
    return s;
  }
  // SQLite's procedure for schema changes it cannot ALTER (lang_altertable.html#otheralter):
  // foreign keys off while a migration rebuilds a table others reference (they can only be
  // switched outside a transaction), foreign_key_check before its COMMIT, on again after.
  if (auto s = conn.Exec("PRAGMA foreign_keys = OFF"); !s) return s;
  for (const Migration& m : Migrations()) {
    if (m.version <= h->version || m.version > target_version) continue;
    if (auto s = Apply(conn, m); !s) {
      (void)conn.Exec("PRAGMA foreign_keys = ON");
      return s;
    }
  }
  return conn.Exec("PRAGMA foreign_keys = ON");
}

}  // namespace blocktune::store
