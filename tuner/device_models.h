// GPU models whose architecture blocktune knows, for devices named without one: other tuners'
// files (a Kernel Tuner cache says "NVIDIA A100-PCIE-40GB", nothing more) and keys stored before
// device keys existed (cuda.nvidia.a100_pcie_40gb, which migration 0016 rewrites).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace blocktune::tuner {

// The arch segment of a known model (tuner::DeviceModelSlug of its name, under its vendor
// segment): ("nvidia", "a100") -> sm80, ("amd", "pro_w6600") -> gfx1032; nullopt if unknown.
std::optional<std::string_view> KnownDeviceArch(std::string_view vendor, std::string_view model_slug);

// The arch segment used when a device's architecture is not known: a key with it never falls
// back to another model's row, not even under the same-architecture option.
inline constexpr std::string_view kUnknownArch = "unknown";

// A key of the scheme imports wrote before device keys, <platform>.<vendor>.<device slug> with
// platform cuda, hip or opencl (cuda.nvidia.geforce_rtx_2080_ti, hip.amd.instinct_mi250x,
// opencl.amd.gfx906_sramecc_xnack), as a device key (gpu.nvidia.sm75.rtx_2080_ti,
// gpu.amd.gfx90a.mi250x, gpu.amd.gfx906.gfx906); a key prefix of that scheme (an override's
// cuda.nvidia, cuda) as the same prefix of device keys (gpu.nvidia, gpu). nullopt for any other
// key. A model not in the table gets the arch kUnknownArch.
std::optional<std::string> LegacyDeviceKey(std::string_view key);

}  // namespace blocktune::tuner
