// Store: migrations, refusal of newer schemas and foreign files, measurement and tuned-entry
// round trips.
#include "schema/store.h"

#include <gtest/gtest.h>

#include "schema/migrations.h"
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace blocktune::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("blocktune_store_test_" + std::to_string(getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string ReadAll(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
  std::string path_;
};

tuner::SweepRequest Request() {
  tuner::SweepRequest r;
  r.kernel = "matmul";
  r.shapes.push_back(NamedInts({{"m", 64}, {"n", 32}, {"k", 16}}));
  r.shapes.push_back(NamedInts({{"m", 1}, {"n", 2}, {"k", 3}}));
  r.threads = 2;
  r.strategy = tuner::Strategy::kRandom;
  r.budget = 7;
  r.seed = 42;
  return r;
}

TEST_F(StoreTest, CreatesAndMigratesToLatestVersion) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ((*s)->SchemaVersion(), LatestSchemaVersion());
  EXPECT_GE(LatestSchemaVersion(), 1);
  s->reset();
  auto again = Store::Open(path_);  // reopening an up-to-date DB is a no-op
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->SchemaVersion(), LatestSchemaVersion());
}

TEST_F(StoreTest, RefusesNewerSchemaWithoutTouchingIt) {
  ASSERT_TRUE(Store::Open(path_));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 999", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string before = ReadAll(path_);
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("newer"), std::string::npos);
  EXPECT_EQ(ReadAll(path_), before);
}

TEST_F(StoreTest, RefusesAFileThatIsNotADatabase) {
  const std::string junk(8192, 'x');
  std::ofstream(path_, std::ios::binary) << junk;
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(ReadAll(path_), junk);
}

TEST_F(StoreTest, SweepLifecycleAndMeasurementsRoundTrip) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  HardwareProfile hw = HardwareProfile::Detect(2);
  auto hw_id = st.UpsertHardware(hw);
  ASSERT_TRUE(hw_id);
  EXPECT_EQ(*st.UpsertHardware(hw), *hw_id);  // idempotent

  auto id = st.CreateSweep(Request(), *hw_id, 1, "test", 10);
  ASSERT_TRUE(id) << id.error().ToString();
  auto rec = st.GetSweep(*id);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, SweepStatus::kQueued);
  EXPECT_EQ(rec->request.shapes, Request().shapes);
  EXPECT_EQ(rec->request.budget, 7);
  EXPECT_EQ(rec->request.seed, 42u);
  EXPECT_EQ(rec->progress_total, 10);
  EXPECT_EQ(rec->hardware_key, hw.Key());

  ASSERT_TRUE(st.SetSweepStatus(*id, SweepStatus::kRunning));
  tuner::Measurement ok;
  ok.sweep_id = *id;
  ok.bucket = "m64_n32_k16";
  ok.problem.dims = NamedInts({{"m", 64}, {"n", 32}, {"k", 16}});
  ok.config = NamedInts({{"block_m", 48}, {"block_n", 64}, {"block_k", 32}});
  ok.samples_ns = {100, 110, 105};
  ok.median_ns = 105;
  ok.cv = 0.05;
  ok.iterations = 1000;
  ASSERT_TRUE(st.RecordMeasurement(ok, 1, 10));
  EXPECT_GT(ok.id, 0);
  EXPECT_FALSE(ok.created_at.empty());

  tuner::Measurement bad = ok;
  bad.config.Set("block_m", 7);
  bad.outcome = tuner::Outcome::kInvalid;
  bad.detail = "block_m must be a multiple of 16";
  bad.samples_ns.clear();
  ASSERT_TRUE(st.RecordMeasurement(bad, 2, 10));

  // The same (sweep, bucket, config) twice is refused: a measurement is never duplicated.
  tuner::Measurement dup = ok;
  EXPECT_FALSE(st.RecordMeasurement(dup, 3, 10));

  auto list = st.ListMeasurements(*id, "m64_n32_k16");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].samples_ns, ok.samples_ns);
  EXPECT_EQ((*list)[0].config, ok.config);
  EXPECT_EQ((*list)[1].outcome, tuner::Outcome::kInvalid);
  EXPECT_EQ((*list)[1].detail, bad.detail);
  EXPECT_TRUE((*list)[1].samples_ns.empty());
  EXPECT_EQ(st.GetSweep(*id)->progress_done, 2);

  // A daemon that died mid-sweep: the sweep goes back to the queue.
  ASSERT_TRUE(st.RequeueRunningSweeps());
  EXPECT_EQ(st.GetSweep(*id)->status, SweepStatus::kQueued);
  ASSERT_TRUE(st.SetSweepStatus(*id, SweepStatus::kDone));
  auto done = st.GetSweep(*id);
  EXPECT_EQ(done->status, SweepStatus::kDone);
  EXPECT_FALSE(done->finished_at.empty());
  EXPECT_FALSE(st.GetSweep(*id + 100));
  EXPECT_EQ(st.GetSweep(*id + 100).error().code, ErrorCode::kNotFound);
}

// The transfer prior of a sweep's task: passing measurements of earlier sweeps with the same
// kernel, dtype, hardware and threads, and of the sweep's own earlier tasks; not a later
// sweep's, not another thread count's, not the task's own bucket or later ones.
TEST_F(StoreTest, PriorMeasurementsComeFromEarlierMatchingSweepsAndTasks) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.UpsertHardware(HardwareProfile::Detect(2));
  ASSERT_TRUE(hw_id);
  auto record = [&](int64_t sweep, const std::string& bucket, int64_t block_m, tuner::Outcome outcome) {
    tuner::Measurement m;
    m.sweep_id = sweep;
    m.bucket = bucket;
    m.problem.dims = NamedInts({{"m", 64}, {"n", 32}, {"k", 16}});
    m.config = NamedInts({{"block_m", block_m}, {"block_n", 64}, {"block_k", 32}});
    m.outcome = outcome;
    if (outcome == tuner::Outcome::kOk) {
      m.samples_ns = {100, 100, 100};
      m.median_ns = 100 + static_cast<double>(block_m);
    }
    ASSERT_TRUE(st.RecordMeasurement(m, 1, 10));
  };
  tuner::SweepRequest other_threads = Request();
  other_threads.threads = 1;
  const int64_t a = *st.CreateSweep(Request(), *hw_id, 1, "test", 10);
  const int64_t b = *st.CreateSweep(other_threads, *hw_id, 1, "test", 10);
  record(a, "m64_n32_k16", 16, tuner::Outcome::kOk);
  record(a, "m64_n32_k16", 32, tuner::Outcome::kCrashed);
  record(a, "m1_n2_k4", 48, tuner::Outcome::kOk);
  record(b, "m64_n32_k16", 64, tuner::Outcome::kOk);
  tuner::SweepRequest transfer = Request();
  transfer.strategy = tuner::Strategy::kTransfer;  // a strategy name migration 0007 allows
  const int64_t c = *st.CreateSweep(transfer, *hw_id, 1, "test", 10);
  EXPECT_EQ(st.GetSweep(c)->request.strategy, tuner::Strategy::kTransfer);
  record(c, "m64_n32_k16", 80, tuner::Outcome::kOk);
  const int64_t d = *st.CreateSweep(transfer, *hw_id, 1, "test", 10);

  auto prior_c = st.ListPriorMeasurements(c);
  ASSERT_TRUE(prior_c) << prior_c.error().ToString();
  ASSERT_EQ(prior_c->size(), 2u);  // a's two passing configs; not a's crash, b (1 thread) or c itself
  EXPECT_EQ((*prior_c)[0].config.Get("block_m"), 16);
  EXPECT_EQ((*prior_c)[0].problem.dims, NamedInts({{"m", 64}, {"n", 32}, {"k", 16}}));
  EXPECT_EQ((*prior_c)[1].bucket, "m1_n2_k4");
  auto prior_d = st.ListPriorMeasurements(d);
  ASSERT_TRUE(prior_d);
  EXPECT_EQ(prior_d->size(), 3u);  // a's two and c's

  // d's tasks: its second bucket's prior adds what d measured in its first, not in itself.
  ASSERT_TRUE(st.AddTasks(d, {TaskPlan{"m1_n2_k4", NamedInts({{"m", 1}, {"n", 2}, {"k", 4}}), 1},
                              TaskPlan{"m64_n32_k16", NamedInts({{"m", 64}, {"n", 32}, {"k", 16}}), 1}}));
  record(d, "m1_n2_k4", 112, tuner::Outcome::kOk);
  record(d, "m64_n32_k16", 128, tuner::Outcome::kOk);
  EXPECT_EQ(st.ListPriorMeasurements(d, 0)->size(), 3u);
  EXPECT_EQ(st.ListPriorMeasurements(d, 1)->size(), 4u);
  auto second = st.ListPriorMeasurements(d, 1);
  EXPECT_EQ(second->back().config.Get("block_m"), 112);
}

TEST_F(StoreTest, TunedEntriesUpsertAndListInKeyOrder) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.UpsertHardware(HardwareProfile::Detect(1));
  auto sweep = st.CreateSweep(Request(), *hw_id, 1, "test", 1);
  tuner::Measurement m;
  m.sweep_id = *sweep;
  m.bucket = "b";
  m.config = NamedInts({{"block_m", 1}});
  ASSERT_TRUE(st.RecordMeasurement(m, 1, 1));
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = "x86_64.avx2.amd.fam25_mod1.t1";
  e.bucket = "m128_n128_k128";
  e.config = NamedInts({{"block_m", 96}, {"block_n", 256}, {"block_k", 128}});
  e.median_ns = 1234.5;
  e.samples = 5;
  e.sweep_id = *sweep;
  e.measurement_id = m.id;
  e.measured_at = "2026-01-01T00:00:00.000Z";
  tuner::TunedEntry other = e;
  other.hardware_key = "x86_64.avx2.amd.fam25_mod1.t0";
  ASSERT_TRUE(st.UpsertTunedEntry(e));
  ASSERT_TRUE(st.UpsertTunedEntry(other));
  e.median_ns = 1000;  // a newer winner replaces the row
  ASSERT_TRUE(st.UpsertTunedEntry(e));
  auto rows = st.ListTunedEntries("matmul");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].hardware_key, other.hardware_key);
  EXPECT_EQ((*rows)[1].median_ns, 1000);
  EXPECT_EQ((*rows)[1].config, e.config);
  EXPECT_TRUE(st.ListTunedEntries("nope")->empty());
}

// A database written by a build with migrations 0001-0003 only (sweeps.strategy limited to
// exhaustive/random) is rebuilt by 0005 without losing a row or a reference.
TEST_F(StoreTest, MigrationRebuildsSweepsKeepingRowsAndReferences) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    int applied = 0;
    for (const auto& m : Migrations()) {
      if (std::string_view(m.name) >= "0004") break;
      ASSERT_EQ(sqlite3_exec(db, std::string(m.sql).c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << m.name;
      ++applied;
    }
    ASSERT_EQ(applied, 3);
    const std::string seed_sql =
        "PRAGMA user_version = 3;"
        "INSERT INTO hardware_profiles (id, hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, "
        "cores, l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) "
        "VALUES (1, 'hw.t1', 'x86_64', 'avx512', 'intel', 6, 1, 'cpu', 2, 1, 2, 3, 1, 't');"
        "INSERT INTO sweeps (id, kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status, "
        "bucket_version, tool_version, created_at) "
        "VALUES (7, 'matmul', 'f32', 1, 1, 'random', 3, 9, 'm=1,n=2,k=3', 'done', 1, 'old', 't');"
        "INSERT INTO measurements (id, sweep_id, bucket, problem, config, outcome, created_at) "
        "VALUES (11, 7, 'm1_n2_k4', 'm=1,n=2,k=4', 'block_m=48', 'ok', 't');"
        "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
        "sweep_id, measurement_id, measured_at) VALUES ('matmul', 'hw.t1', 'f32', 'm1_n2_k4', 1, 'block_m=48', 5, 1, "
        "7, 11, 't');";
    ASSERT_EQ(sqlite3_exec(db, seed_sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = Store::Open(path_);
  ASSERT_TRUE(s) << s.error().ToString();
  Store& st = **s;
  EXPECT_EQ(st.SchemaVersion(), LatestSchemaVersion());
  auto old = st.GetSweep(7);
  ASSERT_TRUE(old) << old.error().ToString();
  EXPECT_EQ(old->request.strategy, tuner::Strategy::kRandom);
  EXPECT_EQ(old->request.budget, 3);
  EXPECT_EQ(old->request.budget_seconds, 0);
  EXPECT_EQ(old->environment.compiler, "");
  EXPECT_EQ(st.ListMeasurements(7, "m1_n2_k4")->size(), 1u);
  EXPECT_EQ(st.ListTunedEntries("matmul")->size(), 1u);
  // The new strategies are accepted, and foreign keys still hold after the rebuild.
  tuner::SweepRequest r = Request();
  r.strategy = tuner::Strategy::kSurrogate;
  r.budget_seconds = 12.5;
  auto id = st.CreateSweep(r, 1, 1, "new", 4);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(st.GetSweep(*id)->request.strategy, tuner::Strategy::kSurrogate);
  EXPECT_EQ(st.GetSweep(*id)->request.budget_seconds, 12.5);
  tuner::Measurement orphan;
  orphan.sweep_id = 999;
  orphan.bucket = "b";
  orphan.config = NamedInts({{"block_m", 1}});
  EXPECT_FALSE(st.RecordMeasurement(orphan, 1, 1));
}

TEST_F(StoreTest, EnvironmentFinalRoundAndIncumbentRoundTrip) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.UpsertHardware(HardwareProfile::Detect(1));
  auto sweep = st.CreateSweep(Request(), *hw_id, 1, "blocktune test", 1);
  ASSERT_TRUE(sweep);
  tuner::SweepEnvironment env = tuner::CaptureEnvironment("blocktune test");
  ASSERT_TRUE(st.SetSweepEnvironment(*sweep, env));
  auto rec = st.GetSweep(*sweep);
  EXPECT_EQ(rec->environment.load_average, env.load_average);
  EXPECT_EQ(rec->environment.affinity, env.affinity);
  EXPECT_EQ(rec->environment.compiler, env.compiler);
  EXPECT_EQ(rec->environment.build_flags, env.build_flags);
  EXPECT_EQ(rec->environment.tool_version, "blocktune test");

  tuner::FinalRound round;
  round.sweep_id = *sweep;
  round.bucket = "m64_n32_k16";
  for (int64_t bm : {48, 96}) {
    tuner::Measurement m;
    m.config = NamedInts({{"block_m", bm}});
    m.samples_ns = {1, 2, 3};
    m.median_ns = static_cast<double>(bm);
    m.cv = 0.01;
    round.candidates.push_back(m);
  }
  round.incumbent = round.candidates[1].config;
  round.chosen = round.candidates[1].config;
  round.noise_band = 0.03;
  round.decision = "kept incumbent";
  ASSERT_TRUE(st.RecordFinalRound(round));
  ASSERT_TRUE(st.RecordFinalRound(round));  // a resumed sweep records its round again
  auto got = st.GetFinalRound(*sweep, round.bucket);
  ASSERT_TRUE(got) << got.error().ToString();
  ASSERT_EQ(got->candidates.size(), 2u);
  EXPECT_EQ(got->chosen, round.chosen);
  EXPECT_EQ(got->incumbent, round.incumbent);
  EXPECT_EQ(got->candidates[0].median_ns, 48);
  EXPECT_EQ(got->decision, "kept incumbent");
  EXPECT_EQ(st.GetFinalRound(*sweep, "other").error().code, ErrorCode::kNotFound);

  StoreSink sink(st, *sweep);
  auto none = sink.Incumbent("matmul", "hw", DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  tuner::Measurement m;
  m.sweep_id = *sweep;
  m.bucket = "m64_n32_k16";
  m.config = NamedInts({{"block_m", 96}});
  ASSERT_TRUE(st.RecordMeasurement(m, 1, 1));
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = "hw";
  e.bucket = "m64_n32_k16";
  e.config = m.config;
  e.median_ns = 96;
  e.sweep_id = *sweep;
  e.measurement_id = m.id;
  ASSERT_TRUE(st.UpsertTunedEntry(e));
  auto inc = sink.Incumbent("matmul", "hw", DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(inc && *inc);
  EXPECT_EQ((*inc)->config, e.config);
  EXPECT_FALSE(*sink.Incumbent("matmul", "hw", DType::kBF16, "m64_n32_k16"));
}

}  // namespace
}  // namespace blocktune::store
