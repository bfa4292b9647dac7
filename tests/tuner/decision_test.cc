// The sweep's decision round: the best few re-timed interleaved with the default, the noise band
// a challenger has to clear, and the incumbent row (kept inside the band, replaced beyond it,
// no advantage when stale, measured first when the search skipped it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/tuner/memory_sink.h"
#include "tests/tuner/search_test_util.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::MemorySink;
using search::GridCost;
using search::GridRequest;
using search::GridSpec;
using search::OracleEvaluator;
using search::RunGridSweep;

TEST(RunSweep, DecisionRoundRetimesTheBestFewInterleaved) {
  MemorySink sink;
  // The search saw x=5,y=4,z=64 as fastest (a lucky sample); re-timed it is slower than the
  // true optimum, which the decision round then picks.
  const std::string lucky = "x=5,y=4,z=64";
  SweepRequest r = GridRequest(Strategy::kExhaustive, 0);
  r.shapes.resize(1);
  struct Retimer : OracleEvaluator {
    std::vector<Measurement> MeasureInterleaved(const EvalRequest& req, const std::vector<Config>& configs) override {
      override_ns.clear();
      return OracleEvaluator::MeasureInterleaved(req, configs);
    }
  } retimer;
  retimer.override_ns[lucky] = 1e5;
  auto winners = RunGridSweep(r, sink, retimer);
  ASSERT_TRUE(winners);
  ASSERT_EQ(sink.rounds.size(), 1u);
  // The best four of the search, then the kernel's default, which joins every round.
  ASSERT_EQ(sink.rounds[0].candidates.size(), 5u);
  EXPECT_EQ(sink.rounds[0].candidates[0].config.ToString(), lucky);
  EXPECT_EQ(sink.rounds[0].candidates[4].config, GridSpec().DefaultConfig());
  EXPECT_EQ((*winners)[0].config, NamedInts({{"x", 6}, {"y", 4}, {"z", 64}}));
  EXPECT_EQ((*winners)[0].median_ns, GridCost((*winners)[0].config));
  EXPECT_EQ(sink.rounds[0].decision.rfind("new; beats the default by ", 0), 0u) << sink.rounds[0].decision;
}

TEST(RunSweep, ANoisyChallengerLosesToTheDefault) {
  SweepRequest r = GridRequest(Strategy::kExhaustive, 0);
  r.shapes.resize(1);
  const Config best = NamedInts({{"x", 6}, {"y", 4}, {"z", 64}});
  const Config def = GridSpec().DefaultConfig();
  // The default measures 5% slower than the best config. With the default's repetitions spread
  // by 10% of its own (against the others' drift) that is inside the noise band, so the default
  // is the bucket's row; with 0.1% it is a real gain. (A spread every config shares cycle by
  // cycle, a drift, does not hide it: Paired.ADriftCancelsInTheRatios.)
  for (double cv : {0.1, 0.001}) {
    MemorySink sink;
    OracleEvaluator eval;
    eval.cv = cv;
    eval.against_the_drift.insert(def.ToString());
    eval.override_ns[def.ToString()] = GridCost(best) * 1.05;
    auto winners = RunGridSweep(r, sink, eval);
    ASSERT_TRUE(winners) << winners.error().ToString();
    ASSERT_EQ(winners->size(), 1u);
    ASSERT_EQ(sink.rounds.size(), 1u);
    const FinalRound& round = sink.rounds[0];
    EXPECT_NE(std::find_if(round.candidates.begin(), round.candidates.end(),
                           [&](const Measurement& m) { return m.config == def; }),
              round.candidates.end());
    if (cv > 0.01) {
      EXPECT_EQ((*winners)[0].config, def);
      EXPECT_EQ(round.chosen, def);
      EXPECT_EQ(round.decision.rfind("kept default: best challenger 4.8% faster", 0), 0u) << round.decision;
      EXPECT_GT(round.noise_band, 0.05);
    } else {
      EXPECT_EQ((*winners)[0].config, best);
      EXPECT_NE(round.decision.find("beats the default by 4.8%"), std::string::npos) << round.decision;
    }
  }
}

TEST(RunSweep, IncumbentIsKeptInsideTheNoiseBandAndReplacedBeyondIt) {
  SweepRequest r = GridRequest(Strategy::kExhaustive, 0);
  r.shapes.resize(1);
  const Config best = NamedInts({{"x", 6}, {"y", 4}, {"z", 64}});
  const Config close = NamedInts({{"x", 6}, {"y", 4}, {"z", 32}});  // 10% slower by GridCost
  for (double incumbent_ns : {GridCost(best) * 1.01, GridCost(best) * 1.5}) {
    MemorySink sink;
    OracleEvaluator eval;
    eval.override_ns[close.ToString()] = incumbent_ns;
    TunedEntry inc;
    inc.kernel = "grid";
    inc.bucket = "n1024";
    inc.config = close;
    inc.median_ns = 1;
    inc.sweep_id = 99;
    inc.measured_at = "then";
    sink.incumbent = inc;
    auto winners = RunGridSweep(r, sink, eval);
    ASSERT_TRUE(winners);
    ASSERT_EQ(sink.rounds.size(), 1u);
    EXPECT_EQ(sink.rounds[0].incumbent, close);
    EXPECT_DOUBLE_EQ(sink.rounds[0].noise_band, 0.02);  // cv 0.1% is far below the 2% floor
    if (incumbent_ns < GridCost(best) * 1.02) {
      // 1% slower is noise: the published row stays exactly as it was.
      EXPECT_EQ((*winners)[0].config, close);
      EXPECT_EQ((*winners)[0].sweep_id, 99);
      EXPECT_EQ((*winners)[0].measured_at, "then");
      EXPECT_EQ(sink.rounds[0].decision.rfind("kept incumbent", 0), 0u) << sink.rounds[0].decision;
    } else {
      EXPECT_EQ((*winners)[0].config, best);
      EXPECT_EQ((*winners)[0].sweep_id, 1);
      EXPECT_EQ(sink.rounds[0].decision.rfind("replaced incumbent", 0), 0u) << sink.rounds[0].decision;
    }
  }
}

TEST(RunSweep, AStaleIncumbentGetsNoIncumbentsAdvantage) {
  // The same 1%-slower incumbent that is kept above, but measured by another build of the
  // kernel (a fingerprint that is not this build's): the round's winner replaces it.
  SweepRequest r = GridRequest(Strategy::kExhaustive, 0);
  r.shapes.resize(1);
  const Config best = NamedInts({{"x", 6}, {"y", 4}, {"z", 64}});
  const Config close = NamedInts({{"x", 6}, {"y", 4}, {"z", 32}});
  MemorySink sink;
  OracleEvaluator eval;
  eval.override_ns[close.ToString()] = GridCost(best) * 1.01;
  TunedEntry inc;
  inc.kernel = "grid";
  inc.bucket = "n1024";
  inc.config = close;
  inc.sweep_id = 99;
  inc.fingerprint = "00000000deadbeef";
  sink.incumbent = inc;
  auto winners = RunGridSweep(r, sink, eval);
  ASSERT_TRUE(winners);
  ASSERT_EQ(sink.rounds.size(), 1u);
  EXPECT_FALSE(sink.rounds[0].incumbent.has_value());
  EXPECT_EQ((*winners)[0].config, best);
  EXPECT_EQ((*winners)[0].sweep_id, 1);
  EXPECT_NE(sink.rounds[0].decision.find("the incumbent row was stale (fingerprint 00000000deadbeef)"),
            std::string::npos)
      << sink.rounds[0].decision;
}

TEST(RunSweep, AnIncumbentTheSearchSkippedIsMeasuredAndVerifiedFirst) {
  SweepRequest r = GridRequest(Strategy::kRandom, 3);
  r.shapes.resize(1);
  const Config far = NamedInts({{"x", 8}, {"y", 6}, {"z", 128}});
  MemorySink sink;
  OracleEvaluator eval;
  TunedEntry inc;
  inc.kernel = "grid";
  inc.bucket = "n1024";
  inc.config = far;
  sink.incumbent = inc;
  auto winners = RunGridSweep(r, sink, eval);
  ASSERT_TRUE(winners);
  EXPECT_EQ(eval.measured["f32:n=1024 " + far.ToString()], 1);
  EXPECT_EQ(sink.rounds[0].candidates.back().config, far);
  EXPECT_NE((*winners)[0].config, far);  // it is the bowl's slowest corner
}

TEST(NoiseBand, TwoStandardErrorsOfTheMedianDifferenceWithAFloor) {
  EXPECT_DOUBLE_EQ(NoiseBand(0, 0, 5, 0.02), 0.02);
  // cv 5% each over 5 samples: 2 * 1.25 * sqrt(2) * 0.05 / sqrt(5) = 7.9%.
  EXPECT_NEAR(NoiseBand(0.05, 0.05, 5, 0.02), 2 * 1.25 * std::sqrt(2.0) * 0.05 / std::sqrt(5.0), 1e-12);
  EXPECT_GT(NoiseBand(0.05, 0.05, 5, 0.02), NoiseBand(0.05, 0.05, 20, 0.02));
}

}  // namespace
}  // namespace blocktune::tuner
