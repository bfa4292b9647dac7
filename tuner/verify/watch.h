// RunWatch: the verifier's checks on memory a kernel must not touch. Armed just before a
// verification run, it checksums every input and fills every output guard with a canary;
// Check() after the run says whether the inputs changed or a guard was overwritten (a write
// past the end of an output that did not fault). The kernel declares the memory through
// KernelInstance::Watched(); a kernel that declares nothing passes trivially.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/kernel_spec.h"

namespace blocktune::tuner::verify {

struct WatchViolation {
  bool inputs_modified = false;  // the instance's inputs are no longer what its reference used
  std::string detail;            // "inputs were modified: input 0 checksum changed", ...
};

class RunWatch {
 public:
  // Byte written to every guard byte. 0xA5 repeated is neither a small float nor NaN
  // (0xA5A5A5A5 ~ -2.9e-16), so a kernel writing zeros, NaNs or results over it is caught.
  static constexpr unsigned char kCanary = 0xA5;

  // Arms the guards and checksums the inputs of `instance`'s current Watched() memory.
  explicit RunWatch(KernelInstance& instance);

  // After the run: nullopt if every input and guard is intact.
  std::optional<WatchViolation> Check() const;

 private:
  WatchedMemory memory_;
  std::vector<uint64_t> input_hashes_;
};

// A 64-bit hash of the bytes (four lanes of multiply-rotate rounds over 8-byte words): any one
// changed word always changes it, and an accidental match of a modified input is ~2^-64.
uint64_t HashBytes(const std::byte* data, size_t size);

}  // namespace blocktune::tuner::verify
