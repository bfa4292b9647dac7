// auto's feasibility model: the probability that a config fails (fails to compile, is refused
// by its runner, or produces wrong results), from the measured configs near it, and the random
// picks and skip rule that read it. Every phase of auto asks it before measuring a config.
#include <cmath>
#include <optional>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {
namespace {

// P(config i fails): a kernel-weighted vote of the measured configs near it (Gaussian in the
// scaled coordinates, mean squared difference per parameter, variance 0.02: a one-level move
// of a 4-level parameter among 7 weighs 0.67, a random far config under 0.011 and is left
// out), shrunk towards the failure rate seen so far with the weight of one config. Two failing
// neighbours and no passing one put a config at ~0.6. Variance 0.01 (the first version) let
// the local search that follows the model phase step into a failing region bordering the best
// basin once per missing vote: 6.8 failures in 100 evaluations on the test space against
// random search's 11.3, 0.02 measured 6.5 there and scored 0.601 against 0.591 on the GPU
// landscapes (30 seeds, budgets 25-200, docs/search.md).
constexpr double kFailVariance = 0.02;

}  // namespace

double LocalSearch::FailProbability(size_t i) const {
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
    if (d2 > 9 * kFailVariance) continue;  // weight < exp(-4.5) = 0.011
    const double w = std::exp(-d2 / (2 * kFailVariance));
    den += w;
    if (!std::isfinite(cost_[m])) num += w;
  }
  return num / den;
}
double LocalSearch::BaseFailRate() const {
  return (static_cast<double>(failed_) + 0.5) / (static_cast<double>(told_.size()) + 1.0);
}
// Worth measuring: below even odds of failing, or no likelier to fail than a random config
// (when most of the space fails, e.g. an import without its restrictions, the search still
// has to measure something: it picks the least suspicious).
bool LocalSearch::LooksFeasible(size_t i) {
  const double p = FailProbability(i);
  const bool ok = p < 0.5 || p <= BaseFailRate();
  if (!ok) ++skipped_;
  return ok;
}

// A uniformly random unasked config; of up to 16 draws the first that looks feasible, else

// the least likely to fail.
std::optional<size_t> LocalSearch::RandomFeasible() {
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
size_t LocalSearch::RandomUnasked(size_t left) {
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

}  // namespace blocktune::tuner::search
