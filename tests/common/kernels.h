// Helpers every kernel test shares: a hardware profile for a chosen ISA level, problems from
// named dims, and the seeded inputs the kernel-level tests use. One copy here instead of one
// per test file (kernels/core stays test-free; these are header-only and link nothing).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/hardware.h"

namespace blocktune::test {

// The ISA levels ValidateConfig distinguishes, widest first ("portable" is the kernels' name
// for "base" in their *WithIsa entry points).
inline constexpr std::string_view kIsaLevels[] = {"avx512", "avx2", "base"};

// A profile that claims `isa`: validation is a pure function of (config, problem, profile), so
// any host can check what a config means on any ISA. L3 32 MiB: large enough that matmul's
// panel limit (which follows L3) never decides a test that is not about it.
inline HardwareProfile HwWithIsa(std::string_view isa, int threads = 1) {
  HardwareProfile hw;
  hw.cpu.isa = std::string(isa);
  hw.l3_bytes = 32 << 20;
  hw.threads = threads;
  return hw;
}

inline Problem MakeProblem(std::vector<std::pair<std::string, int64_t>> dims, DType dtype = DType::kF32) {
  Problem p;
  p.dtype = dtype;
  p.dims = NamedInts(std::move(dims));
  return p;
}

// n values in [-1, 1) from a 32-bit LCG seeded with `seed`: cheap, and the same on every host.
inline std::vector<float> RandomVector(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(x >> 8) / float(1 << 23) - 1.0f;
  }
  return v;
}

// Rounds to bf16 in place and returns the bits, so a reference fed `*v` sees the kernel's inputs.
inline std::vector<uint16_t> ToBf16(std::vector<float>* v) {
  std::vector<uint16_t> bits(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    bits[i] = FloatToBF16((*v)[i]).bits;
    (*v)[i] = BF16ToFloat(BF16{bits[i]});
  }
  return bits;
}

}  // namespace blocktune::test
