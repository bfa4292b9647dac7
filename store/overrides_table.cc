// OverridesTable and its SQL; see overrides_table.h.
#include "store/overrides_table.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kUpsertOverrideSql[] =
    "INSERT INTO overrides (kernel, hardware_key, dtype, bucket, config, reason, expires_at, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, NULLIF(?, ''), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "ON CONFLICT (kernel, hardware_key, dtype, bucket) DO UPDATE SET config = excluded.config, "
    "reason = excluded.reason, expires_at = excluded.expires_at, created_at = excluded.created_at "
    "RETURNING id, created_at";
constexpr char kDeleteOverrideSql[] = "DELETE FROM overrides WHERE id = ? RETURNING id";
constexpr char kSelectOverridesSql[] =
    "SELECT id, kernel, hardware_key, dtype, bucket, config, reason, COALESCE(expires_at, ''), created_at "
    "FROM overrides ORDER BY kernel, hardware_key, dtype, bucket";

Result<OverrideRecord> ReadOverride(const Statement& st) {
  OverrideRecord o;
  o.id = st.Int(0);
  o.kernel = st.Text(1);
  o.hardware_key = st.Text(2);
  auto dtype = ParseDType(st.Text(3));
  auto config = NamedInts::Parse(st.Text(5));
  if (!dtype || !config) return MakeError(ErrorCode::kDataLoss, "override " + std::to_string(o.id) + " is malformed");
  o.dtype = *dtype;
  o.bucket = st.Text(4);
  o.config = std::move(*config);
  o.reason = st.Text(6);
  o.expires_at = st.Text(7);
  o.created_at = st.Text(8);
  return o;
}

}  // namespace

Result<OverrideRecord> OverridesTable::Upsert(const OverrideRecord& o) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kUpsertOverrideSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, o.kernel).Bind(2, o.hardware_key).Bind(3, DTypeName(o.dtype)).Bind(4, o.bucket);
  st->Bind(5, o.config.ToString()).Bind(6, o.reason).Bind(7, o.expires_at);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return Internal("override upsert returned no row");
  OverrideRecord out = o;
  out.id = st->Int(0);
  out.created_at = st->Text(1);
  return out;
}

Status OverridesTable::Delete(int64_t id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kDeleteOverrideSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return NotFound("no override with id " + std::to_string(id), "id");
  return {};
}

Result<std::vector<OverrideRecord>> OverridesTable::List() {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSelectOverridesSql);
  if (!st) return std::unexpected(st.error());
  return ReadRows(*st, ReadOverride);
}

}  // namespace blocktune::store
