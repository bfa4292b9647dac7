// The store's durable-sweep operations: a task leased by a runner that died goes back to the
// queue on restart (its lease counted, no measurement lost; tests/store/leases_test.cc has the
// claims of several live processes), a config can be committed only
// once, finishing the last task finishes the sweep, cancel stops unfinished tasks, a draining
// daemon releases its task, and a backup is a consistent database.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"
#include "store/task_sink.h"
#include "tests/common/claimants.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::store {
namespace {

class Durability : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void TearDown() override { store_.reset(); }
  void Reopen() {
    store_.reset();
    auto s = Store::Open(path_);
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
  }
  int64_t CreateSweep(const std::string& key = "", const std::string& canonical = "req") {
    tuner::SweepRequest r;
    r.kernel = "matmul";
    r.shapes = {NamedInts({{"m", 8}, {"n", 8}, {"k", 8}}), NamedInts({{"m", 64}, {"n", 8}, {"k", 8}})};
    HardwareProfile hw;
    auto hw_id = store_->hardware().Upsert(hw);
    EXPECT_TRUE(hw_id);
    auto created = store_->sweeps().Create(
        r, *hw_id, 1, "test", {{"m8_n8_k8", r.shapes[0], 2}, {"m64_n8_k8", r.shapes[1], 2}}, key, canonical);
    EXPECT_TRUE(created) << created.error().ToString();
    return created->id;
  }
  tuner::Measurement M(int64_t sweep, const std::string& bucket, int64_t block_m) {
    tuner::Measurement m;
    m.sweep_id = sweep;
    m.bucket = bucket;
    m.problem.dims = NamedInts({{"m", 8}, {"n", 8}, {"k", 8}});
    m.config = NamedInts({{"block_m", block_m}});
    m.samples_ns = {1.0, 2.0, 3.0};
    m.median_ns = 2;
    return m;
  }
  // A runner killed mid-task (its process is gone), and the daemon that starts after it.
  const Claimant killed_ = test::GoneClaimant();
  const Claimant runner_ = test::LiveClaimant();
  test::ScratchDir dir_{"durability"};
  std::string path_ = dir_.File("db");
  std::unique_ptr<Store> store_;
};

TEST_F(Durability, ALeaseLostToACrashIsRequeuedAndResumes) {
  const int64_t id = CreateSweep();
  auto t = store_->tasks().LeaseNext(killed_);
  ASSERT_TRUE(t && *t);
  EXPECT_EQ((*t)->bucket, "m8_n8_k8");
  EXPECT_EQ((*t)->attempts, 1);
  auto m = M(id, "m8_n8_k8", 48);
  ASSERT_TRUE(store_->measurements().Record(m, (*t)->id, 2));
  // The same config again is refused by the database, not stored twice.
  auto again = M(id, "m8_n8_k8", 48);
  EXPECT_FALSE(store_->measurements().Record(again, (*t)->id, 2));
  // "Crash": reopen without finishing the task.
  Reopen();
  EXPECT_EQ(store_->sweeps().Get(id)->status, SweepStatus::kRunning);
  ASSERT_EQ(*store_->tasks().RequeueOrphans(), 1);
  EXPECT_EQ(store_->sweeps().Get(id)->status, SweepStatus::kQueued);
  EXPECT_EQ(store_->sweeps().Get(id)->owner, "");
  auto resumed = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(resumed && *resumed);
  EXPECT_EQ((*resumed)->id, (*t)->id);
  EXPECT_EQ((*resumed)->attempts, 2);
  auto existing = store_->measurements().ListBucket(id, "m8_n8_k8");
  ASSERT_TRUE(existing);
  ASSERT_EQ(existing->size(), 1u);
  EXPECT_EQ(existing->front().samples_ns.size(), 3u);
  auto m2 = M(id, "m8_n8_k8", 96);
  ASSERT_TRUE(store_->measurements().Record(m2, (*resumed)->id, 2));
  auto done1 = store_->tasks().Finish((*resumed)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(done1);
  EXPECT_FALSE(*done1);  // one task left
  auto t2 = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(t2 && *t2);
  auto done2 = store_->tasks().Finish((*t2)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(done2);
  EXPECT_TRUE(*done2);
  auto sweep = store_->sweeps().Get(id);
  EXPECT_EQ(sweep->status, SweepStatus::kDone);
  auto progress = store_->sweeps().Progress(id);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->done, 2);
  EXPECT_EQ(progress->total, 4);
  EXPECT_EQ(progress->tasks_done, 2);
  auto none = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST_F(Durability, CancelStopsUnfinishedTasksOnce) {
  const int64_t id = CreateSweep();
  auto t = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(t && *t);
  auto cancelled = store_->sweeps().Cancel(id);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, SweepStatus::kCancelled);
  // The runner finishing its task afterwards does not revive the sweep.
  auto fin = store_->tasks().Finish((*t)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(fin);
  EXPECT_FALSE(*fin);
  EXPECT_EQ(store_->sweeps().Get(id)->status, SweepStatus::kCancelled);
  auto next = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(next);
  EXPECT_FALSE(*next);
  auto again = store_->sweeps().Cancel(id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(store_->sweeps().Cancel(999).error().code, ErrorCode::kNotFound);
}

TEST_F(Durability, IdempotencyKeysReturnTheFirstSweep) {
  const int64_t a = CreateSweep("k", "body-1");
  tuner::SweepRequest r;
  r.kernel = "matmul";
  r.shapes = {NamedInts({{"m", 8}, {"n", 8}, {"k", 8}})};
  auto replay = store_->sweeps().Create(r, 1, 1, "test", {}, "k", "body-1");
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->id, a);
  EXPECT_FALSE(replay->created);
  auto conflict = store_->sweeps().Create(r, 1, 1, "test", {}, "k", "body-2");
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, ErrorCode::kAlreadyExists);
  auto list = store_->sweeps().ListPage(std::nullopt, 0, 10);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 1u);
}

// SIGTERM while a task runs: the runner gives the task back (Release) instead of finishing
// it; the next lease is the same task, and what it measured is still there.
TEST_F(Durability, AReleasedTaskIsLeasedAgainWithItsMeasurements) {
  const int64_t id = CreateSweep();
  auto t = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(t && *t);
  auto m = M(id, "m8_n8_k8", 48);
  ASSERT_TRUE(TaskSink(*store_, **t).Record(m, 1, 2));
  ASSERT_TRUE(store_->tasks().Release((*t)->id));
  auto tasks = store_->tasks().List(id);
  ASSERT_TRUE(tasks);
  EXPECT_EQ(tasks->front().status, SweepStatus::kQueued);
  auto again = store_->tasks().LeaseNext(runner_);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->id, (*t)->id);
  EXPECT_EQ((*again)->attempts, 2);
  EXPECT_EQ(TaskSink(*store_, **again).Existing("m8_n8_k8")->size(), 1u);
}

TEST_F(Durability, BackupIsAConsistentDatabase) {
  CreateSweep();
  const std::string copy = path_ + ".backup";
  std::filesystem::remove(copy);
  ASSERT_TRUE(store_->maintenance().BackupTo(copy));
  EXPECT_FALSE(store_->maintenance().BackupTo(copy)) << "an existing file is never overwritten";
  auto other = Store::Open(copy);
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ((*other)->maintenance().IntegrityCheck().value_or(""), "ok");
  EXPECT_EQ((*other)->sweeps().ListPage(std::nullopt, 0, 10)->size(), 1u);
  other->reset();
  std::filesystem::remove(copy);
}

}  // namespace
}  // namespace blocktune::store
