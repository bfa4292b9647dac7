// The search phase of issue 39: transfer's adaptive evaluation budget (more configs where the
// search is still finding better ones or its prior is thin, fewer where it has converged; the
// same on a resume), and a search measurement too noisy to steer anything timed again first.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/tuner/memory_sink.h"
#include "tuner/sweep.h"
#include "tuner/sweep_run.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::MemorySink;

// 20 x 10 configs, the default at (1, 1).
class PlaneSpec : public KernelSpec {
 public:
  PlaneSpec() {
    std::vector<int64_t> xs, ys;
    for (int64_t i = 1; i <= 20; ++i) xs.push_back(i);
    for (int64_t i = 1; i <= 10; ++i) ys.push_back(i);
    params_ = {{"x", xs, ""}, {"y", ys, ""}};
    dims_ = {{{"n", tables::Rounding::kPow2Ceil, 1, 1 << 20}, 1 << 20, "length"}};
  }
  std::string_view name() const override { return "plane"; }
  std::string_view description() const override { return "plane"; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  const std::vector<DimSpec>& dims() const override { return dims_; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  Config DefaultConfig() const override { return NamedInts({{"x", 1}, {"y", 1}}); }
  Status ValidateConfig(const Config&, const Problem&, const HardwareProfile&) const override { return {}; }
  Problem VerificationProblem(const Config&, const Problem& p) const override { return p; }
  std::unique_ptr<KernelInstance> MakeInstance(const Problem&, uint64_t) const override { return nullptr; }
  double Flops(const Problem&) const override { return 0; }
  double Bytes(const Problem&) const override { return 0; }

 private:
  std::vector<ParamSpec> params_;
  std::vector<DimSpec> dims_;
};

// A valley with its floor at (10, 5).
double PlaneCost(const Config& c) {
  return 1e6 * (1 + 0.01 * std::abs(static_cast<double>(*c.Get("x")) - 10) +
                0.02 * std::abs(static_cast<double>(*c.Get("y")) - 5));
}

// Answers with PlaneCost; `lucky` configs measure 20% fast with cv 0.09 the first time.
class PlaneEvaluator : public Evaluator {
 public:
  void Measure(const EvalRequest& r, const Config& c, Measurement& m) override {
    ++measured[c.ToString()];
    order.push_back(c.ToString());
    stop_lines.push_back(r.timing.stop_above_ns);
    Fill(c, m, 0.001);
    m.device_key = device_key;
    if (all_noisy) {  // repetitions spread ~11% (robust CV) above the config's own time
      m.samples_ns = {m.median_ns, 1.08 * m.median_ns, 1.16 * m.median_ns};
      m.cv = 0.08;
      if (best_ns == 0 || m.median_ns < 1.05 * best_ns) contenders.insert(c.ToString());
      if (best_ns == 0 || m.median_ns < best_ns) best_ns = m.median_ns;
    }
    if (lucky.count(c.ToString())) {
      m.samples_ns = {0.8 * m.median_ns, 0.7 * m.median_ns, 0.9 * m.median_ns};
      m.median_ns *= 0.8;
      m.cv = 0.09;
    }
  }
  std::vector<Measurement> MeasureInterleaved(const EvalRequest&, const std::vector<Config>& configs) override {
    std::vector<Measurement> out(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) Fill(configs[i], out[i], 0.001);
    for (Measurement& m : out) m.device_key = device_key;
    if (configs.size() == 1) {
      ++retimed[configs[0].ToString()];
      if (!retime_device_key.empty()) out[0].device_key = retime_device_key;
    }
    return out;
  }
  static void Fill(const Config& c, Measurement& m, double cv) {
    m.outcome = Outcome::kOk;
    m.median_ns = PlaneCost(c);
    m.samples_ns = {m.median_ns * (1 - cv), m.median_ns, m.median_ns * (1 + cv)};
    m.cv = cv;
  }
  std::map<std::string, int> measured, retimed;
  std::vector<std::string> order;  // configs as measured
  std::vector<double> stop_lines;  // TimingOptions::stop_above_ns each was measured with
  std::set<std::string> lucky;
  bool all_noisy = false;
  double best_ns = 0;                // with all_noisy: the best config time measured so far
  std::set<std::string> contenders;  // configs whose fastest repetition came within 5% of it
  std::string device_key;            // the device every answer comes from
  std::string retime_device_key;     // if set, the device a second look comes from instead
};

SweepRequest PlaneRequest() {
  SweepRequest r;
  r.kernel = "plane";
  r.shapes = {NamedInts({{"n", 1000}})};
  r.strategy = Strategy::kTransfer;
  return r;
}

Result<std::vector<TunedEntry>> RunPlane(const SweepRequest& r, MemorySink& sink, PlaneEvaluator& eval,
                                         SweepOptions options = {}) {
  options.evaluator = &eval;
  const PlaneSpec spec;
  return RunSweep(r, 2, spec, HardwareProfile::Detect(1), sink, options);
}

// Another bucket's whole landscape, alike this one's: a prior that is not thin.
std::vector<Measurement> FullPrior() {
  std::vector<Measurement> prior;
  for (int64_t x = 1; x <= 20; ++x) {
    for (int64_t y = 1; y <= 10; ++y) {
      Measurement m;
      m.sweep_id = 1;
      m.bucket = "n128";
      m.problem = Problem{DType::kF32, NamedInts({{"n", 128}})};
      m.config = NamedInts({{"x", x}, {"y", y}});
      PlaneEvaluator::Fill(m.config, m, 0.001);
      prior.push_back(m);
    }
  }
  return prior;
}

size_t Searched(const MemorySink& sink) { return sink.stored.size(); }

TEST(SearchBudget, TransfersDefaultBudgetIsAdaptiveAndEveryOtherIsFixed) {
  BucketPlan plan;
  plan.valid.resize(200);
  plan.evaluations = 20;
  SweepRequest r = PlaneRequest();
  SearchBudget b = BudgetOf(r, plan, false);
  EXPECT_TRUE(b.adaptive);
  EXPECT_EQ(b.floor, 15);
  EXPECT_EQ(b.cap, 30);
  EXPECT_EQ(b.patience, 7);
  EXPECT_EQ(BudgetOf(r, plan, true).floor, 20);  // a thin prior never stops before the plan
  plan.valid.resize(30);
  EXPECT_EQ(BudgetOf(r, plan, false).cap, 30);  // never more than the space
  r.budget = 20;
  EXPECT_FALSE(BudgetOf(r, plan, false).adaptive);  // an explicit budget is kept exactly
  r.budget = 0;
  r.strategy = Strategy::kSurrogate;
  b = BudgetOf(r, plan, false);
  EXPECT_FALSE(b.adaptive);
  EXPECT_EQ(b.floor, 20);
  EXPECT_EQ(b.cap, 20);
}

TEST(SearchBudget, AConvergedSearchStopsEarlyAndAResumeReplaysIt) {
  MemorySink sink;
  sink.prior = FullPrior();
  PlaneEvaluator eval;
  auto winners = RunPlane(PlaneRequest(), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  ASSERT_EQ(winners->size(), 1u);
  EXPECT_EQ((*winners)[0].config, NamedInts({{"x", 10}, {"y", 5}}));
  // The default, then the prior's optimum at once; nothing 1% better after it, so the search
  // stops at three quarters of the plan of 20.
  EXPECT_EQ(Searched(sink), 15u);
  // Resumed: replayed to the same stop, nothing measured again.
  PlaneEvaluator again;
  auto resumed = RunPlane(PlaneRequest(), sink, again);
  ASSERT_TRUE(resumed);
  EXPECT_TRUE(again.measured.empty());
  EXPECT_EQ(Searched(sink), 15u);
  EXPECT_EQ((*resumed)[0].config, (*winners)[0].config);
}

TEST(SearchBudget, AThinPriorGetsAtLeastThePlanAndAtMostTwice) {
  MemorySink sink;  // no prior: transfer searches like surrogate
  PlaneEvaluator eval;
  auto winners = RunPlane(PlaneRequest(), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  EXPECT_GE(Searched(sink), 20u);
  EXPECT_LE(Searched(sink), 40u);
  EXPECT_EQ(sink.last_done, static_cast<int64_t>(Searched(sink)));
  EXPECT_GE(sink.last_total, sink.last_done);  // the progress total grew with the search
}

TEST(SearchBudget, ANoisySearchMeasurementIsTimedAgainBeforeItSteers) {
  MemorySink sink;
  sink.prior = FullPrior();
  PlaneEvaluator eval;
  const Config lucky = NamedInts({{"x", 10}, {"y", 5}});
  eval.lucky.insert(lucky.ToString());
  auto winners = RunPlane(PlaneRequest(), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  EXPECT_EQ(eval.retimed[lucky.ToString()], 1);
  const Measurement* stored = nullptr;
  for (const Measurement& m : sink.stored) {
    if (m.config == lucky) stored = &m;
  }
  ASSERT_NE(stored, nullptr);
  // The second look is the quieter one: 1.00 ms, not the lucky 0.80 ms.
  EXPECT_DOUBLE_EQ(stored->median_ns, PlaneCost(lucky));
  EXPECT_NE(stored->detail.find("re-timed: cv 0.090"), std::string::npos) << stored->detail;
  EXPECT_NE(stored->detail.find("kept the second"), std::string::npos) << stored->detail;
  // Quiet measurements are not timed again.
  EXPECT_EQ(eval.retimed.count(PlaneSpec().DefaultConfig().ToString()), 0u);
}

TEST(SearchBudget, ASecondLookFromAnotherDeviceIsCarriedForTheSinkToRefuse) {
  // A runner that exits between the first look and the second is started again, and may
  // announce another device: neither look may then be stored under the first one's key
  // (store/task_sink.cc refuses a measurement whose device_key is not its sweep's).
  MemorySink sink;
  sink.prior = FullPrior();
  PlaneEvaluator eval;
  eval.device_key = "gpu.nvidia.sm90.h200";
  eval.retime_device_key = "gpu.nvidia.sm80.a100";
  const Config lucky = NamedInts({{"x", 10}, {"y", 5}});
  eval.lucky.insert(lucky.ToString());
  ASSERT_TRUE(RunPlane(PlaneRequest(), sink, eval));
  ASSERT_EQ(eval.retimed[lucky.ToString()], 1);
  for (const Measurement& m : sink.stored) {
    EXPECT_EQ(m.device_key, m.config == lucky ? "gpu.nvidia.sm80.a100" : "gpu.nvidia.sm90.h200") << m.config.ToString();
    if (m.config == lucky) {
      EXPECT_EQ(m.detail.find("re-timed"), std::string::npos) << m.detail;
    }
  }
}

TEST(SearchBudget, ANoisyMeasurementFarBehindTheBestIsNotTimedAgain) {
  // Every measurement spreads beyond retime_cv; only the ones whose fastest repetition comes
  // within 5% of the best so far could steer the decision round, and only they get a second look.
  MemorySink sink;  // no prior: the search explores, far from the best too
  PlaneEvaluator eval;
  eval.all_noisy = true;
  auto winners = RunPlane(PlaneRequest(), sink, eval);
  ASSERT_TRUE(winners) << winners.error().ToString();
  std::set<std::string> retimed;
  for (const auto& [config, n] : eval.retimed) retimed.insert(config);
  EXPECT_EQ(retimed, eval.contenders);
  EXPECT_FALSE(retimed.empty());
  EXPECT_LT(retimed.size(), eval.measured.size());
}

TEST(SearchBudget, EachSearchMeasurementMayStopBehindTheBestSoFar) {
  // Every config after the first is measured with a line at 1.15x the best median so far
  // (TimingOptions::stop_above_ns: two repetitions past it and the rest are not timed); an
  // exhaustive sweep, whose measurements are the whole landscape, and stop_behind 0 draw none.
  MemorySink sink;
  PlaneEvaluator eval;
  ASSERT_TRUE(RunPlane(PlaneRequest(), sink, eval));
  ASSERT_GT(eval.order.size(), 2u);
  EXPECT_EQ(eval.stop_lines[0], 0);
  double best = 0;
  for (size_t i = 0; i < eval.order.size(); ++i) {
    if (i > 0) {
      EXPECT_DOUBLE_EQ(eval.stop_lines[i], 1.15 * best) << eval.order[i];
    }
    const double ns = PlaneCost(*NamedInts::Parse(eval.order[i]));
    if (best == 0 || ns < best) best = ns;
  }
  SweepRequest exhaustive = PlaneRequest();
  exhaustive.strategy = Strategy::kExhaustive;
  MemorySink sink2;
  PlaneEvaluator eval2;
  ASSERT_TRUE(RunPlane(exhaustive, sink2, eval2));
  ASSERT_EQ(eval2.stop_lines.size(), 200u);
  for (double line : eval2.stop_lines) EXPECT_EQ(line, 0);
  SweepOptions off;
  off.stop_behind = 0;
  MemorySink sink3;
  PlaneEvaluator eval3;
  ASSERT_TRUE(RunPlane(PlaneRequest(), sink3, eval3, off));
  for (double line : eval3.stop_lines) EXPECT_EQ(line, 0);
}

}  // namespace
}  // namespace blocktune::tuner
