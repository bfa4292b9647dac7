// auto's Gaussian-process phase: the model of the log times (a Matern 5/2 kernel with ARD
// lengthscales, mixed with an additive kernel at budgets of 100 and more), its fit by marginal
// likelihood, and the asks it answers (expected improvement times P(pass)): the model phase
// and the later model asks of a long search.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "tuner/search/auto_search.h"

namespace blocktune::tuner::search {
namespace {

// Constraint-aware Bayesian optimisation in the manner of BaCO (Hellsten et al., ASPLOS 2023):
// a Gaussian process over the passing configs' log times, and the feasibility model
// (auto_feasibility.cc) for the failing ones; each ask measures the candidate with the highest
// expected improvement times P(pass). The GP has a Matern 5/2 kernel over the scaled
// coordinates with one lengthscale per parameter (ARD): on the convolution landscapes a few parameters (use_shmem,
// the tile sizes) decide most of the time and a shared lengthscale smoothed them away (30
// seeds, budgets 25-200: 0.510 score for one lengthscale fitted by likelihood, 0.573 with ARD,
// both over the whole budget). Lengthscales and noise are fitted by marginal likelihood, one
// round of coordinate search per ask warm-started from the last (each inverse squared
// lengthscale x4, /4 or 0 = irrelevant; noise from {0.001, 0.03, 0.2} of the standardised
// variance): at most 3 + 3 x parameters Cholesky factorisations of n <= 100 points per ask.
// Candidates are every unmeasured config (up to kModelCandidates; beyond that the unmeasured
// neighbours of the 4 best configs and kModelCandidates uniformly drawn ones; below 100
// evaluations those neighbours and kSmallModelCandidates drawn ones). With 400 drawn
// candidates a config that is good but has no good neighbour (dedispersion_W6600's optimum,
// block 32 x 32, sits in a corner of the space its restriction leaves, beside configs at
// 0.91) was offered to the model in 4% of asks, and `auto` ended at 0.995 of the optimum at
// 200-800 evaluations against bayes_opt's 0.998 at 200 (docs/search.md).
//
// At budgets of 100 and more the kernel is a mixture (Duvenaud et al., "Additive Gaussian
// processes", NeurIPS 2011): (1 - w) x the Matern over all parameters + w x the mean over the
// parameters of a Matern over each one alone, w from {0, 0.3, 0.7} by marginal likelihood on
// every ask (additive_share_). The additive part lets configs that share a parameter's value
// inform each other however far apart they are in the others, so a value that is good across
// many configs (a block shape common among the fast ones) is learnt from fewer points. On
// convolution_A100 at 200 evaluations, where the genetic algorithm found the 32 x 4 block
// first and `auto` found the tile and flags first and rarely measured that block, it took
// `auto` from 0.920 to 0.934 (seeds 51-150; the genetic algorithm 0.938), convolution_MI250X
// at 100 from 0.855 to 0.889, and the score over the 48 cells at 100-800 from 0.855 to 0.864
// (50 seeds; docs/search.md, "This round (stop 34)"); it cost convolution_W6600 at 200,
// 0.910 -> 0.891 (seeds 1-150). Below 100 evaluations it is off: 0.518 against 0.543 over the
// 24 cells at 25 and 50, where 3-80 points fit it poorly. A parameter whose lengthscale is
// fitted irrelevant adds a constant to the additive part, as a one-parameter kernel with an
// infinite lengthscale does.
double Matern52(double r2) {
  const double r = std::sqrt(5.0 * r2);
  return (1.0 + r + r * r / 3.0) * std::exp(-r);
}

// Lower-triangular Cholesky factor of the n x n row-major `a`, in place; false when `a` is not
// positive definite.
bool Cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double s = a[j * n + j];
    for (size_t k = 0; k < j; ++k) s -= a[j * n + k] * a[j * n + k];
    if (s <= 0) return false;
    const double l = std::sqrt(s);
    a[j * n + j] = l;
    for (size_t i = j + 1; i < n; ++i) {
      double t = a[i * n + j];
      for (size_t k = 0; k < j; ++k) t -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = t / l;
    }
  }
  return true;
}
// b := L^-1 b and b := L^-T b for the factor L of Cholesky.
void SolveLower(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double t = b[i];
    for (size_t k = 0; k < i; ++k) t -= l[i * n + k] * b[k];
    b[i] = t / l[i * n + i];
  }
}
void SolveUpper(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double t = b[i];
    for (size_t k = i + 1; k < n; ++k) t -= l[k * n + i] * b[k];
    b[i] = t / l[i * n + i];
  }
}

}  // namespace

struct LocalSearch::GpFit {
  double log_likelihood = -kInf;
  std::vector<double> chol;   // Cholesky factor of K + noise I
  std::vector<double> alpha;  // (K + noise I)^-1 y
};
// The points of a fit: `dd` the squared scaled differences of every pair of points per
// parameter, [(a * n + b) * dims + d], and `pair_levels` their levels' index into
// AdditiveTables, la * levels + lb at the same place (filled only when the additive kernel
// is in use).
struct LocalSearch::FitPoints {
  std::vector<double> dd;
  std::vector<uint32_t> pair_levels;
};

// Per parameter, the one-parameter Matern of every pair of its levels under the inverse
// squared lengthscales `inv`, [la * levels + lb] (all zero for a parameter with one level).
std::vector<std::vector<double>> LocalSearch::AdditiveTables(const std::vector<double>& inv) const {
  std::vector<std::vector<double>> t(space_.dims());
  for (size_t d = 0; d < space_.dims(); ++d) {
    const size_t l = space_.levels(d);
    t[d].assign(l * l, 0.0);
    if (l < 2) continue;
    for (size_t a = 0; a < l; ++a) {
      for (size_t b = 0; b < l; ++b) {
        const double diff = level_scaled_[d][a] - level_scaled_[d][b];
        t[d][a * l + b] = Matern52(diff * diff * inv[d]);
      }
    }
  }
  return t;
}
// The kernel between configs a and b under the fitted lengthscales and additive share
// (additive_tables_ holds AdditiveTables(inv_ls2_) when the share is above zero).
double LocalSearch::Kernel(size_t a, size_t b) const {
  const double full = Matern52(ScaledDist2(a, b));
  if (additive_share_ <= 0) return full;
  const std::vector<int>& ca = space_.coords(a);
  const std::vector<int>& cb = space_.coords(b);
  double add = 0;
  for (size_t d = 0; d < space_.dims(); ++d) {
    add += additive_tables_[d][static_cast<size_t>(ca[d]) * space_.levels(d) + static_cast<size_t>(cb[d])];
  }
  return (1 - additive_share_) * full + additive_share_ * add / static_cast<double>(active_dims_);
}
double LocalSearch::ScaledDist2(size_t a, size_t b) const {
  double r2 = 0;
  for (size_t d = 0; d < space_.dims(); ++d) {
    const double diff = Scaled(a, d) - Scaled(b, d);
    r2 += diff * diff * inv_ls2_[d];
  }
  return r2;
}

// The fit for inverse squared lengthscales `inv`, `noise` and additive share `share`.
LocalSearch::GpFit LocalSearch::Fit(const FitPoints& p, const std::vector<double>& inv, double noise, double share,
                                    const std::vector<double>& y) const {
  const size_t n = y.size();
  const size_t dims = space_.dims();
  const std::vector<std::vector<double>> tables = share > 0 ? AdditiveTables(inv) : std::vector<std::vector<double>>();
  GpFit f;
  f.chol.assign(n * n, 0.0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < a; ++b) {
      const size_t at = (a * n + b) * dims;
      double r2 = 0;
      for (size_t d = 0; d < dims; ++d) r2 += p.dd[at + d] * inv[d];
      double k = Matern52(r2);
      if (share > 0) {
        double add = 0;
        for (size_t d = 0; d < dims; ++d) add += tables[d][p.pair_levels[at + d]];
        k = (1 - share) * k + share * add / static_cast<double>(active_dims_);
      }
      f.chol[a * n + b] = f.chol[b * n + a] = k;
    }
    f.chol[a * n + a] = 1.0 + noise;
  }
  if (!Cholesky(f.chol, n)) return f;
  f.alpha = y;
  SolveLower(f.chol, n, f.alpha);
  double ll = 0;
  for (size_t i = 0; i < n; ++i) ll -= 0.5 * f.alpha[i] * f.alpha[i] + std::log(f.chol[i * n + i]);
  SolveUpper(f.chol, n, f.alpha);
  f.log_likelihood = ll;
  return f;
}

// The Gaussian process again late in a long search (LocalAsk: every kLateModelEvery-th ask from
// the kLateModelFrom-th evaluation on), over at most kModelMax of the measured points so
// that an ask costs what a model-phase ask does: the kLateModelBest best passing configs and
// the rest spread evenly over the others in the order they were measured (failures
// included, so the fit still sees where the space fails). Every unmeasured config is a
// candidate, as in the model phase.
std::optional<size_t> LocalSearch::LateModelAsk() {
  if (told_.size() <= static_cast<size_t>(kModelMax)) return ModelAsk(told_);
  std::vector<size_t> pts = BestPassing(kLateModelBest);
  std::vector<bool> in(space_.size(), false);
  for (size_t i : pts) in[i] = true;
  std::vector<size_t> rest;
  for (size_t i : told_) {
    if (!in[i]) rest.push_back(i);
  }
  const size_t want = static_cast<size_t>(kModelMax) - pts.size();
  for (size_t k = 0; k < want && k < rest.size(); ++k) pts.push_back(rest[k * rest.size() / want]);
  return ModelAsk(pts);
}

// An ask of the Gaussian process fitted to the measured configs `pts`.
std::optional<size_t> LocalSearch::ModelAsk(const std::vector<size_t>& pts) {
  // Failed configs enter the fit one standard deviation slower than the slowest passing time
  // (as the surrogate strategy fits them; Kernel Tuner's bayes_opt scores them as the worst):
  // without them the GP sees only the passing edge of a failing
  // region and extrapolates into it. On the test space whose failing eighth borders the best
  // basin (Search.AFailingRegionDrawsFewerEvaluationsThanRandomSearch) EI times P(pass) alone
  // measured 22 failures in 100 evaluations, random search 11.
  const size_t n = pts.size();
  const size_t dims = space_.dims();
  double worst = -kInf;
  double mean = 0;
  for (size_t i : ok_) {
    mean += cost_[i];
    worst = std::max(worst, cost_[i]);
  }
  mean /= static_cast<double>(ok_.size());
  double ok_var = 0;
  for (size_t i : ok_) ok_var += (cost_[i] - mean) * (cost_[i] - mean);
  const double fail_cost = worst + std::sqrt(ok_var / static_cast<double>(ok_.size()));
  std::vector<double> y(n);
  for (size_t k = 0; k < n; ++k) y[k] = std::isfinite(cost_[pts[k]]) ? cost_[pts[k]] : fail_cost;
  double var = 0;
  for (double v : y) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(std::max(var / static_cast<double>(n), 1e-12));
  for (double& v : y) v = (v - mean) / sd;
  FitPoints fp;
  fp.dd.resize(n * n * dims);
  if (!small_) fp.pair_levels.resize(n * n * dims);
  for (size_t a = 0; a < n; ++a) {
    const std::vector<int>& ca = space_.coords(pts[a]);
    for (size_t b = 0; b < a; ++b) {
      const std::vector<int>& cb = space_.coords(pts[b]);
      for (size_t d = 0; d < dims; ++d) {
        const double diff = Scaled(pts[a], d) - Scaled(pts[b], d);
        fp.dd[(a * n + b) * dims + d] = fp.dd[(b * n + a) * dims + d] = diff * diff;
        if (!small_) {
          fp.pair_levels[(a * n + b) * dims + d] =
              static_cast<uint32_t>(static_cast<size_t>(ca[d]) * space_.levels(d) + static_cast<size_t>(cb[d]));
        }
      }
    }
  }
  GpFit best = Fit(fp, inv_ls2_, noise_, additive_share_, y);
  if (!small_) {
    const double was = additive_share_;
    for (double share : {0.0, 0.3, 0.7}) {
      if (share == was) continue;
      if (GpFit f = Fit(fp, inv_ls2_, noise_, share, y); f.log_likelihood > best.log_likelihood) {
        best = std::move(f);
        additive_share_ = share;
      }
    }
  }
  for (double noise : {1e-3, 0.03, 0.2}) {
    if (noise == noise_) continue;
    if (GpFit f = Fit(fp, inv_ls2_, noise, additive_share_, y); f.log_likelihood > best.log_likelihood) {
      best = std::move(f);
      noise_ = noise;
    }
  }
  for (size_t d = 0; d < dims; ++d) {
    const double now = inv_ls2_[d];
    for (double factor : {4.0, 0.25, 0.0}) {
      std::vector<double> inv = inv_ls2_;
      inv[d] = factor == 0.0 ? 0.0 : (now > 0 ? now * factor : 1.0);
      if (inv[d] > 1e4) continue;  // a lengthscale under 1% of the range: no config is that close
      if (GpFit f = Fit(fp, inv, noise_, additive_share_, y); f.log_likelihood > best.log_likelihood + 1e-9) {
        best = std::move(f);
        inv_ls2_ = std::move(inv);
      }
    }
  }
  if (!std::isfinite(best.log_likelihood)) return std::nullopt;  // the local search takes this ask
  if (additive_share_ > 0) {
    additive_tables_ = AdditiveTables(inv_ls2_);
    ++additive_asks_;
  }
  const double y_best = (cost_[*best_] - mean) / sd;
  std::optional<size_t> pick;
  double pick_score = -kInf;
  // Candidates that look feasible, scored in blocks of kBlock: the cross-covariances of a
  // block with the n points are laid out point-major (row k holds every candidate's covariance
  // with point k), so the forward substitution L v = k runs along the candidates, a loop the
  // compiler vectorises, instead of along a dot product it may not reorder. Likely failures
  // are skipped as the local search skips them (LooksFeasible), the rest weighted by P(pass).
  std::vector<size_t> cands;
  std::vector<double> pass;
  for (size_t c : ModelCandidates()) {
    const double p_fail = FailProbability(c);
    if (p_fail >= 0.5 && p_fail > BaseFailRate()) continue;
    cands.push_back(c);
    pass.push_back(1.0 - p_fail);
  }
  constexpr size_t kBlock = 64;
  std::vector<double> v(n * kBlock);
  std::vector<double> mu(kBlock);
  std::vector<double> s2(kBlock);
  for (size_t first = 0; first < cands.size(); first += kBlock) {
    const size_t m = std::min(kBlock, cands.size() - first);
    std::fill(mu.begin(), mu.end(), 0.0);
    std::fill(s2.begin(), s2.end(), 1.0);
    for (size_t k = 0; k < n; ++k) {
      double* row = &v[k * kBlock];
      for (size_t j = 0; j < m; ++j) {
        row[j] = Kernel(cands[first + j], pts[k]);
        mu[j] += row[j] * best.alpha[k];
      }
    }
    for (size_t i = 0; i < n; ++i) {
      double* row = &v[i * kBlock];
      for (size_t k = 0; k < i; ++k) {
        const double l = best.chol[i * n + k];
        const double* prev = &v[k * kBlock];
        for (size_t j = 0; j < m; ++j) row[j] -= l * prev[j];
      }
      const double inv = 1.0 / best.chol[i * n + i];
      for (size_t j = 0; j < m; ++j) {
        row[j] *= inv;
        s2[j] -= row[j] * row[j];
      }
    }
    for (size_t j = 0; j < m; ++j) {
      const double sd_j = std::sqrt(std::max(s2[j], 1e-12));
      const double z = (y_best - mu[j]) / sd_j;
      const double ei = sd_j * (z * 0.5 * std::erfc(-z / std::numbers::sqrt2) +
                                std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi));
      const double score = ei * pass[first + j];
      if (score > pick_score) {
        pick_score = score;
        pick = cands[first + j];
      }
    }
  }
  return pick;
}

std::vector<size_t> LocalSearch::ModelCandidates() {
  // The 4 best configs' unmeasured neighbours come first, so that they win ties. Equal scores
  // are common: configs that differ only in parameters whose fitted lengthscale is infinite
  // (irrelevant so far) have the same mean and variance, and the first maximum is picked. On
  // the six convolution landscapes at 100 and 200 evaluations (150 seeds, methodology score)
  // ties to the best's neighbours, then space order, scored 0.671; a uniform pick among the
  // tied 0.656, the tied config nearest the best 0.645, and space order alone lost
  // convolution_W7800 at 100 (0.918 against 0.941).
  std::vector<size_t> cand;
  for (size_t best : BestPassing(4)) {
    for (size_t nb : space_.Neighbours(best)) {
      if (!asked_[nb]) cand.push_back(nb);
    }
  }
  const size_t left = space_.size() - static_cast<size_t>(asked_count_);
  const size_t drawn = small_ ? kSmallModelCandidates : kModelCandidates;
  if (left <= drawn) {
    for (size_t i = 0; i < space_.size(); ++i) {
      if (!asked_[i]) cand.push_back(i);
    }
  } else {
    for (size_t k = 0; k < drawn; ++k) cand.push_back(RandomUnasked(left));
  }
  return cand;
}

}  // namespace blocktune::tuner::search
