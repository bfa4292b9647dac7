// The tuned_entries table: the winning config per (kernel, hardware key, dtype, bucket), with
// the sweep and measurement it came from. `blocktune tables generate --db` exports it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"
#include "tuner/sweep.h"

namespace blocktune::store {

class TunedTable {
 public:
  explicit TunedTable(Database& db) : db_(db) {}
  // Inserts or replaces the row with the entry's key.
  Status Upsert(const tuner::TunedEntry& e);
  Result<std::optional<tuner::TunedEntry>> Get(const std::string& kernel, const std::string& hardware_key, DType dtype,
                                               const std::string& bucket);
  // Ordered by (kernel, hardware_key, dtype, bucket); empty kernel = all kernels.
  Result<std::vector<tuner::TunedEntry>> List(const std::string& kernel = {});

 private:
  Database& db_;
};

}  // namespace blocktune::store
