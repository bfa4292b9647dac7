// The anneal strategy: simulated annealing over the search space's neighbourhood graph, with
// momentum, restarts and a stall rule.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {
namespace {

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

}  // namespace

std::unique_ptr<SearchStrategy> MakeAnnealSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                 int64_t budget) {
  return std::make_unique<AnnealSearch>(space, start, seed, budget);
}

}  // namespace blocktune::tuner::search
