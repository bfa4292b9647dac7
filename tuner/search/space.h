// The search space of one bucket: its valid configs as coordinates on the kernel's parameter
// lists, scaled for the models, and the neighbourhood graph the local strategies walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/kernel_spec.h"

namespace blocktune::tuner::search {

// A bucket's valid configs with their coordinates: the index of each parameter's value in the
// kernel's candidate list. Neighbours are configs one parameter away, moved to the next valid
// value up or down its list (skipping values that are invalid for this bucket, so a
// constrained space stays connected).
class SearchSpace {
 public:
  SearchSpace() = default;
  // `valid` must contain only configs drawn from `params`' candidates.
  SearchSpace(const std::vector<ParamSpec>& params, std::vector<Config> valid);

  size_t size() const { return configs_.size(); }
  const Config& config(size_t i) const { return configs_[i]; }
  const std::vector<Config>& configs() const { return configs_; }
  const std::vector<int>& coords(size_t i) const { return coords_[i]; }
  size_t dims() const { return values_.size(); }
  // Candidate count of parameter d.
  size_t levels(size_t d) const { return values_[d].size(); }
  // log2 of config i's value of parameter d, scaled to [0, 1] over the candidate range.
  double Scaled(size_t i, size_t d) const;
  std::optional<size_t> Find(const Config& c) const;
  std::optional<size_t> Find(const std::vector<int>& coords) const;
  // The nearest valid config from i moving parameter d in direction `dir` (-1 or +1) with the
  // other parameters fixed; nullopt at the end of the list.
  std::optional<size_t> Step(size_t i, size_t d, int dir) const;
  // Up to 2 * dims() neighbours, in (parameter, down, up) order; for a categorical parameter
  // every other value (with the rest fixed) that is valid.
  std::vector<size_t> Neighbours(size_t i) const;

 private:
  std::vector<std::vector<int64_t>> values_;
  // Per parameter: unordered values (ParamSpec::categorical) are modelled by their index and
  // every other value is a neighbour; ordered values below 1 (a 0/1 flag not marked
  // categorical) are modelled by index too, since log2 cannot tell them apart.
  std::vector<bool> categorical_;
  std::vector<bool> by_index_;
  std::vector<Config> configs_;
  std::vector<std::vector<int>> coords_;
  std::map<std::vector<int>, size_t> by_coords_;
};

}  // namespace blocktune::tuner::search
