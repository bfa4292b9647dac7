// ResultsTable, ResultsReader and their SQL; see results.h.
#include "store/results.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "kernels/core/kernel_spec.h"
#include "store/migrate.h"
#include "store/rows.h"
#include "tuner/check.h"
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
    "shard_count, imported) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, 1)";
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

// The reader's side.
constexpr char kReadHeaderSql[] =
    "SELECT application_id, user_version FROM pragma_application_id(), pragma_user_version()";
constexpr char kReadSweepsSql[] =
    "SELECT s.id, s.kernel, s.dtype, s.threads, s.strategy, s.budget, s.seed, s.shapes, s.status, s.progress_total, "
    "s.error, s.created_at, COALESCE(s.started_at, ''), COALESCE(s.finished_at, ''), s.budget_seconds, "
    "s.env_load_average, s.env_affinity, s.env_governor, s.env_compiler, s.env_build_flags, s.tool_version, s.uid, "
    "s.host, s.shard_index, s.shard_count, s.bucket_version, h.hardware_key, h.arch, h.isa, h.vendor, h.cpu_family, "
    "h.cpu_model, h.model_name, h.cores, h.l1d_bytes, h.l2_bytes, h.l3_bytes, h.threads "
    "FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id ORDER BY s.id";
constexpr char kReadMeasurementsSql[] =
    "SELECT id, bucket, problem, config, outcome, detail, iterations, COALESCE(median_ns, 0), COALESCE(cv, 0), "
    "COALESCE(max_abs_err, 0), COALESCE(max_rel_err, 0), created_at, COALESCE(fingerprint, '') FROM measurements "
    "WHERE sweep_id = ? AND id > ? ORDER BY id LIMIT ?";
constexpr char kReadSamplesSql[] =
    "SELECT measurement_id, ns_per_iteration FROM samples WHERE measurement_id BETWEEN ? AND ? "
    "ORDER BY measurement_id, repetition";
constexpr char kCountsSql[] = "SELECT (SELECT COUNT(*) FROM measurements), (SELECT COUNT(*) FROM sweeps)";

bool IdentityOk(const std::string& s, size_t min_len, size_t max_len) {
  if (s.size() < min_len || s.size() > max_len) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
           c == ':' || c == '.';
  });
}

}  // namespace

Status CheckBatch(const ResultsBatch& b) {
  if (!IdentityOk(b.batch_id, 1, 200))
    return InvalidArgument("batch_id must be 1-200 characters of [0-9A-Za-z-_:.]", "batch_id");
  const SweepRecord& s = b.sweep;
  if (!IdentityOk(s.uid, 8, 64))
    return InvalidArgument("sweep uid must be 8-64 characters of [0-9A-Za-z-_:.]", "sweep.uid");
  const KernelSpec* spec = FindKernel(s.request.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + s.request.kernel + "'", "sweep.kernel");
  if (s.request.threads < 1 || s.request.threads > 1024)
    return InvalidArgument("threads must be in [1, 1024]", "sweep.threads");
  if (s.request.shard_count < 1 || s.request.shard_index < 0 || s.request.shard_index >= s.request.shard_count) {
    return InvalidArgument("shard must satisfy 0 <= index < count", "sweep.shard");
  }
  if (s.host.size() > 255) return InvalidArgument("host is longer than 255 characters", "sweep.host");
  if (b.hardware.Key() != s.hardware_key) {
    return InvalidArgument("hardware profile's key " + b.hardware.Key() + " is not the sweep's " + s.hardware_key,
                           "hardware");
  }
  if (b.hardware.threads != s.request.threads)
    return InvalidArgument("hardware threads differ from the sweep's", "hardware.threads");
  if (b.measurements.size() > kMaxBatchMeasurements) {
    return InvalidArgument("at most " + std::to_string(kMaxBatchMeasurements) + " measurements per batch",
                           "measurements");
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < b.measurements.size(); ++i) {
    const tuner::Measurement& m = b.measurements[i];
    const std::string at = "measurements[" + std::to_string(i) + "]";
    if (m.bucket.empty() || m.bucket.size() > 256)
      return InvalidArgument("bucket must be 1-256 characters", at + ".bucket");
    if (m.config.empty()) return InvalidArgument("config is empty", at + ".config");
    if (m.samples_ns.size() > kMaxSamplesPerMeasurement) {
      return InvalidArgument("at most " + std::to_string(kMaxSamplesPerMeasurement) + " samples", at + ".samples");
    }
    if (!seen.emplace(m.bucket, m.config.ToString()).second) {
      return InvalidArgument("the batch holds this bucket and config twice", at + ".config");
    }
    // As its sweep would have made it: the same checks PlanSweep applies, for the hardware it
    // was measured on (tuner/check.h). The whole batch is refused, so nothing of it is written.
    if (m.problem.dtype != s.request.dtype)
      return InvalidArgument("problem dtype differs from the sweep's", at + ".problem");
    if (auto c = tuner::CheckMeasurement(*spec, m, b.hardware); !c) {
      Error e = WithPathPrefix(c.error(), at);
      e.message = at + ": " + e.message;
      return std::unexpected(std::move(e));
    }
  }
  return {};
}

namespace {

// SHA-256 (FIPS 180-4), for the batch digest below; a few hundred bytes per measurement, once
// per batch, so a plain implementation is plenty.
class Sha256 {
 public:
  void Update(std::string_view data) {
    for (unsigned char c : data) {
      block_[fill_++] = c;
      ++bytes_;
      if (fill_ == 64) Compress();
    }
  }
  std::string HexDigest() {
    const uint64_t bits = bytes_ * 8;
    Update(std::string_view("\x80", 1));
    while (fill_ != 56) Update(std::string_view("\0", 1));
    for (int i = 7; i >= 0; --i) {
      block_[fill_++] = static_cast<unsigned char>(bits >> (8 * i));
    }
    Compress();
    std::string out;
    char buf[9];
    for (uint32_t v : h_) {
      std::snprintf(buf, sizeof buf, "%08x", v);
      out += buf;
    }
    return out;
  }

 private:
  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void Compress() {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = uint32_t{block_[4 * i]} << 24 | uint32_t{block_[4 * i + 1]} << 16 | uint32_t{block_[4 * i + 2]} << 8 |
             uint32_t{block_[4 * i + 3]};
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) h_[i] += add[i];
    fill_ = 0;
  }

  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  int fill_ = 0;
  uint64_t bytes_ = 0;
};

// What a batch id names: the sweep's identity, the hardware key and every measurement with its
// samples, each field length-prefixed and doubles in hex (%a: exact), so two batches with one
// digest carry the same data. The sweep's status, progress and times are left out: a sweep
// pushed while it ran and again when it finished sends its first batches unchanged.
std::string BatchDigest(const ResultsBatch& b) {
  Sha256 sha;
  auto field = [&](std::string_view v) {
    sha.Update(std::to_string(v.size()));
    sha.Update(":");
    sha.Update(v);
  };
  auto number = [&](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", v);
    field(buf);
  };
  field(b.sweep.uid);
  field(b.hardware.Key());
  field(std::to_string(b.measurements.size()));
  for (const tuner::Measurement& m : b.measurements) {
    field(m.bucket);
    field(m.problem.dims.ToString());
    field(m.config.ToString());
    field(tuner::OutcomeName(m.outcome));
    field(m.detail);
    field(std::to_string(m.iterations));
    for (double v : {m.median_ns, m.cv, m.max_abs_err, m.max_rel_err}) number(v);
    field(std::to_string(m.samples_ns.size()));
    for (double v : m.samples_ns) number(v);
    field(m.created_at);
    field(m.fingerprint);
  }
  return sha.HexDigest();
}

// Outcomes that rule a config out of a pool: it did not run, or ran and was wrong.
bool Disqualifies(tuner::Outcome o) {
  using tuner::Outcome;
  return o == Outcome::kInvalid || o == Outcome::kCrashed || o == Outcome::kNan || o == Outcome::kWrongResult ||
         o == Outcome::kOutOfMemory || o == Outcome::kWorkerLost || o == Outcome::kCompileFailed ||
         o == Outcome::kRuntimeFailed;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<tuner::TunedEntry> PoolWinner(const std::vector<tuner::Measurement>& pool) {
  struct Candidate {
    bool out = false;
    std::vector<double> samples;
    const tuner::Measurement* best = nullptr;  // lowest-median ok measurement
  };
  std::map<std::string, Candidate> by_config;
  for (const tuner::Measurement& m : pool) {
    Candidate& c = by_config[m.config.ToString()];
    if (Disqualifies(m.outcome)) c.out = true;
    if (m.outcome != tuner::Outcome::kOk) continue;
    if (m.samples_ns.empty()) {
      c.samples.push_back(m.median_ns);
    } else {
      c.samples.insert(c.samples.end(), m.samples_ns.begin(), m.samples_ns.end());
    }
    if (c.best == nullptr || m.median_ns < c.best->median_ns ||
        (m.median_ns == c.best->median_ns && m.id < c.best->id)) {
      c.best = &m;
    }
  }
  std::optional<tuner::TunedEntry> out;
  double best_median = 0;
  for (const auto& [config, c] : by_config) {  // config order: ties go to the smaller string
    if (c.out || c.best == nullptr || c.samples.empty()) continue;
    const double median = Median(c.samples);
    if (!(median > 0)) continue;
    if (out && !(median < best_median)) continue;
    best_median = median;
    tuner::TunedEntry e;
    e.bucket = c.best->bucket;
    e.config = c.best->config;
    e.median_ns = median;
    e.samples = static_cast<int64_t>(c.samples.size());
    e.sweep_id = c.best->sweep_id;
    e.measurement_id = c.best->id;
    e.measured_at = c.best->created_at;
    e.fingerprint = c.best->fingerprint;  // the build that measured the winning measurement
    out = std::move(e);
  }
  return out;
}

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
      st->Bind(25, r.shard_index).Bind(26, r.shard_count);
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

// --- ResultsReader ---

Result<std::unique_ptr<ResultsReader>> ResultsReader::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return NotFound("no database file " + path, "input");
  // A file its writer closed cleanly has no -wal: read it as immutable, which leaves no -wal or
  // -shm behind. With a -wal (a writer is live, or died), its content is part of the database.
  const bool immutable = !std::filesystem::exists(path + "-wal", ec);
  auto conn = Connection::OpenReadOnly(path, immutable);
  if (!conn) return std::unexpected(conn.error());
  int64_t app_id = 0;
  int version = 0;
  {
    auto st = conn->Prepare(kReadHeaderSql);
    if (!st)
      return MakeError(ErrorCode::kDataLoss, path + " is not a readable SQLite database (" + st.error().message + ")");
    auto row = st->Step();
    if (!row)
      return MakeError(ErrorCode::kDataLoss, path + " is not a readable SQLite database (" + row.error().message + ")");
    if (*row) {
      app_id = st->Int(0);
      version = static_cast<int>(st->Int(1));
    }
  }
  if ((app_id != 0 && app_id != kApplicationId) || version <= 0) {
    return MakeError(ErrorCode::kDataLoss, path + " is not a blocktune database");
  }
  if (app_id == kApplicationId && version > LatestSchemaVersion()) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     path + " has schema version " + std::to_string(version) + ", newer than this build's " +
                         std::to_string(LatestSchemaVersion()) + "; use a newer blocktune");
  }
  {
    auto st = conn->Prepare("PRAGMA quick_check(1)");
    if (!st) return std::unexpected(st.error());
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (*row && st->Text(0) != "ok")
      return MakeError(ErrorCode::kDataLoss, path + " failed its integrity check: " + st->Text(0));
  }
  std::unique_ptr<ResultsReader> r(new ResultsReader());
  r->version_ = version;
  if (app_id == kApplicationId && version == LatestSchemaVersion()) {
    r->conn_ = std::move(*conn);
    return r;
  }
  // An older schema: read a migrated copy, never the file itself.
  std::string dir = (std::filesystem::temp_directory_path() / "blocktune-read-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return Internal("cannot create a temporary directory for " + path);
  r->temp_path_ = dir + "/copy.db";
  {
    auto st = conn->Prepare("VACUUM INTO ?");
    if (!st) return std::unexpected(st.error());
    st->Bind(1, r->temp_path_);
    if (auto s = st->Run(); !s) return std::unexpected(s.error());
  }
  auto copy = Connection::Open(r->temp_path_, /*create=*/false);
  if (!copy) return std::unexpected(copy.error());
  if (auto s = Migrate(*copy); !s) return std::unexpected(s.error());
  r->conn_ = std::move(*copy);
  return r;
}

ResultsReader::~ResultsReader() {
  conn_ = Connection();
  if (!temp_path_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(temp_path_).parent_path(), ec);
  }
}

Result<std::pair<int64_t, int64_t>> ResultsReader::Counts() {
  auto st = conn_.Prepare(kCountsSql);
  if (!st) return std::unexpected(st.error());
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  return std::pair<int64_t, int64_t>(st->Int(0), st->Int(1));
}

Status ResultsReader::ForEachBatch(int64_t batch_size, const std::function<Status(const ResultsBatch&)>& emit) {
  batch_size = std::clamp<int64_t>(batch_size, 1, static_cast<int64_t>(kMaxBatchMeasurements));
  std::vector<std::pair<int64_t, ResultsBatch>> sweeps;
  {
    auto st = conn_.Prepare(kReadSweepsSql);
    if (!st) return std::unexpected(st.error());
    while (true) {
      auto row = st->Step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      ResultsBatch b;
      SweepRecord& s = b.sweep;
      const int64_t id = st->Int(0);
      s.request.kernel = st->Text(1);
      auto dtype = ParseDType(st->Text(2));
      auto strategy = tuner::ParseStrategy(st->Text(4));
      if (!dtype || !strategy) return MakeError(ErrorCode::kDataLoss, "sweep " + std::to_string(id) + " is malformed");
      s.request.dtype = *dtype;
      s.request.threads = static_cast<int>(st->Int(3));
      s.request.strategy = *strategy;
      s.request.budget = st->Int(5);
      s.request.seed = static_cast<uint64_t>(st->Int(6));
      const std::string shapes_text = st->Text(7);
      std::string_view rest = shapes_text;
      while (!rest.empty()) {
        const size_t semi = rest.find(';');
        auto dims = NamedInts::Parse(rest.substr(0, semi));
        if (!dims) return MakeError(ErrorCode::kDataLoss, "sweep " + std::to_string(id) + " has malformed shapes");
        s.request.shapes.push_back(std::move(*dims));
        if (semi == std::string_view::npos) break;
        rest.remove_prefix(semi + 1);
      }
      s.status = ParseSweepStatus(st->Text(8)).value_or(SweepStatus::kFailed);
      s.progress_total = st->Int(9);
      s.error = st->Text(10);
      s.created_at = st->Text(11);
      s.started_at = st->Text(12);
      s.finished_at = st->Text(13);
      s.request.budget_seconds = st->Double(14);
      s.environment.load_average = st->Text(15);
      s.environment.affinity = st->Text(16);
      s.environment.governor = st->Text(17);
      s.environment.compiler = st->Text(18);
      s.environment.build_flags = st->Text(19);
      s.environment.tool_version = st->Text(20);
      s.uid = st->Text(21);
      s.host = st->Text(22);
      s.request.shard_index = static_cast<int>(st->Int(23));
      s.request.shard_count = static_cast<int>(st->Int(24));
      s.bucket_version = static_cast<int>(st->Int(25));
      s.hardware_key = st->Text(26);
      HardwareProfile& h = b.hardware;
      h.cpu.arch = st->Text(27);
      h.cpu.isa = st->Text(28);
      h.cpu.vendor = st->Text(29);
      h.cpu.family = static_cast<int>(st->Int(30));
      h.cpu.model = static_cast<int>(st->Int(31));
      h.model_name = st->Text(32);
      h.cores = static_cast<int>(st->Int(33));
      h.l1d_bytes = st->Int(34);
      h.l2_bytes = st->Int(35);
      h.l3_bytes = st->Int(36);
      h.threads = static_cast<int>(st->Int(37));
      sweeps.emplace_back(id, std::move(b));
    }
  }
  for (auto& [sweep_id, head] : sweeps) {
    int64_t after = 0;
    bool any = false;
    while (true) {
      ResultsBatch b;
      b.sweep = head.sweep;
      b.hardware = head.hardware;
      auto st = conn_.Prepare(kReadMeasurementsSql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, sweep_id).Bind(2, after).Bind(3, batch_size);
      auto rows = ReadRows(*st, [&](const Statement& q) -> Result<tuner::Measurement> {
        tuner::Measurement m;
        m.id = q.Int(0);
        m.bucket = q.Text(1);
        auto dims = NamedInts::Parse(q.Text(2));
        auto config = NamedInts::Parse(q.Text(3));
        auto outcome = tuner::ParseOutcome(q.Text(4));
        if (!dims || !config || !outcome) {
          return MakeError(ErrorCode::kDataLoss, "measurement " + std::to_string(m.id) + " is malformed");
        }
        m.problem = Problem{b.sweep.request.dtype, std::move(*dims)};
        m.config = std::move(*config);
        m.outcome = *outcome;
        m.detail = q.Text(5);
        m.iterations = q.Int(6);
        m.median_ns = q.Double(7);
        m.cv = q.Double(8);
        m.max_abs_err = q.Double(9);
        m.max_rel_err = q.Double(10);
        m.created_at = q.Text(11);
        m.fingerprint = q.Text(12);
        return m;
      });
      if (!rows) return std::unexpected(rows.error());
      if (rows->empty()) {
        if (!any) {
          b.batch_id = b.sweep.uid + ":empty";
          if (auto s = emit(b); !s) return s;
        }
        break;
      }
      auto samples = conn_.Prepare(kReadSamplesSql);
      if (!samples) return std::unexpected(samples.error());
      samples->Bind(1, rows->front().id).Bind(2, rows->back().id);
      size_t i = 0;
      while (true) {
        auto row = samples->Step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        const int64_t id = samples->Int(0);
        while (i < rows->size() && (*rows)[i].id < id) ++i;
        if (i < rows->size() && (*rows)[i].id == id) (*rows)[i].samples_ns.push_back(samples->Double(1));
      }
      b.batch_id = b.sweep.uid + ":" + std::to_string(rows->front().id) + "-" + std::to_string(rows->back().id);
      after = rows->back().id;
      const bool last = static_cast<int64_t>(rows->size()) < batch_size;
      b.measurements = std::move(*rows);
      any = true;
      if (auto s = emit(b); !s) return s;
      if (last) break;
    }
  }
  return {};
}

}  // namespace blocktune::store
