// Cross-profile search prior; see profile_prior.h.
#include "tuner/search/profile_prior.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace blocktune::tuner::search {
namespace {

// Weight of a profile by its measured likeness: log_weight = kScale * (rho - 1), 0 for identical
// rankings. 4: a profile at rho 0.5 (what a model of another microarchitecture typically shows
// on matmul) weighs like an own bucket about two standard deviations of features away, and
// two misranked pairs in this bucket's own measurements (the posterior's penalty is 5 each)
// outweigh any prior difference between profiles.
constexpr double kScale = 4.0;
// Neutral likeness before any shared evidence: a guess between "unrelated" and "the same".
constexpr double kNeutralRho = 0.5;

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2.0;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = avg;
    i = j + 1;
  }
  return rank;
}

// bucket -> config string -> lowest median (several sweeps of one profile keep the lowest).
using Landscapes = std::map<std::string, std::map<std::string, double>>;

void Add(Landscapes& l, const Measurement& m) {
  if (m.outcome != Outcome::kOk || !(m.median_ns > 0)) return;
  auto [it, inserted] = l[m.bucket].emplace(m.config.ToString(), m.median_ns);
  if (!inserted) it->second = std::min(it->second, m.median_ns);
}

}  // namespace

double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 3) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n - 1) / 2.0;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa <= 0 || sbb <= 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

std::vector<ProfileSimilarity> MeasureProfileSimilarity(const std::vector<Measurement>& own,
                                                        const std::vector<ProfileMeasurement>& others) {
  Landscapes mine;
  for (const Measurement& m : own) Add(mine, m);
  std::map<std::string, Landscapes> theirs;
  for (const ProfileMeasurement& pm : others) Add(theirs[pm.hardware_key], pm.measurement);
  std::vector<ProfileSimilarity> out;
  for (const auto& [key, landscapes] : theirs) {
    ProfileSimilarity s;
    s.hardware_key = key;
    double weighted = 0;
    for (const auto& [bucket, configs] : landscapes) {
      auto it = mine.find(bucket);
      if (it == mine.end()) continue;
      std::vector<double> a, b;
      for (const auto& [config, ns] : configs) {
        if (auto j = it->second.find(config); j != it->second.end()) {
          a.push_back(std::log(ns));
          b.push_back(std::log(j->second));
        }
      }
      if (a.size() < 3) continue;
      weighted += SpearmanRho(a, b) * static_cast<double>(a.size());
      s.shared += static_cast<int64_t>(a.size());
    }
    s.correlation = s.shared > 0 ? weighted / static_cast<double>(s.shared) : 0;
    const double rho = s.shared >= kMinShared ? s.correlation : kNeutralRho;
    s.log_weight = kScale * (rho - 1.0);
    out.push_back(s);
  }
  return out;
}

std::vector<PriorBucket> ProfilePriorBuckets(const KernelSpec& spec, const std::vector<ProfileMeasurement>& others,
                                             const std::vector<ProfileSimilarity>& similarity) {
  std::map<std::string, const ProfileSimilarity*> by_key;
  for (const ProfileSimilarity& s : similarity) by_key[s.hardware_key] = &s;
  // (key, bucket) -> problem and medians.
  std::map<std::pair<std::string, std::string>, std::pair<Problem, std::vector<std::pair<Config, double>>>> grouped;
  for (const ProfileMeasurement& pm : others) {
    const Measurement& m = pm.measurement;
    if (m.outcome != Outcome::kOk || !(m.median_ns > 0)) continue;
    auto& [problem, medians] = grouped[{pm.hardware_key, m.bucket}];
    problem = m.problem;
    medians.emplace_back(m.config, m.median_ns);
  }
  std::vector<PriorBucket> out;
  for (const auto& [key, value] : grouped) {
    auto s = by_key.find(key.first);
    if (s == by_key.end()) continue;
    if (s->second->shared >= kMinShared && s->second->correlation <= 0) continue;  // measured unlike this one
    PriorBucket pb = MakePriorBucket(PriorFeatures(spec, value.first), value.second);
    if (pb.relative_cost.empty()) continue;
    pb.name = key.first + ":" + key.second;
    pb.log_weight = s->second->log_weight;
    out.push_back(std::move(pb));
  }
  return out;
}

}  // namespace blocktune::tuner::search
