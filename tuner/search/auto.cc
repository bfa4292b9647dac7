// The `auto` strategy's own search: an iterated local search over the neighbourhood graph that
// starts from a uniform random sample, models which regions fail, restarts by kicks, crossover
// of good configs and fresh random points, and, given a prior from other landscapes of the
// kernel, measures the prior's best-ranked configs first; see auto.h and docs/search.md.
//
// Why this shape (docs/search.md has the measurements): on the brute-forced GPU landscapes the
// good configs sit in several separated basins, so a search that starts at the default and only
// descends (the old anneal) stalls in the default's basin, and a global quadratic model (the old
// surrogate) spends its first evaluations on a design around the default that random sampling
// beats. Kernel Tuner's benchmarks (Schoonhoven et al., IEEE TEC 2022) rank genetic algorithms
// and iterated local search highest at these budgets; this is iterated local search with a
// genetic move (uniform crossover of two elites) among its restarts.
#include "tuner/search/auto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace blocktune::tuner {
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
    // configs and 21 local steps.
    init_left_ = std::clamp<int64_t>(budget_ / 10, 3, 24);
    // Restart when the best has not improved for a quarter of the budget (at least 24
    // evaluations: about two neighbourhoods of a 7-parameter space), even inside a basin whose
    // neighbourhood is not yet exhausted.
    stall_limit_ = std::max<int64_t>(24, budget_ / 4);
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
                                    : "auto: iterated local search, ";
    out += std::to_string(restarts_) + " restarts, " + std::to_string(failed_) + " failed of " +
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

  // ---- feasibility model --------------------------------------------------------------
  // P(config i fails): a kernel-weighted vote of the measured configs near it (Gaussian in the
  // scaled coordinates, mean squared difference per parameter, sigma 0.1: a one-level move of
  // a 4-level parameter among 7 weighs 0.45, a random far config ~1e-4), shrunk towards the
  // failure rate seen so far with the weight of one config. Two failing neighbours and no
  // passing one put a config at ~0.53.
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
      if (d2 > 0.09) continue;  // weight < exp(-4.5) = 0.011
      const double w = std::exp(-d2 / (2 * 0.01));
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

  // ---- local search -------------------------------------------------------------------
  std::optional<size_t> LocalAsk() {
    if (init_left_ > 0 && asked_count_ + 1 < budget_) {
      --init_left_;
      return RandomFeasible();
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
    std::vector<size_t> by_cost = ok_;
    const size_t keep = std::min<size_t>(16, by_cost.size());
    std::partial_sort(by_cost.begin(), by_cost.begin() + static_cast<std::ptrdiff_t>(keep), by_cost.end(),
                      [&](size_t a, size_t b) { return cost_[a] != cost_[b] ? cost_[a] < cost_[b] : a < b; });
    for (size_t k = 0; k < keep; ++k) {
      if (auto n = NextNeighbour(by_cost[k], /*by_prior=*/false)) {
        current_ = by_cost[k];
        return n;
      }
    }
    return Restart(/*random=*/false);
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
    std::vector<size_t> elite = ok_;
    const size_t keep = std::min<size_t>(8, elite.size());
    std::partial_sort(elite.begin(), elite.begin() + static_cast<std::ptrdiff_t>(keep), elite.end(),
                      [&](size_t a, size_t b) { return cost_[a] != cost_[b] ? cost_[a] < cost_[b] : a < b; });
    elite.resize(keep);
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
        std::vector<int> coords = space_.coords(a);
        for (size_t d = 0; d < space_.dims(); ++d) {
          if (rng_.Below(2) == 0) coords[d] = space_.coords(b)[d];
        }
        c = space_.Find(coords);
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
  int64_t last_improvement_ = 0;
  int64_t restarts_ = 0;
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

}  // namespace blocktune::tuner
