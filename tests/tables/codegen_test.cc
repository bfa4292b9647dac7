// The generator: jsonl round trip, merge, determinism, row checks, and every checked-in tuned
// row validated and run once against the reference.
#include "codegen/codegen.h"

#include <gtest/gtest.h>

#include <algorithm>

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

// Issue 26: a row that does not fit its kernel (a database written by an older build, or a
// pushed row from before ingest was checked) is skipped with a warning and never published;
// the other rows still are. The same checks as a sweep's: canonical bucket of the kernel's
// bucket function, current bucket version, a complete config of candidate values that the
// kernel validates for the bucket on the row's ISA; a median that is a time, and samples.
TEST(Codegen, SkipsRowsThatDoNotFitTheKernelAndPublishesTheRest) {
  const std::string hw = "x86_64.avx2.amd.fam25_mod1.t1";
  const auto good = Entry(hw, "m128_n128_k128", 48);
  auto bad_bucket = Entry(hw, "m999_n1_k1", 96);  // not what the bucket function makes
  auto bad_values = Entry(hw, "m256_n256_k256", 48);
  bad_values.config = NamedInts({{"block_m", -96}, {"block_n", 7}, {"block_k", 0}});
  auto not_candidate = Entry(hw, "m512_n512_k512", 7);
  auto bad_param = Entry(hw, "m1024_n128_k128", 48);
  bad_param.config.Set("block_z", 1);
  auto partial = Entry(hw, "m2048_n128_k128", 48);
  partial.config = NamedInts({{"block_m", 48}});
  auto bad_version = Entry(hw, "m4096_n128_k128", 48);
  bad_version.bucket_version = 99;
  // Times and counts an ingest would refuse (issue 40): a median that is no time, no samples.
  auto bad_median = Entry(hw, "m128_n256_k128", 48);
  bad_median.median_ns = -5;
  auto no_samples = Entry(hw, "m256_n128_k128", 48);
  no_samples.samples = 0;
  std::vector<std::string> skipped;
  auto files = GenerateAll(
      {good, bad_bucket, bad_values, not_candidate, bad_param, partial, bad_version, bad_median, no_samples}, &skipped);
  ASSERT_TRUE(files) << "one bad row blocks publishing: " << files.error().ToString();
  // One warning per skipped row, naming the row and the field.
  ASSERT_EQ(skipped.size(), 8u);
  const char* fields[] = {"[bucket]",         "[config.block_m]", "[config.block_m]", "[config.block_z]",
                          "[config.block_n]", "[bucket_version]", "[median_ns]",      "[samples]"};
  std::vector<std::string> sorted_rows = {"m999_n1_k1",      "m256_n256_k256",  "m512_n512_k512", "m1024_n128_k128",
                                          "m2048_n128_k128", "m4096_n128_k128", "m128_n256_k128", "m256_n128_k128"};
  for (size_t i = 0; i < skipped.size(); ++i) {
    EXPECT_NE(skipped[i].find(sorted_rows[i]), std::string::npos) << skipped[i];
    EXPECT_NE(skipped[i].find(fields[i]), std::string::npos) << skipped[i];
  }
  const std::string& h = files->at("include/blocktune/tables/matmul_tuned_block_sizes.h");
  EXPECT_NE(h.find("std::array<Row, 1>"), std::string::npos);
  EXPECT_EQ(h.find("-96"), std::string::npos);
  const std::string& jsonl = files->at("tuned_entries.jsonl");
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 1) << jsonl;
  EXPECT_NE(jsonl.find("m128_n128_k128"), std::string::npos);
  auto bad_kernel = Entry("h.t1", "m128_n128_k128", 48);
  bad_kernel.kernel = "nope";
  EXPECT_FALSE(GenerateAll({bad_kernel}));  // a kernel this build does not know: load its spec first
}

// Every row of the checked-in table must be a valid config for its bucket on its hardware's
// ISA and must produce the reference result.
TEST(CheckedInTable, EveryRowValidatesAndMatchesTheReference) {
  auto rows = ParseJsonl(CheckedInEntriesJsonl());
  ASSERT_TRUE(rows) << rows.error().ToString();
  std::vector<std::string> skipped;
  ASSERT_TRUE(GenerateAll(*rows, &skipped));
  EXPECT_TRUE(skipped.empty()) << "checked-in rows do not fit their kernels: " << skipped.front();
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
