// Store: each table group's round trips, through the write path production runs: sweeps made
// with their tasks (SweepsTable::Create), leased (TasksTable), measured through TaskSink or
// MeasurementsTable::Record, requeued after a crash; refusal of newer schemas and foreign
// files; 0005's table rebuild keeping rows and references.
#include "store/store.h"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>
#include "store/migrations.h"
#include "tests/common/claimants.h"
#include "tests/common/scratch_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/migrations.h"
#include "store/task_sink.h"

namespace blocktune::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  static std::string ReadAll(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  test::ScratchDir dir_{"blocktune_store_test"};
  std::string path_ = dir_.File("t.db");
};

const NamedInts kShapeA({{"m", 64}, {"n", 32}, {"k", 16}});
const NamedInts kShapeB({{"m", 1}, {"n", 2}, {"k", 3}});

tuner::SweepRequest Request() {
  tuner::SweepRequest r;
  r.kernel = "matmul";
  r.shapes = {kShapeA, kShapeB};
  r.threads = 2;
  r.strategy = tuner::Strategy::kRandom;
  r.budget = 7;
  r.seed = 42;
  return r;
}

// A sweep of Request() (or `r`) with one task per bucket, as the daemon creates it.
int64_t CreateSweep(Store& st, int64_t hw_id, const tuner::SweepRequest& r = Request(), int64_t planned = 5) {
  auto created = st.sweeps().Create(
      r, hw_id, 1, "test", {TaskPlan{"m64_n32_k16", kShapeA, planned}, TaskPlan{"m1_n2_k4", kShapeB, planned}});
  EXPECT_TRUE(created) << created.error().ToString();
  EXPECT_TRUE(created->created);
  return created->id;
}

tuner::Measurement M(int64_t sweep, const std::string& bucket, int64_t block_m,
                     tuner::Outcome outcome = tuner::Outcome::kOk) {
  tuner::Measurement m;
  m.sweep_id = sweep;
  m.bucket = bucket;
  m.problem.dims = kShapeA;
  m.config = NamedInts({{"block_m", block_m}, {"block_n", 64}, {"block_k", 32}});
  m.outcome = outcome;
  if (outcome == tuner::Outcome::kOk) {
    m.samples_ns = {100, 110, 105};
    m.median_ns = 100 + static_cast<double>(block_m);
    m.cv = 0.05;
    m.iterations = 1000;
  }
  return m;
}

TEST_F(StoreTest, CreatesAndMigratesToLatestVersion) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ((*s)->maintenance().SchemaVersion(), LatestSchemaVersion());
  EXPECT_GE(LatestSchemaVersion(), 1);
  s->reset();
  auto again = Store::Open(path_);  // reopening an up-to-date DB is a no-op
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->maintenance().SchemaVersion(), LatestSchemaVersion());
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
  EXPECT_TRUE(ReadAll(path_) == before) << "the file was modified";
}

TEST_F(StoreTest, RefusesAFileThatIsNotADatabase) {
  const std::string junk(8192, 'x');
  std::ofstream(path_, std::ios::binary) << junk;
  auto s = Store::Open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(ReadAll(path_), junk);
}

// The daemon's path end to end at the store: create with tasks, lease, record (refusing a
// duplicate config), crash and requeue, finish every task, which finishes the sweep.
TEST_F(StoreTest, SweepLifecycleAndMeasurementsRoundTrip) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  HardwareProfile hw = HardwareProfile::Detect(2);
  auto hw_id = st.hardware().Upsert(hw);
  ASSERT_TRUE(hw_id);
  EXPECT_EQ(*st.hardware().Upsert(hw), *hw_id);  // idempotent
  ASSERT_EQ(st.hardware().List()->size(), 1u);

  const int64_t id = CreateSweep(st, *hw_id);
  auto rec = st.sweeps().Get(id);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, SweepStatus::kQueued);
  EXPECT_EQ(rec->request.shapes, Request().shapes);
  EXPECT_EQ(rec->request.strategy, tuner::Strategy::kRandom);
  EXPECT_EQ(rec->request.budget, 7);
  EXPECT_EQ(rec->request.seed, 42u);
  EXPECT_EQ(rec->progress_total, 10);  // the tasks' planned counts
  EXPECT_EQ(rec->hardware_key, hw.Key());

  const Claimant killed = test::GoneClaimant();
  const Claimant runner = test::LiveClaimant();
  auto task = st.tasks().LeaseNext(killed);
  ASSERT_TRUE(task && *task) << "a queued task";
  EXPECT_EQ((*task)->bucket, "m64_n32_k16");
  EXPECT_EQ(st.sweeps().Get(id)->status, SweepStatus::kRunning);
  EXPECT_FALSE(st.sweeps().Get(id)->started_at.empty());
  TaskSink sink(st, **task);
  tuner::Measurement ok = M(id, "m64_n32_k16", 48);
  ASSERT_TRUE(sink.Record(ok, 1, 4));
  EXPECT_GT(ok.id, 0);
  EXPECT_FALSE(ok.created_at.empty());
  tuner::Measurement bad = M(id, "m64_n32_k16", 7, tuner::Outcome::kInvalid);
  bad.detail = "block_m must be a multiple of 16";
  ASSERT_TRUE(sink.Record(bad, 2, 4));
  // The same (sweep, bucket, config) twice is refused: a measurement is never duplicated.
  tuner::Measurement dup = ok;
  EXPECT_FALSE(sink.Record(dup, 3, 4));

  auto list = sink.Existing("m64_n32_k16");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].samples_ns, ok.samples_ns);
  EXPECT_EQ((*list)[0].config, ok.config);
  EXPECT_EQ((*list)[1].outcome, tuner::Outcome::kInvalid);
  EXPECT_EQ((*list)[1].detail, bad.detail);
  EXPECT_TRUE((*list)[1].samples_ns.empty());
  auto progress = st.sweeps().Progress(id);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->done, 2);
  EXPECT_EQ(progress->total, 9);  // the engine planned 4 for this task, not 5
  EXPECT_EQ(st.sweeps().Get(id)->progress_done, 2);
  EXPECT_EQ(st.sweeps().Get(id)->progress_total, 9);

  // A daemon that died mid-sweep: on the next start the task and the sweep go back to the
  // queue, and the next lease is the same task with its measurements kept.
  ASSERT_EQ(*st.tasks().RequeueOrphans(), 1);
  EXPECT_EQ(st.sweeps().Get(id)->status, SweepStatus::kQueued);
  auto again = st.tasks().LeaseNext(runner);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->id, (*task)->id);
  EXPECT_EQ((*again)->attempts, 2);
  EXPECT_EQ(TaskSink(st, **again).Existing("m64_n32_k16")->size(), 2u);
  EXPECT_EQ(*st.tasks().Finish((*again)->id, SweepStatus::kDone, ""), false);  // one task left
  auto last = st.tasks().LeaseNext(runner);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ(*st.tasks().Finish((*last)->id, SweepStatus::kDone, ""), true);
  auto done = st.sweeps().Get(id);
  EXPECT_EQ(done->status, SweepStatus::kDone);
  EXPECT_FALSE(done->finished_at.empty());
  EXPECT_FALSE(st.sweeps().Get(id + 100));
  EXPECT_EQ(st.sweeps().Get(id + 100).error().code, ErrorCode::kNotFound);
}

// The transfer prior of a sweep's task: passing measurements of earlier sweeps with the same
// kernel, dtype, hardware and threads, and of the sweep's own earlier tasks; not a later
// sweep's, not another thread count's, not the task's own bucket or later ones.
TEST_F(StoreTest, PriorMeasurementsComeFromEarlierMatchingSweepsAndTasks) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.hardware().Upsert(HardwareProfile::Detect(2));
  ASSERT_TRUE(hw_id);
  // Records through the task of (sweep, bucket), as the runner does.
  auto record = [&](int64_t sweep, const std::string& bucket, int64_t block_m, tuner::Outcome outcome) {
    auto tasks = st.tasks().List(sweep);
    ASSERT_TRUE(tasks);
    for (const TaskRecord& t : *tasks) {
      if (t.bucket != bucket) continue;
      tuner::Measurement m = M(sweep, bucket, block_m, outcome);
      ASSERT_TRUE(TaskSink(st, t).Record(m, 1, 5));
      return;
    }
    FAIL() << "no task for " << bucket;
  };
  tuner::SweepRequest other_threads = Request();
  other_threads.threads = 1;
  const int64_t a = CreateSweep(st, *hw_id);
  const int64_t b = CreateSweep(st, *hw_id, other_threads);
  record(a, "m64_n32_k16", 16, tuner::Outcome::kOk);
  record(a, "m64_n32_k16", 32, tuner::Outcome::kCrashed);
  record(a, "m1_n2_k4", 48, tuner::Outcome::kOk);
  record(b, "m64_n32_k16", 64, tuner::Outcome::kOk);
  tuner::SweepRequest transfer = Request();
  transfer.strategy = tuner::Strategy::kTransfer;
  const int64_t c = CreateSweep(st, *hw_id, transfer);
  EXPECT_EQ(st.sweeps().Get(c)->request.strategy, tuner::Strategy::kTransfer);
  record(c, "m64_n32_k16", 80, tuner::Outcome::kOk);
  const int64_t d = CreateSweep(st, *hw_id, transfer);

  auto prior_c = st.measurements().ListPrior(c);
  ASSERT_TRUE(prior_c) << prior_c.error().ToString();
  ASSERT_EQ(prior_c->size(), 2u);  // a's two passing configs; not a's crash, b (1 thread) or c itself
  EXPECT_EQ((*prior_c)[0].config.Get("block_m"), 16);
  EXPECT_EQ((*prior_c)[0].problem.dims, kShapeA);
  EXPECT_EQ((*prior_c)[1].bucket, "m1_n2_k4");
  auto prior_d = st.measurements().ListPrior(d);
  ASSERT_TRUE(prior_d);
  EXPECT_EQ(prior_d->size(), 3u);  // a's two and c's

  // d's tasks (ordinal 0: m64_n32_k16, 1: m1_n2_k4): the second task's prior (what the sink
  // of that task serves) adds what d measured in its first bucket, not in the second.
  record(d, "m64_n32_k16", 112, tuner::Outcome::kOk);
  record(d, "m1_n2_k4", 128, tuner::Outcome::kOk);
  auto tasks = st.tasks().List(d);
  ASSERT_TRUE(tasks);
  ASSERT_EQ(tasks->size(), 2u);
  EXPECT_EQ(TaskSink(st, (*tasks)[0]).PriorMeasurements()->size(), 3u);
  auto second = TaskSink(st, (*tasks)[1]).PriorMeasurements();
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 4u);
  EXPECT_EQ(second->back().config.Get("block_m"), 112);
}

// Sweeps queued before migration 0006 have no tasks; the daemon adds them (BackfillTasks).
TEST_F(StoreTest, TasksCanBeAddedToASweepWithoutAny) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.hardware().Upsert(HardwareProfile::Detect(1));
  auto created = st.sweeps().Create(Request(), *hw_id, 1, "test", {});
  ASSERT_TRUE(created);
  EXPECT_TRUE(st.tasks().List(created->id)->empty());
  const Claimant runner = test::LiveClaimant();
  auto none = st.tasks().LeaseNext(runner);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  ASSERT_TRUE(st.tasks().Add(created->id, {TaskPlan{"m1_n2_k4", kShapeB, 3}}));
  EXPECT_EQ(st.sweeps().Get(created->id)->progress_total, 3);
  auto leased = st.tasks().LeaseNext(runner);
  ASSERT_TRUE(leased && *leased);
  EXPECT_EQ((*leased)->shape, kShapeB);
  // A task that fails fails the sweep, with its error.
  EXPECT_EQ(*st.tasks().Finish((*leased)->id, SweepStatus::kFailed, "boom"), true);
  EXPECT_EQ(st.sweeps().Get(created->id)->status, SweepStatus::kFailed);
  EXPECT_EQ(st.sweeps().Get(created->id)->error, "boom");
}

TEST_F(StoreTest, TunedEntriesUpsertAndListInKeyOrder) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.hardware().Upsert(HardwareProfile::Detect(1));
  const int64_t sweep = CreateSweep(st, *hw_id);
  auto task = st.tasks().LeaseNext(test::LiveClaimant());
  ASSERT_TRUE(task && *task);
  tuner::Measurement m = M(sweep, "m64_n32_k16", 96);
  ASSERT_TRUE(TaskSink(st, **task).Record(m, 1, 1));
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = "x86_64.avx2.amd.fam25_mod1.t1";
  e.bucket = "m128_n128_k128";
  e.config = NamedInts({{"block_m", 96}, {"block_n", 256}, {"block_k", 128}});
  e.median_ns = 1234.5;
  e.samples = 5;
  e.sweep_id = sweep;
  e.measurement_id = m.id;
  e.measured_at = "2026-01-01T00:00:00.000Z";
  tuner::TunedEntry other = e;
  other.hardware_key = "x86_64.avx2.amd.fam25_mod1.t0";
  ASSERT_TRUE(st.tuned().Upsert(e));
  ASSERT_TRUE(st.tuned().Upsert(other));
  e.median_ns = 1000;  // a newer winner replaces the row
  ASSERT_TRUE(st.tuned().Upsert(e));
  auto rows = st.tuned().List("matmul");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].hardware_key, other.hardware_key);
  EXPECT_EQ((*rows)[1].median_ns, 1000);
  EXPECT_EQ((*rows)[1].config, e.config);
  EXPECT_TRUE(st.tuned().List("nope")->empty());
  EXPECT_EQ(st.tuned().List()->size(), 2u);
  // Fingerprints (migration 0010): none stored reads back as unknown (empty), one as itself.
  EXPECT_EQ((*rows)[1].fingerprint, "");
  e.fingerprint = "0123456789abcdef";
  ASSERT_TRUE(st.tuned().Upsert(e));
  EXPECT_EQ((*st.tuned().Get(e.kernel, e.hardware_key, e.dtype, e.bucket))->fingerprint, "0123456789abcdef");
  EXPECT_EQ(m.fingerprint, "");
  tuner::Measurement stamped = M(sweep, "m64_n32_k16", 48);
  stamped.fingerprint = "fedcba9876543210";
  ASSERT_TRUE(TaskSink(st, **task).Record(stamped, 2, 2));
  auto stored = st.measurements().ListBucket(sweep, "m64_n32_k16");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[0].fingerprint, "");
  EXPECT_EQ((*stored)[1].fingerprint, "fedcba9876543210");
}

TEST_F(StoreTest, OverridesUpsertListAndDelete) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  OverrideRecord o;
  o.kernel = "matmul";
  o.hardware_key = "x86_64.avx2";
  o.bucket = "m64_n32_k16";
  o.config = NamedInts({{"block_m", 48}});
  o.reason = "pinned";
  auto first = st.overrides().Upsert(o);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_GT(first->id, 0);
  EXPECT_FALSE(first->created_at.empty());
  o.reason = "repinned";  // the same key replaces the row
  ASSERT_TRUE(st.overrides().Upsert(o));
  auto rows = st.overrides().List();
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().reason, "repinned");
  EXPECT_EQ(rows->front().expires_at, "");
  ASSERT_TRUE(st.overrides().Delete(rows->front().id));
  EXPECT_EQ(st.overrides().Delete(rows->front().id).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(st.overrides().List()->empty());
}

MissCount Miss(const std::string& hw, const std::string& bucket, int64_t fallback, int64_t nearest, int64_t defaulted,
               const std::string& first, const std::string& last, const NamedInts& dims = kShapeA) {
  MissCount c;
  c.kernel = "matmul";
  c.hardware_key = hw;
  c.bucket = bucket;
  c.dims = dims;
  c.fallback = fallback;
  c.nearest = nearest;
  c.defaulted = defaulted;
  c.first_seen_at = first;
  c.last_seen_at = last;
  return c;
}

TEST_F(StoreTest, MissBatchesAddToTheirRowsAndListMostCountedFirst) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  // First batch: two buckets on one key, one on a key that only shares a textual prefix.
  ASSERT_TRUE(st.misses().Add(
      {Miss("x86_64.avx2.amd.f1.t1", "m64_n32_k16", 2, 0, 1, "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:05.000Z"),
       Miss("x86_64.avx2.amd.f1.t1", "m1_n2_k4", 0, 0, 2, "2026-01-02T00:00:01.000Z", "2026-01-02T00:00:01.000Z",
            kShapeB),
       Miss("x86_64.avx2x.t1", "m64_n32_k16", 0, 1, 0, "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:00.000Z")}));
  // Second batch: the same first bucket again, seen earlier and later than before, with other
  // dims (the row keeps the ones it was created with); counts add up.
  ASSERT_TRUE(st.misses().Add({Miss("x86_64.avx2.amd.f1.t1", "m64_n32_k16", 1, 3, 4, "2026-01-01T00:00:00.000Z",
                                    "2026-01-03T00:00:00.000Z", kShapeB)}));
  ASSERT_TRUE(st.misses().Add({}));  // an empty batch writes nothing

  auto all = st.misses().List(MissFilter{});
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->size(), 3u);
  const MissCount& top = (*all)[0].counts;
  EXPECT_EQ(top.bucket, "m64_n32_k16");
  EXPECT_EQ(top.hardware_key, "x86_64.avx2.amd.f1.t1");
  EXPECT_EQ(top.fallback, 3);
  EXPECT_EQ(top.nearest, 3);
  EXPECT_EQ(top.defaulted, 5);
  EXPECT_EQ(top.count(), 11);
  EXPECT_EQ(top.dims, kShapeA);
  EXPECT_EQ(top.first_seen_at, "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(top.last_seen_at, "2026-01-03T00:00:00.000Z");
  EXPECT_EQ((*all)[1].counts.count(), 2);
  EXPECT_EQ((*all)[1].counts.dims, kShapeB);
  EXPECT_EQ((*all)[2].counts.count(), 1);

  // The hardware filter takes whole key components; the kernel filter; paging by offset.
  MissFilter f;
  f.hardware_prefix = "x86_64.avx2";
  auto avx2 = st.misses().List(f);
  ASSERT_TRUE(avx2);
  EXPECT_EQ(avx2->size(), 2u);
  f.hardware_prefix = "x86_64.avx2x.t1";
  EXPECT_EQ(st.misses().List(f)->size(), 1u);
  f = MissFilter{};
  f.kernel = "flash_attention";
  EXPECT_TRUE(st.misses().List(f)->empty());
  f = MissFilter{};
  f.offset = 1;
  f.limit = 1;
  auto page = st.misses().List(f);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ(page->front().id, (*all)[1].id);
}

// A database written by a build with migrations 0001-0003 only (sweeps.strategy limited to
// exhaustive/random) is rebuilt by 0005, 0007 and 0008 without losing a row or a reference.
TEST_F(StoreTest, MigrationRebuildsSweepsKeepingRowsAndReferences) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    int applied = 0;
    for (const auto& m : Migrations()) {
      if (m.version > 3) break;
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
  EXPECT_EQ(st.maintenance().SchemaVersion(), LatestSchemaVersion());
  auto old = st.sweeps().Get(7);
  ASSERT_TRUE(old) << old.error().ToString();
  EXPECT_EQ(old->request.strategy, tuner::Strategy::kRandom);
  EXPECT_EQ(old->request.budget, 3);
  EXPECT_EQ(old->request.budget_seconds, 0);
  EXPECT_EQ(old->environment.compiler, "");
  EXPECT_EQ(st.measurements().ListBucket(7, "m1_n2_k4")->size(), 1u);
  EXPECT_EQ(st.tuned().List("matmul")->size(), 1u);
  // Every strategy is accepted, and foreign keys still hold after the rebuilds.
  for (size_t i = 0; i < std::size(tuner::kStrategyNames); ++i) {
    tuner::SweepRequest r = Request();
    r.strategy = static_cast<tuner::Strategy>(i);
    r.budget_seconds = 12.5;
    auto created = st.sweeps().Create(r, 1, 1, "new", {});
    ASSERT_TRUE(created) << created.error().ToString();
    EXPECT_EQ(st.sweeps().Get(created->id)->request.strategy, r.strategy);
    EXPECT_EQ(st.sweeps().Get(created->id)->request.budget_seconds, 12.5);
  }
  tuner::Measurement orphan = M(999, "b", 1);
  EXPECT_FALSE(st.measurements().Record(orphan, 0, 1));
}

TEST_F(StoreTest, EnvironmentFinalRoundAndIncumbentRoundTrip) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.hardware().Upsert(HardwareProfile::Detect(1));
  tuner::SweepRequest r = Request();
  const int64_t sweep = CreateSweep(st, *hw_id, r);
  auto task = st.tasks().LeaseNext(test::LiveClaimant());
  ASSERT_TRUE(task && *task);
  TaskSink sink(st, **task);
  tuner::timing::SweepEnvironment env = tuner::timing::CaptureEnvironment("blocktune test");
  ASSERT_TRUE(sink.RecordEnvironment(env));
  auto rec = st.sweeps().Get(sweep);
  EXPECT_EQ(rec->environment.load_average, env.load_average);
  EXPECT_EQ(rec->environment.affinity, env.affinity);
  EXPECT_EQ(rec->environment.compiler, env.compiler);
  EXPECT_EQ(rec->environment.build_flags, env.build_flags);
  EXPECT_EQ(rec->environment.tool_version, "test");  // the tool that created the sweep

  tuner::FinalRound round;
  round.sweep_id = sweep;
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
  ASSERT_TRUE(sink.RecordFinalRound(round));
  auto no_verdict = st.decisions().Get(sweep, round.bucket);
  ASSERT_TRUE(no_verdict) << no_verdict.error().ToString();
  EXPECT_FALSE(no_verdict->verdict.has_value());
  EXPECT_EQ(no_verdict->rounds, 1);
  tuner::Verdict v;
  v.config = round.candidates[0].config;
  v.against = "incumbent";
  v.reference = round.candidates[1].config;
  v.config_ns = 47.5;
  v.reference_ns = 48.5;
  v.gain = 0.0206;
  v.noise_band = 0.03;
  v.cycles = 9;
  v.dropped = 1;
  v.rounds = 2;
  round.verdict = v;
  round.rounds = 2;
  ASSERT_TRUE(sink.RecordFinalRound(round));  // a resumed sweep records its round again
  auto got = st.decisions().Get(sweep, round.bucket);
  ASSERT_TRUE(got) << got.error().ToString();
  ASSERT_EQ(got->candidates.size(), 2u);
  EXPECT_EQ(got->chosen, round.chosen);
  EXPECT_EQ(got->incumbent, round.incumbent);
  EXPECT_EQ(got->candidates[0].median_ns, 48);
  EXPECT_EQ(got->decision, "kept incumbent");
  EXPECT_EQ(got->rounds, 2);
  ASSERT_TRUE(got->verdict.has_value());
  EXPECT_EQ(got->verdict->config, v.config);
  EXPECT_EQ(got->verdict->against, "incumbent");
  EXPECT_EQ(got->verdict->reference, v.reference);
  EXPECT_EQ(got->verdict->config_ns, 47.5);
  EXPECT_EQ(got->verdict->reference_ns, 48.5);
  EXPECT_EQ(got->verdict->gain, 0.0206);
  EXPECT_EQ(got->verdict->noise_band, 0.03);
  EXPECT_FALSE(got->verdict->beats);
  EXPECT_EQ(got->verdict->cycles, 9);
  EXPECT_EQ(got->verdict->dropped, 1);
  EXPECT_EQ(got->verdict->rounds, 2);
  EXPECT_EQ(st.decisions().Get(sweep, "other").error().code, ErrorCode::kNotFound);

  auto none = sink.Incumbent("matmul", "hw", DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  tuner::Measurement m = M(sweep, "m64_n32_k16", 96);
  ASSERT_TRUE(sink.Record(m, 1, 1));
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = "hw";
  e.bucket = "m64_n32_k16";
  e.config = m.config;
  e.median_ns = 96;
  e.sweep_id = sweep;
  e.measurement_id = m.id;
  ASSERT_TRUE(st.tuned().Upsert(e));
  auto inc = sink.Incumbent("matmul", "hw", DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(inc && *inc);
  EXPECT_EQ((*inc)->config, e.config);
  EXPECT_FALSE(*sink.Incumbent("matmul", "hw", DType::kBF16, "m64_n32_k16"));

  // A sink's cancel predicate is what the engine polls.
  bool stop = false;
  TaskSink cancellable(st, **task, [&] { return stop; });
  EXPECT_FALSE(cancellable.Cancelled());
  stop = true;
  EXPECT_TRUE(cancellable.Cancelled());
  EXPECT_FALSE(sink.Cancelled());
}

TEST_F(StoreTest, StatsCountSweepsAndMeasurements) {
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  Store& st = **s;
  auto hw_id = st.hardware().Upsert(HardwareProfile::Detect(1));
  const int64_t sweep = CreateSweep(st, *hw_id);
  auto task = st.tasks().LeaseNext(test::LiveClaimant());
  ASSERT_TRUE(task && *task);
  tuner::Measurement a = M(sweep, "m64_n32_k16", 16);
  tuner::Measurement b = M(sweep, "m64_n32_k16", 32, tuner::Outcome::kTimeout);
  ASSERT_TRUE(TaskSink(st, **task).Record(a, 1, 2));
  ASSERT_TRUE(TaskSink(st, **task).Record(b, 2, 2));
  auto stats = st.maintenance().Stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->sweeps_by_status, (std::vector<std::pair<std::string, int64_t>>{{"running", 1}}));
  EXPECT_EQ(stats->measurements_by_outcome, (std::vector<std::pair<std::string, int64_t>>{{"ok", 1}, {"timeout", 1}}));
  EXPECT_GT(stats->db_bytes, 0);
}

}  // namespace
}  // namespace blocktune::store
