// Maintenance and its SQL; see maintenance.h.
#include "store/maintenance.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kSweepsByStatusSql[] = "SELECT status, COUNT(*) FROM sweeps GROUP BY status ORDER BY status";
constexpr char kMeasurementsByOutcomeSql[] =
    "SELECT outcome, COUNT(*) FROM measurements GROUP BY outcome ORDER BY outcome";
constexpr char kDbBytesSql[] = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()";
constexpr char kBackupSql[] = "VACUUM INTO ?";
constexpr char kIntegrityCheckSql[] = "PRAGMA integrity_check";
constexpr char kSchemaVersionSql[] = "PRAGMA user_version";

}  // namespace

Result<StoreStats> Maintenance::Stats() {
  auto lock = db_.Lock();
  StoreStats out;
  auto sweeps = ReadCounts(db_.conn(), kSweepsByStatusSql, std::nullopt);
  if (!sweeps) return std::unexpected(sweeps.error());
  out.sweeps_by_status = std::move(*sweeps);
  auto outcomes = ReadCounts(db_.conn(), kMeasurementsByOutcomeSql, std::nullopt);
  if (!outcomes) return std::unexpected(outcomes.error());
  out.measurements_by_outcome = std::move(*outcomes);
  auto st = db_.conn().Prepare(kDbBytesSql);
  if (!st) return std::unexpected(st.error());
  if (auto row = st->Step(); row && *row) out.db_bytes = st->Int(0);
  return out;
}

Status Maintenance::BackupTo(const std::string& path) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kBackupSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, path);
  if (auto s = st->Run(); !s) {
    return MakeError(ErrorCode::kFailedPrecondition, "backup to " + path + " failed: " + s.error().message, "path");
  }
  return {};
}

Result<std::string> Maintenance::IntegrityCheck() {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kIntegrityCheckSql);
  if (!st) return std::unexpected(st.error());
  std::string out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    if (!out.empty()) out += "; ";
    out += st->Text(0);
  }
  return out;
}

int Maintenance::SchemaVersion() {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSchemaVersionSql);
  if (!st || !st->Step().value_or(false)) return -1;
  return static_cast<int>(st->Int(0));
}

}  // namespace blocktune::store
