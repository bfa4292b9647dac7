// The transfer strategy: other buckets' measured landscapes, weighted by how alike their problems
// are and by how well they order what this bucket measures, rank the configs to measure next.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {
namespace {

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
      fallback_ = MakeSurrogateSearch(space, start, seed, budget);
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
      fallback_ = MakeSurrogateSearch(space, start, seed, budget);
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

std::unique_ptr<SearchStrategy> MakeTransferSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed,
                                                   int64_t budget, const SearchPrior& prior) {
  return std::make_unique<TransferSearch>(space, start, seed, budget, prior);
}

}  // namespace blocktune::tuner::search
