// Tests of ragged_paged_attention: every ISA path against RaggedPagedAttentionReference over
// ragged batches (a single page, kv_len not a multiple of page_size, decode only, full causal
// prefill, mixed/chunked prefill, one sequence, contexts shorter than one KV block, query blocks
// longer than any q_len, MQA/GQA/MHA, a head_dim remainder, an empty sequence, shuffled pages),
// f32 and bf16, 1-3 threads; Validate/ValidateMetadata rejections; and what the KernelSpec
// declares for it (the generic contract of every kernel is tests/kernels/conformance_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/ragged_paged_attention/ragged_paged_attention.h"
#include "tests/common/kernels.h"

namespace blocktune::kernels {
namespace ragged_paged_attention_test {
namespace {

using test::HwWithIsa;

struct BatchShape {
  const char* name;
  std::vector<int32_t> kv_lens;
  std::vector<int32_t> q_lens;
  int64_t page_size;
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
};

const std::vector<BatchShape>& Shapes() {
  static const std::vector<BatchShape> kShapes = {
      {"single_page", {5}, {5}, 8, 2, 1, 16},                            // one page, partial, full triangle
      {"decode", {37, 1, 64, 100}, {1, 1, 1, 1}, 16, 4, 2, 32},          // decode only, kv 1, exact pages
      {"prefill_full", {40, 23}, {40, 23}, 8, 4, 2, 32},                 // q_len == kv_len
      {"mixed", {100, 33, 77, 1, 64}, {20, 1, 1, 1, 64}, 16, 8, 2, 64},  // chunked prefill + decode
      {"one_seq_short", {10}, {3}, 4, 2, 2, 16},                         // kv < one KV block
      {"mqa", {50, 20, 9}, {7, 1, 9}, 8, 4, 1, 44},                      // kv_heads = 1, head_dim % 8 = 4
      {"mha_odd_dim", {29, 70}, {29, 2}, 8, 3, 3, 40},                   // group 1, head_dim % 16 = 8
      {"gqa128", {130, 300}, {1, 17}, 16, 8, 2, 128},                    // realistic head_dim
      {"empty_seq", {10, 5, 12}, {0, 2, 0}, 4, 2, 1, 20},                // q_len 0 sequences
  };
  return kShapes;
}

struct Case {
  int shape;
  RaggedPagedAttentionBlockSizes bs;
  DType dtype;
  std::string isa;
  int threads;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(Shapes()[static_cast<size_t>(c.shape)].name) + "_p" + std::to_string(c.bs.kv_pages_per_block) +
         "_q" + std::to_string(c.bs.queries_per_block) + "_" + std::string(DTypeName(c.dtype)) + "_" + c.isa + "_t" +
         std::to_string(c.threads);
}

std::vector<Case> AllCases() {
  // Block sizes: 1 page x 1 query (most blocks, most items), small, the default, and blocks
  // larger than every sequence (128 queries, 64 pages).
  const RaggedPagedAttentionBlockSizes blocks[] = {{1, 1}, {2, 4}, {8, 16}, {64, 128}};
  std::vector<Case> out;
  for (const char* isa : {"avx512", "avx2", "portable"}) {
    if (!HostCanRun(isa)) continue;
    for (int s = 0; s < static_cast<int>(Shapes().size()); ++s) {
      for (const auto& b : blocks) {
        for (DType d : {DType::kF32, DType::kBF16}) {
          for (int t : {1, 2, 3}) out.push_back({s, b, d, isa, t});
        }
      }
    }
  }
  return out;
}

struct Prepared {
  RaggedPagedAttentionBatch batch;
  std::vector<float> ref;
};

// Batches and their reference outputs, built once per (shape, dtype).
const Prepared& GetPrepared(int shape, DType dtype) {
  static std::map<std::pair<int, int>, Prepared> cache;
  const auto key = std::make_pair(shape, static_cast<int>(dtype));
  auto it = cache.find(key);
  if (it == cache.end()) {
    const BatchShape& s = Shapes()[static_cast<size_t>(shape)];
    Prepared p;
    p.batch = MakeRaggedPagedAttentionBatchFromLens(s.kv_lens, s.q_lens, s.page_size, s.heads, s.kv_heads, s.head_dim,
                                                    dtype, 1000 + static_cast<uint64_t>(shape));
    p.ref.resize(static_cast<size_t>(p.batch.shape.total_q_tokens * s.heads * s.head_dim));
    RaggedPagedAttentionReference(p.batch.shape, p.batch.F32Inputs(), p.ref.data());
    it = cache.emplace(key, std::move(p)).first;
  }
  return it->second;
}

int64_t MaxKv(const RaggedPagedAttentionBatch& b) {
  return b.kv_lens.empty() ? 1 : *std::max_element(b.kv_lens.begin(), b.kv_lens.end());
}

class RaggedPagedAttentionVsReference : public testing::TestWithParam<Case> {};

TEST_P(RaggedPagedAttentionVsReference, MatchesReference) {
  const Case& c = GetParam();
  const Prepared& p = GetPrepared(c.shape, c.dtype);
  // NaN-filled output: a row the kernel forgets to write fails.
  std::vector<float> out(p.ref.size(), std::numeric_limits<float>::quiet_NaN());
  const auto st = RaggedPagedAttentionWithIsa(c.isa, c.bs, p.batch.shape, p.batch.Inputs(), out.data(), c.threads);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  const VerifyReport r = Compare(out.data(), p.ref.data(), static_cast<int64_t>(out.size()),
                                 RaggedPagedAttentionTolerance(MaxKv(p.batch)));
  EXPECT_TRUE(r.ok) << "mismatches " << r.mismatches << " non-finite " << r.non_finite << " max abs err "
                    << r.max_abs_err;
}

INSTANTIATE_TEST_SUITE_P(Batches, RaggedPagedAttentionVsReference, testing::ValuesIn(AllCases()), CaseName);

TEST(RaggedPagedAttention, HostPathReportsIsaAndMatches) {
  const std::string isa = RaggedPagedAttentionIsa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "portable") << isa;
  const Prepared& p = GetPrepared(3, DType::kF32);
  std::vector<float> out(p.ref.size());
  ASSERT_TRUE(RaggedPagedAttention({4, 8}, p.batch.shape, p.batch.Inputs(), out.data(), 2).has_value());
  EXPECT_TRUE(
      Compare(out.data(), p.ref.data(), static_cast<int64_t>(out.size()), RaggedPagedAttentionTolerance(MaxKv(p.batch)))
          .ok);
}

TEST(RaggedPagedAttention, ReferenceSingleKeyIsTheValue) {
  // One key: softmax weight 1, so the output is exactly v.
  const RaggedPagedAttentionBatch b = MakeRaggedPagedAttentionBatchFromLens({1}, {1}, 4, 2, 1, 8, DType::kF32, 3);
  std::vector<float> out(16);
  RaggedPagedAttentionReference(b.shape, b.F32Inputs(), out.data());
  const int64_t page = b.page_indices[0];
  for (int h = 0; h < 2; ++h) {
    for (int d = 0; d < 8; ++d)
      EXPECT_FLOAT_EQ(out[static_cast<size_t>(h * 8 + d)], b.v_pages[static_cast<size_t>(page * 4 * 8 + d)]);
  }
}

TEST(RaggedPagedAttention, DeterministicAcrossThreadCounts) {
  const Prepared& p = GetPrepared(7, DType::kBF16);
  std::vector<float> a(p.ref.size(), 1.0f), b(p.ref.size(), -1.0f);
  ASSERT_TRUE(RaggedPagedAttention({2, 4}, p.batch.shape, p.batch.Inputs(), a.data(), 1).has_value());
  ASSERT_TRUE(RaggedPagedAttention({2, 4}, p.batch.shape, p.batch.Inputs(), b.data(), 3).has_value());
  EXPECT_EQ(a, b);  // each item owns its outputs; the split never changes an element's arithmetic
}

TEST(RaggedPagedAttention, ToleranceCatchesOneSwappedPage) {
  // Point one page-table entry of the longest sequence at another page: the kernel then attends
  // to 8 wrong keys out of 1000 and must fail verification.
  RaggedPagedAttentionBatch b =
      MakeRaggedPagedAttentionBatchFromLens({1000, 300}, {4, 1}, 8, 4, 2, 64, DType::kF32, 11);
  std::vector<float> ref(static_cast<size_t>(b.shape.total_q_tokens * 4 * 64)), out(ref.size());
  RaggedPagedAttentionReference(b.shape, b.F32Inputs(), ref.data());
  ASSERT_TRUE(RaggedPagedAttention({8, 16}, b.shape, b.Inputs(), out.data(), 1).has_value());
  EXPECT_TRUE(
      Compare(out.data(), ref.data(), static_cast<int64_t>(ref.size()), RaggedPagedAttentionTolerance(1000)).ok);
  std::swap(b.page_indices[60], b.page_indices[static_cast<size_t>(b.shape.pages_per_seq)]);
  ASSERT_TRUE(RaggedPagedAttention({8, 16}, b.shape, b.Inputs(), out.data(), 1).has_value());
  const VerifyReport r =
      Compare(out.data(), ref.data(), static_cast<int64_t>(ref.size()), RaggedPagedAttentionTolerance(1000));
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 0);
}

// --- Validate ---------------------------------------------------------------------------------

RaggedPagedAttentionShape GoodShape() {
  RaggedPagedAttentionShape s;
  s.num_seqs = 2;
  s.total_q_tokens = 3;
  s.num_pages = 8;
  s.page_size = 16;
  s.pages_per_seq = 4;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 128;
  return s;
}

TEST(RaggedPagedAttentionValidate, RejectsWithPath) {
  struct Rejection {
    RaggedPagedAttentionBlockSizes bs;
    RaggedPagedAttentionShape shape;
    const char* path;
  };
  std::vector<Rejection> cases;
  const auto with = [&](RaggedPagedAttentionBlockSizes bs, auto edit, const char* path) {
    RaggedPagedAttentionShape s = GoodShape();
    edit(s);
    cases.push_back({bs, s, path});
  };
  const auto none = [](RaggedPagedAttentionShape&) {};
  with({0, 16}, none, "config.kv_pages_per_block");
  with({-2, 16}, none, "config.kv_pages_per_block");
  with({8, 0}, none, "config.queries_per_block");
  with({8, 4096}, none, "config.queries_per_block");
  with({512, 16}, none, "config.kv_pages_per_block");  // 512 * 16 = 8192 keys per block
  with({int64_t{1} << 40, 16}, none, "config.kv_pages_per_block");
  with(
      {8, 16},
      [](RaggedPagedAttentionShape& s) {
        s.heads = 6;
        s.kv_heads = 4;
      },
      "shape.heads");
  with(
      {8, 16}, [](RaggedPagedAttentionShape& s) { s.kv_heads = 0; }, "shape.kv_heads");
  with(
      {8, 16}, [](RaggedPagedAttentionShape& s) { s.page_size = 0; }, "shape.page_size");
  with(
      {8, 16}, [](RaggedPagedAttentionShape& s) { s.head_dim = 2048; }, "shape.head_dim");
  with(
      {8, 16}, [](RaggedPagedAttentionShape& s) { s.total_q_tokens = -1; }, "shape.total_q_tokens");
  for (const Rejection& r : cases) {
    const auto s = Validate(r.bs, r.shape, HwWithIsa("avx512"));
    ASSERT_FALSE(s.has_value()) << r.path;
    EXPECT_EQ(s.error().path, r.path) << s.error().ToString();
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(s.error().message.empty());
  }
  // Blocks larger than the problem are fine (the kernel clamps).
  EXPECT_TRUE(Validate({256, 1024}, GoodShape(), HwWithIsa("base")).has_value());
}

TEST(RaggedPagedAttentionValidate, MetadataRejectionsWithPath) {
  const RaggedPagedAttentionBatch good =
      MakeRaggedPagedAttentionBatchFromLens({20, 7}, {3, 1}, 8, 2, 1, 16, DType::kF32, 5);
  std::vector<float> out(static_cast<size_t>(4 * 2 * 16), 9.0f);
  ASSERT_TRUE(ValidateMetadata(good.shape, good.Inputs()).has_value());
  struct Edit {
    const char* path;
    void (*apply)(RaggedPagedAttentionBatch&);
  };
  const Edit edits[] = {
      {"cu_q_lens[0]", [](RaggedPagedAttentionBatch& b) { b.cu_q_lens[0] = 1; }},
      {"cu_q_lens[2]", [](RaggedPagedAttentionBatch& b) { b.cu_q_lens[2] = 2; }},            // decreasing
      {"kv_lens[1]", [](RaggedPagedAttentionBatch& b) { b.kv_lens[1] = 0; }},                // < q_len
      {"kv_lens[0]", [](RaggedPagedAttentionBatch& b) { b.kv_lens[0] = 25; }},               // > 3 pages * 8
      {"page_indices[0][2]", [](RaggedPagedAttentionBatch& b) { b.page_indices[2] = 99; }},  // outside pool
      {"page_indices[1][0]", [](RaggedPagedAttentionBatch& b) { b.page_indices[3] = -1; }},
      {"cu_q_lens[2]", [](RaggedPagedAttentionBatch& b) { b.shape.total_q_tokens = 5; }},  // end mismatch
  };
  for (const Edit& e : edits) {
    RaggedPagedAttentionBatch b = good;
    e.apply(b);
    const auto s = RaggedPagedAttention({8, 16}, b.shape, b.Inputs(), out.data(), 1);
    ASSERT_FALSE(s.has_value()) << e.path;
    EXPECT_EQ(s.error().path, e.path) << s.error().ToString();
  }
  for (float x : out) EXPECT_EQ(x, 9.0f);  // nothing written on error
  EXPECT_EQ(RaggedPagedAttention({8, 16}, good.shape, good.Inputs(), out.data(), 0).error().path, "threads");
  EXPECT_FALSE(RaggedPagedAttentionWithIsa("sse9", {8, 16}, good.shape, good.Inputs(), out.data(), 1).has_value());
}

// --- Batches ------------------------------------------------------------------------------------

TEST(RaggedPagedAttentionBatch, LengthsPagesAndPairs) {
  RaggedPagedAttentionProblem p;
  p.num_seqs = 9;
  p.max_kv_len = 300;
  p.prefill_q_len = 64;
  p.page_size = 16;
  p.heads = 4;
  p.kv_heads = 2;
  p.head_dim = 32;
  const RaggedPagedAttentionBatch b = MakeRaggedPagedAttentionBatch(p, DType::kBF16, 1);
  ASSERT_EQ(b.kv_lens.size(), 9u);
  EXPECT_EQ(b.kv_lens[0], 300);
  for (int s = 0; s < 9; ++s) {
    const int q = b.cu_q_lens[static_cast<size_t>(s + 1)] - b.cu_q_lens[static_cast<size_t>(s)];
    EXPECT_EQ(q, s % 4 == 0 ? std::min(64, b.kv_lens[static_cast<size_t>(s)]) : 1) << s;
  }
  EXPECT_EQ(b.shape.pages_per_seq, 19);  // ceil(300 / 16)
  // Pages are a shuffled pool: sequence 0's pages are not consecutive.
  int consecutive = 0;
  for (int j = 1; j < 19; ++j)
    consecutive += b.page_indices[static_cast<size_t>(j)] == b.page_indices[static_cast<size_t>(j - 1)] + 1;
  EXPECT_LT(consecutive, 5);
  // Lengths depend only on the dims; the seed moves pages and values.
  const RaggedPagedAttentionBatch c = MakeRaggedPagedAttentionBatch(p, DType::kBF16, 2);
  EXPECT_EQ(b.kv_lens, c.kv_lens);
  EXPECT_NE(b.page_indices, c.page_indices);
  // bf16: the f32 copy holds exactly the rounded values.
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(b.k_pages[i], BF16ToFloat(BF16{b.k_pages_bf16[i]}));
  // Pairs: a 3-query chunk at the end of 5 keys sees 3 + 4 + 5 keys; a decode of 7 sees 7.
  RaggedPagedAttentionShape sh;
  sh.num_seqs = 2;
  const int32_t kv[] = {5, 7}, cu[] = {0, 3, 4};
  EXPECT_EQ(RaggedPagedAttentionPairs(sh, kv, cu), 3 + 4 + 5 + 7);
}

// --- KernelSpec -------------------------------------------------------------------------------

Problem MakeProblem(int64_t num_seqs, int64_t max_kv, int64_t prefill, int64_t page, int64_t heads, int64_t kv_heads,
                    int64_t head_dim, DType dtype = DType::kF32) {
  return test::MakeProblem({{"num_seqs", num_seqs},
                            {"max_kv_len", max_kv},
                            {"prefill_q_len", prefill},
                            {"page_size", page},
                            {"heads", heads},
                            {"kv_heads", kv_heads},
                            {"head_dim", head_dim}},
                           dtype);
}

TEST(RaggedPagedAttentionSpec, Declarations) {
  const KernelSpec& spec = RaggedPagedAttentionSpec();
  EXPECT_EQ(spec.name(), "ragged_paged_attention");
  ASSERT_EQ(spec.dims().size(), 7u);
  EXPECT_STREQ(spec.dims()[0].bucket.name, "num_seqs");
  EXPECT_EQ(spec.dtypes(), (std::vector<DType>{DType::kF32, DType::kBF16}));
  ASSERT_EQ(spec.params().size(), 2u);
  EXPECT_EQ(spec.params()[0].name, "kv_pages_per_block");
  EXPECT_EQ(spec.params()[1].name, "queries_per_block");
  EXPECT_EQ(spec.Bucket(MakeProblem(30, 2000, 100, 16, 8, 2, 128)).first,
            "num_seqs32_max_kv_len2048_prefill_q_len128_page_size16_heads8_kv_heads2_head_dim128");
  EXPECT_EQ(spec.Bucket(MakeProblem(1, 1, 0, 16, 8, 2, 80)).first,
            "num_seqs1_max_kv_len1_prefill_q_len1_page_size16_heads8_kv_heads2_head_dim80");
  EXPECT_TRUE(spec.ValidateProblem(MakeProblem(1, 1, 0, 16, 8, 2, 80)).has_value());
  // One sequence of 5 keys, prefill 3 (s = 0 is a prefill): 3 + 4 + 5 pairs.
  EXPECT_EQ(spec.Flops(MakeProblem(1, 5, 3, 4, 2, 1, 8)), 4.0 * 2 * 8 * 12);
  // q 3x2x8 f32 in, out f32; K and V 5 x 1 x 8; metadata 2*1+1 + 1*2 ints.
  EXPECT_EQ(spec.Bytes(MakeProblem(1, 5, 3, 4, 2, 1, 8)), 48.0 * 8 + 2.0 * 5 * 8 * 4 + 4.0 * 5);
}

TEST(RaggedPagedAttentionSpec, ConfigSpaceValidatesOrRejectsWithReason) {
  const KernelSpec& spec = RaggedPagedAttentionSpec();
  const auto space = spec.ConfigSpace();
  EXPECT_GE(space.size(), 30u);
  EXPECT_LE(space.size(), 200u);
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (const Problem& p : {MakeProblem(32, 2048, 0, 16, 8, 2, 128), MakeProblem(8, 4096, 512, 256, 32, 8, 128)}) {
    int valid = 0;
    for (const Config& c : space) {
      const auto s = spec.ValidateConfig(c, p, hw);
      if (s) {
        ++valid;
      } else {
        EXPECT_TRUE(s.error().path.starts_with("config.")) << s.error().ToString();
        EXPECT_FALSE(s.error().message.empty());
      }
    }
    EXPECT_GE(valid, 30);
  }
}

// Verification problems keep the bucket's head_dim and dtype and stay within the reference
// budget (whether they pass and catch poison is the generic contract's business).
TEST(RaggedPagedAttentionSpec, VerificationProblemsKeepTheBucketsShapeWithinBudget) {
  const KernelSpec& spec = RaggedPagedAttentionSpec();
  const Problem bucket = MakeProblem(32, 2048, 256, 16, 8, 2, 128);
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const auto& bs : {RaggedPagedAttentionBlockSizes{8, 16}, RaggedPagedAttentionBlockSizes{1, 128},
                           RaggedPagedAttentionBlockSizes{64, 1}}) {
      Problem b = bucket;
      b.dtype = dtype;
      const Config c = ToConfig(bs);
      const Problem p = spec.VerificationProblem(c, b);
      ASSERT_TRUE(spec.ValidateProblem(p).has_value()) << p.ToString();
      EXPECT_LE(spec.Flops(p), 4e7) << p.ToString();
      EXPECT_EQ(p.Dim("head_dim"), 128);
      EXPECT_EQ(p.dtype, dtype);
    }
  }
  // The default config's problem keeps two full KV blocks and a partial page when the bucket allows.
  const Problem small = spec.VerificationProblem(spec.DefaultConfig(), MakeProblem(4, 1000, 0, 16, 2, 1, 64));
  EXPECT_EQ(small.Dim("max_kv_len"), 8 * 16 * 2 + 8 + 1);
  EXPECT_EQ(small.Dim("num_seqs"), 4);
}

}  // namespace
}  // namespace ragged_paged_attention_test
}  // namespace blocktune::kernels
