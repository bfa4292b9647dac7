// TunedTable and its SQL; see tuned_table.h.
#include "store/tuned_table.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kUpsertTunedSql[] =
    "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
    "sweep_id, measurement_id, measured_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (kernel, hardware_key, dtype, bucket) DO UPDATE SET bucket_version = excluded.bucket_version, "
    "config = excluded.config, median_ns = excluded.median_ns, samples = excluded.samples, "
    "sweep_id = excluded.sweep_id, measurement_id = excluded.measurement_id, measured_at = excluded.measured_at, "
    "fingerprint = excluded.fingerprint";
constexpr char kTunedColumns[] =
    "SELECT kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id, "
    "measurement_id, measured_at, COALESCE(fingerprint, ''), "
    "COALESCE((SELECT s.device FROM sweeps s WHERE s.id = tuned_entries.sweep_id), '') FROM tuned_entries ";
constexpr char kSelectTunedSql[] = "WHERE (? = '' OR kernel = ?) ORDER BY kernel, hardware_key, dtype, bucket";
constexpr char kSelectTunedOneSql[] = "WHERE kernel = ? AND hardware_key = ? AND dtype = ? AND bucket = ?";

Result<tuner::TunedEntry> ReadTunedEntry(const Statement& st) {
  tuner::TunedEntry e;
  e.kernel = st.Text(0);
  e.hardware_key = st.Text(1);
  auto dtype = ParseDType(st.Text(2));
  auto config = NamedInts::Parse(st.Text(5));
  if (!dtype || !config) return MakeError(ErrorCode::kDataLoss, "tuned entry for " + e.kernel + " is malformed");
  e.dtype = *dtype;
  e.bucket = st.Text(3);
  e.bucket_version = static_cast<int>(st.Int(4));
  e.config = std::move(*config);
  e.median_ns = st.Double(6);
  e.samples = st.Int(7);
  e.sweep_id = st.Int(8);
  e.measurement_id = st.Int(9);
  e.measured_at = st.Text(10);
  e.fingerprint = st.Text(11);
  e.device = st.Text(12);
  return e;
}

}  // namespace

Status TunedTable::Upsert(const tuner::TunedEntry& e) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kUpsertTunedSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, e.kernel).Bind(2, e.hardware_key).Bind(3, DTypeName(e.dtype)).Bind(4, e.bucket);
  st->Bind(5, e.bucket_version).Bind(6, e.config.ToString()).Bind(7, e.median_ns).Bind(8, e.samples);
  st->Bind(9, e.sweep_id).Bind(10, e.measurement_id).Bind(11, e.measured_at);
  if (e.fingerprint.empty()) {
    st->BindNull(12);
  } else {
    st->Bind(12, e.fingerprint);
  }
  return st->Run();
}

Result<std::optional<tuner::TunedEntry>> TunedTable::Get(const std::string& kernel, const std::string& hardware_key,
                                                         DType dtype, const std::string& bucket) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kTunedColumns) + kSelectTunedOneSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, kernel).Bind(2, hardware_key).Bind(3, DTypeName(dtype)).Bind(4, bucket);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<tuner::TunedEntry>();
  auto e = ReadTunedEntry(*st);
  if (!e) return std::unexpected(e.error());
  return std::optional<tuner::TunedEntry>(std::move(*e));
}

Result<std::vector<tuner::TunedEntry>> TunedTable::List(const std::string& kernel) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kTunedColumns) + kSelectTunedSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, kernel).Bind(2, kernel);
  return ReadRows(*st, ReadTunedEntry);
}

}  // namespace blocktune::store
