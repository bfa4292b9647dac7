// Search strategies, resumption of every strategy, the decision round (interleaved re-timing,
// incumbent and noise band), the timing verdicts (unstable, below the physical floor, input
// rotation), and strategy replay on stored measurements, including the checked-in exhaustive
// sweeps of matmul and flash_attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "kernels/core/random.h"
#include "tests/tuner/fake_kernel.h"
#include "tests/tuner/memory_sink.h"
#include "tuner/search/auto.h"
#include "tuner/search/search.h"
#include "tuner/search/simulate.h"
#include "tuner/sweep.h"
#include "tuner/timing/environment.h"
#include "tuner/timing/floor.h"

namespace blocktune::tuner::search {
namespace {

using blocktune::testing::FakeSpec;
using blocktune::testing::MemorySink;

constexpr Strategy kAllStrategies[] = {Strategy::kExhaustive, Strategy::kRandom,   Strategy::kAnneal,
                                       Strategy::kSurrogate,  Strategy::kTransfer, Strategy::kAuto};

// An 8 x 6 x 4 grid whose valid configs exclude x*y == 12 (so neighbourhoods have holes).
class GridSpec : public KernelSpec {
 public:
  GridSpec() {
    params_ = {{"x", {1, 2, 3, 4, 5, 6, 7, 8}, ""}, {"y", {1, 2, 3, 4, 5, 6}, ""}, {"z", {16, 32, 64, 128}, ""}};
    dims_ = {{{"n", tables::Rounding::kPow2Ceil, 1, 1 << 20}, 1 << 20, "length"}};
  }
  std::string_view name() const override { return "grid"; }
  std::string_view description() const override { return "grid"; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  const std::vector<DimSpec>& dims() const override { return dims_; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  Config DefaultConfig() const override { return NamedInts({{"x", 2}, {"y", 2}, {"z", 32}}); }
  Status ValidateConfig(const Config& c, const Problem&, const HardwareProfile&) const override {
    if (*c.Get("x") * *c.Get("y") == 12) return InvalidArgument("x*y must not be 12");
    return {};
  }
  Problem VerificationProblem(const Config&, const Problem& p) const override { return p; }
  std::unique_ptr<KernelInstance> MakeInstance(const Problem&, uint64_t) const override { return nullptr; }
  double Flops(const Problem&) const override { return 0; }
  double Bytes(const Problem&) const override { return 0; }

 private:
  std::vector<ParamSpec> params_;
  std::vector<DimSpec> dims_;
};

// A smooth bowl in log space with its minimum at x=6, y=4, z=64; (7, 1, *) fails.
double GridCost(const Config& c) {
  const double x = std::log2(static_cast<double>(*c.Get("x")));
  const double y = std::log2(static_cast<double>(*c.Get("y")));
  const double z = std::log2(static_cast<double>(*c.Get("z")));
  return 1e6 * (1 + 0.3 * std::pow(x - std::log2(6.0), 2) + 0.2 * std::pow(y - 2, 2) + 0.1 * std::pow(z - 6, 2));
}

// Answers with GridCost instead of running anything, and counts what it was asked to measure.
class OracleEvaluator : public Evaluator {
 public:
  void Measure(const EvalRequest& r, const Config& config, Measurement& m) override {
    ++measured[r.problem.ToString() + " " + config.ToString()];
    Fill(config, m);
  }
  std::vector<Measurement> MeasureInterleaved(const EvalRequest&, const std::vector<Config>& configs) override {
    ++interleaved_rounds;
    std::vector<Measurement> out;
    for (const Config& c : configs) {
      Measurement m;
      Fill(c, m);
      out.push_back(m);
    }
    return out;
  }
  void Fill(const Config& c, Measurement& m) const {
    if (*c.Get("x") == 7 && *c.Get("y") == 1) {
      m.outcome = Outcome::kWrongResult;
      m.detail = "verification failed";
      return;
    }
    auto it = override_ns.find(c.ToString());
    m.outcome = Outcome::kOk;
    m.median_ns = it != override_ns.end() ? it->second : GridCost(c);
    // Spread so that the robust CV the decision round reads is 1.4826 x cv (MAD = cv x median).
    m.samples_ns = {m.median_ns * (1 - cv), m.median_ns, m.median_ns * (1 + cv)};
    m.cv = cv;
  }

  std::map<std::string, int> measured;
  std::map<std::string, double> override_ns;
  double cv = 0.001;
  int interleaved_rounds = 0;
};

SweepRequest GridRequest(Strategy strategy, int64_t budget) {
  SweepRequest r;
  r.kernel = "grid";
  r.shapes = {NamedInts({{"n", 1000}}), NamedInts({{"n", 100}})};
  r.strategy = strategy;
  r.budget = budget;
  r.seed = 7;
  return r;
}

// RunSweep of the grid kernel as sweep 1, answered by `eval`.
Result<std::vector<TunedEntry>> RunGridSweep(const SweepRequest& request, MemorySink& sink, OracleEvaluator& eval) {
  SweepOptions options;
  options.evaluator = &eval;
  const GridSpec spec;
  return RunSweep(request, 1, spec, HardwareProfile::Detect(1), sink, options);
}

SearchSpace GridSpace(const GridSpec& spec) {
  std::vector<Config> valid;
  for (const Config& c : spec.ConfigSpace()) {
    if (spec.ValidateConfig(c, {}, HardwareProfile{})) valid.push_back(c);
  }
  return SearchSpace(spec.params(), valid);
}

TEST(SearchSpace, NeighboursSkipInvalidValuesAlongOneParameter) {
  GridSpec spec;
  const SearchSpace space = GridSpace(spec);
  EXPECT_EQ(space.size(), 8u * 6u * 4u - 4u * 4u);  // (2,6) (3,4) (4,3) (6,2) have x*y = 12
  const auto at = space.Find(NamedInts({{"x", 3}, {"y", 3}, {"z", 32}}));
  ASSERT_TRUE(at);
  // y up from 3 skips the invalid y=4 and lands on y=5.
  const auto up = space.Step(*at, 1, +1);
  ASSERT_TRUE(up);
  EXPECT_EQ(space.config(*up), NamedInts({{"x", 3}, {"y", 5}, {"z", 32}}));
  EXPECT_EQ(space.Neighbours(*at).size(), 6u);
  const auto corner = space.Find(NamedInts({{"x", 1}, {"y", 1}, {"z", 16}}));
  EXPECT_EQ(space.Neighbours(*corner).size(), 3u);
  EXPECT_DOUBLE_EQ(space.Scaled(*corner, 2), 0.0);
}

TEST(Search, EveryStrategyIsDeterministicAndNeverAsksTwice) {
  GridSpec spec;
  const SearchSpace space = GridSpace(spec);
  const auto start = space.Find(spec.DefaultConfig());
  for (Strategy s : kAllStrategies) {
    std::vector<std::vector<size_t>> runs;
    for (uint64_t seed : {3u, 3u, 4u}) {
      auto search = MakeSearch(s, space, start, seed, 30);
      std::vector<size_t> asked;
      std::set<size_t> unique;
      while (auto next = search->Ask()) {
        ASSERT_LT(*next, space.size());
        ASSERT_TRUE(unique.insert(*next).second) << StrategyName(s) << " asked twice";
        asked.push_back(*next);
        OracleEvaluator oracle;
        Measurement m;
        oracle.Fill(space.config(*next), m);
        search->Tell(*next, Observation{m.outcome == Outcome::kOk, m.median_ns});
      }
      // Without a budget cut every strategy eventually proposes the whole space.
      EXPECT_EQ(asked.size(), space.size()) << StrategyName(s);
      EXPECT_EQ(asked.front(), *start) << StrategyName(s);
      runs.push_back(asked);
    }
    EXPECT_EQ(runs[0], runs[1]) << StrategyName(s);
    // Surrogate uses no randomness here, nor does transfer (without a prior it is surrogate),
    // nor auto (a 176-config, 3-parameter space is surrogate's; AutoOn* below cover its own).
    if (s != Strategy::kSurrogate && s != Strategy::kTransfer && s != Strategy::kAuto) {
      EXPECT_NE(runs[0], runs[2]) << StrategyName(s);
    }
  }
}

TEST(Search, ModelGuidedStrategiesFindTheBowlsMinimumOnATenthOfTheSpace) {
  GridSpec spec;
  const SearchSpace space = GridSpace(spec);
  const auto optimum = space.Find(NamedInts({{"x", 6}, {"y", 4}, {"z", 64}}));
  ASSERT_TRUE(optimum);
  const int64_t budget = EvaluationBudget(Strategy::kAnneal, 0, space.size());
  EXPECT_EQ(budget, 18);  // ceil(176 / 10)
  for (Strategy s : {Strategy::kAnneal, Strategy::kSurrogate}) {
    int found = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      auto search = MakeSearch(s, space, space.Find(spec.DefaultConfig()), seed, budget);
      for (int64_t e = 0; e < budget; ++e) {
        auto next = search->Ask();
        ASSERT_TRUE(next);
        OracleEvaluator oracle;
        Measurement m;
        oracle.Fill(space.config(*next), m);
        search->Tell(*next, Observation{m.outcome == Outcome::kOk, m.median_ns});
        if (*next == *optimum) {
          ++found;
          break;
        }
      }
    }
    EXPECT_GE(found, 9) << StrategyName(s);
  }
}

// ---------------------------------------------------------------------------------------------
// Invariants of the strategies on a GPU-like space: 5 parameters of 4 values (1,024 configs, so
// auto runs its iterated local search), two basins (the default's at coords (1,1,1,1,1) and a
// 30% faster one at (3,2,0,3,2)), and a failing region (p0 at its top value with p1 >= 2, an
// eighth of the space) that, as a compile failure would, returns no time.

PriorBucket BowlPrior(const SearchSpace& space, int64_t n, double best_x);  // below, with the transfer tests

SearchSpace WideSpace() {
  std::vector<ParamSpec> params;
  for (int d = 0; d < 5; ++d) params.push_back({"p" + std::to_string(d), {1, 2, 4, 8}, ""});
  std::vector<Config> valid;
  for (int i = 0; i < 1024; ++i) {
    std::vector<std::pair<std::string, int64_t>> v;
    for (int d = 0, k = i; d < 5; ++d, k /= 4) v.emplace_back("p" + std::to_string(d), int64_t{1} << (k % 4));
    valid.push_back(NamedInts(v));
  }
  return SearchSpace(params, valid);
}

bool WideFails(const SearchSpace& space, size_t i) { return space.coords(i)[0] == 3 && space.coords(i)[1] >= 2; }

Observation WideAnswer(const SearchSpace& space, size_t i) {
  if (WideFails(space, i)) return Observation{false, 0};
  const auto basin = [&](const std::vector<int>& at, double depth) {
    double d2 = 0;
    for (size_t d = 0; d < 5; ++d) d2 += std::pow(space.coords(i)[d] - at[d], 2);
    return depth * std::exp(-d2 / 3.0);
  };
  const double speed = 1 + basin({1, 1, 1, 1, 1}, 1.0) + basin({3, 2, 0, 3, 2}, 1.6);
  return Observation{true, 1e6 / speed};
}

size_t WideDefault(const SearchSpace& space) { return *space.Find(std::vector<int>{1, 1, 1, 1, 1}); }

TEST(Search, AutoOnALargeSpaceIsDeterministicNeverAsksTwiceAndCoversIt) {
  const SearchSpace space = WideSpace();
  ASSERT_EQ(space.size(), 1024u);
  EXPECT_EQ(ChooseAutoPlan(space, 100, {}), AutoPlan::kLocal);
  for (Strategy s : {Strategy::kAuto, Strategy::kAnneal, Strategy::kSurrogate}) {
    std::vector<std::vector<size_t>> runs;
    for (uint64_t seed : {3u, 3u, 4u}) {
      auto search = MakeSearch(s, space, WideDefault(space), seed, 100);
      std::vector<size_t> asked;
      std::set<size_t> unique;
      while (auto next = search->Ask()) {
        ASSERT_LT(*next, space.size());
        ASSERT_TRUE(unique.insert(*next).second) << StrategyName(s) << " asked twice";
        asked.push_back(*next);
        search->Tell(*next, WideAnswer(space, *next));
      }
      EXPECT_EQ(asked.size(), space.size()) << StrategyName(s);
      EXPECT_EQ(asked.front(), WideDefault(space)) << StrategyName(s);
      runs.push_back(asked);
    }
    EXPECT_EQ(runs[0], runs[1]) << StrategyName(s);
    EXPECT_NE(runs[0], runs[2]) << StrategyName(s);
  }
}

// Over 20 seeds at 100 evaluations: how many asks fell in the failing region (an eighth of the
// space, ~12 for random search), and the mean best/optimum.
struct WideRun {
  double failed = 0;
  double ratio = 0;
};
WideRun RunWide(Strategy s, int64_t budget) {
  const SearchSpace space = WideSpace();
  double optimum = 1e300;
  for (size_t i = 0; i < space.size(); ++i) {
    if (const Observation o = WideAnswer(space, i); o.ok) optimum = std::min(optimum, o.median_ns);
  }
  WideRun r;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto search = MakeSearch(s, space, WideDefault(space), seed, budget);
    double best = 1e300;
    for (int64_t e = 0; e < budget; ++e) {
      auto next = search->Ask();
      if (!next) break;
      const Observation o = WideAnswer(space, *next);
      search->Tell(*next, o);
      r.failed += o.ok ? 0 : 1.0 / 20;
      if (o.ok) best = std::min(best, o.median_ns);
    }
    r.ratio += optimum / best / 20;
  }
  return r;
}

TEST(Search, AFailingRegionDrawsFewerEvaluationsThanRandomSearch) {
  const WideRun random = RunWide(Strategy::kRandom, 100);
  EXPECT_GT(random.failed, 8);  // an eighth of 100, give or take the seeds
  const WideRun automatic = RunWide(Strategy::kAuto, 100);
  const WideRun surrogate = RunWide(Strategy::kSurrogate, 100);
  std::printf("failures in 100 evaluations: random %.2f, auto %.2f, surrogate %.2f\n", random.failed, automatic.failed,
              surrogate.failed);
  EXPECT_LT(automatic.failed, 0.6 * random.failed);
  EXPECT_LT(surrogate.failed, 0.6 * random.failed);
}

TEST(Search, AutoAndAnnealLeaveTheDefaultsBasinAndBeatRandomSearch) {
  for (int64_t budget : {25, 100}) {
    const WideRun random = RunWide(Strategy::kRandom, budget);
    const WideRun automatic = RunWide(Strategy::kAuto, budget);
    EXPECT_GE(automatic.ratio, random.ratio) << budget;
  }
  // The default's basin peaks at 2 / 2.6 = 0.77 of the optimum: a walk that stays in it (anneal
  // before its stall rule) never passes that.
  EXPECT_GT(RunWide(Strategy::kAnneal, 200).ratio, 0.9);
  EXPECT_GT(RunWide(Strategy::kAuto, 200).ratio, 0.97);
}

// One seeded run of auto on `space` from `start` to `budget` evaluations, answered by `answer`:
// every ask in order (each inside the space, none twice), how many failed, and the decision
// record.
struct AutoRun {
  std::vector<size_t> asked;
  int failed = 0;
  std::string why;
};
using Answer = std::function<Observation(const SearchSpace&, size_t)>;
void RunAuto(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int budget, const Answer& answer,
             AutoRun& run) {
  auto search = MakeSearch(Strategy::kAuto, space, start, seed, budget);
  std::set<size_t> unique;
  for (int e = 0; e < budget; ++e) {
    const auto next = search->Ask();
    ASSERT_TRUE(next);
    ASSERT_LT(*next, space.size());
    ASSERT_TRUE(unique.insert(*next).second) << "asked twice";
    run.asked.push_back(*next);
    const Observation o = answer(space, *next);
    run.failed += o.ok ? 0 : 1;
    search->Tell(*next, o);
  }
  run.why = search->Explain();
}
void RunAutoOnWide(uint64_t seed, int budget, const Answer& answer, AutoRun& run) {
  const SearchSpace space = WideSpace();
  RunAuto(space, WideDefault(space), seed, budget, answer, run);
}

// The count a decision record gives before `phrase` ("12 later model asks" -> 12), -1 if absent.
int CountBefore(const std::string& why, const std::string& phrase) {
  const size_t at = why.find(phrase);
  if (at == std::string::npos || at == 0) return -1;
  const size_t from = why.rfind(' ', at - 1) + 1;
  return std::stoi(why.substr(from, at - from));
}

// At 200 evaluations the model phase takes 100 and the genetic local search the rest: two of
// every three of those asks are children of the best configs (the third a neighbour of the best),
// kept with the feasibility model's P(pass): over 20 seeds auto measures 17.3 failures in 200
// evaluations (16.1 before the model's additive kernel) where random search measures 23.5.
// Children kept by the skip rule alone measured 19.2 (auto.cc, GeneticAsk).
TEST(Search, AutoGeneticPhaseBreedsChildrenOutsideTheFailingRegion) {
  AutoRun run;
  ASSERT_NO_FATAL_FAILURE(RunAutoOnWide(7, 200, WideAnswer, run));
  EXPECT_GE(CountBefore(run.why, " children of the best configs"), 50) << run.why;
  const WideRun random = RunWide(Strategy::kRandom, 200);
  const WideRun automatic = RunWide(Strategy::kAuto, 200);
  std::printf("failures in 200 evaluations: random %.2f, auto %.2f\n", random.failed, automatic.failed);
  EXPECT_LT(automatic.failed, 0.75 * random.failed);
}

// A space with a block restriction as GPU kernels have (bx x by <= 1,024; 1,984 configs of 6
// parameters) whose optimum is its corner: bx = 32, the one block that wide that fits (by = 32),
// as dedispersion_W6600's is; a basin of narrower blocks reaches 0.96 of it and bx = 16 is slow.
SearchSpace BlockSpace() {
  const std::vector<int64_t> bxs = {1, 2, 4, 8, 16, 32};
  const std::vector<int64_t> bys = {32, 64, 96, 128, 160, 192, 224, 256};
  std::vector<ParamSpec> params = {{"bx", bxs, ""},          {"by", bys, ""},   {"t1", {1, 2, 3, 4}, ""},
                                   {"t2", {1, 2, 3, 4}, ""}, {"u", {0, 1}, ""}, {"v", {0, 1}, ""}};
  std::vector<Config> valid;
  for (int64_t bx : bxs) {
    for (int64_t by : bys) {
      if (bx * by > 1024) continue;
      for (int64_t t1 = 1; t1 <= 4; ++t1) {
        for (int64_t t2 = 1; t2 <= 4; ++t2) {
          for (int64_t u = 0; u <= 1; ++u) {
            for (int64_t v = 0; v <= 1; ++v) {
              valid.push_back(NamedInts({{"bx", bx}, {"by", by}, {"t1", t1}, {"t2", t2}, {"u", u}, {"v", v}}));
            }
          }
        }
      }
    }
  }
  return SearchSpace(params, valid);
}

Observation BlockAnswer(const SearchSpace& space, size_t i) {
  const std::vector<int>& c = space.coords(i);
  const double tiles = 1.0 / (1 + 0.15 * (c[2] + c[3]) + 0.05 * (c[4] + c[5]));  // best at t1 = t2 = 1, u = v = 0
  double speed = tiles;                                                          // bx = 32: the corner
  if (c[0] == 4) {
    speed = 0.3 * tiles;  // bx = 16
  } else if (c[0] < 4) {
    speed = 0.96 * tiles * std::exp(-std::pow(c[0] - 2, 2) / 4.0 - std::pow(c[1] - 2, 2) / 8.0);
  }
  return Observation{true, 1e6 / speed};
}

// A mutated child outside the space is moved to the nearest valid config that keeps the mutated
// parameters (auto.cc, Repair): on the block space a mutation that widens bx past what the
// parent's by allows is repaired (by moved down to fit) instead of lost. The repaired children
// are valid configs, never asked twice, the same for the same seed, and the corner optimum is
// found in every seed by 300 evaluations. (On this small space the model phase finds the corner
// itself; the repair's effect on reaching it is measured on dedispersion_W6600, docs/search.md.)
TEST(Search, AutoRepairsMutatedChildrenAlongARestriction) {
  const SearchSpace space = BlockSpace();
  ASSERT_EQ(space.size(), 31u * 64u);
  const auto corner = space.Find(std::vector<int>{5, 0, 0, 0, 0, 0});
  ASSERT_TRUE(corner);
  int found = 0;
  int64_t repaired = 0;
  std::vector<std::vector<size_t>> asked;
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 1u}) {
    AutoRun run;
    ASSERT_NO_FATAL_FAILURE(
        RunAuto(space, space.Find(std::vector<int>{0, 0, 0, 0, 0, 0}), seed, 300, BlockAnswer, run));
    found += std::ranges::count(run.asked, *corner) > 0 ? 1 : 0;
    repaired += CountBefore(run.why, " of them repaired into the space");
    asked.push_back(run.asked);
  }
  std::printf("block space, 300 evaluations: corner found in %d of 9 runs, %lld children repaired\n", found,
              static_cast<long long>(repaired));
  EXPECT_GT(repaired, 9 * 10);  // ~35 a run here
  EXPECT_EQ(found, 9);
  EXPECT_EQ(asked.front(), asked.back());
  EXPECT_NE(asked[0], asked[1]);
}

// A space whose log time is a sum of one term per parameter, each term's levels in no smooth
// order (the best level of each sits between two poor ones): 6 x 6 x 4 x 4 x 2 x 2 = 2,304
// configs, optimum at coords (3, 1, 2, 0, 1, 0).
SearchSpace AdditiveSpace() {
  const std::vector<size_t> levels = {6, 6, 4, 4, 2, 2};
  std::vector<ParamSpec> params;
  for (size_t d = 0; d < levels.size(); ++d) {
    std::vector<int64_t> values;
    for (size_t l = 0; l < levels[d]; ++l) values.push_back(int64_t{1} << l);
    params.push_back({"a" + std::to_string(d), values, ""});
  }
  std::vector<Config> valid;
  for (size_t i = 0; i < 2304; ++i) {
    std::vector<std::pair<std::string, int64_t>> v;
    size_t k = i;
    for (size_t d = 0; d < levels.size(); ++d) {
      v.emplace_back("a" + std::to_string(d), int64_t{1} << (k % levels[d]));
      k /= levels[d];
    }
    valid.push_back(NamedInts(v));
  }
  return SearchSpace(params, valid);
}

Observation AdditiveAnswer(const SearchSpace& space, size_t i) {
  static const std::vector<std::vector<double>> terms = {{0.5, 0.2, 0.6, 0.0, 0.7, 0.3},
                                                         {0.4, 0.0, 0.5, 0.3, 0.6, 0.2},
                                                         {0.3, 0.5, 0.0, 0.4},
                                                         {0.0, 0.4, 0.2, 0.5},
                                                         {0.3, 0.0},
                                                         {0.0, 0.2}};
  double log_time = 0;
  for (size_t d = 0; d < terms.size(); ++d) log_time += terms[d][static_cast<size_t>(space.coords(i)[d])];
  return Observation{true, 1e6 * std::exp(log_time)};
}

// At budgets of 100 and more the model's kernel mixes in an additive part (each parameter's own
// Matern, auto.cc, Kernel) with a share chosen by marginal likelihood on every ask. On a
// landscape that is a sum of per-parameter terms the likelihood takes it on most model asks
// (the wide space's two basins take it about as often: near each basin its log time is close
// to a sum too), the run finds the optimum, and the runs stay deterministic and never ask a
// config twice.
TEST(Search, AutoModelTakesTheAdditiveKernelWhereTheLandscapeIsASum) {
  const SearchSpace space = AdditiveSpace();
  ASSERT_EQ(space.size(), 2304u);
  const auto optimum = space.Find(std::vector<int>{3, 1, 2, 0, 1, 0});
  ASSERT_TRUE(optimum);
  int64_t additive = 0;
  int found = 0;
  std::vector<std::vector<size_t>> asked;
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 1u}) {
    AutoRun run;
    ASSERT_NO_FATAL_FAILURE(
        RunAuto(space, space.Find(std::vector<int>{0, 0, 0, 0, 0, 0}), seed, 200, AdditiveAnswer, run));
    const int64_t n = CountBefore(run.why, " model asks with an additive kernel");
    ASSERT_GE(n, 0) << run.why;
    asked.push_back(run.asked);
    if (asked.size() <= 5) {
      additive += n;
      found += std::ranges::count(run.asked, *optimum) > 0 ? 1 : 0;
    }
  }
  EXPECT_EQ(asked.front(), asked.back());
  EXPECT_NE(asked[0], asked[1]);
  std::printf("sum landscape, 5 runs of 200: %lld model asks with an additive kernel, optimum found in %d\n",
              static_cast<long long>(additive), found);
  EXPECT_GT(additive, 5 * 50);  // of at most 5 x 97 model asks (371 here)
  EXPECT_EQ(found, 5);
}

// From the 400th evaluation on, the Gaussian process takes every fifth ask (auto.cc,
// LateModelAsk), fitted to 100 of the measured configs: the run stays deterministic, asks no
// config twice, and those asks, weighted by P(pass) like the model phase's, keep the run's
// failures under the eighth of its evaluations random search would fail.
TEST(Search, AutoLaterModelAsksKeepTheInvariants) {
  AutoRun runs[2];
  for (AutoRun& run : runs) {
    ASSERT_NO_FATAL_FAILURE(RunAutoOnWide(5, 600, WideAnswer, run));
    EXPECT_EQ(CountBefore(run.why, " later model asks"), 40) << run.why;  // every fifth of the last 200
    std::printf("wide space, 600 evaluations: %d failed (random search: 75)\n", run.failed);
    EXPECT_LT(run.failed, 600 / 8);  // 50 here
  }
  EXPECT_EQ(runs[0].asked, runs[1].asked);
}

// The model phase (a Gaussian process with a feasibility model, auto.cc) on the wide space at 40
// evaluations (24 of them in the phase, after the default and 4 random configs): closer to the
// optimum than random search on average over 20 seeds, with under 0.6x its failures. Failures
// are counted as evaluations: the run stops at the budget however many failed.
TEST(Search, AutoModelPhaseBeatsRandomSearchAndAvoidsTheFailingRegion) {
  const WideRun random = RunWide(Strategy::kRandom, 40);
  const WideRun automatic = RunWide(Strategy::kAuto, 40);
  std::printf("wide space, 40 evaluations: auto %.4f (%.2f failed), random %.4f (%.2f failed)\n", automatic.ratio,
              automatic.failed, random.ratio, random.failed);
  EXPECT_GT(automatic.ratio, random.ratio);
  EXPECT_LT(automatic.failed, 0.6 * random.failed);
}

// The model phase's picks depend only on the seed and what was told: the same seed and answers
// give the same order, and no config is asked twice, with half the configs failing (every odd
// p0 level), which the Gaussian process never sees (they go to the feasibility model).
TEST(Search, AutoModelPhaseIsDeterministicWithManyFailures) {
  const auto odd_p0_fails = [](const SearchSpace& space, size_t i) {
    return space.coords(i)[0] % 2 == 1 ? Observation{false, 0} : WideAnswer(space, i);
  };
  AutoRun runs[2];
  for (AutoRun& run : runs) {
    ASSERT_NO_FATAL_FAILURE(RunAutoOnWide(5, 60, odd_p0_fails, run));
    EXPECT_LT(run.failed, 30) << "half the space fails; the feasibility model should steer away";
  }
  EXPECT_EQ(runs[0].asked, runs[1].asked);
}

TEST(Search, AutoPicksBySpaceBudgetAndPrior) {
  GridSpec spec;
  const SearchSpace grid = GridSpace(spec);
  EXPECT_EQ(ChooseAutoPlan(grid, 18, {}), AutoPlan::kSurrogate);
  EXPECT_EQ(ChooseAutoPlan(grid, 150, {}), AutoPlan::kLocal);  // most of the space: no model needed
  SearchPrior prior{{std::log2(1025.0)}, {BowlPrior(grid, 512, 6)}};
  EXPECT_DOUBLE_EQ(PriorCoverage(grid, prior), 1.0);
  EXPECT_EQ(ChooseAutoPlan(grid, 18, prior), AutoPlan::kPrior);
  prior.buckets[0].relative_cost.clear();
  prior.buckets[0].relative_cost.emplace(grid.config(0).ToString(), 0.0);
  EXPECT_EQ(ChooseAutoPlan(grid, 18, prior), AutoPlan::kSurrogate);  // covers 1 config of 176
}

// A prior from another "device": the same landscape 1.7x slower with +-2% noise per config.
TEST(Search, AutoWithACrossDevicePriorFindsTheOptimumInAFewEvaluations) {
  const SearchSpace space = WideSpace();
  std::vector<std::pair<Config, double>> other;
  SplitMix64 noise(99);
  size_t optimum = 0;
  for (size_t i = 0; i < space.size(); ++i) {
    const Observation o = WideAnswer(space, i);
    if (!o.ok) continue;
    if (o.median_ns < WideAnswer(space, optimum).median_ns || !WideAnswer(space, optimum).ok) optimum = i;
    other.emplace_back(space.config(i), 1.7 * o.median_ns * (1 + 0.02 * noise.NextSigned()));
  }
  SearchPrior prior{{}, {MakePriorBucket({}, other)}};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto search = MakeSearch(Strategy::kAuto, space, WideDefault(space), seed, 50, prior);
    int64_t found_at = 0;
    for (int64_t e = 1; e <= 20 && found_at == 0; ++e) {
      auto next = search->Ask();
      ASSERT_TRUE(next);
      ASSERT_FALSE(WideFails(space, *next)) << "the prior has no passing time for a failing config";
      search->Tell(*next, WideAnswer(space, *next));
      if (*next == optimum) found_at = e;
    }
    EXPECT_GT(found_at, 0) << seed;
    EXPECT_NE(search->Explain().find("prior"), std::string::npos);
  }
}

// A bowl like GridCost with its minimum at x = best_x (y = 4, z = 64 as there).
double BowlCost(const Config& c, double best_x) {
  const double x = std::log2(static_cast<double>(*c.Get("x")));
  const double y = std::log2(static_cast<double>(*c.Get("y")));
  const double z = std::log2(static_cast<double>(*c.Get("z")));
  return 1e6 * (1 + 0.3 * std::pow(x - std::log2(best_x), 2) + 0.2 * std::pow(y - 2, 2) + 0.1 * std::pow(z - 6, 2));
}

PriorBucket BowlPrior(const SearchSpace& space, int64_t n, double best_x) {
  std::vector<std::pair<Config, double>> medians;
  for (const Config& c : space.configs()) medians.emplace_back(c, BowlCost(c, best_x));
  return MakePriorBucket({std::log2(1.0 + static_cast<double>(n))}, medians);
}

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

// Earlier sweeps' measurements of the grid at n = 512 and 2048 (neighbours of GridRequest's
// buckets n = 1024 and 128), a bowl with its minimum at x = best_x.
std::vector<Measurement> GridPrior(const SearchSpace& space, double best_x) {
  std::vector<Measurement> out;
  for (int64_t n : {512, 2048}) {
    for (const Config& c : space.configs()) {
      Measurement m;
      m.bucket = "n" + std::to_string(n);
      m.problem.dims = NamedInts({{"n", n}});
      m.config = c;
      m.outcome = Outcome::kOk;
      m.median_ns = BowlCost(c, best_x);
      out.push_back(m);
    }
  }
  return out;
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
  // The default measures 5% slower than the best config. With samples spread by 10% that is
  // inside the noise band, so the default is the bucket's row; with 0.1% it is a real gain.
  for (double cv : {0.1, 0.001}) {
    MemorySink sink;
    OracleEvaluator eval;
    eval.cv = cv;
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

TEST(Timing, RotationSetsExceedTheCacheShareWithinCaps) {
  // 1 MiB per set, 2 MiB L2, no L3: 4 x 2 MiB = 8 sets.
  EXPECT_EQ(RotationSets(1 << 20, 2 << 20, 0, 2, 1), 8);
  // The L3 share of one thread of 2 cores (16 MiB) dominates: 16 sets.
  EXPECT_EQ(RotationSets(1 << 20, 2 << 20, 32 << 20, 2, 1), 16);
  EXPECT_EQ(RotationSets(1024, 2 << 20, 0, 2, 1), 64);  // capped at 64 sets
  // 50 MiB sets against a 512 MiB L3 share: 11 wanted, 5 fit in 256 MiB.
  EXPECT_EQ(RotationSets(50.0 * (1 << 20), 2 << 20, int64_t{1} << 30, 2, 1), 5);
  EXPECT_EQ(RotationSets(1e9, 2 << 20, 0, 2, 1), 1);
}

// The fake kernel again, with hooks: how many instances were made, and a flop count no
// machine could do in the time the fake takes.
class CountingSpec : public FakeSpec {
 public:
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& p, uint64_t seed) const override {
    ++instances;
    return FakeSpec::MakeInstance(p, seed);
  }
  double Flops(const Problem& p) const override { return impossible ? 1e15 : FakeSpec::Flops(p); }
  mutable int instances = 0;
  bool impossible = false;
};

EvalRequest FakeEval(const KernelSpec& spec) {
  EvalRequest r;
  r.spec = &spec;
  r.problem = Problem{DType::kF32, NamedInts({{"n", 1024}})};
  r.timing.min_repetition_ns = 100e3;
  r.timing.repetitions = 3;
  r.timing.max_cv = 1.0;
  return r;
}

TEST(Evaluator, RotatesThroughInputSets) {
  CountingSpec spec;
  EvalRequest r = FakeEval(spec);
  r.timing.rotation_sets = 5;
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
  EXPECT_EQ(spec.instances, 1 + 5);  // the verification instance and five timed sets
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 3}}), m);
  EXPECT_EQ(spec.instances, 1 + 5);  // reused for the next config of the bucket
}

TEST(Evaluator, TimesBelowThePhysicalFloorAreInvalid) {
  CountingSpec spec;
  spec.impossible = true;  // 1e15 flops in ~150 us
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(FakeEval(spec), NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kInvalid);
  EXPECT_EQ(m.detail.rfind(kBelowFloorDetail, 0), 0u) << m.detail;
  EvalRequest unchecked = FakeEval(spec);
  unchecked.timing.check_floor = false;
  eval.Measure(unchecked, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kOk);
}

TEST(Evaluator, TooNoisyAfterRetriesIsUnstable) {
  FakeSpec spec;
  EvalRequest r = FakeEval(spec);
  // Below any spread: a robust cv of exactly 0 is possible (two of three samples equal), and
  // `spread > max_cv` must hold on every attempt for the retries to run out.
  r.timing.max_cv = -1;
  r.timing.max_retries = 2;
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kUnstable);
  EXPECT_NE(m.detail.find("after 3 timing attempts"), std::string::npos) << m.detail;
  EXPECT_EQ(m.detail.rfind("robust cv", 0), 0u) << m.detail;
  EXPECT_EQ(m.samples_ns.size(), 3u);
}

TEST(Timing, RobustCvIgnoresOneOutlierButNotGeneralSpread) {
  EXPECT_NEAR(RobustCv({10, 10, 10, 10, 18}), 0, 1e-12);
  EXPECT_GT(CoefficientOfVariation({10, 10, 10, 10, 18}), 0.3);
  EXPECT_NEAR(RobustCv({8, 10, 12}), 1.4826 * 2 / 10, 1e-12);
  EXPECT_EQ(RobustCv({5}), 0);
}

TEST(Floor, PeaksFollowTheIsaAndThreads) {
  const PhysicalPeaks one = PeaksFor("avx512", DType::kF32, 1);
  EXPECT_DOUBLE_EQ(one.flops_per_ns, 384);
  EXPECT_DOUBLE_EQ(PeaksFor("avx2", DType::kF32, 2).flops_per_ns, 384);
  EXPECT_DOUBLE_EQ(PeaksFor("avx512", DType::kBF16, 1).flops_per_ns, 768);
  const KernelSpec* mm = FindKernel("matmul");
  ASSERT_NE(mm, nullptr);
  const Problem p{DType::kF32, NamedInts({{"m", 1024}, {"n", 1024}, {"k", 1024}})};
  EXPECT_NEAR(PhysicalFloorNs(*mm, p, one), 2.0 * 1024 * 1024 * 1024 / 384, 1);
}

TEST(Environment, CapturesAffinityCompilerAndFlags) {
  const SweepEnvironment e = CaptureEnvironment("blocktune x");
  EXPECT_FALSE(e.affinity.empty());
  EXPECT_FALSE(e.compiler.empty());
  EXPECT_FALSE(e.build_flags.empty());
  EXPECT_FALSE(e.load_average.empty());
  EXPECT_EQ(e.tool_version, "blocktune x");
}

// ---------------------------------------------------------------------------------------------
// Simulation.

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
