// The in-process evaluator's timing verdicts: input rotation, times below the physical floor
// (invalid), and spread that stays too wide after the retries (unstable); and its reference
// cache.
#include <gtest/gtest.h>

#include <memory>

#include "tests/tuner/fake_kernel.h"
#include "tuner/evaluator.h"
#include "tuner/search/stored_buckets.h"

namespace blocktune::tuner {
namespace {

using blocktune::testing::FakeSpec;
using search::kBelowFloorDetail;

// The fake kernel again, with hooks: how many instances were made, and a flop count no
// machine could do in the time the fake takes.
class CountingSpec : public FakeSpec {
 public:
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& p, uint64_t seed) const override {
    ++instances;
    return FakeSpec::MakeInstance(p, seed);
  }
  double Flops(const Problem& p) const override { return impossible ? 1e15 : FakeSpec::Flops(p); }
  mutable int instances = 0;
  bool impossible = false;
};

EvalRequest FakeEval(const KernelSpec& spec) {
  EvalRequest r;
  r.spec = &spec;
  r.problem = Problem{DType::kF32, NamedInts({{"n", 1024}})};
  r.timing.min_repetition_ns = 100e3;
  r.timing.repetitions = 3;
  r.timing.max_cv = 1.0;
  return r;
}

TEST(Evaluator, RotatesThroughInputSets) {
  CountingSpec spec;
  EvalRequest r = FakeEval(spec);
  r.timing.rotation_sets = 5;
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
  EXPECT_EQ(spec.instances, 1 + 5);  // the verification instance and five timed sets
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 3}}), m);
  EXPECT_EQ(spec.instances, 1 + 5);  // reused for the next config of the bucket
}

TEST(Evaluator, AConfigPastTheStopLineKeepsTwoRepetitionsAndSaysSo) {
  CountingSpec spec;
  EvalRequest r = FakeEval(spec);
  r.timing.stop_above_ns = 1;  // every call is slower than 1 ns: no contender
  r.timing.max_cv = 0;         // would make any spread `unstable`; a stopped timing is not judged by it
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), m);
  ASSERT_EQ(m.outcome, Outcome::kOk) << m.detail;
  EXPECT_EQ(m.samples_ns.size(), 2u);
  EXPECT_EQ(m.detail.rfind("stopped after 2 of 3 repetitions", 0), 0u) << m.detail;
  r.timing.stop_above_ns = 0;
  r.timing.max_cv = 1.0;
  Measurement full;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), full);
  ASSERT_EQ(full.outcome, Outcome::kOk) << full.detail;
  EXPECT_EQ(full.samples_ns.size(), 3u);
  EXPECT_TRUE(full.detail.empty()) << full.detail;
}

TEST(Evaluator, TimesBelowThePhysicalFloorAreInvalid) {
  CountingSpec spec;
  spec.impossible = true;  // 1e15 flops in ~150 us
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(FakeEval(spec), NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kInvalid);
  EXPECT_EQ(m.detail.rfind(kBelowFloorDetail, 0), 0u) << m.detail;
  EvalRequest unchecked = FakeEval(spec);
  unchecked.timing.check_floor = false;
  eval.Measure(unchecked, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kOk);
}

TEST(Evaluator, TooNoisyAfterRetriesIsUnstable) {
  FakeSpec spec;
  EvalRequest r = FakeEval(spec);
  // Below any spread: a robust cv of exactly 0 is possible (two of three samples equal), and
  // `spread > max_cv` must hold on every attempt for the retries to run out.
  r.timing.max_cv = -1;
  r.timing.max_retries = 2;
  InProcessEvaluator eval;
  Measurement m;
  eval.Measure(r, NamedInts({{"a", 3}, {"b", 2}}), m);
  EXPECT_EQ(m.outcome, Outcome::kUnstable);
  EXPECT_NE(m.detail.find("after 3 timing attempts"), std::string::npos) << m.detail;
  EXPECT_EQ(m.detail.rfind("robust cv", 0), 0u) << m.detail;
  EXPECT_EQ(m.samples_ns.size(), 3u);
}

// Verification problems that differ by config (as matmul's do, by block size), more of them
// than the 16 instances the reference cache used to hold.
class ManyProblemsSpec : public CountingSpec {
 public:
  Problem VerificationProblem(const Config& c, const Problem& p) const override {
    Problem small = p;
    small.dims.Set("n", 64 + c.Get("a").value_or(0));
    return small;
  }
};

TEST(Evaluator, ComputesEachReferenceOnceWhileTheyFit) {
  ManyProblemsSpec spec;
  EvalRequest r = FakeEval(spec);
  r.timing.rotation_sets = 1;
  r.timing.repetitions = 1;
  InProcessEvaluator eval;
  Measurement m;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t a = 1; a <= 20; ++a) {
      eval.Measure(r, NamedInts({{"a", a}, {"b", 2}}), m);
      EXPECT_EQ(m.outcome, Outcome::kOk) << m.detail;
    }
    // 20 verification instances (a few KiB each, far under the cache's 128 MiB) and one timed
    // set; the second pass makes none.
    EXPECT_EQ(spec.instances, 20 + 1) << "pass " << pass;
  }
}

}  // namespace
}  // namespace blocktune::tuner
