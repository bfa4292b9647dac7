// Seeded search; see seeded.h.
#include "tuner/search/seeded.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

namespace blocktune::tuner::search {
namespace {

class SeededSearch final : public SearchStrategy {
 public:
  SeededSearch(std::unique_ptr<SearchStrategy> inner, std::vector<size_t> seeds) : inner_(std::move(inner)) {
    for (size_t s : seeds) {
      if (std::find(seeds_.begin(), seeds_.end(), s) == seeds_.end()) seeds_.push_back(s);
    }
  }

  std::optional<size_t> Ask() override {
    if (next_seed_ < seeds_.size()) {
      last_was_seed_ = true;
      return seeds_[next_seed_++];
    }
    last_was_seed_ = false;
    // The inner strategy's turn: answer what it asks that is already known, then pass on the
    // first config it asks that is new.
    for (;;) {
      const std::optional<size_t> i = inner_->Ask();
      if (!i) return std::nullopt;
      const auto known = observed_.find(*i);
      if (known == observed_.end()) return i;
      inner_->Tell(*i, known->second);
    }
  }

  void Tell(size_t index, const Observation& observation) override {
    observed_[index] = observation;
    if (last_was_seed_) {
      ++seeds_told_;
      if (observation.ok) ++seeds_ok_;
      return;
    }
    inner_->Tell(index, observation);
  }

  std::string Explain() const override {
    std::string text = "measured first " + std::to_string(seeds_told_) + " config(s) other profiles' rows chose (" +
                       std::to_string(seeds_ok_) + " ran)";
    const std::string inner = inner_->Explain();
    return inner.empty() ? text : text + "; " + inner;
  }

 private:
  std::unique_ptr<SearchStrategy> inner_;
  std::vector<size_t> seeds_;
  size_t next_seed_ = 0;
  bool last_was_seed_ = false;              // whether the config last asked (the one told next) was a seed
  std::map<size_t, Observation> observed_;  // every config measured so far, seeds or the inner's
  int seeds_told_ = 0;
  int seeds_ok_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeSeededSearch(std::unique_ptr<SearchStrategy> inner, std::vector<size_t> seeds) {
  return std::make_unique<SeededSearch>(std::move(inner), std::move(seeds));
}

}  // namespace blocktune::tuner::search
