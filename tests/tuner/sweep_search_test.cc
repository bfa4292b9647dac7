// RunSweep driving each search strategy: a stopped sweep resumes without measuring anything
// twice and ends as an uninterrupted one, and the model-guided strategies keep their budgets.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/tuner/memory_sink.h"
#include "tests/tuner/search_test_util.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::MemorySink;
using search::GridPrior;
using search::GridRequest;
using search::GridSpace;
using search::GridSpec;
using search::kAllStrategies;
using search::OracleEvaluator;
using search::RunGridSweep;

// A sweep stopped after k measurements and resumed measures nothing twice and ends exactly as
// an uninterrupted one: same measurements in the same order, same winners.
TEST(RunSweep, EveryStrategyResumesWithoutMeasuringAnythingTwice) {
  GridSpec spec;
  SweepOptions options;
  for (Strategy s : kAllStrategies) {
    const SweepRequest request = GridRequest(s, s == Strategy::kExhaustive ? 0 : 15);
    // Transfer gets a prior whose minimum (x = 5) is not this grid's (x = 6), so its resumed
    // search has to replay a path that the measurements bent.
    const std::vector<Measurement> prior =
        s == Strategy::kTransfer ? GridPrior(GridSpace(spec), 5) : std::vector<Measurement>{};
    MemorySink whole_sink;
    whole_sink.prior = prior;
    OracleEvaluator whole_eval;
    options.evaluator = &whole_eval;
    auto whole = RunSweep(request, 1, spec, HardwareProfile::Detect(1), whole_sink, options);
    ASSERT_TRUE(whole) << whole.error().ToString();
    ASSERT_EQ(whole->size(), 2u);
    for (int64_t k : {1, 9, 23}) {
      MemorySink sink;
      sink.prior = prior;
      OracleEvaluator eval;
      options.evaluator = &eval;
      sink.cancel_after = k;
      ASSERT_TRUE(RunSweep(request, 1, spec, HardwareProfile::Detect(1), sink, options));
      // Stopped at the first check after k records (a bucket's invalid configs go in one run).
      ASSERT_GE(static_cast<int64_t>(sink.stored.size()), k);
      ASSERT_LT(sink.stored.size(), whole_sink.stored.size());
      sink.cancel_after = -1;
      auto resumed = RunSweep(request, 1, spec, HardwareProfile::Detect(1), sink, options);
      ASSERT_TRUE(resumed);
      for (const auto& [config, n] : eval.measured) EXPECT_EQ(n, 1) << StrategyName(s) << " " << config;
      ASSERT_EQ(sink.stored.size(), whole_sink.stored.size()) << StrategyName(s) << " k=" << k;
      for (size_t i = 0; i < sink.stored.size(); ++i) {
        EXPECT_EQ(sink.stored[i].bucket, whole_sink.stored[i].bucket);
        EXPECT_EQ(sink.stored[i].config, whole_sink.stored[i].config) << StrategyName(s) << " k=" << k << " i=" << i;
      }
      ASSERT_EQ(resumed->size(), whole->size());
      for (size_t i = 0; i < resumed->size(); ++i) EXPECT_EQ((*resumed)[i].config, (*whole)[i].config);
    }
  }
}

TEST(RunSweep, ModelGuidedStrategiesStayWithinTheirBudget) {
  GridSpec spec;
  for (Strategy s : {Strategy::kAnneal, Strategy::kSurrogate}) {
    MemorySink sink;
    OracleEvaluator eval;
    auto plans = PlanSweep(GridRequest(s, 0), spec, HardwareProfile::Detect(1));
    ASSERT_TRUE(plans);
    EXPECT_EQ((*plans)[0].evaluations, 18);
    EXPECT_TRUE((*plans)[0].planned.empty());
    EXPECT_EQ(PlannedTotal(*plans), 2 * (16 + 18));
    auto winners = RunGridSweep(GridRequest(s, 0), sink, eval);
    ASSERT_TRUE(winners);
    EXPECT_EQ(sink.stored.size(), 2u * (16 + 18));
    EXPECT_EQ(eval.measured.size(), 2u * 18);
    // The bowl's minimum is found.
    EXPECT_EQ((*winners)[0].config, NamedInts({{"x", 6}, {"y", 4}, {"z", 64}})) << StrategyName(s);
    EXPECT_FALSE(sink.environment.compiler.empty());
  }
}

TEST(RunSweep, BudgetInSecondsStopsTheSearch) {
  SweepRequest r = GridRequest(Strategy::kExhaustive, 0);
  r.budget_seconds = 1e-9;  // spent before the second config
  MemorySink sink;
  OracleEvaluator eval;
  auto winners = RunGridSweep(r, sink, eval);
  ASSERT_TRUE(winners);
  EXPECT_LE(eval.measured.size(), 4u);  // at most a couple per bucket, not 176
}

}  // namespace
}  // namespace blocktune::tuner
