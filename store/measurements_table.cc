// MeasurementsTable and its SQL; see measurements_table.h.
#include "store/measurements_table.h"

#include <map>

#include "store/rows.h"
#include "store/tasks_table.h"

namespace blocktune::store {
namespace {

constexpr char kInsertMeasurementSql[] =
    "INSERT INTO measurements (sweep_id, bucket, problem, config, outcome, detail, iterations, median_ns, cv, "
    "max_abs_err, max_rel_err, fingerprint, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "RETURNING id, created_at";
constexpr char kInsertSampleSql[] =
    "INSERT INTO samples (measurement_id, repetition, ns_per_iteration) VALUES (?, ?, ?)";
constexpr char kSweepClaimSql[] = "SELECT COALESCE(owner, ''), status FROM sweeps WHERE id = ?";
constexpr char kBumpProgressSql[] = "UPDATE sweeps SET progress_done = progress_done + 1 WHERE id = ?";
constexpr char kSetTaskPlannedSql[] = "UPDATE sweep_tasks SET planned = ? WHERE id = ? AND planned != ?";
constexpr char kMeasurementColumns[] =
    "SELECT id, sweep_id, bucket, problem, config, outcome, detail, iterations, COALESCE(median_ns, 0), "
    "COALESCE(cv, 0), COALESCE(max_abs_err, 0), COALESCE(max_rel_err, 0), created_at, COALESCE(fingerprint, '') "
    "FROM measurements ";
constexpr char kSelectBucketSql[] = "WHERE sweep_id = ? AND bucket = ? ORDER BY id";
constexpr char kSelectBucketSamplesSql[] =
    "SELECT m.id, s.ns_per_iteration FROM samples s JOIN measurements m ON m.id = s.measurement_id "
    "WHERE m.sweep_id = ? AND m.bucket = ? ORDER BY m.id, s.repetition";
constexpr char kSelectPageSql[] = "WHERE sweep_id = ? AND id > ? ORDER BY id LIMIT ?";
constexpr char kSelectSamplesRangeSql[] =
    "SELECT measurement_id, ns_per_iteration FROM samples WHERE measurement_id BETWEEN ? AND ? "
    "ORDER BY measurement_id, repetition";
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

// The cross-profile prior of sweep ?1 (ListOtherProfiles): earlier sweeps of its kernel, dtype
// and bucket version under another hardware key, with the key, then their passing measurements.
constexpr char kSelectOtherProfileSweepsSql[] =
    "SELECT o.id, h.hardware_key FROM sweeps o JOIN sweeps s ON s.id = ?1 "
    "JOIN hardware_profiles h ON h.id = o.hardware_id WHERE o.id < s.id AND o.kernel = s.kernel AND "
    "o.dtype = s.dtype AND o.hardware_id != s.hardware_id AND o.bucket_version = s.bucket_version ORDER BY o.id";
constexpr char kSelectOtherProfilesSql[] =
    "WHERE outcome = 'ok' AND median_ns > 0 AND sweep_id IN (SELECT o.id FROM sweeps o JOIN sweeps s ON s.id = ?1 "
    "WHERE o.id < s.id AND o.kernel = s.kernel AND o.dtype = s.dtype AND o.hardware_id != s.hardware_id AND "
    "o.bucket_version = s.bucket_version) ORDER BY id";

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
  m.fingerprint = st.Text(13);
  return m;
}

// Appends the samples `st` yields as (measurement id, ns) rows, ordered by id, to `out`
// (ordered by id too).
Status AttachSamples(Statement& st, std::vector<tuner::Measurement>& out) {
  size_t i = 0;
  while (true) {
    auto row = st.Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    const int64_t id = st.Int(0);
    while (i < out.size() && out[i].id < id) ++i;
    if (i < out.size() && out[i].id == id) out[i].samples_ns.push_back(st.Double(1));
  }
  return {};
}

}  // namespace

Status MeasurementsTable::Record(tuner::Measurement& m, int64_t task_id, int64_t task_total, const std::string& owner) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    if (!owner.empty()) {
      // Under the write lock: no other executor can take the sweep between this check and the
      // commit, so a config is stored by the sweep's one owner, once.
      auto claim = conn.Prepare(kSweepClaimSql);
      if (!claim) return std::unexpected(claim.error());
      claim->Bind(1, m.sweep_id);
      auto row = claim->Step();
      if (!row) return std::unexpected(row.error());
      if (!*row) return NotFound("no sweep with id " + std::to_string(m.sweep_id), "id");
      if (claim->Text(0) != owner || (claim->Text(1) != "running" && claim->Text(1) != "queued")) {
        return LostClaim(m.sweep_id, claim->Text(0).empty() ? "no executor" : "executor " + claim->Text(0),
                         claim->Text(1));
      }
    }
    auto st = conn.Prepare(kInsertMeasurementSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, m.sweep_id).Bind(2, m.bucket).Bind(3, m.problem.dims.ToString()).Bind(4, m.config.ToString());
    st->Bind(5, tuner::OutcomeName(m.outcome)).Bind(6, m.detail).Bind(7, m.iterations);
    if (m.outcome == tuner::Outcome::kOk) {
      st->Bind(8, m.median_ns).Bind(9, m.cv);
    } else {
      st->BindNull(8).BindNull(9);
    }
    st->Bind(10, m.max_abs_err).Bind(11, m.max_rel_err);
    if (m.fingerprint.empty()) {
      st->BindNull(12);
    } else {
      st->Bind(12, m.fingerprint);
    }
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    m.id = st->Int(0);
    m.created_at = st->Text(1);
    *st = Statement();  // finish the RETURNING statement before the next one
    auto ins = conn.Prepare(kInsertSampleSql);
    if (!ins) return std::unexpected(ins.error());
    for (size_t i = 0; i < m.samples_ns.size(); ++i) {
      ins->Reset();
      ins->Bind(1, m.id).Bind(2, static_cast<int64_t>(i)).Bind(3, m.samples_ns[i]);
      if (auto s = ins->Run(); !s) return s;
    }
    auto bump = conn.Prepare(kBumpProgressSql);
    if (!bump) return std::unexpected(bump.error());
    bump->Bind(1, m.sweep_id);
    if (auto s = bump->Run(); !s) return s;
    // The engine's own count is authoritative (a strategy may plan fewer configs than the
    // estimate made at submission); keep the sweep's total in step with it.
    auto planned = conn.Prepare(kSetTaskPlannedSql);
    if (!planned) return std::unexpected(planned.error());
    planned->Bind(1, task_total).Bind(2, task_id).Bind(3, task_total);
    if (auto s = planned->Run(); !s) return s;
    if (conn.Changes() > 0) return SyncPlannedTotal(conn, m.sweep_id);
    return {};
  });
}

Result<std::vector<tuner::Measurement>> MeasurementsTable::ListBucket(int64_t sweep_id, const std::string& bucket,
                                                                      bool with_samples) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kMeasurementColumns) + kSelectBucketSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, bucket);
  auto rows = ReadRows(*st, ReadMeasurement);
  if (!rows) return std::unexpected(rows.error());
  if (!with_samples) return rows;
  auto samples = db_.conn().Prepare(kSelectBucketSamplesSql);
  if (!samples) return std::unexpected(samples.error());
  samples->Bind(1, sweep_id).Bind(2, bucket);
  if (auto s = AttachSamples(*samples, *rows); !s) return std::unexpected(s.error());
  return rows;
}

Result<std::vector<tuner::Measurement>> MeasurementsTable::ListPage(int64_t sweep_id, int64_t after_id, int64_t limit) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kMeasurementColumns) + kSelectPageSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, after_id).Bind(3, limit);
  auto rows = ReadRows(*st, ReadMeasurement);
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty()) return rows;
  auto samples = db_.conn().Prepare(kSelectSamplesRangeSql);
  if (!samples) return std::unexpected(samples.error());
  samples->Bind(1, rows->front().id).Bind(2, rows->back().id);
  if (auto s = AttachSamples(*samples, *rows); !s) return std::unexpected(s.error());
  return rows;
}

Result<std::vector<tuner::Measurement>> MeasurementsTable::ListPrior(int64_t sweep_id, int before_ordinal) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(std::string(kMeasurementColumns) + kSelectPriorSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, int64_t{before_ordinal});
  return ReadRows(*st, ReadMeasurement);
}

Result<std::vector<tuner::search::ProfileMeasurement>> MeasurementsTable::ListOtherProfiles(int64_t sweep_id) {
  auto lock = db_.Lock();
  auto keys_st = db_.conn().Prepare(kSelectOtherProfileSweepsSql);
  if (!keys_st) return std::unexpected(keys_st.error());
  keys_st->Bind(1, sweep_id);
  std::map<int64_t, std::string> key_of;
  while (true) {
    auto row = keys_st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    key_of[keys_st->Int(0)] = keys_st->Text(1);
  }
  std::vector<tuner::search::ProfileMeasurement> out;
  if (key_of.empty()) return out;
  auto st = db_.conn().Prepare(std::string(kMeasurementColumns) + kSelectOtherProfilesSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id);
  auto rows = ReadRows(*st, ReadMeasurement);
  if (!rows) return std::unexpected(rows.error());
  out.reserve(rows->size());
  for (tuner::Measurement& m : *rows) {
    auto it = key_of.find(m.sweep_id);
    if (it == key_of.end()) continue;
    out.push_back(tuner::search::ProfileMeasurement{it->second, std::move(m)});
  }
  return out;
}

}  // namespace blocktune::store
