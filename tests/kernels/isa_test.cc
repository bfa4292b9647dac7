// Forcing an ISA level (kernels/core/hardware.h ForceIsa, BLOCKTUNE_ISA): detection lowers the
// level only to one the CPU runs, a forced process dispatches every kernel to that level and
// files its hardware key under it; and the skinny-n matmul path (A read in place) agrees with
// the reference on every level this host runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/hardware.h"
#include "kernels/matmul/matmul.h"

namespace blocktune {
namespace {

// Sets BLOCKTUNE_ISA for one scope and restores what was there.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) {
    if (const char* old = std::getenv(tables::kIsaEnvVar); old != nullptr) saved_ = old;
    setenv(tables::kIsaEnvVar, value, 1);
  }
  ~ScopedIsaEnv() {
    if (saved_.empty()) {
      unsetenv(tables::kIsaEnvVar);
    } else {
      setenv(tables::kIsaEnvVar, saved_.c_str(), 1);
    }
  }

 private:
  std::string saved_;
};

std::vector<std::string> RunnableLevels() {
  std::vector<std::string> out;
  for (const char* isa : {"avx512", "avx2", "base"}) {
    if (HostCanRun(isa)) out.emplace_back(isa);  // under BLOCKTUNE_ISA, the forced level and below
  }
  return out;
}

TEST(IsaLevel, RanksOrderTheLevels) {
  EXPECT_LT(tables::IsaRank("base"), tables::IsaRank("avx2"));
  EXPECT_LT(tables::IsaRank("avx2"), tables::IsaRank("avx512"));
  EXPECT_EQ(tables::IsaRank("portable"), tables::IsaRank("base"));
  EXPECT_EQ(tables::IsaRank("sse9"), -1);
}

TEST(IsaLevel, KeyIsaReadsTheLevelAKeyNames) {
  EXPECT_EQ(tables::KeyIsa("x86_64.avx2.amd.fam25_mod1.t2"), "avx2");
  EXPECT_EQ(tables::KeyIsa(tables::HardwareKey(tables::DetectHostCpu(), 1)), tables::DetectHostCpu().isa);
  EXPECT_EQ(tables::KeyIsa("x86_64"), "");
  EXPECT_EQ(tables::KeyIsa("x86_64.avx512"), "");
  EXPECT_EQ(tables::KeyIsa(""), "");
}

TEST(IsaLevel, EnvironmentLowersDetectionOnlyToRunnableLevels) {
  const std::string native = tables::DetectNativeCpu().isa;
  {
    ScopedIsaEnv env("base");
    EXPECT_EQ(tables::DetectHostCpu().isa, "base");
    EXPECT_NE(tables::HardwareKey(tables::DetectHostCpu(), 1).find(".base."), std::string::npos);
  }
  {
    ScopedIsaEnv env("portable");
    EXPECT_EQ(tables::DetectHostCpu().isa, "base");
  }
  {
    ScopedIsaEnv env("no_such_level");  // ignored by detection, refused by CheckIsaEnvironment
    EXPECT_EQ(tables::DetectHostCpu().isa, native);
    const auto s = CheckIsaEnvironment();
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find("no_such_level"), std::string::npos);
  }
  if (native != "avx512") {
    ScopedIsaEnv env("avx512");  // above this CPU: detection keeps the native level
    EXPECT_EQ(tables::DetectHostCpu().isa, native);
    const auto s = CheckIsaEnvironment();
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  }
}

TEST(IsaLevel, ForceIsaRefusesUnknownAndUnrunnableLevels) {
  const auto unknown = ForceIsa("avx1024");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(unknown.error().path, "isa");
  if (NativeIsa() != "avx512") {
    const auto above = ForceIsa("avx512");
    ASSERT_FALSE(above.has_value());
    EXPECT_EQ(above.error().code, ErrorCode::kFailedPrecondition);
  }
}

// The level is process-wide and fixed at the first detection (this binary's test registration
// already detects), so it is checked in a fresh process: "threadsafe" death tests re-execute
// this binary, which inherits BLOCKTUNE_ISA=base as a worker process would.
void ForcedProcessRunsBase() {
  if (!ForceIsa("base")) std::exit(10);
  if (HostHardware().cpu.isa != "base") std::exit(11);
  if (std::string(kernels::MatmulIsa()) != "portable") std::exit(12);
  if (HardwareProfile::Detect(2).Key().find(".base.") == std::string::npos) std::exit(13);
  if (HostCanRun("avx2")) std::exit(14);              // the process now acts as a base-level host
  const char* env = std::getenv(tables::kIsaEnvVar);  // what worker processes inherit
  if (env == nullptr || std::string(env) != "base") std::exit(15);
  // Kernels ran at base; asking for another level now is refused, not silently ignored.
  if (NativeIsa() != "base" && ForceIsa(NativeIsa()).has_value()) std::exit(16);
  std::exit(0);
}

TEST(IsaLevelDeathTest, ForcedProcessDispatchesAndKeysAtTheForcedLevel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedIsaEnv env("base");
  EXPECT_EXIT(ForcedProcessRunsBase(), ::testing::ExitedWithCode(0), "");
}

// Skinny n reads A in place (matmul.cc ComputeBlock); m, k and the block sizes leave
// remainders everywhere, at 1 and 2 threads, on every level this host runs.
TEST(IsaLevel, SkinnyNMatmulAgreesWithReferenceOnEveryLevel) {
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{130, 64, 300}, {37, 17, 129}, {200, 1, 70}, {61, 33, 513}, {12, 64, 64}};
  const kernels::MatmulBlockSizes blocks[] = {{48, 128, 128}, {96, 512, 256}, {48, 256, 64}};
  for (const std::string& isa : RunnableLevels()) {
    for (const Case& cs : cases) {
      const kernels::MatmulShape shape{cs.m, cs.n, cs.k};
      std::vector<float> a(static_cast<size_t>(cs.m * cs.k)), b(static_cast<size_t>(cs.k * cs.n));
      uint32_t x = 7;
      for (float& v : a) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
      for (float& v : b) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
      std::vector<float> ref(static_cast<size_t>(cs.m * cs.n));
      kernels::MatmulReference(shape, a.data(), b.data(), ref.data());
      for (const auto& bs : blocks) {
        for (int threads : {1, 2}) {
          std::vector<float> out(ref.size(), std::nanf(""));
          ASSERT_TRUE(kernels::MatmulWithIsa(isa, bs, shape, a.data(), b.data(), out.data(), threads).has_value())
              << isa;
          const VerifyReport r =
              Compare(out.data(), ref.data(), static_cast<int64_t>(out.size()), Tolerance{1e-5 * double(cs.k), 1e-4});
          EXPECT_TRUE(r.ok) << isa << " " << cs.m << "x" << cs.n << "x" << cs.k << " bm" << bs.block_m << " bn"
                            << bs.block_n << " bk" << bs.block_k << " t" << threads << " max_rel " << r.max_rel_err;
        }
      }
    }
  }
}

}  // namespace
}  // namespace blocktune
