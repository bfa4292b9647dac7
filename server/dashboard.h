// The read-only aggregates the dashboard (/ui/, server/ui) draws, each built from the store and
// the lookup index in one request so a page never pages through raw measurements: a sweep's
// landscape for one bucket (one column per parameter), a sweep's best config per bucket, the
// winners matrix (every tuned row with its speedup over the default config, age, staleness and
// override) and the "why this config" view of one tuned row. Encoded by server/wire/dashboard.cc,
// served by server/handlers/dashboard.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/store.h"
#include "tuner/measurement.h"
#include "tuner/sweep.h"

namespace blocktune::server {

class Service;

// Seconds since the Unix epoch of a store timestamp ("YYYY-MM-DDTHH:MM:SS[.fff]Z"); nullopt if
// it is not one.
std::optional<double> EpochSeconds(std::string_view ts);

struct LandscapeView {
  store::SweepRecord sweep;
  std::vector<store::TaskRecord> tasks;  // every bucket of the sweep, in request order
  std::string bucket;                    // the bucket shown
  std::vector<std::string> params;       // the kernel's parameters, in order
  Config default_config;
  std::vector<tuner::Measurement> measurements;  // of `bucket`, oldest first, without samples
  std::vector<double> t_seconds;                 // per measurement: seconds after the first one
  std::optional<tuner::FinalRound> decision;     // the bucket's decision round, once run
};
// not_found: no such sweep, or `bucket` ("" = the first) is not one of its buckets.
Result<LandscapeView> BuildLandscape(Service& svc, int64_t sweep_id, const std::string& bucket);

struct BucketBest {
  store::TaskRecord task;
  int64_t measured = 0;
  int64_t ok = 0;
  std::optional<tuner::Measurement> best;   // fastest passing measurement, without samples
  std::optional<double> default_median_ns;  // the kernel's default config, if it was measured and passed
  std::optional<Config> chosen;             // the decision round's choice, once run
};
struct SweepBestView {
  store::SweepRecord sweep;
  std::vector<BucketBest> buckets;
};
Result<SweepBestView> BuildSweepBest(Service& svc, int64_t sweep_id);

struct WinnerView {
  tuner::TunedEntry entry;
  bool from_database = false;  // false: the checked-in table's row (its sweep is not in this database)
  std::optional<double> default_median_ns;
  std::optional<double> age_seconds;
  bool stale = false;
  std::string stale_reason;  // empty when not stale
  std::optional<store::OverrideRecord> override_record;
};
// Every tuned row lookups serve for `kernel` and `dtype` ("" = all). A row is stale when its
// bucket version is not the kernel's current one or it was measured more than `stale_days` ago.
Result<std::vector<WinnerView>> BuildWinners(Service& svc, const std::string& kernel, const std::string& dtype,
                                             int64_t stale_days);

struct RankedConfig {
  tuner::Measurement m;       // with samples
  int64_t rank = 0;           // 1 = fastest passing config of the bucket
  double noise_band = 0;      // tuner::NoiseBand of this config and the tuned one, from their samples
  bool within_noise = false;  // median within noise_band of the tuned config's
};
struct ExplainView {
  WinnerView winner;
  std::optional<store::SweepRecord> sweep;
  std::optional<tuner::FinalRound> decision;
  std::optional<double> noise_band;  // the decision round's, when it recorded one (> 0)
  Config default_config;
  int64_t measured = 0;
  int64_t ok = 0;
  std::vector<RankedConfig> ranked;  // the fastest passing configs (at most `top`) and the default config
};
// not_found when no tuned row has exactly this kernel, hardware key, dtype and bucket.
Result<ExplainView> BuildExplain(Service& svc, const std::string& kernel, const std::string& hardware,
                                 const std::string& dtype, const std::string& bucket, int64_t top);

}  // namespace blocktune::server
