// The fused cross-entropy driver: validation, ISA dispatch, packing, the blocked forward
// (per thread: vocabulary blocks x row blocks, online logsumexp) and backward (vocabulary
// blocks x row blocks, logits recomputed from the saved lse), around the per-ISA inner loops:
// one Ops table (fused_cross_entropy_ops.h) per ISA, chosen once, holding the matmul
// micro-kernels of kernels/matmul/matmul_ops.h and the vectorised row passes (exp, max, sum)
// of fused_cross_entropy_<isa>.cc.
//
// Forward, per thread (a range of rows, or a slice of the vocabulary for all rows when there
// are fewer than block_b rows per thread): for each block_v columns, pack w[:, cols] once
// (h x block_v, in block_h chunks; w, the large operand, is thus read from memory once per
// thread), then for each block_b rows and block_h chunk pack x[rows, chunk] and run the
// micro-kernels into a block_b x block_v logits tile (L2-resident: 384 KiB at the default
// 192 x 512), then update the running max / sum of exp per row and pick out the label logit.
// No [B, V] buffer. (The first version looped rows outside and repacked w chunks per row
// block; w's strided reads from memory cost ~20% of the forward there.)
//
// Backward, parallel over vocabulary blocks (a thread owns dw[:, its columns], so dw needs no
// reduction and is deterministic): per vocabulary block, pack w[:, cols] for the logits GEMM
// and w[:, cols]^T for the dx GEMM once; per row block recompute the logits tile, turn it into
// dlogits in place, then dx_partial[rows] += dlogits * w^T and dw[:, cols] += x^T * dlogits.
// Each thread but the first accumulates dx into its own b x h partial, summed at the end:
// extra memory (threads - 1) * b * h * 4 bytes (16 MiB at b=4096, h=1024, 2 threads), against
// the h * v * 4 (128 MiB at v=32768) a per-thread partial dw would cost.
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "kernels/core/isa_dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/parallel.h"
#include "kernels/core/scratch.h"
#include "kernels/core/vec_math.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy_ops.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {
namespace {

using fused_cross_entropy_internal::Ops;
using MatmulOps = matmul_internal::Ops;

// Depth of the dx (over vocabulary) and dw (over rows) GEMM chunks: a B micro-panel of
// 256 x 32 floats is 32 KiB, inside the 48 KiB L1d next to the A micro-panel.
constexpr int64_t kSubKc = 256;
// A logits tile beyond 16 MiB (8x the 2 MiB L2) is a typo, not a tuning choice.
constexpr int64_t kMaxTileBytes = int64_t{16} << 20;
// Per-thread packed panels + tiles beyond 256 MiB would make "fused" use more memory than the
// unfused [B, V] buffer it replaces at typical shapes (512 MiB at 4096 x 32768).
constexpr int64_t kMaxScratchBytes = int64_t{256} << 20;
constexpr int64_t kMaxBlock = int64_t{1} << 20;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t CeilDiv(int64_t x, int64_t m) { return (x + m - 1) / m; }

// ---------------------------------------------------------------------------------------------
// Scratch: 64-byte aligned, kept per thread (the pool's workers persist, so steady-state calls
// do not allocate).

thread_local ScratchBuffer t_x_pack;   // x rows, A layout
thread_local ScratchBuffer t_w_pack;   // w[:, cols], B layout
thread_local ScratchBuffer t_tile;     // logits / dlogits tile
thread_local ScratchBuffer t_wt_pack;  // w[:, cols]^T, B layout (backward)
thread_local ScratchBuffer t_xt_pack;  // x rows^T, A layout (backward)
thread_local ScratchBuffer t_dl_a;     // dlogits, A layout (backward)
thread_local ScratchBuffer t_dl_b;     // dlogits, B layout (backward)
thread_local ScratchBuffer t_dw_tile;  // dw[:, cols] accumulator (backward)

// ---------------------------------------------------------------------------------------------
// Packing. A operands (m x k) go into k chunks of kc at dst + m_pad * k0, each chunk a sequence
// of MR-row micro-panels ([p * MR + r], at chunk + ir * kb). B operands (k x n) go into chunks
// at dst + n_pad * k0 of NR-column micro-panels ([p * NR + j], at chunk + jr * kb), zero-padded
// beyond n. bf16 is converted here (exact), so the micro-kernels only ever see f32.

inline float Load(float v) { return v; }
inline float Load(uint16_t v) { return BF16ToFloat(BF16{v}); }

// A[r][p] = src[r * ld + p].
template <typename T>
void PackARows(const MatmulOps& ks, const T* src, int64_t ld, int64_t m, int64_t k, int64_t kc, float* dst) {
  const int mr = ks.tile_rows;
  const int64_t m_pad = RoundUp(m, mr);
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = std::min(kc, k - k0);
    float* chunk = dst + m_pad * k0;
    for (int64_t ir = 0; ir < m; ir += mr) {
      const int rows = static_cast<int>(std::min<int64_t>(mr, m - ir));
      const T* s = src + ir * ld + k0;
      float* d = chunk + ir * kb;
      if constexpr (std::is_same_v<T, float>) {
        ks.pack_a(s, ld, rows, kb, d);
      } else {
        for (int r = 0; r < rows; ++r) {
          for (int64_t p = 0; p < kb; ++p) d[p * mr + r] = Load(s[r * ld + p]);
        }
      }
    }
  }
}

// A[r][p] = src[p * ld + r]: the transpose of row-major src (x^T for dw).
template <typename T>
void PackACols(int mr, const T* src, int64_t ld, int64_t m, int64_t k, int64_t kc, float* dst) {
  const int64_t m_pad = RoundUp(m, mr);
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = std::min(kc, k - k0);
    float* chunk = dst + m_pad * k0;
    for (int64_t p = 0; p < kb; ++p) {
      const T* s = src + (k0 + p) * ld;
      for (int64_t ir = 0; ir < m; ir += mr) {
        const int rows = static_cast<int>(std::min<int64_t>(mr, m - ir));
        float* d = chunk + ir * kb + p * mr;
        for (int r = 0; r < rows; ++r) d[r] = Load(s[ir + r]);
      }
    }
  }
}

// B[p][j] = src[p * ld + j]. Row p of src is read contiguously (w streams from memory in rows).
template <typename T>
void PackBRows(int nr, const T* src, int64_t ld, int64_t k, int64_t n, int64_t kc, float* dst) {
  const int64_t n_pad = RoundUp(n, nr);
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = std::min(kc, k - k0);
    float* chunk = dst + n_pad * k0;
    for (int64_t p = 0; p < kb; ++p) {
      const T* s = src + (k0 + p) * ld;
      for (int64_t jr = 0; jr < n; jr += nr) {
        const int cols = static_cast<int>(std::min<int64_t>(nr, n - jr));
        float* d = chunk + jr * kb + p * nr;
        // Fixed-length copies for the full panels (a memcpy call per 128 bytes cost ~20% of the
        // forward in a profile); the converting / padding loop for the rest.
        if (cols == 32) {
          for (int j = 0; j < 32; ++j) d[j] = Load(s[jr + j]);
        } else if (cols == 16) {
          for (int j = 0; j < 16; ++j) d[j] = Load(s[jr + j]);
        } else {
          for (int j = 0; j < cols; ++j) d[j] = Load(s[jr + j]);
        }
        for (int j = cols; j < nr; ++j) d[j] = 0.0f;
      }
    }
  }
}

// B[p][j] = src[j * ld + p]: the transpose of row-major src (w^T for dx). For f32 this is the
// matmul A packer with NR as its tile height (4x4 SSE transposes, ~0.3 cycles per element).
template <typename T>
void PackBCols(int nr, const T* src, int64_t ld, int64_t k, int64_t n, int64_t kc, float* dst) {
  const int64_t n_pad = RoundUp(n, nr);
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = std::min(kc, k - k0);
    float* chunk = dst + n_pad * k0;
    for (int64_t jr = 0; jr < n; jr += nr) {
      const int cols = static_cast<int>(std::min<int64_t>(nr, n - jr));
      float* d = chunk + jr * kb;
      if (cols < nr) std::memset(d, 0, sizeof(float) * static_cast<size_t>(kb * nr));
      const T* s = src + jr * ld + k0;
      if constexpr (std::is_same_v<T, float>) {
        if (nr == 32) {
          matmul_internal::PackA<32>(s, ld, cols, kb, d);
          continue;
        }
        if (nr == 16) {
          matmul_internal::PackA<16>(s, ld, cols, kb, d);
          continue;
        }
      }
      for (int j = 0; j < cols; ++j) {
        for (int64_t p = 0; p < kb; ++p) d[p * nr + j] = Load(s[j * ld + p]);
      }
    }
  }
}

// C[m x n] (=|+=) A chunk * B chunk of depth kb. Each A micro-panel (MR x kb) stays in L1
// while the B chunk (kb x n, in L2) streams under it: matmul.cc's order, which measured faster
// than reusing B micro-panels from L1 across the row panels.
void MacroKernel(const MatmulOps& ks, const float* a, const float* b, int64_t m, int64_t n, int64_t kb, float* c,
                 int64_t ldc, bool accumulate) {
  const int mr = ks.tile_rows;
  const int nr = ks.tile_cols;
  for (int64_t ir = 0; ir < m; ir += mr) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, m - ir));
    for (int64_t jr = 0; jr < n; jr += nr) {
      const int cols = static_cast<int>(std::min<int64_t>(nr, n - jr));
      const int half = cols * 2 <= nr ? 1 : 0;
      if (accumulate) {
        // The next tile's C rows, fetched while this tile's k loop runs (~1500 cycles at depth
        // 256) instead of stalling the micro-kernel's load-add-store epilogue: the dw
        // accumulator (h x block_v, 1-2 MiB) and dx rows are beyond a 512 KiB L2. 1 thread,
        // AVX2 (Zen 3), 1024x512x8192 forward + backward: 0.855 / 0.870x unfused without,
        // 0.898 / 0.878x with (paired runs).
        int64_t nir = ir, njr = jr + nr;
        if (njr >= n) {
          nir += mr;
          njr = 0;
        }
        if (nir < m) {
          const int nrows = static_cast<int>(std::min<int64_t>(mr, m - nir));
          const float* nc = c + nir * ldc + njr;
          for (int r = 0; r < nrows; ++r) {
            for (int j = 0; j < nr && njr + j < n; j += 16) __builtin_prefetch(nc + r * ldc + j, 1, 3);
          }
        }
      }
      ks.kernels[half][rows - 1](kb, a + ir * kb, b + jr * kb, c + ir * ldc + jr, ldc, cols, accumulate);
    }
  }
}

// Block sizes clamped to the problem (a block larger than a dim is fine, never rejected).
struct Blocking {
  int64_t bb, bh, bv;  // bb multiple of MR, bv multiple of NR
  int64_t nrb, nvb;    // number of row / vocabulary blocks
  // Leading dimension of tiles: bv + 16 floats, so the 12 rows of a micro-tile do not all map
  // to the same few L1 sets (a 512-float row is a 2 KiB stride, 4 KiB-periodic sets).
  int64_t tld;
};

Blocking MakeBlocking(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& s, int mr, int nr) {
  Blocking k;
  k.bb = std::max<int64_t>(mr, std::min(bs.block_b, RoundUp(s.b, mr)));
  k.bh = std::max<int64_t>(1, std::min(bs.block_h, s.h));
  k.bv = std::max<int64_t>(nr, std::min(bs.block_v, RoundUp(s.v, nr)));
  k.nrb = CeilDiv(s.b, k.bb);
  k.nvb = CeilDiv(s.v, k.bv);
  k.tld = k.bv + 16;
  return k;
}

// Per-thread scratch floats.
int64_t ForwardScratchFloats(const Blocking& k, const FusedCrossEntropyShape& s) {
  return k.bv * s.h + k.bb * k.bh + k.bb * k.tld;
}
int64_t BackwardScratchFloats(const Blocking& k, const FusedCrossEntropyShape& s, int mr, int nr) {
  const int64_t h_pad_n = RoundUp(s.h, nr);
  const int64_t h_pad_m = RoundUp(s.h, mr);
  return k.bv * s.h + h_pad_n * k.bv + k.bb * s.h + h_pad_m * k.bb + k.bb * k.tld + 2 * k.bb * k.bv + s.h * k.tld;
}

Status CheckCall(const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in, int threads) {
  if (threads < 1) return InvalidArgument("threads must be >= 1, got " + std::to_string(threads), "threads");
  if (in.dtype != DType::kF32 && in.dtype != DType::kBF16) return InvalidArgument("unsupported dtype", "dtype");
  if (shape.b > 0 && (in.x == nullptr || in.w == nullptr || in.labels == nullptr)) {
    return InvalidArgument("x, w and labels must be non-null", "inputs");
  }
  for (int64_t i = 0; i < shape.b; ++i) {
    if (in.labels[i] >= shape.v) {
      return InvalidArgument("labels[" + std::to_string(i) + "] = " + std::to_string(in.labels[i]) +
                                 " is not below v = " + std::to_string(shape.v),
                             "labels");
    }
  }
  return {};
}

template <typename T>
void ForwardT(const Ops& ops, const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
              const FusedCrossEntropyInputs& in, float* loss, float* lse, int threads) {
  const MatmulOps& ks = *ops.ks;
  const T* x = static_cast<const T*>(in.x);
  const T* w = static_cast<const T*>(in.w);
  const int32_t* labels = in.labels;
  const int64_t B = shape.b, H = shape.h, V = shape.v;
  const int mr = ks.tile_rows;
  const int nr = ks.tile_cols;
  const Blocking k = MakeBlocking(bs, shape, mr, nr);
  // Threads take row ranges (micro-tile aligned, so 3 row blocks still split evenly); with
  // fewer than block_b rows per thread they take vocabulary slices of all rows instead, each
  // slice keeping its own running max / sum, merged below (a thread streaming all of w for a
  // handful of rows would be bound by w's memory traffic).
  const int64_t row_tiles = CeilDiv(B, mr);
  int64_t groups = std::min<int64_t>(threads, row_tiles);
  int64_t nsplit = 1;
  if (B < threads * k.bb && k.nvb > 1) {
    groups = 1;
    nsplit = std::min<int64_t>(threads, k.nvb);
  }
  std::vector<float> part_m(static_cast<size_t>(nsplit * B), kNegInf);
  std::vector<float> part_s(static_cast<size_t>(nsplit * B), 0.0f);
  std::vector<float> label_logit(static_cast<size_t>(B), 0.0f);

  ParallelRun(static_cast<int>(groups * nsplit), [&](int task) {
    const int64_t g = task / nsplit;
    const int64_t sp = task % nsplit;
    const int64_t row_begin = std::min(B, row_tiles * g / groups * mr);
    const int64_t row_end = std::min(B, row_tiles * (g + 1) / groups * mr);
    const int64_t vb_begin = k.nvb * sp / nsplit;
    const int64_t vb_end = k.nvb * (sp + 1) / nsplit;
    // Vocabulary blocks outside, row blocks inside: each w[:, cols] panel (h x block_v) is
    // packed once per thread and reused by all its rows (w, the big operand, is read from
    // memory once), while x chunks (block_b x block_h) are repacked from L3 per vocabulary
    // block: ~0.3 cycles per element against 2 * block_v flops per element.
    float* wp = t_w_pack.Get(k.bv * H);
    float* xp = t_x_pack.Get(k.bb * k.bh);
    float* tile = t_tile.Get(k.bb * k.tld);
    float* m_all = part_m.data() + sp * B;
    float* s_all = part_s.data() + sp * B;
    for (int64_t vb = vb_begin; vb < vb_end; ++vb) {
      const int64_t v0 = vb * k.bv;
      const int64_t cols = std::min(k.bv, V - v0);
      const int64_t cols_pad = RoundUp(cols, nr);
      PackBRows(nr, w + v0, V, H, cols, k.bh, wp);
      for (int64_t r0 = row_begin; r0 < row_end; r0 += k.bb) {
        const int64_t rows = std::min(k.bb, row_end - r0);
        for (int64_t h0 = 0; h0 < H; h0 += k.bh) {
          const int64_t kb = std::min(k.bh, H - h0);
          PackARows(ks, x + r0 * H + h0, H, rows, kb, kb, xp);
          MacroKernel(ks, xp, wp + cols_pad * h0, rows, cols, kb, tile, k.tld, h0 > 0);
        }
        ops.stats(tile, k.tld, static_cast<int>(rows), cols, m_all + r0, s_all + r0);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t lab = labels[r0 + r];
          if (lab >= v0 && lab < v0 + cols) label_logit[static_cast<size_t>(r0 + r)] = tile[r * k.tld + lab - v0];
        }
      }
    }
  });

  const double z = in.z_loss_weight;
  for (int64_t i = 0; i < B; ++i) {
    float m = kNegInf;
    for (int64_t sp = 0; sp < nsplit; ++sp) m = std::max(m, part_m[static_cast<size_t>(sp * B + i)]);
    float s = 0.0f;
    for (int64_t sp = 0; sp < nsplit; ++sp) {
      s += part_s[static_cast<size_t>(sp * B + i)] * vec::ExpScalar(part_m[static_cast<size_t>(sp * B + i)] - m);
    }
    const float l = m + std::log(s);
    lse[i] = l;
    loss[i] =
        labels[i] < 0
            ? 0.0f
            : static_cast<float>(double(l) - double(label_logit[static_cast<size_t>(i)]) + z * double(l) * double(l));
  }
}

template <typename T>
void BackwardT(const Ops& ops, const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
               const FusedCrossEntropyInputs& in, const float* lse, const float* dloss, float* dx, float* dw,
               int threads) {
  const MatmulOps& ks = *ops.ks;
  const T* x = static_cast<const T*>(in.x);
  const T* w = static_cast<const T*>(in.w);
  const int32_t* labels = in.labels;
  const int64_t B = shape.b, H = shape.h, V = shape.v;
  const int mr = ks.tile_rows;
  const int nr = ks.tile_cols;
  if (B == 0) {
    std::fill(dw, dw + H * V, 0.0f);
    return;
  }
  const Blocking k = MakeBlocking(bs, shape, mr, nr);
  // dlogits[b, v] = dloss * (1 + 2 z lse) * softmax - dloss * onehot; ignored rows get 0.
  std::vector<float> scale(static_cast<size_t>(B)), onehot(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) {
    const bool use = labels[i] >= 0;
    scale[static_cast<size_t>(i)] = use ? dloss[i] * (1.0f + 2.0f * in.z_loss_weight * lse[i]) : 0.0f;
    onehot[static_cast<size_t>(i)] = use ? dloss[i] : 0.0f;
  }
  const int workers = static_cast<int>(std::min<int64_t>(threads, k.nvb));
  // Partial dx of threads 1.. per call, not thread_local: a nested call runs all its threads on
  // one OS thread, which must not share one partial. Each thread zeroes its own (first touch).
  std::unique_ptr<float[]> partial_storage(
      workers > 1 ? new (std::nothrow) float[static_cast<size_t>((workers - 1) * B * H)] : nullptr);
  if (workers > 1 && partial_storage == nullptr) std::abort();  // out of memory: no exceptions here
  const int64_t h_pad_n = RoundUp(H, nr);
  const int64_t h_pad_m = RoundUp(H, mr);

  ParallelRun(workers, [&](int t) {
    const int64_t vb_begin = k.nvb * t / workers;
    const int64_t vb_end = k.nvb * (t + 1) / workers;
    float* dxp = t == 0 ? dx : partial_storage.get() + (t - 1) * B * H;
    std::memset(dxp, 0, sizeof(float) * static_cast<size_t>(B * H));
    const int64_t bb_pad = RoundUp(k.bb, mr);
    float* wp = t_w_pack.Get(k.bv * H);
    float* wtp = t_wt_pack.Get(h_pad_n * k.bv);
    float* xp = t_x_pack.Get(bb_pad * H);
    float* xtp = t_xt_pack.Get(h_pad_m * k.bb);
    float* tile = t_tile.Get(k.bb * k.tld);
    // dw[:, cols] accumulates here (ld tld) and is copied out per vocabulary block: dw's own
    // stride v (128 KiB at v = 32768) would put a micro-tile's 12 rows in one L1 and L2 set.
    float* dwt = t_dw_tile.Get(H * k.tld);
    float* dla = t_dl_a.Get(bb_pad * k.bv);
    float* dlb = t_dl_b.Get(k.bb * k.bv);
    for (int64_t vb = vb_begin; vb < vb_end; ++vb) {
      const int64_t v0 = vb * k.bv;
      const int64_t cols = std::min(k.bv, V - v0);
      const int64_t cols_pad = RoundUp(cols, nr);
      // w[:, cols] for the logits GEMM (depth h by block_h) and its transpose for dx (depth v).
      PackBRows(nr, w + v0, V, H, cols, k.bh, wp);
      PackBCols(nr, w + v0, V, cols, H, kSubKc, wtp);
      for (int64_t rb = 0; rb < k.nrb; ++rb) {
        const int64_t r0 = rb * k.bb;
        const int64_t rows = std::min(k.bb, B - r0);
        const int64_t rows_pad = RoundUp(rows, mr);
        PackARows(ks, x + r0 * H, H, rows, H, k.bh, xp);
        for (int64_t h0 = 0; h0 < H; h0 += k.bh) {
          MacroKernel(ks, xp + rows_pad * h0, wp + cols_pad * h0, rows, cols, std::min(k.bh, H - h0), tile, k.tld,
                      h0 > 0);
        }
        ops.dlogits(tile, k.tld, static_cast<int>(rows), cols, lse + r0, scale.data() + r0);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t lab = labels[r0 + r];
          if (lab >= v0 && lab < v0 + cols) tile[r * k.tld + lab - v0] -= onehot[static_cast<size_t>(r0 + r)];
        }
        // dx[rows, :] += dlogits[rows, cols] * w[:, cols]^T
        PackARows(ks, static_cast<const float*>(tile), k.tld, rows, cols, kSubKc, dla);
        for (int64_t k0 = 0; k0 < cols; k0 += kSubKc) {
          MacroKernel(ks, dla + rows_pad * k0, wtp + h_pad_n * k0, rows, H, std::min(kSubKc, cols - k0), dxp + r0 * H,
                      H, true);
        }
        // dw[:, cols] (=|+=) x[rows, :]^T * dlogits[rows, cols]
        PackACols(mr, x + r0 * H, H, H, rows, kSubKc, xtp);
        PackBRows(nr, static_cast<const float*>(tile), k.tld, rows, cols, kSubKc, dlb);
        for (int64_t k0 = 0; k0 < rows; k0 += kSubKc) {
          MacroKernel(ks, xtp + h_pad_m * k0, dlb + cols_pad * k0, H, cols, std::min(kSubKc, rows - k0), dwt, k.tld,
                      rb > 0 || k0 > 0);
        }
      }
      for (int64_t h = 0; h < H; ++h) {
        std::memcpy(dw + h * V + v0, dwt + h * k.tld, sizeof(float) * static_cast<size_t>(cols));
      }
    }
  });

  if (workers > 1) {
    // Fixed order (thread 1, 2, ...), so a given thread count always gives the same dx.
    ParallelFor(threads, B, [&](int64_t i, int) {
      float* d = dx + i * H;
      for (int t = 1; t < workers; ++t) {
        const float* p = partial_storage.get() + (t - 1) * B * H + i * H;
        for (int64_t j = 0; j < H; ++j) d[j] += p[j];
      }
    });
  }
}

Status RunForward(const Ops& ops, const HardwareProfile& hw, const FusedCrossEntropyBlockSizes& bs,
                  const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in, float* loss, float* lse,
                  int threads) {
  if (auto s = Validate(bs, shape, hw); !s) return s;
  if (auto s = CheckCall(shape, in, threads); !s) return s;
  if (shape.b == 0) return {};
  if (in.dtype == DType::kF32) {
    ForwardT<float>(ops, bs, shape, in, loss, lse, threads);
  } else {
    ForwardT<uint16_t>(ops, bs, shape, in, loss, lse, threads);
  }
  return {};
}

Status RunBackward(const Ops& ops, const HardwareProfile& hw, const FusedCrossEntropyBlockSizes& bs,
                   const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in, const float* lse,
                   const float* dloss, float* dx, float* dw, int threads) {
  if (auto s = Validate(bs, shape, hw); !s) return s;
  if (auto s = CheckCall(shape, in, threads); !s) return s;
  if (in.dtype == DType::kF32) {
    BackwardT<float>(ops, bs, shape, in, lse, dloss, dx, dw, threads);
  } else {
    BackwardT<uint16_t>(ops, bs, shape, in, lse, dloss, dx, dw, threads);
  }
  return {};
}

}  // namespace

Status Validate(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape, const HardwareProfile& hw) {
  const MatmulTile tile = MatmulTileFor(hw.cpu.isa);
  const std::pair<const char*, int64_t> params[] = {
      {"block_b", bs.block_b}, {"block_h", bs.block_h}, {"block_v", bs.block_v}};
  for (const auto& [name, value] : params) {
    if (value <= 0) {
      return InvalidArgument(std::string(name) + " must be positive, got " + std::to_string(value),
                             std::string("config.") + name);
    }
    if (value > kMaxBlock) {
      return InvalidArgument(
          std::string(name) + " must be at most " + std::to_string(kMaxBlock) + ", got " + std::to_string(value),
          std::string("config.") + name);
    }
  }
  // Blocks that are not whole micro-tiles leave a partial tile in every block, not only at the
  // matrix edge: correct but up to a tile of wasted work per block.
  if (bs.block_b % tile.rows != 0) {
    return InvalidArgument("block_b must be a multiple of the " + hw.cpu.isa + " micro-tile rows (" +
                               std::to_string(tile.rows) + "), got " + std::to_string(bs.block_b),
                           "config.block_b");
  }
  if (bs.block_v % tile.cols != 0) {
    return InvalidArgument("block_v must be a multiple of the " + hw.cpu.isa + " micro-tile columns (" +
                               std::to_string(tile.cols) + "), got " + std::to_string(bs.block_v),
                           "config.block_v");
  }
  // 16 floats = one 64-byte line: every h chunk but the last starts x and w reads on a line.
  if (bs.block_h % 16 != 0) {
    return InvalidArgument(
        "block_h must be a multiple of 16 (one cache line of f32), got " + std::to_string(bs.block_h),
        "config.block_h");
  }
  const std::pair<const char*, int64_t> dims[] = {{"b", shape.b}, {"h", shape.h}, {"v", shape.v}};
  for (const auto& [name, value] : dims) {
    const int64_t min = std::string_view(name) == "b" ? 0 : 1;
    if (value < min || value > (int64_t{1} << 24)) {
      return InvalidArgument(
          std::string(name) + " must be in [" + std::to_string(min) + ", 16777216], got " + std::to_string(value),
          std::string("shape.") + name);
    }
  }
  const Blocking k = MakeBlocking(bs, shape, tile.rows, tile.cols);
  if (k.bb * k.bv * 4 > kMaxTileBytes) {
    return InvalidArgument("logits tile block_b*block_v*4 = " + std::to_string(k.bb * k.bv * 4 >> 10) +
                               " KiB (clamped to the problem) exceeds 16 MiB",
                           "config.block_v");
  }
  const int64_t scratch =
      4 * std::max(ForwardScratchFloats(k, shape), BackwardScratchFloats(k, shape, tile.rows, tile.cols));
  if (scratch > kMaxScratchBytes) {
    return InvalidArgument("scratch per thread " + std::to_string(scratch >> 20) +
                               " MiB (packed x and w panels, tiles; dominated by 2*h*block_v*4) exceeds 256 MiB",
                           "config.block_v");
  }
  return {};
}

int64_t FusedCrossEntropyScratchBytes(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                      bool backward, int threads) {
  const MatmulOps& ks = *HostOps<Ops>().ks;
  const Blocking k = MakeBlocking(bs, shape, ks.tile_rows, ks.tile_cols);
  const int64_t fwd = ForwardScratchFloats(k, shape) * 4 * threads + 12 * shape.b * threads;
  if (!backward) return fwd;
  const int workers = static_cast<int>(std::min<int64_t>(threads, k.nvb));
  const int64_t bwd = BackwardScratchFloats(k, shape, ks.tile_rows, ks.tile_cols) * 4 * workers +
                      int64_t{4} * shape.b * shape.h * (workers - 1) + 8 * shape.b;
  return std::max(fwd, bwd);
}

Status FusedCrossEntropyForward(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                const FusedCrossEntropyInputs& in, float* loss, float* lse, int threads) {
  return RunForward(HostOps<Ops>(), HostHardware(), bs, shape, in, loss, lse, threads);
}

Status FusedCrossEntropyBackward(const FusedCrossEntropyBlockSizes& bs, const FusedCrossEntropyShape& shape,
                                 const FusedCrossEntropyInputs& in, const float* lse, const float* dloss, float* dx,
                                 float* dw, int threads) {
  return RunBackward(HostOps<Ops>(), HostHardware(), bs, shape, in, lse, dloss, dx, dw, threads);
}

Status FusedCrossEntropyForwardWithIsa(std::string_view isa, const FusedCrossEntropyBlockSizes& bs,
                                       const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in,
                                       float* loss, float* lse, int threads) {
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return RunForward(*forced->ops, forced->hw, bs, shape, in, loss, lse, threads);
}

Status FusedCrossEntropyBackwardWithIsa(std::string_view isa, const FusedCrossEntropyBlockSizes& bs,
                                        const FusedCrossEntropyShape& shape, const FusedCrossEntropyInputs& in,
                                        const float* lse, const float* dloss, float* dx, float* dw, int threads) {
  const auto forced = OpsForIsa<Ops>(isa);
  if (!forced) return std::unexpected(forced.error());
  return RunBackward(*forced->ops, forced->hw, bs, shape, in, lse, dloss, dx, dw, threads);
}

}  // namespace blocktune::kernels
