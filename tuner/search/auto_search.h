// The `auto` strategy's search (MakeLocalSearch, auto.h) as one class whose phases live in their
// own files: auto.cc the schedule (Ask, Tell and which phase takes an ask), auto_model.cc the
// Gaussian-process phase, auto_genetic.cc the genetic local search, auto_walk.cc the iterated
// local search and its restarts, auto_feasibility.cc the model of which configs fail,
// auto_prior.cc the search steered by other landscapes. They share one state (what was asked,
// what it cost, the incumbent, the fitted lengthscales), declared here. Internal to tuner/search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/random.h"
#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {

class LocalSearch final : public SearchStrategy {
 public:
  LocalSearch(const SearchSpace& space, std::optional<size_t> start, uint64_t seed, int64_t budget,
              const SearchPrior& prior);

  std::optional<size_t> Ask() override;
  void Tell(size_t index, const Observation& observation) override;
  std::string Explain() const override;

 private:
  struct Direction {
    size_t dim;
    int dir;
  };

  double Uniform() { return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53; }
  double Scaled(size_t i, size_t d) const { return scaled_[i * space_.dims() + d]; }

  // auto.cc: helpers every phase uses, and the schedule.
  std::vector<size_t> BestPassing(size_t k) const;
  std::vector<int> Crossover(size_t a, size_t b);
  std::optional<size_t> LocalAsk();

  // auto_feasibility.cc
  double FailProbability(size_t i) const;
  double BaseFailRate() const;
  bool LooksFeasible(size_t i);
  std::optional<size_t> RandomFeasible();
  size_t RandomUnasked(size_t left);

  // auto_model.cc
  struct GpFit;
  struct FitPoints;
  std::vector<std::vector<double>> AdditiveTables(const std::vector<double>& inv) const;
  double Kernel(size_t a, size_t b) const;
  double ScaledDist2(size_t a, size_t b) const;
  GpFit Fit(const FitPoints& p, const std::vector<double>& inv, double noise, double share,
            const std::vector<double>& y) const;
  std::optional<size_t> LateModelAsk();
  std::optional<size_t> ModelAsk(const std::vector<size_t>& pts);
  std::vector<size_t> ModelCandidates();

  // auto_genetic.cc
  std::optional<size_t> GeneticAsk();
  std::optional<size_t> Repair(const std::vector<int>& coords, const std::vector<bool>& mutated) const;

  // auto_walk.cc
  double Predict(size_t i) const;
  std::optional<size_t> NextNeighbour(size_t from, bool by_prior);
  std::optional<size_t> Restart(bool random);

  // auto_prior.cc
  void SetPrior(const SearchPrior& prior);
  void NoteMisranks(size_t j);
  double LogWeight(size_t b) const;
  void UpdateWeights();
  double PriorPredict(size_t i) const;
  std::optional<size_t> PriorAsk();

  const SearchSpace& space_;
  std::optional<size_t> start_;
  SplitMix64 rng_;
  int64_t budget_;
  std::vector<bool> asked_;
  std::vector<double> cost_;  // log median; +inf failed; NaN not measured
  int64_t asked_count_ = 0;
  std::vector<size_t> told_;
  std::vector<size_t> ok_;
  int64_t failed_ = 0;
  int64_t skipped_ = 0;
  double total_ = 0;  // sum of the finite log costs
  std::vector<double> scaled_;
  std::vector<std::vector<double>> level_sum_;
  std::vector<std::vector<double>> level_count_;
  std::optional<size_t> best_;
  std::optional<size_t> current_;
  std::optional<Direction> momentum_;
  bool restart_pending_ = false;
  int64_t init_left_ = 0;
  int64_t stall_limit_ = 0;
  // Gaussian-process phase.
  static constexpr int64_t kModelMax = 100;
  // The additive part of the kernel (auto_model.cc, Matern52's comment): its share, chosen per
  // ask, the tables of the last fit, how many asks used it, and per parameter each level's scaled
  // coordinate.
  double additive_share_ = 0;
  std::vector<std::vector<double>> additive_tables_;
  int64_t additive_asks_ = 0;
  std::vector<std::vector<double>> level_scaled_;
  size_t active_dims_ = 0;
  // Every config of the GPU landscapes' spaces (4,362-17,956): at 60-100 measured points an ask
  // scores dedispersion's 11,130 in 10-20 ms (simulate), nothing beside a compile and a benchmark.
  static constexpr size_t kModelCandidates = 20000;
  // Budgets under 100 (small_) are planned apart, each rule measured against the one before it
  // (200 seeds, the twelve GPU landscapes at 25 and 50 evaluations, mean methodology score):
  // 3 random configs instead of a tenth of the budget and the model for 80% of the budget
  // instead of 60%, 0.530 against 0.497 (convolution_W7800 at 50: 0.816 -> 0.861,
  // dedispersion 0.661 -> 0.690); the model's candidates 400 drawn configs and the 4 best's
  // neighbours, not every config, 0.530 against 0.516: with 3-40 points the fitted lengthscales
  // are rough, and the maximum of expected improvement over all 4,362-11,130 configs lands on
  // the model's errors more often than the maximum over a sample does (convolution_A6000 at 25:
  // 0.740 against 0.719; dedispersion_W6600 gains, 0.960 -> 0.983). At 100-200 evaluations
  // every config wins: 0.770 against 0.759 (50 seeds), convolution_W6600 at 200 0.866 -> 0.911
  // (150 seeds).
  static constexpr size_t kSmallModelCandidates = 400;
  // Later model asks (LateModelAsk). dedispersion_W6600's corner optimum (see ModelCandidates)
  // is out of reach of the children and walks: 4 of 50 seeds ended at its 0.988 config at 400
  // and at 800 evaluations, where each of bayes_opt's runs found it. Screened on 50 seeds
  // (docs/search.md): every fifth ask after the model phase at budgets of 400 and more found it
  // in 49 and 50 of 50 seeds but took the asks that find other needles: convolution_W6600 at 400
  // 0.955 -> 0.945, dedispersion_A100 at 400 0.99928 -> 0.99872, each below the best peer;
  // the same outside walk episodes 0.949 on W6600; only after 40 evaluations without
  // improvement (every third ask) 46 of 50 on dedispersion_W6600 at 400, no gain; 2,000 drawn
  // candidates instead of every config 48 and 49 of 50; from the 300th or 200th evaluation on,
  // 46 and 47 of 50 at 400. From the 400th evaluation on (kept),
  // dedispersion_W6600 at 800 finds it in 50 of 50 and nothing at 400 and below changes;
  // over the twelve landscapes at 800 the mean best/optimum is 0.99975 -> 0.99952
  // (convolution_W6600 0.9986 -> 0.9946, one seed of 50 left on its 0.83 plateau; dedispersion
  // W6600 and W7800 0.9988 / 0.9998 -> 1.0000).
  static constexpr int64_t kLateModelFrom = 400;
  static constexpr int64_t kLateModelEvery = 5;
  static constexpr size_t kLateModelBest = 50;
  int64_t late_turn_ = 0;
  int64_t late_asks_ = 0;
  bool small_ = false;
  int64_t model_until_ = 0;
  double noise_ = 0.03;          // of the standardised variance
  std::vector<double> inv_ls2_;  // per parameter, 1 / lengthscale^2
  int64_t last_improvement_ = 0;
  int64_t restarts_ = 0;
  // Genetic local search.
  static constexpr size_t kGeneticPopulation = 20;
  // Below 100 evaluations the phase after the model has 10-20 asks, under a population's worth:
  // at 25 and 50 the genetic phase measured worse than the walk from the best (50 seeds, the
  // twelve landscapes: convolution_A4000 0.775 / 0.848 against 0.804 / 0.901, convolution_MI250X
  // 0.485 against 0.549 at 25), so there the iterated local search runs as before.
  static constexpr int64_t kGeneticMinBudget = 100;
  static constexpr int64_t kLocalEvery = 3;
  // Why alternate (docs/search.md, 30 seeds, the six convolution landscapes at 100-800
  // evaluations, methodology score): the genetic phase alone 0.795; switching to the walk for
  // good after 80 evaluations without improvement 0.811 (convolution_W6600 at 400: 0.900 ->
  // 0.974, but convolution_MI250X 1.000 -> 0.988, where the population's last step comes late);
  // after 40, 0.776; taking turns after 80, 0.812, after 60, 0.815 (kept 80: at 200 evaluations
  // convolution_MI250X 0.988 against 0.976); dedispersion unchanged (0.905 both). Counting the
  // stall from the model's last find started episodes at 200 evaluations with under 80 left:
  // convolution_MI250X at 200 fell 0.993 -> 0.983 (50 seeds); counted from the genetic phase's
  // start and with 80 left, 200 is as before and 400-800 keep the gain. On W6600 the
  // population fills with a large plateau at 0.83 of the optimum; the four configs within 1% of
  // it are found by a walk from a random start that lands near them.
  static constexpr int64_t kGeneticStall = 80;
  bool walking_ = false;
  int64_t walks_ = 0;
  int64_t genetic_start_ = 0;
  int64_t genetic_turn_ = 0;
  int64_t children_ = 0;
  int64_t repaired_ = 0;  // children Repair moved into the space
  // Prior.
  bool prior_active_ = false;
  int64_t prior_turn_ = 0;
  std::vector<double> log_prior_;
  static constexpr double kMisrankWeight = 20.0;
  static constexpr int64_t kPriorFirst = 40;
  std::vector<int64_t> misranked_;
  std::vector<int64_t> compared_;
  std::vector<double> weights_;
  std::vector<std::vector<double>> relative_;  // [landscape][config] relative log cost, inf if not passing there
};

}  // namespace blocktune::tuner::search
