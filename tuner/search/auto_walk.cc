// auto's iterated local search: the walk over the neighbourhood graph (the best predicted
// unmeasured neighbour, momentum along an improving direction) and its restarts (kicks,
// crossovers, random points), ordered by an additive model of the measured costs.
#include <optional>
#include <utility>
#include <vector>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {

// log cost ~ mean + sum over parameters of the mean deviation at that parameter's value
// (shrunk by 2 pseudo-observations at the mean): main effects only, cheap, and on the GPU
// landscapes enough to order a neighbourhood best-first.
double LocalSearch::Predict(size_t i) const {
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

// The unasked neighbour of `from` to measure next: the one continuing the last improving
// move, else the best predicted (by the prior when asked, else by the additive model) of
// those that look feasible; ties in random order.
std::optional<size_t> LocalSearch::NextNeighbour(size_t from, bool by_prior) {
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
std::optional<size_t> LocalSearch::Restart(bool random) {
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

}  // namespace blocktune::tuner::search
