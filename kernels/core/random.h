// SplitMix64: the one pseudo-random generator of blocktune. Its output is fully specified, so
// a seed means the same kernel inputs and the same random search plan on every machine and
// standard library (the standard distributions and std::shuffle are implementation-defined).
#pragma once

#include <cstdint>

namespace blocktune {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) by rejection, bound > 0.
  uint64_t Below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % bound;
  }

  // Uniform in [-1, 1): 24 random bits, exactly representable in f32.
  float NextSigned() {
    return static_cast<float>(static_cast<int64_t>(Next() >> 40) - (int64_t{1} << 23)) * (1.0f / float(1 << 23));
  }

 private:
  uint64_t state_;
};

}  // namespace blocktune
