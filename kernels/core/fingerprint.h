// This build's kernel fingerprints: a hash per kernel of the sources that decide its speed (its
// folder, the core files it uses) and of the compiler and flags, computed by CMake
// (cmake/fingerprint.cmake). Every measurement and tuned row records its kernel's; a row whose
// fingerprint is not this build's is stale (docs/tables.md#staleness).
#pragma once

#include <string_view>

namespace blocktune {

// 16 hex digits; empty for a name that is not a kernel of this build.
std::string_view KernelFingerprint(std::string_view kernel);

// The compiler and flags line hashed into every fingerprint.
std::string_view FingerprintToolchain();

// How a row's recorded fingerprint compares with this build's: unknown when the row has none
// (rows measured before fingerprints existed), fresh when equal, stale otherwise.
enum class Freshness { kFresh, kStale, kUnknown };
Freshness FreshnessOf(std::string_view kernel, std::string_view row_fingerprint);
std::string_view FreshnessName(Freshness f);

}  // namespace blocktune
