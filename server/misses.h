// MissCounter: the daemon's in-memory count of lookups answered by a fallback (tuned_fallback,
// nearest) or the default, per (kernel, dtype, hardware key asked for, bucket). The lookup
// handlers call Count with the answer's source; it returns at once for every other source, and
// for a miss takes one of 16 shard locks for a hash-map update, so lookups never wait on each
// other's misses, on a flush or on SQLite. The service's flusher thread Takes the counts every
// few seconds (and at shutdown) and adds them to the store in one transaction
// (store::MissesTable), so no lookup writes to the database.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "store/misses_table.h"

namespace blocktune::server {

// True for the sources that mean "no row tuned for exactly this key and bucket".
constexpr bool IsMiss(tables::Source s) {
  return s == tables::Source::kTunedFallback || s == tables::Source::kNearest || s == tables::Source::kDefault;
}

class MissCounter {
 public:
  // At most `max_pending` distinct (kernel, dtype, key, bucket) between two Takes; lookups for
  // further ones are not counted (dropped() says how many), so a client inventing hardware keys
  // cannot grow the daemon's memory without bound.
  explicit MissCounter(size_t max_pending = 10000) : max_per_shard_((max_pending + kShards - 1) / kShards) {}

  // Counts one answer if `source` is a miss. `dims` is kept only for the first lookup of a key.
  void Count(std::string_view kernel, DType dtype, std::string_view hardware_key, std::string_view bucket,
             tables::Source source, const NamedInts& dims);

  // Everything counted since the last Take, timestamps as UTC text; the counter is left empty.
  std::vector<store::MissCount> Take();
  // Lookups not counted because the pending set was full, since start.
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  struct Pending {
    store::MissCount counts;  // timestamps filled in by Take
    std::chrono::system_clock::time_point first;
    std::chrono::system_clock::time_point last;
  };
  struct alignas(64) Shard {
    std::mutex mu;
    std::unordered_map<std::string, Pending> pending;
  };

  const size_t max_per_shard_;
  std::array<Shard, kShards> shards_;
  std::atomic<int64_t> dropped_{0};
};

// A stored miss and the source a lookup of its bucket on its key gets now (tuned once a sweep
// has covered it). What GET /v1/misses lists (server/wire/misses.cc).
struct MissView {
  store::MissRecord miss;
  tables::Source current = tables::Source::kDefault;
};

// "YYYY-MM-DDTHH:MM:SS.fffZ", the store's timestamp format.
std::string UtcText(std::chrono::system_clock::time_point t);

}  // namespace blocktune::server
