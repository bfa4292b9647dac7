// Robust timing of one kernel call: warm up, grow the iteration count until one repetition
// lasts at least a minimum time (Google Benchmark's PredictNumItersNeeded idea), then run
// several repetitions and keep every per-iteration sample, the median and the CV.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/core/result.h"

namespace blocktune::tuner::timing {

struct TimingOptions {
  // 20 ms per repetition keeps timer resolution (~20 ns) and scheduler noise (a 1-4 ms tick)
  // small relative to the sample while 5 repetitions of a 2048^3 matmul (~0.1 s a call)
  // still finish in under a second.
  double min_repetition_ns = 20e6;
  int repetitions = 5;
  int64_t max_iterations = int64_t{1} << 24;
  // A config whose repetitions spread more than this (robust CV, see RobustCv) gets more
  // repetitions, one at a time, up to `max_retries` attempts' worth, and the quietest window of
  // `repetitions` consecutive ones is kept (interference only ever adds time and spread, so
  // the quietest window is the one closest to the config's own speed); if even that is above,
  // the outcome is `unstable`. 10%: a config this
  // noisy cannot be ranked against neighbours that differ by a few percent anyway.
  double max_cv = 0.10;
  int max_retries = 2;
  // Input sets the timed problem rotates through, one per call, so a call finds its inputs
  // as cold as an application would (not left in L1/L2 by the previous iteration). 0: enough
  // sets to exceed the cache share (see RotationSets), capped at 64 sets and 256 MiB.
  int rotation_sets = 0;
  // Reject medians below the physical floor (timing/floor.h) as `invalid`.
  bool check_floor = true;
  // The clock TimeRepeated reads, in ns (and the evaluator's re-timings and interleaved rounds,
  // through TimeFixed); null = std::chrono::steady_clock. Tests pass a fake one that their fake
  // kernel advances, so the calibration, and the decision rounds built on these timings, can be
  // checked exactly.
  double (*clock_ns)() = nullptr;
  // A config this far behind is no contender: once `stop_after` repetitions are all slower than
  // `stop_above_ns` per call, the rest are not timed (TimingResult::stopped), and the noisy-
  // attempt retries are not run for it. Interference only adds time, so a config whose fastest
  // repetition of two is above the line runs slower than that line. 0: off (every repetition).
  // The search sets it per measurement from the bucket's best so far (SweepOptions::stop_behind);
  // external runners do not take it and time every repetition.
  double stop_above_ns = 0;
  int stop_after = 2;
};

// Input sets for a problem of `bytes_per_set` (the kernel's minimum traffic): enough that
// together they exceed max(4 x L2 x threads, the L3 share of `threads` of `cores`), so each
// call streams its inputs from the level an application would; at most 64 sets and 256 MiB.
int RotationSets(double bytes_per_set, int64_t l2_bytes, int64_t l3_bytes, int cores, int threads);

struct TimingResult {
  std::vector<double> samples_ns;  // per-iteration time of each repetition
  int64_t iterations = 0;          // iterations per repetition (after the first, see TimeRepeated)
  double median_ns = 0;
  double cv = 0;
  // Wall time of the kept repetitions, and of the calls that were not kept (the warm-up and
  // any batch that fell far short of the minimum): what the sweep's breakdown counts as timed
  // and as calibration.
  double timed_ns = 0;
  double calibrate_ns = 0;
  bool stopped = false;  // fewer than options.repetitions: stopped behind (TimingOptions::stop_above_ns)
};

double Median(std::vector<double> v);
// Coefficient of variation: sample standard deviation over mean; 0 for fewer than 2 samples.
double CoefficientOfVariation(const std::vector<double>& v);
// The spread the median is judged by: 1.4826 x MAD / median (equal to the CV for normal
// noise), which, like the median, ignores a minority of outliers. One repetition hit by a 4 ms
// scheduler tick makes the CV of five 10 ms repetitions ~18% but leaves this near zero, while
// repetitions that disagree across the board still show. 0 for fewer than 2 samples.
double RobustCv(const std::vector<double>& v);

// Times `run`; the first failure it returns stops timing and is returned. With
// options.repetitions == 0 it only warms up and calibrates: `iterations` is set, no samples.
// After one warm-up call (not measured), repetition 1 is a batch sized from that call's time to
// reach 3% past the minimum; if it ends short of the minimum but past 3/4 of it, it is topped up
// with the calls its own per-call time says are missing, and kept (as Google Benchmark keeps the
// run that met its minimum time): its calls are warm calls like every other repetition's, and
// re-running it would cost one repetition per config. A batch that ends shorter is calibration
// and sizes the next. The count of the repetitions after the first is rescaled from the first
// one's per-call time, so that each repetition lasts between the minimum and 10% more whenever
// a call is under ~5% of the minimum (a longer call rounds up by up to a call). `iterations` is
// that rescaled count (what TimeRepeatedAt and retries reuse).
Result<TimingResult> TimeRepeated(const std::function<Status()>& run, const TimingOptions& options);

// `options.repetitions` repetitions of `iterations` calls each, without warm-up or growth: for
// a config that was just timed (a retry of a noisy attempt knows its count and is warm).
Result<TimingResult> TimeRepeatedAt(const std::function<Status()>& run, const TimingOptions& options,
                                    int64_t iterations);

// One batch of exactly `iterations` calls; returns the per-call time in ns. `clock_ns` as in
// TimingOptions (the evaluator passes its request's): with a fake clock that a test kernel
// advances by its cost model, noise and slow phases included, the interleaved rounds and the
// decisions built on them run exactly as on hardware, deterministically
// (tests/tuner/paired_decision_test.cc).
Result<double> TimeFixed(const std::function<Status()>& run, int64_t iterations, double (*clock_ns)() = nullptr);

}  // namespace blocktune::tuner::timing
