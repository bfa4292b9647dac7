// The lookup_misses table (migration 0009): per (kernel, dtype, hardware key, bucket), how many
// lookups were answered by a fallback (tuned_fallback, nearest) or the kernel's default rather
// than a row tuned for exactly that key and bucket. The daemon counts in memory and adds here in
// batches (server/misses.h); GET /v1/misses and `blocktune sweep --from-misses` read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

// Counts for one (kernel, dtype, hardware_key, bucket) over some interval.
struct MissCount {
  std::string kernel;
  DType dtype = DType::kF32;
  std::string hardware_key;  // the key the lookups asked for
  std::string bucket;
  NamedInts dims;             // a problem in the bucket (the first counted)
  int64_t fallback = 0;       // answered tuned_fallback
  int64_t nearest = 0;        // answered nearest
  int64_t defaulted = 0;      // answered default
  std::string first_seen_at;  // UTC "YYYY-MM-DDTHH:MM:SS.fffZ"
  std::string last_seen_at;
  int64_t count() const { return fallback + nearest + defaulted; }
};

struct MissRecord {
  int64_t id = 0;
  MissCount counts;
};

struct MissFilter {
  std::string kernel;           // empty: every kernel
  std::string hardware_prefix;  // a key or a prefix of one (whole components); empty: every key
  int64_t offset = 0;
  int64_t limit = 100;
};

class MissesTable {
 public:
  explicit MissesTable(Database& db) : db_(db) {}
  // Adds every entry's counts to its row (creating it) in one transaction; a row keeps the dims
  // it was created with, the earliest first_seen_at and the latest last_seen_at.
  Status Add(const std::vector<MissCount>& batch);
  // Most counted first (ties: oldest row first).
  Result<std::vector<MissRecord>> List(const MissFilter& filter);

 private:
  Database& db_;
};

}  // namespace blocktune::store
