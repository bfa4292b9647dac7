// Seeded search: a strategy that first measures given configs (what other hardware profiles'
// tuned rows chose for the bucket: SweepSink::Seeds), then hands over to another strategy.
// On a new machine those rows are the best guesses there are (another CPU model's optimum is
// usually within a few percent of this one's, docs/tables.md#regret), so they are worth their
// evaluations before any model has data. The inner strategy never sees a config twice: when it
// asks for one already measured as a seed, it is told the stored observation at once and asked
// again, so seeds cost no extra evaluation and the "no config asked twice" invariant holds.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tuner/search/search.h"

namespace blocktune::tuner::search {

// `seeds` are indices into the inner strategy's space, asked in order (duplicates dropped).
std::unique_ptr<SearchStrategy> MakeSeededSearch(std::unique_ptr<SearchStrategy> inner, std::vector<size_t> seeds);

}  // namespace blocktune::tuner::search
