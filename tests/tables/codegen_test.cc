// The generator: jsonl round trip, merge, determinism, row checks, and every checked-in tuned
// row validated and run once against the reference.
#include "codegen/codegen.h"

#include <gtest/gtest.h>

#include "tuner/sweep.h"

namespace blocktune::codegen {
namespace {

tuner::TunedEntry Entry(std::string hw, std::string bucket, int64_t bm) {
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = std::move(hw);
  e.bucket = std::move(bucket);
  e.config = NamedInts({{"block_m", bm}, {"block_n", 256}, {"block_k", 128}});
  e.median_ns = 12345.678;
  e.samples = 5;
  e.sweep_id = 3;
  e.measurement_id = 77;
  e.measured_at = "2026-11-22T00:00:00.000Z";
  return e;
}

TEST(Codegen, JsonlRoundTripsAndIsSorted) {
  std::vector<tuner::TunedEntry> in = {Entry("x86_64.avx2.amd.fam25_mod1.t1", "m128_n128_k128", 48),
                                       Entry("x86_64.avx2.amd.fam25_mod1.t1", "m1024_n1024_k1024", 96)};
  const std::string text = ExportJsonl(in);
  EXPECT_LT(text.find("m1024"), text.find("m128"));
  auto back = ParseJsonl(text);
  ASSERT_TRUE(back) << back.error().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].bucket, "m1024_n1024_k1024");
  EXPECT_EQ((*back)[0].config, in[1].config);
  EXPECT_EQ((*back)[0].median_ns, in[1].median_ns);
  EXPECT_EQ(ExportJsonl(*back), text);
}

TEST(Codegen, ParseErrorsNameTheLine) {
  auto r = ParseJsonl("\n{\"kernel\":\"matmul\"}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  EXPECT_FALSE(ParseJsonl("{not json}\n"));
}

TEST(Codegen, MergeReplacesSameKeyAndKeepsOthers) {
  auto merged = Merge({Entry("a.t1", "m128_n128_k128", 48), Entry("b.t1", "m128_n128_k128", 48)},
                      {Entry("a.t1", "m128_n128_k128", 96)});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].config.Get("block_m"), 96);
  EXPECT_EQ(merged[1].hardware_key, "b.t1");
}

TEST(Codegen, OutputIsDeterministicAndCarriesTheBanner) {
  std::vector<tuner::TunedEntry> a = {Entry("x86_64.avx2.amd.fam25_mod1.t1", "m128_n128_k128", 48),
                                      Entry("x86_64.avx2.amd.fam25_mod1.t2", "m128_n128_k128", 96)};
  std::vector<tuner::TunedEntry> b = {a[1], a[0]};
  auto fa = GenerateAll(a);
  auto fb = GenerateAll(b);
  ASSERT_TRUE(fa) << fa.error().ToString();
  ASSERT_TRUE(fb);
  EXPECT_EQ(*fa, *fb);
  const std::string& h = fa->at("include/blocktune/tables/matmul_tuned_block_sizes.h");
  EXPECT_NE(h.find("GENERATED"), std::string::npos);
  EXPECT_NE(h.find(std::string(kRegenerateCommand)), std::string::npos);
  EXPECT_NE(h.find("std::array<Row, 2>"), std::string::npos);
  EXPECT_EQ(fa->at("include/blocktune/tables/resolve.h"), ResolveHeaderSource());
  EXPECT_TRUE(fa->count("python/matmul_tuned_block_sizes.py"));
  EXPECT_TRUE(fa->count("json/matmul_tuned_block_sizes.json"));
}

TEST(Codegen, RejectsRowsThatDoNotFitTheKernel) {
  auto bad_bucket = Entry("h.t1", "m100_n128_k128", 48);
  EXPECT_FALSE(GenerateAll({bad_bucket}));
  auto bad_param = Entry("h.t1", "m128_n128_k128", 48);
  bad_param.config.Set("block_z", 1);
  EXPECT_FALSE(GenerateAll({bad_param}));
  auto bad_version = Entry("h.t1", "m128_n128_k128", 48);
  bad_version.bucket_version = 99;
  EXPECT_FALSE(GenerateAll({bad_version}));
  auto bad_kernel = Entry("h.t1", "m128_n128_k128", 48);
  bad_kernel.kernel = "nope";
  EXPECT_FALSE(GenerateAll({bad_kernel}));
}

// Every row of the checked-in table must be a valid config for its bucket on its hardware's
// ISA and must produce the reference result.
TEST(CheckedInTable, EveryRowValidatesAndMatchesTheReference) {
  auto rows = ParseJsonl(CheckedInEntriesJsonl());
  ASSERT_TRUE(rows) << rows.error().ToString();
  ASSERT_TRUE(GenerateAll(*rows)) << "checked-in rows do not fit their kernels";
  const HardwareProfile host = HardwareProfile::Detect(1);
  for (const auto& e : *rows) {
    SCOPED_TRACE(e.kernel + " " + e.hardware_key + " " + e.bucket + " " + e.config.ToString());
    const KernelSpec* spec = FindKernel(e.kernel);
    ASSERT_NE(spec, nullptr);
    auto problem = spec->ProblemFromBucket(e.dtype, e.bucket);
    ASSERT_TRUE(problem);
    HardwareProfile hw = host;
    hw.threads = 1;
    EXPECT_TRUE(spec->ValidateConfig(e.config, *problem, hw));
    tuner::Measurement m;
    EXPECT_TRUE(tuner::VerifyConfig(*spec, e.config, *problem, 2, m)) << m.detail;
  }
}

}  // namespace
}  // namespace blocktune::codegen
