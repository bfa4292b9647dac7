// Sharded sweeps (`blocktune sweep --local --shard I/N`): the union of the N slices of a plan is
// the unsharded plan, each (bucket, config) once, and a sharded run measures exactly that.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/tuner/fake_kernel.h"
#include "tests/tuner/memory_sink.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::FakeSpec;
using blocktune::testing::MemorySink;
using Item = std::pair<std::string, std::string>;  // (bucket, config)

SweepRequest Request(Strategy strategy, int64_t budget) {
  SweepRequest r;
  r.kernel = "fake";
  for (int64_t n : {1000, 100, 10, 5000, 70000, 3, 1 << 19}) r.shapes.push_back(NamedInts({{"n", n}}));
  r.strategy = strategy;
  r.budget = budget;
  return r;
}

// Every (bucket, config) a plan records: invalid configs and the planned ones; for a
// model-guided plan (nothing planned up front) the bucket alone.
std::vector<Item> Items(const std::vector<BucketPlan>& plans) {
  std::vector<Item> out;
  for (const auto& p : plans) {
    for (const auto& c : p.invalid) out.emplace_back(p.bucket, c.ToString());
    for (const auto& c : p.planned) out.emplace_back(p.bucket, c.ToString());
    if (p.invalid.empty() && p.planned.empty()) out.emplace_back(p.bucket, "");
  }
  return out;
}

TEST(Shard, UnionOfTheSlicesIsThePlanEachItemOnce) {
  FakeSpec spec;
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (auto [strategy, budget] :
       {std::pair{Strategy::kExhaustive, int64_t{0}}, std::pair{Strategy::kRandom, int64_t{5}},
        std::pair{Strategy::kSurrogate, int64_t{4}}}) {
    const SweepRequest whole = Request(strategy, budget);
    auto all = PlanSweep(whole, spec, hw);
    ASSERT_TRUE(all) << all.error().ToString();
    std::vector<Item> expected = Items(*all);
    if (strategy == Strategy::kSurrogate) {
      for (auto& [bucket, config] : expected) config.clear();
    }
    std::sort(expected.begin(), expected.end());
    ASSERT_GE(expected.size(), 7u);  // 7 buckets
    for (int n = 1; n <= 9; ++n) {
      std::vector<Item> got;
      for (int i = 0; i < n; ++i) {
        SweepRequest shard = whole;
        shard.shard_index = i;
        shard.shard_count = n;
        auto plans = PlanSweep(shard, spec, hw);
        ASSERT_TRUE(plans) << plans.error().ToString();
        for (auto item : Items(*plans)) {
          if (strategy == Strategy::kSurrogate) item.second.clear();
          got.push_back(item);
        }
        if (strategy == Strategy::kSurrogate) {
          // Whole buckets, each with the unsharded plan's budget.
          for (const auto& p : *plans)
            EXPECT_EQ(p.evaluations, std::min<int64_t>(4, static_cast<int64_t>(p.valid.size())));
        }
      }
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, expected) << StrategyName(strategy) << " over " << n << " shards";
    }
  }
}

TEST(Shard, RefusesAnIndexOutsideTheCount) {
  FakeSpec spec;
  SweepRequest r = Request(Strategy::kExhaustive, 0);
  r.shard_index = 3;
  r.shard_count = 3;
  auto plans = PlanSweep(r, spec, HardwareProfile::Detect(1));
  ASSERT_FALSE(plans);
  EXPECT_EQ(plans.error().path, "shard");
}

TEST(Shard, ShardedRunsMeasureExactlyWhatOneRunDoesAndDecideNothing) {
  FakeSpec spec;
  const HardwareProfile hw = HardwareProfile::Detect(1);
  SweepOptions options;
  options.timing.min_repetition_ns = 20e3;
  options.timing.repetitions = 1;
  options.timing.max_cv = 1e6;
  SweepRequest whole = Request(Strategy::kExhaustive, 0);
  whole.shapes.resize(3);
  MemorySink one;
  ASSERT_TRUE(RunSweep(whole, 1, spec, hw, one, options));
  std::multiset<Item> expected;
  for (const auto& m : one.stored) expected.emplace(m.bucket, m.config.ToString());
  std::multiset<Item> got;
  for (int i = 0; i < 3; ++i) {
    SweepRequest shard = whole;
    shard.shard_index = i;
    shard.shard_count = 3;
    MemorySink sink;
    auto winners = RunSweep(shard, 1, spec, hw, sink, options);
    ASSERT_TRUE(winners) << winners.error().ToString();
    EXPECT_TRUE(winners->empty());     // winners are chosen after the merge
    EXPECT_TRUE(sink.rounds.empty());  // no decision round on a slice
    EXPECT_FALSE(sink.stored.empty());
    for (const auto& m : sink.stored) got.emplace(m.bucket, m.config.ToString());
  }
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace blocktune::tuner
