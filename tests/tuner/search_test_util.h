// The landscapes the search tests share: the grid kernel (an 8 x 6 x 4 bowl with holes) with an
// evaluator that answers from its cost function instead of running anything, bowls and priors
// over it, and a GPU-like space of 1,024 configs with two basins and a failing region. Used by
// the strategy tests (search_test, auto_test, transfer_test, simulate_test) and the tests of
// RunSweep driving them (sweep_search_test, decision_test).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tests/tuner/memory_sink.h"
#include "tuner/evaluator.h"
#include "tuner/search/search.h"
#include "tuner/sweep.h"

// GCC 12 bug 105329 (see cmake/warnings.cmake): `"p" + std::to_string(d)` in these inline
// helpers trips -Wrestrict wherever GCC inlines them, so the warning is off for this header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace blocktune::tuner::search {

inline constexpr Strategy kAllStrategies[] = {Strategy::kExhaustive, Strategy::kRandom,   Strategy::kAnneal,
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
inline double GridCost(const Config& c) {
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
    // Spread so that the robust CV is 1.4826 x cv (MAD = cv x median). Every config's spread
    // goes the same way cycle by cycle (a drift of the machine, which a paired verdict sees
    // through), except for the configs in `against_the_drift`, whose spread goes the other way
    // (their own noise).
    m.samples_ns = {m.median_ns * (1 - cv), m.median_ns, m.median_ns * (1 + cv)};
    if (against_the_drift.count(c.ToString())) std::reverse(m.samples_ns.begin(), m.samples_ns.end());
    m.cv = cv;
  }

  std::map<std::string, int> measured;
  std::map<std::string, double> override_ns;
  std::set<std::string> against_the_drift;
  double cv = 0.001;
  int interleaved_rounds = 0;
};

inline SweepRequest GridRequest(Strategy strategy, int64_t budget) {
  SweepRequest r;
  r.kernel = "grid";
  r.shapes = {NamedInts({{"n", 1000}}), NamedInts({{"n", 100}})};
  r.strategy = strategy;
  r.budget = budget;
  r.seed = 7;
  return r;
}

// RunSweep of the grid kernel as sweep 1, answered by `eval`.
inline Result<std::vector<TunedEntry>> RunGridSweep(const SweepRequest& request, blocktune::testing::MemorySink& sink,
                                                    OracleEvaluator& eval) {
  SweepOptions options;
  options.evaluator = &eval;
  const GridSpec spec;
  return RunSweep(request, 1, spec, HardwareProfile::Detect(1), sink, options);
}

inline SearchSpace GridSpace(const GridSpec& spec) {
  std::vector<Config> valid;
  for (const Config& c : spec.ConfigSpace()) {
    if (spec.ValidateConfig(c, {}, HardwareProfile{})) valid.push_back(c);
  }
  return SearchSpace(spec.params(), valid);
}

// A GPU-like space for the strategies' invariants: 5 parameters of 4 values (1,024 configs, so
// auto runs its iterated local search), two basins (the default's at coords (1,1,1,1,1) and a
// 30% faster one at (3,2,0,3,2)), and a failing region (p0 at its top value with p1 >= 2, an
// eighth of the space) that, as a compile failure would, returns no time.
inline SearchSpace WideSpace() {
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

inline bool WideFails(const SearchSpace& space, size_t i) { return space.coords(i)[0] == 3 && space.coords(i)[1] >= 2; }

inline Observation WideAnswer(const SearchSpace& space, size_t i) {
  if (WideFails(space, i)) return Observation{false, 0};
  const auto basin = [&](const std::vector<int>& at, double depth) {
    double d2 = 0;
    for (size_t d = 0; d < 5; ++d) d2 += std::pow(space.coords(i)[d] - at[d], 2);
    return depth * std::exp(-d2 / 3.0);
  };
  const double speed = 1 + basin({1, 1, 1, 1, 1}, 1.0) + basin({3, 2, 0, 3, 2}, 1.6);
  return Observation{true, 1e6 / speed};
}

inline size_t WideDefault(const SearchSpace& space) { return *space.Find(std::vector<int>{1, 1, 1, 1, 1}); }

// Over 20 seeds at 100 evaluations: how many asks fell in the failing region (an eighth of the
// space, ~12 for random search), and the mean best/optimum.
struct WideRun {
  double failed = 0;
  double ratio = 0;
};
inline WideRun RunWide(Strategy s, int64_t budget) {
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

// A bowl like GridCost with its minimum at x = best_x (y = 4, z = 64 as there).
inline double BowlCost(const Config& c, double best_x) {
  const double x = std::log2(static_cast<double>(*c.Get("x")));
  const double y = std::log2(static_cast<double>(*c.Get("y")));
  const double z = std::log2(static_cast<double>(*c.Get("z")));
  return 1e6 * (1 + 0.3 * std::pow(x - std::log2(best_x), 2) + 0.2 * std::pow(y - 2, 2) + 0.1 * std::pow(z - 6, 2));
}

inline PriorBucket BowlPrior(const SearchSpace& space, int64_t n, double best_x) {
  std::vector<std::pair<Config, double>> medians;
  for (const Config& c : space.configs()) medians.emplace_back(c, BowlCost(c, best_x));
  return MakePriorBucket({std::log2(1.0 + static_cast<double>(n))}, medians);
}

// Earlier sweeps' measurements of the grid at n = 512 and 2048 (neighbours of GridRequest's
// buckets n = 1024 and 128), a bowl with its minimum at x = best_x.
inline std::vector<Measurement> GridPrior(const SearchSpace& space, double best_x) {
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

}  // namespace blocktune::tuner::search

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
