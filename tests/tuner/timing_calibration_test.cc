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

// The batches TimeRepeated ran, from the fake clock: each batch reads the clock once before its
// first call and once after its last, so reads pair up; `calls_at_read` says how many calls had
// run at each read.
struct TimedBatch {
  int64_t calls = 0;
  double ns = 0;
};
std::vector<int64_t> calls_at_read;
int64_t fake_calls = 0;

double CountingClock() {
  clock_reads.push_back(fake_now_ns);
  calls_at_read.push_back(fake_calls);
  return fake_now_ns;
}

// Runs TimeRepeated on a fake kernel whose call i costs cost(i) ns; returns its batches.
template <typename Cost>
std::vector<TimedBatch> TimeOnFakeClock(timing::TimingOptions o, Cost cost, Result<timing::TimingResult>& out) {
  fake_now_ns = 0;
  fake_calls = 0;
  calls_at_read.clear();
  clock_reads.clear();
  o.clock_ns = &CountingClock;
  out = timing::TimeRepeated(
      [&]() -> Status {
        fake_now_ns += cost(fake_calls);
        ++fake_calls;
        return {};
      },
      o);
  std::vector<TimedBatch> batches;
  for (size_t r = 0; r + 1 < clock_reads.size(); r += 2) {
    batches.push_back({calls_at_read[r + 1] - calls_at_read[r], clock_reads[r + 1] - clock_reads[r]});
  }
  return batches;
}

timing::TimingOptions CalibrationOptions() {
  timing::TimingOptions o;
  o.min_repetition_ns = 20e6;
  o.repetitions = 5;
  return o;
}

TEST(TimingCalibration, AWarmUpCallCloseToWarmOnesSizesTheFirstRepetition) {
  // The 512^3 sweep's case: ~1.9 ms calls, the warm-up 2% slower. One warm-up call, then the
  // five repetitions: no second single call, no batch thrown away.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t i) { return i == 0 ? 1.02 * 1.9e6 : 1.9e6; }, t);
  ASSERT_TRUE(t);
  ASSERT_EQ(batches.size(), 6u);
  EXPECT_EQ(batches[0].calls, 1);
  EXPECT_DOUBLE_EQ(t->calibrate_ns, batches[0].ns);
  double timed = 0;
  for (size_t b = 1; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
    timed += batches[b].ns;
  }
  EXPECT_DOUBLE_EQ(t->timed_ns, timed);
  ASSERT_EQ(t->samples_ns.size(), 5u);
  EXPECT_DOUBLE_EQ(t->median_ns, 1.9e6);
}

TEST(TimingCalibration, AFirstBatchThatFallsALittleShortIsToppedUp) {
  // A warm-up 30% slow sizes a batch of 9 calls (17.1 ms): past 3/4 of the minimum, so two more
  // calls make it repetition 1 (11 calls, 20.9 ms) instead of a thrown-away batch.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t i) { return i == 0 ? 1.3 * 1.9e6 : 1.9e6; }, t);
  ASSERT_TRUE(t);
  ASSERT_EQ(batches.size(), 7u);  // warm-up, repetition 1 in two parts, four more
  EXPECT_EQ(batches[1].calls, 9);
  EXPECT_LT(batches[1].ns, 20e6);
  const double first = batches[1].ns + batches[2].ns;
  EXPECT_GE(first, 20e6);
  EXPECT_LE(first, 1.1 * 20e6);
  EXPECT_DOUBLE_EQ(t->samples_ns[0], first / static_cast<double>(batches[1].calls + batches[2].calls));
  EXPECT_DOUBLE_EQ(t->calibrate_ns, batches[0].ns);  // only the warm-up
  double timed = first;
  for (size_t b = 3; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
    timed += batches[b].ns;
  }
  EXPECT_DOUBLE_EQ(t->timed_ns, timed);
}

TEST(TimingCalibration, AFirstBatchFarShortIsCalibration) {
  // A cold warm-up 2x slow sizes a batch of half the minimum: its calls may still be warming, so
  // it is not kept; its own per-call time sizes repetition 1.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t i) { return i == 0 ? 2.0 * 1.9e6 : 1.9e6; }, t);
  ASSERT_TRUE(t);
  ASSERT_EQ(batches.size(), 7u);  // warm-up, the short batch, five repetitions
  EXPECT_LT(batches[1].ns, 0.75 * 20e6);
  EXPECT_DOUBLE_EQ(t->calibrate_ns, batches[0].ns + batches[1].ns);
  for (size_t b = 2; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
  }
}

TEST(TimingCalibration, ShortMeasurementsGrowTheCountAtMostTenfold) {
  // 50 ns calls: until a measurement lasts 100 us, the next batch is at most 10x its calls.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t) { return 50.0; }, t);
  ASSERT_TRUE(t);
  ASSERT_GE(batches.size(), 7u);
  for (size_t b = 1; b + 5 < batches.size(); ++b) {
    if (batches[b - 1].ns < 100e3) {
      EXPECT_LE(batches[b].calls, 10 * batches[b - 1].calls) << "batch " << b;
    }
  }
  for (size_t b = batches.size() - 5; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
  }
}

TEST(TimingCalibration, ARepetitionFarShortOfTheMinimumResizesTheCount) {
  // The first five calls 3x slow (a wide block's fresh buffers): the warm-up sizes repetition 1
  // at 4 calls, which the slow calls carry past the minimum; the next repetition at 4 fast calls
  // (7.6 ms) is far short, so the count is re-sized from it and the repetitions start over.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t i) { return i < 5 ? 3.0 * 1.9e6 : 1.9e6; }, t);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->samples_ns.size(), 5u);
  ASSERT_GE(batches.size(), 8u);  // warm-up, repetition 1, the short one, five repetitions
  double timed = 0, all = 0;
  for (const TimedBatch& b : batches) all += b.ns;
  for (size_t b = batches.size() - 5; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
    EXPECT_EQ(batches[b].calls, t->iterations);
    timed += batches[b].ns;
  }
  EXPECT_DOUBLE_EQ(t->timed_ns, timed);
  EXPECT_DOUBLE_EQ(t->calibrate_ns + t->timed_ns, all);
  EXPECT_DOUBLE_EQ(t->median_ns, 1.9e6);
}

TEST(TimingCalibration, AWarmUpLongerThanTheMinimumStillGetsFullRepetitions) {
  // A warm-up call of 25 ms (page faults, a preempted call) leaves no room to size anything; the
  // first repetition of one 1.9 ms call is far short and sizes the count.
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      CalibrationOptions(), [](int64_t i) { return i == 0 ? 25e6 : 1.9e6; }, t);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->samples_ns.size(), 5u);
  EXPECT_EQ(t->iterations, 11);
  for (size_t b = batches.size() - 5; b < batches.size(); ++b) {
    EXPECT_GE(batches[b].ns, 20e6);
    EXPECT_LE(batches[b].ns, 1.1 * 20e6);
  }
}

TEST(TimingCalibration, CalibrationOnlyKeepsNoSamples) {
  // repetitions == 0 (a decision round's calibration): the count, and everything is calibration.
  timing::TimingOptions o = CalibrationOptions();
  o.repetitions = 0;
  Result<timing::TimingResult> t;
  TimeOnFakeClock(
      o, [](int64_t i) { return i == 0 ? 1.1 * 370e3 : 370e3; }, t);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->samples_ns.empty());
  EXPECT_EQ(t->timed_ns, 0);
  EXPECT_DOUBLE_EQ(t->calibrate_ns, fake_now_ns);
  const double repetition = static_cast<double>(t->iterations) * 370e3;
  EXPECT_GE(repetition, 20e6);
  EXPECT_LE(repetition, 1.1 * 20e6);
}

TEST(TimingCalibration, TheIterationCapEndsTheGrowth) {
  // A minimum no batch of max_iterations calls reaches: the capped batch is repetition 1.
  timing::TimingOptions o = CalibrationOptions();
  o.max_iterations = 4;
  Result<timing::TimingResult> t;
  const auto batches = TimeOnFakeClock(
      o, [](int64_t) { return 1e3; }, t);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->iterations, 4);
  ASSERT_EQ(t->samples_ns.size(), 5u);
  for (const TimedBatch& b : batches) EXPECT_LE(b.calls, 4);
}

TEST(TimingCalibration, AConfigBehindTheLineStopsAfterTwoRepetitions) {
  // 50 ms calls (one a repetition) against a line at 40 ms: the warm-up and two repetitions,
  // then no more. One repetition fast enough keeps it going; without a line all five run.
  timing::TimingOptions o = CalibrationOptions();
  o.stop_above_ns = 40e6;
  Result<timing::TimingResult> t;
  auto batches = TimeOnFakeClock(
      o, [](int64_t) { return 50e6; }, t);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->stopped);
  EXPECT_EQ(t->samples_ns.size(), 2u);
  EXPECT_EQ(batches.size(), 3u);
  EXPECT_DOUBLE_EQ(t->median_ns, 50e6);
  // The second repetition (call 2) under the line: a contender, timed in full.
  batches = TimeOnFakeClock(
      o, [](int64_t i) { return i == 2 ? 39e6 : 50e6; }, t);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->stopped);
  EXPECT_EQ(t->samples_ns.size(), 5u);
  o.stop_above_ns = 0;
  batches = TimeOnFakeClock(
      o, [](int64_t) { return 50e6; }, t);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->stopped);
  EXPECT_EQ(t->samples_ns.size(), 5u);
  EXPECT_EQ(batches.size(), 6u);
}

}  // namespace
}  // namespace blocktune::tuner
