// Importers (external/import.h) on small fixtures in tests/data/import written in Kernel
// Tuner's two cache layouts (markers in the objective field; __error__, truncated), T4 and the
// JSON CLBlast's tuners write.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

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

TEST(Import, DeviceNamesBecomeDeviceKeys) {
  // One scheme with the keys runners announce (docs/accelerators.md): the known models' names
  // of the landscapes this project imports and of the tests' files.
  EXPECT_EQ(DeviceHardwareKey("NVIDIA GeForce RTX 2080 Ti"), "gpu.nvidia.sm75.rtx_2080_ti");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA A100-PCIE-40GB"), "gpu.nvidia.sm80.a100");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA RTX A4000"), "gpu.nvidia.sm86.rtx_a4000");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA RTX A6000"), "gpu.nvidia.sm86.rtx_a6000");
  EXPECT_EQ(DeviceHardwareKey("Tesla T4"), "gpu.nvidia.sm75.t4");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA H100 80GB HBM3"), "gpu.nvidia.sm90.h100");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA H200"), "gpu.nvidia.sm90.h200");
  EXPECT_EQ(DeviceHardwareKey("AMD Instinct MI250X"), "gpu.amd.gfx90a.mi250x");
  EXPECT_EQ(DeviceHardwareKey("AMD Radeon PRO W6600"), "gpu.amd.gfx1032.pro_w6600");
  EXPECT_EQ(DeviceHardwareKey("AMD Radeon PRO W7800"), "gpu.amd.gfx1100.pro_w7800");
  EXPECT_EQ(DeviceHardwareKey("GeForce GTX 1080", "opencl", "NVIDIA Corporation"), "gpu.nvidia.sm61.gtx_1080");
  EXPECT_EQ(DeviceHardwareKey("gfx906:sramecc+:xnack-", "opencl", "Advanced Micro Devices, Inc."),
            "gpu.amd.gfx906.gfx906");
  EXPECT_EQ(DeviceHardwareKey("v5e", "tpu"), "tpu.google.v5e");
  // What blocktune does not know: the architecture says so, or --arch gives it.
  EXPECT_EQ(DeviceHardwareKey("NVIDIA GeForce GT 710"), "gpu.nvidia.unknown.gt_710");
  EXPECT_EQ(DeviceHardwareKey("NVIDIA GeForce GT 710", "", "", "3.5"), "gpu.nvidia.sm35.gt_710");
  EXPECT_EQ(DeviceHardwareKey(""), "gpu.unknown.unknown.unknown_device");
  // The identity behind it, kept as the import's provenance.
  const tuner::DeviceIdentity id = ImportedDevice("NVIDIA A100-PCIE-40GB", "kerneltuner");
  EXPECT_EQ(id.kind, "gpu");
  EXPECT_EQ(id.vendor, "nvidia");
  EXPECT_EQ(id.model, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(id.arch, "sm80");
  EXPECT_EQ(id.platform, "kerneltuner");
  // A key (what `blocktune export` writes as the device name) stays as it is; one of the scheme
  // before device keys is mapped.
  EXPECT_EQ(DeviceHardwareKey("gpu.nvidia.sm75.rtx_2080_ti"), "gpu.nvidia.sm75.rtx_2080_ti");
  EXPECT_EQ(DeviceHardwareKey("cuda.nvidia.geforce_rtx_2080_ti"), "gpu.nvidia.sm75.rtx_2080_ti");
}

TEST(Import, KernelTunerMarkersInTheObjectiveField) {
  auto set = ParseKernelTunerCache(Fixture("kerneltuner_markers.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  EXPECT_TRUE(set->warnings.empty());
  EXPECT_EQ(set->kernel, "vector_add");
  EXPECT_EQ(set->hardware_key, "gpu.nvidia.sm75.rtx_2080_ti");
  EXPECT_EQ(set->problem.ToString(), "size_x=10000000");
  ASSERT_EQ(set->records.size(), 10u);  // every record, failures included
  auto by = ByConfig(*set);
  EXPECT_EQ(by["block_size_x=128,use_vec=1"]->outcome, Outcome::kOk);
  EXPECT_EQ(by["block_size_x=128,use_vec=1"]->samples_ns, (std::vector<double>{0.33e6, 0.34e6, 0.33e6}));
  EXPECT_EQ(by["block_size_x=160,use_vec=0"]->outcome, Outcome::kCompileFailed);
  EXPECT_NE(by["block_size_x=160,use_vec=0"]->detail.find("CompilationFailedConfig"), std::string::npos);
  EXPECT_EQ(by["block_size_x=1024,use_vec=0"]->outcome, Outcome::kRuntimeFailed);
  EXPECT_NE(by["block_size_x=1024,use_vec=0"]->detail.find("RuntimeFailedConfig"), std::string::npos);
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
  EXPECT_EQ(by["block_size_x=16,block_size_y=4,tile_size_x=2"]->outcome,
            Outcome::kCompileFailed);  // __error__ wins over time 1e20
  EXPECT_EQ(by["block_size_x=16,block_size_y=8,tile_size_x=2"]->outcome, Outcome::kRuntimeFailed);
  EXPECT_EQ(by["block_size_x=32,block_size_y=8,tile_size_x=1"]->outcome, Outcome::kInvalid);
  EXPECT_EQ(by["block_size_x=32,block_size_y=4,tile_size_x=2"]->samples_ns.size(), 4u);
  EXPECT_EQ(set->hardware_key, "gpu.nvidia.sm80.a100");
  EXPECT_EQ(set->problem.ToString(), "size_x=4096,size_y=4096");
}

TEST(Import, T4Invalidity) {
  auto set = ParseT4(Fixture("t4_small.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  ASSERT_EQ(set->records.size(), 6u);
  auto by = ByConfig(*set);
  EXPECT_EQ(by["block_size_x=16,block_size_y=16,use_padding=0"]->samples_ns.size(), 3u);
  EXPECT_EQ(by["block_size_x=16,block_size_y=16,use_padding=1"]->outcome, Outcome::kOk);
  EXPECT_EQ(by["block_size_x=32,block_size_y=16,use_padding=0"]->outcome, Outcome::kCompileFailed);
  EXPECT_EQ(by["block_size_x=32,block_size_y=16,use_padding=1"]->outcome, Outcome::kRuntimeFailed);
  EXPECT_EQ(by["block_size_x=48,block_size_y=16,use_padding=0"]->outcome, Outcome::kWrongResult);
  EXPECT_EQ(set->hardware_key, "gpu.amd.gfx90a.mi250x");
}

TEST(Import, CLBlastTunerFile) {
  auto set = ParseCLBlast(Fixture("clblast_xgemm_1_32.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  EXPECT_TRUE(set->warnings.empty()) << set->warnings.front();
  EXPECT_EQ(set->format, "clblast");
  EXPECT_EQ(set->kernel, "xgemm_1");
  EXPECT_EQ(set->dtype, DType::kF32);
  EXPECT_EQ(set->hardware_key, "gpu.nvidia.sm61.gtx_1080");
  EXPECT_EQ(set->problem.Get("m"), 1024);
  EXPECT_EQ(set->problem.Get("n"), 1024);
  EXPECT_EQ(set->problem.Get("k"), 1024);
  // PRECISION is the file's precision (the dtype), not a parameter; 16 parameters remain.
  ASSERT_EQ(set->params.size(), 16u);
  for (const auto& p : set->params) EXPECT_NE(p.name, "PRECISION");
  ASSERT_EQ(set->records.size(), 6u);  // every record in the file
  const std::string best =
      "GEMMK=0,KREG=1,KWG=16,KWI=2,MDIMA=8,MDIMC=8,MWG=64,NDIMB=8,NDIMC=8,NWG=64,SA=0,SB=0,STRM=0,STRN=0,VWM=4,VWN=2";
  auto by = ByConfig(*set);
  ASSERT_TRUE(by.count(best));
  EXPECT_EQ(by[best]->outcome, Outcome::kOk);
  EXPECT_EQ(by[best]->samples_ns, std::vector<double>{0.61e6});  // ms -> ns, one sample (the tuner's best run)
  int ok = 0, unstable = 0;
  for (const auto& r : set->records) {
    ok += r.outcome == Outcome::kOk;
    unstable += r.outcome == Outcome::kUnstable;
  }
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(unstable, 1);  // "time": 0.000 is below the file's resolution, not a time
  EXPECT_NE(set->context.find("arg_alpha=2.00"), std::string::npos) << set->context;
  // The created spec holds f32 and the three dims; the set matches it.
  auto spec = ParseKernelSpec(SpecJsonFor(*set), "generated.json", ".");
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ((*spec)->dtypes(), std::vector<DType>{DType::kF32});
  EXPECT_TRUE(MatchSpec(**spec, *set));
}

TEST(Import, CLBlastPrecisionAndVendorFields) {
  auto set = ParseCLBlast(Fixture("clblast_xaxpy_64.json"), {});
  ASSERT_TRUE(set) << set.error().ToString();
  EXPECT_EQ(set->dtype, DType::kF64);
  // The OpenCL name of an AMD GPU is its code name; the vendor comes from device_vendor.
  EXPECT_EQ(set->hardware_key, "gpu.amd.gfx906.gfx906");
  EXPECT_EQ(set->problem.ToString(), "n=4194304");
  EXPECT_EQ(set->records.size(), 4u);
  // An f32 spec of the same kernel does not take f64 records.
  ImportedSet f32 = *set;
  f32.dtype = DType::kF32;
  auto spec = ParseKernelSpec(SpecJsonFor(f32), "generated.json", ".");
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_FALSE(MatchSpec(**spec, *set));
}

TEST(Import, CLBlastBadFilesNameTheField) {
  const struct {
    const char* text;
    const char* path;
  } cases[] = {
      {R"({"kernel_family": "xgemm_1", "precision": "32"})", "results"},
      {R"({"precision": "32", "results": []})", "kernel_family"},
      {R"({"kernel_family": "xgemm_1", "precision": "8", "results": []})", "precision"},
      {R"({"kernel_family": "xgemm_1", "precision": "32", "arg_m": "-4", "results": [{"parameters": {"MWG": 16}, "time": 1}]})",
       "arg_m"},
      {R"({"kernel_family": "xgemm_1", "precision": "32", "results": [{"time": 1}]})", "results"},
      {"not json", "results"},
  };
  for (const auto& c : cases) {
    auto set = ParseCLBlast(c.text, {});
    ASSERT_FALSE(set) << c.text;
    EXPECT_EQ(set.error().path, c.path) << c.text << ": " << set.error().ToString();
  }
}

TEST(Import, CLBlastStoresAsItsDtypeAndIsIdempotent) {
  test::ScratchDir dir("import_clblast");
  auto set = ParseCLBlast(Fixture("clblast_xaxpy_64.json"), {"xaxpy_store_test", "", "", ""});
  ASSERT_TRUE(set);
  auto spec = ParseKernelSpec(SpecJsonFor(*set), "generated.json", dir.path().string());
  ASSERT_TRUE(spec) << spec.error().ToString();
  auto db = store::Store::Open(dir.File("db.sqlite"));
  ASSERT_TRUE(db) << db.error().ToString();
  auto first = StoreImport(**db, **spec, *set);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->winner.ToString(), "VW=2,WGS=128,WPT=1");
  EXPECT_DOUBLE_EQ(first->winner_median_ns, 0.071e6);
  auto again = StoreImport(**db, **spec, *set);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->created);
  auto tuned = (*db)->tuned().List("xaxpy_store_test");
  ASSERT_TRUE(tuned);
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ(tuned->front().dtype, DType::kF64);
  EXPECT_EQ(tuned->front().hardware_key, "gpu.amd.gfx906.gfx906");
}

// The same CLBlast kernel from another device passes other values (MWG=128 here) and, at
// another precision, another dtype: an imported spec is widened to hold both; a spec with a
// runner is its author's and is not.
TEST(Import, ImportedSpecIsWidenedForAnotherDevice) {
  auto first = ParseCLBlast(Fixture("clblast_xgemm_1_32.json"), {});
  ASSERT_TRUE(first);
  const std::string text = SpecJsonFor(*first);
  ImportedSet second = *first;
  second.dtype = DType::kF64;
  for (auto& p : second.params) {
    if (p.name == "MWG") p.values.push_back(128);
  }
  auto spec = ParseKernelSpec(text, "xgemm_1.json", ".");
  ASSERT_TRUE(spec);
  EXPECT_FALSE(MatchSpec(**spec, second));
  auto widened = WidenSpecJson(text, second);
  ASSERT_TRUE(widened) << widened.error().ToString();
  auto wide = ParseKernelSpec(*widened, "xgemm_1.json", ".");
  ASSERT_TRUE(wide) << wide.error().ToString();
  EXPECT_TRUE(MatchSpec(**wide, second));
  EXPECT_TRUE(MatchSpec(**wide, *first));  // the first import still fits
  EXPECT_EQ((*wide)->dtypes(), (std::vector<DType>{DType::kF32, DType::kF64}));
  for (const auto& p : (*wide)->params()) {
    if (p.name == "MWG") {
      EXPECT_EQ(p.candidates, (std::vector<int64_t>{32, 64, 128}));
    }
  }
  // Another dim, or a spec with a runner: not widened.
  ImportedSet other_dims = second;
  other_dims.problem = NamedInts({{"n", 4}});
  EXPECT_FALSE(WidenSpecJson(text, other_dims));
  nlohmann::json with_runner = nlohmann::json::parse(text);
  with_runner["runner"] = {{"command", {"/bin/true"}}};
  auto refused = WidenSpecJson(with_runner.dump(), second);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("runner"), std::string::npos);
}

TEST(Import, StoresEveryRecordOnceAndTheWinner) {
  test::ScratchDir dir("import_store");
  auto set = ParseKernelTunerCache(Fixture("kerneltuner_markers.json"), {"vector_add_store_test", "", "", ""});
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
  EXPECT_EQ(tuned->front().hardware_key, "gpu.nvidia.sm75.rtx_2080_ti");
  auto sweep = (*db)->sweeps().Get(first->sweep_id);
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->status, store::SweepStatus::kDone);
  // The device as a runner would have announced it, kept as the sweep's provenance.
  EXPECT_EQ(sweep->hardware_key, "gpu.nvidia.sm75.rtx_2080_ti");
  EXPECT_NE(sweep->device.find(R"("model":"NVIDIA GeForce RTX 2080 Ti")"), std::string::npos) << sweep->device;
  EXPECT_NE(sweep->device.find(R"("platform":"kerneltuner")"), std::string::npos) << sweep->device;
  EXPECT_EQ(tuned->front().device, sweep->device);
}

}  // namespace
}  // namespace blocktune::external
