// The verifier's input checksum (tuner/verify/watch.h HashBytes): the changes a kernel that
// writes its inputs makes are seen: any one element, and pairs of sign flips.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tuner/verify/watch.h"

namespace blocktune::tuner {
namespace {

uint64_t HashFloats(const std::vector<float>& v) {
  return verify::HashBytes(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> Inputs(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 17) - 8.25f;
  return v;
}

TEST(WatchHash, SeesEveryOneElementChange) {
  // 103 floats: 12 full 32-byte blocks and a 28-byte tail, so every lane and the tail are hit.
  const std::vector<float> base = Inputs(103);
  const uint64_t h = HashFloats(base);
  EXPECT_EQ(HashFloats(base), h);  // deterministic
  for (size_t i = 0; i < base.size(); ++i) {
    std::vector<float> v = base;
    v[i] = -v[i];
    EXPECT_NE(HashFloats(v), h) << "sign of element " << i;
    v = base;
    uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    bits ^= 1u;  // the lowest mantissa bit
    std::memcpy(&v[i], &bits, sizeof bits);
    EXPECT_NE(HashFloats(v), h) << "last bit of element " << i;
  }
}

TEST(WatchHash, SeesPairsOfSignFlips) {
  // Negating two elements flips two top bits; FNV's xor-multiply taken a word at a time would
  // carry each only into the top bit of its state, so the second flip would cancel the first.
  const std::vector<float> base = Inputs(64);
  const uint64_t h = HashFloats(base);
  for (size_t i = 0; i < base.size(); ++i) {
    for (size_t j = i + 1; j < base.size(); ++j) {
      std::vector<float> v = base;
      v[i] = -v[i];
      v[j] = -v[j];
      EXPECT_NE(HashFloats(v), h) << "elements " << i << " and " << j;
    }
  }
}

TEST(WatchHash, DependsOnTheLength) {
  const std::vector<std::byte> zeros(64, std::byte{0});
  EXPECT_NE(verify::HashBytes(zeros.data(), 64), verify::HashBytes(zeros.data(), 63));
  EXPECT_NE(verify::HashBytes(zeros.data(), 32), verify::HashBytes(zeros.data(), 0));
}

}  // namespace
}  // namespace blocktune::tuner
