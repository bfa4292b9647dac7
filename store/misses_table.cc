// MissesTable and its SQL; see misses_table.h.
#include "store/misses_table.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kAddMissSql[] =
    "INSERT INTO lookup_misses (kernel, dtype, hardware_key, bucket, dims, fallback_count, nearest_count, "
    "default_count, count, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (kernel, dtype, hardware_key, bucket) DO UPDATE SET "
    "fallback_count = fallback_count + excluded.fallback_count, "
    "nearest_count = nearest_count + excluded.nearest_count, "
    "default_count = default_count + excluded.default_count, count = count + excluded.count, "
    "first_seen_at = MIN(first_seen_at, excluded.first_seen_at), "
    "last_seen_at = MAX(last_seen_at, excluded.last_seen_at)";
// A hardware filter matches the key itself or keys under it ("x86_64.avx2" matches
// "x86_64.avx2.amd..." but not "x86_64.avx2x"), as tables::KeyHasPrefix does.
constexpr char kListMissesSql[] =
    "SELECT id, kernel, dtype, hardware_key, bucket, dims, fallback_count, nearest_count, default_count, "
    "first_seen_at, last_seen_at FROM lookup_misses "
    "WHERE (?1 = '' OR kernel = ?1) "
    "AND (?2 = '' OR hardware_key = ?2 OR substr(hardware_key, 1, length(?2) + 1) = ?2 || '.') "
    "ORDER BY count DESC, id LIMIT ?3 OFFSET ?4";

Result<MissRecord> ReadMiss(const Statement& st) {
  MissRecord r;
  r.id = st.Int(0);
  MissCount& c = r.counts;
  c.kernel = st.Text(1);
  auto dtype = ParseDType(st.Text(2));
  auto dims = NamedInts::Parse(st.Text(5));
  if (!dtype || !dims) return MakeError(ErrorCode::kDataLoss, "lookup miss " + std::to_string(r.id) + " is malformed");
  c.dtype = *dtype;
  c.hardware_key = st.Text(3);
  c.bucket = st.Text(4);
  c.dims = std::move(*dims);
  c.fallback = st.Int(6);
  c.nearest = st.Int(7);
  c.defaulted = st.Int(8);
  c.first_seen_at = st.Text(9);
  c.last_seen_at = st.Text(10);
  return r;
}

}  // namespace

Status MissesTable::Add(const std::vector<MissCount>& batch) {
  if (batch.empty()) return {};
  auto lock = db_.Lock();
  return db_.InTransaction([&]() -> Status {
    auto st = db_.conn().Prepare(kAddMissSql);
    if (!st) return std::unexpected(st.error());
    for (const MissCount& c : batch) {
      st->Reset();
      st->Bind(1, c.kernel).Bind(2, DTypeName(c.dtype)).Bind(3, c.hardware_key).Bind(4, c.bucket);
      st->Bind(5, c.dims.ToString()).Bind(6, c.fallback).Bind(7, c.nearest).Bind(8, c.defaulted);
      st->Bind(9, c.count()).Bind(10, c.first_seen_at).Bind(11, c.last_seen_at);
      if (auto s = st->Run(); !s) return s;
    }
    return {};
  });
}

Result<std::vector<MissRecord>> MissesTable::List(const MissFilter& filter) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kListMissesSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, filter.kernel).Bind(2, filter.hardware_prefix).Bind(3, filter.limit).Bind(4, filter.offset);
  return ReadRows(*st, ReadMiss);
}

}  // namespace blocktune::store
