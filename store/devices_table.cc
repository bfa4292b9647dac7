// DevicesTable and its SQL; see devices_table.h.
#include "store/devices_table.h"

namespace blocktune::store {
namespace {

constexpr char kMeasuredElsewhereSql[] =
    "SELECT COUNT(*) FROM measurements m JOIN sweeps s ON s.id = m.sweep_id WHERE s.id = ?1 AND s.hardware_id != ?2";
constexpr char kSetDeviceSql[] = "UPDATE sweeps SET hardware_id = ?, device = ? WHERE id = ?";
constexpr char kGetDeviceSql[] = "SELECT device FROM sweeps WHERE id = ?";
constexpr char kFailTasksSql[] =
    "UPDATE sweep_tasks SET status = 'failed', error = ?2, "
    "finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE sweep_id = ?1 AND status IN ('queued', 'running')";
constexpr char kFailSweepSql[] =
    "UPDATE sweeps SET status = 'failed', error = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ?1 AND status IN ('queued', 'running')";

}  // namespace

Status DevicesTable::Set(int64_t sweep_id, int64_t hardware_id, const std::string& identity) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    auto count = conn.Prepare(kMeasuredElsewhereSql);
    if (!count) return std::unexpected(count.error());
    count->Bind(1, sweep_id).Bind(2, hardware_id);
    auto row = count->Step();
    if (!row) return std::unexpected(row.error());
    if (*row && count->Int(0) > 0) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "sweep " + std::to_string(sweep_id) + " already stored " + std::to_string(count->Int(0)) +
                           " measurements under another hardware key",
                       "device");
    }
    auto st = conn.Prepare(kSetDeviceSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, hardware_id).Bind(2, identity).Bind(3, sweep_id);
    return st->Run();
  });
}

Result<std::string> DevicesTable::Get(int64_t sweep_id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kGetDeviceSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return NotFound("no sweep with id " + std::to_string(sweep_id), "id");
  return st->Text(0);
}

Status DevicesTable::Fail(int64_t sweep_id, const std::string& error) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    for (const char* sql : {kFailTasksSql, kFailSweepSql}) {
      auto st = conn.Prepare(sql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, sweep_id).Bind(2, error);
      if (auto r = st->Run(); !r) return r;
    }
    return {};
  });
}

}  // namespace blocktune::store
