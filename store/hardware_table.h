// The hardware_profiles table: one row per hardware key a sweep ran on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

struct HardwareRecord {
  int64_t id = 0;
  std::string key;
  HardwareProfile profile;
  std::string first_seen_at;
};

class HardwareTable {
 public:
  explicit HardwareTable(Database& db) : db_(db) {}
  // Inserts the profile or refreshes the row with its key; returns the row id.
  Result<int64_t> Upsert(const HardwareProfile& hw);
  // Ordered by key.
  Result<std::vector<HardwareRecord>> List();

 private:
  Database& db_;
};

}  // namespace blocktune::store
