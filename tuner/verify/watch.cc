// RunWatch implementation; see watch.h.
#include "tuner/verify/watch.h"

#include <cstring>

namespace blocktune::tuner::verify {

uint64_t HashBytes(const std::byte* data, size_t size) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<uint64_t>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

RunWatch::RunWatch(KernelInstance& instance) : memory_(instance.Watched()) {
  for (const auto& guard : memory_.output_guards) std::memset(guard.data(), kCanary, guard.size());
  input_hashes_.reserve(memory_.inputs.size());
  for (const auto& input : memory_.inputs) input_hashes_.push_back(HashBytes(input.data(), input.size()));
}

std::optional<WatchViolation> RunWatch::Check() const {
  for (size_t g = 0; g < memory_.output_guards.size(); ++g) {
    const auto& guard = memory_.output_guards[g];
    for (size_t i = 0; i < guard.size(); ++i) {
      if (static_cast<unsigned char>(guard[i]) != kCanary) {
        return WatchViolation{false, "wrote past the end of output " + std::to_string(g) + ": guard byte " +
                                         std::to_string(i) + " of " + std::to_string(guard.size()) + " changed"};
      }
    }
  }
  for (size_t k = 0; k < memory_.inputs.size(); ++k) {
    if (HashBytes(memory_.inputs[k].data(), memory_.inputs[k].size()) != input_hashes_[k]) {
      return WatchViolation{true, "inputs were modified: input " + std::to_string(k) + " (" +
                                      std::to_string(memory_.inputs[k].size()) + " bytes) changed during the run"};
    }
  }
  return std::nullopt;
}

}  // namespace blocktune::tuner::verify
