// Claims on sweeps across processes (store/executors_table.h, TasksTable::LeaseNext): a sweep is
// its creator's; a live owner keeps it; one whose process ended, whose claim expired or who
// stopped cleanly loses it to the next executor that leases, with its committed measurements
// kept and its own later commits refused; and four processes on one file, one killed mid-task,
// store every (sweep, bucket, config) exactly once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "store/store.h"
#include "tests/common/claimants.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::store {
namespace {

const NamedInts kShape({{"m", 8}, {"n", 8}, {"k", 8}});

class Leases : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(path_);
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
    auto hw = store_->hardware().Upsert(HardwareProfile{});
    ASSERT_TRUE(hw);
    hw_id_ = *hw;
  }
  // A sweep of `tasks` one-config-per-task buckets, owned by `owner` if given.
  int64_t CreateSweep(const Claimant* owner, int tasks = 2, int64_t lease_ms = 60000, int64_t planned = 2) {
    tuner::SweepRequest r;
    r.kernel = "matmul";
    std::vector<TaskPlan> plans;
    for (int i = 0; i < tasks; ++i) {
      r.shapes.push_back(kShape);
      std::string bucket = "b";  // (not "b" + ...: g++ 12 -O3 warns -Wrestrict on it, a false positive)
      bucket += std::to_string(i);
      plans.push_back({bucket, kShape, planned});
    }
    auto created = store_->sweeps().Create(r, hw_id_, 1, "test", plans, {}, {}, {},
                                           owner != nullptr ? &owner->self : nullptr, lease_ms);
    EXPECT_TRUE(created) << created.error().ToString();
    return created ? created->id : 0;
  }
  static tuner::Measurement M(int64_t sweep, const std::string& bucket, int64_t block_m) {
    tuner::Measurement m;
    m.sweep_id = sweep;
    m.bucket = bucket;
    m.problem.dims = kShape;
    m.config = NamedInts({{"block_m", block_m}});
    m.samples_ns = {1.0, 2.0, 3.0};
    m.median_ns = 2;
    return m;
  }
  test::ScratchDir dir_{"leases"};
  std::string path_ = dir_.File("db");
  std::unique_ptr<Store> store_;
  int64_t hw_id_ = 0;
};

TEST_F(Leases, ALiveOwnersSweepIsNotClaimedByAnother) {
  const Claimant a = test::LiveClaimant();
  const Claimant b = test::LiveClaimant();  // another executor of a live process
  const int64_t id = CreateSweep(&a);
  EXPECT_EQ(store_->sweeps().Get(id)->owner, a.self.id);
  auto none = store_->tasks().LeaseNext(b);
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_FALSE(*none);
  auto mine = store_->tasks().LeaseNext(a);
  ASSERT_TRUE(mine && *mine);
  EXPECT_EQ((*mine)->sweep_id, id);
  EXPECT_EQ((*mine)->ordinal, 0);
  EXPECT_TRUE((*mine)->taken_from.empty());
  // The owner's own commits go through; another executor's are refused, nothing written.
  auto m = M(id, "b0", 16);
  ASSERT_TRUE(store_->measurements().Record(m, (*mine)->id, 2, a.self.id));
  auto other = M(id, "b0", 32);
  auto refused = store_->measurements().Record(other, (*mine)->id, 2, b.self.id);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(IsLostClaim(refused.error())) << refused.error().ToString();
  EXPECT_EQ(store_->measurements().ListBucket(id, "b0")->size(), 1u);
  // Nor can it finish the owner's task.
  EXPECT_FALSE(*store_->tasks().Finish((*mine)->id, SweepStatus::kDone, "", b.self.id));
  EXPECT_EQ(store_->tasks().List(id)->front().status, SweepStatus::kRunning);
  // The sweep's JSON names its executor (the row the create registered).
  auto rec = store_->sweeps().Get(id);
  ASSERT_TRUE(rec->executor);
  EXPECT_EQ(rec->executor->pid, static_cast<int64_t>(getpid()));
  EXPECT_EQ(rec->executor->kind, "daemon");
}

TEST_F(Leases, ASweepOfAProcessThatEndedIsTakenOverWithItsMeasurements) {
  const Claimant killed = test::GoneClaimant();
  const Claimant survivor = test::LiveClaimant();
  const int64_t id = CreateSweep(&killed);
  auto t = store_->tasks().LeaseNext(killed);
  ASSERT_TRUE(t && *t);
  auto m = M(id, "b0", 16);
  ASSERT_TRUE(store_->measurements().Record(m, (*t)->id, 2, killed.self.id));
  // The survivor takes the whole sweep at once (no expiry to wait for on this machine): the
  // killed runner's task again, its measurement kept.
  auto took = store_->tasks().LeaseNext(survivor);
  ASSERT_TRUE(took && *took) << "the killed runner's task";
  EXPECT_EQ((*took)->id, (*t)->id);
  EXPECT_EQ((*took)->attempts, 2);
  EXPECT_NE((*took)->taken_from.find("its process ended"), std::string::npos) << (*took)->taken_from;
  EXPECT_EQ(store_->sweeps().Get(id)->owner, survivor.self.id);
  EXPECT_EQ(store_->measurements().ListBucket(id, "b0")->size(), 1u);
  // Were the old owner still writing, nothing of it would land.
  auto late = M(id, "b0", 32);
  auto refused = store_->measurements().Record(late, (*t)->id, 2, killed.self.id);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(IsLostClaim(refused.error()));
  auto next = M(id, "b0", 32);
  ASSERT_TRUE(store_->measurements().Record(next, (*took)->id, 2, survivor.self.id));
  EXPECT_FALSE(*store_->tasks().Finish((*took)->id, SweepStatus::kDone, "", survivor.self.id));
  auto second = store_->tasks().LeaseNext(survivor);
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->ordinal, 1);
  EXPECT_TRUE((*second)->taken_from.empty());  // its own by now
  EXPECT_TRUE(*store_->tasks().Finish((*second)->id, SweepStatus::kDone, "", survivor.self.id));
  EXPECT_EQ(store_->sweeps().Get(id)->status, SweepStatus::kDone);
}

TEST_F(Leases, AnotherMachinesClaimHoldsUntilItExpires) {
  Claimant far = test::LiveClaimant();
  far.self.host = "another-host";  // its pid means nothing here: only the expiry counts
  const Claimant here = test::LiveClaimant();
  const int64_t held = CreateSweep(&far, 1, /*lease_ms=*/60000);
  auto none = store_->tasks().LeaseNext(here);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  const int64_t lapsed = CreateSweep(&far, 1, /*lease_ms=*/-1000);  // renewals stopped a second ago
  // The expiry is the row's: the second create renewed it to a second ago for both sweeps.
  auto took = store_->tasks().LeaseNext(here);
  ASSERT_TRUE(took && *took);
  EXPECT_EQ((*took)->sweep_id, held);
  EXPECT_NE((*took)->taken_from.find("its claim expired"), std::string::npos) << (*took)->taken_from;
  EXPECT_EQ(store_->sweeps().Get(lapsed)->owner, far.self.id);  // one sweep per lease
  // Renewing keeps a claim: `far` renews, and `here` (busy with `held`) leaves `lapsed` to it.
  auto renewed = store_->executors().Renew(far.self, 60000);
  ASSERT_TRUE(renewed);
  EXPECT_TRUE(*renewed);
  const Claimant third = test::LiveClaimant();
  auto still = store_->tasks().LeaseNext(third);
  ASSERT_TRUE(still);
  EXPECT_FALSE(*still);
}

TEST_F(Leases, RenewWritesOnlyWhileHoldingWork) {
  const Claimant a = test::LiveClaimant();
  auto idle = store_->executors().Renew(a.self, 60000);
  ASSERT_TRUE(idle);
  EXPECT_FALSE(*idle);
  EXPECT_FALSE(*store_->executors().Get(a.self.id));  // never registered: it held nothing
  const int64_t id = CreateSweep(&a, 1, /*lease_ms=*/1000);
  const int64_t before = (*store_->executors().Get(a.self.id))->expires_ms;
  auto busy = store_->executors().Renew(a.self, 60000);
  ASSERT_TRUE(busy);
  EXPECT_TRUE(*busy);
  EXPECT_GT((*store_->executors().Get(a.self.id))->expires_ms, before + 30000);
  ASSERT_TRUE(store_->sweeps().Cancel(id));
  EXPECT_FALSE(*store_->executors().Renew(a.self, 60000));  // nothing unfinished left
}

TEST_F(Leases, ACleanStopHandsItsSweepsOverAtOnce) {
  const Claimant a = test::LiveClaimant();
  const Claimant b = test::LiveClaimant();
  const int64_t id = CreateSweep(&a);
  auto t = store_->tasks().LeaseNext(a);
  ASSERT_TRUE(t && *t);
  ASSERT_TRUE(store_->executors().Unregister(a.self.id));
  EXPECT_FALSE(*store_->executors().Get(a.self.id));
  EXPECT_EQ(store_->sweeps().Get(id)->owner, "");
  EXPECT_EQ(store_->tasks().List(id)->front().status, SweepStatus::kQueued);
  auto took = store_->tasks().LeaseNext(b);
  ASSERT_TRUE(took && *took);
  EXPECT_EQ((*took)->id, (*t)->id);
  EXPECT_TRUE((*took)->taken_from.empty());  // nobody's: nothing was taken from anyone
}

TEST_F(Leases, ALocalExecutorRunsOnlyItsSweepsAndKernelsItHas) {
  const int64_t free_sweep = CreateSweep(nullptr);
  Claimant local = test::LiveClaimant("local");
  local.only = std::set<int64_t>{};
  auto none = store_->tasks().LeaseNext(local);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  Claimant daemon = test::LiveClaimant();
  daemon.can_run = [](const std::string& kernel) { return kernel != "matmul"; };
  EXPECT_FALSE(*store_->tasks().LeaseNext(daemon));
  local.only->insert(free_sweep);
  auto mine = store_->tasks().LeaseNext(local);
  ASSERT_TRUE(mine && *mine);
  EXPECT_EQ((*mine)->sweep_id, free_sweep);
}

TEST_F(Leases, RequeueOrphansLeavesLiveOwnersAlone) {
  const Claimant live = test::LiveClaimant();
  const Claimant killed = test::GoneClaimant();
  const int64_t kept = CreateSweep(&live);
  const int64_t orphan = CreateSweep(&killed);
  ASSERT_TRUE(*store_->tasks().LeaseNext(live));
  ASSERT_TRUE(*store_->tasks().LeaseNext(killed));
  auto n = store_->tasks().RequeueOrphans();
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(store_->sweeps().Get(kept)->status, SweepStatus::kRunning);
  EXPECT_EQ(store_->sweeps().Get(kept)->owner, live.self.id);
  EXPECT_EQ(store_->tasks().List(kept)->front().status, SweepStatus::kRunning);
  EXPECT_EQ(store_->sweeps().Get(orphan)->status, SweepStatus::kQueued);
  EXPECT_EQ(store_->sweeps().Get(orphan)->owner, "");
  EXPECT_EQ(store_->tasks().List(orphan)->front().status, SweepStatus::kQueued);
}

// Four processes on one file, each creating its own sweep (and one sweep nobody owns), each
// running whatever it may claim with its own connection; one is killed (_exit, its task left
// running) after 25 commits. Every sweep finishes with each of its configs stored once, and no
// process ever meets a UNIQUE failure.
TEST_F(Leases, FourProcessesOneKilledStoreEveryConfigOnce) {
  constexpr int kProcesses = 4;
  constexpr int kConfigs = 40;  // per task; 2 tasks per sweep
  constexpr int kKilledAfter = 25;
  CreateSweep(nullptr, 2, 60000, kConfigs);
  store_.reset();
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    // The child: its own connection and executor id; exit codes say what went wrong.
    auto opened = Store::Open(path_);
    if (!opened) _exit(10);
    Store& st = **opened;
    const Claimant me = test::LiveClaimant();
    tuner::SweepRequest r;
    r.kernel = "matmul";
    r.shapes = {kShape, kShape};
    if (!st.sweeps().Create(r, 1, 1, "test", {{"b0", kShape, kConfigs}, {"b1", kShape, kConfigs}}, {}, {}, {}, &me.self,
                            60000)) {
      _exit(11);
    }
    int committed = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto t = st.tasks().LeaseNext(me);
      if (!t) _exit(12);
      if (!*t) {
        auto left = st.sweeps().List(SweepStatus::kRunning, 10);
        auto queued = st.sweeps().List(SweepStatus::kQueued, 10);
        if (!left || !queued) _exit(13);
        if (left->empty() && queued->empty()) _exit(0);  // every sweep finished
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      const TaskRecord& task = **t;
      auto existing = st.measurements().ListBucket(task.sweep_id, task.bucket, false);
      if (!existing) _exit(14);
      std::set<int64_t> done;
      for (const auto& m : *existing) done.insert(m.config.Get("block_m").value_or(-1));
      bool lost = false;
      for (int64_t c = 0; c < kConfigs && !lost; ++c) {
        if (done.count(c)) continue;
        std::this_thread::sleep_for(std::chrono::microseconds(300));  // "measuring"
        auto m = M(task.sweep_id, task.bucket, c);
        if (auto s = st.measurements().Record(m, task.id, kConfigs, me.self.id); !s) {
          if (!IsLostClaim(s.error())) _exit(s.error().code == ErrorCode::kAlreadyExists ? 20 : 15);
          lost = true;
          continue;
        }
        if (++committed == kKilledAfter && p == 0) _exit(0);  // killed: no finish, task left running
      }
      if (!lost && !st.tasks().Finish(task.id, SweepStatus::kDone, "", me.self.id)) _exit(16);
    }
    _exit(17);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << pid << " (20: a UNIQUE failure)";
  }
  auto s = Store::Open(path_);
  ASSERT_TRUE(s);
  auto sweeps = (*s)->sweeps().List(std::nullopt, 100);
  ASSERT_TRUE(sweeps);
  ASSERT_EQ(sweeps->size(), static_cast<size_t>(kProcesses + 1));
  for (const auto& sw : *sweeps) {
    EXPECT_EQ(sw.status, SweepStatus::kDone) << "sweep " << sw.id;
    auto progress = (*s)->sweeps().Progress(sw.id);
    ASSERT_TRUE(progress);
    EXPECT_EQ(progress->done, 2 * kConfigs) << "sweep " << sw.id;
    for (const char* bucket : {"b0", "b1"}) {
      auto ms = (*s)->measurements().ListBucket(sw.id, bucket, false);
      ASSERT_TRUE(ms);
      std::set<int64_t> distinct;
      for (const auto& m : *ms) distinct.insert(m.config.Get("block_m").value_or(-1));
      EXPECT_EQ(ms->size(), static_cast<size_t>(kConfigs)) << "sweep " << sw.id << " " << bucket;
      EXPECT_EQ(distinct.size(), static_cast<size_t>(kConfigs)) << "sweep " << sw.id << " " << bucket;
    }
  }
}

}  // namespace
}  // namespace blocktune::store
