// Implementation of the timing loop; see timing.h for the method.
#include "tuner/timing/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace blocktune::tuner::timing {
namespace {

using Clock = std::chrono::steady_clock;

// 3% past the minimum: enough that run-to-run jitter of a percent or two rarely leaves a
// repetition short of it (a short growth batch is thrown away), little enough that each
// repetition stays within 10% of it.
constexpr double kAim = 1.03;

// A batch sized to reach the minimum that ends at least this far into it is topped up to the
// minimum and kept as repetition 1 (the calls it ran are warm calls like every repetition's;
// throwing it away cost a repetition, ~20 ms, on 126 of the 512^3 sweep's 180 configs). One
// that ends shorter says its predictor was far off (a cold first call on fresh instances runs
// up to 2x slow), so the calls right after it may still be warming: it is calibration, and its
// own per-call time sizes the next batch.
constexpr double kTopUpFrom = 0.75;

// A measurement shorter than this (0.5% of the default 20 ms minimum) sizes the next batch at
// most 10x its calls: a clock read costs ~25 ns, so a few calls of a sub-microsecond kernel can
// read far off. Longer ones size it directly (a 2 ms call grew 1 -> 10 -> 11 calls under the
// 10x rule, wasting the 10-call batch).
constexpr double kReliableNs = 100e3;

// A repetition at the fixed count that ends shorter than this share of the minimum shows the
// count came from calls slower than the kernel's steady state: a warm-up call that lasted the
// minimum by itself (count 1), or a repetition 1 whose calls were still warming (fresh packing
// buffers of a wide block). On one 512^3 exhaustive sweep 52 of 900 repetitions lasted 2-9 ms
// at counts of 1-4 for that reason. Run-to-run jitter of a few percent stays above it.
constexpr double kResizeBelow = 0.9;
// Re-sizings per config at most: each discards the repetitions kept so far (into calibration).
constexpr int kMaxResizes = 3;

// Calls needed for `target_ns` more, predicted from a measurement of `calls` calls lasting
// `measured_ns` (10x the calls when it read 0). A measurement shorter than kReliableNs (timer
// reads, a lucky call) predicts at most 10x its calls (Google Benchmark's rule), so it cannot
// overshoot the repetition by much. Unclamped: the callers bound it.
double CallsFor(double target_ns, double measured_ns, int64_t calls) {
  const double n = static_cast<double>(calls);
  const double per_call = measured_ns / n;
  double want = per_call > 0 ? std::ceil(target_ns / per_call) : 10.0 * n;
  if (measured_ns < kReliableNs) want = std::min(want, 10.0 * n);
  return want;
}

// TimingOptions::stop_above_ns: the repetitions so far are enough to show the config is behind.
bool StopsBehind(const std::vector<double>& samples, const TimingOptions& options) {
  if (!(options.stop_above_ns > 0) || options.stop_after < 1) return false;
  const auto n = static_cast<int>(samples.size());
  if (n < options.stop_after || n >= options.repetitions) return false;
  return *std::min_element(samples.begin(), samples.end()) > options.stop_above_ns;
}

double SteadyNs() { return std::chrono::duration<double, std::nano>(Clock::now().time_since_epoch()).count(); }

Result<double> TimeBatch(const std::function<Status()>& run, int64_t iterations, double (*clock_ns)() = nullptr) {
  if (clock_ns == nullptr) clock_ns = &SteadyNs;
  const double start = clock_ns();
  for (int64_t i = 0; i < iterations; ++i) {
    if (auto s = run(); !s) return std::unexpected(s.error());
  }
  return clock_ns() - start;
}

}  // namespace

Result<double> TimeFixed(const std::function<Status()>& run, int64_t iterations, double (*clock_ns)()) {
  auto t = TimeBatch(run, iterations, clock_ns);
  if (!t) return std::unexpected(t.error());
  return *t / static_cast<double>(std::max<int64_t>(iterations, 1));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double hi = v[mid];
  const double lo = *std::max_element(v.begin(), v.begin() + mid);
  return (lo + hi) / 2;
}

double CoefficientOfVariation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (mean <= 0) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1)) / mean;
}

int RotationSets(double bytes_per_set, int64_t l2_bytes, int64_t l3_bytes, int cores, int threads) {
  constexpr int kMaxSets = 64;
  constexpr double kMaxTotalBytes = 256.0 * 1024 * 1024;
  if (bytes_per_set <= 0) return 1;
  const double t = std::max(threads, 1);
  const double l3_share = cores > 0 ? static_cast<double>(l3_bytes) * t / cores : 0.0;
  const double target = std::max(4.0 * static_cast<double>(l2_bytes) * t, l3_share);
  const double want = std::ceil(target / bytes_per_set);
  const double fit = std::floor(kMaxTotalBytes / bytes_per_set);
  return static_cast<int>(std::clamp(std::min(want, fit), 1.0, static_cast<double>(kMaxSets)));
}

double RobustCv(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double med = Median(v);
  if (med <= 0) return 0;
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  return 1.4826 * Median(std::move(dev)) / med;
}

Result<TimingResult> TimeRepeated(const std::function<Status()>& run, const TimingOptions& options) {
  // Warm-up: first touch of outputs, packing buffers and thread pool start-up are not measured.
  const auto clock = options.clock_ns;
  const double min_ns = options.min_repetition_ns;
  auto warm = TimeBatch(run, 1, clock);
  if (!warm) return std::unexpected(warm.error());

  TimingResult result;
  int64_t iterations = 1;
  double calibrate_ns = *warm;
  if (*warm < min_ns && options.max_iterations > 0) {
    // Repetition 1 is sized from the warm-up call itself: on the 512^3 sweep a warm-up call is
    // within 2% of a warm one (median; 0.8x-1.13x), so the single warm call the growth used to
    // predict from cost a call per config and bought nothing. `pred_ns` for `pred_calls` calls
    // is the best per-call estimate so far; `first_ns` for `first_calls` the repetition so far.
    int64_t pred_calls = 1;
    double pred_ns = *warm;
    int64_t first_calls = 0;
    double first_ns = 0;
    while (first_ns < min_ns && first_calls < options.max_iterations) {
      const double want = CallsFor(kAim * min_ns - first_ns, pred_ns, pred_calls);
      const double room = static_cast<double>(options.max_iterations - first_calls);
      const auto n = static_cast<int64_t>(std::clamp(want, 1.0, room));
      auto t = TimeBatch(run, n, clock);
      if (!t) return std::unexpected(t.error());
      if (first_calls > 0 || *t >= kTopUpFrom * min_ns || n >= options.max_iterations) {
        first_calls += n;  // repetition 1, or a top-up of it
        first_ns += *t;
        pred_calls = first_calls;
        pred_ns = first_ns;
      } else {
        calibrate_ns += *t;  // far short: the warm-up was unrepresentative; this batch predicts
        pred_calls = n;
        pred_ns = *t;
      }
    }
    const double per_call = first_ns / static_cast<double>(first_calls);
    if (options.repetitions > 0) {
      result.samples_ns.push_back(per_call);
      result.timed_ns += first_ns;
    } else {
      calibrate_ns += first_ns;
    }
    // The rest at the count repetition 1's own per-call time predicts: one that overshot
    // (a count of a few calls rounds up by up to a call) is not repeated 4 more times.
    iterations = first_calls;
    if (per_call > 0) {
      const auto want = static_cast<int64_t>(std::ceil(kAim * min_ns / per_call));
      iterations = std::clamp<int64_t>(want, 1, options.max_iterations);
    }
  }
  int resizes = 0;
  while (static_cast<int>(result.samples_ns.size()) < options.repetitions) {
    auto t = TimeBatch(run, iterations, clock);
    if (!t) return std::unexpected(t.error());
    if (*t < kResizeBelow * min_ns && resizes < kMaxResizes && iterations < options.max_iterations) {
      // Re-sized from this repetition (kResizeBelow); what was kept was timed at the slow calls'
      // count, so it becomes calibration and the repetitions start over at the new count.
      ++resizes;
      calibrate_ns += *t + result.timed_ns;
      result.timed_ns = 0;
      result.samples_ns.clear();
      iterations =
          static_cast<int64_t>(std::clamp(CallsFor(kAim * min_ns, *t, iterations), static_cast<double>(iterations + 1),
                                          static_cast<double>(options.max_iterations)));
      continue;
    }
    result.samples_ns.push_back(*t / static_cast<double>(iterations));
    result.timed_ns += *t;
    if (StopsBehind(result.samples_ns, options)) {
      result.stopped = true;
      break;
    }
  }
  result.iterations = iterations;
  result.calibrate_ns = calibrate_ns;
  result.median_ns = Median(result.samples_ns);
  result.cv = CoefficientOfVariation(result.samples_ns);
  return result;
}

Result<TimingResult> TimeRepeatedAt(const std::function<Status()>& run, const TimingOptions& options,
                                    int64_t iterations) {
  TimingResult result;
  result.iterations = std::max<int64_t>(iterations, 1);
  for (int r = 0; r < options.repetitions; ++r) {
    auto t = TimeBatch(run, result.iterations, options.clock_ns);
    if (!t) return std::unexpected(t.error());
    result.samples_ns.push_back(*t / static_cast<double>(result.iterations));
    result.timed_ns += *t;
  }
  result.median_ns = Median(result.samples_ns);
  result.cv = CoefficientOfVariation(result.samples_ns);
  return result;
}

}  // namespace blocktune::tuner::timing
