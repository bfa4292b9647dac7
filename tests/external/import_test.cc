// Importers (external/import.h) on small fixtures in tests/data/import written in Kernel
// Tuner's two cache layouts (markers in the objective field; __error__, truncated) and T4.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "external/import.h"
#include "external/spec.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::external {
namespace {

using tuner::Outcome;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/import/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, const ImportedRecord*> ByConfig(const ImportedSet& set) {
  std::map<std::string, const ImportedRecord*> out;
  for (const auto& r : set.records) out[r.config.ToString()] = &r;
  return out;
}

TEST(Import, DeviceNamesBecomeHardwareKeys) {
  EXPECT_EQ(DeviceHardwareKey("NVIDIA GeForce RTX 2080 Ti"), "cuda.nvidia.geforce_rtx_2080_ti");
  EXPECT_EQ(DeviceHardwareKey("AMD Instinct MI250X"), "hip.amd.instinct_mi250x");
  EXPECT_EQ(DeviceHardwareKey("v5e", "tpu"), "tpu.unknown.v5e");
  // A key (what `blocktune export` writes as the device name) stays as it is.
  EXPECT_EQ(DeviceHardwareKey("cuda.nvidia.geforce_rtx_2080_ti"), "cuda.nvidia.geforce_rtx_2080_ti");
}

TEST(Import, KernelTunerMarkersInTheObjectiveField) {
  auto set = ParseKernelTunerCache(Fixture("kerneltuner_markers.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  EXPECT_TRUE(set->warnings.empty());
  EXPECT_EQ(set->kernel, "vector_add");
  EXPECT_EQ(set->hardware_key, "cuda.nvidia.geforce_rtx_2080_ti");
  EXPECT_EQ(set->problem.ToString(), "size_x=10000000");
  ASSERT_EQ(set->records.size(), 10u);  // every record, failures included
  auto by = ByConfig(*set);
  EXPECT_EQ(by["block_size_x=128,use_vec=1"]->outcome, Outcome::kOk);
  EXPECT_EQ(by["block_size_x=128,use_vec=1"]->samples_ns, (std::vector<double>{0.33e6, 0.34e6, 0.33e6}));
  EXPECT_EQ(by["block_size_x=160,use_vec=0"]->outcome, Outcome::kInvalid);
  EXPECT_NE(by["block_size_x=160,use_vec=0"]->detail.find("compile_failed"), std::string::npos);
  EXPECT_EQ(by["block_size_x=1024,use_vec=0"]->outcome, Outcome::kCrashed);
  EXPECT_NE(by["block_size_x=1024,use_vec=0"]->detail.find("runtime_failed"), std::string::npos);
  EXPECT_EQ(by["block_size_x=2048,use_vec=1"]->outcome, Outcome::kInvalid);
  EXPECT_EQ(set->params[0].values, (std::vector<int64_t>{96, 128, 160, 1024, 2048}));
}

TEST(Import, KernelTunerErrorFieldAndTruncatedCache) {
  auto set = ParseKernelTunerCache(Fixture("kerneltuner_error_truncated.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_NE(set->warnings[0].find("truncated"), std::string::npos);
  ASSERT_EQ(set->records.size(), 7u);  // the 8th entry is cut off mid-array
  auto by = ByConfig(*set);
  EXPECT_EQ(by["block_size_x=16,block_size_y=4,tile_size_x=2"]->outcome, Outcome::kInvalid);  // __error__ wins over time 1e20
  EXPECT_EQ(by["block_size_x=16,block_size_y=8,tile_size_x=2"]->outcome, Outcome::kCrashed);
  EXPECT_EQ(by["block_size_x=32,block_size_y=8,tile_size_x=1"]->outcome, Outcome::kInvalid);
  EXPECT_EQ(by["block_size_x=32,block_size_y=4,tile_size_x=2"]->samples_ns.size(), 4u);
  EXPECT_EQ(set->hardware_key, "cuda.nvidia.a100_pcie_40gb");
  EXPECT_EQ(set->problem.ToString(), "size_x=4096,size_y=4096");
}

TEST(Import, T4Invalidity) {
  auto set = ParseT4(Fixture("t4_small.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  ASSERT_EQ(set->records.size(), 6u);
  auto by = ByConfig(*set);
  EXPECT_EQ(by["block_size_x=16,block_size_y=16,use_padding=0"]->samples_ns.size(), 3u);
  EXPECT_EQ(by["block_size_x=16,block_size_y=16,use_padding=1"]->outcome, Outcome::kOk);
  EXPECT_EQ(by["block_size_x=32,block_size_y=16,use_padding=0"]->outcome, Outcome::kInvalid);
  EXPECT_EQ(by["block_size_x=32,block_size_y=16,use_padding=1"]->outcome, Outcome::kCrashed);
  EXPECT_EQ(by["block_size_x=48,block_size_y=16,use_padding=0"]->outcome, Outcome::kWrongResult);
  EXPECT_EQ(set->hardware_key, "hip.amd.instinct_mi250x");
}

TEST(Import, StoresEveryRecordOnceAndTheWinner) {
  test::ScratchDir dir("import_store");
  auto set = ParseKernelTunerCache(Fixture("kerneltuner_markers.json"), {"vector_add_store_test", "", ""});
  ASSERT_TRUE(set);
  auto spec = ParseKernelSpec(SpecJsonFor(*set), "generated.json", dir.path().string());
  ASSERT_TRUE(spec) << spec.error().ToString();
  auto db = store::Store::Open(dir.File("db.sqlite"));
  ASSERT_TRUE(db) << db.error().ToString();
  auto first = StoreImport(**db, **spec, *set);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->records, 10);
  EXPECT_EQ(first->winner.ToString(), "block_size_x=128,use_vec=1");
  auto again = StoreImport(**db, **spec, *set);  // idempotent
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->sweep_id, first->sweep_id);
  auto ms = (*db)->measurements().ListBucket(first->sweep_id, first->bucket);
  ASSERT_TRUE(ms);
  EXPECT_EQ(ms->size(), 10u);
  auto tuned = (*db)->tuned().List("vector_add_store_test");
  ASSERT_TRUE(tuned);
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ(tuned->front().hardware_key, "cuda.nvidia.geforce_rtx_2080_ti");
  auto sweep = (*db)->sweeps().Get(first->sweep_id);
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->status, store::SweepStatus::kDone);
}

}  // namespace
}  // namespace blocktune::external
