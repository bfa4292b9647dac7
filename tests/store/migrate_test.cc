// Migrations: the version is the number in the file name (1, 2, 3, ... without gaps), and a
// database made by the release before that rule (tests/data/store_release_9620d5f.db, see
// tests/data/README.md) is carried over once: version 6 (its position count) becomes 7 (the
// file number of 0007), every row stays, later migrations run once, reopening does nothing.
// The last database of the previous layout (migrations in store/migrations/, version 14) and
// one at every earlier version of the file numbering open and keep their rows. Files that are
// not ours, or whose numbering cannot be trusted, are refused untouched.
#include "store/migrate.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "store/migrations.h"
#include "store/store.h"
#include "tuner/device_models.h"

namespace blocktune::store {
namespace {

const char* const kTables[] = {"hardware_profiles", "sweeps",       "sweep_tasks", "measurements",    "samples",
                               "tuned_entries",     "final_rounds", "overrides",   "idempotency_keys"};
// The tables migrations 0009-0014 added, which the version-14 fixture also fills.
const char* const kLaterTables[] = {"lookup_misses", "ingest_batches", "sweep_breakdowns", "sweep_prior_profiles"};

class MigrateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests are named Test/3
    dir_ = std::filesystem::temp_directory_path() / ("blocktune_migrate_test_" + std::to_string(getpid()) + "_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void CopyFixture(const char* name = "store_release_9620d5f.db") {
    std::filesystem::copy_file(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/" + name, path_);
  }
  // Runs `sql` on the file with the plain C API (no migration) and returns the first column
  // of the first row as an integer.
  int64_t QueryInt(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db);
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
  }
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::map<std::string, int64_t> RowCounts() {
    std::map<std::string, int64_t> out;
    for (const char* t : kTables) out[t] = QueryInt(std::string("SELECT COUNT(*) FROM ") + t);
    return out;
  }
  std::string ReadAll() {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST(MigrationList, VersionsAreTheFileNumbersWithoutGaps) {
  const auto& ms = Migrations();
  ASSERT_FALSE(ms.empty());
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_EQ(ms[i].version, static_cast<int>(i) + 1) << ms[i].name;
    ASSERT_GE(ms[i].name.size(), 5u);
    EXPECT_EQ(std::stoi(std::string(ms[i].name.substr(0, 4))), ms[i].version) << ms[i].name;
    EXPECT_EQ(ms[i].name[4], '_') << ms[i].name;
  }
  EXPECT_EQ(LatestSchemaVersion(), ms.back().version);
  EXPECT_GE(LatestSchemaVersion(), 8);  // 0008 dropped the strategy CHECK
}

TEST_F(MigrateTest, ReleaseDatabaseIsCarriedOverOnceKeepingEveryRow) {
  CopyFixture();
  // The fixture as the release left it: 0001-0003 and 0005-0007 applied, recorded as 6.
  ASSERT_EQ(QueryInt("PRAGMA user_version"), 6);
  ASSERT_EQ(QueryInt("PRAGMA application_id"), 0);
  const auto before = RowCounts();
  EXPECT_EQ(before.at("hardware_profiles"), 1);
  EXPECT_EQ(before.at("sweeps"), 3);
  EXPECT_GT(before.at("measurements"), 0);
  EXPECT_GT(before.at("samples"), 0);
  EXPECT_GT(before.at("tuned_entries"), 0);
  EXPECT_GT(before.at("final_rounds"), 0);
  EXPECT_EQ(before.at("overrides"), 1);
  EXPECT_EQ(before.at("idempotency_keys"), 1);

  // The carry-over alone (no later migration): 6 becomes 7, the file is stamped as ours.
  {
    auto conn = Connection::Open(path_, false);
    ASSERT_TRUE(conn);
    ASSERT_TRUE(Migrate(*conn, 7));
  }
  EXPECT_EQ(QueryInt("PRAGMA user_version"), 7);
  EXPECT_EQ(QueryInt("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(RowCounts(), before);
  // 0008 has not run: the strategy CHECK of 0007 is still there.
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sweeps' AND sql LIKE '%''transfer''%'"), 1);

  // Opening runs the rest (0008) once; every row is still there and readable.
  {
    auto s = Store::Open(path_);
    ASSERT_TRUE(s) << s.error().ToString();
    Store& st = **s;
    EXPECT_EQ(st.maintenance().SchemaVersion(), LatestSchemaVersion());
    auto sweeps = st.sweeps().ListPage(std::nullopt, 0, 10);
    ASSERT_TRUE(sweeps) << sweeps.error().ToString();
    ASSERT_EQ(sweeps->size(), 3u);
    EXPECT_EQ((*sweeps)[0].request.strategy, tuner::Strategy::kRandom);
    EXPECT_EQ((*sweeps)[1].request.strategy, tuner::Strategy::kTransfer);
    EXPECT_EQ((*sweeps)[2].request.strategy, tuner::Strategy::kExhaustive);
    EXPECT_EQ((*sweeps)[0].status, SweepStatus::kDone);
    auto measurements = st.measurements().ListPage(1, 0, 1000);
    ASSERT_TRUE(measurements);
    EXPECT_EQ(measurements->size(), static_cast<size_t>((*sweeps)[0].progress_done));
    EXPECT_FALSE(measurements->front().samples_ns.empty());
    auto tuned = st.tuned().List();
    ASSERT_TRUE(tuned);
    EXPECT_EQ(static_cast<int64_t>(tuned->size()), before.at("tuned_entries"));
    auto overrides = st.overrides().List();
    ASSERT_TRUE(overrides);
    ASSERT_EQ(overrides->size(), 1u);
    EXPECT_EQ(overrides->front().reason, "fixture pin");
    auto hw = st.hardware().List();
    ASSERT_TRUE(hw);
    EXPECT_EQ(hw->size(), 1u);
    EXPECT_EQ(st.maintenance().IntegrityCheck().value_or(""), "ok");
  }
  EXPECT_EQ(RowCounts(), before);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sweeps' AND sql LIKE '%''transfer''%'"), 0);

  // Reopening does nothing more: same version, and the schema cookie (bumped by SQLite on
  // every schema change) has not moved.
  const int64_t cookie = QueryInt("PRAGMA schema_version");
  {
    auto again = Store::Open(path_);
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_EQ((*again)->maintenance().SchemaVersion(), LatestSchemaVersion());
  }
  EXPECT_EQ(QueryInt("PRAGMA schema_version"), cookie);
  EXPECT_EQ(QueryInt("PRAGMA user_version"), LatestSchemaVersion());
  EXPECT_EQ(RowCounts(), before);
}

// 0012 widens the outcome CHECKs of measurements and final_rounds by rebuilding both tables:
// before it a compile_failed row is refused, after it every row, id, sample and reference to a
// measurement is still there, and the new outcomes are stored and read back.
TEST_F(MigrateTest, FailureOutcomesMigrationKeepsEveryRowAndId) {
  CopyFixture();
  {
    auto conn = Connection::Open(path_, false);
    ASSERT_TRUE(conn);
    ASSERT_TRUE(Migrate(*conn, 11));
  }
  const auto before = RowCounts();
  const int64_t max_id = QueryInt("SELECT MAX(id) FROM measurements");
  const int64_t id_sum = QueryInt("SELECT SUM(id) FROM measurements");
  const int64_t tuned_refs = QueryInt("SELECT SUM(measurement_id) FROM tuned_entries");
  ASSERT_GT(max_id, 0);
  const std::string insert =
      "INSERT INTO measurements (sweep_id, bucket, problem, config, outcome, created_at) "
      "SELECT sweep_id, bucket, problem, 'probe=1', 'compile_failed', created_at FROM measurements LIMIT 1";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_CONSTRAINT);  // the old CHECK
    sqlite3_close(db);
  }
  {
    auto conn = Connection::Open(path_, false);
    ASSERT_TRUE(conn);
    ASSERT_TRUE(Migrate(*conn, 12));
  }
  EXPECT_EQ(RowCounts(), before);
  EXPECT_EQ(QueryInt("SELECT MAX(id) FROM measurements"), max_id);
  EXPECT_EQ(QueryInt("SELECT SUM(id) FROM measurements"), id_sum);
  EXPECT_EQ(QueryInt("SELECT SUM(measurement_id) FROM tuned_entries"), tuned_refs);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE name = 'measurements_by_sweep'"), 1);
  Exec(insert);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM measurements WHERE outcome = 'compile_failed'"), 1);
  auto s = Store::Open(path_);
  ASSERT_TRUE(s) << s.error().ToString();
  auto page =
      (*s)->measurements().ListPage(QueryInt("SELECT sweep_id FROM measurements WHERE config = 'probe=1'"), 0, 1000);
  ASSERT_TRUE(page) << page.error().ToString();
  bool found = false;
  for (const auto& m : *page) found |= m.config.ToString() == "probe=1" && m.outcome == tuner::Outcome::kCompileFailed;
  EXPECT_TRUE(found);
  EXPECT_EQ((*s)->maintenance().IntegrityCheck().value_or(""), "ok");
}

// The last database the previous layout made (tests/data/store_v14_cc16046.db: main at cc16046,
// its migrations still in store/migrations/, schema version 14; tests/data/README.md): this
// build opens it, runs what it lacks (nothing while 14 is the latest), and reads every row back.
TEST_F(MigrateTest, PreviousLayoutsDatabaseOpensAndKeepsEveryRow) {
  CopyFixture("store_v14_cc16046.db");
  ASSERT_EQ(QueryInt("PRAGMA user_version"), 14);
  ASSERT_EQ(QueryInt("PRAGMA application_id"), kApplicationId);
  std::map<std::string, int64_t> before = RowCounts();
  for (const char* t : kLaterTables) before[t] = QueryInt(std::string("SELECT COUNT(*) FROM ") + t);
  const std::map<std::string, int64_t> expected = {
      {"hardware_profiles", 1},   {"sweeps", 4},         {"sweep_tasks", 4},
      {"measurements", 23},       {"samples", 46},       {"tuned_entries", 4},
      {"final_rounds", 11},       {"overrides", 1},      {"idempotency_keys", 1},
      {"lookup_misses", 2},       {"ingest_batches", 1}, {"sweep_breakdowns", 3},
      {"sweep_prior_profiles", 0}};
  EXPECT_EQ(before, expected);
  {
    auto s = Store::Open(path_);
    ASSERT_TRUE(s) << s.error().ToString();
    Store& st = **s;
    EXPECT_EQ(st.maintenance().SchemaVersion(), LatestSchemaVersion());
    auto sweeps = st.sweeps().ListPage(std::nullopt, 0, 10);
    ASSERT_TRUE(sweeps) << sweeps.error().ToString();
    ASSERT_EQ(sweeps->size(), 4u);
    const auto& random = (*sweeps)[0];
    EXPECT_EQ(random.request.strategy, tuner::Strategy::kRandom);
    EXPECT_EQ(random.status, SweepStatus::kDone);
    EXPECT_FALSE(random.imported);
    EXPECT_EQ((*sweeps)[1].request.strategy, tuner::Strategy::kTransfer);
    EXPECT_TRUE((*sweeps)[2].imported);  // pushed from another database (POST /v1/results)
    EXPECT_EQ((*sweeps)[3].request.strategy, tuner::Strategy::kExhaustive);
    EXPECT_EQ((*sweeps)[3].status, SweepStatus::kRunning);  // SIGTERM mid-sweep
    auto full = st.sweeps().Get(random.id);
    ASSERT_TRUE(full) << full.error().ToString();
    EXPECT_TRUE(full->breakdown.has_value());
    auto measurements = st.measurements().ListPage(random.id, 0, 1000);
    ASSERT_TRUE(measurements) << measurements.error().ToString();
    EXPECT_EQ(static_cast<int64_t>(measurements->size()), random.progress_done);
    for (const auto& m : *measurements) EXPECT_FALSE(m.samples_ns.empty()) << m.config.ToString();
    auto tasks = st.tasks().List((*sweeps)[3].id);
    ASSERT_TRUE(tasks) << tasks.error().ToString();
    ASSERT_EQ(tasks->size(), 1u);
    EXPECT_EQ(tasks->front().status, SweepStatus::kQueued);  // released at shutdown
    auto tuned = st.tuned().List();
    ASSERT_TRUE(tuned) << tuned.error().ToString();
    EXPECT_EQ(tuned->size(), 4u);
    for (const auto& e : *tuned) EXPECT_FALSE(e.fingerprint.empty()) << e.bucket;  // measured after 0010
    auto overrides = st.overrides().List();
    ASSERT_TRUE(overrides);
    ASSERT_EQ(overrides->size(), 1u);
    EXPECT_EQ(overrides->front().reason, "fixture pin");
    auto misses = st.misses().List(MissFilter{});
    ASSERT_TRUE(misses) << misses.error().ToString();
    EXPECT_EQ(misses->size(), 2u);
    EXPECT_EQ(st.maintenance().IntegrityCheck().value_or(""), "ok");
  }
  std::map<std::string, int64_t> after = RowCounts();
  for (const char* t : kLaterTables) after[t] = QueryInt(std::string("SELECT COUNT(*) FROM ") + t);
  EXPECT_EQ(after, before);
  EXPECT_EQ(QueryInt("PRAGMA user_version"), LatestSchemaVersion());
}

// A database as a build at each earlier version of the file numbering left it: the first K
// migrations applied, stamped as blocktune's, with a hardware profile, a sweep, a measurement
// and its sample, and the tuned row it won (written with 0001's columns, which every later
// version keeps). Opening it runs migrations K+1.. once and every row reads back.
// tuner::LegacyDeviceKey as SQL (what store/migrate.cc defines for 0016): NULL in or no
// mapping out is NULL.
void LegacyDeviceKeySql(sqlite3_context* ctx, int, sqlite3_value** args) {
  if (sqlite3_value_type(args[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(args[0]));
  const auto out = tuner::LegacyDeviceKey(
      std::string_view(text != nullptr ? text : "", static_cast<size_t>(sqlite3_value_bytes(args[0]))));
  if (!out) return sqlite3_result_null(ctx);
  sqlite3_result_text(ctx, out->data(), static_cast<int>(out->size()), SQLITE_TRANSIENT);
}

class OlderVersionTest : public MigrateTest, public ::testing::WithParamInterface<int> {};

TEST_P(OlderVersionTest, MigratesToTheLatestKeepingItsRows) {
  const int k = GetParam();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    // 0016 maps legacy device keys with a function Migrate defines on its connection; a build
    // at version 16 or later had it, so this plain connection gets the same one.
    ASSERT_EQ(sqlite3_create_function_v2(db, "blocktune_legacy_device_key", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                         nullptr, &LegacyDeviceKeySql, nullptr, nullptr, nullptr),
              SQLITE_OK);
    for (const auto& m : Migrations()) {
      if (m.version > k) break;
      ASSERT_EQ(sqlite3_exec(db, std::string(m.sql).c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << m.name;
    }
    const std::string seed =
        "PRAGMA user_version = " + std::to_string(k) + "; PRAGMA application_id = " + std::to_string(kApplicationId) +
        ";"
        "INSERT INTO hardware_profiles (id, hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, "
        "cores, l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) "
        "VALUES (1, 'x86_64.avx2.amd.fam25_mod1.t1', 'x86_64', 'avx2', 'amd', 25, 1, 'cpu', 2, 1, 2, 3, 1, 't');"
        "INSERT INTO sweeps (id, kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status, "
        "bucket_version, tool_version, created_at) "
        "VALUES (7, 'matmul', 'f32', 1, 1, 'random', 3, 9, 'm=1,n=2,k=3', 'done', 1, 'old', 't');"
        "INSERT INTO measurements (id, sweep_id, bucket, problem, config, outcome, median_ns, created_at) "
        "VALUES (11, 7, 'm1_n2_k4', 'm=1,n=2,k=4', 'block_m=48', 'ok', 5, 't');"
        "INSERT INTO samples (measurement_id, repetition, ns_per_iteration) VALUES (11, 0, 5);"
        "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
        "sweep_id, measurement_id, measured_at) VALUES ('matmul', 'x86_64.avx2.amd.fam25_mod1.t1', 'f32', "
        "'m1_n2_k4', 1, 'block_m=48', 5, 1, 7, 11, 't');";
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db, seed.c_str(), nullptr, nullptr, &err), SQLITE_OK) << k << ": " << (err ? err : "");
    sqlite3_close(db);
  }
  ASSERT_EQ(QueryInt("PRAGMA user_version"), k);
  {
    auto s = Store::Open(path_);
    ASSERT_TRUE(s) << k << ": " << s.error().ToString();
    Store& st = **s;
    EXPECT_EQ(st.maintenance().SchemaVersion(), LatestSchemaVersion());
    auto sweep = st.sweeps().Get(7);
    ASSERT_TRUE(sweep) << sweep.error().ToString();
    EXPECT_EQ(sweep->request.strategy, tuner::Strategy::kRandom);
    EXPECT_EQ(sweep->request.budget, 3);
    EXPECT_EQ(sweep->status, SweepStatus::kDone);
    auto measured = st.measurements().ListBucket(7, "m1_n2_k4");
    ASSERT_TRUE(measured) << measured.error().ToString();
    ASSERT_EQ(measured->size(), 1u);
    EXPECT_EQ(measured->front().config.ToString(), "block_m=48");
    EXPECT_EQ(measured->front().samples_ns.size(), 1u);
    auto tuned = st.tuned().List("matmul");
    ASSERT_TRUE(tuned) << tuned.error().ToString();
    ASSERT_EQ(tuned->size(), 1u);
    EXPECT_EQ(tuned->front().measurement_id, 11);
    EXPECT_EQ(tuned->front().fingerprint, "");  // stored before 0010: unknown
    EXPECT_EQ(st.maintenance().IntegrityCheck().value_or(""), "ok");
  }
  EXPECT_EQ(QueryInt("PRAGMA user_version"), LatestSchemaVersion());
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM samples"), 1);
  // Once: a second open applies nothing (SQLite bumps the schema cookie on any schema change).
  const int64_t cookie = QueryInt("PRAGMA schema_version");
  ASSERT_TRUE(Store::Open(path_));
  EXPECT_EQ(QueryInt("PRAGMA schema_version"), cookie);
}

INSTANTIATE_TEST_SUITE_P(EveryEarlierVersion, OlderVersionTest, ::testing::Range(1, LatestSchemaVersion()));

TEST_F(MigrateTest, RefusesAnotherApplicationsFileUntouched) {
  Exec("PRAGMA application_id = 1234; CREATE TABLE theirs (x INTEGER); PRAGMA user_version = 2;");
  const std::string bytes = ReadAll();
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kDataLoss) << s.error().ToString();
  EXPECT_NE(s.error().message.find("another application"), std::string::npos) << s.error().message;
  EXPECT_TRUE(ReadAll() == bytes) << "the file was modified";
}

TEST_F(MigrateTest, RefusesAnUnstampedVersionNoReleaseWrote) {
  // The old numbering never went past 6; a 7 without our application id is someone else's.
  CopyFixture();
  Exec("PRAGMA user_version = 7;");
  const std::string bytes = ReadAll();
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kDataLoss) << s.error().ToString();
  EXPECT_TRUE(ReadAll() == bytes) << "the file was modified";
}

TEST_F(MigrateTest, RefusesAnOldVersionWhoseTablesDisagree) {
  // A branch build once applied 0006 before 0005 existed and recorded position 4, which the
  // old numbering also used for 0005: the tables tell them apart, and this one is refused.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  for (const auto& m : Migrations()) {
    if (m.version == 4 || m.version == 5 || m.version > 6) continue;
    ASSERT_EQ(sqlite3_exec(db, std::string(m.sql).c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << m.name;
  }
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 4", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string bytes = ReadAll();
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kDataLoss) << s.error().ToString();
  EXPECT_NE(s.error().message.find("not those of migration 5"), std::string::npos) << s.error().message;
  EXPECT_TRUE(ReadAll() == bytes) << "the file was modified";
}

TEST_F(MigrateTest, StrategyNamesAreCheckedInCode) {
  CopyFixture();
  auto s = Store::Open(path_);
  ASSERT_TRUE(s) << s.error().ToString();
  // The table no longer restricts the name (0008); a name outside tuner::kStrategyNames that
  // got in by hand is reported, not read as some default strategy.
  Exec("UPDATE sweeps SET strategy = 'bogus' WHERE id = 2;");
  auto bad = (*s)->sweeps().Get(2);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(bad.error().message.find("unknown strategy 'bogus'"), std::string::npos) << bad.error().message;
  // And a strategy value outside the list is refused before anything is written.
  tuner::SweepRequest r;
  r.kernel = "matmul";
  r.shapes = {NamedInts({{"m", 8}, {"n", 8}, {"k", 8}})};
  r.strategy = static_cast<tuner::Strategy>(std::size(tuner::kStrategyNames));
  auto created = (*s)->sweeps().Create(r, 1, 1, "test", {});
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(created.error().path, "strategy");
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sweeps"), 3);
}

}  // namespace
}  // namespace blocktune::store
