// The five search strategies behind one ask/tell interface; see search.h.
//
// Costs are log(median_ns): block-size effects are multiplicative (a 10% slower config is
// 10% slower on a fast bucket and a slow one), so differences in log cost are relative
// differences and one temperature / one model scale serves every bucket.
#include "tuner/search/search.h"

#include "tuner/search/auto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace blocktune::tuner::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ----------------------------------------------------------------------------------------
// Static plans: exhaustive and random ask a list computed up front.

class ListSearch final : public SearchStrategy {
 public:
  explicit ListSearch(std::vector<size_t> order) : order_(std::move(order)) {}
  std::optional<size_t> Ask() override {
    if (next_ >= order_.size()) return std::nullopt;
    return order_[next_++];
  }
  void Tell(size_t, const Observation&) override {}

 private:
  std::vector<size_t> order_;
  size_t next_ = 0;
};

// The first `want` positions of a partial Fisher-Yates shuffle of [0, n), with `first` moved
// to the front: a uniform sample without replacement that always includes the default.
std::vector<size_t> RandomOrder(size_t n, std::optional<size_t> first, size_t want, uint64_t seed) {
  std::vector<size_t> pool;
  pool.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!first || i != *first) pool.push_back(i);
  }
  std::vector<size_t> out;
  if (first && want > 0) out.push_back(*first);
  SplitMix64 rng(seed);
  for (size_t i = 0; out.size() < want && i < pool.size(); ++i) {
    const size_t j = i + rng.Below(pool.size() - i);
    std::swap(pool[i], pool[j]);
    out.push_back(pool[i]);
  }
  return out;
}

// Shared bookkeeping of the model-guided strategies: what was asked, what it cost.
class History {
 public:
  explicit History(size_t n) : asked_(n, false), cost_(n, std::numeric_limits<double>::quiet_NaN()) {}
  bool asked(size_t i) const { return asked_[i]; }
  void MarkAsked(size_t i) {
    asked_[i] = true;
    ++asked_count_;
  }
  size_t asked_count() const { return asked_count_; }
  bool known(size_t i) const { return !std::isnan(cost_[i]); }
  double cost(size_t i) const { return cost_[i]; }
  void Set(size_t i, const Observation& o) {
    cost_[i] = o.ok && o.median_ns > 0 ? std::log(o.median_ns) : kInf;
    if (cost_[i] < best_cost_) {
      best_cost_ = cost_[i];
      best_ = i;
    }
  }
  std::optional<size_t> best() const { return best_; }
  // Uniformly random config not asked yet.
  std::optional<size_t> RandomUnasked(SplitMix64& rng) const {
    const size_t left = asked_.size() - asked_count_;
    if (left == 0) return std::nullopt;
    size_t k = rng.Below(left);
    for (size_t i = 0; i < asked_.size(); ++i) {
      if (!asked_[i] && k-- == 0) return i;
    }
    return std::nullopt;
  }

 private:
  std::vector<bool> asked_;
  std::vector<double> cost_;
  size_t asked_count_ = 0;
  std::optional<size_t> best_;
  double best_cost_ = kInf;
};

// ----------------------------------------------------------------------------------------
// Simulated annealing over the neighbourhood graph, with momentum and restarts.
//
// From the current config it proposes an unmeasured neighbour: first the one continuing the
// last move that improved (block-size costs are mostly unimodal along one parameter, so a
// direction that paid off usually pays again), otherwise a random one. A worse neighbour is
// still accepted with probability exp(-delta / T), T starting at 0.03 (a 3% slowdown is
// accepted ~37% of the time early on) and cooling by 0.85 per evaluation, so early steps can
// cross a noisy ridge and late ones only descend. When the current config has no unmeasured
// neighbour it restarts from the best measured config that still has one (most often the
// incumbent best, whose remaining neighbours are the likeliest improvements), and when the
// measured region is closed, from a random unmeasured config.
//
// Stall rule (docs/search.md): when the best has not improved for max(16, budget / 5)
// evaluations, the walk jumps to a random unmeasured config and goes on from there. Without it,
// a walk that starts at the default flood-fills the default's basin: on a 5,776-config GPU
// convolution space it sat at 0.887 of the optimum from 400 to 1,600 evaluations while random
// search passed it.
class AnnealSearch final : public SearchStrategy {
 public:
  AnnealSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget)
      : space_(space),
        start_(start),
        rng_(seed),
        history_(space.size()),
        stall_limit_(std::max<int64_t>(16, budget / 5)) {}

  std::optional<size_t> Ask() override {
    std::optional<size_t> next;
    if (history_.asked_count() == 0) {
      next = start_ ? start_ : history_.RandomUnasked(rng_);
    } else if (since_improvement_ >= stall_limit_) {
      since_improvement_ = 0;
      current_.reset();
      momentum_.reset();
      next = history_.RandomUnasked(rng_);
    } else {
      if (current_) next = Propose(*current_);
      if (!next) next = Restart();
    }
    if (next) history_.MarkAsked(*next);
    return next;
  }

  void Tell(size_t index, const Observation& observation) override {
    const std::optional<size_t> best_before = history_.best();
    history_.Set(index, observation);
    since_improvement_ = history_.best() != best_before ? 0 : since_improvement_ + 1;
    const double c = history_.cost(index);
    if (!current_ || !std::isfinite(history_.cost(*current_))) {
      if (std::isfinite(c) || !current_) Move(index, /*improved=*/false);
    } else {
      const double delta = c - history_.cost(*current_);
      if (delta < 0) {
        Move(index, /*improved=*/true);
      } else if (std::isfinite(delta) && Uniform() < std::exp(-delta / temperature_)) {
        Move(index, /*improved=*/false);
      } else {
        momentum_.reset();
      }
    }
    temperature_ *= 0.85;
  }

 private:
  struct Direction {
    size_t dim;
    int dir;
  };

  double Uniform() { return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53; }

  void Move(size_t to, bool improved) {
    momentum_.reset();
    if (improved && current_) {
      for (size_t d = 0; d < space_.dims(); ++d) {
        const int diff = space_.coords(to)[d] - space_.coords(*current_)[d];
        if (diff != 0) momentum_ = Direction{d, diff > 0 ? 1 : -1};
      }
    }
    current_ = to;
  }

  std::optional<size_t> Propose(size_t from) {
    if (momentum_) {
      if (auto n = space_.Step(from, momentum_->dim, momentum_->dir); n && !history_.asked(*n)) return n;
    }
    std::vector<size_t> open;
    for (size_t n : space_.Neighbours(from)) {
      if (!history_.asked(n)) open.push_back(n);
    }
    if (open.empty()) return std::nullopt;
    return open[rng_.Below(open.size())];
  }

  std::optional<size_t> Restart() {
    momentum_.reset();
    // Measured configs from best to worst; the first with an unmeasured neighbour.
    std::vector<size_t> measured;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (history_.known(i) && std::isfinite(history_.cost(i))) measured.push_back(i);
    }
    std::sort(measured.begin(), measured.end(), [&](size_t a, size_t b) {
      return history_.cost(a) != history_.cost(b) ? history_.cost(a) < history_.cost(b) : a < b;
    });
    for (size_t m : measured) {
      if (auto n = Propose(m)) {
        current_ = m;
        return n;
      }
    }
    current_.reset();
    return history_.RandomUnasked(rng_);
  }

  const SearchSpace& space_;
  std::optional<size_t> start_;
  SplitMix64 rng_;
  History history_;
  std::optional<size_t> current_;
  std::optional<Direction> momentum_;
  double temperature_ = 0.03;
  int64_t stall_limit_;
  int64_t since_improvement_ = 0;
};

// ----------------------------------------------------------------------------------------
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

// ----------------------------------------------------------------------------------------
// Transfer: the landscapes of other buckets of the same kernel on the same hardware predict
// this one's. Each prior bucket is a hypothesis "this bucket ranks configs as that one does";
// its weight starts from how alike the two problems are (a Gaussian kernel on the standardised
// PriorFeatures) and is multiplied, after every observation, by exp(-kMisrankPenalty) for each
// pair of configs measured here that the prior bucket orders the other way round (the ranking
// loss of RGPE, Feurer et al. 2018: ranks ignore the scale of the cost differences, which
// differs between buckets, and a hypothesis that orders everything measured so far correctly
// keeps its full weight). The next config is the unmeasured one with the lowest weighted-mean
// relative cost. It measures the default first, like every strategy. With no prior (the first
// bucket ever swept for this key), or one covering less than kMinCoverage of this space, it
// searches like surrogate.
//
// kMisrankPenalty = 5: each misordered pair costs a hypothesis 99% of its weight, so two or
// three contradicting measurements hand the search to the buckets that agree. Scored with
// `blocktune simulate` on 13 data sets of stored flash_attention and matmul sweeps
// (docs/tuning.md), penalties 2-10 did about equally well and a Gaussian likelihood of the log
// costs (sd 2-5%) slightly worse, mostly on buckets whose optimum was sharp.
class TransferSearch final : public SearchStrategy {
 public:
  TransferSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget,
                 const SearchPrior& prior)
      : space_(space), start_(start), rng_(seed), history_(space.size()) {
    const size_t nb = prior.buckets.size();
    for (const PriorBucket& b : prior.buckets) names_.push_back(b.name);
    if (nb == 0) {
      fallback_ = std::make_unique<SurrogateSearch>(space, start, seed, budget);
      return;
    }
    PriorLayout layout = LayOutPrior(prior, space);
    log_prior_ = std::move(layout.log_prior);
    relative_ = std::move(layout.relative);
    // Transfer only ranks configs some prior bucket measured. When those are too few of this
    // space (a first sweep on a new machine, whose earlier buckets measured a tenth each), the
    // best config is likely outside them, and a search that models this bucket alone does
    // better.
    for (size_t i = 0; i < space.size(); ++i) {
      for (size_t b = 0; b < nb; ++b) {
        if (std::isfinite(relative_[b][i])) {
          ++covered_;
          break;
        }
      }
    }
    if (static_cast<double>(covered_) < kMinCoverage * static_cast<double>(space.size())) {
      fallback_ = std::make_unique<SurrogateSearch>(space, start, seed, budget);
    }
  }

  std::optional<size_t> Ask() override {
    if (fallback_) return fallback_->Ask();
    std::optional<size_t> next;
    if (history_.asked_count() == 0 && start_) {
      next = start_;
    } else {
      next = Predicted();
      if (!next) next = history_.RandomUnasked(rng_);
    }
    if (next) history_.MarkAsked(*next);
    return next;
  }

  void Tell(size_t index, const Observation& observation) override {
    if (fallback_) return fallback_->Tell(index, observation);
    history_.Set(index, observation);
  }

  // "transfer: prior of 11 buckets, weight m1024_n1024_k1024 71%, m512_n512_k512 20%, ..."
  // (the posterior after everything measured), or why the bucket was searched as surrogate.
  std::string Explain() const override {
    if (names_.empty()) return "transfer: no prior stored, searched as surrogate";
    if (fallback_) {
      return "transfer: prior of " + Buckets() + " covers " + std::to_string(covered_) + " of " +
             std::to_string(space_.size()) + " configs, searched as surrogate";
    }
    const auto lw = LogPosterior();
    const double top = *std::max_element(lw.begin(), lw.end());
    std::vector<std::pair<double, size_t>> w;
    double total = 0;
    for (size_t b = 0; b < lw.size(); ++b) {
      w.emplace_back(std::exp(lw[b] - top), b);
      total += w.back().first;
    }
    std::sort(w.begin(), w.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    std::string out = "transfer: prior of " + Buckets() + ", weight";
    for (size_t k = 0; k < std::min<size_t>(3, w.size()); ++k) {
      const int pct = static_cast<int>(std::lround(100 * w[k].first / total));
      if (k > 0 && pct == 0) break;
      out += (k > 0 ? ", " : " ") + (names_[w[k].second].empty() ? "?" : names_[w[k].second]) + " " +
             std::to_string(pct) + "%";
    }
    return out;
  }

 private:
  static constexpr double kMisrankPenalty = 5.0;

  std::string Buckets() const { return std::to_string(names_.size()) + (names_.size() == 1 ? " bucket" : " buckets"); }
  static constexpr double kMinCoverage = 0.5;

  // Posterior log weight of each prior bucket given the finite costs measured so far.
  std::vector<double> LogPosterior() const {
    std::vector<size_t> seen;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (history_.known(i) && std::isfinite(history_.cost(i))) seen.push_back(i);
    }
    std::vector<double> w = log_prior_;
    for (size_t b = 0; b < w.size(); ++b) {
      int misranked = 0;
      for (size_t x = 0; x < seen.size(); ++x) {
        for (size_t y = x + 1; y < seen.size(); ++y) {
          const size_t i = seen[x];
          const size_t j = seen[y];
          if (!std::isfinite(relative_[b][i]) || !std::isfinite(relative_[b][j])) continue;
          if ((history_.cost(i) - history_.cost(j)) * (relative_[b][i] - relative_[b][j]) < 0) ++misranked;
        }
      }
      w[b] -= kMisrankPenalty * misranked;
    }
    return w;
  }

  // The unasked config with the lowest posterior-mean relative cost; configs no prior bucket
  // measured come last (nullopt when every remaining config is one of them).
  std::optional<size_t> Predicted() const {
    const auto lw = LogPosterior();
    const double top = *std::max_element(lw.begin(), lw.end());
    std::vector<double> w(lw.size());
    for (size_t b = 0; b < lw.size(); ++b) w[b] = std::exp(lw[b] - top);
    std::optional<size_t> pick;
    double pick_mean = kInf;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (history_.asked(i)) continue;
      double num = 0;
      double den = 0;
      for (size_t b = 0; b < w.size(); ++b) {
        if (!std::isfinite(relative_[b][i])) continue;
        num += w[b] * relative_[b][i];
        den += w[b];
      }
      if (den <= 0) continue;
      if (const double mean = num / den; mean < pick_mean) {
        pick_mean = mean;
        pick = i;
      }
    }
    return pick;
  }

  const SearchSpace& space_;
  std::optional<size_t> start_;
  SplitMix64 rng_;
  History history_;
  std::unique_ptr<SearchStrategy> fallback_;
  std::vector<std::string> names_;             // per prior bucket
  size_t covered_ = 0;                         // configs of this space some prior bucket measured
  std::vector<double> log_prior_;              // per prior bucket
  std::vector<std::vector<double>> relative_;  // [prior bucket][config] relative log cost, inf if unmeasured
};

}  // namespace

SearchSpace::SearchSpace(const std::vector<ParamSpec>& params, std::vector<Config> valid) : configs_(std::move(valid)) {
  for (const auto& p : params) {
    values_.push_back(p.candidates);
    categorical_.push_back(p.categorical);
    by_index_.push_back(p.categorical ||
                        (!p.candidates.empty() && *std::min_element(p.candidates.begin(), p.candidates.end()) < 1));
  }
  coords_.reserve(configs_.size());
  for (size_t i = 0; i < configs_.size(); ++i) {
    std::vector<int> c(params.size(), 0);
    for (size_t d = 0; d < params.size(); ++d) {
      const int64_t v = configs_[i].Get(params[d].name).value_or(0);
      const auto it = std::find(values_[d].begin(), values_[d].end(), v);
      c[d] = static_cast<int>(it - values_[d].begin());
    }
    by_coords_.emplace(c, i);
    coords_.push_back(std::move(c));
  }
}

double SearchSpace::Scaled(size_t i, size_t d) const {
  const auto& v = values_[d];
  const int k = coords_[i][d];
  if (v.size() < 2 || k >= static_cast<int>(v.size())) return 0.5;
  if (by_index_[d]) return static_cast<double>(k) / static_cast<double>(v.size() - 1);
  const auto lg = [](int64_t x) { return std::log2(static_cast<double>(std::max<int64_t>(x, 1))); };
  const double lo = lg(*std::min_element(v.begin(), v.end()));
  const double hi = lg(*std::max_element(v.begin(), v.end()));
  return hi > lo ? (lg(v[static_cast<size_t>(k)]) - lo) / (hi - lo) : 0.5;
}

std::optional<size_t> SearchSpace::Find(const Config& c) const {
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (configs_[i] == c) return i;
  }
  return std::nullopt;
}

std::optional<size_t> SearchSpace::Find(const std::vector<int>& coords) const {
  auto it = by_coords_.find(coords);
  if (it == by_coords_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> SearchSpace::Step(size_t i, size_t d, int dir) const {
  std::vector<int> c = coords_[i];
  while (true) {
    c[d] += dir;
    if (c[d] < 0 || c[d] >= static_cast<int>(values_[d].size())) return std::nullopt;
    if (auto n = Find(c)) return n;
  }
}

std::vector<size_t> SearchSpace::Neighbours(size_t i) const {
  std::vector<size_t> out;
  for (size_t d = 0; d < dims(); ++d) {
    if (categorical_[d]) {
      std::vector<int> c = coords_[i];
      for (int k = 0; k < static_cast<int>(values_[d].size()); ++k) {
        if (k == coords_[i][d]) continue;
        c[d] = k;
        if (auto n = Find(c)) out.push_back(*n);
      }
      continue;
    }
    for (int dir : {-1, +1}) {
      if (auto n = Step(i, d, dir)) out.push_back(*n);
    }
  }
  return out;
}

int64_t EvaluationBudget(Strategy strategy, int64_t requested, size_t space_size) {
  const auto n = static_cast<int64_t>(space_size);
  switch (strategy) {
    case Strategy::kExhaustive: return n;
    case Strategy::kRandom: return std::min(n, requested > 0 ? requested : 32);
    case Strategy::kAnneal:
    case Strategy::kSurrogate:
    case Strategy::kTransfer:
    case Strategy::kAuto: return std::min(n, requested > 0 ? requested : std::max<int64_t>(8, (n + 9) / 10));
  }
  return n;
}

std::unique_ptr<SearchStrategy> MakeSearch(Strategy strategy, const SearchSpace& space, std::optional<size_t> start,
                                           uint64_t seed, int64_t budget, const SearchPrior& prior) {
  switch (strategy) {
    // Exhaustive measures everything, but in a seeded random order (the default first): in
    // space order a slow drift of the machine's speed during the sweep would show up as a
    // trend along the outermost parameter and mislead anyone reading the landscape.
    case Strategy::kExhaustive:
    case Strategy::kRandom: return std::make_unique<ListSearch>(RandomOrder(space.size(), start, space.size(), seed));
    case Strategy::kAnneal: return std::make_unique<AnnealSearch>(space, start, seed, budget);
    case Strategy::kSurrogate: return std::make_unique<SurrogateSearch>(space, start, seed, budget);
    case Strategy::kTransfer: return std::make_unique<TransferSearch>(space, start, seed, budget, prior);
    case Strategy::kAuto:
      switch (ChooseAutoPlan(space, budget, prior)) {
        case AutoPlan::kSurrogate: return std::make_unique<SurrogateSearch>(space, start, seed, budget);
        case AutoPlan::kPrior: return MakeLocalSearch(space, start, seed, budget, prior);
        case AutoPlan::kLocal: return MakeLocalSearch(space, start, seed, budget, {});
      }
      return nullptr;
  }
  return nullptr;
}

std::vector<double> PriorFeatures(const KernelSpec& spec, const Problem& problem) {
  std::vector<double> f;
  for (const DimSpec& d : spec.dims()) {
    f.push_back(std::log2(1.0 + static_cast<double>(std::max<int64_t>(problem.Dim(d.bucket.name), 0))));
  }
  return f;
}

PriorBucket MakePriorBucket(std::vector<double> features, const std::vector<std::pair<Config, double>>& medians) {
  PriorBucket b;
  b.features = std::move(features);
  std::map<std::string, double> lowest;
  for (const auto& [config, median] : medians) {
    if (!(median > 0)) continue;
    auto [it, fresh] = lowest.emplace(config.ToString(), median);
    if (!fresh) it->second = std::min(it->second, median);
  }
  double best = kInf;
  for (const auto& [_, m] : lowest) best = std::min(best, m);
  for (const auto& [key, m] : lowest) b.relative_cost.emplace(key, std::log(m / best));
  return b;
}

PriorLayout LayOutPrior(const SearchPrior& prior, const SearchSpace& space) {
  const size_t nb = prior.buckets.size();
  // Standardise each feature by its spread over the prior and this bucket; a feature that is
  // the same everywhere carries no information and drops out.
  const size_t nf = prior.features.size();
  std::vector<double> sd(nf, 0.0);
  for (size_t f = 0; f < nf; ++f) {
    double mean = prior.features[f];
    for (const PriorBucket& b : prior.buckets) mean += f < b.features.size() ? b.features[f] : 0.0;
    mean /= static_cast<double>(nb + 1);
    double var = (prior.features[f] - mean) * (prior.features[f] - mean);
    for (const PriorBucket& b : prior.buckets) {
      const double x = f < b.features.size() ? b.features[f] : 0.0;
      var += (x - mean) * (x - mean);
    }
    sd[f] = std::sqrt(var / static_cast<double>(nb + 1));
  }
  PriorLayout layout;
  layout.log_prior.assign(nb, 0.0);
  layout.relative.assign(nb, std::vector<double>(space.size(), kInf));
  for (size_t b = 0; b < nb; ++b) {
    const PriorBucket& pb = prior.buckets[b];
    double d2 = 0;
    for (size_t f = 0; f < nf; ++f) {
      if (sd[f] <= 0) continue;
      const double x = f < pb.features.size() ? pb.features[f] : 0.0;
      d2 += (x - prior.features[f]) * (x - prior.features[f]) / (sd[f] * sd[f]);
    }
    layout.log_prior[b] = -d2 + pb.log_weight;
    for (size_t i = 0; i < space.size(); ++i) {
      if (auto it = pb.relative_cost.find(space.config(i).ToString()); it != pb.relative_cost.end()) {
        layout.relative[b][i] = it->second;
      }
    }
  }
  return layout;
}

std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config, Strategy strategy,
                                int64_t budget, uint64_t seed) {
  std::optional<size_t> first;
  for (size_t i = 0; i < valid_space.size(); ++i) {
    if (valid_space[i] == default_config) first = i;
  }
  const auto want = static_cast<size_t>(
      EvaluationBudget(strategy == Strategy::kExhaustive ? strategy : Strategy::kRandom, budget, valid_space.size()));
  std::vector<Config> plan;
  for (size_t i : RandomOrder(valid_space.size(), first, want, seed)) plan.push_back(valid_space[i]);
  return plan;
}

}  // namespace blocktune::tuner::search
