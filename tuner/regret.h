// Regret of the fallback levels: for each bucket, what every level of a hardware key's chain
// WOULD serve on this host (the row of the exact key, of the same CPU model at another thread
// count, of another model of the same vendor and ISA level, and the rows of another vendor or
// ISA level that the old chain, which dropped key components down to the architecture, used to
// borrow), timed here against the kernel's default config and against the best of them, all
// configs of a bucket in one interleaved round (Evaluator::MeasureInterleaved, the sweep's
// decision-round timing). `blocktune regret` prints it; docs/tables.md records what it showed
// and the chain rule it supports.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

// Where a row's key sits relative to the queried key, most specific first. kOtherVendor and
// kOtherIsa are not on the current chain (tables::ChainOf); they are measured to show why.
enum class RegretLevel { kExact, kOtherThreads, kOtherModel, kOtherVendor, kOtherIsa, kDefault };
inline constexpr int kRegretLevels = 6;
std::string_view RegretLevelName(RegretLevel level);
// True for the levels the current chain serves from (exact, other_threads, other_model).
bool OnCurrentChain(RegretLevel level);

// The level of a row filed under `row_key` for a lookup of `host_key`; nullopt for a row of
// another architecture (or a key the host's key does not share even its first component with).
std::optional<RegretLevel> RegretLevelOf(std::string_view host_key, std::string_view row_key);

struct RegretCandidate {
  RegretLevel level = RegretLevel::kDefault;
  std::string hardware;  // the row's key; empty for the default
  Config config;
  // The row a chain stopping at this level would serve (the smallest key of the level, as
  // tables::BuildIndex ties a choice); the per-level summary counts these only. The default: true.
  bool served = false;
};

struct RegretBucketPlan {
  std::string bucket;
  Problem problem;                          // the bucket's representative problem (what is timed)
  std::vector<RegretCandidate> candidates;  // the default first, then by level and key
};

// For each bucket (every bucket of `rows` for this kernel, dtype and bucket version if `buckets`
// is empty): the default and every row on some level of `host_key`. Errors name a bucket the
// kernel cannot parse.
Result<std::vector<RegretBucketPlan>> PlanRegret(const KernelSpec& spec, const std::vector<TunedEntry>& rows,
                                                 std::string_view host_key, DType dtype,
                                                 const std::vector<std::string>& buckets);

struct RegretRow {
  RegretCandidate candidate;
  Outcome outcome = Outcome::kOk;  // kInvalid: the kernel refuses the config on this host
  std::string detail;              // why, for a bad outcome
  double median_ns = 0;
  double cv = 0;                  // robust CV of the interleaved repetitions
  double speedup_vs_default = 0;  // default median / this median (1 for the default itself)
  double regret_vs_best = 0;      // this median / the bucket's best median - 1 (0: the best)
  // Against the default, paired as the decision round judges a pair (timing/paired.h): 1 -
  // the median of the per-cycle ratios this / default, and the band of that pair.
  double paired_gain = 0;
  double noise_band = 0;
  // |paired_gain| beyond noise_band: faster (gain > 0) or slower than the default for real.
  bool beyond_noise = false;
};

struct RegretBucket {
  std::string bucket;
  std::vector<RegretRow> rows;  // in plan order: the default first
  double best_ns = 0;           // lowest median of the bucket's passing rows
};

struct RegretLevelSummary {
  RegretLevel level = RegretLevel::kDefault;
  int buckets = 0;             // buckets where the level served a row that ran
  double geomean_speedup = 0;  // over those buckets, vs the default
  double worst_speedup = 0;
  std::string worst_bucket;
  double mean_regret = 0;  // vs each bucket's best
  double max_regret = 0;
  int slower_beyond_noise = 0;  // buckets where it is slower than the default beyond the noise
  int faster_beyond_noise = 0;
  int refused = 0;  // buckets where the served row did not run (invalid, failed)
};

struct RegretReport {
  std::string hardware;  // the key looked up
  int threads = 1;
  std::vector<RegretBucket> buckets;
  std::vector<RegretLevelSummary> summary;  // levels with at least one served row, in level order
};

// Validates every candidate on `hw`, verifies it against the reference, then times the passing
// ones of each bucket interleaved (identical configs once) and fills the ratios.
RegretReport MeasureRegret(const KernelSpec& spec, const std::vector<RegretBucketPlan>& plan, const HardwareProfile& hw,
                           Evaluator& evaluator, const timing::TimingOptions& timing, double min_noise_band);

// The per-level summary of measured buckets (served rows only).
std::vector<RegretLevelSummary> SummarizeRegret(const std::vector<RegretBucket>& buckets);

// Bucket ids from a file's text: one per line; blank lines and '#' comments are skipped.
std::vector<std::string> ParseBucketList(std::string_view text);

}  // namespace blocktune::tuner
