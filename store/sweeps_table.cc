// SweepsTable and its SQL; see sweeps_table.h.
#include "store/sweeps_table.h"

#include <unistd.h>

#include <iterator>
#include <string>
#include <vector>

#include "store/rows.h"
#include "store/tasks_table.h"

namespace blocktune::store {
namespace {

constexpr char kInsertSweepSql[] =
    "INSERT INTO sweeps (kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status, "
    "bucket_version, tool_version, progress_total, budget_seconds, created_at, uid, host, shard_index, shard_count) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, 0, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
    "lower(hex(randomblob(16))), ?, ?, ?)";
constexpr char kSetOwnerSql[] = "UPDATE sweeps SET owner = ? WHERE id = ?";
constexpr char kSelectIdempotencySql[] = "SELECT request, sweep_id FROM idempotency_keys WHERE idempotency_key = ?";
constexpr char kInsertIdempotencySql[] =
    "INSERT INTO idempotency_keys (idempotency_key, request, sweep_id, created_at) "
    "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kSweepColumns[] =
    "SELECT s.id, s.kernel, s.dtype, s.threads, s.strategy, s.budget, s.seed, s.shapes, s.status, "
    "s.progress_done, s.progress_total, s.error, s.created_at, COALESCE(s.started_at, ''), "
    "COALESCE(s.finished_at, ''), h.hardware_key, s.budget_seconds, s.env_load_average, s.env_affinity, "
    "s.env_governor, s.env_compiler, s.env_build_flags, s.tool_version, s.uid, s.host, s.shard_index, "
    "s.shard_count, s.imported, s.bucket_version, b.sweep_id IS NOT NULL, b.wall_s, b.store_s, b.search_s, "
    "b.decision_s, b.measured, b.spawns, b.retries";
// Then the evaluator's phases, one column each (tuner::kEvalPhases), and the joins.
constexpr int kFirstPhaseColumn = 37;
const std::string& SweepColumns() {
  static const std::string sql = [] {
    std::string s = kSweepColumns;
    for (const tuner::EvalPhase& p : tuner::kEvalPhases) s += std::string(", b.") + p.name;
    // Then the owner (migration 0015) and its executor row, if any (ReadExecutor's order).
    return s +
           ", COALESCE(s.owner, ''), x.id IS NOT NULL, x.id, x.kind, x.host, x.boot_id, x.pid, x.pid_start, "
           "x.started_at, x.expires_ms, s.device FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id "
           "LEFT JOIN sweep_breakdowns b ON b.sweep_id = s.id LEFT JOIN executors x ON x.id = s.owner ";
  }();
  return sql;
}
constexpr char kSetPriorProfileSql[] =
    "INSERT INTO sweep_prior_profiles (sweep_id, hardware_key, correlation, shared, log_weight) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (sweep_id, hardware_key) DO UPDATE SET correlation = excluded.correlation, shared = excluded.shared, "
    "log_weight = excluded.log_weight";
constexpr char kSelectPriorProfilesSql[] =
    "SELECT hardware_key, correlation, shared, log_weight FROM sweep_prior_profiles WHERE sweep_id = ? "
    "ORDER BY hardware_key";
// Adds a part of a sweep's breakdown to its row: sweep_id, then every column below in order
// (the engine's, then the evaluator's phases), each summed on conflict.
constexpr const char* kBreakdownEngineColumns[] = {"wall_s",   "store_s", "search_s", "decision_s",
                                                   "measured", "spawns",  "retries"};
const std::string& AddBreakdownSql() {
  static const std::string sql = [] {
    std::vector<std::string> columns(std::begin(kBreakdownEngineColumns), std::end(kBreakdownEngineColumns));
    for (const tuner::EvalPhase& p : tuner::kEvalPhases) columns.push_back(p.name);
    std::string names = "sweep_id", values = "?", sums;
    for (const std::string& c : columns) {
      names += ", " + c;
      values += ", ?";
      sums += (sums.empty() ? "" : ", ") + c + " = " + c + " + excluded." + c;
    }
    return "INSERT INTO sweep_breakdowns (" + names + ") VALUES (" + values +
           ") ON CONFLICT (sweep_id) DO UPDATE SET " + sums;
  }();
  return sql;
}
constexpr char kSelectSweepSql[] = "WHERE s.id = ?";
constexpr char kSelectSweepsSql[] = "WHERE (? = '' OR s.status = ?) ORDER BY s.id LIMIT ?";
constexpr char kSelectSweepPageSql[] = "WHERE (? = '' OR s.status = ?) AND s.id > ? ORDER BY s.id LIMIT ?";
constexpr char kSetSweepRunningSql[] =
    "UPDATE sweeps SET status = 'running', error = ?, started_at = COALESCE(started_at, "
    "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ?";
constexpr char kSetSweepFinalSql[] =
    "UPDATE sweeps SET status = ?, error = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?";
constexpr char kSetSweepQueuedSql[] = "UPDATE sweeps SET status = 'queued', error = ? WHERE id = ?";
constexpr char kSetSweepEnvironmentSql[] =
    "UPDATE sweeps SET env_load_average = ?, env_affinity = ?, env_governor = ?, env_compiler = ?, "
    "env_build_flags = ? WHERE id = ?";
constexpr char kCancelSweepSql[] =
    "UPDATE sweeps SET status = 'cancelled', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ? AND status IN ('queued', 'running')";
constexpr char kCancelTasksSql[] =
    "UPDATE sweep_tasks SET status = 'cancelled', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE sweep_id = ? AND status IN ('queued', 'running')";
constexpr char kProgressSql[] =
    "SELECT (SELECT COUNT(*) FROM measurements WHERE sweep_id = ?1), "
    "(SELECT COALESCE(SUM(planned), 0) FROM sweep_tasks WHERE sweep_id = ?1), "
    "(SELECT COUNT(*) FROM sweep_tasks WHERE sweep_id = ?1 AND status = 'done'), "
    "(SELECT COUNT(*) FROM sweep_tasks WHERE sweep_id = ?1), "
    "(SELECT COUNT(*) FROM measurements WHERE sweep_id = ?1 AND outcome != 'invalid'), "
    "(SELECT COALESCE((julianday(MAX(created_at)) - julianday(MIN(created_at))) * 86400.0, 0) FROM measurements "
    "WHERE sweep_id = ?1 AND outcome != 'invalid')";
constexpr char kOutcomeCountsSql[] =
    "SELECT outcome, COUNT(*) FROM measurements WHERE sweep_id = ? GROUP BY outcome ORDER BY outcome";

// The strategy's stored name, from the one list (tuner::kStrategyNames); a value outside it
// is refused before anything is written (migration 0008 dropped the table's CHECK).
Result<std::string_view> StrategyToStore(tuner::Strategy s) {
  const auto i = static_cast<size_t>(s);
  if (i >= std::size(tuner::kStrategyNames)) {
    return InvalidArgument("unknown strategy #" + std::to_string(i), "strategy");
  }
  return tuner::kStrategyNames[i];
}

std::string JoinShapes(const std::vector<NamedInts>& shapes) {
  std::string out;
  for (const auto& s : shapes) {
    if (!out.empty()) out += ';';
    out += s.ToString();
  }
  return out;
}

Result<std::vector<NamedInts>> SplitShapes(std::string_view text) {
  std::vector<NamedInts> out;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    auto s = NamedInts::Parse(text.substr(0, semi));
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return out;
}

Result<SweepRecord> ReadSweep(const Statement& st) {
  SweepRecord r;
  r.id = st.Int(0);
  r.request.kernel = st.Text(1);
  r.request.dtype = ParseDType(st.Text(2)).value_or(DType::kF32);
  r.request.threads = static_cast<int>(st.Int(3));
  // sweeps.strategy has no CHECK since migration 0008: the names are tuner::kStrategyNames,
  // checked here and in StrategyToStore.
  auto strategy = tuner::ParseStrategy(st.Text(4));
  if (!strategy) {
    return MakeError(ErrorCode::kDataLoss,
                     "sweep " + std::to_string(r.id) + " has unknown strategy '" + st.Text(4) + "'", "strategy");
  }
  r.request.strategy = *strategy;
  r.request.budget = st.Int(5);
  r.request.seed = static_cast<uint64_t>(st.Int(6));
  auto shapes = SplitShapes(st.Text(7));
  if (!shapes) return MakeError(ErrorCode::kDataLoss, "sweep " + std::to_string(r.id) + " has malformed shapes");
  r.request.shapes = std::move(*shapes);
  r.status = ParseSweepStatus(st.Text(8)).value_or(SweepStatus::kFailed);
  r.progress_done = st.Int(9);
  r.progress_total = st.Int(10);
  r.error = st.Text(11);
  r.created_at = st.Text(12);
  r.started_at = st.Text(13);
  r.finished_at = st.Text(14);
  r.hardware_key = st.Text(15);
  r.request.budget_seconds = st.Double(16);
  r.environment.load_average = st.Text(17);
  r.environment.affinity = st.Text(18);
  r.environment.governor = st.Text(19);
  r.environment.compiler = st.Text(20);
  r.environment.build_flags = st.Text(21);
  r.environment.tool_version = st.Text(22);
  r.uid = st.Text(23);
  r.host = st.Text(24);
  r.request.shard_index = static_cast<int>(st.Int(25));
  r.request.shard_count = static_cast<int>(st.Int(26));
  r.imported = st.Int(27) != 0;
  r.bucket_version = static_cast<int>(st.Int(28));
  if (st.Int(29) != 0) {
    tuner::SweepBreakdown b;
    b.wall_s = st.Double(30);
    b.store_s = st.Double(31);
    b.search_s = st.Double(32);
    b.decision_s = st.Double(33);
    b.measured = st.Int(34);
    b.eval.spawns = st.Int(35);
    b.eval.retries = st.Int(36);
    int column = kFirstPhaseColumn;
    for (const tuner::EvalPhase& p : tuner::kEvalPhases) b.eval.*p.seconds = st.Double(column++);
    r.breakdown = b;
  }
  const int owner_column = kFirstPhaseColumn + static_cast<int>(std::size(tuner::kEvalPhases));
  r.owner = st.Text(owner_column);
  if (st.Int(owner_column + 1) != 0) r.executor = ReadExecutor(st, owner_column + 2);
  r.device = st.Text(owner_column + 10);  // migration 0016, after the executor's 8 columns
  return r;
}

}  // namespace

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string_view SweepStatusName(SweepStatus s) {
  switch (s) {
    case SweepStatus::kQueued: return "queued";
    case SweepStatus::kRunning: return "running";
    case SweepStatus::kDone: return "done";
    case SweepStatus::kFailed: return "failed";
    case SweepStatus::kCancelled: return "cancelled";
  }
  return "failed";
}

std::optional<SweepStatus> ParseSweepStatus(std::string_view s) {
  for (auto st : {SweepStatus::kQueued, SweepStatus::kRunning, SweepStatus::kDone, SweepStatus::kFailed,
                  SweepStatus::kCancelled}) {
    if (SweepStatusName(st) == s) return st;
  }
  return std::nullopt;
}

Result<CreatedSweep> SweepsTable::Create(const tuner::SweepRequest& request, int64_t hardware_id, int bucket_version,
                                         const std::string& tool_version, const std::vector<TaskPlan>& tasks,
                                         const std::string& idempotency_key, const std::string& canonical_request,
                                         const std::function<Status()>& admit, const ExecutorRecord* owner,
                                         int64_t lease_ms) {
  auto strategy = StrategyToStore(request.strategy);
  if (!strategy) return std::unexpected(strategy.error());
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  CreatedSweep out;
  auto s = db_.InTransaction([&]() -> Status {
    if (!idempotency_key.empty()) {
      auto sel = conn.Prepare(kSelectIdempotencySql);
      if (!sel) return std::unexpected(sel.error());
      sel->Bind(1, idempotency_key);
      auto row = sel->Step();
      if (!row) return std::unexpected(row.error());
      if (*row) {
        if (sel->Text(0) != canonical_request) {
          return MakeError(ErrorCode::kAlreadyExists, "Idempotency-Key was already used with a different request",
                           "Idempotency-Key");
        }
        out.id = sel->Int(1);
        out.created = false;
        return {};
      }
    }
    if (admit) {
      if (auto s = admit(); !s) return s;
    }
    auto st = conn.Prepare(kInsertSweepSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, request.kernel).Bind(2, DTypeName(request.dtype)).Bind(3, hardware_id).Bind(4, request.threads);
    st->Bind(5, *strategy).Bind(6, request.budget);
    st->Bind(7, static_cast<int64_t>(request.seed)).Bind(8, JoinShapes(request.shapes));
    st->Bind(9, bucket_version).Bind(10, tool_version).Bind(11, request.budget_seconds);
    st->Bind(12, HostName()).Bind(13, request.shard_index).Bind(14, request.shard_count);
    if (auto r = st->Run(); !r) return r;
    out.id = conn.LastInsertId();
    out.created = true;
    if (owner != nullptr) {
      if (auto r = UpsertExecutor(conn, *owner, lease_ms); !r) return r;
      auto own = conn.Prepare(kSetOwnerSql);
      if (!own) return std::unexpected(own.error());
      own->Bind(1, owner->id).Bind(2, out.id);
      if (auto r = own->Run(); !r) return r;
    }
    if (auto r = InsertTasks(conn, out.id, tasks); !r) return r;
    if (!idempotency_key.empty()) {
      auto ins = conn.Prepare(kInsertIdempotencySql);
      if (!ins) return std::unexpected(ins.error());
      ins->Bind(1, idempotency_key).Bind(2, canonical_request).Bind(3, out.id);
      if (auto r = ins->Run(); !r) return r;
    }
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return out;
}

Result<SweepRecord> SweepsTable::Get(int64_t id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(SweepColumns() + kSelectSweepSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return NotFound("no sweep with id " + std::to_string(id), "id");
  auto sweep = ReadSweep(*st);
  if (!sweep) return sweep;
  auto pp = db_.conn().Prepare(kSelectPriorProfilesSql);
  if (!pp) return std::unexpected(pp.error());
  pp->Bind(1, id);
  while (true) {
    auto r = pp->Step();
    if (!r) return std::unexpected(r.error());
    if (!*r) break;
    sweep->prior_profiles.push_back(
        tuner::search::ProfileSimilarity{pp->Text(0), pp->Double(1), pp->Int(2), pp->Double(3)});
  }
  return sweep;
}

Result<std::vector<SweepRecord>> SweepsTable::List(std::optional<SweepStatus> status, int64_t limit) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(SweepColumns() + kSelectSweepsSql);
  if (!st) return std::unexpected(st.error());
  const std::string_view s = status ? SweepStatusName(*status) : "";
  st->Bind(1, s).Bind(2, s).Bind(3, limit);
  return ReadRows(*st, ReadSweep);
}

Result<std::vector<SweepRecord>> SweepsTable::ListPage(std::optional<SweepStatus> status, int64_t after_id,
                                                       int64_t limit) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(SweepColumns() + kSelectSweepPageSql);
  if (!st) return std::unexpected(st.error());
  const std::string_view s = status ? SweepStatusName(*status) : "";
  st->Bind(1, s).Bind(2, s).Bind(3, after_id).Bind(4, limit);
  return ReadRows(*st, ReadSweep);
}

Status SweepsTable::SetStatus(int64_t id, SweepStatus status, const std::string& error) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  Result<Statement> st;
  if (status == SweepStatus::kRunning) {
    st = conn.Prepare(kSetSweepRunningSql);
    if (st) st->Bind(1, error).Bind(2, id);
  } else if (status == SweepStatus::kQueued) {
    st = conn.Prepare(kSetSweepQueuedSql);
    if (st) st->Bind(1, error).Bind(2, id);
  } else {
    st = conn.Prepare(kSetSweepFinalSql);
    if (st) st->Bind(1, SweepStatusName(status)).Bind(2, error).Bind(3, id);
  }
  if (!st) return std::unexpected(st.error());
  return st->Run();
}

Status SweepsTable::SetEnvironment(int64_t id, const tuner::timing::SweepEnvironment& env) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSetSweepEnvironmentSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, env.load_average).Bind(2, env.affinity).Bind(3, env.governor).Bind(4, env.compiler);
  st->Bind(5, env.build_flags).Bind(6, id);
  return st->Run();
}

Status SweepsTable::AddBreakdown(int64_t id, const tuner::SweepBreakdown& b) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(AddBreakdownSql());
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id).Bind(2, b.wall_s).Bind(3, b.store_s).Bind(4, b.search_s).Bind(5, b.decision_s);
  st->Bind(6, b.measured).Bind(7, b.eval.spawns).Bind(8, b.eval.retries);
  int column = 9;
  for (const tuner::EvalPhase& p : tuner::kEvalPhases) st->Bind(column++, b.eval.*p.seconds);
  return st->Run();
}

Status SweepsTable::SetPriorProfiles(int64_t id, const std::vector<tuner::search::ProfileSimilarity>& profiles) {
  auto lock = db_.Lock();
  return db_.InTransaction([&]() -> Status {
    for (const tuner::search::ProfileSimilarity& p : profiles) {
      auto st = db_.conn().Prepare(kSetPriorProfileSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id).Bind(2, p.hardware_key).Bind(3, p.correlation).Bind(4, p.shared).Bind(5, p.log_weight);
      if (auto r = st->Run(); !r) return r;
    }
    return {};
  });
}

Result<SweepRecord> SweepsTable::Cancel(int64_t id) {
  {
    auto lock = db_.Lock();
    Connection& conn = db_.conn();
    bool changed = false;
    auto s = db_.InTransaction([&]() -> Status {
      auto st = conn.Prepare(kCancelSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id);
      if (auto r = st->Run(); !r) return r;
      changed = conn.Changes() > 0;
      auto tasks = conn.Prepare(kCancelTasksSql);
      if (!tasks) return std::unexpected(tasks.error());
      tasks->Bind(1, id);
      return tasks->Run();
    });
    if (!s) return std::unexpected(s.error());
    if (!changed) {
      // Either no such sweep or it already finished; the row tells which.
      auto st = conn.Prepare(SweepColumns() + kSelectSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id);
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (!*row) return NotFound("no sweep with id " + std::to_string(id), "id");
      return MakeError(ErrorCode::kFailedPrecondition,
                       "sweep " + std::to_string(id) + " already finished (" + st->Text(8) + ")", "id");
    }
  }
  return Get(id);
}

Result<SweepProgress> SweepsTable::Progress(int64_t id) {
  auto lock = db_.Lock();
  SweepProgress p;
  auto st = db_.conn().Prepare(kProgressSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (*row) {
    p.done = st->Int(0);
    p.total = st->Int(1);
    p.tasks_done = st->Int(2);
    p.tasks_total = st->Int(3);
    const int64_t ran = st->Int(4);
    if (ran >= 2) p.seconds_per_measurement = st->Double(5) / static_cast<double>(ran - 1);
  }
  *st = Statement();
  auto counts = ReadCounts(db_.conn(), kOutcomeCountsSql, id);
  if (!counts) return std::unexpected(counts.error());
  p.by_outcome = std::move(*counts);
  return p;
}

}  // namespace blocktune::store
