// Kernel fingerprints from the header CMake generates; see fingerprint.h.
#include "kernels/core/fingerprint.h"

#include "blocktune/kernel_fingerprints.h"

namespace blocktune {

std::string_view KernelFingerprint(std::string_view kernel) {
  for (const auto& k : kernel_fingerprint::kAll) {
    if (kernel == k.kernel) return k.fingerprint;
  }
  return {};
}

std::string_view FingerprintToolchain() { return kernel_fingerprint::kToolchain; }

Freshness FreshnessOf(std::string_view kernel, std::string_view row_fingerprint) {
  if (row_fingerprint.empty()) return Freshness::kUnknown;
  return row_fingerprint == KernelFingerprint(kernel) ? Freshness::kFresh : Freshness::kStale;
}

std::string_view FreshnessName(Freshness f) {
  switch (f) {
    case Freshness::kFresh: return "fresh";
    case Freshness::kStale: return "stale";
    case Freshness::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace blocktune
