// Known GPU models and the keys of the scheme before device keys; see device_models.h.
#include "tuner/device_models.h"

#include <array>

#include "tuner/device_key.h"

namespace blocktune::tuner {
namespace {

struct KnownModel {
  std::string_view vendor;
  std::string_view slug;  // DeviceModelSlug of the model name
  std::string_view arch;  // DeviceArch of its compute capability / gfx target
};

// From NVIDIA's compute capability list and AMD's LLVM AMDGPU processor table. The devices of
// the benchmark hub's landscapes (A100, A4000, A6000, MI250X, W6600, W7800) and of the tests'
// files (RTX 2080 Ti, GTX 1080, A100, MI250X) are here, and the GPUs one rents today.
constexpr std::array<KnownModel, 62> kModels = {{
    {"nvidia", "k80", "sm37"},
    {"nvidia", "gtx_titan_x", "sm52"},
    {"nvidia", "gtx_980", "sm52"},
    {"nvidia", "gtx_980_ti", "sm52"},
    {"nvidia", "p100", "sm60"},
    {"nvidia", "gtx_1070", "sm61"},
    {"nvidia", "gtx_1080", "sm61"},
    {"nvidia", "gtx_1080_ti", "sm61"},
    {"nvidia", "titan_xp", "sm61"},
    {"nvidia", "p40", "sm61"},
    {"nvidia", "p4", "sm61"},
    {"nvidia", "v100", "sm70"},
    {"nvidia", "titan_v", "sm70"},
    {"nvidia", "t4", "sm75"},
    {"nvidia", "rtx_2070", "sm75"},
    {"nvidia", "rtx_2080", "sm75"},
    {"nvidia", "rtx_2080_ti", "sm75"},
    {"nvidia", "titan_rtx", "sm75"},
    {"nvidia", "quadro_rtx_6000", "sm75"},
    {"nvidia", "quadro_rtx_8000", "sm75"},
    {"nvidia", "a100", "sm80"},
    {"nvidia", "a30", "sm80"},
    {"nvidia", "a800", "sm80"},
    {"nvidia", "a10", "sm86"},
    {"nvidia", "a10g", "sm86"},
    {"nvidia", "a16", "sm86"},
    {"nvidia", "a40", "sm86"},
    {"nvidia", "rtx_a4000", "sm86"},
    {"nvidia", "rtx_a5000", "sm86"},
    {"nvidia", "rtx_a6000", "sm86"},
    {"nvidia", "rtx_3070", "sm86"},
    {"nvidia", "rtx_3080", "sm86"},
    {"nvidia", "rtx_3090", "sm86"},
    {"nvidia", "rtx_3090_ti", "sm86"},
    {"nvidia", "l4", "sm89"},
    {"nvidia", "l40", "sm89"},
    {"nvidia", "l40s", "sm89"},
    {"nvidia", "rtx_4080", "sm89"},
    {"nvidia", "rtx_4090", "sm89"},
    {"nvidia", "rtx_6000_ada_generation", "sm89"},
    {"nvidia", "h100", "sm90"},
    {"nvidia", "h800", "sm90"},
    {"nvidia", "h200", "sm90"},
    {"nvidia", "gh200", "sm90"},
    {"nvidia", "b200", "sm100"},
    {"nvidia", "gb200", "sm100"},
    {"nvidia", "rtx_5090", "sm120"},
    {"amd", "mi50", "gfx906"},
    {"amd", "mi60", "gfx906"},
    {"amd", "vii", "gfx906"},
    {"amd", "mi100", "gfx908"},
    {"amd", "mi210", "gfx90a"},
    {"amd", "mi250", "gfx90a"},
    {"amd", "mi250x", "gfx90a"},
    {"amd", "mi300a", "gfx942"},
    {"amd", "mi300x", "gfx942"},
    {"amd", "pro_w6800", "gfx1030"},
    {"amd", "rx_6900_xt", "gfx1030"},
    {"amd", "pro_w6600", "gfx1032"},
    {"amd", "pro_w7800", "gfx1100"},
    {"amd", "pro_w7900", "gfx1100"},
    {"amd", "rx_7900_xtx", "gfx1100"},
}};

bool IsLegacyPlatform(std::string_view p) { return p == "cuda" || p == "hip" || p == "opencl"; }

}  // namespace

std::optional<std::string_view> KnownDeviceArch(std::string_view vendor, std::string_view model_slug) {
  for (const KnownModel& m : kModels) {
    if (m.vendor == vendor && m.slug == model_slug) return m.arch;
  }
  return std::nullopt;
}

std::optional<std::string> LegacyDeviceKey(std::string_view key) {
  const size_t first = key.find('.');
  if (!IsLegacyPlatform(key.substr(0, first))) return std::nullopt;
  if (first == std::string_view::npos) return std::string("gpu");
  const size_t second = key.find('.', first + 1);
  const std::string vendor(key.substr(first + 1, second == std::string_view::npos ? second : second - first - 1));
  if (second == std::string_view::npos) return "gpu." + vendor;
  const std::string_view device = key.substr(second + 1);
  // An AMD device named by its gfx target (OpenCL's name on ROCm): the target is the arch and,
  // the board being unknown, the model too.
  if (vendor == "amd" && device.rfind("gfx", 0) == 0) {
    const std::string arch = DeviceArch("gpu", "amd", device.substr(0, device.find('_')));
    return "gpu.amd." + arch + "." + arch;
  }
  std::string slug = DeviceModelSlug(device);
  if (slug.empty()) slug = "unknown";
  const auto arch = KnownDeviceArch(vendor, slug);
  return "gpu." + vendor + "." + std::string(arch ? *arch : kUnknownArch) + "." + slug;
}

}  // namespace blocktune::tuner
