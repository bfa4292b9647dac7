// The `auto` strategy's own search on large spaces: a uniform random sample, then constraint-
// aware Bayesian optimisation (a Gaussian process for the times, a feasibility model for the
// failures) for up to 60% of the budget (80% below 100), then (at budgets of 100 and more) a genetic local
// search: children of the best configs found (uniform crossover and mutation) interleaved with
// steps to the best config's unmeasured neighbours, taking turns with episodes of an iterated
// local search over the neighbourhood graph (restarts by kicks, crossover of good configs and
// fresh random points) whenever the best stalls, and used alone below 100; given a prior from other
// landscapes of the kernel, the prior's best-ranked configs first. See auto.h, auto_search.h (the
// class, whose phases live in auto_*.cc) and docs/search.md.
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
#include <memory>
#include <string>
#include <vector>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {

LocalSearch::LocalSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget,
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
  // configs and 21 local steps. Below 100 evaluations 3 (see small_ in auto_search.h).
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
  // for 80% of the budget (see small_ in auto_search.h).
  model_until_ =
      std::min<int64_t>(kModelMax, static_cast<int64_t>((small_ ? 0.8 : 0.6) * static_cast<double>(budget_)));
  inv_ls2_.assign(space.dims(), 1.0 / (0.2 * 0.2 * static_cast<double>(std::max<size_t>(space.dims(), 1))));
  SetPrior(prior);
}

std::optional<size_t> LocalSearch::Ask() {
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

void LocalSearch::Tell(size_t index, const Observation& observation) {
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

std::string LocalSearch::Explain() const {
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

// The k fastest passing configs measured so far, fastest first (ties by index).
std::vector<size_t> LocalSearch::BestPassing(size_t k) const {
  std::vector<size_t> out = ok_;
  const size_t keep = std::min(k, out.size());
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(),
                    [&](size_t a, size_t b) { return cost_[a] != cost_[b] ? cost_[a] < cost_[b] : a < b; });
  out.resize(keep);
  return out;
}

// Uniform crossover: each parameter from `a` or `b` with even odds.
std::vector<int> LocalSearch::Crossover(size_t a, size_t b) {
  std::vector<int> coords = space_.coords(a);
  for (size_t d = 0; d < space_.dims(); ++d) {
    if (rng_.Below(2) == 0) coords[d] = space_.coords(b)[d];
  }
  return coords;
}

// The schedule of the search without a prior (and once the prior has nothing left): the
// random sample, the model phase, then the genetic local search taking turns with walk episodes,
// the later model asks, and the walk itself (auto_walk.cc).
std::optional<size_t> LocalSearch::LocalAsk() {
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
