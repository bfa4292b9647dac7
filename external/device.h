// The runner protocol's device line (docs/accelerators.md): before its first answer a runner
// may write {"device": {...}} on fd 3, the device it measures on. This file reads and writes
// the identity object; tuner/device_key.h derives the hardware key from it.
#pragma once

#include <string>
#include <string_view>

#include "kernels/core/result.h"
#include "tuner/device_key.h"

namespace blocktune::external {

// Validates the identity object (the value of the device line's "device", as JSON text): an
// object with only the fields of tuner::DeviceIdentity, memory_bytes an integer >= 0, the others
// strings of at most 256 characters without control characters, and an identity that makes a
// key (tuner::DeviceKey). Errors name the field: "device.model", "device.memory_bytes",
// "device" (not an object, or a key too long).
Result<tuner::DeviceIdentity> ParseDeviceIdentity(std::string_view json_text);

// The identity as one compact JSON object, fields in the protocol's order (kind, vendor, model,
// arch, memory_bytes, driver, runtime, platform): what the store keeps as provenance.
std::string DeviceIdentityJson(const tuner::DeviceIdentity& identity);

}  // namespace blocktune::external
