// The strategy registry: each strategy's default budget and MakeSearch, which builds the strategy
// a sweep asked for (each is defined in its own file; strategies.h lists them); see search.h.
#include "tuner/search/search.h"

#include <algorithm>

#include "tuner/search/auto.h"
#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {

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
    case Strategy::kRandom: return MakeListSearch(RandomOrder(space.size(), start, space.size(), seed));
    case Strategy::kAnneal: return MakeAnnealSearch(space, start, seed, budget);
    case Strategy::kSurrogate: return MakeSurrogateSearch(space, start, seed, budget);
    case Strategy::kTransfer: return MakeTransferSearch(space, start, seed, budget, prior);
    case Strategy::kAuto:
      switch (ChooseAutoPlan(space, budget, prior)) {
        case AutoPlan::kSurrogate: return MakeSurrogateSearch(space, start, seed, budget);
        case AutoPlan::kPrior: return MakeLocalSearch(space, start, seed, budget, prior);
        case AutoPlan::kLocal: return MakeLocalSearch(space, start, seed, budget, {});
      }
      return nullptr;
  }
  return nullptr;
}

}  // namespace blocktune::tuner::search
