// Do two independent sweeps agree? Their published choices per bucket, compared by what the
// sweeps measured (CompareChoices) or by timing both choices again side by side
// (RemeasureChoices): `blocktune sweeps compare`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/evaluator.h"
#include "tuner/search/stored_buckets.h"

namespace blocktune::tuner::search {

// Two independent sweeps of the same buckets: for each bucket both measured, how much slower
// A's chosen config is than B's, judged by B's own measurements (B measured A's choice), else
// by A's. `chosen_a` / `chosen_b` are the configs each sweep published, one per bucket id.
struct BucketAgreement {
  std::string bucket;
  Config chosen_a;
  Config chosen_b;
  double slowdown = 0;   // median(A's choice) / median(B's choice) - 1 on the judging sweep; may be < 0
  char judged_by = 'B';  // 'A', 'B', or 'R': re-timed side by side (RemeasureChoices)
  bool within = false;   // |slowdown| <= tolerance
};

struct AgreementReport {
  double tolerance = 0.03;
  std::vector<BucketAgreement> buckets;
  double within_fraction = 0;
  std::vector<std::string> unjudged;  // buckets where neither sweep measured the other's choice
};

AgreementReport CompareChoices(const std::vector<StoredBucket>& a,
                               const std::vector<std::pair<std::string, Config>>& chosen_a,
                               const std::vector<StoredBucket>& b,
                               const std::vector<std::pair<std::string, Config>>& chosen_b, double tolerance);

// The same comparison judged by timing both choices again, side by side in this process with
// their repetitions interleaved (Evaluator::MeasureInterleaved at each bucket's representative
// problem), so neither sweep's noisy minute decides it; `slowdown` is then the paired ratio of
// the two (the median of the per-cycle ratios A / B) minus 1. Buckets whose problem cannot be
// rebuilt from the id, or whose re-timing fails, are listed as unjudged.
AgreementReport RemeasureChoices(const KernelSpec& spec, DType dtype, int threads,
                                 const std::vector<std::pair<std::string, Config>>& chosen_a,
                                 const std::vector<std::pair<std::string, Config>>& chosen_b, Evaluator& evaluator,
                                 const timing::TimingOptions& timing, double tolerance);

}  // namespace blocktune::tuner::search
