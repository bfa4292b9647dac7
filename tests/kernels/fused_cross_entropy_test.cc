// Tests of fused_cross_entropy: forward (loss, lse) and backward (dx, dw) of every ISA path
// against the double reference over shapes with remainders in b, h and v, b = 1, v smaller than
// a block, ignored rows, the last vocabulary index as a label, z-loss 0 and non-zero, f32 and
// bf16, 1-3 threads; gradients against central finite differences; tolerances that catch a
// dropped block; Validate's rejections; and what the KernelSpec declares for it (the generic
// contract of every kernel is tests/kernels/conformance_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "tests/common/kernels.h"

namespace blocktune::kernels::fused_cross_entropy_test {
namespace {

using Shape = FusedCrossEntropyShape;
using Blocks = FusedCrossEntropyBlockSizes;
using test::HwWithIsa;

// Inputs in [-1, 1] (bf16-rounded when asked, f32 copies hold the rounded values), labels with
// every fourth row ignored and row 1 (row 0 when b = 1) at the last vocabulary index.
struct Data {
  Data(const Shape& s, DType dtype, uint64_t seed) : dtype(dtype) {
    SplitMix64 rng(seed);
    x.resize(static_cast<size_t>(s.b * s.h));
    w.resize(static_cast<size_t>(s.h * s.v));
    for (float& f : x) f = rng.NextSigned();
    for (float& f : w) f = rng.NextSigned();
    if (dtype == DType::kBF16) {
      for (float& f : x) {
        xb.push_back(FloatToBF16(f).bits);
        f = BF16ToFloat(BF16{xb.back()});
      }
      for (float& f : w) {
        wb.push_back(FloatToBF16(f).bits);
        f = BF16ToFloat(BF16{wb.back()});
      }
    }
    for (int64_t i = 0; i < s.b; ++i) {
      labels.push_back(static_cast<int32_t>(rng.Below(static_cast<uint64_t>(s.v))));
      if (i % 4 == 2) labels.back() = -1;
      if (i == std::min<int64_t>(1, s.b - 1)) labels.back() = static_cast<int32_t>(s.v - 1);
      dloss.push_back(rng.NextSigned());
    }
  }
  FusedCrossEntropyInputs Inputs(float z) const {
    FusedCrossEntropyInputs in;
    in.dtype = dtype;
    in.x = dtype == DType::kF32 ? static_cast<const void*>(x.data()) : xb.data();
    in.w = dtype == DType::kF32 ? static_cast<const void*>(w.data()) : wb.data();
    in.labels = labels.data();
    in.z_loss_weight = z;
    return in;
  }
  DType dtype;
  std::vector<float> x, w;
  std::vector<uint16_t> xb, wb;
  std::vector<int32_t> labels;
  std::vector<float> dloss;
};

struct Outputs {
  explicit Outputs(const Shape& s)
      : loss(static_cast<size_t>(s.b), kNan),
        lse(static_cast<size_t>(s.b), kNan),
        dx(static_cast<size_t>(s.b * s.h), kNan),
        dw(static_cast<size_t>(s.h * s.v), kNan) {}
  static constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> loss, lse, dx, dw;
  double dx_mass = 0, dw_mass = 0;
};

Outputs Reference(const Shape& s, const Data& d, float z) {
  Outputs r(s);
  FusedCrossEntropyReference(s, d.x.data(), d.w.data(), d.labels.data(), z, r.loss.data(), r.lse.data(), d.dloss.data(),
                             r.dx.data(), r.dw.data(), &r.dx_mass, &r.dw_mass);
  return r;
}

FusedCrossEntropyTolerances Tol(const Shape& s, DType dtype, float z, const Outputs& ref) {
  double max_lse = 0;
  for (float l : ref.lse) max_lse = std::max(max_lse, std::fabs(double(l)));
  return FusedCrossEntropyTolerance(s, dtype, z, max_lse, ref.dx_mass, ref.dw_mass);
}

std::string Describe(const VerifyReport& r) {
  return "mismatches " + std::to_string(r.mismatches) + "/" + std::to_string(r.elements) + " non-finite " +
         std::to_string(r.non_finite) + " max abs err " + std::to_string(r.max_abs_err) + " worst/tol " +
         std::to_string(r.max_rel_err);
}

// --- Against the reference ---------------------------------------------------------------------

struct Case {
  std::string isa;
  Shape shape;
  Blocks bs;
  DType dtype;
  int threads;
  float z;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.isa + "_b" + std::to_string(c.shape.b) + "_h" + std::to_string(c.shape.h) + "_v" +
         std::to_string(c.shape.v) + "_bb" + std::to_string(c.bs.block_b) + "_bh" + std::to_string(c.bs.block_h) +
         "_bv" + std::to_string(c.bs.block_v) + "_" + std::string(DTypeName(c.dtype)) + "_t" +
         std::to_string(c.threads) + (c.z == 0 ? "_z0" : "_z1e3");
}

std::vector<Case> AllCases() {
  // b = 1, v below one block, remainders of every block and micro-tile, several row and
  // vocabulary blocks, h not a multiple of block_h.
  const Shape shapes[] = {{1, 5, 7}, {3, 5, 7}, {13, 17, 33}, {37, 40, 100}, {25, 33, 129}, {50, 70, 300}};
  // The smallest legal blocks (many blocks of everything), a middling one, the default.
  const Blocks blocks[] = {{12, 16, 32}, {24, 32, 64}, {192, 256, 512}};
  const std::string host = HardwareProfile::Detect(1).cpu.isa;
  std::vector<Case> out;
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (const Shape& s : shapes) {
      for (const Blocks& b : blocks) {
        for (DType dt : {DType::kF32, DType::kBF16}) {
          // bf16 only changes the packing, so it runs on the host ISA only.
          if (dt == DType::kBF16 && std::string(isa) != (host == "base" ? "portable" : host)) continue;
          for (int t : {1, 2, 3}) {
            for (float z : {0.0f, 1e-3f}) out.push_back({isa, s, b, dt, t, z});
          }
        }
      }
    }
  }
  return out;
}

class FusedCrossEntropyVsReference : public testing::TestWithParam<Case> {};

TEST_P(FusedCrossEntropyVsReference, ForwardAndBackwardMatch) {
  const Case& c = GetParam();
  const Shape& s = c.shape;
  const Data d(s, c.dtype, 11);
  Outputs out(s);
  const auto in = d.Inputs(c.z);
  ASSERT_TRUE(FusedCrossEntropyForwardWithIsa(c.isa, c.bs, s, in, out.loss.data(), out.lse.data(), c.threads));
  ASSERT_TRUE(FusedCrossEntropyBackwardWithIsa(c.isa, c.bs, s, in, out.lse.data(), d.dloss.data(), out.dx.data(),
                                               out.dw.data(), c.threads));
  const Outputs ref = Reference(s, d, c.z);
  const FusedCrossEntropyTolerances tol = Tol(s, c.dtype, c.z, ref);
  const VerifyReport loss = Compare(out.loss.data(), ref.loss.data(), s.b, tol.loss);
  const VerifyReport lse = Compare(out.lse.data(), ref.lse.data(), s.b, tol.lse);
  const VerifyReport dx = Compare(out.dx.data(), ref.dx.data(), s.b * s.h, tol.dx);
  const VerifyReport dw = Compare(out.dw.data(), ref.dw.data(), s.h * s.v, tol.dw);
  EXPECT_TRUE(loss.ok) << "loss: " << Describe(loss);
  EXPECT_TRUE(lse.ok) << "lse: " << Describe(lse);
  EXPECT_TRUE(dx.ok) << "dx: " << Describe(dx);
  EXPECT_TRUE(dw.ok) << "dw: " << Describe(dw);
  // Ignored rows: loss exactly 0 and no gradient at all.
  for (int64_t i = 0; i < s.b; ++i) {
    if (d.labels[static_cast<size_t>(i)] >= 0) continue;
    EXPECT_EQ(out.loss[static_cast<size_t>(i)], 0.0f);
    for (int64_t j = 0; j < s.h; ++j) EXPECT_EQ(out.dx[static_cast<size_t>(i * s.h + j)], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedCrossEntropyVsReference, testing::ValuesIn(AllCases()), CaseName);

TEST(FusedCrossEntropy, LargerProblemDefaultBlocksTwoThreads) {
  // Several full default blocks in b and v, two h chunks, remainders everywhere.
  const Shape s{420, 300, 1100};
  const Data d(s, DType::kF32, 5);
  Outputs out(s);
  const auto in = d.Inputs(1e-4f);
  const Blocks bs{192, 256, 512};
  ASSERT_TRUE(FusedCrossEntropyForward(bs, s, in, out.loss.data(), out.lse.data(), 2));
  ASSERT_TRUE(FusedCrossEntropyBackward(bs, s, in, out.lse.data(), d.dloss.data(), out.dx.data(), out.dw.data(), 2));
  const Outputs ref = Reference(s, d, 1e-4f);
  const auto tol = Tol(s, DType::kF32, 1e-4f, ref);
  EXPECT_TRUE(Compare(out.loss.data(), ref.loss.data(), s.b, tol.loss).ok);
  EXPECT_TRUE(Compare(out.lse.data(), ref.lse.data(), s.b, tol.lse).ok);
  const auto dx = Compare(out.dx.data(), ref.dx.data(), s.b * s.h, tol.dx);
  const auto dw = Compare(out.dw.data(), ref.dw.data(), s.h * s.v, tol.dw);
  EXPECT_TRUE(dx.ok) << Describe(dx);
  EXPECT_TRUE(dw.ok) << Describe(dw);
}

// --- Finite differences ------------------------------------------------------------------------

// L = sum_b dloss[b] * loss[b] in double.
double TotalLoss(const Shape& s, const std::vector<double>& x, const std::vector<double>& w,
                 const std::vector<int32_t>& labels, const std::vector<float>& dloss, double z) {
  double total = 0;
  for (int64_t b = 0; b < s.b; ++b) {
    std::vector<double> row(static_cast<size_t>(s.v), 0.0);
    for (int64_t v = 0; v < s.v; ++v) {
      for (int64_t h = 0; h < s.h; ++h)
        row[static_cast<size_t>(v)] += x[static_cast<size_t>(b * s.h + h)] * w[static_cast<size_t>(h * s.v + v)];
    }
    double m = row[0];
    for (double r : row) m = std::max(m, r);
    double sum = 0;
    for (double r : row) sum += std::exp(r - m);
    const double lse = m + std::log(sum);
    const int32_t lab = labels[static_cast<size_t>(b)];
    if (lab < 0) continue;
    total += double(dloss[static_cast<size_t>(b)]) * (lse - row[static_cast<size_t>(lab)] + z * lse * lse);
  }
  return total;
}

TEST(FusedCrossEntropyGradient, MatchesCentralFiniteDifferences) {
  const Shape s{3, 5, 7};
  for (float z : {0.0f, 0.05f}) {
    Data d(s, DType::kF32, 3);
    d.labels = {2, -1, 6};  // an ignored row and the last vocabulary index
    d.dloss = {0.7f, 1.3f, -0.4f};
    // Scale up so the softmax is not flat (logits of order 1-3).
    for (float& f : d.x) f *= 2.0f;
    Outputs out(s);
    const auto in = d.Inputs(z);
    const Blocks bs{12, 16, 32};
    ASSERT_TRUE(FusedCrossEntropyForward(bs, s, in, out.loss.data(), out.lse.data(), 2));
    ASSERT_TRUE(FusedCrossEntropyBackward(bs, s, in, out.lse.data(), d.dloss.data(), out.dx.data(), out.dw.data(), 2));
    const Outputs ref = Reference(s, d, z);
    std::vector<double> x(d.x.begin(), d.x.end()), w(d.w.begin(), d.w.end());
    // Step 1e-4: truncation ~1e-8 * |third derivative|, cancellation ~1e-16 / 1e-4 = 1e-12.
    const double step = 1e-4;
    const auto fd = [&](std::vector<double>& p, size_t i) {
      const double keep = p[i];
      p[i] = keep + step;
      const double up = TotalLoss(s, x, w, d.labels, d.dloss, z);
      p[i] = keep - step;
      const double down = TotalLoss(s, x, w, d.labels, d.dloss, z);
      p[i] = keep;
      return (up - down) / (2 * step);
    };
    // The kernel's f32 gradients are within ~1e-6 of exact here; 2e-5 leaves room.
    for (size_t i = 0; i < x.size(); ++i) {
      const double g = fd(x, i);
      EXPECT_NEAR(out.dx[i], g, 2e-5) << "dx[" << i << "] z=" << z;
      EXPECT_NEAR(ref.dx[i], g, 2e-6) << "reference dx[" << i << "] z=" << z;
    }
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = fd(w, i);
      EXPECT_NEAR(out.dw[i], g, 2e-5) << "dw[" << i << "] z=" << z;
      EXPECT_NEAR(ref.dw[i], g, 2e-6) << "reference dw[" << i << "] z=" << z;
    }
    // And the loss itself against the double forward.
    for (int64_t b = 0; b < s.b; ++b) {
      std::vector<float> one(3, 0.0f);
      one[static_cast<size_t>(b)] = 1.0f;
      EXPECT_NEAR(out.loss[static_cast<size_t>(b)], TotalLoss(s, x, w, d.labels, one, z), 1e-5);
    }
  }
}

TEST(FusedCrossEntropy, ZLossChangesLossByZTimesLseSquared) {
  const Shape s{20, 30, 90};
  const Data d(s, DType::kF32, 9);
  Outputs a(s), b(s);
  ASSERT_TRUE(FusedCrossEntropyForward({12, 16, 32}, s, d.Inputs(0.0f), a.loss.data(), a.lse.data(), 1));
  ASSERT_TRUE(FusedCrossEntropyForward({12, 16, 32}, s, d.Inputs(0.01f), b.loss.data(), b.lse.data(), 1));
  for (int64_t i = 0; i < s.b; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_EQ(a.lse[k], b.lse[k]);
    const float expect = d.labels[k] < 0 ? 0.0f : a.loss[k] + 0.01f * a.lse[k] * a.lse[k];
    EXPECT_NEAR(b.loss[k], expect, 1e-5f * (1 + std::fabs(expect)));
  }
}

// --- Tolerances catch dropped work -------------------------------------------------------------

TEST(FusedCrossEntropyTolerance, FailsWhenABlockIsDropped) {
  const Shape s{40, 50, 150};
  const Data d(s, DType::kF32, 21);
  const Outputs ref = Reference(s, d, 1e-4f);
  const auto tol = Tol(s, DType::kF32, 1e-4f, ref);
  const Blocks bs{12, 16, 32};
  // Last vocabulary block (22 columns) dropped: run on w[:, :128] with labels kept below 128.
  {
    const Shape cut{s.b, s.h, 128};
    Data dc = d;
    dc.w.clear();
    for (int64_t h = 0; h < s.h; ++h) {
      for (int64_t v = 0; v < 128; ++v) dc.w.push_back(d.w[static_cast<size_t>(h * s.v + v)]);
    }
    for (int32_t& l : dc.labels) l = l >= 128 ? 0 : l;
    Outputs out(cut);
    ASSERT_TRUE(FusedCrossEntropyForward(bs, cut, dc.Inputs(1e-4f), out.loss.data(), out.lse.data(), 1));
    EXPECT_FALSE(Compare(out.lse.data(), ref.lse.data(), s.b, tol.lse).ok);
  }
  // Last h chunk (2 columns of x) dropped.
  {
    Data dc = d;
    for (int64_t b = 0; b < s.b; ++b) {
      for (int64_t h = 48; h < 50; ++h) dc.x[static_cast<size_t>(b * s.h + h)] = 0;
    }
    Outputs out(s);
    ASSERT_TRUE(FusedCrossEntropyForward(bs, s, dc.Inputs(1e-4f), out.loss.data(), out.lse.data(), 1));
    EXPECT_FALSE(Compare(out.lse.data(), ref.lse.data(), s.b, tol.lse).ok);
    EXPECT_FALSE(Compare(out.loss.data(), ref.loss.data(), s.b, tol.loss).ok);
  }
  // Last row block's gradient (rows 36..39) dropped: dw must fail.
  {
    Data dc = d;
    for (int64_t b = 36; b < 40; ++b) dc.dloss[static_cast<size_t>(b)] = 0;
    Outputs out(s);
    ASSERT_TRUE(FusedCrossEntropyForward(bs, s, dc.Inputs(1e-4f), out.loss.data(), out.lse.data(), 1));
    ASSERT_TRUE(FusedCrossEntropyBackward(bs, s, dc.Inputs(1e-4f), out.lse.data(), dc.dloss.data(), out.dx.data(),
                                          out.dw.data(), 1));
    EXPECT_FALSE(Compare(out.dw.data(), ref.dw.data(), s.h * s.v, tol.dw).ok);
    EXPECT_FALSE(Compare(out.dx.data(), ref.dx.data(), s.b * s.h, tol.dx).ok);
  }
}

// --- Behaviour ---------------------------------------------------------------------------------

TEST(FusedCrossEntropy, AllRowsIgnoredGivesZeroLossAndGradients) {
  const Shape s{15, 20, 70};
  Data d(s, DType::kF32, 4);
  for (int32_t& l : d.labels) l = -1;
  Outputs out(s);
  const auto in = d.Inputs(1e-3f);
  ASSERT_TRUE(FusedCrossEntropyForward({12, 16, 32}, s, in, out.loss.data(), out.lse.data(), 3));
  ASSERT_TRUE(
      FusedCrossEntropyBackward({12, 16, 32}, s, in, out.lse.data(), d.dloss.data(), out.dx.data(), out.dw.data(), 3));
  for (float f : out.loss) EXPECT_EQ(f, 0.0f);
  for (float f : out.lse) EXPECT_TRUE(std::isfinite(f));
  for (float f : out.dx) EXPECT_EQ(f, 0.0f);
  for (float f : out.dw) EXPECT_EQ(f, 0.0f);
}

TEST(FusedCrossEntropy, RepeatedCallsAreDeterministic) {
  const Shape s{60, 40, 200};
  const Data d(s, DType::kF32, 8);
  const auto in = d.Inputs(1e-4f);
  Outputs a(s), b(s);
  for (Outputs* o : {&a, &b}) {
    ASSERT_TRUE(FusedCrossEntropyForward({24, 32, 64}, s, in, o->loss.data(), o->lse.data(), 2));
    ASSERT_TRUE(
        FusedCrossEntropyBackward({24, 32, 64}, s, in, o->lse.data(), d.dloss.data(), o->dx.data(), o->dw.data(), 2));
  }
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dw, b.dw);
}

TEST(FusedCrossEntropy, BadCallsAreErrors) {
  const Shape s{4, 8, 10};
  Data d(s, DType::kF32, 1);
  Outputs out(s);
  d.labels[2] = 10;  // == v
  auto st = FusedCrossEntropyForward({12, 16, 32}, s, d.Inputs(0), out.loss.data(), out.lse.data(), 1);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "labels");
  d.labels[2] = 0;
  st = FusedCrossEntropyForward({12, 16, 32}, s, d.Inputs(0), out.loss.data(), out.lse.data(), 0);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "threads");
  st = FusedCrossEntropyBackward({0, 16, 32}, s, d.Inputs(0), out.lse.data(), d.dloss.data(), out.dx.data(),
                                 out.dw.data(), 1);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "config.block_b");
  EXPECT_FALSE(
      FusedCrossEntropyForwardWithIsa("sse9", {12, 16, 32}, s, d.Inputs(0), out.loss.data(), out.lse.data(), 1));
}

TEST(FusedCrossEntropy, ScratchIsFarBelowTheUnfusedBuffer) {
  const Shape s{4096, 1024, 32768};
  const Blocks bs{192, 256, 512};
  const int64_t unfused = s.b * s.v * 4;  // 512 MiB
  EXPECT_LT(FusedCrossEntropyScratchBytes(bs, s, false, 2), unfused / 64);
  EXPECT_LT(FusedCrossEntropyScratchBytes(bs, s, true, 2), unfused / 8);  // ~33 MiB: 16 MiB of it partial dx
  EXPECT_GT(FusedCrossEntropyScratchBytes(bs, s, true, 2), FusedCrossEntropyScratchBytes(bs, s, true, 1));
}

// --- Validate ----------------------------------------------------------------------------------

TEST(FusedCrossEntropyValidate, RejectsWithPath) {
  struct Rejection {
    const char* isa;
    Blocks bs;
    Shape shape;
    const char* path;
  };
  const Rejection cases[] = {
      {"avx512", {0, 256, 512}, {8, 8, 8}, "config.block_b"},
      {"avx512", {192, -16, 512}, {8, 8, 8}, "config.block_h"},
      {"avx512", {192, 256, 0}, {8, 8, 8}, "config.block_v"},
      {"avx512", {50, 256, 512}, {8, 8, 8}, "config.block_b"},   // not a multiple of 12
      {"avx2", {8, 256, 512}, {8, 8, 8}, "config.block_b"},      // not a multiple of 6
      {"avx512", {192, 256, 48}, {8, 8, 8}, "config.block_v"},   // not a multiple of 32
      {"base", {192, 256, 40}, {8, 8, 8}, "config.block_v"},     // not a multiple of 16
      {"avx512", {192, 100, 512}, {8, 8, 8}, "config.block_h"},  // not a multiple of 16
      {"avx512", {192, 256, int64_t{1} << 30}, {8, 8, 8}, "config.block_v"},
      {"avx512", {3072, 256, 2048}, {4096, 64, 8192}, "config.block_v"},     // 24 MiB tile
      {"avx512", {192, 256, 65536}, {256, 16384, 65536}, "config.block_v"},  // 8 GiB of w panels
      {"avx512", {192, 256, 512}, {-1, 8, 8}, "shape.b"},
      {"avx512", {192, 256, 512}, {8, 0, 8}, "shape.h"},
      {"avx512", {192, 256, 512}, {8, 8, 0}, "shape.v"},
  };
  for (const auto& r : cases) {
    const auto s = Validate(r.bs, r.shape, HwWithIsa(r.isa));
    ASSERT_FALSE(s.has_value()) << r.path;
    EXPECT_EQ(s.error().path, r.path) << s.error().ToString();
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(FusedCrossEntropyValidate, ClampsBlocksLargerThanTheProblem) {
  // A 24 MiB tile is rejected for a large problem but fine when clamped to a small one.
  EXPECT_TRUE(Validate({3072, 1024, 2048}, {5, 7, 9}, HwWithIsa("avx512")).has_value());
  EXPECT_TRUE(Validate({12, 16, 32}, {0, 1, 1}, HwWithIsa("avx512")).has_value());
}

// --- KernelSpec --------------------------------------------------------------------------------

Problem MakeProblem(int64_t b, int64_t h, int64_t v, int64_t backward, DType dtype = DType::kF32) {
  return test::MakeProblem({{"b", b}, {"h", h}, {"v", v}, {"backward", backward}}, dtype);
}

TEST(FusedCrossEntropySpec, Declarations) {
  const KernelSpec& spec = FusedCrossEntropySpec();
  EXPECT_EQ(spec.name(), "fused_cross_entropy");
  ASSERT_EQ(spec.dims().size(), 4u);
  EXPECT_STREQ(spec.dims()[3].bucket.name, "backward");
  EXPECT_EQ(spec.dims()[3].bucket.rounding, tables::Rounding::kExact);
  EXPECT_EQ(spec.dtypes(), (std::vector<DType>{DType::kF32, DType::kBF16}));
  ASSERT_EQ(spec.params().size(), 3u);
  EXPECT_EQ(spec.params()[0].name, "block_b");
  EXPECT_EQ(spec.params()[1].name, "block_h");
  EXPECT_EQ(spec.params()[2].name, "block_v");
  EXPECT_EQ(spec.Flops(MakeProblem(2, 3, 4, 0)), 48.0);
  EXPECT_EQ(spec.Flops(MakeProblem(2, 3, 4, 1)), 144.0);
  EXPECT_EQ(spec.Bytes(MakeProblem(2, 3, 4, 0)), 4.0 * (6 + 12) + 24.0);
  EXPECT_EQ(spec.Bucket(MakeProblem(3000, 1000, 50000, 1)).first, "b4096_h1024_v65536_backward1");
  EXPECT_EQ(spec.Bucket(MakeProblem(1, 1, 1, 0)).first, "b1_h1_v1_backward0");
  EXPECT_FALSE(spec.ValidateProblem(MakeProblem(1, 1, 1, 2)).has_value());
  EXPECT_TRUE(spec.ValidateProblem(MakeProblem(1, 1, 1, 1, DType::kBF16)).has_value());
}

TEST(FusedCrossEntropySpec, ConfigSpaceSizeAndReasons) {
  const KernelSpec& spec = FusedCrossEntropySpec();
  const auto space = spec.ConfigSpace();
  EXPECT_GE(space.size(), 30u);
  EXPECT_LE(space.size(), 200u);
  const HardwareProfile hw = HardwareProfile::Detect(1);
  int valid = 0;
  for (const Config& c : space) {
    const auto s = spec.ValidateConfig(c, MakeProblem(4096, 16384, 65536, 1), hw);
    if (s) {
      ++valid;
    } else {
      EXPECT_FALSE(s.error().message.empty());
      EXPECT_EQ(s.error().path.rfind("config.", 0), 0u) << s.error().path;
    }
  }
  EXPECT_GE(valid, 60);
  for (const Config& c : space) EXPECT_TRUE(spec.ValidateConfig(c, MakeProblem(4096, 1024, 32768, 1), hw));
}

TEST(FusedCrossEntropySpec, VerificationProblemHasFullBlocksAndRemainders) {
  const KernelSpec& spec = FusedCrossEntropySpec();
  const Config c = ToConfig(Blocks{96, 128, 256});
  const Problem p = spec.VerificationProblem(c, MakeProblem(4096, 4096, 65536, 1));
  EXPECT_EQ(p.Dim("b"), 96 + 5);
  EXPECT_EQ(p.Dim("h"), 128 + 3);
  EXPECT_EQ(p.Dim("v"), 256 + 7);
  EXPECT_EQ(p.Dim("backward"), 1);
  const Problem fwd = spec.VerificationProblem(ToConfig(Blocks{96, 256, 256}), MakeProblem(4096, 4096, 65536, 0));
  EXPECT_EQ(fwd.Dim("h"), 256 + 3);
  EXPECT_EQ(spec.VerificationProblem(ToConfig(Blocks{96, 256, 256}), MakeProblem(4096, 4096, 65536, 1)).Dim("h"),
            128 + 3);
  const Problem small = spec.VerificationProblem(c, MakeProblem(2, 16, 8, 0));
  EXPECT_EQ(small.Dim("b"), 2);
  EXPECT_EQ(small.Dim("v"), 8);
  EXPECT_EQ(small.Dim("backward"), 0);
  EXPECT_TRUE(spec.ValidateProblem(p).has_value());
}

}  // namespace
}  // namespace blocktune::kernels::fused_cross_entropy_test
