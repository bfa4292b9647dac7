// Internal to kernels/fused_cross_entropy: the table of operations one ISA provides, so the
// blocked forward and backward in fused_cross_entropy.cc are written once and each
// fused_cross_entropy_<isa>.cc, under its own target attribute, only supplies the inner loops:
// the matmul micro-kernels of that ISA (kernels/matmul/matmul_ops.h) and the vectorised row
// passes over a logits tile (exp, max, sum).
#pragma once

#include <cstdint>

#include "kernels/matmul/matmul_ops.h"

namespace blocktune::kernels::fused_cross_entropy_internal {

// Row passes over a logits tile (rows x cols valid, leading dimension ld).
// Online logsumexp update: m = max(m, tile row max); s = s * exp(m_old - m) + sum exp(l - m).
using TileStatsFn = void (*)(const float* tile, int64_t ld, int rows, int64_t cols, float* m_run, float* s_run);
// dlogits = scale * exp(l - lse) in place (the one-hot term is subtracted by the caller).
using TileDlogitsFn = void (*)(float* tile, int64_t ld, int rows, int64_t cols, const float* lse, const float* scale);

struct Ops {
  const char* name;                // "avx512", "avx2", "portable"
  const matmul_internal::Ops* ks;  // the GEMMs: logits, dx, dw
  TileStatsFn stats;
  TileDlogitsFn dlogits;
  // One table per ISA (kernels/core/isa_dispatch.h), each in fused_cross_entropy_<isa>.cc; Avx512 and Avx2
  // exist on x86-64 builds only (kernels/CMakeLists.txt).
  static const Ops& Avx512();
  static const Ops& Avx2();
  static const Ops& Portable();
};

}  // namespace blocktune::kernels::fused_cross_entropy_internal
