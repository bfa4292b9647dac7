// The sweep engine against a kernel with a known cost model: planning, outcomes, winner
// selection, resumption, and the timing and search building blocks.
#include "tuner/sweep.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/tuner/fake_kernel.h"
#include "tests/tuner/memory_sink.h"
#include "tuner/lookup.h"
#include "tuner/search/search.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::FakeSpec;
using blocktune::testing::MemorySink;

SweepRequest FakeRequest(Strategy strategy = Strategy::kExhaustive, int64_t budget = 0) {
  SweepRequest r;
  r.kernel = "fake";
  r.shapes = {NamedInts({{"n", 1000}}), NamedInts({{"n", 1024}}), NamedInts({{"n", 100}})};
  r.strategy = strategy;
  r.budget = budget;
  return r;
}

SweepOptions FastTiming() {
  SweepOptions o;
  o.timing.min_repetition_ns = 200e3;
  o.timing.repetitions = 5;  // steps of 150 us between configs dwarf scheduler noise at a 200 us batch
  // The fake kernel's cost is a busy-wait, so a loaded CI box spreads its samples; these tests
  // are about the engine's choices, not the unstable verdict (tested on its own below).
  o.timing.max_cv = 1.0;
  return o;
}

TEST(PlanSweep, DeduplicatesBucketsAndPrunesInvalidConfigs) {
  FakeSpec spec;
  auto plans = PlanSweep(FakeRequest(), spec, HardwareProfile::Detect(1));
  ASSERT_TRUE(plans) << plans.error().ToString();
  ASSERT_EQ(plans->size(), 2u);  // n=1000 and n=1024 share bucket n1024
  EXPECT_EQ((*plans)[0].bucket, "n1024");
  EXPECT_EQ((*plans)[1].bucket, "n128");
  EXPECT_EQ((*plans)[0].invalid.size(), 1u);  // (4, 3)
  EXPECT_EQ((*plans)[0].invalid_reasons[0], "a*b must not be 12");
  EXPECT_EQ((*plans)[0].planned.size(), 11u);
}

TEST(PlanSweep, ErrorsNameTheField) {
  FakeSpec spec;
  SweepRequest r = FakeRequest();
  r.shapes.push_back(NamedInts({{"n", 0}}));
  auto plans = PlanSweep(r, spec, HardwareProfile::Detect(1));
  ASSERT_FALSE(plans);
  EXPECT_EQ(plans.error().path, "shapes[3].n");
  r = FakeRequest();
  r.dtype = DType::kBF16;  // the fake kernel is f32 only
  plans = PlanSweep(r, spec, HardwareProfile::Detect(1));
  ASSERT_FALSE(plans);
  EXPECT_EQ(plans.error().path, "dtype");
  r = FakeRequest();
  r.shapes.push_back(NamedInts({{"n", 4}, {"q", 1}}));
  plans = PlanSweep(r, spec, HardwareProfile::Detect(1));
  ASSERT_FALSE(plans);
  EXPECT_EQ(plans.error().path, "shapes[3].q");
}

TEST(RunSweep, RecordsEveryOutcomeAndPicksTheCheapestPassingConfig) {
  FakeSpec spec;
  MemorySink sink;
  auto winners = RunSweep(FakeRequest(), 1, spec, HardwareProfile::Detect(1), sink, FastTiming());
  ASSERT_TRUE(winners) << winners.error().ToString();
  ASSERT_EQ(winners->size(), 2u);
  for (const auto& w : *winners) {
    EXPECT_EQ(w.config, NamedInts({{"a", 3}, {"b", 2}})) << w.bucket;
    EXPECT_EQ(w.samples, 5);
    EXPECT_GT(w.median_ns, 0);
    EXPECT_GT(w.measurement_id, 0);
  }
  ASSERT_EQ(sink.stored.size(), 24u);  // 12 configs x 2 buckets, invalid ones included
  EXPECT_EQ(sink.last_done, 24);
  EXPECT_EQ(sink.last_total, 24);
  std::map<std::string, Outcome> n1024;
  for (const auto& m : sink.stored) {
    if (m.bucket == "n1024") n1024[m.config.ToString()] = m.outcome;
    if (m.outcome == Outcome::kOk) {
      EXPECT_EQ(m.samples_ns.size(), 5u);
    } else {
      EXPECT_FALSE(m.detail.empty());
      EXPECT_TRUE(m.samples_ns.empty());
    }
  }
  EXPECT_EQ(n1024["a=1,b=1"], Outcome::kNan);
  EXPECT_EQ(n1024["a=2,b=1"], Outcome::kWrongResult);
  EXPECT_EQ(n1024["a=4,b=3"], Outcome::kInvalid);
  EXPECT_EQ(n1024["a=3,b=2"], Outcome::kOk);
}

TEST(RunSweep, ResumesWithoutMeasuringAnythingTwice) {
  FakeSpec spec;
  MemorySink sink;
  sink.cancel_after = 7;
  auto first = RunSweep(FakeRequest(), 1, spec, HardwareProfile::Detect(1), sink, FastTiming());
  ASSERT_TRUE(first);
  EXPECT_LT(sink.stored.size(), 24u);
  sink.cancel_after = -1;
  auto second = RunSweep(FakeRequest(), 1, spec, HardwareProfile::Detect(1), sink, FastTiming());
  ASSERT_TRUE(second);
  EXPECT_EQ(sink.stored.size(), 24u);
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& m : sink.stored) keys.insert({m.bucket, m.config.ToString()});
  EXPECT_EQ(keys.size(), 24u);
  EXPECT_EQ(second->size(), 2u);
}

TEST(RunSweep, RandomStrategyHonoursBudgetAndAlwaysIncludesTheDefault) {
  FakeSpec spec;
  MemorySink sink;
  auto winners = RunSweep(FakeRequest(Strategy::kRandom, 4), 1, spec, HardwareProfile::Detect(1), sink, FastTiming());
  ASSERT_TRUE(winners);
  int timed_or_verified = 0;
  bool default_seen = false;
  for (const auto& m : sink.stored) {
    if (m.bucket != "n1024" || m.outcome == Outcome::kInvalid) continue;
    ++timed_or_verified;
    default_seen |= m.config == spec.DefaultConfig();
  }
  EXPECT_EQ(timed_or_verified, 4);
  EXPECT_TRUE(default_seen);
}

TEST(Search, RandomPlanIsDeterministicPerSeed) {
  FakeSpec spec;
  const auto space = spec.ConfigSpace();
  const auto a = search::PlanConfigs(space, spec.DefaultConfig(), Strategy::kRandom, 5, 99);
  const auto b = search::PlanConfigs(space, spec.DefaultConfig(), Strategy::kRandom, 5, 99);
  const auto c = search::PlanConfigs(space, spec.DefaultConfig(), Strategy::kRandom, 5, 100);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(a.front(), spec.DefaultConfig());
  EXPECT_NE(a, c);
  std::set<std::string> unique;
  for (const auto& x : a) unique.insert(x.ToString());
  EXPECT_EQ(unique.size(), 5u);
  EXPECT_EQ(search::PlanConfigs(space, spec.DefaultConfig(), Strategy::kExhaustive, 3, 1).size(), space.size());
}

TEST(Timing, MedianAndCoefficientOfVariation) {
  EXPECT_DOUBLE_EQ(timing::Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(timing::Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(timing::CoefficientOfVariation({5, 5, 5}), 0);
  EXPECT_NEAR(timing::CoefficientOfVariation({1, 3}), std::sqrt(2.0) / 2, 1e-12);
}

TEST(Timing, GrowsIterationsToTheMinimumTimeAndStopsOnError) {
  int calls = 0;
  timing::TimingOptions o;
  o.min_repetition_ns = 1e6;
  o.repetitions = 4;
  auto t = timing::TimeRepeated(
      [&]() -> Status {
        ++calls;
        return {};
      },
      o);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->samples_ns.size(), 4u);
  EXPECT_GT(t->iterations, 1);
  EXPECT_GE(calls, 4 * t->iterations);
  int n = 0;
  auto failing = timing::TimeRepeated(
      [&]() -> Status {
        if (++n == 3) return InvalidArgument("boom");
        return {};
      },
      o);
  ASSERT_FALSE(failing);
  EXPECT_EQ(failing.error().message, "boom");
}

TEST(Lookup, FallsBackThroughTheHardwareChainThenToTheDefault) {
  FakeSpec spec;
  TunedEntry e;
  e.kernel = "fake";
  e.hardware_key = "x86_64.avx512.intel.fam6_mod1.t2";
  e.bucket = "n1024";
  e.config = NamedInts({{"a", 3}, {"b", 2}});
  e.median_ns = 10;
  TunedEntry other = e;
  other.hardware_key = "x86_64.avx512.intel.fam6_mod2.t1";
  other.config = NamedInts({{"a", 4}, {"b", 1}});
  std::vector<TunedEntry> rows{other, e};

  auto exact =
      Lookup(spec, rows, {DType::kF32, NamedInts({{"n", 1000}}), "x86_64.avx512.intel.fam6_mod1.t2", std::nullopt});
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->source, tables::Source::kTuned);
  EXPECT_EQ(exact->config, e.config);

  auto threads =
      Lookup(spec, rows, {DType::kF32, NamedInts({{"n", 1000}}), "x86_64.avx512.intel.fam6_mod1.t8", std::nullopt});
  EXPECT_EQ(threads->source, tables::Source::kTunedFallback);
  EXPECT_EQ(threads->hardware, e.hardware_key);

  // Same vendor, other model: both rows match "x86_64.avx512.intel"; the smallest key wins.
  auto family =
      Lookup(spec, rows, {DType::kF32, NamedInts({{"n", 1000}}), "x86_64.avx512.intel.fam6_mod9.t1", std::nullopt});
  EXPECT_EQ(family->source, tables::Source::kTunedFallback);
  EXPECT_EQ(family->hardware, e.hardware_key);
  EXPECT_EQ(family->queried_hardware, "x86_64.avx512.intel.fam6_mod9.t1");
  EXPECT_EQ(family->fallback_levels, 2);
  EXPECT_EQ(threads->fallback_levels, 1);
  EXPECT_EQ(exact->fallback_levels, 0);

  // Another ISA level or vendor never borrows: the default answers, after the chain's 3 levels.
  for (const char* key : {"x86_64.avx2.intel.fam6_mod1.t1", "x86_64.avx512.amd.fam25_mod1.t1"}) {
    auto cross = Lookup(spec, rows, {DType::kF32, NamedInts({{"n", 1000}}), key, std::nullopt});
    ASSERT_TRUE(cross);
    EXPECT_EQ(cross->source, tables::Source::kDefault) << key;
    EXPECT_EQ(cross->config, spec.DefaultConfig()) << key;
    EXPECT_EQ(cross->fallback_levels, 3) << key;
  }

  auto other_bucket = Lookup(spec, rows, {DType::kF32, NamedInts({{"n", 5000}}), e.hardware_key, std::nullopt});
  EXPECT_EQ(other_bucket->source, tables::Source::kDefault);
  EXPECT_EQ(other_bucket->config, spec.DefaultConfig());
  EXPECT_EQ(other_bucket->bucket, "n8192");

  auto bad = Lookup(spec, rows, {DType::kF32, NamedInts({{"m", 5}}), e.hardware_key, std::nullopt});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, "m");
}

}  // namespace
}  // namespace blocktune::tuner
