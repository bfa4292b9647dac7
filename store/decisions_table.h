// The final_rounds table: each bucket's decision round (tuner::FinalRound), the best configs
// and the incumbent re-timed interleaved, which one was chosen and why, and the paired verdict
// that decided it (tuner::Verdict; migration 0017).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/result.h"
#include "store/database.h"
#include "tuner/sweep.h"

namespace blocktune::store {

class DecisionsTable {
 public:
  explicit DecisionsTable(Database& db) : db_(db) {}
  // Replaces the round of (sweep, bucket): a resumed sweep repeats its round.
  Status Record(const tuner::FinalRound& round);
  // not_found when the bucket has no round (yet).
  Result<tuner::FinalRound> Get(int64_t sweep_id, const std::string& bucket);

 private:
  Database& db_;
};

}  // namespace blocktune::store
