// fused_cross_entropy: softmax cross-entropy with z-loss over logits = x w that are never
// materialised as [B, V] (Levanter's fused linear + cross-entropy). x [B, H], w [H, V] (f32, or
// bf16 storage with f32 accumulation), labels [B] int32 (< 0 = ignored row). Forward gives
// loss[b] = lse[b] - logits[b, label] + z * lse[b]^2 and lse[b]; backward, from the saved lse
// and dloss [B], gives dx [B, H] and dw [H, V] by recomputing logits tile by tile.
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

struct FusedCrossEntropyShape {
  int64_t b = 0;  // rows (tokens)
  int64_t h = 0;  // hidden size (GEMM reduction length)
  int64_t v = 0;  // vocabulary size
};

struct FusedCrossEntropyBlockSizes {
  int64_t block_b = 192;  // rows per block (multiple of the micro-tile rows: 12 / 6 / 4)
  int64_t block_h = 256;  // GEMM depth per packed x / w chunk (multiple of 16)
  int64_t block_v = 512;  // vocabulary columns per logits tile (multiple of the tile columns: 32 / 16)

  static constexpr std::array<ParamField<FusedCrossEntropyBlockSizes>, 3> kParams{{
      {"block_b", &FusedCrossEntropyBlockSizes::block_b},
      {"block_h", &FusedCrossEntropyBlockSizes::block_h},
      {"block_v", &FusedCrossEntropyBlockSizes::block_v},
  }};
  friend bool operator==(const FusedCrossEntropyBlockSizes&, const FusedCrossEntropyBlockSizes&) = default;
};

// Inputs as stored: x and w point to float (DType::kF32) or uint16_t bf16 bits (DType::kBF16).
struct FusedCrossEntropyInputs {
  DType dtype = DType::kF32;
  const void* x = nullptr;          // [b, h] row-major
  const void* w = nullptr;          // [h, v] row-major
  const int32_t* labels = nullptr;  // [b], each < v; negative = ignore the row
  float z_loss_weight = 0.0f;
};

// Why these block sizes cannot run this shape on this hardware (one reason, Error::path
// "config.<param>" or "shape.<dim>"); ok if they can. Blocks larger than a dim are clamped.
Status Validate(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape, const HardwareProfile& hw);

// Forward: loss [b] and lse [b] (f32). Ignored rows get loss 0 and their lse.
Status FusedCrossEntropyForward(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                const FusedCrossEntropyInputs& in, float* loss, float* lse, int threads);

// Backward from the forward's lse and the upstream gradient dloss [b]: dx [b, h] and dw [h, v]
// (f32, overwritten). Ignored rows contribute nothing.
Status FusedCrossEntropyBackward(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                 const FusedCrossEntropyInputs& in, const float* lse, const float* dloss, float* dx,
                                 float* dw, int threads);

// The same with a forced ISA ("avx512", "avx2", "portable"/"base"); an error if this CPU cannot
// run it. For tests and benchmarks.
Status FusedCrossEntropyForwardWithIsa(std::string_view isa, const FusedCrossEntropyBlockSizes& bs,
                                       const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in,
                                       float* loss, float* lse, int threads);
Status FusedCrossEntropyBackwardWithIsa(std::string_view isa, const FusedCrossEntropyBlockSizes& bs,
                                        const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in,
                                        const float* lse, const float* dloss, float* dx, float* dw, int threads);

// Extra memory the kernel uses beyond its inputs and outputs, summed over `threads` threads
// (packed panels and logits tiles per thread; backward adds threads-1 partial dx of b*h floats).
int64_t FusedCrossEntropyScratchBytes(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                      bool backward, int threads);

// The plain oracle in double precision on f32 values (for bf16 pass the rounded values).
// dloss, dx and dw may be null (forward only); otherwise dx [b, h] and dw [h, v] are written,
// and, if non-null, the gradient masses max_b sum_v |dlogits terms| and max_v sum_b |...| (see
// FusedCrossEntropyTolerance) where dlogits = c * p - dloss * onehot counts |c * p| + |dloss|.
void FusedCrossEntropyReference(const FusedCrossEntropyShape& shape, const float* x, const float* w,
                                const int32_t* labels, float z_loss_weight, float* loss, float* lse, const float* dloss,
                                float* dx, float* dw, double* dx_row_mass = nullptr, double* dw_col_mass = nullptr);

// Verification tolerances (see spec.cc for the derivation). max_abs_lse bounds |lse|, and
// dx_row_mass / dw_col_mass are max_b sum_v |dlogits[b,v]| and max_v sum_b |dlogits[b,v]| of
// the reference (inputs are in [-1, 1], so they bound every dx / dw element's term sum).
struct FusedCrossEntropyTolerances {
  Tolerance lse, loss, dx, dw;
};
FusedCrossEntropyTolerances FusedCrossEntropyTolerance(const FusedCrossEntropyShape& shape, DType dtype,
                                                       float z_loss_weight, double max_abs_lse, double dx_row_mass,
                                                       double dw_col_mass);

const KernelSpec& FusedCrossEntropySpec();

}  // namespace blocktune::kernels
