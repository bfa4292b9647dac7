// The fault matrix: every fault of the fault kernel on 1 of 50 configs and on 49 of 50, swept
// through WorkerEvaluator into a real SQLite store by the daemon's path (a sweep created with
// its task, the task leased, store::TaskSink, requeued after a "crash" and leased again). For
// each: the sweep completes, every config's stored outcome is exactly the expected one, no
// faulty config wins (with 49 faulty, the single good one does), a resumed sweep measures
// nothing again, every hang is killed within timeout + 1 s, and no child process (zombie or
// live) is left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

#include "store/store.h"
#include "store/task_sink.h"
#include "tests/common/claimants.h"
#include "tests/common/scratch_dir.h"
#include "tests/tuner/fault_kernel.h"
#include "tests/tuner/fault_test_util.h"
#include "tuner/isolation/worker_evaluator.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {
namespace {

// The fault kernel's config "id=N" -> N.
int64_t ConfigId(const std::string& config) {
  auto parsed = NamedInts::Parse(config);
  return parsed ? parsed->Get("id").value_or(-1) : -1;
}

using blocktune::testing::Fault;
using blocktune::testing::FaultName;
using blocktune::testing::FaultSpec;
using isolation::WorkerEvaluator;
using isolation::WorkerOptions;

// 300 ms is ~100x what a correct fault-kernel config needs (start-up, a 256-element
// verification and ~1 ms of timing), and keeps 49 hangs at ~15 s.
constexpr double kTimeoutS = 0.3;
// Far above the worker's own ~30 MiB and the largest correct instance (n = 64 floats), far
// below what 49 unbounded allocations would cost to reach if it were larger.
constexpr int64_t kMemoryLimitBytes = int64_t{128} << 20;

struct Expected {
  Outcome outcome;
  const char* detail;  // substring of the stored detail
};

Expected ExpectedFor(Fault f) {
  switch (f) {
    case Fault::kSegfault: return {Outcome::kCrashed, "SIGSEGV"};
    case Fault::kAbort: return {Outcome::kCrashed, "SIGABRT"};
    case Fault::kIllegalInstruction: return {Outcome::kCrashed, "SIGILL"};
    case Fault::kSpin: return {Outcome::kTimeout, "no verdict within 0.300 s"};
    case Fault::kAllocate: return {Outcome::kOutOfMemory, "allocation failed"};
    case Fault::kNan: return {Outcome::kNan, "non_finite="};
    case Fault::kHalfOutput: return {Outcome::kNan, "non_finite="};
    case Fault::kWritePastEnd: return {Outcome::kWrongResult, "wrote past the end of output 0"};
    case Fault::kModifyInputs: return {Outcome::kWrongResult, "inputs were modified"};
    case Fault::kFloodStdout: return {Outcome::kOk, ""};  // the flood must not disturb anything
    case Fault::kExitWithoutResult: return {Outcome::kWorkerLost, "exited with status 0 without a verdict"};
    case Fault::kNone: break;
  }
  return {Outcome::kOk, ""};
}

struct Case {
  Fault fault;
  int64_t faulty;
};

// For test names and failure messages ("spin on 49 of 50" rather than the bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << FaultName(c.fault) << " on " << c.faulty << " of 50"; }

class FaultMatrix : public ::testing::TestWithParam<Case> {
 protected:
  blocktune::test::ScratchDir dir_{"blocktune_fault_matrix"};
};

TEST_P(FaultMatrix, SweepRecordsTheOutcomeAndNeverChoosesAFaultyConfig) {
  const Case c = GetParam();
  const Expected expected = ExpectedFor(c.fault);
  const KernelSpec& spec = FaultSpec();

  auto opened = store::Store::Open(dir_.File("db"));
  ASSERT_TRUE(opened) << opened.error().ToString();
  store::Store& db = **opened;
  const HardwareProfile hw = HardwareProfile::Detect(1);
  auto hw_id = db.hardware().Upsert(hw);
  ASSERT_TRUE(hw_id);
  SweepRequest request;
  request.kernel = "fault";
  request.shapes = {NamedInts({{"n", 64}, {"fault", static_cast<int64_t>(c.fault)}, {"faulty", c.faulty}})};
  const std::string planned_bucket = spec.Bucket(Problem{request.dtype, request.shapes[0]}).first;
  auto created = db.sweeps().Create(request, *hw_id, spec.bucket_version(), "test",
                                    {store::TaskPlan{planned_bucket, request.shapes[0], testing::kFaultConfigs}});
  ASSERT_TRUE(created) << created.error().ToString();
  const int64_t sweep_id = created->id;
  // Leased by a runner that is then "killed" (its process gone), resumed by the next start.
  auto task = db.tasks().LeaseNext(test::GoneClaimant());
  ASSERT_TRUE(task && *task) << "the sweep's task";
  store::TaskSink sink(db, **task);

  SweepOptions options;
  options.timing.min_repetition_ns = 200e3;
  options.timing.repetitions = 2;
  // This matrix is about isolation, not timing quality: a config that floods stdout is noisy
  // (its output is drained by the parent while it runs) but correct, so it must stay `ok`.
  options.timing.max_cv = 1e9;
  WorkerOptions worker_options;
  worker_options.worker_path = testing::FaultWorkerPath();
  worker_options.timeout_s = kTimeoutS;
  worker_options.memory_limit_bytes = kMemoryLimitBytes;
  std::string bucket;
  {
    WorkerEvaluator worker(worker_options);
    testing::RecordingEvaluator recorder(worker, [&] { return worker.last_starved_s(); });
    options.evaluator = &recorder;
    auto winners = RunSweep(request, sweep_id, spec, hw, sink, options);
    ASSERT_TRUE(winners) << winners.error().ToString();

    // The winner is a config that passed; with 49 faulty configs it is the one good config.
    ASSERT_EQ(winners->size(), 1u);
    const int64_t winner_id = winners->front().config.Get("id").value_or(-1);
    bucket = winners->front().bucket;
    if (expected.outcome != Outcome::kOk) {
      EXPECT_GE(winner_id, c.faulty) << "a faulty config won";
      if (c.faulty == 49) {
        EXPECT_EQ(winner_id, 49);
      }
    }

    // Every config measured once; each hang was killed within timeout + 1 s (a correctness
    // bound with a second of slack for spawning the worker, not a speed claim). Time the
    // worker or this thread (which must wake up to kill it) spent waiting for a CPU on a
    // loaded machine is not counted (~0 on an idle one): the limit does not charge the worker
    // for it, and nothing can act while it is not allowed to run.
    EXPECT_EQ(recorder.calls.size(), static_cast<size_t>(testing::kFaultConfigs));
    if (c.fault == Fault::kSpin) {
      double max_wall_s = 0, max_adjusted_s = 0;
      for (const auto& call : recorder.calls) {
        if (ConfigId(call.config) >= c.faulty) continue;  // the search's order is seeded, not by id
        max_wall_s = std::max(max_wall_s, call.seconds);
        max_adjusted_s = std::max(max_adjusted_s, call.seconds - call.starved_s - call.self_starved_s);
        EXPECT_LE(call.seconds - call.starved_s - call.self_starved_s, kTimeoutS + 1.0)
            << call.config << " wall " << call.seconds << " s, worker starved " << call.starved_s
            << " s, caller starved " << call.self_starved_s << " s";
        EXPECT_GE(call.seconds, kTimeoutS) << call.config;  // not cut short either
      }
      std::printf("hangs killed: %lld, timeout %.3f s, slowest kill %.3f s wall, %.3f s not counting CPU waits\n",
                  static_cast<long long>(c.faulty), kTimeoutS, max_wall_s, max_adjusted_s);
    }

    // The decision round re-times only configs that passed.
    for (const std::string& config : recorder.interleaved) {
      if (expected.outcome == Outcome::kOk) break;  // a harmless fault (stdout flood) may win
      EXPECT_GE(ConfigId(config), c.faulty) << "faulty config in the decision round: " << config;
    }

    // While the evaluator lives: no zombie, at most the one reusable worker.
    const auto children = testing::ChildrenOfThisProcess();
    EXPECT_LE(children.size(), 1u);
    for (const auto& child : children) EXPECT_NE(child.state, 'Z') << "zombie pid " << child.pid;
  }
  EXPECT_TRUE(testing::ChildrenOfThisProcess().empty()) << "worker outlived its evaluator";

  // What was stored: exactly the expected outcome per config.
  EXPECT_EQ(bucket, planned_bucket);
  auto stored = db.measurements().ListBucket(sweep_id, bucket);
  ASSERT_TRUE(stored) << stored.error().ToString();
  ASSERT_EQ(stored->size(), static_cast<size_t>(testing::kFaultConfigs));
  std::map<int64_t, const Measurement*> by_id;
  for (const Measurement& m : *stored) by_id[m.config.Get("id").value_or(-1)] = &m;
  ASSERT_EQ(by_id.size(), static_cast<size_t>(testing::kFaultConfigs));
  for (const auto& [id, m] : by_id) {
    if (id < c.faulty) {
      EXPECT_EQ(OutcomeName(m->outcome), OutcomeName(expected.outcome)) << "id=" << id << " detail=" << m->detail;
      EXPECT_NE(m->detail.find(expected.detail), std::string::npos) << "id=" << id << " detail=" << m->detail;
    } else {
      EXPECT_EQ(OutcomeName(m->outcome), "ok") << "id=" << id << " detail=" << m->detail;
      EXPECT_GT(m->median_ns, 0) << "id=" << id;
    }
  }

  // Resume after a "crash" (the task was never finished): the daemon's start requeues it and
  // the runner leases it again. Nothing is measured again, bad configs included, and the
  // winner is the same.
  ASSERT_EQ(*db.tasks().RequeueOrphans(), 1);
  auto resumed = db.tasks().LeaseNext(test::LiveClaimant());
  ASSERT_TRUE(resumed && *resumed);
  EXPECT_EQ((*resumed)->id, (*task)->id);
  EXPECT_EQ((*resumed)->attempts, 2);
  store::TaskSink resumed_sink(db, **resumed);
  {
    WorkerEvaluator worker(worker_options);
    testing::RecordingEvaluator recorder(worker);
    options.evaluator = &recorder;
    auto again = RunSweep(request, sweep_id, spec, hw, resumed_sink, options);
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_TRUE(recorder.calls.empty()) << recorder.calls.size() << " configs re-run, first "
                                        << recorder.calls[0].config;
    // A resumed sweep repeats only its decision round, on configs that passed.
    for (const std::string& config : recorder.interleaved) {
      if (expected.outcome == Outcome::kOk) break;
      EXPECT_GE(ConfigId(config), c.faulty) << "faulty config re-run on resume: " << config;
    }
    if (recorder.interleaved.empty()) {
      EXPECT_EQ(worker.workers_started(), 0);
    }
  }
  // Finishing the only task finishes the sweep, with every planned measurement committed.
  auto finished = db.tasks().Finish((*resumed)->id, store::SweepStatus::kDone, "");
  ASSERT_TRUE(finished);
  EXPECT_TRUE(*finished);
  auto progress = db.sweeps().Progress(sweep_id);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->done, testing::kFaultConfigs);
  EXPECT_EQ(progress->total, testing::kFaultConfigs);
  EXPECT_EQ(db.sweeps().Get(sweep_id)->status, store::SweepStatus::kDone);
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (int f = 1; f < testing::kFaultCount; ++f) {
    out.push_back({static_cast<Fault>(f), 1});
    out.push_back({static_cast<Fault>(f), 49});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryFault, FaultMatrix, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(FaultName(info.param.fault)) + "_on_" +
                                  std::to_string(info.param.faulty) + "_of_50";
                         });

}  // namespace
}  // namespace blocktune::tuner
