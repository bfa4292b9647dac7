// auto's genetic local search: children of the best configs measured so far (tournament,
// uniform crossover, mutation), a mutated child outside the space repaired to the nearest valid
// config that keeps what the mutation drew.
#include <algorithm>
#include <optional>
#include <vector>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {

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
std::optional<size_t> LocalSearch::GeneticAsk() {
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
std::optional<size_t> LocalSearch::Repair(const std::vector<int>& coords, const std::vector<bool>& mutated) const {
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

}  // namespace blocktune::tuner::search
