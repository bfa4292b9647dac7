// ResultsReader and its SQL; see results_reader.h.
#include "store/results_reader.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <vector>

#include "store/migrate.h"
#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kReaderHeaderSql[] =
    "SELECT application_id, user_version FROM pragma_application_id(), pragma_user_version()";
constexpr char kReadSweepsSql[] =
    "SELECT s.id, s.kernel, s.dtype, s.threads, s.strategy, s.budget, s.seed, s.shapes, s.status, s.progress_total, "
    "s.error, s.created_at, COALESCE(s.started_at, ''), COALESCE(s.finished_at, ''), s.budget_seconds, "
    "s.env_load_average, s.env_affinity, s.env_governor, s.env_compiler, s.env_build_flags, s.tool_version, s.uid, "
    "s.host, s.shard_index, s.shard_count, s.bucket_version, h.hardware_key, h.arch, h.isa, h.vendor, h.cpu_family, "
    "h.cpu_model, h.model_name, h.cores, h.l1d_bytes, h.l2_bytes, h.l3_bytes, h.threads, s.device "
    "FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id ORDER BY s.id";
constexpr char kReadMeasurementsSql[] =
    "SELECT id, bucket, problem, config, outcome, detail, iterations, COALESCE(median_ns, 0), COALESCE(cv, 0), "
    "COALESCE(max_abs_err, 0), COALESCE(max_rel_err, 0), created_at, COALESCE(fingerprint, '') FROM measurements "
    "WHERE sweep_id = ? AND id > ? ORDER BY id LIMIT ?";
constexpr char kReadSamplesSql[] =
    "SELECT measurement_id, ns_per_iteration FROM samples WHERE measurement_id BETWEEN ? AND ? "
    "ORDER BY measurement_id, repetition";
constexpr char kCountsSql[] = "SELECT (SELECT COUNT(*) FROM measurements), (SELECT COUNT(*) FROM sweeps)";

}  // namespace

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
    auto st = conn->Prepare(kReaderHeaderSql);
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
      // A device key (docs/accelerators.md) is not made of the CPU fields.
      if (h.Key() != s.hardware_key) h.device_key = s.hardware_key;
      s.device = st->Text(38);
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
