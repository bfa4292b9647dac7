// The sweep engine: for each bucket of a request, prune invalid configs, plan which valid ones
// to measure, verify each against the reference on a small problem, time it at the bucket's
// shape, and pick the winner. It knows nothing of SQL, HTTP or JSON: results go to a SweepSink
// (the Google Benchmark reporter pattern), which also tells it what is already measured so a
// stopped sweep resumes without measuring anything twice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

class SweepSink {
 public:
  virtual ~SweepSink() = default;
  // Measurements already stored for this sweep and bucket; their configs are not run again.
  virtual Result<std::vector<Measurement>> Existing(const std::string& bucket) = 0;
  // Persists one measurement together with the sweep's progress; sets m.id.
  virtual Status Record(Measurement& m, int64_t done, int64_t total) = 0;
  // Polled between configs; true stops the sweep (status: cancelled).
  virtual bool Cancelled() { return false; }
};

struct SweepOptions {
  TimingOptions timing;
  // Where configs run; nullptr = an InProcessEvaluator owned by RunSweep. Not owned.
  Evaluator* evaluator = nullptr;
};

struct BucketPlan {
  std::string bucket;
  Problem problem;              // the bucket's representative problem (what is timed)
  std::vector<Config> invalid;  // with reasons in `invalid_reasons`, same order
  std::vector<std::string> invalid_reasons;
  std::vector<Config> planned;  // valid configs to measure, in order
};

// Validates the request against the kernel (dims, dtype, threads, budget) and plans every
// bucket. Errors name the offending field ("shapes[1].k").
Result<std::vector<BucketPlan>> PlanSweep(const SweepRequest& request, const KernelSpec& spec,
                                          const HardwareProfile& hw);

// Picks the winner among stored measurements: the lowest median among configs that passed.
const Measurement* SelectWinner(const std::vector<Measurement>& measurements);

// Runs the sweep to completion (or cancellation) and returns the winner of each bucket that
// has at least one passing config. `hw.threads` must equal request.threads.
Result<std::vector<TunedEntry>> RunSweep(const SweepRequest& request, int64_t sweep_id, const KernelSpec& spec,
                                         const HardwareProfile& hw, SweepSink& sink, const SweepOptions& options);

}  // namespace blocktune::tuner
