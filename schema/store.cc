// Store implementation. All SQL is here as constants: upper-case keywords, explicit column
// lists, `?` placeholders only, ORDER BY on every multi-row select.
#include "schema/store.h"

#include <spdlog/spdlog.h>

#include <type_traits>

#include "schema/migrate.h"

namespace blocktune::store {
namespace {


constexpr char kUpsertHardwareSql[] =
    "INSERT INTO hardware_profiles (hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, "
    "l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "ON CONFLICT (hardware_key) DO UPDATE SET model_name = excluded.model_name, cores = excluded.cores, "
    "l1d_bytes = excluded.l1d_bytes, l2_bytes = excluded.l2_bytes, l3_bytes = excluded.l3_bytes";
constexpr char kSelectHardwareIdSql[] = "SELECT id FROM hardware_profiles WHERE hardware_key = ?";

constexpr char kInsertSweepSql[] =
    "INSERT INTO sweeps (kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status, "
    "bucket_version, tool_version, progress_total, budget_seconds, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kSweepColumns[] =
    "SELECT s.id, s.kernel, s.dtype, s.threads, s.strategy, s.budget, s.seed, s.shapes, s.status, "
    "s.progress_done, s.progress_total, s.error, s.created_at, COALESCE(s.started_at, ''), "
    "COALESCE(s.finished_at, ''), h.hardware_key, s.budget_seconds, s.env_load_average, s.env_affinity, "
    "s.env_governor, s.env_compiler, s.env_build_flags, s.tool_version "
    "FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id ";
constexpr char kSetSweepRunningSql[] =
    "UPDATE sweeps SET status = 'running', error = ?, started_at = COALESCE(started_at, "
    "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ?";
constexpr char kSetSweepFinalSql[] =
    "UPDATE sweeps SET status = ?, error = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?";
constexpr char kSetSweepQueuedSql[] = "UPDATE sweeps SET status = 'queued', error = ? WHERE id = ?";
constexpr char kRequeueRunningSql[] = "UPDATE sweeps SET status = 'queued' WHERE status = 'running'";
constexpr char kSetSweepEnvironmentSql[] =
    "UPDATE sweeps SET env_load_average = ?, env_affinity = ?, env_governor = ?, env_compiler = ?, "
    "env_build_flags = ? WHERE id = ?";
constexpr char kDeleteFinalRoundSql[] = "DELETE FROM final_rounds WHERE sweep_id = ? AND bucket = ?";
constexpr char kInsertFinalRoundSql[] =
    "INSERT INTO final_rounds (sweep_id, bucket, config, position, is_incumbent, chosen, outcome, iterations, "
    "repetitions, median_ns, cv, noise_band, decision, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kSelectFinalRoundSql[] =
    "SELECT config, is_incumbent, chosen, outcome, iterations, COALESCE(median_ns, 0), COALESCE(cv, 0), noise_band, "
    "decision FROM final_rounds WHERE sweep_id = ? AND bucket = ? ORDER BY position";
constexpr char kUpdateProgressSql[] = "UPDATE sweeps SET progress_done = ?, progress_total = ? WHERE id = ?";

constexpr char kInsertMeasurementSql[] =
    "INSERT INTO measurements (sweep_id, bucket, problem, config, outcome, detail, iterations, median_ns, cv, "
    "max_abs_err, max_rel_err, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "RETURNING id, created_at";
constexpr char kInsertSampleSql[] =
    "INSERT INTO samples (measurement_id, repetition, ns_per_iteration) VALUES (?, ?, ?)";
constexpr char kSelectMeasurementsSql[] =
    "SELECT id, sweep_id, bucket, problem, config, outcome, detail, iterations, COALESCE(median_ns, 0), "
    "COALESCE(cv, 0), COALESCE(max_abs_err, 0), COALESCE(max_rel_err, 0), created_at "
    "FROM measurements WHERE sweep_id = ? AND bucket = ? ORDER BY id";
constexpr char kSelectSamplesSql[] =
    "SELECT m.id, s.ns_per_iteration FROM samples s JOIN measurements m ON m.id = s.measurement_id "
    "WHERE m.sweep_id = ? AND m.bucket = ? ORDER BY m.id, s.repetition";

constexpr char kUpsertTunedSql[] =
    "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
    "sweep_id, measurement_id, measured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (kernel, hardware_key, dtype, bucket) DO UPDATE SET bucket_version = excluded.bucket_version, "
    "config = excluded.config, median_ns = excluded.median_ns, samples = excluded.samples, "
    "sweep_id = excluded.sweep_id, measurement_id = excluded.measurement_id, measured_at = excluded.measured_at";
constexpr char kSelectTunedSql[] =
    "SELECT kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id, "
    "measurement_id, measured_at FROM tuned_entries WHERE (? = '' OR kernel = ?) "
    "ORDER BY kernel, hardware_key, dtype, bucket";
constexpr char kSelectTunedOneSql[] =
    "SELECT kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id, "
    "measurement_id, measured_at FROM tuned_entries WHERE kernel = ? AND hardware_key = ? AND dtype = ? AND bucket = ?";


// --- migration 0006: tasks, idempotency keys, overrides ----------------------------------------
constexpr char kSelectIdempotencySql[] =
    "SELECT request, sweep_id FROM idempotency_keys WHERE idempotency_key = ?";
constexpr char kInsertIdempotencySql[] =
    "INSERT INTO idempotency_keys (idempotency_key, request, sweep_id, created_at) "
    "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kInsertTaskSql[] =
    "INSERT INTO sweep_tasks (sweep_id, ordinal, bucket, shape, planned, status) VALUES (?, ?, ?, ?, ?, 'queued')";
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
constexpr char kCancelSweepSql[] =
    "UPDATE sweeps SET status = 'cancelled', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE id = ? AND status IN ('queued', 'running')";
constexpr char kCancelTasksSql[] =
    "UPDATE sweep_tasks SET status = 'cancelled', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
    "WHERE sweep_id = ? AND status IN ('queued', 'running')";
constexpr char kBumpProgressSql[] = "UPDATE sweeps SET progress_done = progress_done + 1 WHERE id = ?";
constexpr char kSetTaskPlannedSql[] =
    "UPDATE sweep_tasks SET planned = ? WHERE id = ? AND planned != ?";
constexpr char kSyncSweepTotalSql[] =
    "UPDATE sweeps SET progress_total = (SELECT COALESCE(SUM(planned), 0) FROM sweep_tasks WHERE sweep_id = ?1) "
    "WHERE id = ?1";
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
constexpr char kMeasurementColumns[] =
    "SELECT id, sweep_id, bucket, problem, config, outcome, detail, iterations, COALESCE(median_ns, 0), "
    "COALESCE(cv, 0), COALESCE(max_abs_err, 0), COALESCE(max_rel_err, 0), created_at FROM measurements ";
constexpr char kSelectMeasurementPageSql[] = "WHERE sweep_id = ? AND id > ? ORDER BY id LIMIT ?";
// The transfer prior of the task with ordinal ?2 of sweep ?1: passing measurements of earlier
// sweeps of the same kernel, dtype, hardware, thread count and bucketing, and of this sweep's
// buckets before this one. The runner leases tasks in (sweep, ordinal) order, so all of these
// are finished when the task starts and the same when it resumes.
constexpr char kSelectPriorSql[] =
    "WHERE outcome = 'ok' AND median_ns > 0 AND ("
    "sweep_id IN (SELECT o.id FROM sweeps o JOIN sweeps s ON s.id = ?1 WHERE o.id < s.id AND "
    "o.kernel = s.kernel AND o.dtype = s.dtype AND o.hardware_id = s.hardware_id AND o.threads = s.threads AND "
    "o.bucket_version = s.bucket_version) OR "
    "(sweep_id = ?1 AND bucket IN (SELECT bucket FROM sweep_tasks WHERE sweep_id = ?1 AND ordinal < ?2))) "
    "ORDER BY id";
constexpr char kSelectSamplesRangeSql[] =
    "SELECT measurement_id, ns_per_iteration FROM samples WHERE measurement_id BETWEEN ? AND ? "
    "ORDER BY measurement_id, repetition";
constexpr char kSelectSweepPageSql[] = "WHERE (? = '' OR s.status = ?) AND s.id > ? ORDER BY s.id LIMIT ?";

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

constexpr char kSelectHardwareSql[] =
    "SELECT id, hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, l1d_bytes, l2_bytes, "
    "l3_bytes, threads, first_seen_at FROM hardware_profiles ORDER BY hardware_key";
constexpr char kSweepsByStatusSql[] = "SELECT status, COUNT(*) FROM sweeps GROUP BY status ORDER BY status";
constexpr char kMeasurementsByOutcomeSql[] =
    "SELECT outcome, COUNT(*) FROM measurements GROUP BY outcome ORDER BY outcome";
constexpr char kDbBytesSql[] =
    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()";
constexpr char kBackupSql[] = "VACUUM INTO ?";
constexpr char kIntegrityCheckSql[] = "PRAGMA integrity_check";

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

// Every remaining row of `st`, each turned into a T by `read` (which may reject a row).
template <typename Read, typename T = typename std::invoke_result_t<Read, const Statement&>::value_type>
Result<std::vector<T>> ReadRows(Statement& st, Read read) {
  std::vector<T> out;
  while (true) {
    auto row = st.Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto item = read(st);
    if (!item) return std::unexpected(item.error());
    out.push_back(std::move(*item));
  }
  return out;
}

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
  return e;
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
  return r;
}

}  // namespace

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

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  auto conn = Connection::Open(path, /*create=*/true);
  if (!conn) return std::unexpected(conn.error());
  std::unique_ptr<Store> store(new Store(std::move(*conn)));
  // The first read is where SQLite notices a file that is not a database (SQLITE_NOTADB):
  // report it and leave the file exactly as it was.
  auto check = store->conn_.Prepare("PRAGMA integrity_check(1)");
  if (!check) {
    return MakeError(ErrorCode::kDataLoss, path + " is not a readable SQLite database (" + check.error().message +
                                               "); refusing to touch it");
  }
  auto row = check->Step();
  if (!row) {
    return MakeError(ErrorCode::kDataLoss, path + " is not a readable SQLite database (" + row.error().message +
                                               "); refusing to touch it");
  }
  if (*row && check->Text(0) != "ok") {
    return MakeError(ErrorCode::kDataLoss, path + " failed its integrity check: " + check->Text(0));
  }
  *check = Statement();
  // Migrating first: a file refused there (another application's, or newer) must be left
  // byte for byte as it was, and switching to WAL rewrites the header.
  if (auto s = Migrate(store->conn_); !s) return std::unexpected(s.error());
  if (auto s = store->conn_.Exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
      !s) {
    return std::unexpected(s.error());
  }
  return store;
}

int Store::SchemaVersion() {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare("PRAGMA user_version");
  if (!st || !st->Step().value_or(false)) return -1;
  return static_cast<int>(st->Int(0));
}

Status Store::InTransaction(const std::function<Status()>& body) {
  if (auto s = conn_.Exec("BEGIN IMMEDIATE"); !s) return s;
  if (auto s = body(); !s) {
    (void)conn_.Exec("ROLLBACK");
    return s;
  }
  if (auto s = conn_.Exec("COMMIT"); !s) {
    (void)conn_.Exec("ROLLBACK");
    return s;
  }
  return {};
}

Result<int64_t> Store::UpsertHardware(const HardwareProfile& hw) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kUpsertHardwareSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, hw.Key()).Bind(2, hw.cpu.arch).Bind(3, hw.cpu.isa).Bind(4, hw.cpu.vendor).Bind(5, hw.cpu.family);
  st->Bind(6, hw.cpu.model).Bind(7, hw.model_name).Bind(8, hw.cores).Bind(9, hw.l1d_bytes).Bind(10, hw.l2_bytes);
  st->Bind(11, hw.l3_bytes).Bind(12, hw.threads);
  if (auto s = st->Run(); !s) return std::unexpected(s.error());
  auto sel = conn_.Prepare(kSelectHardwareIdSql);
  if (!sel) return std::unexpected(sel.error());
  sel->Bind(1, hw.Key());
  auto row = sel->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return Internal("hardware profile vanished after upsert");
  return sel->Int(0);
}

Result<int64_t> Store::CreateSweep(const tuner::SweepRequest& request, int64_t hardware_id, int bucket_version,
                                   const std::string& tool_version, int64_t progress_total) {
  auto strategy = StrategyToStore(request.strategy);
  if (!strategy) return std::unexpected(strategy.error());
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kInsertSweepSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, request.kernel).Bind(2, DTypeName(request.dtype)).Bind(3, hardware_id).Bind(4, request.threads);
  st->Bind(5, *strategy).Bind(6, request.budget);
  st->Bind(7, static_cast<int64_t>(request.seed)).Bind(8, JoinShapes(request.shapes));
  st->Bind(9, bucket_version).Bind(10, tool_version).Bind(11, progress_total).Bind(12, request.budget_seconds);
  if (auto s = st->Run(); !s) return std::unexpected(s.error());
  return conn_.LastInsertId();
}

Result<SweepRecord> Store::GetSweep(int64_t id) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kSweepColumns) + "WHERE s.id = ?");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return NotFound("no sweep with id " + std::to_string(id), "id");
  return ReadSweep(*st);
}

Result<std::vector<SweepRecord>> Store::ListSweeps(std::optional<SweepStatus> status, int64_t limit) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kSweepColumns) + "WHERE (? = '' OR s.status = ?) ORDER BY s.id LIMIT ?");
  if (!st) return std::unexpected(st.error());
  const std::string_view s = status ? SweepStatusName(*status) : "";
  st->Bind(1, s).Bind(2, s).Bind(3, limit);
  return ReadRows(*st, ReadSweep);
}

Status Store::SetSweepStatus(int64_t id, SweepStatus status, const std::string& error) {
  std::lock_guard lock(mu_);
  Result<Statement> st;
  if (status == SweepStatus::kRunning) {
    st = conn_.Prepare(kSetSweepRunningSql);
    if (st) st->Bind(1, error).Bind(2, id);
  } else if (status == SweepStatus::kQueued) {
    st = conn_.Prepare(kSetSweepQueuedSql);
    if (st) st->Bind(1, error).Bind(2, id);
  } else {
    st = conn_.Prepare(kSetSweepFinalSql);
    if (st) st->Bind(1, SweepStatusName(status)).Bind(2, error).Bind(3, id);
  }
  if (!st) return std::unexpected(st.error());
  return st->Run();
}

Status Store::RequeueRunningSweeps() {
  std::lock_guard lock(mu_);
  return conn_.Exec(kRequeueRunningSql);
}

// The measurement row and its samples (inside the caller's transaction, with mu_ held); sets
// m.id and m.created_at. Shared by the whole-sweep and the per-task record paths.
Status Store::InsertMeasurementRows(tuner::Measurement& m) {
  auto st = conn_.Prepare(kInsertMeasurementSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, m.sweep_id).Bind(2, m.bucket).Bind(3, m.problem.dims.ToString()).Bind(4, m.config.ToString());
  st->Bind(5, tuner::OutcomeName(m.outcome)).Bind(6, m.detail).Bind(7, m.iterations);
  if (m.outcome == tuner::Outcome::kOk) {
    st->Bind(8, m.median_ns).Bind(9, m.cv);
  } else {
    st->BindNull(8).BindNull(9);
  }
  st->Bind(10, m.max_abs_err).Bind(11, m.max_rel_err);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  m.id = st->Int(0);
  m.created_at = st->Text(1);
  *st = Statement();  // finish the RETURNING statement before the next one
  auto ins = conn_.Prepare(kInsertSampleSql);
  if (!ins) return std::unexpected(ins.error());
  for (size_t i = 0; i < m.samples_ns.size(); ++i) {
    ins->Reset();
    ins->Bind(1, m.id).Bind(2, static_cast<int64_t>(i)).Bind(3, m.samples_ns[i]);
    if (auto s = ins->Run(); !s) return s;
  }
  return {};
}

Status Store::RecordMeasurement(tuner::Measurement& m, int64_t done, int64_t total) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    if (auto s = InsertMeasurementRows(m); !s) return s;
    auto prog = conn_.Prepare(kUpdateProgressSql);
    if (!prog) return std::unexpected(prog.error());
    prog->Bind(1, done).Bind(2, total).Bind(3, m.sweep_id);
    return prog->Run();
  });
}

Result<std::vector<tuner::Measurement>> Store::ListMeasurements(int64_t sweep_id, const std::string& bucket) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectMeasurementsSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, bucket);
  std::vector<tuner::Measurement> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    tuner::Measurement m;
    m.id = st->Int(0);
    m.sweep_id = st->Int(1);
    m.bucket = st->Text(2);
    auto dims = NamedInts::Parse(st->Text(3));
    auto config = NamedInts::Parse(st->Text(4));
    auto outcome = tuner::ParseOutcome(st->Text(5));
    if (!dims || !config || !outcome) {
      return MakeError(ErrorCode::kDataLoss, "measurement " + std::to_string(m.id) + " is malformed");
    }
    m.problem.dims = std::move(*dims);
    m.config = std::move(*config);
    m.outcome = *outcome;
    m.detail = st->Text(6);
    m.iterations = st->Int(7);
    m.median_ns = st->Double(8);
    m.cv = st->Double(9);
    m.max_abs_err = st->Double(10);
    m.max_rel_err = st->Double(11);
    m.created_at = st->Text(12);
    out.push_back(std::move(m));
  }
  auto samples = conn_.Prepare(kSelectSamplesSql);
  if (!samples) return std::unexpected(samples.error());
  samples->Bind(1, sweep_id).Bind(2, bucket);
  size_t i = 0;
  while (true) {
    auto row = samples->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    const int64_t id = samples->Int(0);
    while (i < out.size() && out[i].id < id) ++i;
    if (i < out.size() && out[i].id == id) out[i].samples_ns.push_back(samples->Double(1));
  }
  return out;
}

Status Store::UpsertTunedEntry(const tuner::TunedEntry& e) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kUpsertTunedSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, e.kernel).Bind(2, e.hardware_key).Bind(3, DTypeName(e.dtype)).Bind(4, e.bucket);
  st->Bind(5, e.bucket_version).Bind(6, e.config.ToString()).Bind(7, e.median_ns).Bind(8, e.samples);
  st->Bind(9, e.sweep_id).Bind(10, e.measurement_id).Bind(11, e.measured_at);
  return st->Run();
}

Result<std::vector<tuner::TunedEntry>> Store::ListTunedEntries(const std::string& kernel) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectTunedSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, kernel).Bind(2, kernel);
  return ReadRows(*st, ReadTunedEntry);
}


// --- Durable sweeps, overrides, operations (migration 0006) ------------------------------------
namespace {

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

Result<tuner::Measurement> ReadMeasurement(const Statement& st) {
  tuner::Measurement m;
  m.id = st.Int(0);
  m.sweep_id = st.Int(1);
  m.bucket = st.Text(2);
  auto dims = NamedInts::Parse(st.Text(3));
  auto config = NamedInts::Parse(st.Text(4));
  auto outcome = tuner::ParseOutcome(st.Text(5));
  if (!dims || !config || !outcome) {
    return MakeError(ErrorCode::kDataLoss, "measurement " + std::to_string(m.id) + " is malformed");
  }
  m.problem.dims = std::move(*dims);
  m.config = std::move(*config);
  m.outcome = *outcome;
  m.detail = st.Text(6);
  m.iterations = st.Int(7);
  m.median_ns = st.Double(8);
  m.cv = st.Double(9);
  m.max_abs_err = st.Double(10);
  m.max_rel_err = st.Double(11);
  m.created_at = st.Text(12);
  return m;
}

Result<std::vector<std::pair<std::string, int64_t>>> ReadCounts(Connection& conn, const char* sql,
                                                                 std::optional<int64_t> bind) {
  auto st = conn.Prepare(sql);
  if (!st) return std::unexpected(st.error());
  if (bind) st->Bind(1, *bind);
  std::vector<std::pair<std::string, int64_t>> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.emplace_back(st->Text(0), st->Int(1));
  }
  return out;
}

Status InsertTasks(Connection& conn, int64_t sweep_id, const std::vector<TaskPlan>& tasks) {
  auto st = conn.Prepare(kInsertTaskSql);
  if (!st) return std::unexpected(st.error());
  for (size_t i = 0; i < tasks.size(); ++i) {
    st->Reset();
    st->Bind(1, sweep_id).Bind(2, static_cast<int64_t>(i)).Bind(3, tasks[i].bucket);
    st->Bind(4, tasks[i].shape.ToString()).Bind(5, tasks[i].planned);
    if (auto s = st->Run(); !s) return s;
  }
  auto sync = conn.Prepare(kSyncSweepTotalSql);
  if (!sync) return std::unexpected(sync.error());
  sync->Bind(1, sweep_id);
  return sync->Run();
}

}  // namespace

Result<CreatedSweep> Store::CreateSweepWithTasks(const tuner::SweepRequest& request, int64_t hardware_id,
                                                 int bucket_version, const std::string& tool_version,
                                                 const std::vector<TaskPlan>& tasks,
                                                 const std::string& idempotency_key,
                                                 const std::string& canonical_request,
                                                 const std::function<Status()>& admit) {
  auto strategy = StrategyToStore(request.strategy);
  if (!strategy) return std::unexpected(strategy.error());
  std::lock_guard lock(mu_);
  CreatedSweep out;
  auto s = InTransaction([&]() -> Status {
    if (!idempotency_key.empty()) {
      auto sel = conn_.Prepare(kSelectIdempotencySql);
      if (!sel) return std::unexpected(sel.error());
      sel->Bind(1, idempotency_key);
      auto row = sel->Step();
      if (!row) return std::unexpected(row.error());
      if (*row) {
        if (sel->Text(0) != canonical_request) {
          return MakeError(ErrorCode::kAlreadyExists,
                           "Idempotency-Key was already used with a different request", "Idempotency-Key");
        }
        out.id = sel->Int(1);
        out.created = false;
        return {};
      }
    }
    if (admit) {
      if (auto s = admit(); !s) return s;
    }
    auto st = conn_.Prepare(kInsertSweepSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, request.kernel).Bind(2, DTypeName(request.dtype)).Bind(3, hardware_id).Bind(4, request.threads);
    st->Bind(5, *strategy).Bind(6, request.budget);
    st->Bind(7, static_cast<int64_t>(request.seed)).Bind(8, JoinShapes(request.shapes));
    st->Bind(9, bucket_version).Bind(10, tool_version).Bind(11, int64_t{0}).Bind(12, request.budget_seconds);
    if (auto r = st->Run(); !r) return r;
    out.id = conn_.LastInsertId();
    out.created = true;
    if (auto r = InsertTasks(conn_, out.id, tasks); !r) return r;
    if (!idempotency_key.empty()) {
      auto ins = conn_.Prepare(kInsertIdempotencySql);
      if (!ins) return std::unexpected(ins.error());
      ins->Bind(1, idempotency_key).Bind(2, canonical_request).Bind(3, out.id);
      if (auto r = ins->Run(); !r) return r;
    }
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return out;
}

Status Store::AddTasks(int64_t sweep_id, const std::vector<TaskPlan>& tasks) {
  std::lock_guard lock(mu_);
  return InTransaction([&] { return InsertTasks(conn_, sweep_id, tasks); });
}

Result<std::vector<TaskRecord>> Store::ListTasks(int64_t sweep_id) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kTaskColumns) + kSelectTasksSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id);
  return ReadRows(*st, ReadTask);
}

Result<std::optional<TaskRecord>> Store::LeaseNextTask() {
  std::lock_guard lock(mu_);
  std::optional<TaskRecord> out;
  auto s = InTransaction([&]() -> Status {
    auto st = conn_.Prepare(std::string(kTaskColumns) + kSelectNextTaskSql);
    if (!st) return std::unexpected(st.error());
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};
    auto t = ReadTask(*st);
    if (!t) return std::unexpected(t.error());
    *st = Statement();
    auto lease = conn_.Prepare(kLeaseTaskSql);
    if (!lease) return std::unexpected(lease.error());
    lease->Bind(1, t->id);
    if (auto r = lease->Run(); !r) return r;
    auto sweep = conn_.Prepare(kLeaseSweepSql);
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

Status Store::ReleaseTask(int64_t task_id) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kReleaseTaskSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, task_id);
  return st->Run();
}

Result<bool> Store::FinishTask(int64_t task_id, SweepStatus status, const std::string& error) {
  std::lock_guard lock(mu_);
  bool finished = false;
  auto s = InTransaction([&]() -> Status {
    auto st = conn_.Prepare(kFinishTaskSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, SweepStatusName(status)).Bind(2, error).Bind(3, task_id);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return {};  // no longer running: cancelled meanwhile
    const int64_t sweep_id = st->Int(0);
    *st = Statement();
    auto fin = conn_.Prepare(kFinishSweepIfDoneSql);
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

Status Store::RequeueInterrupted() {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    if (auto s = conn_.Exec(kRequeueTasksSql); !s) return s;
    return conn_.Exec(kRequeueRunningSql);
  });
}

Result<SweepRecord> Store::CancelSweep(int64_t id) {
  {
    std::lock_guard lock(mu_);
    bool changed = false;
    auto s = InTransaction([&]() -> Status {
      auto st = conn_.Prepare(kCancelSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id);
      if (auto r = st->Run(); !r) return r;
      changed = conn_.Changes() > 0;
      auto tasks = conn_.Prepare(kCancelTasksSql);
      if (!tasks) return std::unexpected(tasks.error());
      tasks->Bind(1, id);
      return tasks->Run();
    });
    if (!s) return std::unexpected(s.error());
    if (!changed) {
      // Either no such sweep or it already finished; GetSweep below tells which.
      auto st = conn_.Prepare(std::string(kSweepColumns) + "WHERE s.id = ?");
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id);
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (!*row) return NotFound("no sweep with id " + std::to_string(id), "id");
      return MakeError(ErrorCode::kFailedPrecondition,
                       "sweep " + std::to_string(id) + " already finished (" + st->Text(8) + ")", "id");
    }
  }
  return GetSweep(id);
}

Status Store::RecordTaskMeasurement(tuner::Measurement& m, int64_t task_id, int64_t task_total) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    if (auto s = InsertMeasurementRows(m); !s) return s;
    auto bump = conn_.Prepare(kBumpProgressSql);
    if (!bump) return std::unexpected(bump.error());
    bump->Bind(1, m.sweep_id);
    if (auto s = bump->Run(); !s) return s;
    // The engine's own count is authoritative (a strategy may plan fewer configs than the
    // estimate made at submission); keep the sweep's total in step with it.
    auto planned = conn_.Prepare(kSetTaskPlannedSql);
    if (!planned) return std::unexpected(planned.error());
    planned->Bind(1, task_total).Bind(2, task_id).Bind(3, task_total);
    if (auto s = planned->Run(); !s) return s;
    if (conn_.Changes() > 0) {
      auto sync = conn_.Prepare(kSyncSweepTotalSql);
      if (!sync) return std::unexpected(sync.error());
      sync->Bind(1, m.sweep_id);
      return sync->Run();
    }
    return {};
  });
}

Result<SweepProgress> Store::GetProgress(int64_t sweep_id) {
  std::lock_guard lock(mu_);
  SweepProgress p;
  auto st = conn_.Prepare(kProgressSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id);
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
  auto counts = ReadCounts(conn_, kOutcomeCountsSql, sweep_id);
  if (!counts) return std::unexpected(counts.error());
  p.by_outcome = std::move(*counts);
  return p;
}

Result<std::vector<tuner::Measurement>> Store::ListPriorMeasurements(int64_t sweep_id, int before_ordinal) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kMeasurementColumns) + kSelectPriorSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, int64_t{before_ordinal});
  return ReadRows(*st, ReadMeasurement);
}

Result<std::vector<tuner::Measurement>> Store::ListMeasurementsPage(int64_t sweep_id, int64_t after_id,
                                                                    int64_t limit) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kMeasurementColumns) + kSelectMeasurementPageSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, after_id).Bind(3, limit);
  auto rows = ReadRows(*st, ReadMeasurement);
  if (!rows) return std::unexpected(rows.error());
  std::vector<tuner::Measurement> out = std::move(*rows);
  if (out.empty()) return out;
  auto samples = conn_.Prepare(kSelectSamplesRangeSql);
  if (!samples) return std::unexpected(samples.error());
  samples->Bind(1, out.front().id).Bind(2, out.back().id);
  size_t i = 0;
  while (true) {
    auto row = samples->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    const int64_t id = samples->Int(0);
    while (i < out.size() && out[i].id < id) ++i;
    if (i < out.size() && out[i].id == id) out[i].samples_ns.push_back(samples->Double(1));
  }
  return out;
}

Result<std::vector<SweepRecord>> Store::ListSweepsPage(std::optional<SweepStatus> status, int64_t after_id,
                                                      int64_t limit) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(std::string(kSweepColumns) + kSelectSweepPageSql);
  if (!st) return std::unexpected(st.error());
  const std::string_view s = status ? SweepStatusName(*status) : "";
  st->Bind(1, s).Bind(2, s).Bind(3, after_id).Bind(4, limit);
  return ReadRows(*st, ReadSweep);
}

Result<OverrideRecord> Store::UpsertOverride(const OverrideRecord& o) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kUpsertOverrideSql);
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

Status Store::DeleteOverride(int64_t id) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kDeleteOverrideSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return NotFound("no override with id " + std::to_string(id), "id");
  return {};
}

Result<std::vector<OverrideRecord>> Store::ListOverrides() {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectOverridesSql);
  if (!st) return std::unexpected(st.error());
  std::vector<OverrideRecord> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    OverrideRecord o;
    o.id = st->Int(0);
    o.kernel = st->Text(1);
    o.hardware_key = st->Text(2);
    auto dtype = ParseDType(st->Text(3));
    auto config = NamedInts::Parse(st->Text(5));
    if (!dtype || !config) return MakeError(ErrorCode::kDataLoss, "override " + std::to_string(o.id) + " is malformed");
    o.dtype = *dtype;
    o.bucket = st->Text(4);
    o.config = std::move(*config);
    o.reason = st->Text(6);
    o.expires_at = st->Text(7);
    o.created_at = st->Text(8);
    out.push_back(std::move(o));
  }
  return out;
}

Result<std::vector<HardwareRecord>> Store::ListHardware() {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectHardwareSql);
  if (!st) return std::unexpected(st.error());
  std::vector<HardwareRecord> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    HardwareRecord h;
    h.id = st->Int(0);
    h.key = st->Text(1);
    h.profile.cpu.arch = st->Text(2);
    h.profile.cpu.isa = st->Text(3);
    h.profile.cpu.vendor = st->Text(4);
    h.profile.cpu.family = static_cast<int>(st->Int(5));
    h.profile.cpu.model = static_cast<int>(st->Int(6));
    h.profile.model_name = st->Text(7);
    h.profile.cores = static_cast<int>(st->Int(8));
    h.profile.l1d_bytes = st->Int(9);
    h.profile.l2_bytes = st->Int(10);
    h.profile.l3_bytes = st->Int(11);
    h.profile.threads = static_cast<int>(st->Int(12));
    h.first_seen_at = st->Text(13);
    out.push_back(std::move(h));
  }
  return out;
}

Result<StoreStats> Store::Stats() {
  std::lock_guard lock(mu_);
  StoreStats out;
  auto sweeps = ReadCounts(conn_, kSweepsByStatusSql, std::nullopt);
  if (!sweeps) return std::unexpected(sweeps.error());
  out.sweeps_by_status = std::move(*sweeps);
  auto outcomes = ReadCounts(conn_, kMeasurementsByOutcomeSql, std::nullopt);
  if (!outcomes) return std::unexpected(outcomes.error());
  out.measurements_by_outcome = std::move(*outcomes);
  auto st = conn_.Prepare(kDbBytesSql);
  if (!st) return std::unexpected(st.error());
  if (auto row = st->Step(); row && *row) out.db_bytes = st->Int(0);
  return out;
}

Status Store::BackupTo(const std::string& path) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kBackupSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, path);
  if (auto s = st->Run(); !s) {
    return MakeError(ErrorCode::kFailedPrecondition, "backup to " + path + " failed: " + s.error().message, "path");
  }
  return {};
}

Result<std::string> Store::IntegrityCheck() {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kIntegrityCheckSql);
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

Result<std::optional<tuner::TunedEntry>> Store::GetTunedEntry(const std::string& kernel, const std::string& hardware_key,
                                                              DType dtype, const std::string& bucket) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectTunedOneSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, kernel).Bind(2, hardware_key).Bind(3, DTypeName(dtype)).Bind(4, bucket);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<tuner::TunedEntry>();
  auto e = ReadTunedEntry(*st);
  if (!e) return std::unexpected(e.error());
  return std::optional<tuner::TunedEntry>(std::move(*e));
}

Status Store::SetSweepEnvironment(int64_t id, const tuner::SweepEnvironment& env) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSetSweepEnvironmentSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, env.load_average).Bind(2, env.affinity).Bind(3, env.governor).Bind(4, env.compiler);
  st->Bind(5, env.build_flags).Bind(6, id);
  return st->Run();
}

Status Store::RecordFinalRound(const tuner::FinalRound& round) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    auto del = conn_.Prepare(kDeleteFinalRoundSql);
    if (!del) return std::unexpected(del.error());
    del->Bind(1, round.sweep_id).Bind(2, round.bucket);
    if (auto s = del->Run(); !s) return s;
    auto ins = conn_.Prepare(kInsertFinalRoundSql);
    if (!ins) return std::unexpected(ins.error());
    for (size_t i = 0; i < round.candidates.size(); ++i) {
      const tuner::Measurement& m = round.candidates[i];
      ins->Reset();
      ins->Bind(1, round.sweep_id).Bind(2, round.bucket).Bind(3, m.config.ToString()).Bind(4, static_cast<int64_t>(i));
      ins->Bind(5, static_cast<int64_t>(round.incumbent && *round.incumbent == m.config));
      ins->Bind(6, static_cast<int64_t>(round.chosen == m.config)).Bind(7, tuner::OutcomeName(m.outcome));
      ins->Bind(8, m.iterations).Bind(9, static_cast<int64_t>(m.samples_ns.size()));
      if (m.outcome == tuner::Outcome::kOk) {
        ins->Bind(10, m.median_ns).Bind(11, m.cv);
      } else {
        ins->BindNull(10).BindNull(11);
      }
      ins->Bind(12, round.noise_band).Bind(13, round.decision);
      if (auto s = ins->Run(); !s) return s;
    }
    return Status{};
  });
}

Result<tuner::FinalRound> Store::GetFinalRound(int64_t sweep_id, const std::string& bucket) {
  std::lock_guard lock(mu_);
  auto st = conn_.Prepare(kSelectFinalRoundSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, bucket);
  tuner::FinalRound round;
  round.sweep_id = sweep_id;
  round.bucket = bucket;
  bool any = false;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto config = NamedInts::Parse(st->Text(0));
    auto outcome = tuner::ParseOutcome(st->Text(3));
    if (!config || !outcome) return MakeError(ErrorCode::kDataLoss, "final round of " + bucket + " is malformed");
    tuner::Measurement m;
    m.sweep_id = sweep_id;
    m.bucket = bucket;
    m.config = *config;
    m.outcome = *outcome;
    m.iterations = st->Int(4);
    m.median_ns = st->Double(5);
    m.cv = st->Double(6);
    if (st->Int(1) != 0) round.incumbent = *config;
    if (st->Int(2) != 0) round.chosen = *config;
    round.noise_band = st->Double(7);
    round.decision = st->Text(8);
    round.candidates.push_back(std::move(m));
    any = true;
  }
  if (!any) return NotFound("no final round for sweep " + std::to_string(sweep_id) + " bucket " + bucket, "bucket");
  return round;
}

}  // namespace blocktune::store
