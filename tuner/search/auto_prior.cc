// auto with a prior from other landscapes of the kernel (other buckets, other devices): each
// landscape weighted by how alike its problem is and how well it orders what this space
// measured, the prior's ranking asked first, with local steps ordered by it.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {

// Each prior landscape is a hypothesis "this space ranks configs as that one does", weighted
// as in transfer (transfer.cc) by likeness of the problems, then by the share of the pairs of
// configs measured here that it orders the other way round: exp(-20 x share), so a landscape
// misordering 10% more pairs than another weighs e^2 = 7.4x less. Transfer's exp(-5) per
// misordered pair hands everything to one landscape within a few measurements; between
// devices every landscape misorders some near-ties, and the equal-weight average of the other
// five devices ranked better than any single one of them (docs/search.md). Pairs are counted
// as each measurement arrives (O(measured x landscapes) per Tell, not O(measured^2) per Ask).
void LocalSearch::SetPrior(const SearchPrior& prior) {
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

void LocalSearch::NoteMisranks(size_t j) {
  for (size_t i : ok_) {
    for (size_t b = 0; b < relative_.size(); ++b) {
      if (!std::isfinite(relative_[b][i]) || !std::isfinite(relative_[b][j])) continue;
      ++compared_[b];
      if ((cost_[i] - cost_[j]) * (relative_[b][i] - relative_[b][j]) < 0) ++misranked_[b];
    }
  }
  UpdateWeights();
}

double LocalSearch::LogWeight(size_t b) const {
  const double frac = compared_[b] > 0 ? static_cast<double>(misranked_[b]) / static_cast<double>(compared_[b]) : 0.0;
  return log_prior_[b] - kMisrankWeight * frac;
}
void LocalSearch::UpdateWeights() {
  double top = -kInf;
  for (size_t b = 0; b < weights_.size(); ++b) top = std::max(top, LogWeight(b));
  for (size_t b = 0; b < weights_.size(); ++b) weights_[b] = std::exp(LogWeight(b) - top);
}

// Posterior-mean relative log cost; +inf when no prior landscape has a passing measurement of
// the config (it failed on every device that ran it, or none did).
double LocalSearch::PriorPredict(size_t i) const {
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
std::optional<size_t> LocalSearch::PriorAsk() {
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

}  // namespace blocktune::tuner::search
