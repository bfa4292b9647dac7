// flash_attention: O = softmax(scale * Q K^T [+ causal mask]) V and its logsumexp, computed
// FlashAttention-style: queries in blocks of block_q, keys/values streamed in blocks of block_kv
// with a running max and sum per query row, so the [seq_q, seq_kv] score matrix is never
// materialised (scratch per thread is O((block_q + block_kv) * head_dim)). Grouped-query and
// multi-query attention: q head h reads kv head h / (heads / kv_heads). Inputs f32 or bf16
// (storage only, f32 arithmetic); outputs f32.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

// Q [batch, heads, seq_q, head_dim]; K, V [batch, kv_heads, seq_kv, head_dim]; O like Q;
// LSE [batch, heads, seq_q]. All row-major and contiguous.
struct FlashAttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  int64_t head_dim = 64;
  // Causal mask aligned bottom-right (FlashAttention-2): query i attends to keys
  // j <= i + seq_kv - seq_q. A query with no key left outputs 0 and logsumexp -inf.
  bool causal = false;
};

struct FlashAttentionBlockSizes {
  int64_t block_q = 128;   // queries per work item (multiple of kFlashAttentionGranularity)
  int64_t block_kv = 128;  // keys/values per streamed block (multiple of kFlashAttentionGranularity)

  static constexpr std::array<ParamField<FlashAttentionBlockSizes>, 2> kParams{{
      {"block_q", &FlashAttentionBlockSizes::block_q},
      {"block_kv", &FlashAttentionBlockSizes::block_kv},
  }};
  friend bool operator==(const FlashAttentionBlockSizes&, const FlashAttentionBlockSizes&) = default;
};

// Block sizes must be multiples of 16: one AVX-512 vector of queries (two AVX2 vectors), and
// whole micro-tiles of keys (8 rows on AVX-512, so 16 leaves no partial tile inside a block).
inline constexpr int64_t kFlashAttentionGranularity = 16;
// Larger blocks than this are typos: 4096 is already 2x the longest sequence bucket we tune
// for one block and would make the per-thread scratch tens of MiB at head_dim 256.
inline constexpr int64_t kFlashAttentionMaxBlock = 4096;

// 1 / sqrt(head_dim), the scale used when the caller passes none.
float FlashAttentionDefaultScale(int64_t head_dim);

// Why these block sizes cannot run this shape on this hardware (one reason; Error::path is
// "config.block_q"/"config.block_kv" for block sizes, "shape.<dim>" for the shape, e.g.
// "shape.kv_heads" when heads is not a multiple of kv_heads); ok if they can. Blocks larger
// than the sequence are fine (the kernel clamps them).
Status Validate(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const HardwareProfile& hw);

// The tuned kernel on the host's best ISA. `lse` may be null (not written). `scale` defaults to
// 1/sqrt(head_dim). Returns the Validate error (or a bad `threads`) without writing anything.
Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const float* q,
                      const float* k, const float* v, float* o, float* lse, int threads,
                      std::optional<float> scale = std::nullopt);
// bf16 inputs given as raw bf16 bit patterns (see dtype.h); outputs f32.
Status FlashAttention(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape, const uint16_t* q,
                      const uint16_t* k, const uint16_t* v, float* o, float* lse, int threads,
                      std::optional<float> scale = std::nullopt);

// The same with a forced ISA ("avx512", "avx2", "portable"/"base") and a run-time dtype (q, k, v
// point at float or bf16 bits). An error if this CPU cannot run that ISA. For tests/benchmarks.
Status FlashAttentionWithIsa(std::string_view isa, const FlashAttentionBlockSizes& bs,
                             const FlashAttentionShape& shape, DType dtype, const void* q, const void* k,
                             const void* v, float* o, float* lse, int threads,
                             std::optional<float> scale = std::nullopt);

// The plain oracle: per query row, scores in double, max, exp, sum and the weighted sum of V in
// double. f32 inputs (bf16 callers convert their rounded values first).
void FlashAttentionReference(const FlashAttentionShape& shape, const float* q, const float* k, const float* v,
                             float* o, float* lse, std::optional<float> scale = std::nullopt);

// Bytes of scratch one thread allocates for these block sizes (the kernel's whole extra memory
// per thread; compare with the 4 * seq_q * seq_kv bytes of a materialised score matrix).
int64_t FlashAttentionScratchBytes(const FlashAttentionBlockSizes& bs, const FlashAttentionShape& shape,
                                   DType dtype, std::string_view isa);

// The ISA in use on this CPU: "avx512", "avx2" or "portable".
const char* FlashAttentionIsa();

// Unmasked (query, key) pairs of one head: seq_q * seq_kv, or fewer under the causal mask.
int64_t FlashAttentionPairs(const FlashAttentionShape& shape);

// Verification tolerance for outputs of this shape (see spec.cc for the reasoning).
Tolerance FlashAttentionTolerance(const FlashAttentionShape& shape);

const KernelSpec& FlashAttentionSpec();

// --- Internal: the per-ISA inner loops (flash_attention_<isa>.cc) used by the driver. --------
//
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
  void (*softmax)(float* s, int64_t kb, int cols, float* m, float* l, float* alpha, bool masked,
                  int64_t mask_base);
  // ot[d][c] = alpha[c] * ot[d][c] + sum_j v[j*ldv + d] * p[j][c] for d < head_dim.
  void (*pv)(const float* v, int64_t ldv, const float* p, int64_t kb, int cols, int64_t head_dim, float* ot,
             const float* alpha);
  void (*bf16_to_f32)(const uint16_t* in, float* out, int64_t n);
  // qt[d][c] = scale * q[c*ldq + d] for c < rows (1..panel), zero for the other lanes of the
  // last vector touched; d < head_dim. Once per query block.
  void (*pack_q)(const float* q, int64_t ldq, int rows, int64_t head_dim, float scale, float* qt);
  // o[c*ldo + d] = ot[d][c] * inv_l[c] for c < cols, d < head_dim. Once per query block.
  void (*store_o)(const float* ot, int cols, int64_t head_dim, const float* inv_l, float* o, int64_t ldo);
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

// Avx512Ops and Avx2Ops exist on x86-64 builds only (kernels/CMakeLists.txt).
const Ops& Avx512Ops();
const Ops& Avx2Ops();
const Ops& PortableOps();

}  // namespace flash_attention_internal

}  // namespace blocktune::kernels
