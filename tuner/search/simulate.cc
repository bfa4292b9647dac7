// Strategy replay against stored measurements; see simulate.h.
#include "tuner/search/simulate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "tuner/search/search.h"

namespace blocktune::tuner::search {
namespace {

struct Oracle {
  SearchSpace space;
  std::vector<Observation> answers;  // by space index
  std::optional<size_t> start;
  double optimum_ns = 0;
  size_t optimum = 0;
};

Result<Oracle> MakeOracle(const StoredBucket& b) {
  const KernelSpec* spec = FindKernel(b.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + b.kernel + "'", "kernel");
  std::vector<Config> configs;
  std::vector<Observation> answers;
  std::map<std::string, bool> seen;
  for (const StoredConfig& c : b.configs) {
    if (!InSpace(c) || seen[c.config.ToString()]) continue;
    seen[c.config.ToString()] = true;
    configs.push_back(c.config);
    answers.push_back(Observation{c.outcome == Outcome::kOk && c.median_ns > 0, c.median_ns});
  }
  Oracle o{SearchSpace(spec->params(), std::move(configs)), std::move(answers), std::nullopt, 0, 0};
  o.start = o.space.Find(spec->DefaultConfig());
  bool any = false;
  for (size_t i = 0; i < o.answers.size(); ++i) {
    if (!o.answers[i].ok) continue;
    if (!any || o.answers[i].median_ns < o.optimum_ns) {
      o.optimum_ns = o.answers[i].median_ns;
      o.optimum = i;
      any = true;
    }
  }
  if (!any) return InvalidArgument("bucket " + b.bucket + " of " + b.kernel + " has no passing config", "bucket");
  return o;
}

// One run: best-so-far ratio after each evaluation (budget entries; padded with the last
// value if the strategy stops early).
// `asked`, when given, receives the configs measured, in order.
std::vector<double> Replay(const Oracle& o, Strategy strategy, uint64_t seed, int64_t budget, const SearchPrior& prior,
                           std::vector<size_t>* asked = nullptr) {
  auto search = MakeSearch(strategy, o.space, o.start, seed, budget, prior);
  std::vector<double> curve;
  double best = 0;
  for (int64_t e = 0; e < budget; ++e) {
    auto next = search->Ask();
    if (!next) break;
    if (asked != nullptr) asked->push_back(*next);
    const Observation& obs = o.answers[*next];
    search->Tell(*next, obs);
    if (obs.ok && (best == 0 || obs.median_ns < best)) best = obs.median_ns;
    curve.push_back(best > 0 ? o.optimum_ns / best : 0.0);
  }
  while (static_cast<int64_t>(curve.size()) < budget) curve.push_back(curve.empty() ? 0.0 : curve.back());
  return curve;
}

// The slowest passing median (what a run that found nothing passing is scored at), and R(e).
double WorstNs(const Oracle& o) {
  double worst = o.optimum_ns;
  for (const Observation& a : o.answers) {
    if (a.ok) worst = std::max(worst, a.median_ns);
  }
  return worst;
}

std::vector<double> RandomExpectation(const Oracle& o, int64_t budget) {
  std::vector<double> medians;
  for (const Observation& a : o.answers) medians.push_back(a.ok ? a.median_ns : 0.0);
  return ExpectedRandomBest(std::move(medians), budget);
}

// Mean, worst, hit rate and methodology score over one curve per seed; `expected` is R(e).
StrategyScore Aggregate(const std::vector<std::vector<double>>& curves, int64_t budget, const SimulateOptions& opt,
                        const Oracle& o, const std::vector<double>& expected) {
  StrategyScore s;
  s.curve.assign(static_cast<size_t>(budget), 0.0);
  s.min_ratio = 1.0;
  int hits = 0;
  const double worst = WorstNs(o);
  std::vector<double> mean_ns(static_cast<size_t>(budget), 0.0);
  const auto ns_of = [&](double ratio) { return ratio > 0 ? o.optimum_ns / ratio : worst; };
  for (const auto& curve : curves) {
    for (size_t e = 0; e < curve.size(); ++e) {
      s.curve[e] += curve[e] / opt.seeds;
      mean_ns[e] += ns_of(curve[e]) / opt.seeds;
    }
    const double final_ratio = curve.empty() ? 0.0 : curve.back();
    s.mean_ratio += final_ratio / opt.seeds;
    s.min_ratio = std::min(s.min_ratio, final_ratio);
    s.best_ns.push_back(ns_of(final_ratio));
    hits += final_ratio >= opt.threshold ? 1 : 0;
  }
  s.hit_fraction = static_cast<double>(hits) / opt.seeds;
  // Where random search is already at the optimum on average there is nothing to beat: scored
  // 1 if the strategy is there too, else by how far it is behind (negative).
  const auto score_at = [&](size_t e) {
    const double r = expected[e];
    const double span = r - o.optimum_ns;
    if (span <= 1e-12 * r) return mean_ns[e] <= o.optimum_ns * (1 + 1e-12) ? 1.0 : (r - mean_ns[e]) / r;
    return (r - mean_ns[e]) / span;
  };
  for (size_t e = 0; e < mean_ns.size(); ++e) s.score += score_at(e) / static_cast<double>(mean_ns.size());
  if (!mean_ns.empty()) s.score_at_budget = score_at(mean_ns.size() - 1);
  return s;
}

StrategyScore Score(const Oracle& o, Strategy strategy, const SimulateOptions& opt, int64_t budget,
                    const std::vector<double>& expected, const SearchPrior& prior = {}) {
  std::vector<std::vector<double>> curves;
  for (int k = 0; k < opt.seeds; ++k) {
    // Same seed derivation as a sweep: the request seed mixed with nothing bucket-specific,
    // so seed k means the same thing for every bucket.
    curves.push_back(Replay(o, strategy, opt.first_seed + static_cast<uint64_t>(k), budget, prior));
  }
  return Aggregate(curves, budget, opt, o, expected);
}

}  // namespace

std::vector<double> ExpectedRandomBest(std::vector<double> medians, int64_t budget) {
  const auto n = static_cast<int64_t>(medians.size());
  std::vector<double> out;
  if (n == 0) return out;
  double worst = 0;
  for (double m : medians) worst = std::max(worst, m);
  for (double& m : medians) {
    if (!(m > 0)) m = worst;
  }
  std::sort(medians.begin(), medians.end());
  // P(the best of k draws is the j-th fastest, j from 0) = C(n - 1 - j, k - 1) / C(n, k).
  const auto log_choose = [](int64_t a, int64_t b) {
    return std::lgamma(static_cast<double>(a) + 1) - std::lgamma(static_cast<double>(b) + 1) -
           std::lgamma(static_cast<double>(a - b) + 1);
  };
  for (int64_t k = 1; k <= budget; ++k) {
    const int64_t kk = std::min(k, n);
    const double total = log_choose(n, kk);
    double e = 0;
    for (int64_t j = 0; n - 1 - j >= kk - 1; ++j) {
      const double lp = log_choose(n - 1 - j, kk - 1) - total;
      if (lp < -745) break;  // exp underflows to 0, and the terms only shrink with j
      e += std::exp(lp) * medians[static_cast<size_t>(j)];
    }
    out.push_back(e);
  }
  return out;
}

Result<SimulateReport> Simulate(const std::vector<StoredBucket>& buckets, const SimulateOptions& options) {
  if (options.budget_fraction <= 0 || options.budget_fraction > 1) {
    return InvalidArgument("budget fraction must be in (0, 1]", "budget_fraction");
  }
  if (options.seeds < 1) return InvalidArgument("seeds must be >= 1", "seeds");
  if (options.budget < 0) return InvalidArgument("budget must be >= 0 evaluations", "budget");
  const bool transfer = options.strategy == Strategy::kTransfer || options.strategy == Strategy::kAuto;
  std::vector<Oracle> oracles;
  std::vector<int64_t> budgets;
  std::vector<std::vector<double>> features(buckets.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    const StoredBucket& b = buckets[i];
    auto oracle = MakeOracle(b);
    if (!oracle) return std::unexpected(oracle.error());
    // Rounded up: 10% of a 48-config space is 5 evaluations, not 4.
    budgets.push_back(
        options.budget > 0
            ? std::min<int64_t>(options.budget, static_cast<int64_t>(oracle->space.size()))
            : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(
                                       options.budget_fraction * static_cast<double>(oracle->space.size()) - 1e-9))));
    oracles.push_back(std::move(*oracle));
    if (transfer) {
      const KernelSpec& spec = *FindKernel(b.kernel);  // MakeOracle checked it exists
      auto problem = spec.ProblemFromBucket(b.dtype, b.bucket);
      if (!problem) {
        return InvalidArgument("bucket id " + b.bucket + " of " + b.kernel + ": " + problem.error().message, "bucket");
      }
      features[i] = PriorFeatures(spec, *problem);
    }
  }
  // Buckets j whose landscapes may be bucket i's prior: same kernel, hardware and dtype.
  const auto same_key = [&](size_t i, size_t j) {
    return j != i && buckets[j].kernel == buckets[i].kernel && buckets[j].hardware_key == buckets[i].hardware_key &&
           buckets[j].dtype == buckets[i].dtype && buckets[j].bucket != buckets[i].bucket;
  };
  // A prior bucket from bucket j's stored answers at the given space indices (all when null).
  const auto prior_of = [&](size_t j, const std::vector<size_t>* only) {
    std::vector<std::pair<Config, double>> medians;
    const Oracle& o = oracles[j];
    const auto add = [&](size_t k) {
      if (o.answers[k].ok) medians.emplace_back(o.space.config(k), o.answers[k].median_ns);
    };
    if (only != nullptr) {
      for (size_t k : *only) add(k);
    } else {
      for (size_t k = 0; k < o.space.size(); ++k) add(k);
    }
    PriorBucket pb = MakePriorBucket(features[j], medians);
    pb.name = buckets[j].bucket;
    return pb;
  };

  // Landscapes given as --prior: one prior bucket each, for the buckets of the same kernel and
  // dtype. Their features come from their own bucket ids (an id the kernel cannot parse gives
  // no features: likeness then rests on the rankings alone).
  std::vector<std::pair<const StoredBucket*, PriorBucket>> external;
  for (const StoredBucket& pb : options.prior) {
    std::vector<std::pair<Config, double>> medians;
    for (const StoredConfig& c : pb.configs) {
      if (c.outcome == Outcome::kOk && c.median_ns > 0) medians.emplace_back(c.config, c.median_ns);
    }
    std::vector<double> f;
    if (const KernelSpec* spec = FindKernel(pb.kernel); spec != nullptr) {
      if (auto problem = spec->ProblemFromBucket(pb.dtype, pb.bucket)) f = PriorFeatures(*spec, *problem);
    }
    PriorBucket b = MakePriorBucket(std::move(f), medians);
    b.name = pb.hardware_key + "/" + pb.bucket;
    if (!b.relative_cost.empty()) external.emplace_back(&pb, std::move(b));
  }
  const auto add_external = [&](size_t i, SearchPrior& prior) {
    for (const auto& [pb, b] : external) {
      if (pb->kernel != buckets[i].kernel || pb->dtype != buckets[i].dtype) continue;
      // The same landscape given both as data and as prior would predict itself.
      if (pb->hardware_key == buckets[i].hardware_key && pb->bucket == buckets[i].bucket) continue;
      PriorBucket copy = b;
      if (copy.features.size() != features[i].size()) copy.features = features[i];
      prior.buckets.push_back(std::move(copy));
    }
  };

  // curves[i][k]: bucket i, seed k.
  std::vector<std::vector<std::vector<double>>> curves(buckets.size());
  if (transfer && options.sequential_prior) {
    for (int k = 0; k < options.seeds; ++k) {
      std::vector<PriorBucket> measured(buckets.size());  // what this replay measured, per bucket
      for (size_t i = 0; i < buckets.size(); ++i) {
        SearchPrior prior{features[i], {}};
        for (size_t j = 0; j < i; ++j) {
          if (same_key(i, j) && !measured[j].relative_cost.empty()) prior.buckets.push_back(measured[j]);
        }
        add_external(i, prior);
        std::vector<size_t> asked;
        curves[i].push_back(Replay(oracles[i], options.strategy, options.first_seed + static_cast<uint64_t>(k),
                                   budgets[i], prior, &asked));
        measured[i] = prior_of(i, &asked);
      }
    }
  } else {
    // Transfer's prior for bucket i: every other bucket of the same key, fully measured
    // (leave-one-out, so a bucket never predicts itself).
    std::vector<PriorBucket> full(buckets.size());
    if (transfer) {
      for (size_t j = 0; j < buckets.size(); ++j) full[j] = prior_of(j, nullptr);
    }
    for (size_t i = 0; i < buckets.size(); ++i) {
      SearchPrior prior{features[i], {}};
      for (size_t j = 0; transfer && j < buckets.size(); ++j) {
        if (same_key(i, j) && !full[j].relative_cost.empty()) prior.buckets.push_back(full[j]);
      }
      if (transfer) add_external(i, prior);
      for (int k = 0; k < options.seeds; ++k) {
        curves[i].push_back(
            Replay(oracles[i], options.strategy, options.first_seed + static_cast<uint64_t>(k), budgets[i], prior));
      }
    }
  }

  SimulateReport r;
  r.options = options;
  double strategy_runs = 0;
  double random_runs = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const StoredBucket& b = buckets[i];
    const Oracle& o = oracles[i];
    BucketSimulation s;
    s.kernel = b.kernel;
    s.hardware_key = b.hardware_key;
    s.dtype = b.dtype;
    s.bucket = b.bucket;
    s.space_size = static_cast<int64_t>(o.space.size());
    s.budget = budgets[i];
    s.optimum_ns = o.optimum_ns;
    s.optimum = o.space.config(o.optimum);
    const std::vector<double> expected = RandomExpectation(o, s.budget);
    s.random_expected_ns = expected.back();
    s.strategy = Aggregate(curves[i], s.budget, options, o, expected);
    s.random = Score(o, Strategy::kRandom, options, s.budget, expected);
    r.strategy_score += s.strategy.score;
    r.random_score += s.random.score;
    r.strategy_bucket_fraction += s.strategy.mean_ratio >= options.threshold ? 1 : 0;
    r.random_bucket_fraction += s.random.mean_ratio >= options.threshold ? 1 : 0;
    r.strategy_mean_ratio += s.strategy.mean_ratio;
    r.random_mean_ratio += s.random.mean_ratio;
    strategy_runs += s.strategy.hit_fraction;
    random_runs += s.random.hit_fraction;
    r.buckets.push_back(std::move(s));
  }
  if (!r.buckets.empty()) {
    const auto n = static_cast<double>(r.buckets.size());
    r.strategy_bucket_fraction /= n;
    r.random_bucket_fraction /= n;
    r.strategy_mean_ratio /= n;
    r.random_mean_ratio /= n;
    r.strategy_score /= n;
    r.random_score /= n;
    r.strategy_run_fraction = strategy_runs / n;
    r.random_run_fraction = random_runs / n;
  }
  return r;
}

}  // namespace blocktune::tuner::search
