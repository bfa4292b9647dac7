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
// Unfinished sweeps that run here (not imported), each with its owner's executor row (columns
// 3-11; 3 says whether there is one).
constexpr char kUnfinishedSweepsSql[] =
    "SELECT s.id, s.kernel, COALESCE(s.owner, ''), e.id IS NOT NULL, e.id, e.kind, e.host, e.boot_id, e.pid, "
    "e.pid_start, e.started_at, e.expires_ms FROM sweeps s LEFT JOIN executors e ON e.id = s.owner "
    "WHERE s.status IN ('queued', 'running') AND s.imported = 0 ";
// LeaseNext's candidates: those with an unfinished task, the claimant's own (?1) first.
constexpr char kCandidatesSql[] =
    "AND EXISTS (SELECT 1 FROM sweep_tasks t WHERE t.sweep_id = s.id AND t.status IN ('queued', 'running')) "
    "ORDER BY COALESCE(s.owner, '') = ?1 DESC, s.id";
constexpr char kTakeSweepSql[] = "UPDATE sweeps SET owner = ? WHERE id = ?";
constexpr char kRequeueSweepTasksSql[] =
    "UPDATE sweep_tasks SET status = 'queued' WHERE sweep_id = ? AND status = 'running'";
constexpr char kSelectSweepNextTaskSql[] =
    "WHERE t.sweep_id = ? AND t.status IN ('queued', 'running') ORDER BY t.ordinal LIMIT 1";
constexpr char kLeaseOwnTaskSql[] =
    "UPDATE sweep_tasks SET status = 'running', attempts = attempts + 1, "
    "started_at = COALESCE(started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ?";
constexpr char kIfQueuedSql[] = " AND status = 'queued'";
constexpr char kLeaseSweepSql[] =
    "UPDATE sweeps SET status = 'running', started_at = COALESCE(started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "WHERE id = ? AND status = 'queued'";
constexpr char kReleaseTaskSql[] = "UPDATE sweep_tasks SET status = 'queued' WHERE id = ? AND status = 'running'";
constexpr char kFinishTaskSql[] =
    "UPDATE sweep_tasks SET status = ?1, error = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ?3 AND status = 'running' AND (?4 = '' OR EXISTS (SELECT 1 FROM sweeps o WHERE "
    "o.id = sweep_tasks.sweep_id AND o.owner = ?4)) RETURNING sweep_id";
constexpr char kFinishSweepIfDoneSql[] =
    "UPDATE sweeps SET status = CASE WHEN EXISTS (SELECT 1 FROM sweep_tasks WHERE sweep_id = ?1 AND status = 'failed') "
    "THEN 'failed' ELSE 'done' END, "
    "error = COALESCE((SELECT error FROM sweep_tasks WHERE sweep_id = ?1 AND status = 'failed' ORDER BY ordinal "
    "LIMIT 1), ''), finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ?1 AND status IN ('queued', 'running') AND NOT EXISTS (SELECT 1 FROM sweep_tasks WHERE "
    "sweep_id = ?1 AND status IN ('queued', 'running')) RETURNING id";
constexpr char kOrphanSweepSql[] =
    "UPDATE sweeps SET owner = NULL, status = 'queued' WHERE id = ? AND status IN ('queued', 'running')";

struct Candidate {
  int64_t sweep_id = 0;
  std::string kernel;
  std::string owner;  // '' : none
  std::optional<ExecutorRecord> executor;
};

Candidate ReadCandidate(const Statement& st) {
  Candidate c;
  c.sweep_id = st.Int(0);
  c.kernel = st.Text(1);
  c.owner = st.Text(2);
  if (st.Int(3) != 0) c.executor = ReadExecutor(st, 4);
  return c;
}

// Why the owner of `c` no longer holds it ("" if it does, or if there is no owner).
std::string Lapsed(const Candidate& c, int64_t now_ms) {
  if (c.owner.empty()) return "";
  if (!c.executor) return "executor " + c.owner.substr(0, 8) + " (its row is gone)";
  if (Holds(*c.executor, now_ms)) return "";
  return Describe(*c.executor) + (c.executor->expires_ms < now_ms ? ": its claim expired" : ": its process ended");
}

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

Result<std::optional<TaskRecord>> TasksTable::LeaseNext(const Claimant& who) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  std::optional<TaskRecord> out;
  auto s = db_.InTransaction([&]() -> Status {
    const int64_t now = NowMs();
    std::optional<Candidate> pick;
    std::string taken_from;
    {
      auto st = conn.Prepare(std::string(kUnfinishedSweepsSql) + kCandidatesSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, who.self.id);
      while (true) {
        auto row = st->Step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        Candidate c = ReadCandidate(*st);
        if (who.only && who.only->count(c.sweep_id) == 0) continue;
        if (who.can_run && !who.can_run(c.kernel)) continue;
        if (!c.owner.empty() && c.owner != who.self.id) {
          taken_from = Lapsed(c, now);
          if (taken_from.empty()) continue;  // its owner runs it
        }
        pick = std::move(c);
        break;
      }
    }
    if (!pick) return {};
    if (pick->owner != who.self.id) {
      // Taken whole: the previous owner's running task (if any) starts over from what it
      // committed; the engine skips every config already stored.
      for (const char* sql : {kTakeSweepSql, kRequeueSweepTasksSql}) {
        auto st = conn.Prepare(sql);
        if (!st) return std::unexpected(st.error());
        if (sql == kTakeSweepSql) {
          st->Bind(1, who.self.id).Bind(2, pick->sweep_id);
        } else {
          st->Bind(1, pick->sweep_id);
        }
        if (auto r = st->Run(); !r) return r;
      }
    }
    if (auto r = UpsertExecutor(conn, who.self, who.lease_ms); !r) return r;
    auto st = conn.Prepare(std::string(kTaskColumns) + kSelectSweepNextTaskSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, pick->sweep_id);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};
    auto t = ReadTask(*st);
    if (!t) return std::unexpected(t.error());
    *st = Statement();
    auto lease = conn.Prepare(kLeaseOwnTaskSql);
    if (!lease) return std::unexpected(lease.error());
    lease->Bind(1, t->id);
    if (auto r = lease->Run(); !r) return r;
    auto sweep = conn.Prepare(kLeaseSweepSql);
    if (!sweep) return std::unexpected(sweep.error());
    sweep->Bind(1, t->sweep_id);
    if (auto r = sweep->Run(); !r) return r;
    t->status = SweepStatus::kRunning;
    t->attempts += 1;
    t->taken_from = std::move(taken_from);
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
    auto st = conn.Prepare(std::string(kLeaseOwnTaskSql) + kIfQueuedSql);
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

Result<bool> TasksTable::Finish(int64_t task_id, SweepStatus status, const std::string& error,
                                const std::string& owner) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  bool finished = false;
  auto s = db_.InTransaction([&]() -> Status {
    auto st = conn.Prepare(kFinishTaskSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, SweepStatusName(status)).Bind(2, error).Bind(3, task_id).Bind(4, owner);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};  // no longer running (cancelled meanwhile), or no longer `owner`'s
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

Result<int64_t> TasksTable::RequeueOrphans() {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  int64_t requeued = 0;
  auto s = db_.InTransaction([&]() -> Status {
    const int64_t now = NowMs();
    std::vector<int64_t> orphans;
    {
      auto st = conn.Prepare(std::string(kUnfinishedSweepsSql) + "ORDER BY s.id");
      if (!st) return std::unexpected(st.error());
      while (true) {
        auto row = st->Step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        const Candidate c = ReadCandidate(*st);
        if (c.owner.empty() || !Lapsed(c, now).empty()) orphans.push_back(c.sweep_id);
      }
    }
    for (const int64_t id : orphans) {
      for (const char* sql : {kRequeueSweepTasksSql, kOrphanSweepSql}) {
        auto st = conn.Prepare(sql);
        if (!st) return std::unexpected(st.error());
        st->Bind(1, id);
        if (auto r = st->Run(); !r) return r;
      }
    }
    requeued = static_cast<int64_t>(orphans.size());
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return requeued;
}

}  // namespace blocktune::store
