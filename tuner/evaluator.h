// Evaluator: how the sweep engine gets one config verified and timed. The engine (sweep.cc)
// decides *what* to measure; an Evaluator decides *where*: InProcessEvaluator runs the kernel in
// the calling process (tests, `blocktune bench`, and the body of a worker process), while the
// worker evaluator (tuner/isolation/) ships the same request to an isolated worker process that
// runs InProcessEvaluator and reports back, so a config that crashes, hangs or eats memory
// becomes a recorded outcome instead of taking the daemon down.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/breakdown.h"
#include "tuner/measurement.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

// What to evaluate configs on: the kernel, the timed (bucket representative) problem, the
// thread count, the input seed and the timing policy. Everything here is plain data so it can
// cross a process boundary.
struct EvalRequest {
  const KernelSpec* spec = nullptr;
  Problem problem;
  int threads = 1;
  uint64_t seed = 1;
  timing::TimingOptions timing;
  // The ISA level the kernel runs at ("avx512", "avx2", "base"); empty = this process's level
  // (HostHardware). A WorkerEvaluator starts its worker with BLOCKTUNE_ISA set to it; an
  // InProcessEvaluator can only run its own level (see kernels/core/hardware.h ForceIsa).
  std::string isa;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Verifies `config` against the reference (on spec->VerificationProblem) and, if it passes,
  // times it at request.problem. Fills outcome, detail, the error fields and the timing fields
  // of `m`; leaves its identity (sweep, bucket, config) alone.
  virtual void Measure(const EvalRequest& request, const Config& config, Measurement& m) = 0;
  // Times already-verified configs again with their repetitions interleaved (round-robin), so
  // drift in the machine's speed hits every config alike. One Measurement per config, in order,
  // with outcome and timing fields filled.
  virtual std::vector<Measurement> MeasureInterleaved(const EvalRequest& request,
                                                      const std::vector<Config>& configs) = 0;
  // Seconds spent so far by phase (breakdown.h), for the sweep's breakdown; an evaluator that
  // does not count reports zeros and its time shows up as the sweep's `other`.
  virtual EvalCosts costs() const { return {}; }
};

// External kernels (KernelSpec::runner() set: declared in a spec file, external/spec.h) are not
// called in this process but measured by their runner program over the runner protocol. The
// library that loads their specs (external/) installs the factory of this interface; the
// in-process evaluator (and so every worker process) hands such kernels to it.
class RunnerMeasurer {
 public:
  virtual ~RunnerMeasurer() = default;
  virtual void Measure(const EvalRequest& request, const Config& config, Measurement& m) = 0;
  virtual std::vector<Measurement> MeasureInterleaved(const EvalRequest& request,
                                                      const std::vector<Config>& configs) = 0;
  // What the runners spent since the last call, by phase: the wall of their timed repetitions
  // (timed_s; retry_s for attempts not kept) and their own build, warm-up, check and
  // calibration (calibrate_s), as their answers report them (timed_ms, overhead_ms).
  virtual EvalCosts TakeCosts() = 0;
};
using RunnerMeasurerFactory = std::unique_ptr<RunnerMeasurer> (*)();
// Called once at start-up by each executable that links external/ (blocktuned, blocktune,
// blocktune-worker); nullptr removes it.
void SetRunnerMeasurerFactory(RunnerMeasurerFactory factory);

// Runs everything in the calling process. Keeps reference outputs for verification problems
// and the timed instance between calls (keyed by problem), so sweeping many configs of one
// bucket allocates and computes references once.
class InProcessEvaluator : public Evaluator {
 public:
  InProcessEvaluator();
  ~InProcessEvaluator() override;
  void Measure(const EvalRequest& request, const Config& config, Measurement& m) override;
  std::vector<Measurement> MeasureInterleaved(const EvalRequest& request, const std::vector<Config>& configs) override;
  EvalCosts costs() const override;

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace blocktune::tuner

namespace blocktune::tuner {

// Verifies `config` against the reference on spec.VerificationProblem (outputs poisoned with
// NaN first) and fills outcome, detail and the error fields of `m`. Returns true if it passed.
// References are computed per call; InProcessEvaluator caches them across calls.
bool VerifyConfig(const KernelSpec& spec, const Config& config, const Problem& bucket_problem, int threads,
                  Measurement& m);

}  // namespace blocktune::tuner
