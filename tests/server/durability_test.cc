// The store's durable-sweep operations: a task leased by a runner that died goes back to the
// queue on restart (its lease counted, no measurement lost), a config can be committed only
// once, finishing the last task finishes the sweep, and cancel stops unfinished tasks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "schema/store.h"

namespace blocktune::store {
namespace {

class Durability : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/durability_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::filesystem::remove(path_);
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
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
    auto hw_id = store_->UpsertHardware(hw);
    EXPECT_TRUE(hw_id);
    auto created = store_->CreateSweepWithTasks(r, *hw_id, 1, "test", {{"m8_n8_k8", r.shapes[0], 2}, {"m64_n8_k8", r.shapes[1], 2}},
                                                key, canonical);
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
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(Durability, ALeaseLostToACrashIsRequeuedAndResumes) {
  const int64_t id = CreateSweep();
  auto t = store_->LeaseNextTask();
  ASSERT_TRUE(t && *t);
  EXPECT_EQ((*t)->bucket, "m8_n8_k8");
  EXPECT_EQ((*t)->attempts, 1);
  auto m = M(id, "m8_n8_k8", 48);
  ASSERT_TRUE(store_->RecordTaskMeasurement(m, (*t)->id, 2));
  // The same config again is refused by the database, not stored twice.
  auto again = M(id, "m8_n8_k8", 48);
  EXPECT_FALSE(store_->RecordTaskMeasurement(again, (*t)->id, 2));
  // "Crash": reopen without finishing the task.
  Reopen();
  EXPECT_EQ(store_->GetSweep(id)->status, SweepStatus::kRunning);
  ASSERT_TRUE(store_->RequeueInterrupted());
  EXPECT_EQ(store_->GetSweep(id)->status, SweepStatus::kQueued);
  auto resumed = store_->LeaseNextTask();
  ASSERT_TRUE(resumed && *resumed);
  EXPECT_EQ((*resumed)->id, (*t)->id);
  EXPECT_EQ((*resumed)->attempts, 2);
  auto existing = store_->ListMeasurements(id, "m8_n8_k8");
  ASSERT_TRUE(existing);
  ASSERT_EQ(existing->size(), 1u);
  EXPECT_EQ(existing->front().samples_ns.size(), 3u);
  auto m2 = M(id, "m8_n8_k8", 96);
  ASSERT_TRUE(store_->RecordTaskMeasurement(m2, (*resumed)->id, 2));
  auto done1 = store_->FinishTask((*resumed)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(done1);
  EXPECT_FALSE(*done1);  // one task left
  auto t2 = store_->LeaseNextTask();
  ASSERT_TRUE(t2 && *t2);
  auto done2 = store_->FinishTask((*t2)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(done2);
  EXPECT_TRUE(*done2);
  auto sweep = store_->GetSweep(id);
  EXPECT_EQ(sweep->status, SweepStatus::kDone);
  auto progress = store_->GetProgress(id);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->done, 2);
  EXPECT_EQ(progress->total, 4);
  EXPECT_EQ(progress->tasks_done, 2);
  auto none = store_->LeaseNextTask();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST_F(Durability, CancelStopsUnfinishedTasksOnce) {
  const int64_t id = CreateSweep();
  auto t = store_->LeaseNextTask();
  ASSERT_TRUE(t && *t);
  auto cancelled = store_->CancelSweep(id);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, SweepStatus::kCancelled);
  // The runner finishing its task afterwards does not revive the sweep.
  auto fin = store_->FinishTask((*t)->id, SweepStatus::kDone, "");
  ASSERT_TRUE(fin);
  EXPECT_FALSE(*fin);
  EXPECT_EQ(store_->GetSweep(id)->status, SweepStatus::kCancelled);
  auto next = store_->LeaseNextTask();
  ASSERT_TRUE(next);
  EXPECT_FALSE(*next);
  auto again = store_->CancelSweep(id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(store_->CancelSweep(999).error().code, ErrorCode::kNotFound);
}

TEST_F(Durability, IdempotencyKeysReturnTheFirstSweep) {
  const int64_t a = CreateSweep("k", "body-1");
  tuner::SweepRequest r;
  r.kernel = "matmul";
  r.shapes = {NamedInts({{"m", 8}, {"n", 8}, {"k", 8}})};
  auto replay = store_->CreateSweepWithTasks(r, 1, 1, "test", {}, "k", "body-1");
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->id, a);
  EXPECT_FALSE(replay->created);
  auto conflict = store_->CreateSweepWithTasks(r, 1, 1, "test", {}, "k", "body-2");
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, ErrorCode::kAlreadyExists);
  auto list = store_->ListSweepsPage(std::nullopt, 0, 10);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 1u);
}

TEST_F(Durability, BackupIsAConsistentDatabase) {
  CreateSweep();
  const std::string copy = path_ + ".backup";
  std::filesystem::remove(copy);
  ASSERT_TRUE(store_->BackupTo(copy));
  EXPECT_FALSE(store_->BackupTo(copy)) << "an existing file is never overwritten";
  auto other = Store::Open(copy);
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ((*other)->IntegrityCheck().value_or(""), "ok");
  EXPECT_EQ((*other)->ListSweepsPage(std::nullopt, 0, 10)->size(), 1u);
  other->reset();
  std::filesystem::remove(copy);
}

}  // namespace
}  // namespace blocktune::store
