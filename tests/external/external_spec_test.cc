// External kernel specs (external/spec.h) and the runner protocol (external/runner.h): parsing
// and its errors, restrictions, and every runner outcome, in process and through worker
// processes (the daemon's path).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "external/runner.h"
#include "external/spec.h"
#include "tests/common/scratch_dir.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::external {
namespace {

std::string nlohmann_quote(const std::string& s) { return nlohmann::json(s).dump(); }

using tuner::Measurement;
using tuner::Outcome;

// A spec whose runner is `sh -c SCRIPT` (the runner is any program; the shell here is the
// runner, blocktune never calls one).
std::string Spec(const std::string& name, const std::string& script, bool persistent = true, double timeout_s = 0,
                 const std::string& restrictions = R"(["bx * by <= 64", "bx % 3 == 0 || bx == 1", "bx <= n"])") {
  std::string s = R"({"name": ")" + name + R"(",
    "description": "test kernel",
    "parameters": [{"name": "bx", "values": [1, 3, 6, 12, 24]},
                   {"name": "by", "values": [8, 2, 4]},
                   {"name": "flag", "values": [0, 1], "categorical": true}],
    "restrictions": )" +
                  restrictions + R"(,
    "dims": [{"name": "n", "rounding": "pow2_ceil", "max": 4096}, {"name": "batch", "rounding": "exact", "min": 1, "max": 8}],
    "dtypes": ["f32"],
    "default": {"bx": 3, "by": 4},
    "runner": {"command": ["/bin/sh", "-c", )" +
                  nlohmann_quote(script) + R"(], "persistent": )" + (persistent ? "true" : "false") +
                  (timeout_s > 0 ? ", \"timeout_s\": " + std::to_string(timeout_s) : std::string()) + R"(},
    "flops": "2 * n * batch"})";
  return s;
}

TEST(ExternalSpec, ParsesParamsDimsDefaultsAndRestrictions) {
  auto spec = ParseKernelSpec(Spec("ext_ok", "true"), "ext_ok.json", "/tmp");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const ExternalKernelSpec& k = **spec;
  EXPECT_EQ(k.name(), "ext_ok");
  ASSERT_EQ(k.params().size(), 3u);
  // Ordered values are sorted (search steps along them); non-powers of two are fine.
  EXPECT_EQ(k.params()[0].candidates, (std::vector<int64_t>{1, 3, 6, 12, 24}));
  EXPECT_EQ(k.params()[1].candidates, (std::vector<int64_t>{2, 4, 8}));
  EXPECT_TRUE(k.params()[2].categorical);
  EXPECT_EQ(k.DefaultConfig().ToString(), "bx=3,by=4,flag=0");  // flag takes its first value
  EXPECT_EQ(k.ConfigSpace().size(), 30u);
  ASSERT_NE(k.runner(), nullptr);
  EXPECT_EQ(k.runner()->working_dir, "/tmp");
  EXPECT_EQ(k.dims()[1].bucket.rounding, tables::Rounding::kExact);
  const Problem p{DType::kF32, NamedInts({{"n", 100}, {"batch", 3}})};
  EXPECT_EQ(k.Bucket(p).first, "n128_batch3");
  EXPECT_DOUBLE_EQ(k.Flops(p), 600);
  const HardwareProfile& hw = HostHardware();
  const Problem big{DType::kF32, NamedInts({{"n", 128}, {"batch", 1}})};
  EXPECT_TRUE(k.ValidateConfig(*NamedInts::Parse("bx=6,by=8,flag=1"), big, hw));
  auto too_big = k.ValidateConfig(*NamedInts::Parse("bx=12,by=8,flag=1"), big, hw);  // 96 > 64
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().message.find("bx * by <= 64"), std::string::npos);
  EXPECT_TRUE(k.ValidateConfig(*NamedInts::Parse("bx=1,by=8,flag=1"), big, hw));
  // % is fmod: 3 % 3 == 0 holds, 1 is allowed by the ||.
  EXPECT_TRUE(k.ValidateConfig(*NamedInts::Parse("bx=3,by=8,flag=0"), big, hw));
  // A dim in a restriction: bx <= n.
  const Problem tiny{DType::kF32, NamedInts({{"n", 4}, {"batch", 1}})};
  EXPECT_FALSE(k.ValidateConfig(*NamedInts::Parse("bx=6,by=2,flag=0"), tiny, hw));
  // Values outside the spec's candidates are not this kernel's configs.
  auto off = k.ValidateConfig(*NamedInts::Parse("bx=5,by=8,flag=0"), big, hw);
  ASSERT_FALSE(off);
  EXPECT_EQ(off.error().path, "config.bx");
}

TEST(ExternalSpec, BadRestrictionNamesFileAndRestriction) {
  auto spec = ParseKernelSpec(Spec("ext_bad", "true", true, 0, R"(["bx * by <= 64", "bx *** 2 < 3"])"),
                              "specs/ext_bad.json", ".");
  ASSERT_FALSE(spec);
  const std::string msg = spec.error().message;
  EXPECT_NE(msg.find("specs/ext_bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("restrictions[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bx *** 2 < 3"), std::string::npos) << msg;
  auto unknown = ParseKernelSpec(Spec("ext_bad", "true", true, 0, R"(["bz < 3"])"), "x.json", ".");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'bz < 3'"), std::string::npos) << unknown.error().message;
}

TEST(ExternalSpec, RejectsMalformedFields) {
  const auto err = [](const std::string& text) {
    auto s = ParseKernelSpec(text, "f.json", ".");
    return s ? std::string("parsed") : s.error().message;
  };
  EXPECT_NE(err("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"name": "Bad Name"})").find("name"), std::string::npos);
  std::string dup = Spec("ext_dup", "true");
  dup.replace(dup.find("[1, 3, 6, 12, 24]"), 17, "[1, 3, 3]");
  EXPECT_NE(err(dup).find("listed twice"), std::string::npos);
  std::string extra = Spec("ext_extra", "true");
  extra.insert(1, R"("surprise": 1, )");
  EXPECT_NE(err(extra).find("surprise: unknown field"), std::string::npos);
  std::string no_runner = Spec("ext_nr", "true");
  no_runner.replace(no_runner.find("\"runner\""), 8, "\"runnr\"");
  EXPECT_NE(err(no_runner).find("runnr"), std::string::npos);
}

// Issue 26: 16 parameters of 1,024 values are 2^160 configs; the refusal says so instead of
// the int64 overflow it printed (-9223372036854775808).
TEST(ExternalSpec, AnOversizedSpaceIsRefusedWithItsTrueSize) {
  std::string params;
  for (int p = 0; p < 16; ++p) {
    std::string values;
    for (int v = 1; v <= 1024; ++v) values += (v > 1 ? ", " : "") + std::to_string(v);
    params += std::string(p ? ", " : "") + R"({"name": "p)" + std::to_string(p) + R"(", "values": [)" + values + "]}";
  }
  std::string text = Spec("ext_huge", "true", true, 0, "[]");
  const size_t from = text.find("\"parameters\": [");
  const size_t to = text.find("\"restrictions\"");
  text.replace(from, to - from, "\"parameters\": [" + params + "],\n    ");
  auto spec = ParseKernelSpec(text, "huge.json", ".");
  ASSERT_FALSE(spec);
  const std::string msg = spec.error().message;
  EXPECT_EQ(msg.find("-9223372036854775808"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1461501637330902918203684832716283019655932542976"), std::string::npos) << msg;  // 1024^16
  EXPECT_NE(msg.find("more than 1000000"), std::string::npos) << msg;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The daemon's POST /v1/kernels/reload: new files are registered, changed ones replaced (the old
// spec object stays valid), unchanged ones counted; a bad file refuses the whole reload by name.
TEST(ExternalSpec, ReloadAddsReplacesAndIsAllOrNothing) {
  test::ScratchDir dir("reload");
  const std::string folder = dir.path().string();
  WriteFile(dir.File("ext_reload_a.json"), Spec("ext_reload_a", "true"));
  auto first = ReloadKernelDirs({folder});
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->added, std::vector<std::string>{"ext_reload_a"});
  const KernelSpec* a_before = FindKernel("ext_reload_a");
  ASSERT_NE(a_before, nullptr);
  EXPECT_EQ(a_before->ConfigSpace().size(), 30u);

  // Same files again: nothing changes.
  auto same = ReloadKernelDirs({folder});
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->added.empty());
  EXPECT_TRUE(same->replaced.empty());
  EXPECT_EQ(same->unchanged, 1);
  EXPECT_EQ(FindKernel("ext_reload_a"), a_before);

  // A new file and an edited one (a restriction fewer: more configs).
  WriteFile(dir.File("ext_reload_a.json"), Spec("ext_reload_a", "true", true, 0, R"(["bx <= n"])"));
  WriteFile(dir.File("ext_reload_b.json"), Spec("ext_reload_b", "true"));
  auto second = ReloadKernelDirs({folder});
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_EQ(second->added, std::vector<std::string>{"ext_reload_b"});
  EXPECT_EQ(second->replaced, std::vector<std::string>{"ext_reload_a"});
  const KernelSpec* a_after = FindKernel("ext_reload_a");
  ASSERT_NE(a_after, nullptr);
  EXPECT_NE(a_after, a_before);
  EXPECT_EQ(a_before->name(), "ext_reload_a");  // the old spec is still alive for whoever holds it
  ASSERT_NE(FindKernel("ext_reload_b"), nullptr);

  // A broken file and a new good one: refused by the broken file's name, nothing registered.
  WriteFile(dir.File("ext_reload_c.json"), Spec("ext_reload_c", "true"));
  WriteFile(dir.File("ext_reload_d.json"), Spec("ext_reload_d", "true", true, 0, R"(["bx *** 2 < 3"])"));
  auto bad = ReloadKernelDirs({folder});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, dir.File("ext_reload_d.json"));
  EXPECT_NE(bad.error().message.find("ext_reload_d.json"), std::string::npos) << bad.error().message;
  EXPECT_EQ(FindKernel("ext_reload_c"), nullptr);
  EXPECT_EQ(FindKernel("ext_reload_a"), a_after);

  // A file that declares a built-in kernel is refused too.
  std::filesystem::remove(dir.File("ext_reload_d.json"));
  WriteFile(dir.File("matmul.json"), Spec("matmul", "true"));
  auto builtin = ReloadKernelDirs({folder});
  ASSERT_FALSE(builtin);
  EXPECT_EQ(builtin.error().path, dir.File("matmul.json")) << builtin.error().ToString();
  EXPECT_EQ(FindKernel("ext_reload_c"), nullptr);
}

// --kernel-dir takes a folder of kernel folders too: specs in the folder and one level down,
// not deeper, not in dot folders; each loaded kernel knows its folder, and a folder with no
// spec is reported (the daemon warns about it).
TEST(ExternalSpec, KernelDirsLoadFoldersOfKernelFolders) {
  test::ScratchDir dir("kernel_folders");
  namespace fs = std::filesystem;
  const fs::path root = dir.path() / "kernels";
  for (const char* sub : {"kernels/ext_folder_a", "kernels/ext_folder_b/deeper", "kernels/.hidden", "empty"}) {
    fs::create_directories(dir.path() / sub);
  }
  WriteFile((root / "ext_folder_top.json").string(), Spec("ext_folder_top", "true"));
  WriteFile((root / "ext_folder_a" / "a.json").string(), Spec("ext_folder_a", "true"));
  WriteFile((root / "ext_folder_b" / "b.json").string(), Spec("ext_folder_b", "true"));
  WriteFile((root / "ext_folder_b" / "deeper" / "c.json").string(), Spec("ext_folder_c", "true"));
  WriteFile((root / ".hidden" / "h.json").string(), Spec("ext_folder_hidden", "true"));
  auto files = KernelSpecFiles(root.string());
  ASSERT_TRUE(files) << files.error().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{(root / "ext_folder_a" / "a.json").string(),
                                              (root / "ext_folder_b" / "b.json").string(),
                                              (root / "ext_folder_top.json").string()}));
  const std::string empty = (dir.path() / "empty").string();
  auto loaded = LoadKernelDirs({root.string(), empty});
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ASSERT_EQ(loaded->kernels.size(), 3u);
  EXPECT_EQ(loaded->kernels[0].name, "ext_folder_a");
  EXPECT_EQ(loaded->kernels[0].spec_file, (root / "ext_folder_a" / "a.json").string());
  EXPECT_EQ(loaded->kernels[0].kernel_dir, root.string());
  EXPECT_EQ(loaded->kernels[0].runner, "/bin/sh -c true");
  EXPECT_EQ(loaded->empty_dirs, std::vector<std::string>{empty});
  const auto* b = dynamic_cast<const ExternalKernelSpec*>(FindKernel("ext_folder_b"));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->kernel_dir(), root.string());
  EXPECT_EQ(FindKernel("ext_folder_c"), nullptr);
  EXPECT_EQ(FindKernel("ext_folder_hidden"), nullptr);
  EXPECT_EQ(KernelSpecFiles((dir.path() / "missing").string()).error().code, ErrorCode::kNotFound);
}

TEST(ExternalSpec, SchemaIsServedJson) {
  const std::string_view s = KernelSpecSchema();
  EXPECT_NE(s.find("\"restrictions\""), std::string_view::npos);
  EXPECT_EQ(s.front(), '{');
}

// --- Runner outcomes ------------------------------------------------------------------------

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { tuner::SetRunnerMeasurerFactory(&MakeRunnerMeasurer); }

  const KernelSpec& Make(const std::string& name, const std::string& script, bool persistent = true,
                         double timeout_s = 0) {
    auto spec = ParseKernelSpec(Spec(name, script, persistent, timeout_s), name + ".json", "/");
    EXPECT_TRUE(spec) << spec.error().ToString();
    specs_.push_back(std::move(*spec));
    return *specs_.back();
  }

  tuner::EvalRequest Request(const KernelSpec& spec) {
    tuner::EvalRequest r;
    r.spec = &spec;
    r.problem = Problem{DType::kF32, NamedInts({{"n", 64}, {"batch", 2}})};
    r.timing.repetitions = 3;
    r.timing.min_repetition_ns = 1e6;
    return r;
  }

  Measurement Run(tuner::Evaluator& e, const KernelSpec& spec, const std::string& config = "bx=3,by=4,flag=0") {
    Measurement m;
    e.Measure(Request(spec), *NamedInts::Parse(config), m);
    return m;
  }

  std::vector<std::unique_ptr<ExternalKernelSpec>> specs_;
};

// Answers every request with three times; echoes the request to stderr (the log).
const char kGood[] = R"(while read -r line; do echo "got $line" >&2; echo '{"times_ms": [2.0, 2.1, 1.9]}' >&3; done)";

TEST_F(RunnerTest, MeasuredConfigIsOkWithSamples) {
  const KernelSpec& spec = Make("ext_good", kGood);
  tuner::InProcessEvaluator e;
  double first_spawn_s = 0;
  for (int i = 0; i < 3; ++i) {  // persistent: one process serves all three
    const Measurement m = Run(e, spec);
    ASSERT_EQ(m.outcome, Outcome::kOk) << m.detail;
    ASSERT_EQ(m.samples_ns.size(), 3u);
    EXPECT_DOUBLE_EQ(m.median_ns, 2.0e6);
    // The runner's start is counted as a process start (spawn_s), not as transport, once.
    if (i == 0) first_spawn_s = e.costs().spawn_s;
    EXPECT_GT(e.costs().spawn_s, 0);
    EXPECT_EQ(e.costs().spawn_s, first_spawn_s);
  }
  // A config the restrictions exclude never reaches the runner.
  const Measurement bad = Run(e, spec, "bx=24,by=8,flag=0");
  EXPECT_EQ(bad.outcome, Outcome::kInvalid);
  EXPECT_NE(bad.detail.find("restriction"), std::string::npos);
  const auto inter = e.MeasureInterleaved(
      Request(spec), {*NamedInts::Parse("bx=3,by=4,flag=0"), *NamedInts::Parse("bx=1,by=2,flag=1")});
  ASSERT_EQ(inter.size(), 2u);
  for (const auto& m : inter) {
    EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
    EXPECT_EQ(m.samples_ns.size(), 9u);  // 3 one-repetition requests x 3 times each
  }
}

TEST_F(RunnerTest, PerConfigRunnerGetsOneRequestAndEof) {
  // Answers once per line, then exits at EOF; a second line in the same process would fail.
  const KernelSpec& spec =
      Make("ext_once", R"(read -r line || exit 9; echo '{"times_ms": [1.5]}' >&3; if read -r more; then exit 7; fi)",
           /*persistent=*/false);
  tuner::InProcessEvaluator e;
  double first_spawn_s = 0;
  for (int i = 0; i < 2; ++i) {
    const Measurement m = Run(e, spec);
    EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
    EXPECT_DOUBLE_EQ(m.median_ns, 1.5e6);
    // A process per config: each start counted.
    if (i == 0) first_spawn_s = e.costs().spawn_s;
    EXPECT_GT(e.costs().spawn_s, i == 0 ? 0 : first_spawn_s);
  }
}

TEST_F(RunnerTest, ReportedOutcomesMapToRecordedOnes) {
  tuner::InProcessEvaluator e;
  const struct {
    const char* outcome;
    Outcome expected;
    const char* detail;
  } cases[] = {{"invalid", Outcome::kInvalid, "too big"},
               {"compile_failed", Outcome::kCompileFailed, "too big"},
               {"runtime_failed", Outcome::kRuntimeFailed, "too big"},
               {"wrong_result", Outcome::kWrongResult, "wrong_result: too big"}};
  int i = 0;
  for (const auto& c : cases) {
    const std::string script = std::string("while read -r line; do echo '{\"outcome\": \"") + c.outcome +
                               "\", \"message\": \"too big\"}' >&3; done";
    const Measurement m = Run(e, Make("ext_report" + std::to_string(i++), script));
    EXPECT_EQ(m.outcome, c.expected) << c.outcome;
    EXPECT_NE(m.detail.find(c.detail), std::string::npos) << m.detail;
  }
}

TEST_F(RunnerTest, CrashHangAndGarbageInProcess) {
  tuner::InProcessEvaluator e;
  const Measurement crash = Run(e, Make("ext_crash", R"(read -r line; echo "about to die" >&2; kill -SEGV $$)"));
  EXPECT_EQ(crash.outcome, Outcome::kCrashed) << crash.detail;
  EXPECT_NE(crash.detail.find("SIGSEGV"), std::string::npos) << crash.detail;
  EXPECT_NE(crash.detail.find("about to die"), std::string::npos) << crash.detail;  // the capped log

  const Measurement exits = Run(e, Make("ext_exit", "read -r line; exit 3"));
  EXPECT_EQ(exits.outcome, Outcome::kCrashed) << exits.detail;
  EXPECT_NE(exits.detail.find("exited with status 3"), std::string::npos) << exits.detail;

  const Measurement garbage =
      Run(e, Make("ext_garbage", R"(while read -r line; do echo 'this is not json {' >&3; done)"));
  EXPECT_EQ(garbage.outcome, Outcome::kWorkerLost) << garbage.detail;
  EXPECT_NE(garbage.detail.find("runner protocol error"), std::string::npos) << garbage.detail;

  const Measurement wrong_shape =
      Run(e, Make("ext_shape", R"(while read -r line; do echo '{"times_ms": "fast"}' >&3; done)"));
  EXPECT_EQ(wrong_shape.outcome, Outcome::kWorkerLost) << wrong_shape.detail;

  // Silence: the runner reads and says nothing. The timeout counts from the request (the
  // first request of a fresh runner gets it twice, for start-up): ~1 s here.
  const Measurement hang = Run(e, Make("ext_hang", "read -r line; exec sleep 1000", true, 0.5));
  EXPECT_EQ(hang.outcome, Outcome::kTimeout) << hang.detail;
  EXPECT_NE(hang.detail.find("no answer within"), std::string::npos) << hang.detail;
}

// The daemon's path: configs go to blocktune-worker, which loads the spec folder and runs the
// runner as its child; the outcomes are the same and the worker survives none of them only
// when it must.
TEST_F(RunnerTest, CrashHangAndGarbageThroughWorkerProcesses) {
  test::ScratchDir dir("external_worker");
  const struct {
    const char* name;
    std::string script;
    Outcome expected;
  } cases[] = {
      {"w_good", kGood, Outcome::kOk},
      {"w_crash", "read -r line; kill -SEGV $$", Outcome::kCrashed},
      {"w_garbage", R"(while read -r line; do echo '<html>' >&3; done)", Outcome::kWorkerLost},
      {"w_hang", "read -r line; exec sleep 1000", Outcome::kTimeout},
  };
  for (const auto& c : cases) {
    std::ofstream(dir.File(std::string(c.name) + ".json")) << Spec(c.name, c.script, true, 0.5);
  }
  tuner::isolation::WorkerOptions options;
  auto path = tuner::isolation::LocateWorker("");
  ASSERT_TRUE(path) << path.error().message;
  options.worker_path = *path;
  options.kernel_dirs = {dir.path().string()};
  tuner::isolation::WorkerEvaluator worker(options);
  for (const auto& c : cases) {
    auto spec = ParseKernelSpec(Spec(c.name, c.script, true, 0.5), "x.json", "/");
    ASSERT_TRUE(spec);
    const Measurement m = Run(worker, **spec);
    EXPECT_EQ(m.outcome, c.expected) << c.name << ": " << m.detail;
  }
  // After all that, a good config still measures (the worker was replaced where needed).
  auto good = ParseKernelSpec(Spec("w_good", kGood, true, 0.5), "x.json", "/");
  EXPECT_EQ(Run(worker, **good).outcome, Outcome::kOk);
}

// Live processes whose command line is exactly `sleep SECONDS` (zombies have an empty one).
int LiveSleeps(const std::string& seconds) {
  const std::string want = std::string("sleep") + '\0' + seconds + '\0';
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    n += cmdline == want;
  }
  return n;
}

// Waits up to 5 s for every `sleep SECONDS` to be gone (a SIGKILL is delivered asynchronously).
int SleepsLeft(const std::string& seconds) {
  for (int i = 0; i < 100 && LiveSleeps(seconds) > 0; ++i) usleep(50000);
  return LiveSleeps(seconds);
}

// Issue 26: what a runner starts dies with it, when it exits, times out, is replaced or is
// done. Each runner forks a `sleep` into the background (a distinct duration per case) first.
TEST_F(RunnerTest, WhatARunnerStartedDiesWithIt) {
  tuner::InProcessEvaluator e;
  const Measurement exits = Run(e, Make("ext_fork_exit", "sleep 31.71 & read -r line; exit 3"));
  EXPECT_EQ(exits.outcome, Outcome::kCrashed) << exits.detail;
  EXPECT_EQ(SleepsLeft("31.71"), 0) << "the runner exited and left its child running";

  const Measurement hang = Run(e, Make("ext_fork_hang", "sleep 31.72 & read -r line; exec sleep 1000", true, 0.5));
  EXPECT_EQ(hang.outcome, Outcome::kTimeout) << hang.detail;
  EXPECT_EQ(SleepsLeft("31.72"), 0) << "the runner timed out and left its child running";

  const Measurement once = Run(e, Make("ext_fork_once", R"(sleep 31.73 & read -r line; echo '{"times_ms": [1.5]}' >&3)",
                                       /*persistent=*/false));
  EXPECT_EQ(once.outcome, Outcome::kOk) << once.detail;
  EXPECT_EQ(SleepsLeft("31.73"), 0) << "a per-config runner finished and left its child running";

  {
    tuner::InProcessEvaluator scoped;
    const Measurement good = Run(scoped, Make("ext_fork_good", std::string("sleep 31.74 & ") + kGood));
    EXPECT_EQ(good.outcome, Outcome::kOk) << good.detail;
    // Alive while its runner serves (the shell's background child may exec `sleep` only after
    // the runner has answered: wait up to 5 s for it).
    for (int i = 0; i < 100 && LiveSleeps("31.74") == 0; ++i) usleep(50000);
    EXPECT_EQ(LiveSleeps("31.74"), 1);
  }
  EXPECT_EQ(SleepsLeft("31.74"), 0) << "the evaluator is gone and the runner's child still runs";
}

// The same through blocktune-worker (the daemon's and `sweep --local`'s path).
TEST_F(RunnerTest, WhatARunnerStartedDiesWithItThroughWorkerProcesses) {
  test::ScratchDir dir("external_worker_fork");
  const struct {
    const char* name;
    std::string script;
    Outcome expected;
    const char* seconds;
  } cases[] = {
      {"wf_exit", "sleep 31.75 & read -r line; exit 3", Outcome::kCrashed, "31.75"},
      {"wf_hang", "sleep 31.76 & read -r line; exec sleep 1000", Outcome::kTimeout, "31.76"},
  };
  for (const auto& c : cases)
    std::ofstream(dir.File(std::string(c.name) + ".json")) << Spec(c.name, c.script, true, 0.5);
  tuner::isolation::WorkerOptions options;
  auto path = tuner::isolation::LocateWorker("");
  ASSERT_TRUE(path) << path.error().message;
  options.worker_path = *path;
  options.kernel_dirs = {dir.path().string()};
  tuner::isolation::WorkerEvaluator worker(options);
  for (const auto& c : cases) {
    auto spec = ParseKernelSpec(Spec(c.name, c.script, true, 0.5), "x.json", "/");
    ASSERT_TRUE(spec);
    const Measurement m = Run(worker, **spec);
    EXPECT_EQ(m.outcome, c.expected) << c.name << ": " << m.detail;
    EXPECT_EQ(SleepsLeft(c.seconds), 0) << c.name << ": the runner's child outlived it";
  }
}

// Issue 40: a runner's child that leaves the process group (setsid) still dies with the config,
// in-process and through blocktune-worker: the guard is the subreaper of the runner's tree.
TEST_F(RunnerTest, ASetsidChildOfARunnerDiesWithIt) {
  tuner::InProcessEvaluator e;
  const Measurement once =
      Run(e, Make("ext_setsid_once", R"(setsid sleep 31.81 & read -r line; echo '{"times_ms": [1.5]}' >&3)", false));
  EXPECT_EQ(once.outcome, Outcome::kOk) << once.detail;
  EXPECT_EQ(SleepsLeft("31.81"), 0) << "a per-config runner's setsid child outlived the config";

  const Measurement hang =
      Run(e, Make("ext_setsid_hang", "setsid sleep 31.82 & read -r line; exec sleep 1000", true, 0.5));
  EXPECT_EQ(hang.outcome, Outcome::kTimeout) << hang.detail;
  EXPECT_EQ(SleepsLeft("31.82"), 0) << "a timed-out runner's setsid child outlived it";

  test::ScratchDir dir("external_worker_setsid");
  const std::string script = "setsid sleep 31.83 & read -r line; exit 3";
  std::ofstream(dir.File("ws_exit.json")) << Spec("ws_exit", script, true, 0.5);
  tuner::isolation::WorkerOptions options;
  auto path = tuner::isolation::LocateWorker("");
  ASSERT_TRUE(path) << path.error().message;
  options.worker_path = *path;
  options.kernel_dirs = {dir.path().string()};
  tuner::isolation::WorkerEvaluator worker(options);
  auto spec = ParseKernelSpec(Spec("ws_exit", script, true, 0.5), "x.json", "/");
  ASSERT_TRUE(spec);
  const Measurement m = Run(worker, **spec);
  EXPECT_EQ(m.outcome, Outcome::kCrashed) << m.detail;
  EXPECT_EQ(SleepsLeft("31.83"), 0) << "the worker's runner left its setsid child running";
}

// Issue 40: when blocktune-worker itself is SIGKILLed while its runner serves a config, the
// runner and everything it started (in its group or not) die too: the guard hears of the
// worker's death by PR_SET_PDEATHSIG and kills the tree it is subreaper of.
TEST_F(RunnerTest, ARunnersChildrenDieWhenTheWorkerIsKilled) {
  test::ScratchDir dir("external_worker_sigkill");
  const std::string script = "sleep 31.84 & setsid sleep 31.85 & read -r line; exec sleep 31.86";
  std::ofstream(dir.File("wk_hang.json")) << Spec("wk_hang", script, true, 60);
  tuner::isolation::WorkerOptions options;
  auto path = tuner::isolation::LocateWorker("");
  ASSERT_TRUE(path) << path.error().message;
  options.worker_path = *path;
  options.kernel_dirs = {dir.path().string()};
  tuner::isolation::WorkerEvaluator worker(options);
  auto spec = ParseKernelSpec(Spec("wk_hang", script, true, 60), "x.json", "/");
  ASSERT_TRUE(spec);
  Measurement m;
  std::thread measuring([&] { m = Run(worker, **spec); });
  // All three run once the runner has read its request (10 s at most under load).
  for (int i = 0; i < 200 && LiveSleeps("31.84") + LiveSleeps("31.85") + LiveSleeps("31.86") < 3; ++i) usleep(50000);
  EXPECT_EQ(LiveSleeps("31.84") + LiveSleeps("31.85") + LiveSleeps("31.86"), 3);
  const pid_t worker_pid = worker.worker_pid();
  ASSERT_GT(worker_pid, 0);
  worker.Abort();  // SIGKILL to blocktune-worker: nothing of it runs after this
  EXPECT_EQ(SleepsLeft("31.84"), 0) << "the runner's child outlived the SIGKILLed worker";
  EXPECT_EQ(SleepsLeft("31.85"), 0) << "the runner's setsid child outlived the SIGKILLed worker";
  EXPECT_EQ(SleepsLeft("31.86"), 0) << "the runner outlived the SIGKILLed worker";
  measuring.join();
  EXPECT_NE(m.outcome, Outcome::kOk) << m.detail;
}

}  // namespace
}  // namespace blocktune::external
