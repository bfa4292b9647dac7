// The `auto` strategy's own search on large spaces: a uniform random sample, then constraint-
// aware Bayesian optimisation (a Gaussian process for the times, a feasibility model for the
// failures) for up to 60% of the budget (80% below 100), then (at budgets of 100 and more) a genetic local
// search: children of the best configs found (uniform crossover and mutation) interleaved with
// steps to the best config's unmeasured neighbours, taking turns with episodes of an iterated
// local search over the neighbourhood graph (restarts by kicks, crossover of good configs and
// fresh random points) whenever the best stalls, and used alone below 100; given a prior from other
// landscapes of the kernel, the prior's best-ranked configs first. See auto.h and
// docs/search.md.
//
// Why this shape (docs/search.md has the measurements): on the brute-forced GPU landscapes the
// good configs sit in several separated basins, so a search that starts at the default and only
// descends (the old anneal) stalls in the default's basin, and a global quadratic model (the old
// surrogate) spends its first evaluations on a design around the default that random sampling
// beats. Kernel Tuner's benchmarks (Schoonhoven et al., IEEE TEC 2022) rank genetic algorithms
// and iterated local search highest at the larger budgets; at 25-100 evaluations a model of the
// whole space finds the few fast regions sooner than any walk (Willemsen et al., "Bayesian
// optimization for auto-tuning GPU kernels", PMBS 2021). After the model, recombining the best
// configs moves between basins that share good values of some parameters (the convolution
// optimum combines block_size_y = 1, tile_size_y = 4 and no shared memory, each found in a
// different basin), which a walk of one-parameter steps cannot.
#include "tuner/search/auto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace blocktune::tuner::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

class LocalSearch final : public SearchStrategy {
 public:
  LocalSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget,
              const SearchPrior& prior)
      : space_(space),
        start_(start),
        rng_(seed),
        budget_(std::max<int64_t>(budget, 1)),
        asked_(space.size(), false),
        cost_(space.size(), std::numeric_limits<double>::quiet_NaN()) {
    const size_t dims = space.dims();
    scaled_.resize(space.size() * dims);
    for (size_t i = 0; i < space.size(); ++i) {
      for (size_t d = 0; d < dims; ++d) scaled_[i * dims + d] = space.Scaled(i, d);
    }
    level_scaled_.resize(dims);
    for (size_t d = 0; d < dims; ++d) {
      level_scaled_[d].assign(space.levels(d), 0.0);
      active_dims_ += space.levels(d) > 1 ? 1 : 0;
    }
    for (size_t i = 0; i < space.size(); ++i) {
      for (size_t d = 0; d < dims; ++d) {
        level_scaled_[d][static_cast<size_t>(space.coords(i)[d])] = scaled_[i * dims + d];
      }
    }
    active_dims_ = std::max<size_t>(active_dims_, 1);
    level_sum_.resize(dims);
    level_count_.resize(dims);
    for (size_t d = 0; d < dims; ++d) {
      level_sum_[d].assign(space.levels(d), 0.0);
      level_count_[d].assign(space.levels(d), 0);
    }
    // A tenth of the budget (3 to 24 configs) is a uniform random sample before any local
    // step: what random search would measure, so the best of it is random search's best at
    // that budget, and the local search then starts from the best of several basins (the
    // default's among them) instead of the default's alone. At 25 evaluations that is 3 random
    // configs and 21 local steps. Below 100 evaluations 3 (see small_ below).
    small_ = budget_ < kGeneticMinBudget;
    init_left_ = small_ ? 3 : std::clamp<int64_t>(budget_ / 10, 3, 24);
    // Restart when the best has not improved for a quarter of the budget (at least 24
    // evaluations: about two neighbourhoods of a 7-parameter space), even inside a basin whose
    // neighbourhood is not yet exhausted.
    stall_limit_ = std::max<int64_t>(24, budget_ / 4);
    // The Gaussian-process phase (ModelAsk) runs up to 60% of the budget, at most 100
    // evaluations; the rest is the local search from its best. On the twelve GPU landscapes (30
    // seeds, budgets 25-200, mean of (auto - E[random]) / (optimum - E[random]) over the
    // landscapes) the model for the whole budget scored 0.573, for 45% of it 0.585, for 60% 0.598,
    // and the local search alone 0.510; the model alone falls behind at 100 evaluations on
    // convolution (0.398 vs 0.474), where walking a basin's neighbours pays. Beyond 100 points its
    // O(n^3) fits per ask cost more than the walk gains. Below 100 evaluations the model runs
    // for 80% of the budget (see small_ below).
    model_until_ =
        std::min<int64_t>(kModelMax, static_cast<int64_t>((small_ ? 0.8 : 0.6) * static_cast<double>(budget_)));
    inv_ls2_.assign(space.dims(), 1.0 / (0.2 * 0.2 * static_cast<double>(std::max<size_t>(space.dims(), 1))));
    SetPrior(prior);
  }

  std::optional<size_t> Ask() override {
    std::optional<size_t> next;
    if (asked_count_ == 0 && start_) {
      next = start_;
    } else if (prior_active_) {
      next = PriorAsk();
    } else {
      next = LocalAsk();
    }
    if (!next) next = RandomFeasible();
    if (next) {
      asked_[*next] = true;
      ++asked_count_;
    }
    return next;
  }

  void Tell(size_t index, const Observation& observation) override {
    const double c = observation.ok && observation.median_ns > 0 ? std::log(observation.median_ns) : kInf;
    cost_[index] = c;
    told_.push_back(index);
    if (!std::isfinite(c)) {
      ++failed_;
      if (restart_pending_) restart_pending_ = false;  // the local search goes on from where it was
      momentum_.reset();
      return;
    }
    if (prior_active_) NoteMisranks(index);
    ok_.push_back(index);
    total_ += c;
    for (size_t d = 0; d < space_.dims(); ++d) {
      const auto k = static_cast<size_t>(space_.coords(index)[d]);
      level_sum_[d][k] += c;
      ++level_count_[d][k];
    }
    if (!best_ || c < cost_[*best_]) {
      best_ = index;
      last_improvement_ = asked_count_;
    }
    if (restart_pending_) {
      restart_pending_ = false;
      current_ = index;
      momentum_.reset();
      return;
    }
    if (current_ && c < cost_[*current_]) {
      momentum_.reset();
      for (size_t d = 0; d < space_.dims(); ++d) {
        const int diff = space_.coords(index)[d] - space_.coords(*current_)[d];
        if (diff != 0) momentum_ = Direction{d, diff > 0 ? 1 : -1};
      }
      current_ = index;
    } else {
      momentum_.reset();
    }
  }

  std::string Explain() const override {
    std::string out = prior_active_ ? "auto: prior of " + std::to_string(relative_.size()) +
                                          (relative_.size() == 1 ? " landscape" : " landscapes") + " ranked first, "
                                    : "auto: model phase then genetic local search, ";
    if (late_asks_ > 0) out += std::to_string(late_asks_) + " later model asks, ";
    if (!small_) out += std::to_string(additive_asks_) + " model asks with an additive kernel, ";
    out += std::to_string(children_) + " children of the best configs, " + std::to_string(repaired_) +
           " of them repaired into the space, " + std::to_string(walks_) + " walk episodes, " +
           std::to_string(restarts_) + " restarts, " + std::to_string(failed_) + " failed of " +
           std::to_string(told_.size()) + " measured, " + std::to_string(skipped_) +
           " candidates skipped as likely to fail";
    return out;
  }

 private:
  struct Direction {
    size_t dim;
    int dir;
  };

  double Uniform() { return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53; }
  double Scaled(size_t i, size_t d) const { return scaled_[i * space_.dims() + d]; }

  // The k fastest passing configs measured so far, fastest first (ties by index).
  std::vector<size_t> BestPassing(size_t k) const {
    std::vector<size_t> out = ok_;
    const size_t keep = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(),
                      [&](size_t a, size_t b) { return cost_[a] != cost_[b] ? cost_[a] < cost_[b] : a < b; });
    out.resize(keep);
    return out;
  }
  // Uniform crossover: each parameter from `a` or `b` with even odds.
  std::vector<int> Crossover(size_t a, size_t b) {
    std::vector<int> coords = space_.coords(a);
    for (size_t d = 0; d < space_.dims(); ++d) {
      if (rng_.Below(2) == 0) coords[d] = space_.coords(b)[d];
    }
    return coords;
  }

  // ---- feasibility model --------------------------------------------------------------
  // P(config i fails): a kernel-weighted vote of the measured configs near it (Gaussian in the
  // scaled coordinates, mean squared difference per parameter, variance 0.02: a one-level move
  // of a 4-level parameter among 7 weighs 0.67, a random far config under 0.011 and is left
  // out), shrunk towards the failure rate seen so far with the weight of one config. Two failing
  // neighbours and no passing one put a config at ~0.6. Variance 0.01 (the first version) let
  // the local search that follows the model phase step into a failing region bordering the best
  // basin once per missing vote: 6.8 failures in 100 evaluations on the test space against
  // random search's 11.3, 0.02 measured 6.5 there and scored 0.601 against 0.591 on the GPU
  // landscapes (30 seeds, budgets 25-200, docs/search.md).
  static constexpr double kFailVariance = 0.02;
  double FailProbability(size_t i) const {
    if (failed_ == 0) return 0;
    const double base = (static_cast<double>(failed_) + 0.5) / (static_cast<double>(told_.size()) + 1.0);
    double num = base;
    double den = 1.0;
    const size_t dims = space_.dims();
    for (size_t m : told_) {
      double d2 = 0;
      for (size_t d = 0; d < dims; ++d) {
        const double diff = Scaled(i, d) - Scaled(m, d);
        d2 += diff * diff;
      }
      d2 /= static_cast<double>(std::max<size_t>(dims, 1));
      if (d2 > 9 * kFailVariance) continue;  // weight < exp(-4.5) = 0.011
      const double w = std::exp(-d2 / (2 * kFailVariance));
      den += w;
      if (!std::isfinite(cost_[m])) num += w;
    }
    return num / den;
  }
  double BaseFailRate() const {
    return (static_cast<double>(failed_) + 0.5) / (static_cast<double>(told_.size()) + 1.0);
  }
  // Worth measuring: below even odds of failing, or no likelier to fail than a random config
  // (when most of the space fails, e.g. an import without its restrictions, the search still
  // has to measure something: it picks the least suspicious).
  bool LooksFeasible(size_t i) {
    const double p = FailProbability(i);
    const bool ok = p < 0.5 || p <= BaseFailRate();
    if (!ok) ++skipped_;
    return ok;
  }

  // A uniformly random unasked config; of up to 16 draws the first that looks feasible, else
  // the least likely to fail.
  std::optional<size_t> RandomFeasible() {
    const size_t left = space_.size() - asked_count_;
    if (left == 0) return std::nullopt;
    std::optional<size_t> fallback;
    double fallback_p = kInf;
    for (int k = 0; k < 16; ++k) {
      const size_t i = RandomUnasked(left);
      if (failed_ == 0) return i;
      const double p = FailProbability(i);
      if (p < 0.5 || p <= BaseFailRate()) return i;
      ++skipped_;
      if (p < fallback_p) {
        fallback_p = p;
        fallback = i;
      }
    }
    return fallback;
  }
  size_t RandomUnasked(size_t left) {
    // Rejection first (cheap while most of the space is unasked), then a scan.
    for (int k = 0; k < 32; ++k) {
      const size_t i = rng_.Below(space_.size());
      if (!asked_[i]) return i;
    }
    size_t k = rng_.Below(left);
    for (size_t i = 0; i < space_.size(); ++i) {
      if (!asked_[i] && k-- == 0) return i;
    }
    return 0;  // unreachable: left > 0 configs are unasked
  }

  // ---- additive model -----------------------------------------------------------------
  // log cost ~ mean + sum over parameters of the mean deviation at that parameter's value
  // (shrunk by 2 pseudo-observations at the mean): main effects only, cheap, and on the GPU
  // landscapes enough to order a neighbourhood best-first.
  double Predict(size_t i) const {
    if (ok_.empty()) return 0;
    const double mean = total_ / static_cast<double>(ok_.size());
    double p = mean;
    for (size_t d = 0; d < space_.dims(); ++d) {
      const auto k = static_cast<size_t>(space_.coords(i)[d]);
      const double n = level_count_[d][k];
      p += (level_sum_[d][k] - n * mean) / (n + 2.0);
    }
    return p;
  }

  // ---- Gaussian-process phase ------------------------------------------------------------
  // Constraint-aware Bayesian optimisation in the manner of BaCO (Hellsten et al., ASPLOS 2023):
  // a Gaussian process over the passing configs' log times, and the feasibility model above for
  // the failing ones; each ask measures the candidate with the highest expected improvement
  // times P(pass). The GP has a Matern 5/2 kernel over the scaled coordinates with one
  // lengthscale per parameter (ARD): on the convolution landscapes a few parameters (use_shmem,
  // the tile sizes) decide most of the time and a shared lengthscale smoothed them away (30
  // seeds, budgets 25-200: 0.510 score for one lengthscale fitted by likelihood, 0.573 with ARD,
  // both over the whole budget). Lengthscales and noise are fitted by marginal likelihood, one
  // round of coordinate search per ask warm-started from the last (each inverse squared
  // lengthscale x4, /4 or 0 = irrelevant; noise from {0.001, 0.03, 0.2} of the standardised
  // variance): at most 3 + 3 x parameters Cholesky factorisations of n <= 100 points per ask.
  // Candidates are every unmeasured config (up to kModelCandidates; beyond that the unmeasured
  // neighbours of the 4 best configs and kModelCandidates uniformly drawn ones; below 100
  // evaluations those neighbours and kSmallModelCandidates drawn ones). With 400 drawn
  // candidates a config that is good but has no good neighbour (dedispersion_W6600's optimum,
  // block 32 x 32, sits in a corner of the space its restriction leaves, beside configs at
  // 0.91) was offered to the model in 4% of asks, and `auto` ended at 0.995 of the optimum at
  // 200-800 evaluations against bayes_opt's 0.998 at 200 (docs/search.md).
  //
  // At budgets of 100 and more the kernel is a mixture (Duvenaud et al., "Additive Gaussian
  // processes", NeurIPS 2011): (1 - w) x the Matern over all parameters + w x the mean over the
  // parameters of a Matern over each one alone, w from {0, 0.3, 0.7} by marginal likelihood on
  // every ask (additive_share_). The additive part lets configs that share a parameter's value
  // inform each other however far apart they are in the others, so a value that is good across
  // many configs (a block shape common among the fast ones) is learnt from fewer points. On
  // convolution_A100 at 200 evaluations, where the genetic algorithm found the 32 x 4 block
  // first and `auto` found the tile and flags first and rarely measured that block, it took
  // `auto` from 0.920 to 0.934 (seeds 51-150; the genetic algorithm 0.938), convolution_MI250X
  // at 100 from 0.855 to 0.889, and the score over the 48 cells at 100-800 from 0.855 to 0.864
  // (50 seeds; docs/search.md, "This round (stop 34)"); it cost convolution_W6600 at 200,
  // 0.910 -> 0.891 (seeds 1-150). Below 100 evaluations it is off: 0.518 against 0.543 over the
  // 24 cells at 25 and 50, where 3-80 points fit it poorly. A parameter whose lengthscale is
  // fitted irrelevant adds a constant to the additive part, as a one-parameter kernel with an
  // infinite lengthscale does.
  static double Matern52(double r2) {
    const double r = std::sqrt(5.0 * r2);
    return (1.0 + r + r * r / 3.0) * std::exp(-r);
  }
  // Per parameter, the one-parameter Matern of every pair of its levels under the inverse
  // squared lengthscales `inv`, [la * levels + lb] (all zero for a parameter with one level).
  std::vector<std::vector<double>> AdditiveTables(const std::vector<double>& inv) const {
    std::vector<std::vector<double>> t(space_.dims());
    for (size_t d = 0; d < space_.dims(); ++d) {
      const size_t l = space_.levels(d);
      t[d].assign(l * l, 0.0);
      if (l < 2) continue;
      for (size_t a = 0; a < l; ++a) {
        for (size_t b = 0; b < l; ++b) {
          const double diff = level_scaled_[d][a] - level_scaled_[d][b];
          t[d][a * l + b] = Matern52(diff * diff * inv[d]);
        }
      }
    }
    return t;
  }
  // The kernel between configs a and b under the fitted lengthscales and additive share
  // (additive_tables_ holds AdditiveTables(inv_ls2_) when the share is above zero).
  double Kernel(size_t a, size_t b) const {
    const double full = Matern52(ScaledDist2(a, b));
    if (additive_share_ <= 0) return full;
    const std::vector<int>& ca = space_.coords(a);
    const std::vector<int>& cb = space_.coords(b);
    double add = 0;
    for (size_t d = 0; d < space_.dims(); ++d) {
      add += additive_tables_[d][static_cast<size_t>(ca[d]) * space_.levels(d) + static_cast<size_t>(cb[d])];
    }
    return (1 - additive_share_) * full + additive_share_ * add / static_cast<double>(active_dims_);
  }
  double ScaledDist2(size_t a, size_t b) const {
    double r2 = 0;
    for (size_t d = 0; d < space_.dims(); ++d) {
      const double diff = Scaled(a, d) - Scaled(b, d);
      r2 += diff * diff * inv_ls2_[d];
    }
    return r2;
  }
  // Lower-triangular Cholesky factor of the n x n row-major `a`, in place; false when `a` is not
  // positive definite.
  static bool Cholesky(std::vector<double>& a, size_t n) {
    for (size_t j = 0; j < n; ++j) {
      double s = a[j * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[j * n + k] * a[j * n + k];
      if (s <= 0) return false;
      const double l = std::sqrt(s);
      a[j * n + j] = l;
      for (size_t i = j + 1; i < n; ++i) {
        double t = a[i * n + j];
        for (size_t k = 0; k < j; ++k) t -= a[i * n + k] * a[j * n + k];
        a[i * n + j] = t / l;
      }
    }
    return true;
  }
  // b := L^-1 b and b := L^-T b for the factor L of Cholesky.
  static void SolveLower(const std::vector<double>& l, size_t n, std::vector<double>& b) {
    for (size_t i = 0; i < n; ++i) {
      double t = b[i];
      for (size_t k = 0; k < i; ++k) t -= l[i * n + k] * b[k];
      b[i] = t / l[i * n + i];
    }
  }
  static void SolveUpper(const std::vector<double>& l, size_t n, std::vector<double>& b) {
    for (size_t i = n; i-- > 0;) {
      double t = b[i];
      for (size_t k = i + 1; k < n; ++k) t -= l[k * n + i] * b[k];
      b[i] = t / l[i * n + i];
    }
  }

  struct GpFit {
    double log_likelihood = -kInf;
    std::vector<double> chol;   // Cholesky factor of K + noise I
    std::vector<double> alpha;  // (K + noise I)^-1 y
  };
  // The points of a fit: `dd` the squared scaled differences of every pair of points per
  // parameter, [(a * n + b) * dims + d], and `pair_levels` their levels' index into
  // AdditiveTables, la * levels + lb at the same place (filled only when the additive kernel
  // is in use).
  struct FitPoints {
    std::vector<double> dd;
    std::vector<uint32_t> pair_levels;
  };
  // The fit for inverse squared lengthscales `inv`, `noise` and additive share `share`.
  GpFit Fit(const FitPoints& p, const std::vector<double>& inv, double noise, double share,
            const std::vector<double>& y) const {
    const size_t n = y.size();
    const size_t dims = space_.dims();
    const std::vector<std::vector<double>> tables =
        share > 0 ? AdditiveTables(inv) : std::vector<std::vector<double>>();
    GpFit f;
    f.chol.assign(n * n, 0.0);
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < a; ++b) {
        const size_t at = (a * n + b) * dims;
        double r2 = 0;
        for (size_t d = 0; d < dims; ++d) r2 += p.dd[at + d] * inv[d];
        double k = Matern52(r2);
        if (share > 0) {
          double add = 0;
          for (size_t d = 0; d < dims; ++d) add += tables[d][p.pair_levels[at + d]];
          k = (1 - share) * k + share * add / static_cast<double>(active_dims_);
        }
        f.chol[a * n + b] = f.chol[b * n + a] = k;
      }
      f.chol[a * n + a] = 1.0 + noise;
    }
    if (!Cholesky(f.chol, n)) return f;
    f.alpha = y;
    SolveLower(f.chol, n, f.alpha);
    double ll = 0;
    for (size_t i = 0; i < n; ++i) ll -= 0.5 * f.alpha[i] * f.alpha[i] + std::log(f.chol[i * n + i]);
    SolveUpper(f.chol, n, f.alpha);
    f.log_likelihood = ll;
    return f;
  }

  // The Gaussian process again late in a long search (LocalAsk: every kLateModelEvery-th ask from
  // the kLateModelFrom-th evaluation on), over at most kModelMax of the measured points so
  // that an ask costs what a model-phase ask does: the kLateModelBest best passing configs and
  // the rest spread evenly over the others in the order they were measured (failures
  // included, so the fit still sees where the space fails). Every unmeasured config is a
  // candidate, as in the model phase.
  std::optional<size_t> LateModelAsk() {
    if (told_.size() <= static_cast<size_t>(kModelMax)) return ModelAsk(told_);
    std::vector<size_t> pts = BestPassing(kLateModelBest);
    std::vector<bool> in(space_.size(), false);
    for (size_t i : pts) in[i] = true;
    std::vector<size_t> rest;
    for (size_t i : told_) {
      if (!in[i]) rest.push_back(i);
    }
    const size_t want = static_cast<size_t>(kModelMax) - pts.size();
    for (size_t k = 0; k < want && k < rest.size(); ++k) pts.push_back(rest[k * rest.size() / want]);
    return ModelAsk(pts);
  }

  // An ask of the Gaussian process fitted to the measured configs `pts`.
  std::optional<size_t> ModelAsk(const std::vector<size_t>& pts) {
    // Failed configs enter the fit one standard deviation slower than the slowest passing time
    // (as the surrogate strategy fits them; Kernel Tuner's bayes_opt scores them as the worst):
    // without them the GP sees only the passing edge of a failing
    // region and extrapolates into it. On the test space whose failing eighth borders the best
    // basin (Search.AFailingRegionDrawsFewerEvaluationsThanRandomSearch) EI times P(pass) alone
    // measured 22 failures in 100 evaluations, random search 11.
    const size_t n = pts.size();
    const size_t dims = space_.dims();
    double worst = -kInf;
    double mean = 0;
    for (size_t i : ok_) {
      mean += cost_[i];
      worst = std::max(worst, cost_[i]);
    }
    mean /= static_cast<double>(ok_.size());
    double ok_var = 0;
    for (size_t i : ok_) ok_var += (cost_[i] - mean) * (cost_[i] - mean);
    const double fail_cost = worst + std::sqrt(ok_var / static_cast<double>(ok_.size()));
    std::vector<double> y(n);
    for (size_t k = 0; k < n; ++k) y[k] = std::isfinite(cost_[pts[k]]) ? cost_[pts[k]] : fail_cost;
    double var = 0;
    for (double v : y) var += (v - mean) * (v - mean);
    const double sd = std::sqrt(std::max(var / static_cast<double>(n), 1e-12));
    for (double& v : y) v = (v - mean) / sd;
    FitPoints fp;
    fp.dd.resize(n * n * dims);
    if (!small_) fp.pair_levels.resize(n * n * dims);
    for (size_t a = 0; a < n; ++a) {
      const std::vector<int>& ca = space_.coords(pts[a]);
      for (size_t b = 0; b < a; ++b) {
        const std::vector<int>& cb = space_.coords(pts[b]);
        for (size_t d = 0; d < dims; ++d) {
          const double diff = Scaled(pts[a], d) - Scaled(pts[b], d);
          fp.dd[(a * n + b) * dims + d] = fp.dd[(b * n + a) * dims + d] = diff * diff;
          if (!small_) {
            fp.pair_levels[(a * n + b) * dims + d] =
                static_cast<uint32_t>(static_cast<size_t>(ca[d]) * space_.levels(d) + static_cast<size_t>(cb[d]));
          }
        }
      }
    }
    GpFit best = Fit(fp, inv_ls2_, noise_, additive_share_, y);
    if (!small_) {
      const double was = additive_share_;
      for (double share : {0.0, 0.3, 0.7}) {
        if (share == was) continue;
        if (GpFit f = Fit(fp, inv_ls2_, noise_, share, y); f.log_likelihood > best.log_likelihood) {
          best = std::move(f);
          additive_share_ = share;
        }
      }
    }
    for (double noise : {1e-3, 0.03, 0.2}) {
      if (noise == noise_) continue;
      if (GpFit f = Fit(fp, inv_ls2_, noise, additive_share_, y); f.log_likelihood > best.log_likelihood) {
        best = std::move(f);
        noise_ = noise;
      }
    }
    for (size_t d = 0; d < dims; ++d) {
      const double now = inv_ls2_[d];
      for (double factor : {4.0, 0.25, 0.0}) {
        std::vector<double> inv = inv_ls2_;
        inv[d] = factor == 0.0 ? 0.0 : (now > 0 ? now * factor : 1.0);
        if (inv[d] > 1e4) continue;  // a lengthscale under 1% of the range: no config is that close
        if (GpFit f = Fit(fp, inv, noise_, additive_share_, y); f.log_likelihood > best.log_likelihood + 1e-9) {
          best = std::move(f);
          inv_ls2_ = std::move(inv);
        }
      }
    }
    if (!std::isfinite(best.log_likelihood)) return std::nullopt;  // the local search takes this ask
    if (additive_share_ > 0) {
      additive_tables_ = AdditiveTables(inv_ls2_);
      ++additive_asks_;
    }
    const double y_best = (cost_[*best_] - mean) / sd;
    std::optional<size_t> pick;
    double pick_score = -kInf;
    // Candidates that look feasible, scored in blocks of kBlock: the cross-covariances of a
    // block with the n points are laid out point-major (row k holds every candidate's covariance
    // with point k), so the forward substitution L v = k runs along the candidates, a loop the
    // compiler vectorises, instead of along a dot product it may not reorder. Likely failures
    // are skipped as the local search skips them (LooksFeasible), the rest weighted by P(pass).
    std::vector<size_t> cands;
    std::vector<double> pass;
    for (size_t c : ModelCandidates()) {
      const double p_fail = FailProbability(c);
      if (p_fail >= 0.5 && p_fail > BaseFailRate()) continue;
      cands.push_back(c);
      pass.push_back(1.0 - p_fail);
    }
    constexpr size_t kBlock = 64;
    std::vector<double> v(n * kBlock);
    std::vector<double> mu(kBlock);
    std::vector<double> s2(kBlock);
    for (size_t first = 0; first < cands.size(); first += kBlock) {
      const size_t m = std::min(kBlock, cands.size() - first);
      std::fill(mu.begin(), mu.end(), 0.0);
      std::fill(s2.begin(), s2.end(), 1.0);
      for (size_t k = 0; k < n; ++k) {
        double* row = &v[k * kBlock];
        for (size_t j = 0; j < m; ++j) {
          row[j] = Kernel(cands[first + j], pts[k]);
          mu[j] += row[j] * best.alpha[k];
        }
      }
      for (size_t i = 0; i < n; ++i) {
        double* row = &v[i * kBlock];
        for (size_t k = 0; k < i; ++k) {
          const double l = best.chol[i * n + k];
          const double* prev = &v[k * kBlock];
          for (size_t j = 0; j < m; ++j) row[j] -= l * prev[j];
        }
        const double inv = 1.0 / best.chol[i * n + i];
        for (size_t j = 0; j < m; ++j) {
          row[j] *= inv;
          s2[j] -= row[j] * row[j];
        }
      }
      for (size_t j = 0; j < m; ++j) {
        const double sd_j = std::sqrt(std::max(s2[j], 1e-12));
        const double z = (y_best - mu[j]) / sd_j;
        const double ei = sd_j * (z * 0.5 * std::erfc(-z / std::numbers::sqrt2) +
                                  std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi));
        const double score = ei * pass[first + j];
        if (score > pick_score) {
          pick_score = score;
          pick = cands[first + j];
        }
      }
    }
    return pick;
  }

  std::vector<size_t> ModelCandidates() {
    // The 4 best configs' unmeasured neighbours come first, so that they win ties. Equal scores
    // are common: configs that differ only in parameters whose fitted lengthscale is infinite
    // (irrelevant so far) have the same mean and variance, and the first maximum is picked. On
    // the six convolution landscapes at 100 and 200 evaluations (150 seeds, methodology score)
    // ties to the best's neighbours, then space order, scored 0.671; a uniform pick among the
    // tied 0.656, the tied config nearest the best 0.645, and space order alone lost
    // convolution_W7800 at 100 (0.918 against 0.941).
    std::vector<size_t> cand;
    for (size_t best : BestPassing(4)) {
      for (size_t nb : space_.Neighbours(best)) {
        if (!asked_[nb]) cand.push_back(nb);
      }
    }
    const size_t left = space_.size() - static_cast<size_t>(asked_count_);
    const size_t drawn = small_ ? kSmallModelCandidates : kModelCandidates;
    if (left <= drawn) {
      for (size_t i = 0; i < space_.size(); ++i) {
        if (!asked_[i]) cand.push_back(i);
      }
    } else {
      for (size_t k = 0; k < drawn; ++k) cand.push_back(RandomUnasked(left));
    }
    return cand;
  }

  // ---- local search -------------------------------------------------------------------
  std::optional<size_t> LocalAsk() {
    if (init_left_ > 0 && asked_count_ + 1 < budget_) {
      --init_left_;
      return RandomFeasible();
    }
    if (!prior_active_ && asked_count_ < model_until_ && ok_.size() >= 3) {
      if (auto m = ModelAsk(told_)) return m;
    }
    if (!prior_active_ && asked_count_ >= kLateModelFrom && ok_.size() >= 3 && ++late_turn_ % kLateModelEvery == 0) {
      if (auto m = LateModelAsk()) {
        ++late_asks_;
        return m;
      }
    }
    if (genetic_turn_ > 0 && asked_count_ - std::max(last_improvement_, genetic_start_) >= kGeneticStall &&
        (walking_ || budget_ - asked_count_ >= kGeneticStall)) {
      // The genetic phase and walk episodes take turns, each until the best has not improved
      // for kGeneticStall evaluations (counted from the genetic phase's start, not from the
      // model's last find); a walk episode starts from a fresh random config, and only with
      // kGeneticStall evaluations left to walk. The population is the best configs measured by
      // either, so what a walk finds is bred from.
      walking_ = !walking_;
      last_improvement_ = asked_count_;
      if (walking_) {
        ++walks_;
        return Restart(/*random=*/true);
      }
    }
    if (!walking_ && budget_ >= kGeneticMinBudget && best_ && ok_.size() >= 2) {
      // Two of every three asks a child of the best configs, the third the best config's
      // next unmeasured neighbour (a child of two near-equal parents rarely lands on it).
      if (genetic_turn_ == 0) genetic_start_ = asked_count_;
      if (++genetic_turn_ % kLocalEvery != 0) {
        if (auto c = GeneticAsk()) return c;
      } else if (auto n = NextNeighbour(*best_, /*by_prior=*/false)) {
        return n;
      }
    }
    if (!current_) current_ = best_;
    if (asked_count_ - last_improvement_ >= stall_limit_) {
      last_improvement_ = asked_count_;
      return Restart(/*random=*/true);
    }
    if (current_) {
      if (auto n = NextNeighbour(*current_, /*by_prior=*/false)) return n;
    }
    // A local optimum: go on from the best measured config (of the 16 best) that still has an
    // unmeasured neighbour, as anneal does (the best's other neighbours are the likeliest
    // improvements); kicks, crossover and random points only when that region is closed or the
    // stall rule fires.
    for (size_t best : BestPassing(16)) {
      if (auto n = NextNeighbour(best, /*by_prior=*/false)) {
        current_ = best;
        return n;
      }
    }
    return Restart(/*random=*/false);
  }

  // ---- genetic local search -------------------------------------------------------------
  // A steady-state genetic algorithm over the kGeneticPopulation best passing configs measured
  // so far (so every measurement joins the population at once): two parents by binary
  // tournament on rank, uniform crossover of their coordinates, then each parameter mutated with
  // probability 1 / parameters, to a uniformly random level one time in four, else one or two
  // levels up or down. Children outside the space (a restriction's hole) or measured before are
  // drawn again, at no cost (a config asked twice would be free in any counting that charges
  // distinct configs, as Kernel Tuner's does); a child is kept with probability P(pass) of the
  // feasibility model and never when LooksFeasible rejects it. Nullopt when 200 draws find
  // nothing (a converged population in a small space): the iterated local search goes on.
  //
  // Crossovers of configs on the edge of a failing region land in it often: on the test space
  // whose failing eighth borders the best basin (Search.AutoGeneticPhaseBreedsChildrenOutside-
  // TheFailingRegion, 200 evaluations, 20 seeds) the LooksFeasible rule alone let 19.2 failures
  // through against random search's 23.5, keeping children with probability P(pass) 16.4, and
  // keeping only children no likelier to fail than half the failure rate so far 8.9; the last
  // lost 0.03 at 200 evaluations on convolution_A6000 and 0.011 on A4000 (30 seeds), the
  // P(pass) draw nothing measurable (0.816 against 0.818 over convolution A100, A4000, A6000 and
  // W7800 at 100-400).
  //
  // Why these numbers (docs/search.md, `blocktune simulate --budget N`, 30 seeds, the six
  // convolution landscapes at 100-400 evaluations, mean of (auto - E[random]) / (optimum -
  // E[random])): this setting 0.746; a random level half the time 0.714; a population of 40
  // 0.714; picking the child the additive model likes best of 4 0.682 (it herds the search back
  // into the basin it knows); no neighbour steps 0.714; neighbours of the 16 best instead of the
  // best's 0.723; a random restart when the best stalls 0.741; the iterated local search alone
  // (before) 0.598 over the same cells at 50 seeds.
  std::optional<size_t> GeneticAsk() {
    const std::vector<size_t> pop = BestPassing(kGeneticPopulation);
    auto tournament = [&]() { return pop[std::min(rng_.Below(pop.size()), rng_.Below(pop.size()))]; };
    const size_t dims = space_.dims();
    for (int attempt = 0; attempt < 200; ++attempt) {
      const size_t a = tournament();
      const size_t b = tournament();
      std::vector<int> coords = Crossover(a, b);
      std::vector<bool> mutated(dims, false);
      for (size_t d = 0; d < dims; ++d) {
        const int levels = static_cast<int>(space_.levels(d));
        if (levels < 2 || rng_.Below(dims) != 0) continue;
        mutated[d] = true;
        if (rng_.Below(4) == 0) {
          coords[d] = static_cast<int>(rng_.Below(static_cast<uint64_t>(levels)));
        } else {
          const int step = (rng_.Below(2) == 0 ? -1 : 1) * (1 + static_cast<int>(rng_.Below(2)));
          coords[d] = std::clamp(coords[d] + step, 0, levels - 1);
        }
      }
      auto c = space_.Find(coords);
      const bool repaired = !c;
      if (repaired) c = Repair(coords, mutated);
      if (c && !asked_[*c] && Uniform() >= FailProbability(*c) && LooksFeasible(*c)) {
        ++children_;
        if (repaired) ++repaired_;
        return c;
      }
    }
    return std::nullopt;
  }

  // A mutated child outside the space (a restriction such as block_size_x x block_size_y <=
  // 1,024) is moved to the valid config nearest it that keeps the parameters the mutation drew:
  // the least squared change of the others, each in levels over its range (ties to the first in
  // space order). Nullopt when no valid config has those values, or nothing was mutated (a
  // crossover's hole is drawn again). Without it a mutation that widens one block dimension is
  // lost unless the parent's other dimension already fits, so the children never walk along
  // the restriction's edge: dedispersion_W6600's optimum (32 x 32, the one block 32 wide that
  // fits) was reached by none of them, and 4 of 50 seeds ended at 0.988 at 400 evaluations
  // where bayes_opt's runs all found it (docs/search.md). One scan of the space per repair.
  std::optional<size_t> Repair(const std::vector<int>& coords, const std::vector<bool>& mutated) const {
    if (std::find(mutated.begin(), mutated.end(), true) == mutated.end()) return std::nullopt;
    const size_t dims = space_.dims();
    std::optional<size_t> pick;
    double pick_d = kInf;
    for (size_t i = 0; i < space_.size(); ++i) {
      const std::vector<int>& ci = space_.coords(i);
      double dist = 0;
      bool keeps = true;
      for (size_t d = 0; d < dims && keeps; ++d) {
        if (ci[d] == coords[d]) continue;
        keeps = !mutated[d];
        const double diff = static_cast<double>(ci[d] - coords[d]) / static_cast<double>(space_.levels(d) - 1);
        dist += diff * diff;
      }
      if (keeps && dist < pick_d) {
        pick_d = dist;
        pick = i;
      }
    }
    return pick;
  }

  // The unasked neighbour of `from` to measure next: the one continuing the last improving
  // move, else the best predicted (by the prior when asked, else by the additive model) of
  // those that look feasible; ties in random order.
  std::optional<size_t> NextNeighbour(size_t from, bool by_prior) {
    std::vector<size_t> open;
    for (size_t n : space_.Neighbours(from)) {
      if (!asked_[n]) open.push_back(n);
    }
    for (size_t k = open.size(); k > 1; --k) std::swap(open[k - 1], open[rng_.Below(k)]);
    if (momentum_) {
      if (auto n = space_.Step(from, momentum_->dim, momentum_->dir); n && !asked_[*n] && LooksFeasible(*n)) {
        return n;
      }
    }
    std::optional<size_t> pick;
    double pick_score = kInf;
    for (size_t n : open) {
      if (!LooksFeasible(n)) continue;
      const double s = by_prior ? PriorPredict(n) : Predict(n);
      if (!pick || s < pick_score) {
        pick_score = s;
        pick = n;
      }
    }
    return pick;
  }

  // A new point for the local search to go on from, taking the next kind in turn: a kick of
  // 2-3 random steps from one of the 4 best configs, a uniform crossover of two of the 8 best,
  // or (every third restart, and on a stall) a fresh random config. Of 6 candidates of the
  // chosen kind the best predicted is taken; failing to find one falls through to random.
  std::optional<size_t> Restart(bool random) {
    ++restarts_;
    momentum_.reset();
    restart_pending_ = true;
    const std::vector<size_t> elite = BestPassing(8);
    const int kind = random || elite.size() < 2 ? 2 : static_cast<int>(restarts_ % 3);
    std::optional<size_t> pick;
    double pick_score = kInf;
    for (int attempt = 0; kind != 2 && attempt < 24; ++attempt) {
      std::optional<size_t> c;
      if (kind == 0) {
        c = elite[rng_.Below(std::min<size_t>(4, elite.size()))];
        const int steps = 2 + static_cast<int>(rng_.Below(2));
        for (int s = 0; s < steps && c; ++s) {
          const size_t d = rng_.Below(space_.dims());
          auto n = space_.Step(*c, d, rng_.Below(2) == 0 ? -1 : +1);
          if (n) c = n;
        }
      } else {
        const size_t a = elite[rng_.Below(elite.size())];
        const size_t b = elite[rng_.Below(elite.size())];
        c = space_.Find(Crossover(a, b));
      }
      if (!c || asked_[*c] || !LooksFeasible(*c)) continue;
      const double s = Predict(*c);
      if (!pick || s < pick_score) {
        pick_score = s;
        pick = c;
      }
      if (attempt >= 6 && pick) break;
    }
    if (!pick) pick = RandomFeasible();
    return pick;
  }

  // ---- prior ----------------------------------------------------------------------------
  // Each prior landscape is a hypothesis "this space ranks configs as that one does", weighted
  // as in transfer (search.cc) by likeness of the problems, then by the share of the pairs of
  // configs measured here that it orders the other way round: exp(-20 x share), so a landscape
  // misordering 10% more pairs than another weighs e^2 = 7.4x less. Transfer's exp(-5) per
  // misordered pair hands everything to one landscape within a few measurements; between
  // devices every landscape misorders some near-ties, and the equal-weight average of the other
  // five devices ranked better than any single one of them (docs/search.md). Pairs are counted
  // as each measurement arrives (O(measured x landscapes) per Tell, not O(measured^2) per Ask).
  void SetPrior(const SearchPrior& prior) {
    const size_t nb = prior.buckets.size();
    if (nb == 0) return;
    PriorLayout layout = LayOutPrior(prior, space_);
    log_prior_ = std::move(layout.log_prior);
    relative_ = std::move(layout.relative);
    misranked_.assign(nb, 0);
    compared_.assign(nb, 0);
    weights_.assign(nb, 1.0);
    UpdateWeights();
    prior_active_ = true;
  }

  void NoteMisranks(size_t j) {
    for (size_t i : ok_) {
      for (size_t b = 0; b < relative_.size(); ++b) {
        if (!std::isfinite(relative_[b][i]) || !std::isfinite(relative_[b][j])) continue;
        ++compared_[b];
        if ((cost_[i] - cost_[j]) * (relative_[b][i] - relative_[b][j]) < 0) ++misranked_[b];
      }
    }
    UpdateWeights();
  }

  double LogWeight(size_t b) const {
    const double frac = compared_[b] > 0 ? static_cast<double>(misranked_[b]) / static_cast<double>(compared_[b]) : 0.0;
    return log_prior_[b] - kMisrankWeight * frac;
  }
  void UpdateWeights() {
    double top = -kInf;
    for (size_t b = 0; b < weights_.size(); ++b) top = std::max(top, LogWeight(b));
    for (size_t b = 0; b < weights_.size(); ++b) weights_[b] = std::exp(LogWeight(b) - top);
  }

  // Posterior-mean relative log cost; +inf when no prior landscape has a passing measurement of
  // the config (it failed on every device that ran it, or none did).
  double PriorPredict(size_t i) const {
    double num = 0;
    double den = 0;
    for (size_t b = 0; b < relative_.size(); ++b) {
      if (!std::isfinite(relative_[b][i])) continue;
      num += weights_[b] * relative_[b][i];
      den += weights_[b];
    }
    return den > 0 ? num / den : kInf;
  }

  // The first kPriorFirst asks take the best-ranked unasked config by the prior; after that two
  // of every three do, and the third is a local step from the incumbent, ordered by the prior
  // too, which finds what this device does better than the others did. When the prior has
  // nothing left, plain local search. (The plain average of the other five devices' rankings
  // has a config within 2% of the optimum among its top 25 on 8 of the 12 GPU landscapes and
  // among its top 50 on 10: the first evaluations are best spent on the ranking itself.)
  std::optional<size_t> PriorAsk() {
    const int64_t turn = prior_turn_++;
    if (turn >= kPriorFirst && (turn - kPriorFirst) % 3 == 2 && best_) {
      if (auto n = NextNeighbour(*best_, /*by_prior=*/true)) return n;
    }
    std::optional<size_t> pick;
    double pick_score = kInf;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (asked_[i]) continue;
      const double s = PriorPredict(i);
      if (s < pick_score) {
        pick_score = s;
        pick = i;
      }
    }
    if (pick) return pick;
    return LocalAsk();
  }

  const SearchSpace& space_;
  std::optional<size_t> start_;
  SplitMix64 rng_;
  int64_t budget_;
  std::vector<bool> asked_;
  std::vector<double> cost_;  // log median; +inf failed; NaN not measured
  int64_t asked_count_ = 0;
  std::vector<size_t> told_;
  std::vector<size_t> ok_;
  int64_t failed_ = 0;
  int64_t skipped_ = 0;
  double total_ = 0;  // sum of the finite log costs
  std::vector<double> scaled_;
  std::vector<std::vector<double>> level_sum_;
  std::vector<std::vector<double>> level_count_;
  std::optional<size_t> best_;
  std::optional<size_t> current_;
  std::optional<Direction> momentum_;
  bool restart_pending_ = false;
  int64_t init_left_ = 0;
  int64_t stall_limit_ = 0;
  // Gaussian-process phase.
  static constexpr int64_t kModelMax = 100;
  // The additive part of the kernel (Matern52's comment): its share, chosen per ask, the tables
  // of the last fit, how many asks used it, and per parameter each level's scaled coordinate.
  double additive_share_ = 0;
  std::vector<std::vector<double>> additive_tables_;
  int64_t additive_asks_ = 0;
  std::vector<std::vector<double>> level_scaled_;
  size_t active_dims_ = 0;
  // Every config of the GPU landscapes' spaces (4,362-17,956): at 60-100 measured points an ask
  // scores dedispersion's 11,130 in 10-20 ms (simulate), nothing beside a compile and a benchmark.
  static constexpr size_t kModelCandidates = 20000;
  // Budgets under 100 (small_) are planned apart, each rule measured against the one before it
  // (200 seeds, the twelve GPU landscapes at 25 and 50 evaluations, mean methodology score):
  // 3 random configs instead of a tenth of the budget and the model for 80% of the budget
  // instead of 60%, 0.530 against 0.497 (convolution_W7800 at 50: 0.816 -> 0.861,
  // dedispersion 0.661 -> 0.690); the model's candidates 400 drawn configs and the 4 best's
  // neighbours, not every config, 0.530 against 0.516: with 3-40 points the fitted lengthscales
  // are rough, and the maximum of expected improvement over all 4,362-11,130 configs lands on
  // the model's errors more often than the maximum over a sample does (convolution_A6000 at 25:
  // 0.740 against 0.719; dedispersion_W6600 gains, 0.960 -> 0.983). At 100-200 evaluations
  // every config wins: 0.770 against 0.759 (50 seeds), convolution_W6600 at 200 0.866 -> 0.911
  // (150 seeds).
  static constexpr size_t kSmallModelCandidates = 400;
  // Later model asks (LateModelAsk). dedispersion_W6600's corner optimum (see ModelCandidates)
  // is out of reach of the children and walks: 4 of 50 seeds ended at its 0.988 config at 400
  // and at 800 evaluations, where each of bayes_opt's runs found it. Screened on 50 seeds
  // (docs/search.md): every fifth ask after the model phase at budgets of 400 and more found it
  // in 49 and 50 of 50 seeds but took the asks that find other needles: convolution_W6600 at 400
  // 0.955 -> 0.945, dedispersion_A100 at 400 0.99928 -> 0.99872, each below the best peer;
  // the same outside walk episodes 0.949 on W6600; only after 40 evaluations without
  // improvement (every third ask) 46 of 50 on dedispersion_W6600 at 400, no gain; 2,000 drawn
  // candidates instead of every config 48 and 49 of 50; from the 300th or 200th evaluation on,
  // 46 and 47 of 50 at 400. From the 400th evaluation on (kept),
  // dedispersion_W6600 at 800 finds it in 50 of 50 and nothing at 400 and below changes;
  // over the twelve landscapes at 800 the mean best/optimum is 0.99975 -> 0.99952
  // (convolution_W6600 0.9986 -> 0.9946, one seed of 50 left on its 0.83 plateau; dedispersion
  // W6600 and W7800 0.9988 / 0.9998 -> 1.0000).
  static constexpr int64_t kLateModelFrom = 400;
  static constexpr int64_t kLateModelEvery = 5;
  static constexpr size_t kLateModelBest = 50;
  int64_t late_turn_ = 0;
  int64_t late_asks_ = 0;
  bool small_ = false;
  int64_t model_until_ = 0;
  double noise_ = 0.03;          // of the standardised variance
  std::vector<double> inv_ls2_;  // per parameter, 1 / lengthscale^2
  int64_t last_improvement_ = 0;
  int64_t restarts_ = 0;
  // Genetic local search.
  static constexpr size_t kGeneticPopulation = 20;
  // Below 100 evaluations the phase after the model has 10-20 asks, under a population's worth:
  // at 25 and 50 the genetic phase measured worse than the walk from the best (50 seeds, the
  // twelve landscapes: convolution_A4000 0.775 / 0.848 against 0.804 / 0.901, convolution_MI250X
  // 0.485 against 0.549 at 25), so there the iterated local search runs as before.
  static constexpr int64_t kGeneticMinBudget = 100;
  static constexpr int64_t kLocalEvery = 3;
  // Why alternate (docs/search.md, 30 seeds, the six convolution landscapes at 100-800
  // evaluations, methodology score): the genetic phase alone 0.795; switching to the walk for
  // good after 80 evaluations without improvement 0.811 (convolution_W6600 at 400: 0.900 ->
  // 0.974, but convolution_MI250X 1.000 -> 0.988, where the population's last step comes late);
  // after 40, 0.776; taking turns after 80, 0.812, after 60, 0.815 (kept 80: at 200 evaluations
  // convolution_MI250X 0.988 against 0.976); dedispersion unchanged (0.905 both). Counting the
  // stall from the model's last find started episodes at 200 evaluations with under 80 left:
  // convolution_MI250X at 200 fell 0.993 -> 0.983 (50 seeds); counted from the genetic phase's
  // start and with 80 left, 200 is as before and 400-800 keep the gain. On W6600 the
  // population fills with a large plateau at 0.83 of the optimum; the four configs within 1% of
  // it are found by a walk from a random start that lands near them.
  static constexpr int64_t kGeneticStall = 80;
  bool walking_ = false;
  int64_t walks_ = 0;
  int64_t genetic_start_ = 0;
  int64_t genetic_turn_ = 0;
  int64_t children_ = 0;
  int64_t repaired_ = 0;  // children Repair moved into the space
  // Prior.
  bool prior_active_ = false;
  int64_t prior_turn_ = 0;
  std::vector<double> log_prior_;
  static constexpr double kMisrankWeight = 20.0;
  static constexpr int64_t kPriorFirst = 40;
  std::vector<int64_t> misranked_;
  std::vector<int64_t> compared_;
  std::vector<double> weights_;
  std::vector<std::vector<double>> relative_;  // [landscape][config] relative log cost, inf if not passing there
};

}  // namespace

double PriorCoverage(const SearchSpace& space, const SearchPrior& prior) {
  if (space.size() == 0 || prior.empty()) return 0;
  size_t covered = 0;
  for (size_t i = 0; i < space.size(); ++i) {
    const std::string key = space.config(i).ToString();
    for (const PriorBucket& b : prior.buckets) {
      if (b.relative_cost.count(key)) {
        ++covered;
        break;
      }
    }
  }
  return static_cast<double>(covered) / static_cast<double>(space.size());
}

AutoPlan ChooseAutoPlan(const SearchSpace& space, int64_t budget, const SearchPrior& prior) {
  if (!prior.empty() && PriorCoverage(space, prior) >= 0.5) return AutoPlan::kPrior;
  // A budget of most of the space leaves no room for a model to matter; small low-dimensional
  // spaces are where the quadratic surrogate was tuned (docs/tuning.md).
  if (space.size() <= 1024 && space.dims() <= 4 && budget * 2 < static_cast<int64_t>(space.size())) {
    return AutoPlan::kSurrogate;
  }
  return AutoPlan::kLocal;
}

std::unique_ptr<SearchStrategy> MakeLocalSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                int64_t budget, const SearchPrior& prior) {
  return std::make_unique<LocalSearch>(space, start, seed, budget, prior);
}

}  // namespace blocktune::tuner::search
