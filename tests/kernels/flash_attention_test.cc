// Tests of the flash_attention kernel: every ISA path against FlashAttentionReference over
// shapes that hit seq 1, seq_q != seq_kv under the causal mask (bottom-right alignment, fully
// masked rows), the diagonal on and off block boundaries, blocks larger than the sequence,
// remainders of every block and tile, MQA/GQA/MHA, head_dim 40/64/128 and odd ones, f32 and
// bf16, at 1-3 threads; Validate's rejections; and what the KernelSpec declares for flash
// attention (the generic contract of every kernel is tests/kernels/conformance_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/flash_attention/flash_attention.h"
#include "tests/common/kernels.h"

namespace blocktune::kernels {
namespace flash_attention_test {
namespace {

using test::HwWithIsa;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

FlashAttentionShape MakeShape(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d, bool causal) {
  FlashAttentionShape s;
  s.batch = b;
  s.heads = h;
  s.kv_heads = kvh;
  s.seq_q = sq;
  s.seq_kv = skv;
  s.head_dim = d;
  s.causal = causal;
  return s;
}

// Inputs in [-1, 1): f32 values, plus their bf16 bits and the bf16-rounded values as f32 (what
// the reference must read for a bf16 run).
struct Inputs {
  Inputs(const FlashAttentionShape& s, DType dtype, uint64_t seed) {
    const int64_t nq = s.batch * s.heads * s.seq_q * s.head_dim;
    const int64_t nkv = s.batch * s.kv_heads * s.seq_kv * s.head_dim;
    SplitMix64 rng(seed);
    for (auto [vec, n] : {std::pair{&q, nq}, std::pair{&k, nkv}, std::pair{&v, nkv}}) {
      vec->resize(size_t(n));
      for (float& x : *vec) x = rng.NextSigned();
    }
    if (dtype == DType::kBF16) {
      for (auto [f, b] : {std::pair{&q, &q16}, std::pair{&k, &k16}, std::pair{&v, &v16}}) {
        b->resize(f->size());
        for (size_t i = 0; i < f->size(); ++i) {
          (*b)[i] = FloatToBF16((*f)[i]).bits;
          (*f)[i] = BF16ToFloat(BF16{(*b)[i]});
        }
      }
    }
  }
  const void* Q(DType d) const { return d == DType::kF32 ? static_cast<const void*>(q.data()) : q16.data(); }
  const void* K(DType d) const { return d == DType::kF32 ? static_cast<const void*>(k.data()) : k16.data(); }
  const void* V(DType d) const { return d == DType::kF32 ? static_cast<const void*>(v.data()) : v16.data(); }
  std::vector<float> q, k, v;
  std::vector<uint16_t> q16, k16, v16;
};

struct Outputs {
  explicit Outputs(const FlashAttentionShape& s)
      : o(size_t(s.batch * s.heads * s.seq_q * s.head_dim), std::numeric_limits<float>::quiet_NaN()),
        lse(size_t(s.batch * s.heads * s.seq_q), std::numeric_limits<float>::quiet_NaN()) {}
  std::vector<float> o, lse;
};

// O and LSE against the reference; -inf LSE must match -inf exactly.
void ExpectMatches(const FlashAttentionShape& s, const Outputs& got, const Outputs& ref) {
  const Tolerance tol = FlashAttentionTolerance(s);
  const VerifyReport r = Compare(got.o.data(), ref.o.data(), int64_t(got.o.size()), tol);
  EXPECT_TRUE(r.ok) << "O: mismatches " << r.mismatches << " non-finite " << r.non_finite << " max abs err "
                    << r.max_abs_err;
  int64_t lse_bad = 0;
  for (size_t i = 0; i < got.lse.size(); ++i) {
    const float g = got.lse[i];
    const float e = ref.lse[i];
    if (e == kNegInf) {
      lse_bad += g != kNegInf;
    } else {
      lse_bad += !(std::fabs(double(g) - double(e)) <= tol.atol + tol.rtol * std::fabs(double(e)));
    }
  }
  EXPECT_EQ(lse_bad, 0) << "LSE mismatches";
}

struct NamedShape {
  const char* name;
  FlashAttentionShape shape;
};

struct Case {
  std::string isa;
  NamedShape shape;
  FlashAttentionBlockSizes bs;
  DType dtype;
  int threads;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.isa + "_" + c.shape.name + "_bq" + std::to_string(c.bs.block_q) + "_bkv" + std::to_string(c.bs.block_kv) +
         "_" + std::string(DTypeName(c.dtype)) + "_t" + std::to_string(c.threads);
}

std::vector<NamedShape> Shapes() {
  return {
      {"seq1", MakeShape(1, 1, 1, 1, 1, 64, false)},
      {"seq1_causal", MakeShape(1, 1, 1, 1, 1, 64, true)},
      {"decode_q1_kv37_causal", MakeShape(1, 2, 1, 1, 37, 64, true)},
      {"q37_kv1_causal_masked_rows", MakeShape(1, 1, 1, 37, 1, 40, true)},
      {"q128_kv128_causal_d64_diag_on_blocks", MakeShape(1, 1, 1, 128, 128, 64, true)},
      {"q100_kv100_causal_d64", MakeShape(1, 2, 2, 100, 100, 64, true)},
      {"q70_kv150_causal_gqa_d40", MakeShape(1, 4, 2, 70, 150, 40, true)},
      {"q150_kv70_causal_masked_rows_d40", MakeShape(1, 2, 1, 150, 70, 40, true)},
      {"mqa_h3_q33_kv65_d128", MakeShape(1, 3, 1, 33, 65, 128, false)},
      {"mha_b2_h2_q45_kv77_d128_causal", MakeShape(2, 2, 2, 45, 77, 128, true)},
      {"q20_kv200_d17", MakeShape(1, 1, 1, 20, 200, 17, false)},
      {"q64_kv64_d1_causal", MakeShape(1, 1, 1, 64, 64, 1, true)},
  };
}

std::vector<Case> AllCases() {
  // The smallest legal blocks (many blocks, the diagonal in every block), unequal blocks with
  // remainders, the default, and blocks larger than every sequence here (clamped).
  const FlashAttentionBlockSizes blocks[] = {{16, 16}, {32, 48}, {64, 128}, {256, 512}};
  std::vector<Case> out;
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (const NamedShape& s : Shapes()) {
      for (const auto& b : blocks) {
        for (DType dt : {DType::kF32, DType::kBF16}) {
          for (int t : {1, 2, 3}) {
            // The portable path is slow and shares the driver: one thread count suffices.
            if (std::string(isa) == "portable" && t == 2) continue;
            out.push_back({isa, s, b, dt, t});
          }
        }
      }
    }
  }
  return out;
}

class FlashAttentionVsReference : public testing::TestWithParam<Case> {};

TEST_P(FlashAttentionVsReference, MatchesReference) {
  const Case& c = GetParam();
  const FlashAttentionShape& s = c.shape.shape;
  const Inputs in(s, c.dtype, 1);
  Outputs got(s), ref(s);
  const auto st = FlashAttentionWithIsa(c.isa, c.bs, s, c.dtype, in.Q(c.dtype), in.K(c.dtype), in.V(c.dtype),
                                        got.o.data(), got.lse.data(), c.threads);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  FlashAttentionReference(s, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data());
  ExpectMatches(s, got, ref);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionVsReference, testing::ValuesIn(AllCases()), CaseName);

// --- Behaviour ----------------------------------------------------------------------------

// Every diagonal offset and partial block size against 16- and 32-key blocks: the causal
// mask decisions (which blocks to visit, which to mask) are off-by-one prone at offsets the
// shapes above do not hit (e.g. a block whose last key is one past the first query's limit).
TEST(FlashAttention, CausalSweepOfOffsetsAndRemainders) {
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (int64_t sq = 1; sq <= 41; sq += 2) {
      for (int64_t skv = 1; skv <= 41; skv += 2) {
        const FlashAttentionShape s = MakeShape(1, 1, 1, sq, skv, 8, true);
        const Inputs in(s, DType::kF32, uint64_t(sq * 100 + skv));
        Outputs ref(s);
        FlashAttentionReference(s, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data());
        for (const FlashAttentionBlockSizes bs : {FlashAttentionBlockSizes{16, 16}, FlashAttentionBlockSizes{32, 32}}) {
          Outputs got(s);
          ASSERT_TRUE(FlashAttentionWithIsa(isa, bs, s, DType::kF32, in.q.data(), in.k.data(), in.v.data(),
                                            got.o.data(), got.lse.data(), 1));
          SCOPED_TRACE(std::string(isa) + " sq " + std::to_string(sq) + " skv " + std::to_string(skv) + " bq " +
                       std::to_string(bs.block_q));
          ExpectMatches(s, got, ref);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(FlashAttention, HostPathReportsIsaAndMatches) {
  const std::string isa = FlashAttentionIsa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "portable") << isa;
  const FlashAttentionShape s = MakeShape(1, 2, 1, 90, 130, 64, true);
  const Inputs in(s, DType::kF32, 2);
  Outputs got(s), ref(s);
  ASSERT_TRUE(FlashAttention({32, 64}, s, in.q.data(), in.k.data(), in.v.data(), got.o.data(), got.lse.data(), 2));
  FlashAttentionReference(s, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data());
  ExpectMatches(s, got, ref);
}

TEST(FlashAttention, Bf16OverloadMatches) {
  const FlashAttentionShape s = MakeShape(1, 2, 2, 50, 70, 64, false);
  const Inputs in(s, DType::kBF16, 3);
  Outputs got(s), ref(s);
  ASSERT_TRUE(
      FlashAttention({32, 32}, s, in.q16.data(), in.k16.data(), in.v16.data(), got.o.data(), got.lse.data(), 1));
  FlashAttentionReference(s, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data());
  ExpectMatches(s, got, ref);
}

TEST(FlashAttention, ReferenceSmallExact) {
  // One query, two keys, head_dim 1, scale 1: scores 1*2 = 2 and 1*(-1) = -1.
  const FlashAttentionShape s = MakeShape(1, 1, 1, 1, 2, 1, false);
  const float q[] = {1}, k[] = {2, -1}, v[] = {3, 5};
  float o = 0, lse = 0;
  FlashAttentionReference(s, q, k, v, &o, &lse, 1.0f);
  const double e0 = std::exp(2.0), e1 = std::exp(-1.0);
  EXPECT_NEAR(o, (3 * e0 + 5 * e1) / (e0 + e1), 1e-6);
  EXPECT_NEAR(lse, std::log(e0 + e1), 1e-6);
}

TEST(FlashAttention, CustomScaleAndNullLse) {
  const FlashAttentionShape s = MakeShape(1, 1, 1, 40, 60, 32, true);
  const Inputs in(s, DType::kF32, 4);
  Outputs got(s), ref(s);
  ASSERT_TRUE(FlashAttention({32, 32}, s, in.q.data(), in.k.data(), in.v.data(), got.o.data(), nullptr, 1, 0.7f));
  FlashAttentionReference(s, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data(), 0.7f);
  const VerifyReport r = Compare(got.o.data(), ref.o.data(), int64_t(got.o.size()), FlashAttentionTolerance(s));
  EXPECT_TRUE(r.ok) << r.max_abs_err;
  for (float x : got.lse) EXPECT_TRUE(std::isnan(x));  // untouched
  EXPECT_FALSE(FlashAttention({32, 32}, s, in.q.data(), in.k.data(), in.v.data(), got.o.data(), nullptr, 1,
                              std::numeric_limits<float>::infinity()));
}

TEST(FlashAttention, FullyMaskedRowsAreZeroWithMinusInfLse) {
  // seq_q 40 > seq_kv 8 under the causal mask: queries 0..31 see no key.
  const FlashAttentionShape s = MakeShape(1, 1, 1, 40, 8, 64, true);
  const Inputs in(s, DType::kF32, 5);
  Outputs got(s);
  ASSERT_TRUE(FlashAttention({16, 16}, s, in.q.data(), in.k.data(), in.v.data(), got.o.data(), got.lse.data(), 2));
  for (int64_t i = 0; i < 40; ++i) {
    if (i < 32) {
      EXPECT_EQ(got.lse[size_t(i)], kNegInf) << i;
      for (int64_t d = 0; d < 64; ++d) EXPECT_EQ(got.o[size_t(i * 64 + d)], 0.0f);
    } else {
      EXPECT_TRUE(std::isfinite(got.lse[size_t(i)])) << i;
    }
  }
  // Query 32 sees exactly key 0: O is V's first row and LSE its (scaled) score.
  for (int64_t d = 0; d < 64; ++d) EXPECT_NEAR(got.o[size_t(32 * 64 + d)], in.v[size_t(d)], 1e-6);
}

TEST(FlashAttention, EmptyDimsAndEmptyKeys) {
  const Inputs none(MakeShape(1, 1, 1, 0, 0, 8, false), DType::kF32, 6);
  float sentinel = 9;
  EXPECT_TRUE(FlashAttention({64, 128}, MakeShape(0, 4, 2, 5, 5, 8, false), none.q.data(), none.k.data(), none.v.data(),
                             &sentinel, &sentinel, 2));
  EXPECT_TRUE(FlashAttention({64, 128}, MakeShape(1, 1, 1, 0, 5, 8, false), none.q.data(), none.k.data(), none.v.data(),
                             &sentinel, &sentinel, 2));
  EXPECT_EQ(sentinel, 9);
  // seq_kv = 0: every query sees no key.
  const FlashAttentionShape s = MakeShape(1, 1, 1, 3, 0, 8, false);
  const Inputs in(s, DType::kF32, 7);
  Outputs got(s);
  ASSERT_TRUE(FlashAttention({64, 128}, s, in.q.data(), in.k.data(), in.v.data(), got.o.data(), got.lse.data(), 1));
  for (float x : got.o) EXPECT_EQ(x, 0.0f);
  for (float x : got.lse) EXPECT_EQ(x, kNegInf);
}

TEST(FlashAttention, ThreadsDoNotChangeBits) {
  const FlashAttentionShape s = MakeShape(2, 4, 2, 77, 130, 64, true);
  const Inputs in(s, DType::kF32, 8);
  Outputs a(s), b(s);
  ASSERT_TRUE(FlashAttention({32, 64}, s, in.q.data(), in.k.data(), in.v.data(), a.o.data(), a.lse.data(), 1));
  ASSERT_TRUE(FlashAttention({32, 64}, s, in.q.data(), in.k.data(), in.v.data(), b.o.data(), b.lse.data(), 3));
  EXPECT_EQ(a.o, b.o);
  EXPECT_EQ(a.lse, b.lse);
}

TEST(FlashAttention, InvalidCallsReturnErrorsWithoutWriting) {
  const FlashAttentionShape s = MakeShape(1, 3, 2, 8, 8, 8, false);  // 3 heads, 2 kv heads
  std::vector<float> x(512, 1.0f), o(512, 5.0f);
  auto st = FlashAttention({64, 128}, s, x.data(), x.data(), x.data(), o.data(), nullptr, 1);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "shape.kv_heads");
  st = FlashAttention({0, 128}, MakeShape(1, 1, 1, 8, 8, 8, false), x.data(), x.data(), x.data(), o.data(), nullptr, 1);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "config.block_q");
  st =
      FlashAttention({64, 128}, MakeShape(1, 1, 1, 8, 8, 8, false), x.data(), x.data(), x.data(), o.data(), nullptr, 0);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().path, "threads");
  for (float y : o) EXPECT_EQ(y, 5.0f);
  EXPECT_FALSE(FlashAttentionWithIsa("sse9", {64, 128}, MakeShape(1, 1, 1, 1, 1, 8, false), DType::kF32, x.data(),
                                     x.data(), x.data(), o.data(), nullptr, 1));
}

// --- Validate -------------------------------------------------------------------------------

TEST(FlashAttentionValidate, RejectsWithPath) {
  struct Rejection {
    FlashAttentionBlockSizes bs;
    FlashAttentionShape shape;
    const char* path;
  };
  const FlashAttentionShape ok = MakeShape(1, 8, 2, 128, 128, 64, true);
  const Rejection cases[] = {
      {{0, 128}, ok, "config.block_q"},
      {{64, -16}, ok, "config.block_kv"},
      {{40, 128}, ok, "config.block_q"},    // not a multiple of 16
      {{64, 100}, ok, "config.block_kv"},   // not a multiple of 16
      {{8192, 128}, ok, "config.block_q"},  // absurd
      {{64, int64_t{1} << 40}, ok, "config.block_kv"},
      {{64, 128}, MakeShape(1, 8, 3, 128, 128, 64, true), "shape.kv_heads"},
      {{64, 128}, MakeShape(1, 8, 0, 128, 128, 64, true), "shape.kv_heads"},
      {{64, 128}, MakeShape(1, 8, 2, -1, 128, 64, true), "shape.seq_q"},
      {{64, 128}, MakeShape(-2, 8, 2, 1, 128, 64, true), "shape.batch"},
      {{64, 128}, MakeShape(1, 8, 2, 1, 128, 0, true), "shape.head_dim"},
      {{4096, 4096}, MakeShape(1, 1, 1, 1 << 20, 1 << 20, 16384, false), "config.block_q"},  // 1 GiB scratch
  };
  for (const Rejection& r : cases) {
    const auto s = Validate(r.bs, r.shape, HwWithIsa("avx512"));
    ASSERT_FALSE(s.has_value()) << r.path;
    EXPECT_EQ(s.error().path, r.path) << s.error().ToString();
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(s.error().message.empty());
  }
}

TEST(FlashAttentionValidate, AcceptsBlocksLargerThanTheProblemOnEveryIsa) {
  for (const char* isa : {"avx512", "avx2", "base"}) {
    EXPECT_TRUE(Validate({4096, 4096}, MakeShape(1, 1, 1, 1, 1, 64, false), HwWithIsa(isa)).has_value()) << isa;
    EXPECT_TRUE(Validate({16, 16}, MakeShape(1, 4, 1, 3, 5, 7, true), HwWithIsa(isa)).has_value()) << isa;
  }
}

// --- Tolerance, pairs, scratch -----------------------------------------------------------------

TEST(FlashAttentionTolerance, PassesCorrectFailsOneDroppedBlock) {
  // The reference with the last 64-key block dropped must fail against the full one.
  const FlashAttentionShape full = MakeShape(1, 1, 1, 64, 525, 128, false);
  FlashAttentionShape dropped = full;
  dropped.seq_kv -= 64;
  const Inputs in(full, DType::kF32, 9);
  Outputs ref(full), got(full), drop(full);
  FlashAttentionReference(full, in.q.data(), in.k.data(), in.v.data(), ref.o.data(), ref.lse.data());
  ASSERT_TRUE(FlashAttention({64, 128}, full, in.q.data(), in.k.data(), in.v.data(), got.o.data(), got.lse.data(), 1));
  const Tolerance tol = FlashAttentionTolerance(full);
  const VerifyReport ok = Compare(got.o.data(), ref.o.data(), int64_t(got.o.size()), tol);
  EXPECT_TRUE(ok.ok);
  EXPECT_LT(ok.max_rel_err, 0.5);  // some margin under the tolerance
  // K and V of one head are contiguous, so the first seq_kv - 64 rows are the shorter problem.
  FlashAttentionReference(dropped, in.q.data(), in.k.data(), in.v.data(), drop.o.data(), drop.lse.data());
  const VerifyReport bad = Compare(drop.o.data(), ref.o.data(), int64_t(drop.o.size()), tol);
  EXPECT_FALSE(bad.ok);
  EXPECT_GT(bad.mismatches, int64_t(drop.o.size()) / 2);
  const VerifyReport bad_lse = Compare(drop.lse.data(), ref.lse.data(), int64_t(drop.lse.size()), tol);
  EXPECT_EQ(bad_lse.mismatches, bad_lse.elements);
}

TEST(FlashAttention, PairsMatchBruteForce) {
  for (int64_t sq : {0, 1, 5, 16, 37}) {
    for (int64_t skv : {0, 1, 5, 16, 40}) {
      FlashAttentionShape s = MakeShape(1, 1, 1, sq, skv, 8, true);
      int64_t pairs = 0;
      for (int64_t i = 0; i < sq; ++i) pairs += std::clamp<int64_t>(i + skv - sq + 1, 0, skv);
      EXPECT_EQ(FlashAttentionPairs(s), pairs) << sq << " " << skv;
      s.causal = false;
      EXPECT_EQ(FlashAttentionPairs(s), sq * skv);
    }
  }
}

TEST(FlashAttention, ScratchIsLinearAndFarBelowTheScoreMatrix) {
  const FlashAttentionShape s = MakeShape(1, 1, 1, 2048, 2048, 128, true);
  const int64_t bytes = FlashAttentionScratchBytes({64, 128}, s, DType::kF32, "avx512");
  EXPECT_LT(bytes, 128 << 10);  // vs 16 MiB of scores
  FlashAttentionShape longer = s;
  longer.seq_q = longer.seq_kv = 65536;
  EXPECT_EQ(FlashAttentionScratchBytes({64, 128}, longer, DType::kF32, "avx512"), bytes);  // independent of seq
  EXPECT_GT(FlashAttentionScratchBytes({64, 128}, s, DType::kBF16, "avx512"), bytes);      // + converted K/V
}

// --- KernelSpec -----------------------------------------------------------------------------

Problem MakeProblem(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d, int64_t causal,
                    DType dtype = DType::kF32) {
  return test::MakeProblem({{"batch", b},
                            {"heads", h},
                            {"kv_heads", kvh},
                            {"seq_q", sq},
                            {"seq_kv", skv},
                            {"head_dim", d},
                            {"causal", causal}},
                           dtype);
}

TEST(FlashAttentionSpec, Declarations) {
  const KernelSpec& spec = FlashAttentionSpec();
  EXPECT_EQ(spec.name(), "flash_attention");
  ASSERT_EQ(spec.dims().size(), 7u);
  EXPECT_STREQ(spec.dims()[6].bucket.name, "causal");
  EXPECT_EQ(spec.dims()[6].bucket.rounding, tables::Rounding::kExact);
  EXPECT_EQ(spec.dims()[5].max_value, 256);
  EXPECT_EQ(spec.dtypes(), (std::vector<DType>{DType::kF32, DType::kBF16}));
  ASSERT_EQ(spec.params().size(), 2u);
  EXPECT_EQ(spec.params()[0].name, "block_q");
  EXPECT_EQ(spec.params()[1].name, "block_kv");
  EXPECT_EQ(spec.Flops(MakeProblem(2, 4, 2, 8, 8, 64, 0)), 4.0 * 2 * 4 * 8 * 8 * 64);
  EXPECT_EQ(spec.Flops(MakeProblem(1, 1, 1, 8, 8, 64, 1)), 4.0 * 36 * 64);  // 8*9/2 pairs
  EXPECT_EQ(spec.Bytes(MakeProblem(1, 2, 1, 3, 5, 4, 0, DType::kBF16)),
            2.0 * (2 * 3 * 4 + 2 * 5 * 4) + 4.0 * (2 * 3 * 4 + 2 * 3));
  EXPECT_EQ(spec.Bucket(MakeProblem(3, 12, 4, 1000, 1500, 80, 1)).first,
            "batch4_heads16_kv_heads4_seq_q1024_seq_kv2048_head_dim80_causal1");
  EXPECT_EQ(spec.Bucket(MakeProblem(1, 1, 1, 1, 1, 64, 0)).first,
            "batch1_heads1_kv_heads1_seq_q1_seq_kv1_head_dim64_causal0");
  EXPECT_TRUE(spec.ValidateProblem(MakeProblem(1, 8, 8, 65536, 65536, 256, 1)).has_value());
  EXPECT_FALSE(spec.ValidateProblem(MakeProblem(1, 8, 8, 16, 16, 257, 1)).has_value());
  EXPECT_FALSE(spec.ValidateProblem(MakeProblem(1, 8, 8, 16, 16, 64, 2)).has_value());
  // The bucket's representative keeps heads a multiple of kv_heads (both round up to powers of 2).
  const Problem rep = spec.Bucket(MakeProblem(1, 12, 3, 100, 100, 64, 0)).second;
  EXPECT_EQ(rep.Dim("heads") % rep.Dim("kv_heads"), 0);
  EXPECT_TRUE(spec.ValidateConfig(spec.DefaultConfig(), rep, HwWithIsa("avx512")).has_value());
}

TEST(FlashAttentionSpec, ConfigSpaceSizeAndValidity) {
  const KernelSpec& spec = FlashAttentionSpec();
  const auto space = spec.ConfigSpace();
  EXPECT_GE(space.size(), 30u);
  EXPECT_LE(space.size(), 200u);
  for (const char* isa : {"avx512", "avx2", "base"}) {
    for (const Config& c : space) {
      const auto s = spec.ValidateConfig(c, MakeProblem(1, 8, 2, 2048, 2048, 128, 1), HwWithIsa(isa));
      // Every candidate is valid here; a rejection would have to name its parameter.
      EXPECT_TRUE(s.has_value()) << c.ToString() << " " << s.error().ToString();
    }
  }
  // Invalid problem: every config is rejected, with the shape's reason.
  const auto bad = spec.ValidateConfig(space.front(), MakeProblem(1, 8, 3, 16, 16, 64, 0), HwWithIsa("avx512"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().path, "shape.kv_heads");
}

TEST(FlashAttentionSpec, VerificationProblemHasFullBlocksAndRemainders) {
  const KernelSpec& spec = FlashAttentionSpec();
  const Config c = ToConfig(FlashAttentionBlockSizes{64, 128});
  const Problem p = spec.VerificationProblem(c, MakeProblem(4, 32, 8, 4096, 4096, 128, 1));
  EXPECT_EQ(p.Dim("seq_q"), 64 + 13);
  EXPECT_EQ(p.Dim("seq_kv"), 128 + 13);
  EXPECT_EQ(p.Dim("head_dim"), 128);
  EXPECT_EQ(p.Dim("causal"), 1);
  EXPECT_EQ(p.Dim("kv_heads"), 2);
  EXPECT_EQ(p.Dim("heads"), 4);
  EXPECT_TRUE(spec.ValidateProblem(p).has_value());
  const Problem small = spec.VerificationProblem(c, MakeProblem(1, 1, 1, 16, 8, 64, 0));
  EXPECT_EQ(small.Dim("seq_q"), 16);
  EXPECT_EQ(small.Dim("seq_kv"), 8);
  // The largest candidates at head_dim 256 stay within the reference budget.
  const Problem big = spec.VerificationProblem(ToConfig(FlashAttentionBlockSizes{256, 512}),
                                               MakeProblem(8, 64, 64, 65536, 65536, 256, 1));
  EXPECT_LE(2.0 * big.Dim("heads") * big.Dim("seq_q") * big.Dim("seq_kv") * big.Dim("head_dim"), 24e6 * 1.01);
  EXPECT_EQ(big.Dim("seq_kv"), 512 + 13);
  EXPECT_TRUE(spec.ValidateProblem(big).has_value());
}

// Fully masked rows (seq_q > seq_kv under the causal mask: the first 30 queries see no key)
// verify too: zeros and an LSE of -inf on both sides.
TEST(FlashAttentionSpec, InstanceWithFullyMaskedRowsVerifies) {
  const KernelSpec& spec = FlashAttentionSpec();
  auto inst = spec.MakeInstance(MakeProblem(1, 2, 1, 50, 20, 40, 1), 3);
  inst->RunReference();
  inst->PoisonOutputs();
  ASSERT_TRUE(inst->Run(spec.DefaultConfig(), 1).has_value());
  EXPECT_TRUE(inst->Verify().ok);
}

}  // namespace
}  // namespace flash_attention_test
}  // namespace blocktune::kernels
