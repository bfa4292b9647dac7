// PoolWinner; see pool_winner.h.
#include "store/pool_winner.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace blocktune::store {
namespace {

// Outcomes that rule a config out of a pool: it did not run, or ran and was wrong.
bool Disqualifies(tuner::Outcome o) {
  using tuner::Outcome;
  return o == Outcome::kInvalid || o == Outcome::kCrashed || o == Outcome::kNan || o == Outcome::kWrongResult ||
         o == Outcome::kOutOfMemory || o == Outcome::kWorkerLost || o == Outcome::kCompileFailed ||
         o == Outcome::kRuntimeFailed;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<tuner::TunedEntry> PoolWinner(const std::vector<tuner::Measurement>& pool) {
  struct Candidate {
    bool out = false;
    std::vector<double> samples;
    const tuner::Measurement* best = nullptr;  // lowest-median ok measurement
  };
  std::map<std::string, Candidate> by_config;
  for (const tuner::Measurement& m : pool) {
    Candidate& c = by_config[m.config.ToString()];
    if (Disqualifies(m.outcome)) c.out = true;
    if (m.outcome != tuner::Outcome::kOk) continue;
    if (m.samples_ns.empty()) {
      c.samples.push_back(m.median_ns);
    } else {
      c.samples.insert(c.samples.end(), m.samples_ns.begin(), m.samples_ns.end());
    }
    if (c.best == nullptr || m.median_ns < c.best->median_ns ||
        (m.median_ns == c.best->median_ns && m.id < c.best->id)) {
      c.best = &m;
    }
  }
  std::optional<tuner::TunedEntry> out;
  double best_median = 0;
  for (const auto& [config, c] : by_config) {  // config order: ties go to the smaller string
    if (c.out || c.best == nullptr || c.samples.empty()) continue;
    const double median = Median(c.samples);
    if (!(median > 0)) continue;
    if (out && !(median < best_median)) continue;
    best_median = median;
    tuner::TunedEntry e;
    e.bucket = c.best->bucket;
    e.config = c.best->config;
    e.median_ns = median;
    e.samples = static_cast<int64_t>(c.samples.size());
    e.sweep_id = c.best->sweep_id;
    e.measurement_id = c.best->id;
    e.measured_at = c.best->created_at;
    e.fingerprint = c.best->fingerprint;  // the build that measured the winning measurement
    out = std::move(e);
  }
  return out;
}

}  // namespace blocktune::store
