// The surrogate strategy: a ridge-regressed quadratic model of the log cost, refitted after every
// observation, picking by a lower confidence bound and steering clear of failures.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {
namespace {

// Surrogate model: ridge regression of log cost on a full quadratic in the scaled log2 block
// sizes (1, x_d, x_d^2, x_d * x_e: 6 features for 2 parameters, 10 for 3), refitted after
// every observation. The next config is the unmeasured one with the lowest lower confidence
// bound mu(x) - kappa * s * dist(x), where dist is the distance to the nearest measured config
// (a stand-in for the model's uncertainty) and s the spread of the observed log costs; kappa
// falls from 1 to 0 as the budget is spent, so early picks explore and the last ones exploit.
// It starts with the default and its one-step neighbours upward in each parameter (a
// non-degenerate design of dims + 1 points around a config that is usually good) before the
// model is trusted. In a large space (over 1,024 configs or over 4 parameters: an external GPU
// kernel's) the design is instead the default and max(dims + 1, budget / 5) uniformly random
// configs (the same rule as auto's plan choice, auto.h): around the default it measured 0.708 of the optimum at 25
// evaluations on a 17,956-config GEMM space where random search reached 0.908 (docs/search.md).
//
// Failures are modelled by their nearest neighbour: an unmeasured config closer (in the scaled
// coordinates) to a failed config than to a passing one is not picked while another is left.
// Without it, on an imported space whose runner refused 60% of the configs, 273 of 338
// evaluations went to refused configs: the model never sees a failure, so it kept proposing the
// same refused corner.
class SurrogateSearch final : public SearchStrategy {
 public:
  SurrogateSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget)
      : space_(space),
        rng_(seed),
        history_(space.size()),
        budget_(std::max<int64_t>(budget, 1)),
        nearest_d2_(space.size(), kInf),
        nearest_ok_d2_(space.size(), kInf),
        nearest_fail_d2_(space.size(), kInf) {
    // Scaled coordinates once (SearchSpace::Scaled takes logs per call): NoteAsked and
    // Features read them for every config on every ask.
    scaled_.resize(space.size() * space.dims());
    for (size_t i = 0; i < space.size(); ++i) {
      for (size_t d = 0; d < space.dims(); ++d) scaled_[i * space.dims() + d] = space.Scaled(i, d);
    }
    std::optional<size_t> s = start ? start : history_.RandomUnasked(rng_);
    large_ = space.size() > 1024 || space.dims() > 4;
    if (s && large_) {
      design_.push_back(*s);
      const auto want = static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(space.dims()) + 1, budget_ / 5));
      for (size_t i : RandomOrder(space.size(), s, std::min(want + 1, space.size()), seed ^ 0x5eed)) {
        if (i != *s) design_.push_back(i);
      }
    } else if (s) {
      design_.push_back(*s);
      for (size_t d = 0; d < space.dims(); ++d) {
        auto n = space.Step(*s, d, +1);
        if (!n) n = space.Step(*s, d, -1);
        if (n && std::find(design_.begin(), design_.end(), *n) == design_.end()) design_.push_back(*n);
      }
    }
  }

  std::optional<size_t> Ask() override {
    std::optional<size_t> next;
    while (design_next_ < design_.size() && !next) {
      const size_t d = design_[design_next_++];
      if (!history_.asked(d)) next = d;
    }
    if (!next) next = ModelPick();
    if (!next) next = history_.RandomUnasked(rng_);
    if (next) {
      history_.MarkAsked(*next);
      NoteAsked(*next);
    }
    return next;
  }

  void Tell(size_t index, const Observation& observation) override {
    history_.Set(index, observation);
    told_.push_back(index);
    const bool ok = std::isfinite(history_.cost(index));
    any_failed_ = any_failed_ || !ok;
    std::vector<double>& nearest = ok ? nearest_ok_d2_ : nearest_fail_d2_;
    for (size_t i = 0; i < space_.size(); ++i) {
      double d2 = 0;
      for (size_t d = 0; d < space_.dims(); ++d) {
        const double diff = Scaled(i, d) - Scaled(index, d);
        d2 += diff * diff;
      }
      nearest[i] = std::min(nearest[i], d2);
    }
  }

 private:
  // Keeps nearest_d2_[i], the squared distance from config i to the nearest asked config, up to
  // date: O(configs x dims) per ask. ModelPick used to find it by scanning every asked config
  // for every candidate, O(configs^2 x dims) per pick: on the 5,760-config imported landscape at
  // a 5% budget that was ~10^11 operations a run (over ten minutes at load 10). The minimum is
  // the same whichever order the asked configs come in, so the picks are unchanged.
  void NoteAsked(size_t j) {
    for (size_t i = 0; i < space_.size(); ++i) {
      double d2 = 0;
      for (size_t d = 0; d < space_.dims(); ++d) {
        const double diff = Scaled(i, d) - Scaled(j, d);
        d2 += diff * diff;
      }
      nearest_d2_[i] = std::min(nearest_d2_[i], d2);
    }
  }

  double Scaled(size_t i, size_t d) const { return scaled_[i * space_.dims() + d]; }

  std::vector<double> Features(size_t i) const {
    std::vector<double> f{1.0};
    const size_t dims = space_.dims();
    std::vector<double> x(dims);
    for (size_t d = 0; d < dims; ++d) x[d] = 2.0 * Scaled(i, d) - 1.0;
    for (size_t d = 0; d < dims; ++d) f.push_back(x[d]);
    for (size_t d = 0; d < dims; ++d) f.push_back(x[d] * x[d]);
    for (size_t d = 0; d < dims; ++d) {
      for (size_t e = d + 1; e < dims; ++e) f.push_back(x[d] * x[e]);
    }
    return f;
  }

  // Solves (F^T F + lambda I') beta = F^T y by Gaussian elimination with partial pivoting;
  // lambda = 1e-3 on every coefficient but the intercept keeps the fit defined with fewer
  // points than features. (Features are in [-1, 1]; a ridge of 0.05 shrank the curvature so
  // much that the model's minimum ran to the corners of the space, and 1e-2 to 1e-1 scored
  // worse on the stored sweeps; see docs/tuning.md.)
  std::vector<double> Fit(const std::vector<size_t>& points, const std::vector<double>& y) const {
    constexpr double kRidge = 1e-3;
    // The feature count follows from the space alone (1 + 2 dims + dims (dims - 1) / 2), so an
    // empty `points` gives the ridge-only system (beta = 0) rather than reading points[0].
    const size_t dims = space_.dims();
    const size_t p = 1 + 2 * dims + dims * (dims - 1) / 2;
    std::vector<std::vector<double>> a(p, std::vector<double>(p + 1, 0.0));
    for (size_t k = 0; k < points.size(); ++k) {
      const auto f = Features(points[k]);
      for (size_t r = 0; r < p; ++r) {
        for (size_t c = 0; c < p; ++c) a[r][c] += f[r] * f[c];
        a[r][p] += f[r] * y[k];
      }
    }
    for (size_t r = 1; r < p; ++r) a[r][r] += kRidge;
    a[0][0] += 1e-9;
    for (size_t c = 0; c < p; ++c) {
      size_t piv = c;
      for (size_t r = c + 1; r < p; ++r) {
        if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
      }
      std::swap(a[c], a[piv]);
      if (std::fabs(a[c][c]) < 1e-15) continue;
      for (size_t r = 0; r < p; ++r) {
        if (r == c) continue;
        const double m = a[r][c] / a[c][c];
        for (size_t k = c; k <= p; ++k) a[r][k] -= m * a[c][k];
      }
    }
    std::vector<double> beta(p, 0.0);
    for (size_t r = 0; r < p; ++r) beta[r] = std::fabs(a[r][r]) < 1e-15 ? 0.0 : a[r][p] / a[r][r];
    return beta;
  }

  std::optional<size_t> ModelPick() {
    std::vector<size_t> points;
    std::vector<double> y;
    for (size_t i : told_) {
      if (std::isfinite(history_.cost(i))) {
        points.push_back(i);
        y.push_back(history_.cost(i));
      }
    }
    if (points.size() < 2) return std::nullopt;
    double mean = 0;
    for (double v : y) mean += v;
    mean /= static_cast<double>(y.size());
    double var = 0;
    for (double& v : y) {
      v -= mean;
      var += v * v;
    }
    const double spread = std::max(std::sqrt(var / static_cast<double>(y.size())), 0.01);
    // In a large space a failed config also enters the fit, as one spread slower than the
    // slowest passing one, so the model's minimum moves off a failing region instead of only
    // its nearest neighbours being skipped (the quadratic otherwise keeps pointing into it).
    if (large_) {
      const double worst = *std::max_element(y.begin(), y.end());
      for (size_t i : told_) {
        if (std::isfinite(history_.cost(i))) continue;
        points.push_back(i);
        y.push_back(worst + spread);
      }
    }
    const auto beta = Fit(points, y);
    const double spent = static_cast<double>(history_.asked_count()) / static_cast<double>(budget_);
    const double kappa = std::max(0.0, 1.0 - spent);
    std::optional<size_t> pick;
    double pick_score = kInf;
    std::optional<size_t> suspect;  // the best of those nearer a failure than a pass
    double suspect_score = kInf;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (history_.asked(i)) continue;
      const auto f = Features(i);
      double mu = 0;
      for (size_t k = 0; k < f.size(); ++k) mu += beta[k] * f[k];
      const double score = mu - kappa * spread * std::sqrt(nearest_d2_[i]);
      if (any_failed_ && nearest_fail_d2_[i] < nearest_ok_d2_[i]) {
        if (score < suspect_score) {
          suspect_score = score;
          suspect = i;
        }
        continue;
      }
      if (score < pick_score) {
        pick_score = score;
        pick = i;
      }
    }
    return pick ? pick : suspect;
  }

  const SearchSpace& space_;
  SplitMix64 rng_;
  History history_;
  int64_t budget_;
  std::vector<size_t> design_;
  size_t design_next_ = 0;
  std::vector<size_t> told_;
  std::vector<double> nearest_d2_;       // by config: squared scaled distance to the nearest asked one
  std::vector<double> nearest_ok_d2_;    // ... to the nearest one that passed
  std::vector<double> nearest_fail_d2_;  // ... to the nearest one that failed
  bool any_failed_ = false;
  bool large_ = false;          // over 1,024 configs or over 4 parameters: random design, failures in the fit
  std::vector<double> scaled_;  // config-major: SearchSpace::Scaled(i, d) at [i * dims + d]
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeSurrogateSearch(const SearchSpace& space, std::optional<size_t> start,
                                                    uint64_t seed, int64_t budget) {
  return std::make_unique<SurrogateSearch>(space, start, seed, budget);
}

}  // namespace blocktune::tuner::search
