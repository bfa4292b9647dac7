// Tests of the grouped_matmul kernel: every ISA path and both dtypes against
// GroupedMatmulReference over group layouts with empty groups (first, last, all), one group
// holding every row, G = 1, 1-row groups, every direct-kernel height 1-12 and 2-3 row passes, groups either side of the
// direct/packed threshold (32 rows), rows past the sum,
// k/n remainders, at 1-3 threads; Validate / ValidateGroupSizes rejections; the seeded group
// generator; and what the KernelSpec declares for grouped matmul (the generic contract of every
// kernel is tests/kernels/conformance_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "tests/common/kernels.h"

namespace blocktune::kernels {
namespace grouped_matmul {
namespace {

using test::HwWithIsa;
using test::RandomVector;
using test::ToBf16;

struct Layout {
  const char* name;
  int64_t m, k, n;
  std::vector<int32_t> sizes;
};

std::vector<Layout> Layouts() {
  return {
      {"EmptyFirstLast", 50, 37, 45, {0, 20, 7, 23, 0}},
      {"OneGroupAllRows", 61, 40, 70, {0, 0, 61, 0}},
      {"G1", 37, 29, 33, {37}},
      {"OneRowGroups", 60, 33, 65, {1, 13, 1, 2, 8, 30, 1}},
      {"DirectHeights", 240, 70, 77, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 23, 24, 25, 32, 33}},
      {"SumBelowM", 80, 20, 17, {10, 0, 25}},
      {"AllEmpty", 10, 8, 9, {0, 0, 0}},
      {"NoGroups", 5, 8, 9, {}},
      {"TinyK1N1", 9, 1, 1, {4, 0, 5}},
      {"Skewed", 300, 263, 129, GroupedMatmulSkewedGroupSizes(300, 8, 3)},
      {"HeavyHead", 200, 70, 100, {170, 0, 3, 27}},
  };
}

struct Case {
  std::string isa;
  DType dtype;
  Layout layout;
  GroupedMatmulBlockSizes bs;
  int threads;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.isa + "_" + std::string(DTypeName(c.dtype)) + "_" + c.layout.name + "_m" + std::to_string(c.layout.m) +
         "_k" + std::to_string(c.layout.k) + "_n" + std::to_string(c.layout.n) + "_tm" + std::to_string(c.bs.tile_m) +
         "_tk" + std::to_string(c.bs.tile_k) + "_tn" + std::to_string(c.bs.tile_n) + "_t" + std::to_string(c.threads);
}

std::vector<Case> AllCases() {
  // The smallest legal tiles (many k blocks of 16, many row tiles), a middling set, the default.
  const GroupedMatmulBlockSizes blocks[] = {{12, 16, 32}, {24, 40, 64}, {96, 256, 512}};
  std::vector<Case> out;
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (const Layout& l : Layouts()) {
        for (const auto& b : blocks) {
          for (int t : {1, 2, 3}) out.push_back({isa, dtype, l, b, t});
        }
      }
    }
  }
  return out;
}

struct Data {
  GroupedMatmulShape shape;
  std::vector<float> lhs, rhs, ref;
  std::vector<uint16_t> lhs16, rhs16;
};

Data MakeData(const Layout& l, DType dtype) {
  Data d;
  d.shape = {l.m, l.k, l.n, static_cast<int64_t>(l.sizes.size())};
  d.lhs = RandomVector(l.m * l.k, 1);
  d.rhs = RandomVector(d.shape.groups * l.k * l.n, 2);
  if (dtype == DType::kBF16) {
    d.lhs16 = ToBf16(&d.lhs);
    d.rhs16 = ToBf16(&d.rhs);
  }
  d.ref.resize(static_cast<size_t>(l.m * l.n));
  GroupedMatmulReference(d.shape, l.sizes.data(), d.lhs.data(), d.rhs.data(), d.ref.data());
  return d;
}

class GroupedMatmulVsReference : public testing::TestWithParam<Case> {};

TEST_P(GroupedMatmulVsReference, MatchesReference) {
  const Case& c = GetParam();
  const Data d = MakeData(c.layout, c.dtype);
  // NaN-filled output: an element the kernel forgets (including the zeroed tail) fails.
  std::vector<float> out(d.ref.size(), std::numeric_limits<float>::quiet_NaN());
  const auto s = c.dtype == DType::kBF16 ? GroupedMatmulWithIsa(c.isa, c.bs, d.shape, c.layout.sizes.data(),
                                                                d.lhs16.data(), d.rhs16.data(), out.data(), c.threads)
                                         : GroupedMatmulWithIsa(c.isa, c.bs, d.shape, c.layout.sizes.data(),
                                                                d.lhs.data(), d.rhs.data(), out.data(), c.threads);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  const VerifyReport r =
      Compare(out.data(), d.ref.data(), static_cast<int64_t>(out.size()), GroupedMatmulTolerance(d.shape.k));
  EXPECT_TRUE(r.ok) << "mismatches " << r.mismatches << " non-finite " << r.non_finite << " max abs err "
                    << r.max_abs_err;
}

INSTANTIATE_TEST_SUITE_P(Layouts, GroupedMatmulVsReference, testing::ValuesIn(AllCases()), CaseName);

TEST(GroupedMatmul, RowsPastTheGroupsAreZero) {
  const GroupedMatmulShape s{20, 8, 16, 2};
  const std::vector<int32_t> sizes = {3, 4};
  const auto lhs = RandomVector(s.m * s.k, 3);
  const auto rhs = RandomVector(s.groups * s.k * s.n, 4);
  std::vector<float> out(static_cast<size_t>(s.m * s.n), 7.0f);
  ASSERT_TRUE(GroupedMatmul({96, 256, 512}, s, sizes.data(), lhs.data(), rhs.data(), out.data(), 2).has_value());
  for (int64_t i = 7 * s.n; i < s.m * s.n; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], 0.0f);
}

TEST(GroupedMatmul, KZeroGivesZeros) {
  const GroupedMatmulShape s{6, 0, 5, 2};
  const std::vector<int32_t> sizes = {2, 3};
  std::vector<float> out(30, 7.0f);
  const float dummy = 0;
  ASSERT_TRUE(GroupedMatmul({96, 256, 512}, s, sizes.data(), &dummy, &dummy, out.data(), 1).has_value());
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

TEST(GroupedMatmul, BitwiseIndependentOfThreadsAndTiles_m) {
  const GroupedMatmulShape s{700, 300, 200, 16};
  const auto sizes = GroupedMatmulSkewedGroupSizes(s.m, s.groups, 11);
  const auto lhs = RandomVector(s.m * s.k, 5);
  const auto rhs = RandomVector(s.groups * s.k * s.n, 6);
  std::vector<float> first(static_cast<size_t>(s.m * s.n)), second(first.size()), third(first.size());
  ASSERT_TRUE(GroupedMatmul({24, 64, 64}, s, sizes.data(), lhs.data(), rhs.data(), first.data(), 1).has_value());
  ASSERT_TRUE(GroupedMatmul({24, 64, 64}, s, sizes.data(), lhs.data(), rhs.data(), second.data(), 3).has_value());
  ASSERT_TRUE(GroupedMatmul({96, 64, 128}, s, sizes.data(), lhs.data(), rhs.data(), third.data(), 2).has_value());
  EXPECT_EQ(first, second);  // the work split never changes the summation order of an element
  EXPECT_EQ(first, third);   // nor do tile_m / tile_n (only tile_k sets the order)
}

// --- Validate -----------------------------------------------------------------------------------

struct Rejection {
  const char* isa;
  GroupedMatmulBlockSizes bs;
  GroupedMatmulShape shape;
  const char* path;
};

TEST(GroupedMatmulValidate, RejectsWithPath) {
  const Rejection cases[] = {
      {"avx512", {0, 256, 512}, {8, 8, 8, 1}, "config.tile_m"},
      {"avx512", {96, -1, 512}, {8, 8, 8, 1}, "config.tile_k"},
      {"avx512", {96, 256, 0}, {8, 8, 8, 1}, "config.tile_n"},
      {"avx512", {50, 256, 512}, {8, 8, 8, 1}, "config.tile_m"},      // not a multiple of 12
      {"avx512", {96, 256, 48}, {8, 8, 8, 1}, "config.tile_n"},       // not a multiple of 32
      {"avx2", {8, 256, 512}, {8, 8, 8, 1}, "config.tile_m"},         // not a multiple of 6
      {"base", {96, 256, 40}, {8, 8, 8, 1}, "config.tile_n"},         // not a multiple of 16
      {"avx512", {96, 1024, 32768}, {8, 8, 8, 1}, "config.tile_n"},   // 128 MiB B panel
      {"avx512", {65532, 1024, 512}, {8, 8, 8, 1}, "config.tile_m"},  // 256 MiB A block
      {"avx512", {96, int64_t{1} << 40, 512}, {8, 8, 8, 1}, "config.tile_k"},
      {"avx512", {96, 256, 512}, {-1, 8, 8, 1}, "shape.m"},
      {"avx512", {96, 256, 512}, {8, 8, 8, -2}, "shape.groups"},
  };
  for (const Rejection& r : cases) {
    const auto s = Validate(r.bs, r.shape, HwWithIsa(r.isa));
    ASSERT_FALSE(s.has_value()) << r.path;
    EXPECT_EQ(s.error().path, r.path) << s.error().ToString();
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(s.error().message.empty());
  }
}

TEST(GroupedMatmulValidate, AcceptsTileMultiplesAndTilesLargerThanDims) {
  EXPECT_TRUE(Validate({96, 256, 48}, {8, 8, 8, 1}, HwWithIsa("avx2")).has_value());
  EXPECT_TRUE(Validate({8, 256, 48}, {8, 8, 8, 1}, HwWithIsa("base")).has_value());
  EXPECT_TRUE(Validate({192, 512, 2048}, {1, 1, 1, 1}, HwWithIsa("avx512")).has_value());
  EXPECT_TRUE(Validate({12, 1, 32}, {0, 0, 0, 0}, HwWithIsa("avx512")).has_value());
}

TEST(GroupedMatmulValidate, GroupSizes) {
  const GroupedMatmulShape s{10, 4, 4, 3};
  const std::vector<int32_t> negative = {2, -1, 3};
  const std::vector<int32_t> too_many = {4, 4, 3};
  const std::vector<int32_t> ok = {4, 0, 6};
  auto e = ValidateGroupSizes(s, negative.data());
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "group_sizes[1]");
  e = ValidateGroupSizes(s, too_many.data());
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "group_sizes[2]");
  EXPECT_TRUE(ValidateGroupSizes(s, ok.data()).has_value());
}

TEST(GroupedMatmul, InvalidInputsReturnErrorsWithoutWriting) {
  const GroupedMatmulShape s{8, 8, 8, 2};
  std::vector<float> a(64, 1.0f), b(128, 1.0f), c(64, 5.0f);
  const std::vector<int32_t> sizes = {4, 5};  // 9 > m
  const std::vector<int32_t> good = {4, 4};
  auto e = GroupedMatmul({96, 256, 512}, s, sizes.data(), a.data(), b.data(), c.data(), 1);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "group_sizes[1]");
  e = GroupedMatmul({7, 256, 512}, s, good.data(), a.data(), b.data(), c.data(), 1);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "config.tile_m");
  e = GroupedMatmul({96, 256, 512}, s, good.data(), a.data(), b.data(), c.data(), 0);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "threads");
  e = GroupedMatmul({96, 256, 512}, s, nullptr, a.data(), b.data(), c.data(), 1);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().path, "group_sizes");
  for (float x : c) EXPECT_EQ(x, 5.0f);
  float x = 0;
  EXPECT_FALSE(GroupedMatmulWithIsa("sse9", {96, 256, 512}, {1, 1, 1, 1}, good.data(), &x, &x, &x, 1).has_value());
}

// --- Tolerance ----------------------------------------------------------------------------------

TEST(GroupedMatmulTolerance, PassesCorrectFailsOneDroppedKBlockOrGroup) {
  const GroupedMatmulShape s{120, 300, 64, 4};
  const std::vector<int32_t> sizes = {50, 0, 40, 20};
  const auto lhs = RandomVector(s.m * s.k, 7);
  const auto rhs = RandomVector(s.groups * s.k * s.n, 8);
  std::vector<float> out(static_cast<size_t>(s.m * s.n)), ref(out.size());
  GroupedMatmulReference(s, sizes.data(), lhs.data(), rhs.data(), ref.data());
  ASSERT_TRUE(GroupedMatmul({24, 64, 64}, s, sizes.data(), lhs.data(), rhs.data(), out.data(), 1).has_value());
  EXPECT_TRUE(Compare(out.data(), ref.data(), s.m * s.n, GroupedMatmulTolerance(s.k)).ok);
  // Without the last k term of every row: almost every element moves by ~0.25 and must fail.
  auto lhs_drop = lhs;
  for (int64_t i = 0; i < s.m; ++i) lhs_drop[static_cast<size_t>(i * s.k + s.k - 1)] = 0;
  ASSERT_TRUE(GroupedMatmul({24, 64, 64}, s, sizes.data(), lhs_drop.data(), rhs.data(), out.data(), 1).has_value());
  VerifyReport r = Compare(out.data(), ref.data(), s.m * s.n, GroupedMatmulTolerance(s.k));
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 90 * s.n / 2);
  // Using the wrong expert's rhs for one group must fail too.
  const std::vector<int32_t> shifted = {50, 40, 0, 20};
  ASSERT_TRUE(GroupedMatmul({24, 64, 64}, s, shifted.data(), lhs.data(), rhs.data(), out.data(), 1).has_value());
  r = Compare(out.data(), ref.data(), s.m * s.n, GroupedMatmulTolerance(s.k));
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 30 * s.n);
}

// --- Group-size generator -----------------------------------------------------------------------

TEST(GroupedMatmulGenerator, DeterministicSkewedWithEmpties) {
  for (int64_t g : {1, 3, 8, 64, 256}) {
    for (int64_t m : {1, 17, 4096}) {
      const auto a = GroupedMatmulSkewedGroupSizes(m, g, 5);
      const auto b = GroupedMatmulSkewedGroupSizes(m, g, 5);
      EXPECT_EQ(a, b);
      ASSERT_EQ(static_cast<int64_t>(a.size()), g);
      EXPECT_EQ(std::accumulate(a.begin(), a.end(), int64_t{0}), GroupedMatmulUsedRows(m));
      int64_t empties = 0;
      for (int32_t x : a) {
        EXPECT_GE(x, 0);
        empties += x == 0;
      }
      if (m == 4096) {
        EXPECT_EQ(empties, g / 8) << g;  // rounding empties none at this m
      }
    }
  }
  const auto x = GroupedMatmulSkewedGroupSizes(4096, 8, 1);
  const auto y = GroupedMatmulSkewedGroupSizes(4096, 8, 2);
  EXPECT_NE(x, y);
  // Zipf head: 1 / H_7 = 140 / 363 of 3840 rows = 1481 (+-1 for integer weights and leftovers).
  EXPECT_NEAR(*std::max_element(x.begin(), x.end()), 1481, 2);
  EXPECT_EQ(GroupedMatmulUsedRows(4096), 3840);
  EXPECT_EQ(GroupedMatmulUsedRows(15), 15);
}

// --- KernelSpec ---------------------------------------------------------------------------------

Problem MakeProblem(int64_t m, int64_t k, int64_t n, int64_t groups, DType dtype = DType::kF32) {
  return test::MakeProblem({{"m", m}, {"k", k}, {"n", n}, {"groups", groups}}, dtype);
}

TEST(GroupedMatmulSpec, Declarations) {
  const KernelSpec& spec = GroupedMatmulSpec();
  EXPECT_EQ(spec.name(), "grouped_matmul");
  ASSERT_EQ(spec.dims().size(), 4u);
  EXPECT_STREQ(spec.dims()[0].bucket.name, "m");
  EXPECT_STREQ(spec.dims()[3].bucket.name, "groups");
  EXPECT_EQ(spec.dtypes(), (std::vector<DType>{DType::kF32, DType::kBF16}));
  ASSERT_EQ(spec.params().size(), 3u);
  EXPECT_EQ(spec.params()[0].name, "tile_m");
  EXPECT_EQ(spec.params()[1].name, "tile_k");
  EXPECT_EQ(spec.params()[2].name, "tile_n");
  EXPECT_EQ(spec.Flops(MakeProblem(32, 3, 4, 2)), 2.0 * 30 * 3 * 4);
  EXPECT_EQ(spec.Bytes(MakeProblem(32, 3, 4, 8)), 4.0 * (30 * 3 + 7 * 3 * 4 + 32 * 4));
  EXPECT_EQ(spec.Bytes(MakeProblem(32, 3, 4, 8, DType::kBF16)), 2.0 * (30 * 3 + 7 * 3 * 4) + 4.0 * 32 * 4);
  EXPECT_EQ(spec.Bucket(MakeProblem(3000, 1000, 1024, 5)).first, "m4096_k1024_n1024_groups8");
  EXPECT_TRUE(spec.ValidateProblem(MakeProblem(4096, 1024, 1024, 64)).has_value());
  EXPECT_FALSE(spec.ValidateProblem(MakeProblem(4096, 1024, 1024, 0)).has_value());
}

TEST(GroupedMatmulSpec, ConfigSpaceSizeAndValidity) {
  const KernelSpec& spec = GroupedMatmulSpec();
  const auto space = spec.ConfigSpace();
  EXPECT_GE(space.size(), 30u);
  EXPECT_LE(space.size(), 200u);
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (const Config& c : space) {
    const auto s = spec.ValidateConfig(c, MakeProblem(4096, 1024, 1024, 8), hw);
    if (!s) {
      EXPECT_FALSE(s.error().message.empty()) << c.ToString();
      EXPECT_TRUE(s.error().path.starts_with("config.")) << c.ToString();
    }
  }
  // Every candidate is a multiple of every ISA's micro-tile, so every config validates everywhere.
  for (const char* isa : {"avx512", "avx2", "base"}) {
    for (const Config& c : space) {
      EXPECT_TRUE(spec.ValidateConfig(c, MakeProblem(4096, 1024, 1024, 8), HwWithIsa(isa)).has_value())
          << isa << " " << c.ToString();
    }
  }
}

TEST(GroupedMatmulSpec, VerificationProblemHasFullTilesAndRemainders) {
  const KernelSpec& spec = GroupedMatmulSpec();
  const Config c = ToConfig(GroupedMatmulBlockSizes{48, 128, 256});
  const Problem p = spec.VerificationProblem(c, MakeProblem(4096, 4096, 4096, 64));
  EXPECT_EQ(p.Dim("m"), 3 * 48 + 13);
  EXPECT_EQ(p.Dim("k"), 128 + 13);
  EXPECT_EQ(p.Dim("n"), 256 + 13);
  EXPECT_EQ(p.Dim("groups"), 8);
  EXPECT_TRUE(spec.ValidateProblem(p).has_value());
  // The Zipf head group is larger than one tile_m for every tile_m candidate.
  for (int64_t tm : {24, 48, 96, 192}) {
    const Problem q =
        spec.VerificationProblem(ToConfig(GroupedMatmulBlockSizes{tm, 128, 256}), MakeProblem(4096, 4096, 4096, 64));
    const auto sizes = GroupedMatmulSkewedGroupSizes(q.Dim("m"), q.Dim("groups"), 1);
    EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), tm);
  }
  const Problem small = spec.VerificationProblem(c, MakeProblem(16, 8, 4096, 2));
  EXPECT_EQ(small.Dim("m"), 16);
  EXPECT_EQ(small.Dim("k"), 8);
  EXPECT_EQ(small.Dim("groups"), 2);
}

}  // namespace
}  // namespace grouped_matmul
}  // namespace blocktune::kernels
