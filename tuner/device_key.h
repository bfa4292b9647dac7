// The hardware key of an accelerator (docs/accelerators.md#keys), derived from the identity an
// external kernel's runner announces (external/device.h parses it) or an importer reads from
// another tuner's file. The Python implementation (python/src/blocktune/device.py) is the
// reference; both are tested against tests/data/device_keys.json:
//   gpu.<vendor>.<arch>.<model_slug>   gpu.nvidia.sm90.h200, gpu.amd.gfx90a.mi250x
//   tpu.<vendor>.<arch>                tpu.google.v5e
//   kind cpu                           the host CPU's key (as if nothing was announced)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/core/result.h"

namespace blocktune::tuner {

// Longest key a device may make, and longest text field of an identity (in characters, as
// Python counts them: code points). A real model name is under 64 characters.
inline constexpr size_t kMaxDeviceKeyChars = 128;
inline constexpr size_t kMaxDeviceFieldChars = 256;

struct DeviceIdentity {
  std::string kind;  // gpu, tpu or cpu
  std::string vendor;
  std::string model;  // the marketing name as the framework reports it
  std::string arch;   // sm90, 9.0, gfx90a:sramecc+:xnack-, v5e, TPU v5 lite
  int64_t memory_bytes = 0;
  std::string driver;
  std::string runtime;
  std::string platform;  // the framework: jax, torch, cupy (or the importer: kerneltuner)

  bool operator==(const DeviceIdentity&) const = default;
};

// The hardware key of a device: gpu.<vendor>.<arch>.<model_slug> or tpu.<vendor>.<arch>; for
// kind cpu the host CPU's key at `threads` threads (tables::HardwareKey of HostHardware()).
// Errors name the field that makes no key segment ("device.arch: empty ...") or "device" for a
// key over kMaxDeviceKeyChars.
Result<std::string> DeviceKey(const DeviceIdentity& identity, int threads = 1);

// The derivation's parts (device.py's functions of the same names).
// Lower case, every run of characters outside [a-z0-9] one "_", none at either end.
std::string NormalizeDeviceText(std::string_view text);
// The model's family name: its words less brand words (nvidia, geforce, tesla, radeon, ...) and
// form factor / memory words (sxm4, pcie, nvl, hbm3, 80gb). "NVIDIA A100-SXM4-40GB" -> a100.
std::string DeviceModelSlug(std::string_view model);
// The vendor segment: "NVIDIA Corporation" -> nvidia, "Advanced Micro Devices, Inc." -> amd.
std::string DeviceVendor(std::string_view vendor);
// The arch segment: "9.0", "sm_90" -> sm90; "gfx90a:sramecc+:xnack-" -> gfx90a; "TPU v5 lite" -> v5e.
std::string DeviceArch(std::string_view kind, std::string_view vendor, std::string_view arch);

}  // namespace blocktune::tuner
