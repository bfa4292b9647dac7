// The winner of a pool: every measurement of one (kernel, dtype, hardware key, bucket) from
// every sweep and every host with that key. ResultsTable::Apply never copies a sender's winner;
// it recomputes the tuned entry of every bucket a batch touched from the whole pool with this.
#pragma once

#include <optional>
#include <vector>

#include "tuner/measurement.h"

namespace blocktune::store {

// A config is out if any of its measurements failed verification or did not run
// (crashed, nan, wrong_result, invalid, out_of_memory, worker_lost, compile_failed,
// runtime_failed); the others with at least
// one ok measurement compete on the median of all their ok samples pooled (hosts with one
// hardware key are one machine type). Lowest median wins, ties by config string. The entry's
// measurement is the chosen config's ok measurement with the lowest median.
std::optional<tuner::TunedEntry> PoolWinner(const std::vector<tuner::Measurement>& pool);

}  // namespace blocktune::store
