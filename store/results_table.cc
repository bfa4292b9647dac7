// ResultsTable and its SQL; see results_table.h.
#include "store/results_table.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/batch_digest.h"
#include "store/pool_winner.h"
#include "store/rows.h"
#include "tuner/lookup.h"

namespace blocktune::store {
namespace {

constexpr char kFindBatchSql[] = "SELECT measurements, inserted, digest FROM ingest_batches WHERE batch_id = ?";
constexpr char kInsertBatchSql[] =
    "INSERT INTO ingest_batches (batch_id, sweep_uid, measurements, inserted, created_at, digest) "
    "VALUES (?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?)";
constexpr char kUpsertHardwareSql[] =
    "INSERT INTO hardware_profiles (hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, "
    "l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "ON CONFLICT (hardware_key) DO NOTHING";
constexpr char kSelectHardwareIdSql[] = "SELECT id FROM hardware_profiles WHERE hardware_key = ?";
constexpr char kFindSweepSql[] = "SELECT id, imported FROM sweeps WHERE uid = ?";
constexpr char kInsertImportedSweepSql[] =
    "INSERT INTO sweeps (kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status, progress_done, "
    "progress_total, error, bucket_version, tool_version, created_at, started_at, finished_at, budget_seconds, "
    "env_load_average, env_affinity, env_governor, env_compiler, env_build_flags, uid, host, shard_index, "
    "shard_count, imported, device) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, 1, ?)";
// An imported sweep follows its source (a sweep pushed while it ran, then again when done).
constexpr char kUpdateImportedSweepSql[] =
    "UPDATE sweeps SET status = ?, progress_total = ?, error = ?, started_at = NULLIF(?, ''), "
    "finished_at = NULLIF(?, '') WHERE id = ? AND imported = 1";
constexpr char kInsertMeasurementSql[] =
    "INSERT INTO measurements (sweep_id, bucket, problem, config, outcome, detail, iterations, median_ns, cv, "
    "max_abs_err, max_rel_err, created_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, '')) "
    "ON CONFLICT (sweep_id, bucket, config) DO NOTHING RETURNING id";
constexpr char kInsertSampleSql[] =
    "INSERT INTO samples (measurement_id, repetition, ns_per_iteration) VALUES (?, ?, ?)";
constexpr char kCountImportedSql[] =
    "UPDATE sweeps SET progress_done = (SELECT COUNT(*) FROM measurements WHERE sweep_id = ?1) "
    "WHERE id = ?1 AND imported = 1";
// One pool: every sweep's measurements of (kernel, dtype, hardware, bucket version) in a bucket.
constexpr char kPoolSql[] =
    "SELECT m.id, m.sweep_id, m.config, m.outcome, COALESCE(m.median_ns, 0), m.created_at, "
    "COALESCE(m.fingerprint, '') FROM measurements m "
    "JOIN sweeps s ON s.id = m.sweep_id WHERE s.kernel = ?1 AND s.dtype = ?2 AND s.hardware_id = ?3 AND "
    "s.bucket_version = ?4 AND m.bucket = ?5 ORDER BY m.id";
constexpr char kPoolSamplesSql[] =
    "SELECT sa.measurement_id, sa.ns_per_iteration FROM samples sa JOIN measurements m ON m.id = sa.measurement_id "
    "JOIN sweeps s ON s.id = m.sweep_id WHERE s.kernel = ?1 AND s.dtype = ?2 AND s.hardware_id = ?3 AND "
    "s.bucket_version = ?4 AND m.bucket = ?5 AND m.outcome = 'ok' ORDER BY sa.measurement_id, sa.repetition";
constexpr char kUpsertPoolWinnerSql[] =
    "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
    "sweep_id, measurement_id, measured_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, '')) "
    "ON CONFLICT (kernel, hardware_key, dtype, bucket) DO UPDATE SET bucket_version = excluded.bucket_version, "
    "config = excluded.config, median_ns = excluded.median_ns, samples = excluded.samples, "
    "sweep_id = excluded.sweep_id, measurement_id = excluded.measurement_id, measured_at = excluded.measured_at, "
    "fingerprint = excluded.fingerprint";

}  // namespace

Result<ApplyResult> ResultsTable::Apply(const ResultsBatch& b) {
  if (auto s = CheckBatch(b); !s) return std::unexpected(s.error());
  const std::string digest = BatchDigest(b);
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  ApplyResult out;
  out.measurements = static_cast<int64_t>(b.measurements.size());
  auto status = db_.InTransaction([&]() -> Status {
    {
      auto st = conn.Prepare(kFindBatchSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, b.batch_id);
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (*row) {
        // A replay only if it carries what the id carried the first time ('' : recorded
        // before digests, contents unknown); otherwise the sender reused an id for new data,
        // which a replay answer would silently drop.
        const std::string first = st->Text(2);
        if (!first.empty() && first != digest) {
          return MakeError(ErrorCode::kAlreadyExists,
                           "batch_id '" + b.batch_id + "' was applied before with different contents (" +
                               std::to_string(st->Int(0)) + " measurements then, " +
                               std::to_string(b.measurements.size()) +
                               " now); nothing was written: send new data under a new batch_id",
                           "batch_id");
        }
        out.replayed = true;
        out.measurements = st->Int(0);
        out.inserted = st->Int(1);
      }
    }
    if (out.replayed) {
      auto st = conn.Prepare(kFindSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, b.sweep.uid);
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (*row) out.sweep_id = st->Int(0);
      return {};
    }
    // The profile: one row per hardware key, whichever host reported it first.
    const HardwareProfile& hw = b.hardware;
    int64_t hardware_id = 0;
    {
      auto st = conn.Prepare(kUpsertHardwareSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, hw.Key()).Bind(2, hw.cpu.arch).Bind(3, hw.cpu.isa).Bind(4, hw.cpu.vendor).Bind(5, hw.cpu.family);
      st->Bind(6, hw.cpu.model).Bind(7, hw.model_name).Bind(8, hw.cores).Bind(9, hw.l1d_bytes).Bind(10, hw.l2_bytes);
      st->Bind(11, hw.l3_bytes).Bind(12, hw.threads);
      if (auto r = st->Run(); !r) return r;
      auto sel = conn.Prepare(kSelectHardwareIdSql);
      if (!sel) return std::unexpected(sel.error());
      sel->Bind(1, hw.Key());
      auto row = sel->Step();
      if (!row) return std::unexpected(row.error());
      if (!*row) return Internal("hardware profile vanished after insert");
      hardware_id = sel->Int(0);
    }
    // The sweep, by its identity.
    const SweepRecord& s = b.sweep;
    bool imported = true;
    {
      auto st = conn.Prepare(kFindSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, s.uid);
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (*row) {
        out.sweep_id = st->Int(0);
        imported = st->Int(1) != 0;
      }
    }
    const std::string_view status_name = SweepStatusName(s.status);
    if (out.sweep_id == 0) {
      auto st = conn.Prepare(kInsertImportedSweepSql);
      if (!st) return std::unexpected(st.error());
      const tuner::SweepRequest& r = s.request;
      std::string shapes;
      for (const auto& sh : r.shapes) shapes += (shapes.empty() ? "" : ";") + sh.ToString();
      st->Bind(1, r.kernel).Bind(2, DTypeName(r.dtype)).Bind(3, hardware_id).Bind(4, r.threads);
      st->Bind(5, tuner::StrategyName(r.strategy)).Bind(6, r.budget).Bind(7, static_cast<int64_t>(r.seed));
      st->Bind(8, shapes).Bind(9, status_name).Bind(10, s.progress_total).Bind(11, s.error);
      st->Bind(12, s.bucket_version).Bind(13, s.environment.tool_version).Bind(14, s.created_at);
      st->Bind(15, s.started_at).Bind(16, s.finished_at).Bind(17, r.budget_seconds);
      st->Bind(18, s.environment.load_average).Bind(19, s.environment.affinity).Bind(20, s.environment.governor);
      st->Bind(21, s.environment.compiler).Bind(22, s.environment.build_flags).Bind(23, s.uid).Bind(24, s.host);
      st->Bind(25, r.shard_index).Bind(26, r.shard_count).Bind(27, s.device);
      if (auto x = st->Run(); !x) return x;
      out.sweep_id = conn.LastInsertId();
    } else if (imported) {
      auto st = conn.Prepare(kUpdateImportedSweepSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, status_name).Bind(2, s.progress_total).Bind(3, s.error).Bind(4, s.started_at);
      st->Bind(5, s.finished_at).Bind(6, out.sweep_id);
      if (auto x = st->Run(); !x) return x;
    }
    // Every measurement not stored yet, with its samples.
    std::set<std::string> touched;
    {
      auto ins = conn.Prepare(kInsertMeasurementSql);
      if (!ins) return std::unexpected(ins.error());
      auto sample = conn.Prepare(kInsertSampleSql);
      if (!sample) return std::unexpected(sample.error());
      for (const tuner::Measurement& m : b.measurements) {
        ins->Reset();
        ins->Bind(1, out.sweep_id).Bind(2, m.bucket).Bind(3, m.problem.dims.ToString()).Bind(4, m.config.ToString());
        ins->Bind(5, tuner::OutcomeName(m.outcome)).Bind(6, m.detail).Bind(7, m.iterations);
        if (m.outcome == tuner::Outcome::kOk) {
          ins->Bind(8, m.median_ns).Bind(9, m.cv);
        } else {
          ins->BindNull(8).BindNull(9);
        }
        ins->Bind(10, m.max_abs_err).Bind(11, m.max_rel_err);
        ins->Bind(12, m.created_at.empty() ? tuner::UtcNow() : m.created_at).Bind(13, m.fingerprint);
        auto row = ins->Step();
        if (!row) return std::unexpected(row.error());
        if (!*row) continue;  // stored before: (sweep, bucket, config) is the measurement's identity
        const int64_t id = ins->Int(0);
        if (auto done = ins->Step(); !done) return std::unexpected(done.error());
        ++out.inserted;
        touched.insert(m.bucket);
        for (size_t i = 0; i < m.samples_ns.size(); ++i) {
          sample->Reset();
          sample->Bind(1, id).Bind(2, static_cast<int64_t>(i)).Bind(3, m.samples_ns[i]);
          if (auto x = sample->Run(); !x) return x;
        }
      }
    }
    {
      auto st = conn.Prepare(kCountImportedSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, out.sweep_id);
      if (auto x = st->Run(); !x) return x;
    }
    // Winners of the buckets that changed, from every sweep of this profile.
    for (const std::string& bucket : touched) {
      std::vector<tuner::Measurement> pool;
      auto st = conn.Prepare(kPoolSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, s.request.kernel).Bind(2, DTypeName(s.request.dtype)).Bind(3, hardware_id);
      st->Bind(4, s.bucket_version).Bind(5, bucket);
      auto rows = ReadRows(*st, [&](const Statement& q) -> Result<tuner::Measurement> {
        tuner::Measurement m;
        m.id = q.Int(0);
        m.sweep_id = q.Int(1);
        m.bucket = bucket;
        auto config = NamedInts::Parse(q.Text(2));
        auto outcome = tuner::ParseOutcome(q.Text(3));
        if (!config || !outcome)
          return MakeError(ErrorCode::kDataLoss, "measurement " + std::to_string(m.id) + " is malformed");
        m.config = std::move(*config);
        m.outcome = *outcome;
        m.median_ns = q.Double(4);
        m.created_at = q.Text(5);
        m.fingerprint = q.Text(6);
        return m;
      });
      if (!rows) return std::unexpected(rows.error());
      pool = std::move(*rows);
      auto samples = conn.Prepare(kPoolSamplesSql);
      if (!samples) return std::unexpected(samples.error());
      samples->Bind(1, s.request.kernel).Bind(2, DTypeName(s.request.dtype)).Bind(3, hardware_id);
      samples->Bind(4, s.bucket_version).Bind(5, bucket);
      size_t i = 0;
      while (true) {
        auto row = samples->Step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        const int64_t id = samples->Int(0);
        while (i < pool.size() && pool[i].id < id) ++i;
        if (i < pool.size() && pool[i].id == id) pool[i].samples_ns.push_back(samples->Double(1));
      }
      auto winner = PoolWinner(pool);
      if (!winner) continue;
      auto up = conn.Prepare(kUpsertPoolWinnerSql);
      if (!up) return std::unexpected(up.error());
      up->Bind(1, s.request.kernel).Bind(2, hw.Key()).Bind(3, DTypeName(s.request.dtype)).Bind(4, bucket);
      up->Bind(5, s.bucket_version).Bind(6, winner->config.ToString()).Bind(7, winner->median_ns);
      up->Bind(8, winner->samples).Bind(9, winner->sweep_id).Bind(10, winner->measurement_id);
      up->Bind(11, winner->measured_at).Bind(12, winner->fingerprint);
      if (auto x = up->Run(); !x) return x;
      ++out.winners;
    }
    auto st = conn.Prepare(kInsertBatchSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, b.batch_id).Bind(2, s.uid).Bind(3, out.measurements).Bind(4, out.inserted).Bind(5, digest);
    return st->Run();
  });
  if (!status) return std::unexpected(status.error());
  return out;
}

}  // namespace blocktune::store
