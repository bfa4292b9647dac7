// grouped_matmul: the Mixture-of-Experts grouped matmul (Pallas megablox `gmm`). lhs [m, k] has
// its rows sorted by group; group g owns the next group_sizes[g] rows and multiplies them by its
// own rhs[g] [k, n] into the same rows of out [m, n]. Only real rows are computed (no padding
// of groups to a common size); rows past sum(group_sizes) are ZEROED, so the whole output is
// defined after every call. Inputs are f32 or bf16 (bf16 = storage: converted to f32 while
// packing, f32 accumulation); the output is f32 for both.
//
// Blocking: each group is a (group_size x k) * (k x n) matmul cache-blocked by tile_m rows,
// tile_k depth and tile_n columns around the micro-kernels of kernels/matmul/matmul_ops.h.
// A row tile never straddles a group boundary: a group's rows are cut into tiles starting at
// the group's first row, so its last tile is partial (no mixing, no splitting needed). On
// AVX-512, groups of <= 32 rows skip B packing and run a direct kernel on rhs in place (they are
// bandwidth-bound); tile_n then only sets the work-item width. Work items (group, row chunk,
// column tile) rather than whole groups are spread over threads, largest first.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

struct GroupedMatmulShape {
  int64_t m = 0;       // total rows of lhs and out (>= sum of group sizes)
  int64_t k = 0;       // reduction length
  int64_t n = 0;       // columns of rhs[g] and out
  int64_t groups = 0;  // G: number of groups (experts)
};

struct GroupedMatmulBlockSizes {
  int64_t tile_m = 96;   // rows of one group per packed A block; multiple of the micro-tile rows
  int64_t tile_k = 256;  // reduction depth per packed panel
  int64_t tile_n = 512;  // columns per packed B panel and per work item; multiple of the tile columns

  static constexpr std::array<ParamField<GroupedMatmulBlockSizes>, 3> kParams{{
      {"tile_m", &GroupedMatmulBlockSizes::tile_m},
      {"tile_k", &GroupedMatmulBlockSizes::tile_k},
      {"tile_n", &GroupedMatmulBlockSizes::tile_n},
  }};
  friend bool operator==(const GroupedMatmulBlockSizes&, const GroupedMatmulBlockSizes&) = default;
};

// Why these tiles cannot run this shape on this hardware (one reason, Error::path
// "config.<name>" or "shape.<dim>"); ok if they can. Tiles larger than a dim are fine (clamped).
Status Validate(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const HardwareProfile& hw);

// Group sizes must be >= 0 and sum to at most shape.m (Error::path "group_sizes[i]").
Status ValidateGroupSizes(const GroupedMatmulShape& shape, const int32_t* group_sizes);

// The tuned kernel. lhs [m, k], rhs [groups, k, n], out [m, n], all row-major and contiguous.
// Returns the Validate / ValidateGroupSizes error instead of running (out is then untouched).
Status GroupedMatmul(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const int32_t* group_sizes,
                     const float* lhs, const float* rhs, float* out, int threads);
// bf16 inputs (raw bf16 bits), f32 output.
Status GroupedMatmul(const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape, const int32_t* group_sizes,
                     const uint16_t* lhs, const uint16_t* rhs, float* out, int threads);

// The same with a forced ISA ("avx512", "avx2", "portable"/"base"), validated against that ISA's
// micro-tile; an error if this CPU cannot run it. For tests and benchmarks.
Status GroupedMatmulWithIsa(std::string_view isa, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                            const int32_t* group_sizes, const float* lhs, const float* rhs, float* out, int threads);
Status GroupedMatmulWithIsa(std::string_view isa, const GroupedMatmulBlockSizes& bs, const GroupedMatmulShape& shape,
                            const int32_t* group_sizes, const uint16_t* lhs, const uint16_t* rhs, float* out,
                            int threads);

// The plain oracle: MatmulReference (double accumulation) per group, zero rows past the sum.
// Inputs are f32; bf16 callers pass the bf16 values widened to f32.
void GroupedMatmulReference(const GroupedMatmulShape& shape, const int32_t* group_sizes, const float* lhs,
                            const float* rhs, float* out);

// The input generator's group sizes (see spec.cc): UsedRows(m) rows split over `groups` by a
// Zipf (s = 1) law over a seeded random order of the groups, with exactly groups / 8 groups
// empty. Deterministic in (m, groups, seed).
std::vector<int32_t> GroupedMatmulSkewedGroupSizes(int64_t m, int64_t groups, uint64_t seed);
// Rows the generator assigns to groups: m - m / 16, so the zeroed tail is always exercised
// and Flops() is exact for every seed.
int64_t GroupedMatmulUsedRows(int64_t m);

// Verification tolerance (MatmulTolerance(k): bf16 inputs are exact in f32, so the same bound).
Tolerance GroupedMatmulTolerance(int64_t k);

const KernelSpec& GroupedMatmulSpec();

}  // namespace blocktune::kernels
