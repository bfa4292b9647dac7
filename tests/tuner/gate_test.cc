// The regression gate of `tables generate --db` (tuner/gate.h) on the fake kernel, whose cost is
// a known function of the config: (3,2) runs 150 us a call, (1,3) 600 us (busy-waiting, so load
// can only add time, and the comparison is between medians of interleaved repetitions).
#include <gtest/gtest.h>

#include "kernels/core/fingerprint.h"
#include "kernels/core/hardware.h"
#include "tests/tuner/fake_kernel.h"
#include "tuner/gate.h"

namespace blocktune::tuner {
namespace {

const testing::FakeSpec& Fake() {
  static const testing::FakeSpec spec;
  return spec;
}

TunedEntry Row(const std::string& key, int64_t a, int64_t b, int64_t sweep) {
  TunedEntry e;
  e.kernel = "fake";
  e.hardware_key = key;
  e.dtype = DType::kF32;
  e.bucket = "n4096";
  e.config = NamedInts({{"a", a}, {"b", b}});
  e.median_ns = 1000;
  e.samples = 5;
  e.sweep_id = sweep;
  e.measurement_id = sweep * 10;
  e.measured_at = "2026-11-25T00:00:00.000Z";
  return e;
}

GateOptions Options() {
  GateOptions o;
  o.find_kernel = [](std::string_view n) -> const KernelSpec* { return n == "fake" ? &Fake() : nullptr; };
  // 9 interleaved repetitions of at least 10 ms each: a loaded CI core preempts every
  // repetition a little rather than a few repetitions a lot, so the robust CVs and the band stay
  // well under the 4x the two configs differ by.
  o.timing.repetitions = 9;
  o.timing.min_repetition_ns = 10e6;
  o.timing.check_floor = false;
  o.now = "2026-11-25T12:00:00.000Z";
  return o;
}

const std::string& HostKey() {
  static const std::string key = HardwareProfile::Detect(1).Key();
  return key;
}

TEST(RegressionGate, KeysAreThisHostsAtTheirThreadCount) {
  EXPECT_TRUE(IsHostKey(HostKey()));
  EXPECT_TRUE(IsHostKey(HardwareProfile::Detect(3).Key()));
  // This CPU at a lower ISA level is this machine's too (its rows are timed at that level);
  // a level above the CPU's is not.
  HardwareProfile base = HardwareProfile::Detect(2);
  base.cpu.isa = "base";
  EXPECT_TRUE(IsHostKey(base.Key()));
  if (HostHardware().cpu.isa != "avx512") {
    HardwareProfile above = HardwareProfile::Detect(2);
    above.cpu.isa = "avx512";
    EXPECT_FALSE(IsHostKey(above.Key()));
  }
  EXPECT_FALSE(IsHostKey("x86_64.avx512.intel.fam6_mod9999.t1"));
  EXPECT_FALSE(IsHostKey(HostKey().substr(0, HostKey().rfind('.'))));  // no thread count
  EXPECT_EQ(KeyThreads("x86_64.avx2.amd.fam25_mod1.t12"), 12);
  EXPECT_EQ(KeyThreads("x86_64.avx2.amd.fam25_mod1"), 0);
}

TEST(RegressionGate, ASlowerNewRowIsRefused) {
  std::vector<GateEvent> events;
  auto merged = GatedMerge({Row(HostKey(), 3, 2, 1)}, {Row(HostKey(), 1, 3, 2)}, Options(), &events);
  ASSERT_TRUE(merged) << merged.error().ToString();
  ASSERT_EQ(merged->size(), 1u);
  const TunedEntry& kept = merged->front();
  EXPECT_EQ(kept.config.ToString(), "a=3,b=2");
  EXPECT_EQ(kept.sweep_id, 1);  // the checked-in row, provenance unchanged
  ASSERT_TRUE(kept.gate.has_value());
  EXPECT_EQ(kept.gate->decision, "kept");
  EXPECT_EQ(kept.gate->old_config.ToString(), "a=3,b=2");
  EXPECT_EQ(kept.gate->new_config.ToString(), "a=1,b=3");
  EXPECT_GT(kept.gate->new_ns, kept.gate->old_ns);
  EXPECT_EQ(kept.gate->repetitions, 9);
  EXPECT_EQ(kept.gate->at, "2026-11-25T12:00:00.000Z");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, "kept");
  EXPECT_NE(events[0].detail.find("slower"), std::string::npos) << events[0].detail;
}

TEST(RegressionGate, AFasterNewRowIsAccepted) {
  std::vector<GateEvent> events;
  auto merged = GatedMerge({Row(HostKey(), 1, 3, 1)}, {Row(HostKey(), 3, 2, 2)}, Options(), &events);
  ASSERT_TRUE(merged) << merged.error().ToString();
  ASSERT_EQ(merged->size(), 1u);
  const TunedEntry& now = merged->front();
  EXPECT_EQ(now.config.ToString(), "a=3,b=2");
  EXPECT_EQ(now.sweep_id, 2);  // the database row
  ASSERT_TRUE(now.gate.has_value());
  EXPECT_EQ(now.gate->decision, "replaced");
  EXPECT_LT(now.gate->new_ns, now.gate->old_ns);
  EXPECT_GT(1.0 - now.gate->new_ns / now.gate->old_ns, now.gate->noise_band);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, "replaced");
}

TEST(RegressionGate, ForceTakesTheNewRowUntimed) {
  GateOptions o = Options();
  o.force = true;
  const size_t runs_before = Fake().runs.size();
  auto merged = GatedMerge({Row(HostKey(), 3, 2, 1)}, {Row(HostKey(), 1, 3, 2)}, o);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->front().config.ToString(), "a=1,b=3");
  ASSERT_TRUE(merged->front().gate.has_value());
  EXPECT_EQ(merged->front().gate->decision, "forced");
  EXPECT_EQ(merged->front().gate->old_ns, 0);
  EXPECT_EQ(Fake().runs.size(), runs_before);
}

TEST(RegressionGate, OtherProfilesAndNewBucketsAreMergedAsTheyAre) {
  const std::string other = "x86_64.avx512.intel.fam6_mod9999.t1";
  std::vector<GateEvent> events;
  TunedEntry added = Row(HostKey(), 1, 3, 3);
  added.bucket = "n64";
  auto merged = GatedMerge({Row(other, 3, 2, 1)}, {Row(other, 1, 3, 2), added}, Options(), &events);
  ASSERT_TRUE(merged);
  ASSERT_EQ(merged->size(), 2u);
  for (const auto& e : *merged) {
    EXPECT_FALSE(e.gate.has_value());
    EXPECT_EQ(e.config.ToString(), "a=1,b=3");  // the slower config: nothing here times it
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, "other_profile");
}

TEST(RegressionGate, AStaleDatabaseRowNeverReplacesAFreshOne) {
  // A registered kernel, so fingerprints mean something: matmul's row of this build against a
  // database row measured by another build.
  TunedEntry fresh = Row(HostKey(), 0, 0, 1);
  fresh.kernel = "matmul";
  fresh.bucket = "m64_n64_k64";
  fresh.config = NamedInts({{"block_m", 48}, {"block_n", 64}, {"block_k", 64}});
  fresh.fingerprint = std::string(KernelFingerprint("matmul"));
  TunedEntry stale = fresh;
  stale.config = NamedInts({{"block_m", 96}, {"block_n", 128}, {"block_k", 128}});
  stale.fingerprint = "00000000deadbeef";
  stale.sweep_id = 2;
  std::vector<GateEvent> events;
  auto merged = GatedMerge({fresh}, {stale}, Options(), &events);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->front().sweep_id, 1);
  EXPECT_EQ(merged->front().fingerprint, KernelFingerprint("matmul"));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, "stale_db_row");
}

// An external kernel (a runner in its spec) whose "runner" is an evaluator answering from a given
// device: config a=3,b=2 at 150 us, anything else at 600 us.
class DeviceSpec : public testing::FakeSpec {
 public:
  std::string_view name() const override { return "device_fake"; }
  const RunnerSpec* runner() const override { return &runner_; }

 private:
  RunnerSpec runner_{{"unused"}, "", true, 0};
};

class DeviceEvaluator : public Evaluator {
 public:
  explicit DeviceEvaluator(std::string key) : key_(std::move(key)) {}
  void Measure(const EvalRequest&, const Config& c, Measurement& m) override { Fill(c, m); }
  std::vector<Measurement> MeasureInterleaved(const EvalRequest&, const std::vector<Config>& configs) override {
    std::vector<Measurement> out(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) Fill(configs[i], out[i]);
    return out;
  }

 private:
  void Fill(const Config& c, Measurement& m) const {
    const double ns = c.ToString() == "a=3,b=2" ? 150e3 : 600e3;
    m.outcome = Outcome::kOk;
    m.samples_ns = {ns, ns, ns, ns, ns};
    m.median_ns = ns;
    m.iterations = 1;
    m.device_key = key_;
  }
  std::string key_;
};

TEST(RegressionGate, ADeviceRowIsJudgedOnlyWhereItsRunnerAnswersFromThatDevice) {
  static const DeviceSpec spec;
  const std::string h200 = "gpu.nvidia.sm90.h200";
  auto row = [&](int64_t a, int64_t b, int64_t sweep) {
    TunedEntry e = Row(h200, a, b, sweep);
    e.kernel = "device_fake";
    return e;
  };
  GateOptions o = Options();
  o.find_kernel = [](std::string_view n) -> const KernelSpec* { return n == "device_fake" ? &spec : nullptr; };
  // On the H200: timed through the runner, and the slower new row is refused.
  DeviceEvaluator on_h200(h200);
  o.evaluator = &on_h200;
  std::vector<GateEvent> events;
  auto merged = GatedMerge({row(3, 2, 1)}, {row(1, 3, 2)}, o, &events);
  ASSERT_TRUE(merged) << merged.error().ToString();
  EXPECT_EQ(merged->front().config.ToString(), "a=3,b=2");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, "kept");
  ASSERT_TRUE(events[0].record.has_value());
  EXPECT_DOUBLE_EQ(events[0].record->new_ns, 600e3);
  // Where the runner answers from another device (or from the host's CPU), nothing is timed: the
  // database row is merged as it is.
  for (const std::string& there : {std::string("gpu.nvidia.sm80.a100"), HostKey()}) {
    DeviceEvaluator elsewhere(there);
    o.evaluator = &elsewhere;
    events.clear();
    merged = GatedMerge({row(3, 2, 1)}, {row(1, 3, 2)}, o, &events);
    ASSERT_TRUE(merged) << merged.error().ToString();
    EXPECT_EQ(merged->front().config.ToString(), "a=1,b=3");
    EXPECT_FALSE(merged->front().gate.has_value());
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].what, "other_device");
    EXPECT_NE(events[0].detail.find(there), std::string::npos) << events[0].detail;
  }
}

}  // namespace
}  // namespace blocktune::tuner
