// Migrations: the version is the number in the file name (1, 2, 3, ... without gaps), and a
// database made by the release before that rule (tests/data/store_release_9620d5f.db, see
// tests/data/README.md) is carried over once: version 6 (its position count) becomes 7 (the
// file number of 0007), every row stays, later migrations run once, reopening does nothing.
// Files that are not ours, or whose numbering cannot be trusted, are refused untouched.
#include "store/migrate.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "store/migrations.h"
#include "store/store.h"

namespace blocktune::store {
namespace {

const char* const kTables[] = {"hardware_profiles", "sweeps",       "sweep_tasks", "measurements",    "samples",
                               "tuned_entries",     "final_rounds", "overrides",   "idempotency_keys"};

class MigrateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("blocktune_migrate_test_" + std::to_string(getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void CopyFixture() {
    std::filesystem::copy_file(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/store_release_9620d5f.db", path_);
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
