// SearchSpace: coordinates, scaling and neighbourhoods of a bucket's valid configs; see space.h.
#include "tuner/search/space.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace blocktune::tuner::search {

SearchSpace::SearchSpace(const std::vector<ParamSpec>& params, std::vector<Config> valid) : configs_(std::move(valid)) {
  for (const auto& p : params) {
    values_.push_back(p.candidates);
    categorical_.push_back(p.categorical);
    by_index_.push_back(p.categorical ||
                        (!p.candidates.empty() && *std::min_element(p.candidates.begin(), p.candidates.end()) < 1));
  }
  coords_.reserve(configs_.size());
  for (size_t i = 0; i < configs_.size(); ++i) {
    std::vector<int> c(params.size(), 0);
    for (size_t d = 0; d < params.size(); ++d) {
      const int64_t v = configs_[i].Get(params[d].name).value_or(0);
      const auto it = std::find(values_[d].begin(), values_[d].end(), v);
      c[d] = static_cast<int>(it - values_[d].begin());
    }
    by_coords_.emplace(c, i);
    coords_.push_back(std::move(c));
  }
}

double SearchSpace::Scaled(size_t i, size_t d) const {
  const auto& v = values_[d];
  const int k = coords_[i][d];
  if (v.size() < 2 || k >= static_cast<int>(v.size())) return 0.5;
  if (by_index_[d]) return static_cast<double>(k) / static_cast<double>(v.size() - 1);
  const auto lg = [](int64_t x) { return std::log2(static_cast<double>(std::max<int64_t>(x, 1))); };
  const double lo = lg(*std::min_element(v.begin(), v.end()));
  const double hi = lg(*std::max_element(v.begin(), v.end()));
  return hi > lo ? (lg(v[static_cast<size_t>(k)]) - lo) / (hi - lo) : 0.5;
}

std::optional<size_t> SearchSpace::Find(const Config& c) const {
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (configs_[i] == c) return i;
  }
  return std::nullopt;
}

std::optional<size_t> SearchSpace::Find(const std::vector<int>& coords) const {
  auto it = by_coords_.find(coords);
  if (it == by_coords_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> SearchSpace::Step(size_t i, size_t d, int dir) const {
  std::vector<int> c = coords_[i];
  while (true) {
    c[d] += dir;
    if (c[d] < 0 || c[d] >= static_cast<int>(values_[d].size())) return std::nullopt;
    if (auto n = Find(c)) return n;
  }
}

std::vector<size_t> SearchSpace::Neighbours(size_t i) const {
  std::vector<size_t> out;
  for (size_t d = 0; d < dims(); ++d) {
    if (categorical_[d]) {
      std::vector<int> c = coords_[i];
      for (int k = 0; k < static_cast<int>(values_[d].size()); ++k) {
        if (k == coords_[i][d]) continue;
        c[d] = k;
        if (auto n = Find(c)) out.push_back(*n);
      }
      continue;
    }
    for (int dir : {-1, +1}) {
      if (auto n = Step(i, d, dir)) out.push_back(*n);
    }
  }
  return out;
}

}  // namespace blocktune::tuner::search
