// The static plans of exhaustive and random: a list computed up front (RandomOrder), asked in
// order whatever the measurements say; and PlanConfigs, the same lists as configs for a sweep's
// plan (search.h).
#include <optional>
#include <utility>
#include <vector>

#include "tuner/search/strategies.h"

namespace blocktune::tuner::search {
namespace {

class ListSearch final : public SearchStrategy {
 public:
  explicit ListSearch(std::vector<size_t> order) : order_(std::move(order)) {}
  std::optional<size_t> Ask() override {
    if (next_ >= order_.size()) return std::nullopt;
    return order_[next_++];
  }
  void Tell(size_t, const Observation&) override {}

 private:
  std::vector<size_t> order_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeListSearch(std::vector<size_t> order) {
  return std::make_unique<ListSearch>(std::move(order));
}

std::vector<Config> PlanConfigs(const std::vector<Config>& valid_space, const Config& default_config, Strategy strategy,
                                int64_t budget, uint64_t seed) {
  std::optional<size_t> first;
  for (size_t i = 0; i < valid_space.size(); ++i) {
    if (valid_space[i] == default_config) first = i;
  }
  const auto want = static_cast<size_t>(
      EvaluationBudget(strategy == Strategy::kExhaustive ? strategy : Strategy::kRandom, budget, valid_space.size()));
  std::vector<Config> plan;
  for (size_t i : RandomOrder(valid_space.size(), first, want, seed)) plan.push_back(valid_space[i]);
  return plan;
}

}  // namespace blocktune::tuner::search
