// The logic of `blocktune regret` (tuner/regret.h) on the fake kernel: which level each row key
// sits at, which rows a level would serve, and the structure of a measured report. Timings are
// real but never asserted: only that the ratios are consistent (the default is 1.0 against
// itself, the best has no regret, nothing beats the best).
#include "tuner/regret.h"

#include <gtest/gtest.h>

#include "tests/tuner/fake_kernel.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::FakeSpec;

constexpr std::string_view kHost = "x86_64.avx2.amd.fam25_mod1.t1";

TunedEntry Row(std::string key, std::string bucket, int64_t a, int64_t b, DType dtype = DType::kF32) {
  TunedEntry e;
  e.kernel = "fake";
  e.hardware_key = std::move(key);
  e.dtype = dtype;
  e.bucket = std::move(bucket);
  e.config = NamedInts({{"a", a}, {"b", b}});
  return e;
}

TEST(Regret, LevelOfEveryKindOfKey) {
  EXPECT_EQ(RegretLevelOf(kHost, kHost), RegretLevel::kExact);
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx2.amd.fam25_mod1.t2"), RegretLevel::kOtherThreads);
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx2.amd.fam25_mod33.t1"), RegretLevel::kOtherModel);
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx2.intel.fam6_mod167.t1"), RegretLevel::kOtherVendor);
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx512.intel.fam6_mod167.t1"), RegretLevel::kOtherIsa);
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx512.amd.fam25_mod1.t1"), RegretLevel::kOtherIsa);
  EXPECT_EQ(RegretLevelOf(kHost, "aarch64.base.other.fam0_mod0.t1"), std::nullopt);
  // Component boundaries, not string prefixes: fam25_mod11 is another model.
  EXPECT_EQ(RegretLevelOf(kHost, "x86_64.avx2.amd.fam25_mod11.t1"), RegretLevel::kOtherModel);
  // Only the current chain's levels are served by lookups.
  EXPECT_TRUE(OnCurrentChain(RegretLevel::kOtherModel));
  EXPECT_FALSE(OnCurrentChain(RegretLevel::kOtherVendor));
  EXPECT_FALSE(OnCurrentChain(RegretLevel::kOtherIsa));
}

TEST(Regret, PlanServesTheSmallestKeyOfEachLevel) {
  FakeSpec spec;
  const std::vector<TunedEntry> rows = {
      Row("x86_64.avx512.intel.fam6_mod167.t2", "n64", 2, 2),
      Row("x86_64.avx512.intel.fam6_mod167.t1", "n64", 3, 3),
      Row(std::string(kHost), "n64", 3, 2),
      Row("x86_64.avx2.amd.fam25_mod1.t2", "n64", 1, 2),  // the default's config
      Row("aarch64.base.other.fam0_mod0.t1", "n64", 4, 1),
      Row(std::string(kHost), "n64", 4, 2, DType::kBF16),  // another dtype
      Row(std::string(kHost), "n128", 2, 3),
  };
  auto plan = PlanRegret(spec, rows, kHost, DType::kF32, {});
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_EQ(plan->size(), 2u);  // n128, n64: every f32 bucket of the rows, sorted
  EXPECT_EQ((*plan)[0].bucket, "n128");
  const RegretBucketPlan& b = (*plan)[1];
  EXPECT_EQ(b.bucket, "n64");
  ASSERT_EQ(b.candidates.size(), 5u);  // default, exact, other_threads, two other_isa (not aarch64)
  EXPECT_EQ(b.candidates[0].level, RegretLevel::kDefault);
  EXPECT_EQ(b.candidates[0].config, spec.DefaultConfig());
  EXPECT_TRUE(b.candidates[0].served);
  EXPECT_EQ(b.candidates[1].level, RegretLevel::kExact);
  EXPECT_EQ(b.candidates[2].level, RegretLevel::kOtherThreads);
  EXPECT_EQ(b.candidates[3].level, RegretLevel::kOtherIsa);
  EXPECT_EQ(b.candidates[3].hardware, "x86_64.avx512.intel.fam6_mod167.t1");
  EXPECT_TRUE(b.candidates[3].served);
  EXPECT_EQ(b.candidates[4].hardware, "x86_64.avx512.intel.fam6_mod167.t2");
  EXPECT_FALSE(b.candidates[4].served);

  // An explicit bucket list, in its order; a bucket no row has is the default alone.
  plan = PlanRegret(spec, rows, kHost, DType::kF32, {"n64", "n32"});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].candidates.size(), 5u);
  ASSERT_EQ((*plan)[1].candidates.size(), 1u);
  EXPECT_EQ((*plan)[1].candidates[0].level, RegretLevel::kDefault);

  // Malformed or non-canonical ids are refused, naming the id.
  for (const char* id : {"m64", "n100"}) {
    const auto bad = PlanRegret(spec, rows, kHost, DType::kF32, {id});
    ASSERT_FALSE(bad) << id;
    EXPECT_NE(bad.error().message.find(id), std::string::npos) << bad.error().message;
  }
}

TEST(Regret, MeasuredReportIsConsistent) {
  FakeSpec spec;
  const std::vector<TunedEntry> rows = {
      Row(std::string(kHost), "n64", 3, 2),                    // the fake's optimum
      Row("x86_64.avx2.amd.fam25_mod1.t2", "n64", 1, 2),       // the default's own config
      Row("x86_64.avx2.amd.fam25_mod33.t1", "n64", 4, 3),      // invalid (a*b == 12)
      Row("x86_64.avx512.intel.fam6_mod167.t1", "n64", 1, 1),  // writes NaN
      Row("x86_64.avx512.intel.fam6_mod167.t2", "n64", 4, 1),
  };
  auto plan = PlanRegret(spec, rows, kHost, DType::kF32, {});
  ASSERT_TRUE(plan);
  HardwareProfile hw = HardwareProfile::Detect(1);
  timing::TimingOptions timing;
  timing.min_repetition_ns = 1e6;
  timing.repetitions = 3;
  timing.rotation_sets = 1;
  InProcessEvaluator evaluator;
  const RegretReport r = MeasureRegret(spec, *plan, hw, evaluator, timing, 0.02);
  EXPECT_EQ(r.hardware, hw.Key());
  ASSERT_EQ(r.buckets.size(), 1u);
  const RegretBucket& b = r.buckets[0];
  ASSERT_EQ(b.rows.size(), 6u);
  EXPECT_GT(b.best_ns, 0);

  const RegretRow& def = b.rows[0];
  EXPECT_EQ(def.candidate.level, RegretLevel::kDefault);
  ASSERT_EQ(def.outcome, Outcome::kOk);
  EXPECT_EQ(def.speedup_vs_default, 1.0);
  EXPECT_FALSE(def.beyond_noise);
  // A row with the default's config shares its measurement: the same 1.0, never "beyond noise".
  const RegretRow& same = b.rows[2];
  EXPECT_EQ(same.candidate.level, RegretLevel::kOtherThreads);
  EXPECT_EQ(same.median_ns, def.median_ns);
  EXPECT_EQ(same.speedup_vs_default, 1.0);
  EXPECT_FALSE(same.beyond_noise);

  EXPECT_EQ(b.rows[3].candidate.level, RegretLevel::kOtherModel);
  EXPECT_EQ(b.rows[3].outcome, Outcome::kInvalid);
  EXPECT_NE(b.rows[3].detail.find("a*b"), std::string::npos);
  EXPECT_EQ(b.rows[4].outcome, Outcome::kNan);

  int at_best = 0;
  for (const RegretRow& row : b.rows) {
    if (row.outcome != Outcome::kOk) continue;
    EXPECT_GE(row.regret_vs_best, 0.0);
    EXPECT_NEAR(row.speedup_vs_default, def.median_ns / row.median_ns, 1e-12);
    at_best += row.regret_vs_best == 0.0;
  }
  EXPECT_GE(at_best, 1);

  // Summary: served rows only, levels in order; the refused ones are counted, not averaged.
  ASSERT_EQ(r.summary.size(), 5u);  // exact, other_threads, other_model, other_isa, default
  EXPECT_EQ(r.summary[0].level, RegretLevel::kExact);
  EXPECT_EQ(r.summary[0].buckets, 1);
  EXPECT_EQ(r.summary[1].level, RegretLevel::kOtherThreads);
  EXPECT_EQ(r.summary[1].geomean_speedup, 1.0);
  EXPECT_EQ(r.summary[2].level, RegretLevel::kOtherModel);
  EXPECT_EQ(r.summary[2].buckets, 0);
  EXPECT_EQ(r.summary[2].refused, 1);
  EXPECT_EQ(r.summary[3].level, RegretLevel::kOtherIsa);
  EXPECT_EQ(r.summary[3].refused, 1);  // the served t1 row writes NaN; the t2 row is not served
  EXPECT_EQ(r.summary[4].level, RegretLevel::kDefault);
  EXPECT_EQ(r.summary[4].geomean_speedup, 1.0);
  EXPECT_EQ(r.summary[4].worst_bucket, "n64");
}

TEST(Regret, BucketListSkipsCommentsAndBlanks) {
  EXPECT_EQ(ParseBucketList("# buckets\nm64_n64_k64\n\n  m128_n128_k128  # big\r\n"),
            (std::vector<std::string>{"m64_n64_k64", "m128_n128_k128"}));
  EXPECT_TRUE(ParseBucketList("\n# nothing\n").empty());
}

}  // namespace
}  // namespace blocktune::tuner
