// The transfer strategy and its prior: prior buckets from other buckets' medians, the search
// they steer (and overrule when measurements disagree), and a transfer sweep reading its prior
// from the sink and from its own earlier buckets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/tuner/memory_sink.h"
#include "tests/tuner/search_test_util.h"
#include "tuner/search/prior.h"
#include "tuner/search/search.h"
#include "tuner/sweep.h"

namespace blocktune::tuner::search {
namespace {

using blocktune::testing::MemorySink;

// Evaluations until `search` asks for `target` (budget + 1 if it never does), answering with
// BowlCost(best_x).
int64_t EvaluationsToFind(SearchStrategy& search, const SearchSpace& space, size_t target, double best_x,
                          int64_t budget) {
  for (int64_t e = 1; e <= budget; ++e) {
    auto next = search.Ask();
    if (!next) break;
    search.Tell(*next, Observation{true, BowlCost(space.config(*next), best_x)});
    if (*next == target) return e;
  }
  return budget + 1;
}

TEST(Search, PriorBucketsAreRelativeLogCostsWithTheLowestMedianPerConfig) {
  const Config a = NamedInts({{"x", 1}});
  const Config b = NamedInts({{"x", 2}});
  const PriorBucket p = MakePriorBucket({3.0}, {{a, 200}, {b, 100}, {a, 150}, {b, 0}});
  ASSERT_EQ(p.relative_cost.size(), 2u);
  EXPECT_DOUBLE_EQ(p.relative_cost.at("x=2"), 0.0);
  EXPECT_NEAR(p.relative_cost.at("x=1"), std::log(1.5), 1e-12);
  GridSpec spec;
  Problem problem;
  problem.dims = NamedInts({{"n", 255}});
  EXPECT_EQ(PriorFeatures(spec, problem), std::vector<double>{8.0});
}

// The grid searched as the bucket n = 4096, with a prior of other buckets' bowls.
class TransferTest : public ::testing::Test {
 protected:
  TransferTest() : space_(GridSpace(spec_)), start_(space_.Find(spec_.DefaultConfig())) {
    prior_.features = {std::log2(1.0 + 4096)};
  }
  size_t At(int64_t x) const { return *space_.Find(NamedInts({{"x", x}, {"y", 4}, {"z", 64}})); }
  std::unique_ptr<SearchStrategy> Make(Strategy s, int64_t budget) const {
    return MakeSearch(s, space_, start_, 1, budget, prior_);
  }

  GridSpec spec_;
  SearchSpace space_;
  std::optional<size_t> start_;
  SearchPrior prior_;
};

// Buckets either side of this one (n = 2^10 and 2^14 around 2^12) have their minima at x = 3
// and x = 5; their average puts this bucket's at x = 4, which transfer measures second, right
// after the default. Without the prior (surrogate) the same budget does not get there.
TEST_F(TransferTest, FindsTheMinimumTheNeighbouringBucketsPredict) {
  prior_.buckets = {BowlPrior(space_, 1024, 3), BowlPrior(space_, 16384, 5), BowlPrior(space_, 1 << 20, 8)};
  EXPECT_EQ(EvaluationsToFind(*Make(Strategy::kTransfer, 5), space_, At(4), 4, 5), 2);
  EXPECT_GT(EvaluationsToFind(*Make(Strategy::kSurrogate, 5), space_, At(4), 4, 5), 5);
}

// A prior that measured less than half of this space (a first sweep's tenth of each bucket)
// ranks too few configs to be trusted: transfer then asks exactly what surrogate asks.
TEST_F(TransferTest, WithAThinPriorSearchesLikeSurrogate) {
  std::vector<std::pair<Config, double>> few;
  for (size_t i = 0; i < space_.size() / 3; ++i) few.emplace_back(space_.config(i), BowlCost(space_.config(i), 3));
  prior_.buckets = {MakePriorBucket({std::log2(1.0 + 1024)}, few)};
  auto transfer = Make(Strategy::kTransfer, 18);
  auto surrogate = Make(Strategy::kSurrogate, 18);
  for (int e = 0; e < 18; ++e) {
    auto a = transfer->Ask();
    auto b = surrogate->Ask();
    ASSERT_TRUE(a && b);
    ASSERT_EQ(*a, *b) << "evaluation " << e;
    const Observation o{true, BowlCost(space_.config(*a), 6)};
    transfer->Tell(*a, o);
    surrogate->Tell(*b, o);
  }
}

// The most alike bucket (same n) has its minimum at x = 1, but this bucket's is at x = 6, as
// in a less alike one: after a few measurements contradict the first, its weight collapses and
// the search still finds x = 6 within a tenth of the space.
TEST_F(TransferTest, MeasurementsOverruleAMisleadingPrior) {
  prior_.buckets = {BowlPrior(space_, 4096, 1), BowlPrior(space_, 1 << 18, 6)};
  EXPECT_LE(EvaluationsToFind(*Make(Strategy::kTransfer, 18), space_, At(6), 6, 18), 6);
}

// A sweep with the transfer strategy reads its prior from the sink once, leaves each bucket's
// own earlier measurements out of that bucket's prior, and finds the bowl's minimum in both
// buckets with far fewer evaluations than the default budget.
TEST(RunSweep, TransferUsesTheSinksPriorFromOtherBuckets) {
  MemorySink sink;
  sink.prior = GridPrior(GridSpace(GridSpec()), 6);
  OracleEvaluator eval;
  auto winners = RunGridSweep(GridRequest(Strategy::kTransfer, 3), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  ASSERT_EQ(winners->size(), 2u);
  for (const auto& w : *winners) EXPECT_EQ(w.config, NamedInts({{"x", 6}, {"y", 4}, {"z", 64}}));
  EXPECT_EQ(eval.measured.size(), 2u * 3);
  // The decision round's record says whose landscapes guided the search.
  ASSERT_EQ(sink.rounds.size(), 2u);
  EXPECT_NE(sink.rounds[0].decision.find("; transfer: prior of 2 buckets, weight n"), std::string::npos)
      << sink.rounds[0].decision;
}

// With nothing stored, a transfer sweep's first bucket is searched like surrogate and becomes
// the prior of the next: the second bucket (the same bowl) measures the minimum right after
// the default. (100 evaluations, so the first bucket covers more than half the space.)
TEST(RunSweep, TransferLearnsFromTheSweepsOwnEarlierBuckets) {
  MemorySink sink;
  OracleEvaluator eval;
  auto winners = RunGridSweep(GridRequest(Strategy::kTransfer, 100), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  ASSERT_EQ(winners->size(), 2u);
  std::vector<Config> second;
  for (const Measurement& m : sink.stored) {
    if (m.bucket == (*winners)[1].bucket && m.outcome != Outcome::kInvalid) second.push_back(m.config);
  }
  ASSERT_GE(second.size(), 2u);
  EXPECT_EQ(second[0], GridSpec().DefaultConfig());
  EXPECT_EQ(second[1], NamedInts({{"x", 6}, {"y", 4}, {"z", 64}}));
  ASSERT_EQ(sink.rounds.size(), 2u);
  EXPECT_NE(sink.rounds[0].decision.find("transfer: no prior stored, searched as surrogate"), std::string::npos)
      << sink.rounds[0].decision;
  EXPECT_NE(sink.rounds[1].decision.find("transfer: prior of 1 bucket, weight " + (*winners)[0].bucket + " 100%"),
            std::string::npos)
      << sink.rounds[1].decision;
}

}  // namespace
}  // namespace blocktune::tuner::search
