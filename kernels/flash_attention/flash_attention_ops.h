// Internal to kernels/flash_attention (and ragged_paged_attention, whose prefill runs these
// loops): the table of operations one ISA provides, so the driver in flash_attention.cc is
// written once and each flash_attention_<isa>.cc, under its own target attribute, only supplies
// the inner loops.
//
#pragma once

#include <cstdint>

namespace blocktune::kernels {

// The driver keeps everything for one panel of kPanel queries "query-major in the lanes":
//   qt[d * panel + c]  = scale * Q[c][d]            (transposed, packed once per query block)
//   s [j * panel + c]  = score / probability of key j for query c (one kv block)
//   ot[d * panel + c]  = unnormalised O^T accumulator
// so the row max, exp and sum of the online softmax are vertical vector ops (no horizontal
// reductions), K and V rows are read in place as broadcasts (no transpose, f32 needs no pack),
// and the causal mask is a lane mask. `cols` (1..panel) is the number of live queries; lanes
// of the last partial vector beyond it are computed on zero-padded data and ignored.
namespace flash_attention_internal {

struct Ops {
  const char* name;
  int panel;  // queries per panel (lanes of the tiles): 32 on AVX-512, 16 on AVX2 and portable
  // s[j][c] = sum_d k[j*ldk + d] * qt[d][c] for j < kb.
  void (*scores)(const float* k, int64_t ldk, const float* qt, int64_t head_dim, int64_t kb, int cols, float* s);
  // One online-softmax step over the kb rows of s: masks (if `masked`, lane c of row j is
  // masked iff c < j + mask_base), updates the running max m and sum l, writes the rescale
  // factor alpha = exp(m_old - m_new) and replaces s by p = exp(s - m_new) (0 where masked).
  void (*softmax)(float* s, int64_t kb, int cols, float* m, float* l, float* alpha, bool masked, int64_t mask_base);
  // ot[d][c] = alpha[c] * ot[d][c] + sum_j v[j*ldv + d] * p[j][c] for d < head_dim.
  void (*pv)(const float* v, int64_t ldv, const float* p, int64_t kb, int cols, int64_t head_dim, float* ot,
             const float* alpha);
  void (*bf16_to_f32)(const uint16_t* in, float* out, int64_t n);
  // qt[d][c] = scale * q[c*ldq + d] for c < rows (1..panel), zero for the other lanes of the
  // last vector touched; d < head_dim. Once per query block.
  void (*pack_q)(const float* q, int64_t ldq, int rows, int64_t head_dim, float scale, float* qt);
  // o[c*ldo + d] = ot[d][c] * inv_l[c] for c < cols, d < head_dim. Once per query block.
  void (*store_o)(const float* ot, int cols, int64_t head_dim, const float* inv_l, float* o, int64_t ldo);

  // One table per ISA (kernels/core/isa_dispatch.h), each in flash_attention_<isa>.cc; Avx512
  // and Avx2 exist on x86-64 builds only (kernels/CMakeLists.txt).
  static const Ops& Avx512();
  static const Ops& Avx2();
  static const Ops& Portable();
};

// Scalar pack_q / store_o for 16-query panels (AVX2 and portable: transposes are a small part
// of their run time).
void PackQPanel16(const float* q, int64_t ldq, int rows, int64_t head_dim, float scale, float* qt);
void StoreOPanel16(const float* ot, int cols, int64_t head_dim, const float* inv_l, float* o, int64_t ldo);

// Each ISA's panel width (Ops::panel). Here as well as in the Ops tables because scratch sizes
// and Validate answer for any ISA on any host (an avx512 row checked on an aarch64 machine),
// and the x86 files are only compiled on x86-64.
inline constexpr int kAvx512Panel = 32;
inline constexpr int kAvx2Panel = 16;
inline constexpr int kPortablePanel = 16;

}  // namespace flash_attention_internal

}  // namespace blocktune::kernels
