// Best-config lookup over tuned entries and overrides: bucket the problem with the kernel's
// bucket function, then answer by the precedence written once in tables/source.h
// (tables::ByPrecedence), offering all six of its steps: explicit (the caller's config,
// validated), override (this file's Override pins), tuned and tuned_fallback (the same
// IndexView::Resolve a generated header runs, over a tables::RowIndex of the rows), nearest
// (the closest bucket, by the sum of |log2| distances per dim) and default.
// The daemon (rows from SQLite over the checked-in table), the CLI (checked-in table) and
// generated headers (tuned/tuned_fallback/default over constexpr arrays) agree on every row
// they share.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

struct LookupQuery {
  DType dtype = DType::kF32;
  NamedInts dims;
  std::string hardware_key;               // the key of the machine that will run the kernel
  std::optional<Config> explicit_config;  // the caller's own config; answered as `explicit`
  // For a device key (gpu.<vendor>.<arch>.<model>): whether a row of another model of the same
  // architecture may answer as tuned_fallback (gpu.nvidia.sm90.h100 for gpu.nvidia.sm90.h200).
  // Off until `blocktune regret` has measured what it costs (docs/accelerators.md#fallback);
  // never another architecture, vendor or kind.
  bool device_same_arch = false;
};

// A pinned config (the daemon's overrides table).
struct Override {
  int64_t id = 0;
  std::string kernel;
  std::string hardware_key;  // a full key, a prefix of one, or "*" for every machine
  DType dtype = DType::kF32;
  std::string bucket;
  Config config;
  std::string reason;
  std::string expires_at;  // UTC "YYYY-MM-DDTHH:MM:SS.fffZ"; empty: never
};

struct LookupAnswer {
  std::string kernel;
  Config config;
  tables::Source source = tables::Source::kDefault;
  std::string hardware;          // key of the row that answered; the queried key for the default
  std::string queried_hardware;  // the key looked up (the host's at the query's threads if none was given)
  // Levels fallen down the queried key's chain (tables::ChainOf): 0 the key itself (also for
  // explicit), 1 the same CPU model at another thread count, 2 the same vendor and ISA level;
  // for the default the chain's length; for an override, the components the pin's key drops
  // from the queried key ("*": all of them).
  int fallback_levels = 0;
  std::string bucket;          // the query's bucket
  std::string matched_bucket;  // the row's bucket (differs from `bucket` only for nearest)
  double median_ns = 0;        // 0 for the default, explicit and override
  int64_t samples = 0;
  int64_t sweep_id = 0;
  int64_t measurement_id = 0;
  std::string measured_at;
  // The answering row's kernel fingerprint (empty: unknown, or no row answered) and whether it
  // is not this build's (kernels/core/fingerprint.h): a stale row was measured by another
  // build of the kernel. Rows of unknown fingerprint are not stale.
  std::string fingerprint;
  bool stale = false;
  int64_t override_id = 0;  // for source override
  std::string reason;       // for source override
  std::string expires_at;   // for source override
};

// Rows grouped by kernel and bucket version once and indexed (tables::RowIndex), so a lookup
// hashes its way to its kernel's rows and allocates nothing for them. Immutable after
// construction and not copyable (the indexes point into rows_); the daemon swaps whole indexes.
class LookupIndex {
 public:
  LookupIndex() = default;
  LookupIndex(std::vector<TunedEntry> rows, std::vector<Override> overrides);
  LookupIndex(const LookupIndex&) = delete;
  LookupIndex& operator=(const LookupIndex&) = delete;
  const std::vector<TunedEntry>& rows() const { return rows_; }
  const std::vector<Override>& overrides() const { return overrides_; }

  struct RowView {
    std::string_view hardware;
    std::string_view dtype;
    std::string_view bucket;
    const TunedEntry* entry;
  };
  // One kernel's rows of one bucket version, and their index.
  struct KernelRows {
    std::vector<RowView> rows;
    tables::RowIndex index;
  };
  // Null if the kernel has no rows of that bucket version.
  const KernelRows* RowsOf(std::string_view kernel, int bucket_version) const;
  const std::vector<const Override*>& OverridesOf(std::string_view kernel) const;

 private:
  std::vector<TunedEntry> rows_;
  std::vector<Override> overrides_;
  std::map<std::string, std::map<int, KernelRows>, std::less<>> by_kernel_;
  std::map<std::string, std::vector<const Override*>, std::less<>> overrides_by_kernel_;
};

// Errors only for a malformed query (unknown dim, out of range, unsupported dtype, an explicit
// config that does not fit the kernel). `now_utc` ("YYYY-MM-DDTHH:MM:SS.fffZ") hides expired
// overrides; empty means "do not check". `nearest` enables the nearest-bucket step (the
// daemon); without it the answer is exactly what a generated header gives.
Result<LookupAnswer> Lookup(const KernelSpec& spec, const LookupIndex& index, const LookupQuery& query,
                            std::string_view now_utc, bool nearest = true);
// Header-equivalent lookup over plain rows: explicit, tuned, tuned_fallback, default.
Result<LookupAnswer> Lookup(const KernelSpec& spec, const std::vector<TunedEntry>& rows, const LookupQuery& query);

// The current UTC time as "YYYY-MM-DDTHH:MM:SS.fffZ" (the store's timestamp format).
std::string UtcNow();

}  // namespace blocktune::tuner
