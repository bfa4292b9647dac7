// The overrides table: pinned configs for (kernel, hardware key or prefix, dtype, bucket),
// served by the resolver ahead of tuned rows with source 'override'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

struct OverrideRecord {
  int64_t id = 0;
  std::string kernel;
  std::string hardware_key;  // a full key or a prefix of one ("x86_64.avx512")
  DType dtype = DType::kF32;
  std::string bucket;
  Config config;
  std::string reason;
  std::string expires_at;  // UTC "YYYY-MM-DDTHH:MM:SS.fffZ"; empty: never
  std::string created_at;
};

class OverridesTable {
 public:
  explicit OverridesTable(Database& db) : db_(db) {}
  // Insert or replace the override for (kernel, hardware_key, dtype, bucket); returns the row.
  Result<OverrideRecord> Upsert(const OverrideRecord& o);
  // not_found for an unknown id.
  Status Delete(int64_t id);
  // Ordered by (kernel, hardware_key, dtype, bucket).
  Result<std::vector<OverrideRecord>> List();

 private:
  Database& db_;
};

}  // namespace blocktune::store
