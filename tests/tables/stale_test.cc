// Staleness (docs/tables.md#staleness): this build's kernel fingerprints, rows of another
// fingerprint reported stale by every lookup path, and a stale row losing to a fresh one.
#include <gtest/gtest.h>

#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

#include "blocktune/kernel_fingerprints.h"
#include "blocktune/tables/matmul_tuned_block_sizes.h"
#include "codegen/codegen.h"
#include "kernels/core/fingerprint.h"
#include "tuner/lookup.h"

namespace blocktune {
namespace {

constexpr char kOtherBuild[] = "00000000deadbeef";

tuner::TunedEntry MatmulRow(const std::string& fingerprint, int64_t block_m = 48) {
  tuner::TunedEntry e;
  e.kernel = "matmul";
  e.hardware_key = "x86_64.avx512.intel.fam6_mod9999.t1";
  e.dtype = DType::kF32;
  e.bucket = "m128_n128_k128";
  e.config = NamedInts({{"block_m", block_m}, {"block_n", 128}, {"block_k", 256}});
  e.median_ns = 1000;
  e.samples = 5;
  e.sweep_id = 1;
  e.measurement_id = 2;
  e.measured_at = "2026-11-25T00:00:00.000Z";
  e.fingerprint = fingerprint;
  return e;
}

TEST(Fingerprint, EveryKernelHasSixteenHexDigitsFromTheGeneratedHeader) {
  for (const KernelSpec* k : AllKernels()) {
    const std::string_view fp = KernelFingerprint(k->name());
    EXPECT_EQ(fp.size(), 16u) << k->name();
    EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string_view::npos) << fp;
  }
  EXPECT_EQ(KernelFingerprint("matmul"), std::string_view(kernel_fingerprint::matmul));
  EXPECT_NE(KernelFingerprint("matmul"), KernelFingerprint("flash_attention"));
  EXPECT_TRUE(KernelFingerprint("no_such_kernel").empty());
  EXPECT_NE(FingerprintToolchain().find("compiler="), std::string_view::npos);
}

TEST(Fingerprint, FreshStaleOrUnknown) {
  EXPECT_EQ(FreshnessOf("matmul", KernelFingerprint("matmul")), Freshness::kFresh);
  EXPECT_EQ(FreshnessOf("matmul", kOtherBuild), Freshness::kStale);
  EXPECT_EQ(FreshnessOf("matmul", ""), Freshness::kUnknown);
  EXPECT_EQ(FreshnessName(Freshness::kStale), "stale");
}

TEST(Staleness, TheLookupAnswerSaysStaleForARowOfAnotherBuild) {
  const KernelSpec& spec = *FindKernel("matmul");
  const tuner::LookupQuery q{DType::kF32, NamedInts({{"m", 100}, {"n", 100}, {"k", 100}}),
                             "x86_64.avx512.intel.fam6_mod9999.t1", std::nullopt};
  auto stale = tuner::Lookup(spec, std::vector{MatmulRow(kOtherBuild)}, q);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->source, tables::Source::kTuned);
  EXPECT_TRUE(stale->stale);
  EXPECT_EQ(stale->fingerprint, kOtherBuild);
  auto fresh = tuner::Lookup(spec, std::vector{MatmulRow(std::string(KernelFingerprint("matmul")))}, q);
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh->stale);
  auto unknown = tuner::Lookup(spec, std::vector{MatmulRow("")}, q);
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->stale);
  EXPECT_TRUE(unknown->fingerprint.empty());
}

TEST(Staleness, AStaleRowNeverReplacesAFreshOneInAMerge) {
  const std::string mine(KernelFingerprint("matmul"));
  auto merged = codegen::Merge({MatmulRow(mine, 48)}, {MatmulRow(kOtherBuild, 96)});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].fingerprint, mine);
  EXPECT_EQ(merged[0].config.Get("block_m"), 48);
  // Over an unknown or a stale row, the update wins as before; a fresh update always wins.
  EXPECT_EQ(codegen::Merge({MatmulRow("", 48)}, {MatmulRow(kOtherBuild, 96)})[0].config.Get("block_m"), 96);
  EXPECT_EQ(codegen::Merge({MatmulRow(kOtherBuild, 48)}, {MatmulRow(mine, 96)})[0].config.Get("block_m"), 96);
}

TEST(Staleness, JsonlCarriesFingerprintsAndGateRecords) {
  tuner::TunedEntry e = MatmulRow(kOtherBuild);
  tuner::GateRecord g;
  g.decision = "kept";
  g.old_config = e.config;
  g.new_config = NamedInts({{"block_m", 96}, {"block_n", 128}, {"block_k", 256}});
  g.old_ns = 1500;
  g.new_ns = 6000;
  g.noise_band = 0.02;
  g.repetitions = 9;
  g.at = "2026-11-25T12:00:00.000Z";
  e.gate = g;
  const std::string text = codegen::ExportJsonl({e, MatmulRow("")});
  EXPECT_NE(text.find("\"fingerprint\":\"00000000deadbeef\",\"gate\":{\"decision\":\"kept\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"fingerprint\":null"), std::string::npos) << text;
  auto back = codegen::ParseJsonl(text);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(codegen::ExportJsonl(*back), text);
  const auto& kept = (*back)[0].gate ? (*back)[0] : (*back)[1];
  ASSERT_TRUE(kept.gate);
  EXPECT_EQ(kept.gate->new_config.Get("block_m"), 96);
  EXPECT_EQ(kept.gate->repetitions, 9);
  // A malformed fingerprint is refused with the field named.
  auto bad = codegen::ParseJsonl(
      "{\"kernel\":\"matmul\",\"hardware\":\"h\",\"dtype\":\"f32\",\"bucket\":\"m1_n1_k1\",\"bucket_version\":1,"
      "\"config\":{},\"median_ns\":1,\"samples\":1,\"sweep_id\":1,\"measurement_id\":1,\"measured_at\":\"t\","
      "\"fingerprint\":\"NOT HEX\"}\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, "fingerprint");
  // The generated header carries the row's fingerprint and the gate's decision as a comment.
  const std::string header = codegen::GenerateHeader(*FindKernel("matmul"), {e});
  EXPECT_NE(header.find("\"00000000deadbeef\"}"), std::string::npos);
  EXPECT_NE(header.find("// gate kept (old block_m=48,block_n=128,block_k=256, new block_m=96,block_n=128,"
                        "block_k=256): old 1500 ns, new 6000 ns"),
            std::string::npos)
      << header;
  EXPECT_NE(codegen::GenerateJson(*FindKernel("matmul"), {e}).find("\"decision\": \"kept\""), std::string::npos);
}

// A generated header compares its rows with this build's fingerprint (kBuildFingerprint, from
// blocktune/kernel_fingerprints.h): at compile time into kStale (StaleFlags), by MarkStale's rule.
struct FakeRow {
  std::string_view hardware;
  tables::matmul::BlockSizes config;
  double median_ns;
  std::string_view fingerprint;
};

TEST(Staleness, GeneratedHeadersMarkRowsOfAnotherBuildStale) {
  EXPECT_EQ(tables::matmul::kBuildFingerprint, KernelFingerprint("matmul"));
  // The checked-in rows: every one measured before fingerprints, so unknown and not stale.
  const auto r = tables::matmul::LookupBlockSizes("x86_64.avx2.amd.fam25_mod1.t1", "f32", 1024, 1024, 1024);
  ASSERT_EQ(r.source, tables::Source::kTuned);
  EXPECT_FALSE(r.stale);
  EXPECT_TRUE(r.fingerprint.empty());

  const FakeRow rows[] = {{"k", {48, 128, 256}, 1.0, kOtherBuild},
                          {"k", {48, 128, 256}, 1.0, kernel_fingerprint::matmul},
                          {"k", {48, 128, 256}, 1.0, ""}};
  using L = tables::TableLookup<FakeRow, 3>;
  for (const auto& [row, want] : {std::pair{&rows[0], true}, {&rows[1], false}, {&rows[2], false}}) {
    L l{};
    l.row = row;
    const L marked = tables::MarkStale(l, tables::matmul::kBuildFingerprint);
    EXPECT_EQ(marked.stale, want) << row->fingerprint;
    EXPECT_EQ(marked.fingerprint, row->fingerprint);
  }
  L none{};
  EXPECT_FALSE(tables::MarkStale(none, tables::matmul::kBuildFingerprint).stale);  // the default
  L l{};
  l.row = &rows[0];
  EXPECT_FALSE(tables::MarkStale(l, {}).stale);  // no fingerprints header: nothing is stale
}

// StaleFlags is MarkStale's rule, evaluated by the compiler.
constexpr std::array<FakeRow, 3> kFakeRows{{{"k", {48, 128, 256}, 1.0, "aaaaaaaaaaaaaaaa"},
                                            {"k", {48, 128, 256}, 1.0, "bbbbbbbbbbbbbbbb"},
                                            {"k", {48, 128, 256}, 1.0, ""}}};
static_assert(tables::StaleFlags(kFakeRows, "bbbbbbbbbbbbbbbb")[0]);
static_assert(!tables::StaleFlags(kFakeRows, "bbbbbbbbbbbbbbbb")[1]);
static_assert(!tables::StaleFlags(kFakeRows, "bbbbbbbbbbbbbbbb")[2]);  // unknown: never stale
static_assert(!tables::StaleFlags(kFakeRows, "")[0]);                  // no fingerprints header

TEST(Staleness, GeneratedStaleFlagsAreMarkStalesAnswerForEveryRow) {
  namespace mm = tables::matmul;
  for (size_t i = 0; i < mm::kRows.size(); ++i) {
    tables::TableLookup<mm::Row, 3> l{};
    l.row = &mm::kRows[i];
    EXPECT_EQ(mm::kStale[i], tables::MarkStale(l, mm::kBuildFingerprint).stale) << mm::kRows[i].hardware;
  }
  // A lookup answered by a row reports that row's flag and fingerprint.
  for (const mm::Row& row : mm::kRows) {
    std::array<std::int64_t, 3> dims{};
    const std::string bucket(row.bucket);
    ASSERT_EQ(std::sscanf(bucket.c_str(), "m%" SCNd64 "_n%" SCNd64 "_k%" SCNd64, &dims[0], &dims[1], &dims[2]), 3);
    const auto r = mm::LookupDims(row.hardware, row.dtype, dims);
    ASSERT_EQ(r.source, tables::Source::kTuned) << row.hardware << " " << row.bucket;
    const auto i = static_cast<size_t>(r.row - mm::kRows.data());
    EXPECT_EQ(r.stale, mm::kStale[i]);
    EXPECT_EQ(r.fingerprint, r.row->fingerprint);
  }
}

}  // namespace
}  // namespace blocktune
