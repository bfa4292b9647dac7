// The helpers the strategies share; see strategies.h.
#include "tuner/search/strategies.h"

#include <utility>

namespace blocktune::tuner::search {

std::vector<size_t> RandomOrder(size_t n, std::optional<size_t> first, size_t want, uint64_t seed) {
  std::vector<size_t> pool;
  pool.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!first || i != *first) pool.push_back(i);
  }
  std::vector<size_t> out;
  if (first && want > 0) out.push_back(*first);
  SplitMix64 rng(seed);
  for (size_t i = 0; out.size() < want && i < pool.size(); ++i) {
    const size_t j = i + rng.Below(pool.size() - i);
    std::swap(pool[i], pool[j]);
    out.push_back(pool[i]);
  }
  return out;
}

}  // namespace blocktune::tuner::search
