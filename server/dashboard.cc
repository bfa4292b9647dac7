// The dashboard's aggregates; see dashboard.h.
#include "server/dashboard.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>

#include "blocktune/tables/resolve.h"
#include "server/guards/guards.h"
#include "server/service.h"

namespace blocktune::server {
namespace {

bool SameConfig(const Config& a, const Config& b) { return a.values() == b.values(); }

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The passing measurement of `config` in `ms`, if any.
const tuner::Measurement* FindPassing(const std::vector<tuner::Measurement>& ms, const Config& config) {
  for (const auto& m : ms) {
    if (m.outcome == tuner::Outcome::kOk && SameConfig(m.config, config)) return &m;
  }
  return nullptr;
}

std::optional<tuner::FinalRound> Decision(Service& svc, int64_t sweep_id, const std::string& bucket) {
  auto r = svc.store().decisions().Get(sweep_id, bucket);
  if (!r) return std::nullopt;  // not_found: no round yet (or a sweep from before rounds)
  return std::move(*r);
}

// The override lookups would apply to this row: same kernel, dtype and bucket, and a hardware
// key equal to the row's or a prefix of it (whole components); the longest key wins.
std::optional<store::OverrideRecord> OverrideFor(const std::vector<store::OverrideRecord>& overrides,
                                                 const tuner::TunedEntry& e) {
  const store::OverrideRecord* best = nullptr;
  for (const auto& o : overrides) {
    if (o.kernel != e.kernel || o.dtype != e.dtype || o.bucket != e.bucket) continue;
    if (!tables::KeyHasPrefix(e.hardware_key, o.hardware_key)) continue;
    if (best == nullptr || o.hardware_key.size() > best->hardware_key.size()) best = &o;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

// Measurements of (sweep, bucket), read once per pair while building one answer.
class BucketCache {
 public:
  BucketCache(Service& svc, bool with_samples) : svc_(svc), with_samples_(with_samples) {}
  Result<const std::vector<tuner::Measurement>*> Get(int64_t sweep_id, const std::string& bucket) {
    const auto key = std::make_pair(sweep_id, bucket);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      auto ms = svc_.store().measurements().ListBucket(sweep_id, bucket, with_samples_);
      if (!ms) return std::unexpected(ms.error());
      it = cache_.emplace(key, std::move(*ms)).first;
    }
    return &it->second;
  }

 private:
  Service& svc_;
  bool with_samples_;
  std::map<std::pair<int64_t, std::string>, std::vector<tuner::Measurement>> cache_;
};

Result<std::vector<WinnerView>> Winners(Service& svc, BucketCache& cache, const std::vector<tuner::TunedEntry>& rows,
                                        int64_t stale_days) {
  auto overrides = svc.store().overrides().List();
  if (!overrides) return std::unexpected(overrides.error());
  const double now = NowSeconds();
  std::vector<WinnerView> out;
  out.reserve(rows.size());
  for (const auto& e : rows) {
    WinnerView w;
    w.entry = e;
    const KernelSpec* spec = FindKernel(e.kernel);
    // The row is this database's when its measurement is: checked-in rows name sweeps of the
    // database they were tuned in.
    auto ms = cache.Get(e.sweep_id, e.bucket);
    if (!ms) return std::unexpected(ms.error());
    for (const auto& m : **ms) w.from_database |= m.id == e.measurement_id;
    if (w.from_database && spec != nullptr) {
      if (const auto* d = FindPassing(**ms, spec->DefaultConfig())) w.default_median_ns = d->median_ns;
    }
    if (auto t = EpochSeconds(e.measured_at)) w.age_seconds = std::max(0.0, now - *t);
    if (spec != nullptr && e.bucket_version != spec->bucket_version()) {
      w.stale = true;
      w.stale_reason = "bucket version " + std::to_string(e.bucket_version) + ", the kernel's is " +
                       std::to_string(spec->bucket_version());
    } else if (w.age_seconds && *w.age_seconds > static_cast<double>(stale_days) * 86400.0) {
      w.stale = true;
      w.stale_reason = "measured more than " + std::to_string(stale_days) + " days ago";
    }
    w.override_record = OverrideFor(*overrides, e);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

std::optional<double> EpochSeconds(std::string_view ts) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  const std::string text(ts);
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &y, &mo, &d, &h, &mi, &s, &z) != 7 || z != 'Z') {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  return static_cast<double>(timegm(&tm)) + s;
}

Result<LandscapeView> BuildLandscape(Service& svc, int64_t sweep_id, const std::string& bucket) {
  auto sweep = svc.store().sweeps().Get(sweep_id);
  if (!sweep) return std::unexpected(sweep.error());
  auto tasks = svc.store().tasks().List(sweep_id);
  if (!tasks) return std::unexpected(tasks.error());
  LandscapeView v;
  v.sweep = std::move(*sweep);
  v.tasks = std::move(*tasks);
  if (v.tasks.empty()) return NotFound("sweep " + std::to_string(sweep_id) + " has no buckets", "id");
  v.bucket = bucket.empty() ? v.tasks.front().bucket : bucket;
  const bool known = std::any_of(v.tasks.begin(), v.tasks.end(), [&](const auto& t) { return t.bucket == v.bucket; });
  if (!known)
    return NotFound("sweep " + std::to_string(sweep_id) + " has no bucket '" + guards::Clip(v.bucket) + "'", "bucket");
  if (const KernelSpec* spec = FindKernel(v.sweep.request.kernel)) {
    for (const auto& p : spec->params()) v.params.emplace_back(p.name);
    v.default_config = spec->DefaultConfig();
  }
  auto ms = svc.store().measurements().ListBucket(sweep_id, v.bucket, /*with_samples=*/false);
  if (!ms) return std::unexpected(ms.error());
  v.measurements = std::move(*ms);
  std::optional<double> first;
  v.t_seconds.reserve(v.measurements.size());
  for (auto& m : v.measurements) {
    const auto t = EpochSeconds(m.created_at);
    if (t && !first) first = t;
    v.t_seconds.push_back(t && first ? *t - *first : 0.0);
  }
  v.decision = Decision(svc, sweep_id, v.bucket);
  return v;
}

Result<SweepBestView> BuildSweepBest(Service& svc, int64_t sweep_id) {
  auto sweep = svc.store().sweeps().Get(sweep_id);
  if (!sweep) return std::unexpected(sweep.error());
  auto tasks = svc.store().tasks().List(sweep_id);
  if (!tasks) return std::unexpected(tasks.error());
  SweepBestView v;
  v.sweep = std::move(*sweep);
  const KernelSpec* spec = FindKernel(v.sweep.request.kernel);
  for (auto& t : *tasks) {
    BucketBest b;
    auto ms = svc.store().measurements().ListBucket(sweep_id, t.bucket, /*with_samples=*/false);
    if (!ms) return std::unexpected(ms.error());
    b.measured = static_cast<int64_t>(ms->size());
    for (auto& m : *ms) {
      if (m.outcome != tuner::Outcome::kOk) continue;
      ++b.ok;
      if (!b.best || m.median_ns < b.best->median_ns) b.best = m;
    }
    if (spec != nullptr) {
      if (const auto* d = FindPassing(*ms, spec->DefaultConfig())) b.default_median_ns = d->median_ns;
    }
    if (auto round = Decision(svc, sweep_id, t.bucket)) b.chosen = round->chosen;
    b.task = std::move(t);
    v.buckets.push_back(std::move(b));
  }
  return v;
}

Result<std::vector<WinnerView>> BuildWinners(Service& svc, const std::string& kernel, const std::string& dtype,
                                             int64_t stale_days) {
  BucketCache cache(svc, /*with_samples=*/false);
  return Winners(svc, cache, svc.Tuned(kernel, "", dtype), stale_days);
}

Result<ExplainView> BuildExplain(Service& svc, const std::string& kernel, const std::string& hardware,
                                 const std::string& dtype, const std::string& bucket, int64_t top) {
  std::vector<tuner::TunedEntry> rows;
  for (auto& e : svc.Tuned(kernel, hardware, dtype)) {
    if (e.hardware_key == hardware && e.bucket == bucket) rows.push_back(std::move(e));
  }
  if (rows.empty()) {
    return NotFound("no tuned row for kernel '" + guards::Clip(kernel) + "', hardware '" + guards::Clip(hardware) +
                        "', dtype '" + guards::Clip(dtype) + "', bucket '" + guards::Clip(bucket) + "'",
                    "bucket");
  }
  BucketCache cache(svc, /*with_samples=*/true);  // the ranked configs show theirs
  auto winners = Winners(svc, cache, {rows.front()}, 90);
  if (!winners) return std::unexpected(winners.error());
  ExplainView v;
  v.winner = std::move(winners->front());
  const tuner::TunedEntry& e = v.winner.entry;
  if (const KernelSpec* spec = FindKernel(e.kernel)) v.default_config = spec->DefaultConfig();
  if (!v.winner.from_database) return v;  // a checked-in row: its measurements are elsewhere
  if (auto s = svc.store().sweeps().Get(e.sweep_id)) v.sweep = std::move(*s);
  v.decision = Decision(svc, e.sweep_id, e.bucket);
  if (v.decision && v.decision->noise_band > 0) v.noise_band = v.decision->noise_band;
  auto ms = cache.Get(e.sweep_id, e.bucket);
  if (!ms) return std::unexpected(ms.error());
  std::vector<const tuner::Measurement*> passing;
  for (const auto& m : **ms) {
    ++v.measured;
    if (m.outcome == tuner::Outcome::kOk) passing.push_back(&m);
  }
  v.ok = static_cast<int64_t>(passing.size());
  std::sort(passing.begin(), passing.end(), [](const auto* a, const auto* b) {
    return a->median_ns != b->median_ns ? a->median_ns < b->median_ns : a->id < b->id;
  });
  // The tuned config's own measurement in the search (with its samples): what each competitor's
  // noise band is computed against, as the decision round does (tuner::NoiseBand).
  const tuner::Measurement* winner = nullptr;
  for (const auto* m : passing) {
    if (m->id == e.measurement_id || (winner == nullptr && SameConfig(m->config, e.config))) winner = m;
  }
  const double min_band = tuner::SweepOptions{}.min_noise_band;
  for (size_t i = 0; i < passing.size(); ++i) {
    const bool is_default = SameConfig(passing[i]->config, v.default_config);
    const bool is_winner = passing[i]->id == e.measurement_id;
    if (static_cast<int64_t>(i) >= top && !is_default && !is_winner) continue;
    RankedConfig r;
    r.m = *passing[i];
    r.rank = static_cast<int64_t>(i) + 1;
    if (winner != nullptr) {
      r.noise_band = tuner::NoiseBand(*winner, *passing[i], min_band);
      r.within_noise = passing[i]->median_ns <= winner->median_ns * (1.0 + r.noise_band);
    }
    v.ranked.push_back(std::move(r));
  }
  return v;
}

}  // namespace blocktune::server
