// TasksTable and its SQL; see tasks_table.h.
#include "store/tasks_table.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kInsertTaskSql[] =
    "INSERT INTO sweep_tasks (sweep_id, ordinal, bucket, shape, planned, status) VALUES (?, ?, ?, ?, ?, 'queued')";
constexpr char kSyncSweepTotalSql[] =
    "UPDATE sweeps SET progress_total = (SELECT COALESCE(SUM(planned), 0) FROM sweep_tasks WHERE sweep_id = ?1) "
    "WHERE id = ?1";
constexpr char kTaskColumns[] =
    "SELECT t.id, t.sweep_id, t.ordinal, t.bucket, t.shape, t.planned, t.status, t.attempts, t.error "
    "FROM sweep_tasks t ";
constexpr char kSelectTasksSql[] = "WHERE t.sweep_id = ? ORDER BY t.ordinal";
constexpr char kSelectNextTaskSql[] =
    "JOIN sweeps s ON s.id = t.sweep_id WHERE t.status = 'queued' AND s.status IN ('queued', 'running') "
    "ORDER BY t.sweep_id, t.ordinal LIMIT 1";
constexpr char kLeaseTaskSql[] =
    "UPDATE sweep_tasks SET status = 'running', attempts = attempts + 1, "
    "started_at = COALESCE(started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ? AND status = 'queued'";
constexpr char kLeaseSweepSql[] =
    "UPDATE sweeps SET status = 'running', started_at = COALESCE(started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "WHERE id = ? AND status = 'queued'";
constexpr char kReleaseTaskSql[] = "UPDATE sweep_tasks SET status = 'queued' WHERE id = ? AND status = 'running'";
constexpr char kFinishTaskSql[] =
    "UPDATE sweep_tasks SET status = ?, error = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ? AND status = 'running' RETURNING sweep_id";
constexpr char kFinishSweepIfDoneSql[] =
    "UPDATE sweeps SET status = CASE WHEN EXISTS (SELECT 1 FROM sweep_tasks WHERE sweep_id = ?1 AND status = 'failed') "
    "THEN 'failed' ELSE 'done' END, "
    "error = COALESCE((SELECT error FROM sweep_tasks WHERE sweep_id = ?1 AND status = 'failed' ORDER BY ordinal "
    "LIMIT 1), ''), finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ?1 AND status IN ('queued', 'running') AND NOT EXISTS (SELECT 1 FROM sweep_tasks WHERE "
    "sweep_id = ?1 AND status IN ('queued', 'running')) RETURNING id";
constexpr char kRequeueTasksSql[] = "UPDATE sweep_tasks SET status = 'queued' WHERE status = 'running'";
constexpr char kRequeueSweepsSql[] = "UPDATE sweeps SET status = 'queued' WHERE status = 'running'";

Result<TaskRecord> ReadTask(const Statement& st) {
  TaskRecord t;
  t.id = st.Int(0);
  t.sweep_id = st.Int(1);
  t.ordinal = static_cast<int>(st.Int(2));
  t.bucket = st.Text(3);
  auto shape = NamedInts::Parse(st.Text(4));
  if (!shape) return MakeError(ErrorCode::kDataLoss, "task " + std::to_string(t.id) + " has a malformed shape");
  t.shape = std::move(*shape);
  t.planned = st.Int(5);
  t.status = ParseSweepStatus(st.Text(6)).value_or(SweepStatus::kFailed);
  t.attempts = st.Int(7);
  t.error = st.Text(8);
  return t;
}

}  // namespace

Status InsertTasks(Connection& conn, int64_t sweep_id, const std::vector<TaskPlan>& tasks) {
  auto st = conn.Prepare(kInsertTaskSql);
  if (!st) return std::unexpected(st.error());
  for (size_t i = 0; i < tasks.size(); ++i) {
    st->Reset();
    st->Bind(1, sweep_id).Bind(2, static_cast<int64_t>(i)).Bind(3, tasks[i].bucket);
    st->Bind(4, tasks[i].shape.ToString()).Bind(5, tasks[i].planned);
    if (auto s = st->Run(); !s) return s;
  }
  return SyncPlannedTotal(conn, sweep_id);
}

Status SyncPlannedTotal(Connection& conn, int64_t sweep_id) {
  auto sync = conn.Prepare(kSyncSweepTotalSql);
  if (!sync) return std::unexpected(sync.error());
  sync->Bind(1, sweep_id);
  return sync->Run();
}

Status TasksTable::Add(int64_t sweep_id, const std::vector<TaskPlan>& tasks) {
  auto lock = db_.Lock();
  return db_.InTransaction([&] { return InsertTasks(db_.conn(), sweep_id, tasks); });
}

Result<std::vector<TaskRecord>> TasksTable::List(int64_t sweep_id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kTaskColumns) + kSelectTasksSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id);
  return ReadRows(*st, ReadTask);
}

Result<std::optional<TaskRecord>> TasksTable::LeaseNext() {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  std::optional<TaskRecord> out;
  auto s = db_.InTransaction([&]() -> Status {
    auto st = conn.Prepare(std::string(kTaskColumns) + kSelectNextTaskSql);
    if (!st) return std::unexpected(st.error());
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};
    auto t = ReadTask(*st);
    if (!t) return std::unexpected(t.error());
    *st = Statement();
    auto lease = conn.Prepare(kLeaseTaskSql);
    if (!lease) return std::unexpected(lease.error());
    lease->Bind(1, t->id);
    if (auto r = lease->Run(); !r) return r;
    auto sweep = conn.Prepare(kLeaseSweepSql);
    if (!sweep) return std::unexpected(sweep.error());
    sweep->Bind(1, t->sweep_id);
    if (auto r = sweep->Run(); !r) return r;
    t->status = SweepStatus::kRunning;
    t->attempts += 1;
    out = std::move(*t);
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return out;
}

Status TasksTable::Release(int64_t task_id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kReleaseTaskSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, task_id);
  return st->Run();
}

Status TasksTable::LeaseTask(int64_t sweep_id, int64_t task_id) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    auto st = conn.Prepare(kLeaseTaskSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, task_id);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (conn.Changes() != 1) return NotFound("task " + std::to_string(task_id) + " is not queued", "task");
    *st = Statement();
    auto sw = conn.Prepare(kLeaseSweepSql);
    if (!sw) return std::unexpected(sw.error());
    sw->Bind(1, sweep_id);
    auto done = sw->Step();
    if (!done) return std::unexpected(done.error());
    return {};
  });
}

Result<bool> TasksTable::Finish(int64_t task_id, SweepStatus status, const std::string& error) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  bool finished = false;
  auto s = db_.InTransaction([&]() -> Status {
    auto st = conn.Prepare(kFinishTaskSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, SweepStatusName(status)).Bind(2, error).Bind(3, task_id);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};  // no longer running: cancelled meanwhile
    const int64_t sweep_id = st->Int(0);
    *st = Statement();
    auto fin = conn.Prepare(kFinishSweepIfDoneSql);
    if (!fin) return std::unexpected(fin.error());
    fin->Bind(1, sweep_id);
    auto done = fin->Step();
    if (!done) return std::unexpected(done.error());
    finished = *done;
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return finished;
}

Status TasksTable::RequeueInterrupted() {
  auto lock = db_.Lock();
  return db_.InTransaction([&]() -> Status {
    if (auto s = db_.conn().Exec(kRequeueTasksSql); !s) return s;
    return db_.conn().Exec(kRequeueSweepsSql);
  });
}

}  // namespace blocktune::store
