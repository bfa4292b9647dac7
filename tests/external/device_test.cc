// Device identities and keys (external/device.h, tuner/device_key.h, tuner/device_models.h):
// the vectors of tests/data/device_keys.json, which the Python reference (blocktune.device)
// answers the same way, the protocol-level validation C++ adds, the fallback rule for device
// keys, and the mapping of keys imports wrote before device keys.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "blocktune/tables/resolve.h"
#include "external/device.h"
#include "kernels/core/hardware.h"
#include "tuner/device_models.h"

namespace blocktune::external {
namespace {

using nlohmann::json;

json Vectors() {
  std::ifstream in(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/device_keys.json", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

TEST(DeviceKey, AnswersEveryVectorAsThePythonReferenceDoes) {
  const json vectors = Vectors();
  ASSERT_GE(vectors.size(), 30u);
  int keys = 0, errors = 0, host = 0;
  for (const json& v : vectors) {
    SCOPED_TRACE(v.dump());
    auto id = ParseDeviceIdentity(v["identity"].dump());
    if (v.contains("error")) {
      ASSERT_FALSE(id.has_value());
      EXPECT_EQ(id.error().path, v["error"].get<std::string>()) << id.error().ToString();
      ++errors;
      continue;
    }
    ASSERT_TRUE(id.has_value()) << id.error().ToString();
    auto key = tuner::DeviceKey(*id);
    ASSERT_TRUE(key.has_value()) << key.error().ToString();
    if (v.value("host_cpu", false)) {
      EXPECT_EQ(*key, tables::HardwareKey(HostHardware().cpu, 1));
      EXPECT_EQ(*tuner::DeviceKey(*id, 4), tables::HardwareKey(HostHardware().cpu, 4));
      ++host;
    } else {
      EXPECT_EQ(*key, v["key"].get<std::string>());
      EXPECT_TRUE(tables::IsDeviceKey(*key));
      ++keys;
    }
  }
  EXPECT_GE(keys, 20);
  EXPECT_GE(errors, 5);
  EXPECT_EQ(host, 1);
}

TEST(DeviceKey, TheIdentityRoundTripsThroughItsStoredJson) {
  auto id = ParseDeviceIdentity(
      R"({"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm90", "memory_bytes": 150754820096,
          "driver": "570.86.15", "runtime": "jax 0.11.0, cuda 12080", "platform": "jax"})");
  ASSERT_TRUE(id.has_value());
  const std::string text = DeviceIdentityJson(*id);
  EXPECT_EQ(text, R"({"kind":"gpu","vendor":"nvidia","model":"NVIDIA H200","arch":"sm90","memory_bytes":150754820096,)"
                  R"("driver":"570.86.15","runtime":"jax 0.11.0, cuda 12080","platform":"jax"})");
  auto again = ParseDeviceIdentity(text);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *id);
}

TEST(DeviceKey, RefusesWhatNoFrameworkReportsNamingTheField) {
  struct Case {
    const char* text;
    const char* path;
  };
  for (const Case& c : {
           Case{R"([1, 2])", "device"},
           Case{R"("gpu")", "device"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200", "arch": "sm90", "colour": "green"})",
                "device.colour"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200", "arch": "sm90", "memory_bytes": -1})",
                "device.memory_bytes"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200", "arch": "sm90", "memory_bytes": 1.5})",
                "device.memory_bytes"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200", "arch": "sm90", "memory_bytes": true})",
                "device.memory_bytes"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": 200, "arch": "sm90"})", "device.model"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200\u001b[31m", "arch": "sm90"})", "device.model"},
           Case{R"({"kind": "gpu", "vendor": "nvidia", "model": "H200", "arch": "sm90", "driver": "5\n70"})",
                "device.driver"},
       }) {
    SCOPED_TRACE(c.text);
    auto id = ParseDeviceIdentity(c.text);
    ASSERT_FALSE(id.has_value());
    EXPECT_EQ(id.error().path, c.path) << id.error().ToString();
  }
  const std::string long_runtime(257, 'x');
  auto id = ParseDeviceIdentity(R"({"kind": "tpu", "vendor": "google", "arch": "v5e", "runtime": ")" + long_runtime +
                                R"("})");
  ASSERT_FALSE(id.has_value());
  EXPECT_EQ(id.error().path, "device.runtime");
  EXPECT_NE(id.error().message.find("256"), std::string::npos);
}

TEST(DeviceKey, DeviceKeysFallBackNowhereUnlessAskedForTheirArchitecture) {
  // A device key's chain is the key alone; a CPU key's never leaves its architecture.
  EXPECT_EQ(tables::FallbackChain("gpu.nvidia.sm90.h200"), (std::vector<std::string_view>{"gpu.nvidia.sm90.h200"}));
  EXPECT_EQ(tables::FallbackChain("tpu.google.v5e"), (std::vector<std::string_view>{"tpu.google.v5e"}));
  EXPECT_EQ(tables::FallbackChain("x86_64.avx2.amd.fam25_mod1.t1").back(), "x86_64.avx2.amd");
  EXPECT_FALSE(tables::IsDeviceKey("x86_64.avx2.amd.fam25_mod1.t1"));
  EXPECT_FALSE(tables::IsDeviceKey("gpux.nvidia"));
  EXPECT_TRUE(tables::IsDeviceKey("gpu"));
  EXPECT_TRUE(tables::IsDeviceKey("tpu.google"));

  struct Row {
    std::string_view hardware, dtype, bucket;
    int id;
  };
  const std::vector<Row> rows = {{"gpu.nvidia.sm90.h100", "bf16", "b1", 1},
                                 {"gpu.nvidia.sm80.a100", "bf16", "b1", 2},
                                 {"x86_64.avx2.amd.fam25_mod1.t1", "bf16", "b1", 3},
                                 {"gpu.nvidia.unknown.titan", "bf16", "b1", 4}};
  const tables::RowIndex index(rows);
  const auto view = index.view();
  const auto h200 = view.Resolve("gpu.nvidia.sm90.h200", "bf16", std::string_view("b1"));
  EXPECT_EQ(h200.row, tables::kNoId);
  EXPECT_EQ(tables::SourceOf(h200), tables::Source::kDefault);
  // The option: the same architecture's other model, never another architecture.
  const auto same_arch =
      view.ResolveQuery(view.PrepareSameArch("gpu.nvidia.sm90.h200"), "bf16", std::string_view("b1"));
  ASSERT_NE(same_arch.row, tables::kNoId);
  EXPECT_EQ(rows[same_arch.row].id, 1);
  EXPECT_EQ(tables::SourceOf(same_arch), tables::Source::kTunedFallback);
  EXPECT_EQ(view.ResolveQuery(view.PrepareSameArch("gpu.nvidia.sm86.rtx_a4000"), "bf16", std::string_view("b1")).row,
            tables::kNoId);
  // An unknown architecture is no architecture to share.
  EXPECT_EQ(view.ResolveQuery(view.PrepareSameArch("gpu.nvidia.unknown.titan_x"), "bf16", std::string_view("b1")).row,
            tables::kNoId);
  // The CPU key never reaches a device row, nor a device key the CPU's.
  const auto cpu = view.Resolve("x86_64.avx2.amd.fam25_mod17.t1", "bf16", std::string_view("b1"));
  ASSERT_NE(cpu.row, tables::kNoId);
  EXPECT_EQ(rows[cpu.row].id, 3);
}

TEST(DeviceKey, KeysOfTheSchemeBeforeDeviceKeysMapToDeviceKeys) {
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda.nvidia.geforce_rtx_2080_ti"), "gpu.nvidia.sm75.rtx_2080_ti");
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda.nvidia.a100_pcie_40gb"), "gpu.nvidia.sm80.a100");
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda.nvidia.rtx_a4000"), "gpu.nvidia.sm86.rtx_a4000");
  EXPECT_EQ(tuner::LegacyDeviceKey("hip.amd.instinct_mi250x"), "gpu.amd.gfx90a.mi250x");
  EXPECT_EQ(tuner::LegacyDeviceKey("hip.amd.radeon_pro_w6600"), "gpu.amd.gfx1032.pro_w6600");
  EXPECT_EQ(tuner::LegacyDeviceKey("hip.amd.radeon_pro_w7800"), "gpu.amd.gfx1100.pro_w7800");
  EXPECT_EQ(tuner::LegacyDeviceKey("opencl.nvidia.geforce_gtx_1080"), "gpu.nvidia.sm61.gtx_1080");
  EXPECT_EQ(tuner::LegacyDeviceKey("opencl.amd.gfx906_sramecc_xnack"), "gpu.amd.gfx906.gfx906");
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda.nvidia.tesla_t4"), "gpu.nvidia.sm75.t4");
  EXPECT_EQ(tuner::LegacyDeviceKey("opencl.unknown.synthetic_gpu_model_not_measured"),
            "gpu.unknown.unknown.synthetic_model_not_measured");
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda.nvidia"), "gpu.nvidia");
  EXPECT_EQ(tuner::LegacyDeviceKey("cuda"), "gpu");
  EXPECT_EQ(tuner::LegacyDeviceKey("x86_64.avx2.amd.fam25_mod1.t1"), std::nullopt);
  EXPECT_EQ(tuner::LegacyDeviceKey("gpu.nvidia.sm90.h200"), std::nullopt);
  EXPECT_EQ(tuner::LegacyDeviceKey("tpu.unknown.v5e"), std::nullopt);
  // Every known model's key is what a runner announcing it gets.
  EXPECT_EQ(tuner::KnownDeviceArch("nvidia", "h200"), "sm90");
  EXPECT_EQ(tuner::KnownDeviceArch("nvidia", "h100"), "sm90");
  EXPECT_EQ(tuner::KnownDeviceArch("nvidia", "nonesuch"), std::nullopt);
}

}  // namespace
}  // namespace blocktune::external
