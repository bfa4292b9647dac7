// The agreement of two sweeps' choices, judged by their stored measurements or by re-timing; see
// agreement.h.
#include "tuner/search/agreement.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "tuner/timing/paired.h"

namespace blocktune::tuner::search {

namespace {

// A judgement of two different choices for one bucket: A's slowdown relative to B's, and who
// judged it ('A', 'B' or 'R'); nullopt when it cannot be judged.
struct Judgement {
  double slowdown;
  char judged_by;
};

// The agreement loop both comparisons share: pairs up the two sweeps' choices by bucket, counts
// identical choices as within, asks `judge` about the others, and lists the unjudged buckets.
template <typename Judge>
AgreementReport Agreement(const std::vector<std::pair<std::string, Config>>& chosen_a,
                          const std::vector<std::pair<std::string, Config>>& chosen_b, double tolerance, char same_by,
                          Judge judge) {
  AgreementReport r;
  r.tolerance = tolerance;
  int within = 0;
  for (const auto& [bucket, ca] : chosen_a) {
    const auto it = std::find_if(chosen_b.begin(), chosen_b.end(), [&](const auto& p) { return p.first == bucket; });
    if (it == chosen_b.end()) continue;
    BucketAgreement g{bucket, ca, it->second, 0, same_by, true};
    if (ca != it->second) {
      const std::optional<Judgement> j = judge(bucket, ca, it->second);
      if (!j) {
        r.unjudged.push_back(bucket);
        continue;
      }
      g.slowdown = j->slowdown;
      g.judged_by = j->judged_by;
      g.within = std::fabs(g.slowdown) <= tolerance;
    }
    within += g.within ? 1 : 0;
    r.buckets.push_back(std::move(g));
  }
  r.within_fraction = r.buckets.empty() ? 0 : static_cast<double>(within) / static_cast<double>(r.buckets.size());
  return r;
}

}  // namespace

AgreementReport CompareChoices(const std::vector<StoredBucket>& a,
                               const std::vector<std::pair<std::string, Config>>& chosen_a,
                               const std::vector<StoredBucket>& b,
                               const std::vector<std::pair<std::string, Config>>& chosen_b, double tolerance) {
  const auto median_of = [](const std::vector<StoredBucket>& sweep, const std::string& bucket,
                            const Config& c) -> std::optional<double> {
    for (const StoredBucket& sb : sweep) {
      if (sb.bucket != bucket) continue;
      for (const StoredConfig& sc : sb.configs) {
        if (sc.config == c && sc.outcome == Outcome::kOk && sc.median_ns > 0) return sc.median_ns;
      }
    }
    return std::nullopt;
  };
  return Agreement(chosen_a, chosen_b, tolerance, 'B',
                   [&](const std::string& bucket, const Config& ca, const Config& cb) -> std::optional<Judgement> {
                     if (auto xa = median_of(b, bucket, ca), xb = median_of(b, bucket, cb); xa && xb) {
                       return Judgement{*xa / *xb - 1, 'B'};
                     }
                     if (auto ya = median_of(a, bucket, ca), yb = median_of(a, bucket, cb); ya && yb) {
                       return Judgement{*ya / *yb - 1, 'A'};
                     }
                     return std::nullopt;
                   });
}

AgreementReport RemeasureChoices(const KernelSpec& spec, DType dtype, int threads,
                                 const std::vector<std::pair<std::string, Config>>& chosen_a,
                                 const std::vector<std::pair<std::string, Config>>& chosen_b, Evaluator& evaluator,
                                 const timing::TimingOptions& timing, double tolerance) {
  return Agreement(
      chosen_a, chosen_b, tolerance, 'R',
      [&](const std::string& bucket, const Config& ca, const Config& cb) -> std::optional<Judgement> {
        auto problem = spec.ProblemFromBucket(dtype, bucket);
        if (!problem) return std::nullopt;
        const EvalRequest request{&spec, *problem, threads, 1, timing, /*isa=*/{}};
        const auto t = evaluator.MeasureInterleaved(request, {ca, cb});
        if (t.size() != 2 || t[0].outcome != Outcome::kOk || t[1].outcome != Outcome::kOk || t[1].median_ns <= 0) {
          return std::nullopt;
        }
        // The paired ratio (timing/paired.h): the median of the per-cycle ratios A / B, disturbed
        // cycles left out, not the ratio of two medians that each move with whatever hit their
        // own repetitions.
        return Judgement{-timing::ComparePaired(t[0].samples_ns, t[1].samples_ns, 0).gain, 'R'};
      });
}

}  // namespace blocktune::tuner::search
