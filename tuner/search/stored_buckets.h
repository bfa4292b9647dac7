// Stored landscapes: every config of a bucket as an exhaustive sweep measured it, the oracle that
// `blocktune simulate` replays strategies against (simulate.h) and that two sweeps' choices are
// judged by (agreement.h).
//
// Stored data travel as tab-separated lines (kernel, hardware, dtype, bucket, config, outcome,
// median_ns), the form checked in under tests/data/ for the simulation test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/measurement.h"

namespace blocktune::tuner::search {

// The detail prefix of an `invalid` outcome for a config that ran but timed faster than
// physics allows (see timing/floor.h): it passed validation, so it belongs to the search space.
inline constexpr std::string_view kBelowFloorDetail = "below physical floor";

struct StoredConfig {
  Config config;
  Outcome outcome = Outcome::kOk;
  std::string detail;
  double median_ns = 0;  // when ok
};

// Every config of one (kernel, hardware, dtype, bucket) from one exhaustive sweep.
struct StoredBucket {
  std::string kernel;
  std::string hardware_key;
  DType dtype = DType::kF32;
  std::string bucket;
  int64_t sweep_id = 0;
  std::vector<StoredConfig> configs;
};

// Whether a stored config belongs to the bucket's search space: it passed validation (any
// outcome but `invalid`, or `invalid` only for timing below the physical floor).
bool InSpace(const StoredConfig& c);

// Groups measurements of exhaustive sweeps into buckets; when several sweeps measured one
// bucket, the latest (highest sweep id) wins. `sweep_id` is taken from each measurement.
std::vector<StoredBucket> GroupMeasurements(const std::string& kernel, const std::string& hardware_key, DType dtype,
                                            const std::vector<Measurement>& measurements);

// Several exhaustive sweeps of the same key combined into one oracle: per config, the lowest
// of the passing sweeps' medians (ok if any sweep passed it; otherwise the first sweep's
// outcome). Interference from other processes only ever adds time, so of two medians of the
// same config the lower is the closer to its own speed (the rule the timing retries follow);
// a config that was measured in a noisy minute in one sweep gets its quiet value from the
// other. Buckets must share the key.
StoredBucket CombineSweeps(const std::vector<StoredBucket>& runs);

std::string FormatStoredBuckets(const std::vector<StoredBucket>& buckets);
// Errors name the line ("line 12: ...").
Result<std::vector<StoredBucket>> ParseStoredBuckets(std::string_view text);

}  // namespace blocktune::tuner::search
