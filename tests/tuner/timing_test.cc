// Timing helpers: rotation sets sized against the caches, the robust CV, the physical peaks the
// floor is computed from, and the environment recorded with a sweep.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/core/kernel_spec.h"
#include "tuner/timing/environment.h"
#include "tuner/timing/floor.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {
namespace {

TEST(Timing, RotationSetsExceedTheCacheShareWithinCaps) {
  // 1 MiB per set, 2 MiB L2, no L3: 4 x 2 MiB = 8 sets.
  EXPECT_EQ(timing::RotationSets(1 << 20, 2 << 20, 0, 2, 1), 8);
  // The L3 share of one thread of 2 cores (16 MiB) dominates: 16 sets.
  EXPECT_EQ(timing::RotationSets(1 << 20, 2 << 20, 32 << 20, 2, 1), 16);
  EXPECT_EQ(timing::RotationSets(1024, 2 << 20, 0, 2, 1), 64);  // capped at 64 sets
  // 50 MiB sets against a 512 MiB L3 share: 11 wanted, 5 fit in 256 MiB.
  EXPECT_EQ(timing::RotationSets(50.0 * (1 << 20), 2 << 20, int64_t{1} << 30, 2, 1), 5);
  EXPECT_EQ(timing::RotationSets(1e9, 2 << 20, 0, 2, 1), 1);
}

TEST(Timing, RobustCvIgnoresOneOutlierButNotGeneralSpread) {
  EXPECT_NEAR(timing::RobustCv({10, 10, 10, 10, 18}), 0, 1e-12);
  EXPECT_GT(timing::CoefficientOfVariation({10, 10, 10, 10, 18}), 0.3);
  EXPECT_NEAR(timing::RobustCv({8, 10, 12}), 1.4826 * 2 / 10, 1e-12);
  EXPECT_EQ(timing::RobustCv({5}), 0);
}

TEST(Floor, PeaksFollowTheIsaAndThreads) {
  const timing::PhysicalPeaks one = timing::PeaksFor("avx512", DType::kF32, 1);
  EXPECT_DOUBLE_EQ(one.flops_per_ns, 384);
  EXPECT_DOUBLE_EQ(timing::PeaksFor("avx2", DType::kF32, 2).flops_per_ns, 384);
  EXPECT_DOUBLE_EQ(timing::PeaksFor("avx512", DType::kBF16, 1).flops_per_ns, 768);
  const KernelSpec* mm = FindKernel("matmul");
  ASSERT_NE(mm, nullptr);
  const Problem p{DType::kF32, NamedInts({{"m", 1024}, {"n", 1024}, {"k", 1024}})};
  EXPECT_NEAR(timing::PhysicalFloorNs(*mm, p, one), 2.0 * 1024 * 1024 * 1024 / 384, 1);
}

TEST(Environment, CapturesAffinityCompilerAndFlags) {
  const timing::SweepEnvironment e = timing::CaptureEnvironment("blocktune x");
  EXPECT_FALSE(e.affinity.empty());
  EXPECT_FALSE(e.compiler.empty());
  EXPECT_FALSE(e.build_flags.empty());
  EXPECT_FALSE(e.load_average.empty());
  EXPECT_EQ(e.tool_version, "blocktune x");
}

}  // namespace
}  // namespace blocktune::tuner
