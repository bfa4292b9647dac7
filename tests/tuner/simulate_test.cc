// Strategy replay on stored measurements (`blocktune simulate`): the text format, scores against
// the optimum and random search, budgets, a prior from another device, the agreement of two
// sweeps, and the checked-in exhaustive sweeps of matmul and flash_attention.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tuner/search_test_util.h"
#include "tuner/search/agreement.h"
#include "tuner/search/simulate.h"
#include "tuner/search/stored_buckets.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner::search {
namespace {

std::vector<StoredBucket> GridBuckets() {
  GridSpec spec;
  StoredBucket b{"matmul", "hw", DType::kF32, "m1_n1_k1", 1, {}};
  // Reuse matmul's parameter names over GridCost so Simulate finds the kernel in the registry.
  const KernelSpec* mm = FindKernel("matmul");
  for (const Config& c : mm->ConfigSpace()) {
    const auto& v = c.values();
    const double x = std::log2(static_cast<double>(v[0].second) / 48.0);
    const double y = std::log2(static_cast<double>(v[1].second) / 128.0);
    const double z = std::log2(static_cast<double>(v[2].second) / 128.0);
    b.configs.push_back(StoredConfig{c, Outcome::kOk, "",
                                     1e6 * (1 + 0.2 * std::pow(x - 2, 2) + 0.1 * std::pow(y - 3, 2) + 0.3 * z * z)});
  }
  b.configs[0].outcome = Outcome::kInvalid;
  b.configs[0].detail = "block_m too big";
  b.configs[1].outcome = Outcome::kInvalid;
  b.configs[1].detail = std::string(kBelowFloorDetail) + ": 1 ns";
  return {b};
}

TEST(Simulate, StoredBucketsRoundTripThroughTheTextFormat) {
  const auto buckets = GridBuckets();
  auto parsed = ParseStoredBuckets(FormatStoredBuckets(buckets));
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->size(), 1u);
  ASSERT_EQ((*parsed)[0].configs.size(), buckets[0].configs.size());
  EXPECT_EQ((*parsed)[0].configs[5].median_ns, buckets[0].configs[5].median_ns);
  EXPECT_EQ((*parsed)[0].configs[1].detail.rfind(kBelowFloorDetail, 0), 0u);
  auto bad = ParseStoredBuckets("matmul\thw\tf32\tb\tblock_m=1\tok\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 1"), std::string::npos);
  EXPECT_FALSE(ParseStoredBuckets("matmul\thw\tf32\tb\tblock_m=1\tfine\t1\n"));
}

TEST(Simulate, ReplaysDeterministicallyAndScoresAgainstTheOptimum) {
  SimulateOptions o;
  o.strategy = Strategy::kAnneal;
  o.seeds = 5;
  auto a = Simulate(GridBuckets(), o);
  auto b = Simulate(GridBuckets(), o);
  ASSERT_TRUE(a) << a.error().ToString();
  ASSERT_EQ(a->buckets.size(), 1u);
  const BucketSimulation& s = a->buckets[0];
  EXPECT_EQ(s.space_size, 179);  // the plain invalid config is outside, the below-floor one inside
  EXPECT_EQ(s.budget, 18);
  EXPECT_EQ(s.strategy.curve.size(), 18u);
  EXPECT_EQ(s.strategy.mean_ratio, b->buckets[0].strategy.mean_ratio);
  EXPECT_LE(s.strategy.curve.front(), s.strategy.curve.back());
  EXPECT_LE(s.strategy.mean_ratio, 1.0);
  EXPECT_GT(s.strategy.mean_ratio, s.random.mean_ratio);
  o.budget_fraction = 1.0;
  auto full = Simulate(GridBuckets(), o);
  EXPECT_DOUBLE_EQ(full->buckets[0].strategy.min_ratio, 1.0);  // the whole space finds the optimum
  o.budget_fraction = 0;
  EXPECT_FALSE(Simulate(GridBuckets(), o));
}

TEST(Simulate, AnAbsoluteBudgetIsKeptAndCappedAtTheSpace) {
  SimulateOptions o;
  o.seeds = 4;
  o.budget = 25;
  for (Strategy s : {Strategy::kAuto, Strategy::kAnneal, Strategy::kSurrogate, Strategy::kTransfer}) {
    o.strategy = s;
    auto r = Simulate(GridBuckets(), o);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->buckets[0].budget, 25) << StrategyName(s);
    EXPECT_EQ(r->buckets[0].strategy.curve.size(), 25u) << StrategyName(s);
    EXPECT_EQ(r->buckets[0].strategy.best_ns.size(), 4u) << StrategyName(s);
  }
  o.budget = 100000;
  auto all = Simulate(GridBuckets(), o);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->buckets[0].budget, 179);
  EXPECT_DOUBLE_EQ(all->buckets[0].strategy.min_ratio, 1.0);
  EXPECT_DOUBLE_EQ(all->buckets[0].strategy.score_at_budget, 1.0);
  o.budget = -1;
  EXPECT_FALSE(Simulate(GridBuckets(), o));
}

TEST(Simulate, ExpectedBestOfRandomSearchIsExact) {
  // Draws of 2 from {1, 2, 3, failed}: the failed one scores as the slowest passing (3); the
  // six pairs' best are 1, 1, 1, 2, 2, 3.
  const auto e = ExpectedRandomBest({1, 2, 3, 0}, 5);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_NEAR(e[0], 9.0 / 4, 1e-12);
  EXPECT_NEAR(e[1], 10.0 / 6, 1e-12);
  EXPECT_NEAR(e[2], 1.25, 1e-12);  // 3 of 4: misses 1 only in 1 of 4 triples
  EXPECT_NEAR(e[3], 1.0, 1e-12);
  EXPECT_NEAR(e[4], 1.0, 1e-12);  // more draws than configs: all of them
  // Random search's own methodology score is ~0 (its seeds' luck either way); a strategy that
  // finds the optimum at once scores ~1.
  SimulateOptions o;
  o.seeds = 50;
  o.budget = 20;
  o.strategy = Strategy::kRandom;
  auto r = Simulate(GridBuckets(), o);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->random_score, 0.0, 0.1);
  EXPECT_LT(r->random_score, r->strategy_score + 1e-9 + 0.2);
}

TEST(Simulate, APriorFromAnotherDeviceSteersAuto) {
  SimulateOptions o;
  o.seeds = 10;
  o.budget = 5;
  o.strategy = Strategy::kAuto;
  auto without = Simulate(GridBuckets(), o);
  std::vector<StoredBucket> other = GridBuckets();
  other[0].hardware_key = "other-device";
  for (StoredConfig& c : other[0].configs) c.median_ns *= 1.5;
  o.prior = other;
  auto with = Simulate(GridBuckets(), o);
  ASSERT_TRUE(without && with);
  EXPECT_DOUBLE_EQ(with->buckets[0].strategy.min_ratio, 1.0);  // the prior's best first
  EXPECT_GT(with->strategy_score, without->strategy_score);
  // The same landscape as data and prior is left out: it would predict itself.
  o.prior = GridBuckets();
  auto self = Simulate(GridBuckets(), o);
  ASSERT_TRUE(self);
  EXPECT_EQ(self->buckets[0].strategy.mean_ratio, without->buckets[0].strategy.mean_ratio);
}

TEST(Simulate, CompareChoicesJudgesWithTheOtherSweepsMeasurements) {
  auto a = GridBuckets();
  auto b = GridBuckets();
  const Config c0 = a[0].configs[10].config;
  const Config c1 = a[0].configs[11].config;
  b[0].configs[10].median_ns = 100;
  b[0].configs[11].median_ns = 102;
  auto r = CompareChoices(a, {{"m1_n1_k1", c0}}, b, {{"m1_n1_k1", c1}}, 0.03);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_NEAR(r.buckets[0].slowdown, 100.0 / 102.0 - 1, 1e-12);
  EXPECT_EQ(r.buckets[0].judged_by, 'B');
  EXPECT_TRUE(r.buckets[0].within);
  EXPECT_DOUBLE_EQ(r.within_fraction, 1.0);
  b[0].configs[10].median_ns = 110;
  r = CompareChoices(a, {{"m1_n1_k1", c0}}, b, {{"m1_n1_k1", c1}}, 0.03);
  EXPECT_FALSE(r.buckets[0].within);
  EXPECT_DOUBLE_EQ(r.within_fraction, 0.0);
}

TEST(Simulate, RemeasuredChoicesAreJudgedByTheirPairedRatio) {
  // Both choices re-timed side by side: preemptions hit A in cycles 2 and 5, B in 1 and 4. The
  // three quiet cycles say A is 5% faster; the two medians would say 4%.
  struct Fixed : Evaluator {
    void Measure(const EvalRequest&, const Config&, Measurement&) override {}
    std::vector<Measurement> MeasureInterleaved(const EvalRequest&, const std::vector<Config>& configs) override {
      std::vector<Measurement> out(configs.size());
      out[0].samples_ns = {0.95e6, 0.96e6, 1.30e6, 0.95e6, 0.97e6, 1.25e6, 0.96e6};
      out[1].samples_ns = {1.00e6, 1.31e6, 1.00e6, 1.00e6, 1.28e6, 1.00e6, 1.01e6};
      for (Measurement& m : out) {
        m.outcome = Outcome::kOk;
        m.median_ns = timing::Median(m.samples_ns);
      }
      return out;
    }
  } evaluator;
  const KernelSpec* matmul = FindKernel("matmul");
  ASSERT_NE(matmul, nullptr);
  const Config a = matmul->DefaultConfig();
  Config b = a;
  b.Set("block_m", 48);
  const AgreementReport r = RemeasureChoices(*matmul, DType::kF32, 1, {{"m256_n256_k256", a}}, {{"m256_n256_k256", b}},
                                             evaluator, timing::TimingOptions{}, 0.02);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].judged_by, 'R');
  EXPECT_NEAR(r.buckets[0].slowdown, -0.05, 0.001);
  EXPECT_FALSE(r.buckets[0].within);  // 5% apart: outside 2%
}

// tests/data/exhaustive_matmul_flash.tsv, parsed.
Result<std::vector<StoredBucket>> CheckedInSweeps() {
  std::ifstream in(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/exhaustive_matmul_flash.tsv", std::ios::binary);
  if (!in) return InvalidArgument("cannot read tests/data/exhaustive_matmul_flash.tsv");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseStoredBuckets(text.str());
}

// Real exhaustive sweeps on this 2-core host, 1 thread, 10 ms x 5 repetitions: 12 matmul
// buckets (180 configs each) swept 4 times and 12 flash_attention buckets (48 configs) swept 8
// times, each sweep by its own daemon into its own database (deploy/independent-sweeps.sh and
// flash_attention-only runs of it), combined per config by the lowest median and exported with
// `blocktune simulate --db ... --export` (docs/tuning.md has the commands and the figures of
// every single sweep and pair). Replayed with 10% of each bucket's space and 20 seeds; the
// fraction of buckets whose mean best-found/optimum is >= 0.98, and the mean ratio vs random:
//   matmul           transfer 100%  0.9952   anneal 100%  0.9932   surrogate 100%  0.9934   random 100%  0.9898
//   flash_attention  transfer 91.7% 0.9971   anneal 33.3% 0.9684   surrogate 58.3% 0.9727   random 25.0% 0.9690
// The target (>= 0.98 on >= 90% of buckets, ahead of random) holds for transfer on both
// kernels and for anneal and surrogate on matmul; flash_attention's 5 evaluations of 48 are
// too few for a search that knows nothing of the other buckets. auto (prior-ranked here, every
// other bucket of the kernel covering the space) keeps 23 of the 24 buckets at >= 0.98
// (matmul 100%, mean 0.9946; flash_attention 91.7%, 0.9971), issue 23's ">= 95% of buckets".
TEST(Simulate, CheckedInExhaustiveSweeps) {
  auto buckets = CheckedInSweeps();
  ASSERT_TRUE(buckets) << buckets.error().ToString();
  struct Expect {
    const char* kernel;
    Strategy strategy;
    double bucket_fraction;
    bool beats_random;
  };
  for (const Expect& e :
       {Expect{"matmul", Strategy::kAuto, 1.0, true}, Expect{"flash_attention", Strategy::kAuto, 0.9, true},
        Expect{"matmul", Strategy::kTransfer, 0.9, true}, Expect{"matmul", Strategy::kAnneal, 0.9, true},
        Expect{"matmul", Strategy::kSurrogate, 0.9, true}, Expect{"flash_attention", Strategy::kTransfer, 0.9, true},
        Expect{"flash_attention", Strategy::kAnneal, 0.33, false},
        Expect{"flash_attention", Strategy::kSurrogate, 0.58, true}}) {
    std::vector<StoredBucket> mine;
    for (const auto& b : *buckets) {
      if (b.kernel == e.kernel) mine.push_back(b);
    }
    ASSERT_EQ(mine.size(), 12u) << e.kernel;
    SimulateOptions o;
    o.strategy = e.strategy;
    o.budget_fraction = 0.1;
    o.seeds = 20;
    auto r = Simulate(mine, o);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_GE(r->strategy_bucket_fraction, e.bucket_fraction) << e.kernel << " " << StrategyName(e.strategy);
    if (e.beats_random) {
      EXPECT_GT(r->strategy_mean_ratio, r->random_mean_ratio) << e.kernel << " " << StrategyName(e.strategy);
      EXPECT_GE(r->strategy_bucket_fraction, r->random_bucket_fraction) << e.kernel << " " << StrategyName(e.strategy);
    }
    // Deterministic: the same replay gives the same figures.
    auto again = Simulate(mine, o);
    EXPECT_EQ(again->strategy_mean_ratio, r->strategy_mean_ratio);
  }
}

// The same data replayed as one transfer sweep of every bucket on a machine with nothing
// stored (--sequential-prior): each bucket's prior is what the replay measured in the buckets
// before it, a tenth of each, too thin to trust, so transfer searches like surrogate and does
// as well as it (flash_attention 58.3%, matmul 100%), never worse than random on the mean.
TEST(Simulate, SequentialPriorOnTheCheckedInSweeps) {
  auto buckets = CheckedInSweeps();
  ASSERT_TRUE(buckets) << buckets.error().ToString();
  for (const char* kernel : {"matmul", "flash_attention"}) {
    std::vector<StoredBucket> mine;
    for (const auto& b : *buckets) {
      if (b.kernel == kernel) mine.push_back(b);
    }
    SimulateOptions o;
    o.budget_fraction = 0.1;
    o.seeds = 5;
    o.strategy = Strategy::kSurrogate;
    auto surrogate = Simulate(mine, o);
    o.strategy = Strategy::kTransfer;
    o.sequential_prior = true;
    auto sequential = Simulate(mine, o);
    ASSERT_TRUE(surrogate && sequential);
    EXPECT_GE(sequential->strategy_mean_ratio, surrogate->strategy_mean_ratio - 1e-12) << kernel;
    EXPECT_GE(sequential->strategy_mean_ratio, sequential->random_mean_ratio) << kernel;
  }
}

}  // namespace
}  // namespace blocktune::tuner::search
