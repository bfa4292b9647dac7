// The timing loop's calibration on a fake clock and a fake kernel cost (issue 40): every kept
// repetition lasts between min_repetition_ns and 10% more, whatever the per-call cost (when a
// call is a small part of the minimum), with no dependence on how busy the machine is.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tuner/timing/timing.h"

namespace blocktune::tuner {
namespace {

// The fake machine: a clock in ns that only the fake kernel advances, and a log of its reads.
double fake_now_ns = 0;
std::vector<double> clock_reads;

double FakeClock() {
  clock_reads.push_back(fake_now_ns);
  return fake_now_ns;
}

TEST(TimingCalibration, EachRepetitionLandsWithinTenPercentAboveTheMinimum) {
  // Per-call costs from 1e-3 to ~5% of the minimum, with a deterministic +-1% jitter and a
  // first (cold) call twice as slow.
  for (const double cost_ns : {13e3, 370e3, 611e3, 900e3}) {
    fake_now_ns = 0;
    clock_reads.clear();
    int64_t calls = 0;
    timing::TimingOptions o;
    o.min_repetition_ns = 20e6;
    o.repetitions = 5;
    o.clock_ns = &FakeClock;
    auto t = timing::TimeRepeated(
        [&]() -> Status {
          const double jitter = 1.0 + 0.01 * std::sin(1.7 * static_cast<double>(calls));
          fake_now_ns += (calls == 0 ? 2.0 : 1.0) * cost_ns * jitter;
          ++calls;
          return {};
        },
        o);
    ASSERT_TRUE(t);
    ASSERT_EQ(t->samples_ns.size(), 5u);
    // Each batch reads the clock twice; the kept repetitions are the last five batches.
    ASSERT_GE(clock_reads.size(), 10u);
    double timed = 0;
    for (size_t b = clock_reads.size() - 10; b < clock_reads.size(); b += 2) {
      const double repetition_ns = clock_reads[b + 1] - clock_reads[b];
      timed += repetition_ns;
      EXPECT_GE(repetition_ns, o.min_repetition_ns) << "cost " << cost_ns << " ns";
      EXPECT_LE(repetition_ns, 1.1 * o.min_repetition_ns) << "cost " << cost_ns << " ns";
    }
    EXPECT_NEAR(t->timed_ns, timed, 1e-6 * timed);
    // The samples are per-call times, as before: the median is the kernel's cost.
    EXPECT_NEAR(t->median_ns, cost_ns, 0.011 * cost_ns);
  }
}

}  // namespace
}  // namespace blocktune::tuner
