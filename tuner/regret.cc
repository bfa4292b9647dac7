// Regret of the fallback levels; see regret.h.
#include "tuner/regret.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "tuner/sweep.h"
#include "tuner/timing/paired.h"

namespace blocktune::tuner {

std::string_view RegretLevelName(RegretLevel level) {
  switch (level) {
    case RegretLevel::kExact: return "exact";
    case RegretLevel::kOtherThreads: return "other_threads";
    case RegretLevel::kOtherModel: return "other_model";
    case RegretLevel::kOtherVendor: return "other_vendor";
    case RegretLevel::kOtherIsa: return "other_isa";
    case RegretLevel::kDefault: return "default";
  }
  return "default";
}

bool OnCurrentChain(RegretLevel level) {
  return level == RegretLevel::kExact || level == RegretLevel::kOtherThreads || level == RegretLevel::kOtherModel;
}

std::optional<RegretLevel> RegretLevelOf(std::string_view host_key, std::string_view row_key) {
  if (row_key == host_key) return RegretLevel::kExact;
  const std::uint32_t depth = tables::KeyDepth(host_key);
  // The host key less its last component (the same CPU model), when that still names a model.
  if (depth >= 5 && tables::KeyHasPrefix(row_key, tables::KeyPrefixAt(host_key, depth - 1))) {
    return RegretLevel::kOtherThreads;
  }
  if (depth >= 4 && tables::KeyHasPrefix(row_key, tables::KeyPrefixAt(host_key, 3))) return RegretLevel::kOtherModel;
  if (depth >= 3 && tables::KeyHasPrefix(row_key, tables::KeyPrefixAt(host_key, 2))) return RegretLevel::kOtherVendor;
  if (depth >= 2 && tables::KeyHasPrefix(row_key, tables::KeyPrefixAt(host_key, 1))) return RegretLevel::kOtherIsa;
  return std::nullopt;
}

Result<std::vector<RegretBucketPlan>> PlanRegret(const KernelSpec& spec, const std::vector<TunedEntry>& rows,
                                                 std::string_view host_key, DType dtype,
                                                 const std::vector<std::string>& buckets) {
  std::vector<const TunedEntry*> mine;
  for (const TunedEntry& e : rows) {
    if (e.kernel == spec.name() && e.dtype == dtype && e.bucket_version == spec.bucket_version()) mine.push_back(&e);
  }
  std::vector<std::string> ids = buckets;
  if (ids.empty()) {
    std::set<std::string> seen;
    for (const TunedEntry* e : mine) seen.insert(e->bucket);
    ids.assign(seen.begin(), seen.end());
  }
  std::vector<RegretBucketPlan> plan;
  for (const std::string& id : ids) {
    auto problem = spec.ProblemFromBucket(dtype, id);
    if (!problem) return InvalidArgument("bucket '" + id + "': " + problem.error().message, "buckets");
    RegretBucketPlan b;
    b.bucket = spec.Bucket(*problem).first;  // canonical spelling
    b.problem = *problem;
    b.candidates.push_back({RegretLevel::kDefault, "", spec.DefaultConfig(), true});
    std::vector<RegretCandidate> found;
    for (const TunedEntry* e : mine) {
      if (e->bucket != b.bucket) continue;
      const auto level = RegretLevelOf(host_key, e->hardware_key);
      if (level) found.push_back({*level, e->hardware_key, e->config, false});
    }
    std::sort(found.begin(), found.end(), [](const RegretCandidate& x, const RegretCandidate& y) {
      return std::tie(x.level, x.hardware) < std::tie(y.level, y.hardware);
    });
    for (size_t i = 0; i < found.size(); ++i) found[i].served = i == 0 || found[i - 1].level != found[i].level;
    b.candidates.insert(b.candidates.end(), found.begin(), found.end());
    plan.push_back(std::move(b));
  }
  return plan;
}

RegretReport MeasureRegret(const KernelSpec& spec, const std::vector<RegretBucketPlan>& plan, const HardwareProfile& hw,
                           Evaluator& evaluator, const timing::TimingOptions& timing, double min_noise_band) {
  RegretReport report;
  report.hardware = hw.Key();
  report.threads = hw.threads;
  for (const RegretBucketPlan& p : plan) {
    RegretBucket out;
    out.bucket = p.bucket;
    // Each distinct config once: validated, verified, then timed with the others.
    std::vector<Config> configs;
    std::vector<Measurement> checked;
    std::vector<size_t> slot(p.candidates.size());
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      const Config& c = p.candidates[i].config;
      const auto it = std::find(configs.begin(), configs.end(), c);
      slot[i] = static_cast<size_t>(it - configs.begin());
      if (it != configs.end()) continue;
      configs.push_back(c);
      Measurement m;
      m.config = c;
      if (auto s = spec.ValidateConfig(c, p.problem, hw); !s) {
        m.outcome = Outcome::kInvalid;
        m.detail = s.error().ToString();
      } else if (spec.runner() != nullptr) {
        m.outcome = Outcome::kOk;  // an external kernel's runner checks its output as it times it
      } else {
        VerifyConfig(spec, c, p.problem, hw.threads, m);
      }
      checked.push_back(std::move(m));
    }
    std::vector<Config> passing;
    std::vector<size_t> timed_index(configs.size(), SIZE_MAX);
    for (size_t j = 0; j < configs.size(); ++j) {
      if (checked[j].outcome != Outcome::kOk) continue;
      timed_index[j] = passing.size();
      passing.push_back(configs[j]);
    }
    std::vector<Measurement> timed;
    if (!passing.empty()) {
      const EvalRequest request{&spec, p.problem, hw.threads, 1, timing, /*isa=*/{}};
      timed = evaluator.MeasureInterleaved(request, passing);
    }
    // A device's rows (gpu.nvidia.sm90.h200) are judged only where the kernel's runner answers
    // from that device (docs/accelerators.md); anywhere else the bucket is skipped, with why.
    std::string elsewhere;
    if (tables::IsDeviceKey(report.hardware)) {
      for (const Measurement& t : timed) {
        if (!t.device_key.empty() && t.device_key != report.hardware) {
          elsewhere = "skipped: the runner measures on " + t.device_key + ", not " + report.hardware;
        }
      }
      if (elsewhere.empty() && std::none_of(timed.begin(), timed.end(),
                                            [&](const Measurement& t) { return t.device_key == report.hardware; })) {
        elsewhere = "skipped: the runner did not answer from " + report.hardware;
      }
    }
    for (size_t j = 0; j < configs.size(); ++j) {
      if (timed_index[j] == SIZE_MAX) continue;
      if (!elsewhere.empty()) {
        checked[j].outcome = Outcome::kInvalid;
        checked[j].detail = elsewhere;
        continue;
      }
      if (timed_index[j] >= timed.size()) {
        checked[j].outcome = Outcome::kWorkerLost;
        checked[j].detail = "not timed";
        continue;
      }
      const Measurement& t = timed[timed_index[j]];
      checked[j].outcome = t.outcome;
      checked[j].detail = t.detail;
      checked[j].samples_ns = t.samples_ns;
      checked[j].median_ns = t.median_ns;
    }
    const Measurement& def = checked[slot[0]];  // the default is candidate 0
    for (const Measurement& m : checked) {
      if (m.outcome == Outcome::kOk && m.median_ns > 0 && (out.best_ns == 0 || m.median_ns < out.best_ns)) {
        out.best_ns = m.median_ns;
      }
    }
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      const Measurement& m = checked[slot[i]];
      RegretRow r;
      r.candidate = p.candidates[i];
      r.outcome = m.outcome;
      r.detail = m.detail;
      if (m.outcome == Outcome::kOk && m.median_ns > 0) {
        r.median_ns = m.median_ns;
        r.cv = timing::RobustCv(m.samples_ns);
        if (def.outcome == Outcome::kOk && def.median_ns > 0) {
          r.speedup_vs_default = def.median_ns / m.median_ns;
          if (slot[i] != slot[0]) {
            // The decision round's verdict on the same pair (tuner/decision.h): the per-cycle
            // ratios of the two and their band.
            const timing::PairedComparison c = timing::ComparePaired(m.samples_ns, def.samples_ns, min_noise_band);
            r.paired_gain = c.gain;
            r.noise_band = c.band;
            r.beyond_noise = std::abs(c.gain) > c.band;
          }
        }
        r.regret_vs_best = m.median_ns / out.best_ns - 1;
      }
      out.rows.push_back(std::move(r));
    }
    report.buckets.push_back(std::move(out));
  }
  report.summary = SummarizeRegret(report.buckets);
  return report;
}

std::vector<RegretLevelSummary> SummarizeRegret(const std::vector<RegretBucket>& buckets) {
  std::vector<RegretLevelSummary> out;
  for (int l = 0; l < kRegretLevels; ++l) {
    RegretLevelSummary s;
    s.level = static_cast<RegretLevel>(l);
    double log_sum = 0, regret_sum = 0;
    bool any = false;
    for (const RegretBucket& b : buckets) {
      for (const RegretRow& r : b.rows) {
        if (r.candidate.level != s.level || !r.candidate.served) continue;
        any = true;
        if (r.outcome != Outcome::kOk || r.speedup_vs_default <= 0) {
          ++s.refused;
          continue;
        }
        ++s.buckets;
        log_sum += std::log(r.speedup_vs_default);
        regret_sum += r.regret_vs_best;
        if (s.buckets == 1 || r.speedup_vs_default < s.worst_speedup) {
          s.worst_speedup = r.speedup_vs_default;
          s.worst_bucket = b.bucket;
        }
        s.max_regret = std::max(s.max_regret, r.regret_vs_best);
        // The direction of the verdict whose band it is: the paired gain's, not the medians' (a
        // phase that hit one config's repetitions can put them on opposite sides).
        if (r.beyond_noise) (r.paired_gain < 0 ? s.slower_beyond_noise : s.faster_beyond_noise)++;
      }
    }
    if (!any) continue;
    if (s.buckets > 0) {
      s.geomean_speedup = std::exp(log_sum / s.buckets);
      s.mean_regret = regret_sum / s.buckets;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> ParseBucketList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string_view::npos) continue;
    const size_t b = line.find_last_not_of(" \t\r");
    out.emplace_back(line.substr(a, b - a + 1));
  }
  return out;
}

}  // namespace blocktune::tuner
