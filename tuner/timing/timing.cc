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
  auto warm = TimeBatch(run, 1, clock);
  if (!warm) return std::unexpected(warm.error());

  // Grow the batch until it reaches the minimum repetition time: aim kAim past it (Google
  // Benchmark aims 40% past, which made the 512^3 sweep's repetitions average 28 ms for a 20 ms
  // minimum), and grow at most 10x per step so one lucky fast call cannot explode the count. `batch` is the last warm
  // batch of `iterations` calls (none yet: the warm-up is cold); the one that reaches the minimum is kept as the first
  // repetition, the shorter ones are calibration.
  int64_t iterations = 1;
  double elapsed = *warm;
  double calibrate_ns = *warm;
  bool batch = false;
  if (elapsed < options.min_repetition_ns) {
    // The warm-up call pays first touches and is slower than the calls after it (2x for a
    // 512^3 matmul here), so growing from it undershoots: the batch falls short of the
    // minimum and is thrown away (~20 ms a config). One more single call predicts better.
    auto one = TimeBatch(run, 1, clock);
    if (!one) return std::unexpected(one.error());
    elapsed = *one;
    batch = true;
  }
  while (elapsed < options.min_repetition_ns && iterations < options.max_iterations) {
    calibrate_ns += elapsed;  // a batch that fell short of the minimum
    // elapsed < minimum, so ratio > 1 and the count grows by at least one.
    const double ratio = elapsed > 0 ? kAim * options.min_repetition_ns / elapsed : 10.0;
    const auto next = static_cast<int64_t>(std::ceil(static_cast<double>(iterations) * std::min(ratio, 10.0)));
    iterations = std::clamp(next, iterations + 1, options.max_iterations);
    auto t = TimeBatch(run, iterations, clock);
    if (!t) return std::unexpected(t.error());
    elapsed = *t;
  }

  TimingResult result;
  result.iterations = iterations;
  if (batch && options.repetitions > 0) {
    // The batch that ended the growth ran `iterations` warm calls: the first repetition.
    const double per_call = elapsed / static_cast<double>(iterations);
    result.samples_ns.push_back(per_call);
    result.timed_ns += elapsed;
    // The rest at the count this batch's own per-call time predicts: a batch that overshot
    // (a count of a few calls rounds up by up to a call) is not repeated 4 more times.
    if (per_call > 0) {
      const auto want = static_cast<int64_t>(std::ceil(kAim * options.min_repetition_ns / per_call));
      iterations = std::clamp<int64_t>(want, 1, options.max_iterations);
      result.iterations = iterations;
    }
  } else if (batch) {
    calibrate_ns += elapsed;
  }
  result.calibrate_ns = calibrate_ns;
  for (int r = static_cast<int>(result.samples_ns.size()); r < options.repetitions; ++r) {
    auto t = TimeBatch(run, iterations, clock);
    if (!t) return std::unexpected(t.error());
    result.samples_ns.push_back(*t / static_cast<double>(iterations));
    result.timed_ns += *t;
  }
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
