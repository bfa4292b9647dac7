// Tests of the matmul kernel: every ISA path against MatmulReference over shapes that hit
// empty dims, single elements, and remainders of every block and micro-tile, at 1-3 threads;
// Validate's rejections; and what the KernelSpec declares for matmul (the generic contract of
// every kernel is tests/kernels/conformance_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/core/parallel.h"
#include "kernels/matmul/matmul.h"
#include "tests/common/kernels.h"

namespace blocktune::kernels {
namespace {

using test::HwWithIsa;
using test::RandomVector;

struct MatmulCase {
  std::string isa;
  MatmulShape shape;
  MatmulBlockSizes bs;
  int threads;
  DType dtype;
};

std::string CaseName(const testing::TestParamInfo<MatmulCase>& info) {
  const MatmulCase& c = info.param;
  return c.isa + "_" + std::string(DTypeName(c.dtype)) + "_m" + std::to_string(c.shape.m) + "_n" +
         std::to_string(c.shape.n) + "_k" + std::to_string(c.shape.k) + "_bm" + std::to_string(c.bs.block_m) + "_bn" +
         std::to_string(c.bs.block_n) + "_bk" + std::to_string(c.bs.block_k) + "_t" + std::to_string(c.threads);
}

std::vector<MatmulCase> AllCases() {
  // Shapes: empty dims, 1s, exact tiles, one past a tile, primes, larger than the default block.
  const MatmulShape shapes[] = {{0, 5, 7},
                                {5, 0, 7},
                                {5, 7, 0},
                                {1, 1, 1},
                                {1, 33, 1},
                                {13, 1, 17},
                                {12, 32, 16},
                                {13, 33, 17},
                                {37, 129, 263},
                                {100, 200, 300},
                                {25, 65, 129},
                                {97, 513, 257},
                                {2, 700, 40},
                                {300, 17, 40},
                                // Skinny m (at most 64 rows per thread, n above 64): the first row
                                // tile streams B and packs it (one row tile: B read in place only),
                                // with n off the tile and k remainders; 64 x 515 x 257 splits at 2-3
                                // threads.
                                {1, 100, 37},
                                {5, 333, 300},
                                {31, 1000, 129},
                                {64, 515, 257},
                                {64, 97, 1030},
                                // Row splits of more than 64 rows per thread at 2-3 threads.
                                {260, 100, 300},
                                {390, 129, 70}};
  // Block sizes: the smallest legal (many blocks, k blocks of 16), a middling one, the default.
  const MatmulBlockSizes blocks[] = {{12, 32, 16}, {24, 64, 40}, {96, 512, 256}};
  std::vector<MatmulCase> out;
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (const auto& s : shapes) {
      for (const auto& b : blocks) {
        for (int t : {1, 2, 3}) {
          for (DType d : {DType::kF32, DType::kBF16}) out.push_back({isa, s, b, t, d});
        }
      }
    }
  }
  return out;
}

class MatmulVsReference : public testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulVsReference, MatchesReference) {
  const MatmulCase& c = GetParam();
  const MatmulShape& s = c.shape;
  auto a = RandomVector(s.m * s.k, 1);
  auto b = RandomVector(s.k * s.n, 2);
  // NaN-filled output: an element the kernel forgets to write (or reads before writing) fails.
  std::vector<float> out(static_cast<size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> ref(static_cast<size_t>(s.m * s.n));
  if (c.dtype == DType::kBF16) {
    // bf16 storage; the reference sees the same (exactly widened) values.
    std::vector<BF16> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = BF16ToFloat(a16[i] = FloatToBF16(a[i]));
    for (size_t i = 0; i < b.size(); ++i) b[i] = BF16ToFloat(b16[i] = FloatToBF16(b[i]));
    ASSERT_TRUE(MatmulWithIsa(c.isa, c.bs, s, a16.data(), b16.data(), out.data(), c.threads).has_value());
  } else {
    ASSERT_TRUE(MatmulWithIsa(c.isa, c.bs, s, a.data(), b.data(), out.data(), c.threads).has_value());
  }
  MatmulReference(s, a.data(), b.data(), ref.data());
  const VerifyReport r = Compare(out.data(), ref.data(), s.m * s.n, MatmulTolerance(s.k));
  EXPECT_TRUE(r.ok) << "mismatches " << r.mismatches << " non-finite " << r.non_finite << " max abs err "
                    << r.max_abs_err;
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulVsReference, testing::ValuesIn(AllCases()), CaseName);

TEST(Matmul, HostPathMatchesReferenceAndReportsIsa) {
  const std::string isa = MatmulIsa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "portable") << isa;
  const MatmulShape s{61, 95, 130};
  const auto a = RandomVector(s.m * s.k, 3);
  const auto b = RandomVector(s.k * s.n, 4);
  std::vector<float> out(static_cast<size_t>(s.m * s.n)), ref(out.size());
  ASSERT_TRUE(Matmul(MatmulBlockSizes{24, 64, 48}, s, a.data(), b.data(), out.data(), 2).has_value());
  MatmulReference(s, a.data(), b.data(), ref.data());
  EXPECT_TRUE(Compare(out.data(), ref.data(), s.m * s.n, MatmulTolerance(s.k)).ok);
}

TEST(Matmul, ReferenceSmallExact) {
  const float a[] = {1, 2, 3, 4, 5, 6};     // 2x3
  const float b[] = {7, 8, 9, 10, 11, 12};  // 3x2
  float c[4] = {};
  MatmulReference({2, 2, 3}, a, b, c);
  EXPECT_EQ(c[0], 58);
  EXPECT_EQ(c[1], 64);
  EXPECT_EQ(c[2], 139);
  EXPECT_EQ(c[3], 154);
}

TEST(Matmul, RepeatedCallsOverwriteAndAreDeterministic) {
  const MatmulShape s{50, 70, 90};
  const auto a = RandomVector(s.m * s.k, 5);
  const auto b = RandomVector(s.k * s.n, 6);
  std::vector<float> first(static_cast<size_t>(s.m * s.n), 123.0f), second(first.size(), -7.0f);
  ASSERT_TRUE(Matmul(MatmulBlockSizes{24, 32, 32}, s, a.data(), b.data(), first.data(), 1).has_value());
  ASSERT_TRUE(Matmul(MatmulBlockSizes{24, 32, 32}, s, a.data(), b.data(), second.data(), 3).has_value());
  EXPECT_EQ(first, second);  // the thread split never changes the summation order of an element
}

// Matmul called from inside pool tasks: the nested run executes its threads one after another,
// so nothing in it may make them wait for each other.
TEST(Matmul, NestedInParallelRunMatchesReference) {
  const MatmulShape s{260, 100, 300};
  const auto a = RandomVector(s.m * s.k, 7);
  const auto b = RandomVector(s.k * s.n, 8);
  std::vector<float> ref(static_cast<size_t>(s.m * s.n));
  MatmulReference(s, a.data(), b.data(), ref.data());
  std::vector<std::vector<float>> out(2, std::vector<float>(ref.size()));
  std::atomic<int> failures{0};
  ParallelRun(2, [&](int t) {
    if (!Matmul(MatmulBlockSizes{24, 64, 48}, s, a.data(), b.data(), out[static_cast<size_t>(t)].data(), 2)) {
      failures.fetch_add(1);
    }
  });
  EXPECT_EQ(failures.load(), 0);
  for (const auto& o : out) EXPECT_TRUE(Compare(o.data(), ref.data(), s.m * s.n, MatmulTolerance(s.k)).ok);
}

// --- Validate ---------------------------------------------------------------------------------

struct Rejection {
  const char* isa;
  MatmulBlockSizes bs;
  MatmulShape shape;
  const char* path;
};

TEST(MatmulValidate, RejectsWithPath) {
  const Rejection cases[] = {
      {"avx512", {0, 512, 256}, {8, 8, 8}, "config.block_m"},
      {"avx512", {96, -32, 256}, {8, 8, 8}, "config.block_n"},
      {"avx512", {96, 512, 0}, {8, 8, 8}, "config.block_k"},
      {"avx512", {50, 512, 256}, {8, 8, 8}, "config.block_m"},      // not a multiple of 12
      {"avx512", {96, 48, 256}, {8, 8, 8}, "config.block_n"},       // not a multiple of 32
      {"avx2", {8, 512, 256}, {8, 8, 8}, "config.block_m"},         // not a multiple of 6
      {"base", {96, 40, 256}, {8, 8, 8}, "config.block_n"},         // not a multiple of 16
      {"avx512", {96, 32768, 1024}, {8, 8, 8}, "config.block_n"},   // 128 MiB B panel
      {"avx512", {65532, 512, 1024}, {8, 8, 8}, "config.block_m"},  // 256 MiB A panel
      {"avx512", {96, 512, int64_t{1} << 40}, {8, 8, 8}, "config.block_k"},
      {"avx512", {96, 512, 256}, {-1, 8, 8}, "shape.m"},
      {"avx512", {96, 512, 256}, {8, 8, -3}, "shape.k"},
  };
  for (const Rejection& r : cases) {
    const auto s = Validate(r.bs, r.shape, HwWithIsa(r.isa));
    ASSERT_FALSE(s.has_value()) << r.path;
    EXPECT_EQ(s.error().path, r.path) << s.error().ToString();
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(s.error().message.empty());
  }
}

TEST(MatmulValidate, AcceptsTileMultiplesPerIsa) {
  EXPECT_TRUE(Validate({96, 48, 256}, {8, 8, 8}, HwWithIsa("avx2")).has_value());  // 48 = 3 * 16
  EXPECT_TRUE(Validate({8, 48, 256}, {8, 8, 8}, HwWithIsa("base")).has_value());   // 8 = 2 * 4
  EXPECT_TRUE(Validate({12, 32, 1}, {0, 0, 0}, HwWithIsa("avx512")).has_value());
}

TEST(MatmulValidate, PanelLimitFollowsL3) {
  HardwareProfile hw = HwWithIsa("avx512");
  hw.l3_bytes = 1 << 20;  // 1 MiB L3: a 2 MiB B panel is absurd there
  const auto s = Validate({96, 2048, 256}, {8, 8, 8}, hw);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().path, "config.block_n");
}

TEST(Matmul, InvalidConfigReturnsErrorWithoutWriting) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 5.0f);
  const auto s = Matmul({0, 512, 256}, {8, 8, 8}, a.data(), b.data(), c.data(), 1);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().path, "config.block_m");
  for (float x : c) EXPECT_EQ(x, 5.0f);
  const auto t = Matmul({96, 512, 256}, {8, 8, 8}, a.data(), b.data(), c.data(), 0);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().path, "threads");
}

TEST(Matmul, UnknownIsaIsAnError) {
  float x = 0;
  EXPECT_FALSE(MatmulWithIsa("sse9", {96, 512, 256}, {1, 1, 1}, &x, &x, &x, 1).has_value());
}

TEST(Matmul, TileForIsa) {
  EXPECT_EQ(MatmulTileFor("avx512").rows, 12);
  EXPECT_EQ(MatmulTileFor("avx512").cols, 32);
  EXPECT_EQ(MatmulTileFor("avx2").rows, 6);
  EXPECT_EQ(MatmulTileFor("base").rows, 4);
  EXPECT_EQ(MatmulTileFor("portable").cols, 16);
}

// --- Tolerance --------------------------------------------------------------------------------

TEST(MatmulTolerance, PassesCorrectFailsOneDroppedKTerm) {
  const MatmulShape s{40, 60, 777};
  const auto a = RandomVector(s.m * s.k, 7);
  const auto b = RandomVector(s.k * s.n, 8);
  std::vector<float> out(static_cast<size_t>(s.m * s.n)), ref(out.size());
  MatmulReference(s, a.data(), b.data(), ref.data());
  ASSERT_TRUE(Matmul({24, 32, 128}, s, a.data(), b.data(), out.data(), 1).has_value());
  EXPECT_TRUE(Compare(out.data(), ref.data(), s.m * s.n, MatmulTolerance(s.k)).ok);
  // The same product without the last k term: must fail (almost every element moves ~0.25).
  auto a_drop = a;
  for (int64_t i = 0; i < s.m; ++i) a_drop[static_cast<size_t>(i * s.k + s.k - 1)] = 0;
  ASSERT_TRUE(Matmul({24, 32, 128}, s, a_drop.data(), b.data(), out.data(), 1).has_value());
  const VerifyReport r = Compare(out.data(), ref.data(), s.m * s.n, MatmulTolerance(s.k));
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, s.m * s.n / 2);
}

// --- KernelSpec -------------------------------------------------------------------------------

Problem MakeProblem(int64_t m, int64_t n, int64_t k, DType dtype = DType::kF32) {
  return test::MakeProblem({{"m", m}, {"n", n}, {"k", k}}, dtype);
}

TEST(MatmulSpec, Declarations) {
  const KernelSpec& spec = MatmulSpec();
  EXPECT_EQ(spec.name(), "matmul");
  ASSERT_EQ(spec.dims().size(), 3u);
  EXPECT_STREQ(spec.dims()[0].bucket.name, "m");
  EXPECT_EQ(spec.dims()[2].max_value, 65536);
  EXPECT_EQ(spec.dtypes(), (std::vector<DType>{DType::kF32, DType::kBF16}));
  ASSERT_EQ(spec.params().size(), 3u);
  EXPECT_EQ(spec.params()[0].name, "block_m");
  EXPECT_EQ(spec.Flops(MakeProblem(2, 3, 4)), 48.0);
  EXPECT_EQ(spec.Bytes(MakeProblem(2, 3, 4)), 4.0 * (8 + 12 + 6));
  EXPECT_EQ(spec.Bytes(MakeProblem(37, 77, 45, DType::kBF16)), 2.0 * (37 * 45 + 45 * 77) + 4.0 * 37 * 77);
  EXPECT_EQ(spec.Bucket(MakeProblem(100, 1000, 3)).first, "m128_n1024_k4");
}

TEST(MatmulSpec, ConfigSpaceSizeAndValidity) {
  const KernelSpec& spec = MatmulSpec();
  const auto space = spec.ConfigSpace();
  EXPECT_GE(space.size(), 100u);
  EXPECT_LE(space.size(), 250u);
  const HardwareProfile hw = HardwareProfile::Detect(1);
  int valid = 0;
  for (const Config& c : space) valid += spec.ValidateConfig(c, MakeProblem(1024, 1024, 1024), hw).has_value();
  EXPECT_GE(valid, 100);
}

TEST(MatmulSpec, VerificationProblemHasFullBlocksAndRemainders) {
  const KernelSpec& spec = MatmulSpec();
  const Config c = ToConfig(MatmulBlockSizes{48, 256, 128});
  const Problem p = spec.VerificationProblem(c, MakeProblem(4096, 4096, 4096));
  EXPECT_EQ(p.Dim("m"), 48 + 13);
  EXPECT_EQ(p.Dim("n"), 256 + 13);
  EXPECT_EQ(p.Dim("k"), 128 + 13);
  const Problem small = spec.VerificationProblem(c, MakeProblem(16, 4096, 8));
  EXPECT_EQ(small.Dim("m"), 16);
  EXPECT_EQ(small.Dim("k"), 8);
  EXPECT_TRUE(spec.ValidateProblem(p).has_value());
}

// The verification problem's outputs are what Verify counts: m x n of C.
TEST(MatmulSpec, VerifyCountsTheOutputsOfTheVerificationProblem) {
  const KernelSpec& spec = MatmulSpec();
  const Config c = ToConfig(MatmulBlockSizes{24, 64, 32});
  auto inst = spec.MakeInstance(spec.VerificationProblem(c, MakeProblem(128, 128, 128)), 42);
  inst->RunReference();
  ASSERT_TRUE(inst->Run(c, 2).has_value());
  const VerifyReport r = inst->Verify();
  EXPECT_TRUE(r.ok) << r.max_abs_err;
  EXPECT_EQ(r.elements, (24 + 13) * (64 + 13));
}

}  // namespace
}  // namespace blocktune::kernels
