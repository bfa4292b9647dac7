// matmul: C[m,n] = A[m,k] * B[k,n], row-major and contiguous, f32 or bf16 inputs with f32
// accumulation and output; cache-blocked (block_m x block_k panels of A, block_k x block_n
// panels of B packed once per block) around a register-blocked micro-kernel chosen at run time
// (AVX-512, AVX2+FMA, or portable C++).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

struct MatmulShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

struct MatmulBlockSizes {
  int64_t block_m = 96;   // rows of A (and C) per cache block; multiple of the micro-tile rows
  int64_t block_n = 512;  // columns of B (and C) per cache block; multiple of the micro-tile columns
  int64_t block_k = 256;  // reduction depth per packed panel

  static constexpr std::array<ParamField<MatmulBlockSizes>, 3> kParams{{
      {"block_m", &MatmulBlockSizes::block_m},
      {"block_n", &MatmulBlockSizes::block_n},
      {"block_k", &MatmulBlockSizes::block_k},
  }};
  friend bool operator==(const MatmulBlockSizes&, const MatmulBlockSizes&) = default;
};

// Why these block sizes cannot run this shape on this hardware (one reason, naming the
// parameter in Error::path as "config.<name>"); ok if they can.
Status Validate(const MatmulBlockSizes& bs, const MatmulShape& shape, const HardwareProfile& hw);

// The tuned kernel. Any m, n, k >= 0 (remainders handled); `threads` >= 1 workers.
// Returns the Validate error instead of running an invalid config.
Status Matmul(const MatmulBlockSizes& bs, const MatmulShape& shape, const float* a, const float* b, float* c,
              int threads);

// bf16 inputs (storage only: widened to f32 while packing), f32 accumulation and output.
Status Matmul(const MatmulBlockSizes& bs, const MatmulShape& shape, const BF16* a, const BF16* b, float* c,
              int threads);

// The plain oracle: triple loop with double accumulation. For bf16 inputs, widen them to f32
// first (the values are exact in f32) and call this.
void MatmulReference(const MatmulShape& shape, const float* a, const float* b, float* c);

// The micro-kernel in use on this CPU: "avx512", "avx2" or "portable".
const char* MatmulIsa();

// The register tile (rows of A x columns of B) of the micro-kernel for an ISA level as named
// in HostCpu::isa ("avx512", "avx2", "base"; "portable" is accepted as "base"). block_m and
// block_n must be multiples of it; 96 x 512 is a multiple of every ISA's tile.
struct MatmulTile {
  int rows = 4;
  int cols = 16;
};
MatmulTile MatmulTileFor(std::string_view isa);

// Matmul with a forced micro-kernel ("avx512", "avx2", "portable"/"base"), validated against
// that ISA's tile; an error if this CPU cannot run it. For tests and benchmarks.
Status MatmulWithIsa(std::string_view isa, const MatmulBlockSizes& bs, const MatmulShape& shape, const float* a,
                     const float* b, float* c, int threads);
Status MatmulWithIsa(std::string_view isa, const MatmulBlockSizes& bs, const MatmulShape& shape, const BF16* a,
                     const BF16* b, float* c, int threads);

// The blocking checks every kernel built on these micro-kernels shares: each block positive and
// at most 2^24, rows and columns multiples of the ISA's micro-tile (a partial micro-tile in
// every block wastes up to a tile per block), and packed A (rows x depth) and B (depth x cols)
// panels within min(L3, 64 MiB). Names are the caller's parameters, used in messages and in
// Error::path ("config.<name>").
struct GemmBlocking {
  const char* rows_name;
  int64_t rows;
  const char* cols_name;
  int64_t cols;
  const char* depth_name;
  int64_t depth;
};
Status ValidateGemmBlocking(const GemmBlocking& blocking, const HardwareProfile& hw);

// Verification tolerance for a reduction of length k over inputs in [-1, 1] (see spec.cc).
Tolerance MatmulTolerance(int64_t k);

const KernelSpec& MatmulSpec();

}  // namespace blocktune::kernels
