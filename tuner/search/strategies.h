// What the search strategies share, and how MakeSearch (search.cc) reaches them: the cost of a
// failed config, the seeded random order the static plans ask (and surrogate's design on a large
// space), the bookkeeping of what a model-guided strategy asked and what it cost, and one
// constructor per strategy, each defined in the strategy's own file (static_plan.cc, anneal.cc,
// surrogate.cc, transfer.cc; auto's in auto.h). Internal to tuner/search: users go through
// MakeSearch.
//
// Costs are log(median_ns): block-size effects are multiplicative (a 10% slower config is
// 10% slower on a fast bucket and a slow one), so differences in log cost are relative
// differences and one temperature / one model scale serves every bucket.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/core/random.h"
#include "tuner/search/search.h"

namespace blocktune::tuner::search {

// The cost of a config that failed (log of no time at all).
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The first `want` positions of a partial Fisher-Yates shuffle of [0, n), with `first` moved
// to the front: a uniform sample without replacement that always includes the default.
std::vector<size_t> RandomOrder(size_t n, std::optional<size_t> first, size_t want, uint64_t seed);

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

// Exhaustive and random: ask `order` (RandomOrder's), in order, whatever they are told.
std::unique_ptr<SearchStrategy> MakeListSearch(std::vector<size_t> order);
// Simulated annealing over the neighbourhood graph (anneal.cc).
std::unique_ptr<SearchStrategy> MakeAnnealSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                 int64_t budget);
// A quadratic model of the log cost with a lower-confidence-bound pick (surrogate.cc).
std::unique_ptr<SearchStrategy> MakeSurrogateSearch(const SearchSpace& space, std::optional<size_t> start,
                                                    uint64_t seed, int64_t budget);
// Other buckets' landscapes ranked by how well they predict this one's (transfer.cc); `prior`
// is copied.
std::unique_ptr<SearchStrategy> MakeTransferSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                   int64_t budget, const SearchPrior& prior);

}  // namespace blocktune::tuner::search
