// Internal to kernels/fused_cross_entropy: the table of operations one ISA provides, so the
// blocked forward and backward in fused_cross_entropy.cc are written once and each
// fused_cross_entropy_<isa>.cc, under its own target attribute, only supplies the inner loops:
// the matmul micro-kernels of that ISA (kernels/matmul/micro_kernel.h) and the vectorised row
// passes over a logits tile (exp, max, sum).
#pragma once

#include <cstdint>

#include "kernels/matmul/micro_kernel.h"

namespace blocktune::kernels::fused_cross_entropy_internal {

// Row passes over a logits tile (rows x cols valid, leading dimension ld).
// Online logsumexp update: m = max(m, tile row max); s = s * exp(m_old - m) + sum exp(l - m).
using TileStatsFn = void (*)(const float* tile, int64_t ld, int rows, int64_t cols, float* m_run, float* s_run);
// dlogits = scale * exp(l - lse) in place (the one-hot term is subtracted by the caller).
using TileDlogitsFn = void (*)(float* tile, int64_t ld, int rows, int64_t cols, const float* lse,
                               const float* scale);

struct Ops {
  const matmul_internal::MicroKernelSet* ks;  // the GEMMs: logits, dx, dw
  TileStatsFn stats;
  TileDlogitsFn dlogits;
};

// Avx512Ops and Avx2Ops exist on x86-64 builds only (kernels/CMakeLists.txt).
const Ops& Avx512Ops();
const Ops& Avx2Ops();
const Ops& PortableOps();

}  // namespace blocktune::kernels::fused_cross_entropy_internal
