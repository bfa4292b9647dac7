// WorkerEvaluator and the worker process in isolation: the channel codec, what the worker
// inherits, dying with its parent, reuse and respawn, Abort, interleaved batches with a
// crasher, a missing worker binary, and the in-process verifier's memory checks.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "kernels/matmul/matmul.h"
#include "tests/tuner/fault_kernel.h"
#include "tests/tuner/fault_test_util.h"
#include "tuner/gate.h"
#include "tuner/isolation/protocol.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::tuner::isolation {
namespace {

using blocktune::testing::Fault;
using blocktune::testing::FaultSpec;

EvalRequest FaultRequest(Fault fault, int64_t faulty) {
  EvalRequest r;
  r.spec = &FaultSpec();
  r.problem.dims = NamedInts({{"n", 64}, {"fault", static_cast<int64_t>(fault)}, {"faulty", faulty}});
  r.timing.min_repetition_ns = 200e3;
  r.timing.repetitions = 2;
  // These tests are about isolation, not timing: two samples on a loaded CI core can spread
  // past any CV limit and turn a healthy run `unstable` (search_test covers that verdict).
  r.timing.max_cv = 1e9;
  return r;
}

Config Id(int64_t id) { return NamedInts({{"id", id}}); }

WorkerOptions TestOptions(double timeout_s = 2.0) {
  WorkerOptions o;
  o.worker_path = testing::FaultWorkerPath();
  o.timeout_s = timeout_s;
  o.memory_limit_bytes = int64_t{256} << 20;
  return o;
}

TEST(WorkerProtocol, RequestAndResponseRoundTrip) {
  isolation::WorkerRequest req;
  req.kind = isolation::RequestKind::kMeasureInterleaved;
  req.kernel = "matmul";
  req.problem = Problem{DType::kBF16, NamedInts({{"m", 7}, {"n", 8}, {"k", 9}})};
  req.threads = 2;
  req.seed = 99;
  req.timing.min_repetition_ns = 1234.5;
  req.timing.stop_above_ns = 5e6;
  req.timing.stop_after = 3;
  req.configs = {NamedInts({{"block_m", 48}, {"block_n", 128}}), NamedInts({{"block_m", 96}, {"block_n", 256}})};
  auto back = isolation::DecodeRequest(isolation::EncodeRequest(req));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->kind, req.kind);
  EXPECT_EQ(back->kernel, "matmul");
  EXPECT_EQ(back->problem, req.problem);
  EXPECT_EQ(back->threads, 2);
  EXPECT_EQ(back->seed, 99u);
  EXPECT_EQ(back->timing.min_repetition_ns, 1234.5);
  EXPECT_EQ(back->timing.stop_above_ns, 5e6);  // the search's stop line reaches the worker
  EXPECT_EQ(back->timing.stop_after, 3);
  EXPECT_EQ(back->configs, req.configs);  // order of params kept

  isolation::WorkerResponse resp;
  Measurement m;
  m.outcome = Outcome::kWrongResult;
  m.detail = "x";
  m.samples_ns = {1.5, 2.25};
  m.iterations = 3;
  m.median_ns = 2;
  m.max_rel_err = 7.5;
  resp.results.push_back(m);
  auto r = isolation::DecodeResponse(isolation::EncodeResponse(resp));
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->results.size(), 1u);
  EXPECT_EQ(r->results[0].outcome, Outcome::kWrongResult);
  EXPECT_EQ(r->results[0].samples_ns, m.samples_ns);
  EXPECT_EQ(r->results[0].max_rel_err, 7.5);

  EXPECT_FALSE(isolation::DecodeRequest(R"({"v":2,"kind":"measure"})"));  // version mismatch
  EXPECT_FALSE(isolation::DecodeResponse("not json"));
}

TEST(WorkerProtocol, FrameReaderReassemblesSplitFramesAndRejectsHugeOnes) {
  const std::string a = isolation::Frame("hello"), b = isolation::Frame("");
  const std::string both = a + b;
  isolation::FrameReader reader;
  for (char ch : both) reader.Append(&ch, 1);  // one byte at a time
  auto first = reader.Next();
  ASSERT_TRUE(first && *first);
  EXPECT_EQ(**first, "hello");
  auto second = reader.Next();
  ASSERT_TRUE(second && *second);
  EXPECT_EQ(**second, "");
  EXPECT_TRUE(reader.empty());

  isolation::FrameReader huge;
  const char header[4] = {'\xff', '\xff', '\xff', '\x7f'};
  huge.Append(header, 4);
  EXPECT_FALSE(huge.Next());
}

TEST(WorkerEvaluator, WorkerInheritsOnlyItsChannelAndStdio) {
  // A descriptor the test opens without O_CLOEXEC, as a careless library in the daemon might.
  const int leaky = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  setenv("BLOCKTUNE_TEST_MARKER", "1", 1);
  setenv("BLOCKTUNE_TOKEN", "secret", 1);
  WorkerEvaluator worker(TestOptions());
  Measurement m;
  worker.Measure(FaultRequest(Fault::kNone, 0), Id(3), m);
  ASSERT_EQ(m.outcome, Outcome::kOk) << m.detail;
  const pid_t pid = worker.worker_pid();
  ASSERT_GT(pid, 0);
  std::set<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    fds.insert(std::stoi(e.path().filename().string()));
  }
  close(leaky);
  EXPECT_EQ(fds, (std::set<int>{0, 1, 2, 3}));
  std::ifstream environ_file("/proc/" + std::to_string(pid) + "/environ");
  const std::string worker_env((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(worker_env.find("BLOCKTUNE_TEST_MARKER=1"), std::string::npos);  // the environment is passed on
  EXPECT_EQ(worker_env.find("BLOCKTUNE_TOKEN="), std::string::npos);         // but not the API token
  unsetenv("BLOCKTUNE_TOKEN");
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/fd/0"), "/dev/null");
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/fd/3").string().rfind("socket:", 0), 0u);
}

TEST(WorkerEvaluator, ReusesAHealthyWorkerAndRespawnsAfterABadOutcome) {
  WorkerEvaluator worker(TestOptions());
  const EvalRequest req = FaultRequest(Fault::kSegfault, 1);  // id 0 segfaults
  for (int64_t id : {10, 20, 30}) {
    Measurement m;
    worker.Measure(req, Id(id), m);
    EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
  }
  EXPECT_EQ(worker.workers_started(), 1);
  Measurement crash;
  worker.Measure(req, Id(0), crash);
  EXPECT_EQ(crash.outcome, Outcome::kCrashed);
  EXPECT_NE(crash.detail.find("SIGSEGV"), std::string::npos) << crash.detail;
  EXPECT_EQ(worker.worker_pid(), 0);  // reaped at once, not left as a zombie
  Measurement after;
  worker.Measure(req, Id(40), after);
  EXPECT_EQ(after.outcome, Outcome::kOk) << after.detail;
  EXPECT_EQ(worker.workers_started(), 2);
}

TEST(WorkerEvaluator, AWorkerKilledWhileIdleIsReplacedWithoutBlamingTheNextConfig) {
  WorkerEvaluator worker(TestOptions());
  const EvalRequest req = FaultRequest(Fault::kNone, 0);
  Measurement m;
  worker.Measure(req, Id(1), m);
  ASSERT_EQ(m.outcome, Outcome::kOk);
  const pid_t pid = worker.worker_pid();
  kill(pid, SIGKILL);
  siginfo_t info{};
  waitid(P_PID, pid, &info, WEXITED | WNOWAIT);  // dead, not yet reaped
  worker.Measure(req, Id(2), m);
  EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
  EXPECT_EQ(worker.workers_started(), 2);
}

TEST(WorkerEvaluator, AbortEndsARequestInFlight) {
  WorkerEvaluator worker(TestOptions(/*timeout_s=*/60));
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    worker.Abort();
  });
  const auto start = std::chrono::steady_clock::now();
  Measurement m;
  worker.Measure(FaultRequest(Fault::kSpin, 1), Id(0), m);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopper.join();
  EXPECT_EQ(m.outcome, Outcome::kWorkerLost);
  EXPECT_NE(m.detail.find("aborted"), std::string::npos) << m.detail;
  EXPECT_LT(seconds, 30.0);  // well before the 60 s timeout: the abort ended it
  EXPECT_TRUE(testing::ChildrenOfThisProcess().empty());
}

// The regression gate of `tables generate --db` verifies and times through the evaluator it is
// given; with the worker one (the CLI's), a database row whose config segfaults or hangs is
// refused as an outcome, a checked-in row that crashes is replaced, and the merge completes.
TEST(RegressionGate, CrashingAndHangingConfigsAreOutcomesAndTheMergeCompletes) {
  const std::string host = HardwareProfile::Detect(1).Key();
  auto row = [&](const std::string& bucket, int64_t id, int64_t sweep) {
    TunedEntry e;
    e.kernel = "fault";
    e.hardware_key = host;
    e.dtype = DType::kF32;
    e.bucket = bucket;
    e.config = Id(id);
    e.median_ns = 1000;
    e.samples = 5;
    e.sweep_id = sweep;
    e.measurement_id = sweep * 10;
    return e;
  };
  // Configs with id < 1 trigger the bucket's fault; id 5 computes correctly.
  const std::string segv = "n64_fault1_faulty1", spin = "n64_fault4_faulty1", abort = "n64_fault2_faulty1";
  const std::vector<TunedEntry> base = {row(segv, 5, 1), row(spin, 5, 1), row(abort, 0, 1)};
  const std::vector<TunedEntry> update = {row(segv, 0, 2), row(spin, 0, 2), row(abort, 5, 2),
                                          row("n64_fault0_faulty0", 3, 2)};
  WorkerEvaluator worker(TestOptions(/*timeout_s=*/2.0));
  GateOptions o;
  o.evaluator = &worker;
  o.find_kernel = [](std::string_view n) -> const KernelSpec* { return n == "fault" ? &FaultSpec() : nullptr; };
  o.timing.repetitions = 3;
  o.timing.min_repetition_ns = 200e3;
  o.timing.max_cv = 1e9;  // about isolation, not timing (as FaultRequest)
  o.timing.check_floor = false;
  o.now = "2026-11-26T12:00:00.000Z";
  std::vector<GateEvent> events;
  auto merged = GatedMerge(base, update, o, &events);
  ASSERT_TRUE(merged) << merged.error().ToString();
  ASSERT_EQ(merged->size(), 4u);  // the three gated buckets and the new one, merged as it is
  std::map<std::string, const TunedEntry*> by_bucket;
  for (const auto& e : *merged) by_bucket[e.bucket] = &e;
  ASSERT_EQ(by_bucket.count("n64_fault0_faulty0"), 1u);
  EXPECT_EQ(by_bucket["n64_fault0_faulty0"]->config, Id(3));
  // The segfaulting and the spinning new config are refused: the old row stays, and says why.
  for (const std::string& b : {segv, spin}) {
    SCOPED_TRACE(b);
    EXPECT_EQ(by_bucket[b]->config, Id(5));
    ASSERT_TRUE(by_bucket[b]->gate.has_value());
    EXPECT_EQ(by_bucket[b]->gate->decision, "kept");
    EXPECT_EQ(by_bucket[b]->gate->new_config, Id(0));
  }
  // The checked-in config aborts on this build: the working new one replaces it.
  EXPECT_EQ(by_bucket[abort]->config, Id(5));
  ASSERT_TRUE(by_bucket[abort]->gate.has_value());
  EXPECT_EQ(by_bucket[abort]->gate->decision, "replaced");
  std::map<std::string, const GateEvent*> ev;
  for (const auto& e : events) ev[e.bucket] = &e;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[segv]->what, "kept");
  EXPECT_NE(ev[segv]->detail.find("crashed"), std::string::npos) << ev[segv]->detail;
  EXPECT_NE(ev[segv]->detail.find("SIGSEGV"), std::string::npos) << ev[segv]->detail;
  EXPECT_EQ(ev[spin]->what, "kept");
  EXPECT_NE(ev[spin]->detail.find("timeout"), std::string::npos) << ev[spin]->detail;
  EXPECT_EQ(ev[abort]->what, "replaced");
  EXPECT_NE(ev[abort]->detail.find("SIGABRT"), std::string::npos) << ev[abort]->detail;
  EXPECT_GE(worker.workers_started(), 3);  // each crash or hang cost a worker, not this process
}

TEST(WorkerEvaluator, InterleavedBatchWithACrasherBlamesOnlyTheCrasher) {
  WorkerEvaluator worker(TestOptions());
  auto out = worker.MeasureInterleaved(FaultRequest(Fault::kAbort, 1), {Id(10), Id(0), Id(20)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].outcome, Outcome::kOk) << out[0].detail;
  EXPECT_EQ(out[1].outcome, Outcome::kCrashed);
  EXPECT_NE(out[1].detail.find("SIGABRT"), std::string::npos) << out[1].detail;
  EXPECT_EQ(out[2].outcome, Outcome::kOk) << out[2].detail;
  EXPECT_EQ(out[0].samples_ns.size(), 2u);
}

TEST(WorkerEvaluator, WorkerDiesWithItsParent) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    // The intermediate parent: start a worker, report its pid, and die without cleaning up.
    close(pipe_fds[0]);
    auto* worker = new WorkerEvaluator(TestOptions());
    Measurement m;
    worker->Measure(FaultRequest(Fault::kNone, 0), Id(1), m);
    const pid_t pid = worker->worker_pid();
    (void)!write(pipe_fds[1], &pid, sizeof pid);
    if (m.outcome != Outcome::kOk)
      std::fprintf(stderr, "intermediate parent: %s %s\n", std::string(OutcomeName(m.outcome)).c_str(),
                   m.detail.c_str());
    _exit(m.outcome == Outcome::kOk ? 0 : 1);
  }
  close(pipe_fds[1]);
  pid_t worker_pid = 0;
  ASSERT_EQ(read(pipe_fds[0], &worker_pid, sizeof worker_pid), static_cast<ssize_t>(sizeof worker_pid));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(parent, &status, 0), parent);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(worker_pid, 0);
  // PR_SET_PDEATHSIG delivers SIGKILL when the parent dies; init reaps it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = kill(worker_pid, 0) != 0 && errno == ESRCH;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "worker " << worker_pid << " survived its parent";
}

TEST(WorkerEvaluator, MissingWorkerBinaryIsAClearError) {
  auto located = LocateWorker("/nonexistent/blocktune-worker");
  ASSERT_FALSE(located);
  EXPECT_NE(located.error().message.find("/nonexistent/blocktune-worker"), std::string::npos);
  WorkerOptions o = TestOptions();
  o.worker_path = "/nonexistent/blocktune-worker";
  WorkerEvaluator worker(o);
  Measurement m;
  worker.Measure(FaultRequest(Fault::kNone, 0), Id(1), m);
  EXPECT_EQ(m.outcome, Outcome::kWorkerLost);
  EXPECT_NE(m.detail.find("missing or not executable"), std::string::npos) << m.detail;
}

TEST(WorkerEvaluator, UnknownKernelInTheWorkerIsRefusedAndTheWorkerKept) {
  // The product worker knows no fault kernel: it refuses the request but stays healthy.
  WorkerOptions o = TestOptions();
  o.worker_path =
      (std::filesystem::path(testing::FaultWorkerPath()).parent_path().parent_path() / "server" / "blocktune-worker")
          .string();
  WorkerEvaluator worker(o);
  Measurement m;
  worker.Measure(FaultRequest(Fault::kNone, 0), Id(1), m);
  EXPECT_EQ(m.outcome, Outcome::kWorkerLost);
  EXPECT_NE(m.detail.find("unknown kernel 'fault'"), std::string::npos) << m.detail;
  EXPECT_GT(worker.worker_pid(), 0);
}

TEST(WorkerEvaluator, DefaultTimeoutHasAFloorAndGrowsWithTheWork) {
  EvalRequest small;
  small.spec = &kernels::MatmulSpec();
  small.problem.dims = NamedInts({{"m", 64}, {"n", 64}, {"k", 64}});
  EXPECT_EQ(DefaultTimeout(small, 1, 10), 10);
  EvalRequest big = small;
  big.problem.dims = NamedInts({{"m", 8192}, {"n", 8192}, {"k", 8192}});  // 1.1 TFLOP: 1100 s at 1 GFLOP/s
  EXPECT_GT(DefaultTimeout(big, 1, 10), 10 * 1100.0);
  EXPECT_GT(DefaultTimeout(small, 100, 10), DefaultTimeout(small, 1, 10));
}

TEST(WorkerEvaluator, SignalNames) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGILL), "SIGILL");
  EXPECT_EQ(SignalName(63), "signal 63");
}

// The verifier's memory checks run in-process too (InProcessEvaluator is the worker's body).
TEST(VerifyConfig, CatchesWritesPastTheEndModifiedInputsAndPartialOutput) {
  const std::pair<Fault, std::pair<Outcome, const char*>> cases[] = {
      {Fault::kWritePastEnd, {Outcome::kWrongResult, "wrote past the end of output 0: guard byte 0"}},
      {Fault::kModifyInputs, {Outcome::kWrongResult, "inputs were modified"}},
      {Fault::kHalfOutput, {Outcome::kNan, "non_finite=32"}},
      {Fault::kNan, {Outcome::kNan, "non_finite=1"}},
  };
  for (const auto& [fault, want] : cases) {
    Measurement m;
    const EvalRequest r = FaultRequest(fault, 1);
    EXPECT_FALSE(VerifyConfig(FaultSpec(), Id(0), r.problem, 1, m)) << testing::FaultName(fault);
    EXPECT_EQ(m.outcome, want.first) << testing::FaultName(fault);
    EXPECT_NE(m.detail.find(want.second), std::string::npos) << m.detail;
  }
}

TEST(InProcessEvaluator, AConfigThatModifiesInputsDoesNotPoisonTheNextOne) {
  InProcessEvaluator eval;
  const EvalRequest r = FaultRequest(Fault::kModifyInputs, 1);
  Measurement bad, good;
  eval.Measure(r, Id(0), bad);
  EXPECT_EQ(bad.outcome, Outcome::kWrongResult);
  eval.Measure(r, Id(1), good);  // same cached verification problem, fresh inputs
  EXPECT_EQ(good.outcome, Outcome::kOk) << good.detail;
}

// That every registered kernel's configs pass these memory checks (no false positive from a
// real kernel's edge tiles) is KernelContract.ConfigsPassTheVerifiersMemoryChecks in
// tests/kernels/conformance_test.cc, over the registry.

}  // namespace
}  // namespace blocktune::tuner::isolation
